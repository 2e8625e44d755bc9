"""Sweep points: grid / zip / replicate specs expanded to parameter dicts, derived seeds and keys, TOML configs."""
from __future__ import annotations

import hashlib
import itertools
import json
import tomllib
from pathlib import Path

from verify.sweep import experiments

SPEC_KEYS = {"grid", "zip", "fixed", "seeds", "replicates"}
CONFIG_KEYS = {"experiment", "seed", "out", "scheduler", "workers", "plot", "description"} | SPEC_KEYS


def canonical_json(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def derive_seed(sweep_seed: int, experiment: str, params: dict) -> int:
    """A point's seed in [0, 2³²): SHA-256 of (experiment, canonical params, sweep seed)."""
    blob = canonical_json({"experiment": experiment, "params": params, "seed": int(sweep_seed)})
    return int.from_bytes(hashlib.sha256(blob.encode()).digest()[:4], "little")


def point_key(experiment: str, version: str, params: dict, seed: int, code: str = "") -> str:
    """The point's file name: a hash of what determines its result. ``code``: the fingerprint of the plugin
    code it runs (:func:`sims.codehash.code_fingerprint`; empty for built-in code), so editing a plugin's data
    model or experiment reruns its points."""
    fields = {"experiment": experiment, "version": version, "params": params, "seed": seed}
    if code:
        fields["code"] = code
    blob = canonical_json(fields)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def _check_value(name: str, v):
    try:
        json.dumps(v, allow_nan=False)
    except (TypeError, ValueError):
        raise ValueError(f"parameter {name!r}: value {v!r} is not a JSON number/string/bool/list") from None


def expand_points(spec) -> list[dict]:
    """Points from a list of dicts or a spec dict.

    Spec: ``grid`` {name: [values]} (Cartesian product, first name outermost), ``zip`` {name: [values]}
    (lists of one length, taken together), ``fixed`` {name: value}, and ``seeds`` [labels] or
    ``replicates`` N (each point repeated with parameter ``replicate`` = label / 0..N−1; the replicate only
    changes the derived seed). A dict without these keys is a grid: list values are axes, others fixed.
    """
    if isinstance(spec, (list, tuple)):
        points = [dict(p) if isinstance(p, dict) else p for p in spec]
        for p in points:
            if not isinstance(p, dict):
                raise ValueError(f"points: each point must be a dict of parameters, got {type(p).__name__}")
        if not points:
            raise ValueError("empty sweep: the list of points is empty")
        return points
    if not isinstance(spec, dict):
        raise ValueError(f"points: expected a list of dicts or a grid spec dict, got {type(spec).__name__}")
    if not SPEC_KEYS & set(spec):
        grid = {k: v for k, v in spec.items() if isinstance(v, (list, tuple))}
        fixed = {k: v for k, v in spec.items() if not isinstance(v, (list, tuple))}
        spec = {"grid": grid, "fixed": fixed}
    unknown = set(spec) - SPEC_KEYS
    if unknown:
        raise ValueError(f"grid spec: unknown key(s) {sorted(unknown)}; expected some of {sorted(SPEC_KEYS)}")
    grid = dict(spec.get("grid") or {})
    zipped = dict(spec.get("zip") or {})
    fixed = dict(spec.get("fixed") or {})
    for section, d in (("grid", grid), ("zip", zipped), ("fixed", fixed)):
        if not isinstance(d, dict):
            raise ValueError(f"grid spec: {section!r} must be a table of parameters, got {type(d).__name__}")
    names = list(grid) + list(zipped) + list(fixed)
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ValueError(f"grid spec: parameter(s) {sorted(dup)} appear in more than one of grid/zip/fixed")
    for name, values in list(grid.items()) + list(zipped.items()):
        if not isinstance(values, (list, tuple)):
            raise ValueError(f"grid spec: {name!r} must be a list of values, got {values!r}")
        if len(values) == 0:
            raise ValueError(f"empty grid: parameter {name!r} has no values")
        for v in values:
            _check_value(name, v)
    for name, v in fixed.items():
        _check_value(name, v)
    lengths = {len(v) for v in zipped.values()}
    if len(lengths) > 1:
        raise ValueError(f"grid spec: zip lists must have one length, got "
                         f"{ {k: len(v) for k, v in zipped.items()} }")
    if "seeds" in spec and "replicates" in spec:
        raise ValueError("grid spec: give either 'seeds' or 'replicates', not both")
    reps: list | None = None
    if "seeds" in spec:
        reps = list(spec["seeds"]) if isinstance(spec["seeds"], (list, tuple)) else None
        if reps is None:
            raise ValueError(f"grid spec: 'seeds' must be a list, got {spec['seeds']!r}")
        if not reps:
            raise ValueError("empty grid: 'seeds' is empty")
        for v in reps:
            _check_value("seeds", v)
    elif "replicates" in spec:
        r = spec["replicates"]
        if isinstance(r, bool) or not isinstance(r, int) or r < 1:
            raise ValueError(f"grid spec: 'replicates' must be an integer >= 1, got {r!r}")
        reps = list(range(r))
    zip_rows = ([dict(zip(zipped, row)) for row in zip(*zipped.values())] if zipped else [{}])
    points = []
    for combo in itertools.product(*grid.values()) if grid else [()]:
        for zrow in zip_rows:
            base = {**fixed, **dict(zip(grid, combo)), **zrow}
            if reps is None:
                points.append(base)
            else:
                points.extend({**base, experiments.REPLICATE: r} for r in reps)
    if not points or (not grid and not zipped and not fixed and reps is None):
        raise ValueError("empty grid: the spec defines no parameters and no seeds")
    return points


def load_config(path) -> dict:
    """Read a sweep TOML: ``experiment``, ``seed``, optional ``out``, ``scheduler``, ``workers``, a ``[plot]``
    table, and the point spec (``[grid]``, ``[zip]``, ``[fixed]``, ``seeds``/``replicates``).

    Returns ``{"experiment", "points", "seed", "out", "scheduler", "workers", "plot", "name"}`` after
    checking the experiment and every parameter (ValueError otherwise; nothing is run or written).
    """
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ValueError(f"sweep config {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"sweep config {path}: invalid TOML ({exc})") from None
    unknown = set(raw) - CONFIG_KEYS
    if unknown:
        from verify.sweep.schema import suggest

        first = sorted(unknown)[0]
        raise ValueError(f"sweep config {path}: unknown key(s) {sorted(unknown)}{suggest(first, CONFIG_KEYS)}; "
                         f"expected some of {sorted(CONFIG_KEYS)} (a parameter goes in [grid], [zip] or [fixed])")
    if "experiment" not in raw:
        raise ValueError(f"sweep config {path}: missing 'experiment = \"...\"' "
                         f"(one of {', '.join(sorted(experiments.EXPERIMENTS))})")
    exp = experiments.get(raw["experiment"])
    spec = {k: raw[k] for k in SPEC_KEYS if k in raw}
    if not spec:
        raise ValueError(f"sweep config {path}: empty grid: no [grid], [zip], [fixed], seeds or replicates")
    points = [exp.canonical(p) for p in expand_points(spec)]
    seed = raw.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"sweep config {path}: seed must be an integer, got {seed!r}")
    from verify.sweep.plot import check_plot

    plot = raw.get("plot") or {}
    try:
        check_plot(exp, {**exp.plot, **plot} if isinstance(plot, dict) else plot, points)
    except ValueError as exc:
        raise ValueError(f"sweep config {path}: {exc}") from None
    return {
        "name": path.stem,
        "experiment": exp.name,
        "points": points,
        "seed": seed,
        "out": raw.get("out"),
        "scheduler": raw.get("scheduler"),
        "workers": raw.get("workers"),
        "plot": dict(plot),
        "description": raw.get("description", ""),
    }
