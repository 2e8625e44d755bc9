"""The summary plot of a sweep: y (mean ± sd over the points sharing x and hue) against x, one line per hue.

``[plot]`` keys: ``x``, ``y``, ``hue`` (a parameter, ``seed``, or a result field of the experiment, nested
fields dotted: ``summary.hard_gap``), ``xscale`` and ``yscale`` (``auto`` | ``linear`` | ``log``); without them
the experiment's defaults, with the grid's axes in place of a default x or hue that is the same at every point
(:func:`default_spec`). A key or
a column the experiment does not have is a ValueError before any point runs (:func:`check_plot`). Lines are
ordered by their hue value (numbers numerically: 8 < 16 < 128, not as strings), and ``xscale = "auto"``
(the default) draws a log x axis when the x values form a geometric grid (at least 3 values, a constant
ratio ≥ 1.5: L = 25, 100, 400, 1600), with the grid values as ticks.
"""
from __future__ import annotations

import io
from pathlib import Path

from sims.cache import atomic_write_bytes
from verify.sweep.schema import REPLICATE
from verify.sweep.summary import flat_result, fmt

PLOT_KEYS = ("x", "y", "hue", "xscale", "yscale")
SCALES = ("auto", "linear", "log")


def check_plot(exp, spec, points: list[dict]) -> dict:
    """``spec`` checked against the experiment's parameters and result fields (ValueError otherwise)."""
    if not isinstance(spec, dict):
        raise ValueError(f"[plot] must be a table with keys {', '.join(PLOT_KEYS)}, got {spec!r}")
    unknown = sorted(set(spec) - set(PLOT_KEYS))
    if unknown:
        from verify.sweep.schema import suggest

        raise ValueError(f"[plot]: unknown key(s) {unknown}{suggest(unknown[0], PLOT_KEYS)}; allowed: "
                         f"{', '.join(PLOT_KEYS)}")
    params = set(exp.param_names()) | {"seed"} | {k for p in points for k in p}
    for role in ("x", "y", "hue"):
        col = spec.get(role)
        if col is None:
            continue
        if not isinstance(col, str):
            raise ValueError(f"[plot] {role} must be a column name, got {col!r}")
        if col not in params and not exp.is_result_field(col):
            from verify.sweep.schema import suggest

            raise ValueError(
                f"[plot] {role} = {col!r} is neither a parameter nor a result field of experiment {exp.name!r}"
                f"{suggest(col, sorted(params - {REPLICATE}) + list(exp.results))}; "
                f"parameters: {', '.join(sorted(params - {REPLICATE}))}; result fields: {', '.join(exp.results)}")
    if bool(spec.get("x")) != bool(spec.get("y")):
        raise ValueError(f"[plot] needs both x and y, got {spec}")
    for role in ("xscale", "yscale"):
        if spec.get(role, "auto") not in SCALES:
            raise ValueError(f"[plot] {role} must be one of {', '.join(SCALES)}, got {spec[role]!r}")
    return dict(spec)


def default_spec(exp, given: dict | None, points: list[dict]) -> dict:
    """The plot's axes: the ``[plot]`` table's, else the experiment's defaults, except that a default ``x`` or
    ``hue`` that is the same at every point (a fixed ``k = 4``) gives way to the grid's axes (the parameters that
    vary, in order, replicates aside: they make the error bars): x the first, hue the next; a constant default
    hue is dropped."""
    given = {} if given is None else given
    if not isinstance(given, dict):
        return given  # check_plot says what is wrong with it
    given = dict(given)
    spec = {**exp.plot, **given}
    if not spec.get("y"):
        return spec  # no plot (an experiment without default axes), or check_plot's error
    varying = []
    for p in points:
        for k in p:
            if k != REPLICATE and k not in varying and len({repr(q.get(k)) for q in points}) > 1:
                varying.append(k)
    if not varying:
        return spec
    free = [a for a in varying if a not in (given.get("x"), given.get("hue"))]
    if "x" not in given and spec.get("x") not in varying and free:
        spec["x"] = free.pop(0)
        if "xscale" not in given:
            spec.pop("xscale", None)
    free = [a for a in free if a != spec.get("x")]
    if "hue" not in given and spec.get("hue") is not None and spec["hue"] not in varying:
        if free:
            spec["hue"] = free.pop(0)
        else:
            spec.pop("hue")
    elif "hue" not in given and spec.get("hue") is None and free:
        spec["hue"] = free.pop(0)
    if spec.get("hue") == spec.get("x"):
        spec.pop("hue", None)
    return spec


def geometric(values) -> bool:
    """At least 3 positive values with one constant ratio ≥ 1.5 between neighbours (within 1 %)."""
    v = sorted(set(values))
    if len(v) < 3 or v[0] <= 0:
        return False
    ratios = [b / a for a, b in zip(v, v[1:])]
    return min(ratios) >= 1.5 and max(ratios) / min(ratios) < 1.01


def _number(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _order(v):
    """Sort key of a hue value: missing first, then numbers by value, then the rest by text."""
    if v is None:
        return (0, 0.0, "")
    if _number(v) is not None:
        return (1, float(v), "")
    return (2, 0.0, fmt(v))


def plot_data(records: list[dict], spec: dict) -> tuple[list, str, str]:
    """([(hue value, {x: [y, ...]}), ...] in hue order, xscale, yscale) of the done points."""
    x, y, hue = spec.get("x"), spec.get("y"), spec.get("hue")
    groups: dict = {}
    for r in records:
        if r.get("status") != "done" or not isinstance(r.get("result"), dict) or not x or not y:
            continue
        cols = {**flat_result(r["result"]), "seed": r.get("seed"), **r["params"]}
        xv, yv = _number(cols.get(x)), _number(cols.get(y))
        if xv is None or yv is None:
            continue
        hv = cols.get(hue) if hue else None
        groups.setdefault(fmt(hv), (hv, {}))[1].setdefault(xv, []).append(yv)
    lines = sorted(groups.values(), key=lambda g: _order(g[0]))
    xs = {v for _, by_x in lines for v in by_x}
    xscale = spec.get("xscale", "auto")
    if xscale == "auto":
        xscale = "log" if geometric(xs) else "linear"
    yscale = spec.get("yscale", "auto")
    if yscale == "auto":
        yscale = "linear"
    return lines, xscale, yscale


def plot(out: Path, exp, records: list[dict], spec: dict) -> Path | None:
    """Draw ``OUT/plot.png`` (None when there is nothing to draw)."""
    lines, xscale, yscale = plot_data(records, spec)
    if not lines:
        return None
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    x, y, hue = spec["x"], spec["y"], spec.get("hue")
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for hv, by_x in lines:
        xs = sorted(by_x)
        m = np.array([np.mean(by_x[v]) for v in xs])
        s = np.array([np.std(by_x[v]) for v in xs])
        ax.errorbar(xs, m, yerr=s if any(len(by_x[v]) > 1 for v in xs) else None, marker="o", capsize=3,
                    label=f"{hue}={fmt(hv)}" if hue else None)
    ax.set_xscale(xscale)
    ax.set_yscale(yscale)
    if xscale == "log":
        grid = sorted({v for _, by_x in lines for v in by_x})
        if len(grid) <= 12:
            ax.set_xticks(grid)
            ax.xaxis.set_major_formatter(ScalarFormatter())
            ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title(f"sweep {exp.name}")
    if hue:
        ax.legend(fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    atomic_write_bytes(out / "plot.png", buf.getvalue())
    return out / "plot.png"
