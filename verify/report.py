"""Write report.json and REPORT.md (with embedded figures and the controls' table) for a verify run."""
from __future__ import annotations

import datetime
import json
import math
import platform
import re
from pathlib import Path

from sims.cache import atomic_write_text
from verify.readings import reading_json
from verify.registry import Outcome, miss_class, summarize, to_jsonable

_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def cut(s: str, width: int | None) -> str:
    """``s`` shortened to about ``width`` characters with "…", never in the middle of a number.

    The cut falls at the last place before ``width`` that is outside every number (preferring a space or
    a comma); if the first number alone is longer, the cell keeps that whole number.
    """
    if not width or len(s) <= width:
        return s
    spans = [m.span() for m in _NUMBER.finditer(s)]
    inside = {i for a, b in spans for i in range(a + 1, b)}
    ok = [i for i in range(1, width) if i not in inside]
    nice = [i for i in ok if s[i - 1] in " ,;" or s[i] in " ,;)]"]
    if nice and nice[-1] >= width // 2:
        i = nice[-1]
    elif ok:
        i = ok[-1]
    else:
        i = spans[0][1]
    return s[:i].rstrip(" ,;") + "…"


def fmt(x, width: int | None = None) -> str:
    """Short human form of a measured/expected value (4 significant digits), at most about ``width`` long."""
    if hasattr(x, "tolist") and not isinstance(x, (str, bytes)):  # numpy arrays and scalars
        x = x.tolist()
    if isinstance(x, bool) or x is None:
        s = "—" if x is None else str(x)
    elif isinstance(x, float):
        s = f"{float(x):.4g}"
    elif isinstance(x, (list, tuple)):
        items = [fmt(v) for v in x]
        s = "[" + ", ".join(items) + "]"
        if width and len(s) > width:  # drop whole items, never part of one
            for n in range(len(items) - 1, 0, -1):
                s = "[" + ", ".join(items[:n]) + ", …]"
                if len(s) <= width:
                    return s
            return s
    elif isinstance(x, dict):
        s = "{" + ", ".join(f"{k}: {fmt(v)}" for k, v in x.items()) + "}"
    else:
        s = str(x)
    return cut(s, width)


def fmt_miss(m, unit: str = "") -> str:
    """A miss in tolerance units ("∞" for inf); None is "not recorded"."""
    if m is None:
        return "not recorded" if unit else "—"
    m = float(m)
    return ("∞" if math.isinf(m) else f"{m:.3g}") + unit


HEADER = ["id", "kind", "measured", "expected", "tolerance", "status", "s"]


def table_rows(outcomes: list[Outcome]) -> list[list[str]]:
    return [[o.id, o.kind, fmt(o.measured, 28), fmt(o.expected, 28), fmt(o.tolerance, 14),
             f"{o.status} {o.seeds_summary}".strip(), f"{o.seconds:.1f}"] for o in outcomes]


STREAM_WIDTHS = (27, 16, 28, 28, 14, 12)
"""Column widths of the rows ``verify`` prints as each check finishes (the longest id and kind fit)."""


def _stream_line(cells: list[str]) -> str:
    return "  ".join([c.ljust(w) for c, w in zip(cells, STREAM_WIDTHS)] + cells[len(STREAM_WIDTHS):]).rstrip()


def stream_header() -> str:
    """The header (and its rule) above the rows printed as the checks finish."""
    return _stream_line(HEADER) + "\n" + _stream_line(["-" * w for w in STREAM_WIDTHS] + ["-" * 4])


def stream_row(o: Outcome) -> str:
    """One check's row of the verify table, in the fixed widths of :data:`STREAM_WIDTHS`; a skipped check's row
    is followed by a line saying what is missing and the command that installs it."""
    row = _stream_line(table_rows([o])[0])
    return row + (f"\n    {skip_note(o)}" if o.status == "skipped" else "")


def skip_note(o) -> str:
    """``skipped: scikit-image (module skimage) is not installed; install it with: pip install 'theorylab[real]'``
    for a skipped check (an :class:`Outcome`) or figure (a dict with ``missing_dependency`` and ``install``)."""
    get = o.get if isinstance(o, dict) else lambda k: getattr(o, k, None)
    return f"skipped: {get('missing_dependency')} is not installed; install it with: {get('install')}"


def skipped_figures(meta: dict) -> dict:
    """The run's skipped figures (``meta['figure_skipped']``): id -> {missing_dependency, install}."""
    return dict(meta.get("figure_skipped") or {})


def install_commands(outcomes: list[Outcome], meta: dict) -> list[str]:
    """The distinct commands that would install what the skipped checks and figures need, in order."""
    cmds = [o.install for o in outcomes if o.status == "skipped" and o.install]
    cmds += [f.get("install") for f in skipped_figures(meta).values() if f.get("install")]
    return list(dict.fromkeys(cmds))


def json_line(obj) -> str:
    """``obj`` as one line of JSON (newline-delimited JSON: ``verify --json -``)."""
    return json.dumps(to_jsonable(obj))


def write_ndjson(path: Path, objs) -> None:
    """One JSON object a line (``verify --list --json PATH``)."""
    atomic_write_text(Path(path), "".join(json_line(o) + "\n" for o in objs))


def summary_record(outcomes: list[Outcome], meta: dict) -> dict:
    """report.json without its checks: ``meta`` (with the controls' class counts) and ``summary``."""
    return {"meta": dict(meta, controls=controls(outcomes)["counts"],
                         shared_evidence={o.id: o.shares for o in outcomes if o.shares},
                         shared_runs=shared_runs(outcomes)),
            "summary": summarize(outcomes)}


def text_table(rows: list[list[str]], header: list[str] | None = None) -> str:
    """Aligned plain-text table (a list of Outcomes gives the verify table)."""
    if rows and isinstance(rows[0], Outcome):
        rows, header = table_rows(rows), HEADER
    rows = [header] + rows if header else rows
    if not rows:
        return ""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    if header:
        lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def shared_runs(outcomes: list[Outcome]) -> dict:
    """{runs: [ids]} for runs that more than one check judges its own claim on (``Outcome.reads``)."""
    out: dict = {}
    for o in outcomes:
        if o.reads:
            out.setdefault(o.reads, []).append(o.id)
    return {k: v for k, v in out.items() if len(v) > 1}


def shared_text(outcomes: list[Outcome]) -> str:
    """" (X shares Y's computation: …; claims judged on shared runs: …)" for checks whose verdict is not a second
    piece of evidence and for verdicts that rest on the same runs, else ""."""
    shared = [o for o in outcomes if o.shares]
    runs = shared_runs(outcomes)
    parts = []
    if shared:
        parts.append("; ".join(f"{o.id} shares {o.shares}'s computation" for o in shared)
                     + f": {len(outcomes) - len(shared)} independent pieces of evidence")
    if runs:
        parts.append("claims judged on shared runs: "
                     + "; ".join(f"{len(ids)} on {name}" for name, ids in runs.items()))
    return f" ({'; '.join(parts)})" if parts else ""


def summary_line(outcomes: list[Outcome], meta: dict) -> str:
    """The run's one-line summary, with the same times as REPORT.md and report.json. Checks that share another's
    computation (``Outcome.shares``) are named: their verdict is not a second piece of evidence."""
    s = summarize(outcomes)
    line = ", ".join(f"{v} {k}" for k, v in s.items()) + shared_text(outcomes)
    n_figs = len(skipped_figures(meta))
    if n_figs:
        line += f", {n_figs} figure{'s' if n_figs > 1 else ''} skipped"
    cmds = install_commands(outcomes, meta)
    if cmds:
        line += " (to run them: " + "; ".join(cmds) + ")"
    return line + f"  ({timing(meta)})"


def timing(meta: dict) -> str:
    """The run time as the summary line, REPORT.md and report.json's meta all state it (one measurement)."""
    t = f"{meta['seconds']:.0f} s in all"
    if meta.get("figure_seconds"):
        figs = meta.get("figures_total_seconds", sum(meta["figure_seconds"].values()))
        t += f": checks {meta['check_seconds']:.0f} s, figures {figs:.0f} s"
    return t


def controls(outcomes: list[Outcome]) -> dict:
    """Negative controls sorted by miss (None last) with their class, positive controls, and class counts."""
    ran = [o for o in outcomes if o.status != "missing" and o.negative_control_result]
    neg = sorted(ran, key=lambda o: (o.control_miss is None, float(o.control_miss or 0)))
    counts: dict[str, int] = {}
    for o in neg:
        c = miss_class(o.control_miss, o.kind)
        counts[c] = counts.get(c, 0) + 1
    return {"negative": neg, "positive": [o for o in ran if o.positive_control], "counts": counts}


def _md_controls(outcomes: list[Outcome]) -> list[str]:
    c = controls(outcomes)
    if not c["negative"]:
        return []
    md = ["## Controls", "",
          "Each check's negative control runs the same comparison against a planted wrong claim that stands for a "
          "realistic bug; it must miss. *Miss* is how far, in units of the tolerance: a near miss (≤ 10) catches "
          "subtle bugs, a clear miss (≤ 10³) catches ordinary ones, a far miss (> 10³) catches nothing subtle; an "
          "exact symbolic comparison misses by ∞. Sorted by miss.", "",
          "Classes: " + ", ".join(f"**{n}** {k}" for k, n in c["counts"].items()), "",
          "| check | negative control (the bug it stands for) | result | miss | class |", "|---|---|---|---|---|"]
    md += [f"| `{o.id}` | {_cell(o.negative_control)} | {o.negative_control_result} | {fmt_miss(o.control_miss)} | "
           f"{miss_class(o.control_miss, o.kind)} |" for o in c["negative"]]
    if c["positive"]:
        md += ["", "Positive controls: the same comparison on data or a model where the claim holds by construction; "
               "it must hold.", "", "| check | status | positive control | result | miss |", "|---|---|---|---|---|"]
        md += [f"| `{o.id}` | {o.status} | {_cell(o.positive_control)} | {o.positive_control_result} | "
               f"{fmt_miss(o.positive_miss)} |" for o in c["positive"]]
    return md + [""]


def _cell(s) -> str:
    return str(s or "").replace("|", "\\|").replace("\n", " ")


def check_record(o: Outcome) -> dict:
    """A check's entry in report.json: its outcome's fields plus ``reading``, how the paper states the claim
    (verify/readings.toml: where, quote, quantifier, quantifier_why, conditions, other_readings), or None when no
    reading is recorded (a plugin's claim)."""
    return dict(o.to_json(), reading=reading_json(o.id))


def write_json(path: Path, outcomes: list[Outcome], meta: dict) -> None:
    rec = summary_record(outcomes, meta)
    payload = {"meta": rec["meta"], "checks": [check_record(o) for o in outcomes], "summary": rec["summary"]}
    atomic_write_text(Path(path), json.dumps(to_jsonable(payload), indent=2))


def _is_table(v) -> bool:
    """A non-empty list of dicts with the same keys (rendered as a table; e.g. a check's regime table)."""
    return (isinstance(v, list) and bool(v) and all(isinstance(r, dict) for r in v)
            and all(list(r) == list(v[0]) for r in v))


def _md_table(rows: list[dict], indent: str = "") -> list[str]:
    cols = list(rows[0])
    out = [indent + "| " + " | ".join(_cell(c) for c in cols) + " |", indent + "|" + "---|" * len(cols)]
    out += [indent + "| " + " | ".join(_cell(fmt(r[c]) if not isinstance(r[c], str) else r[c]) for c in cols) + " |"
            for r in rows]
    return out


def _md_details(d: dict, depth: int = 0) -> list[str]:
    lines = []
    for k, v in d.items():
        if k == "traceback":
            continue
        if isinstance(v, dict):
            lines.append("  " * depth + f"- {k}:")
            lines += _md_details(v, depth + 1)
        elif str(k).startswith("regime") and _is_table(v):
            lines += ["  " * depth + f"- {k}:", ""] + _md_table(v, "  " * (depth + 1)) + [""]
        else:
            lines.append("  " * depth + f"- {k}: {fmt(v) if not isinstance(v, str) else v}")
    return lines


def _md_reading(check_id: str) -> list[str]:
    """The paper's own statement of the claim (verify/readings.toml): quote, quantifier, stated conditions."""
    r = reading_json(check_id)
    if r is None:
        return ["- Paper's claim: no reading recorded (verify/readings.toml has no entry for this id)", ""]
    md = [f"- Paper's claim (quoted, {r['where']}): “{r['quote']}”",
          f"- Quantifier: **{r['quantifier']}** — {r['quantifier_why']}"]
    md += [f"  - other reading: **{x['quantifier']}** — {x['why']}" for x in r["other_readings"]]
    md.append("- Conditions the paper states:" + ("" if r["conditions"] else " none"))
    md += [f"  - {c}" for c in r["conditions"]]
    return md + [""]


def _md_check(o: Outcome, figures: dict, shown: set) -> list[str]:
    md = [f"## `{o.id}` — {o.status}", "", f"*{o.paper} {o.equation}* — {o.statement}", ""]
    md += _md_reading(o.id)
    if o.status == "missing":
        return md + ["Not implemented yet.", ""]
    if o.status == "skipped":
        return md + [f"Skipped: {o.missing_dependency} is not installed. Install it with `{o.install}`.", ""]
    md += [f"- measured: {fmt(o.measured)}; expected: {fmt(o.expected)}; miss {fmt_miss(o.miss, ' tolerances')}",
           f"- tolerance: {fmt(o.tolerance)} — {o.tolerance_reason}",
           f"- negative control ({o.negative_control}): {o.negative_control_result}"
           f" (measured {fmt(o.control_measured)}; miss {fmt_miss(o.control_miss, ' tolerances')}"
           + (f", {miss_class(o.control_miss, o.kind)})" if o.control_miss is not None else ")"),
           f"- seconds: {o.seconds:.2f}"]
    if o.positive_control:
        md.append(f"- positive control ({o.positive_control}): {o.positive_control_result}"
                  f" (measured {fmt(o.positive_measured)}; miss {fmt_miss(o.positive_miss, ' tolerances')})")
    if o.seeds_summary:
        md.append(f"- seeds: the claim held for {o.seeds_summary} — " + "; ".join(
            f"seed {v['seed']}: {'holds' if v['holds'] else 'does not hold'} ({fmt(v['measured'], 40)})"
            for v in o.seed_verdicts))
    if o.erratum:
        md.append(f"- **erratum**: {o.erratum}")
    if o.error:
        md.append(f"- **error**: `{o.error}`")
    if o.shares:
        md.append(f"- **evidence shared** with `{o.shares}`: the same computation, one piece of evidence")
    if o.reads:
        md.append(f"- **runs shared**: judged on {o.reads}, which other checks read for their own claims")
    if o.regime:
        md.append("- the paper's stated conditions, measured here:")
        md += [f"  - {k}: {'met' if v['holds'] else '**not met**'} (measured: {fmt(v.get('measured'))})"
               for k, v in o.regime.items()]
    if o.readings:
        md.append("- other readings of the claim (verdict lines; the status judges the stated one):")
        md += [f"  - {k} [{v.get('quantifier', '?')}]: {'holds' if v.get('holds') else 'does not hold'}"
               f" (miss {fmt_miss(v.get('miss'), ' tolerances')}; {fmt(v.get('measured'), 200)})"
               + (f" — {v['undecided']}" if v.get("undecided") else "") for k, v in o.readings.items()]
    md.append("")
    if o.finding:
        md += [f"**Finding.** {o.finding}", ""]
    if o.details:
        md += _md_details(o.details) + [""]
    md += [f"- artifact: [{a}]({a})" for a in o.artifacts]
    for fid in o.figures:
        if fid in figures:
            shown.add(fid)
            md += _md_figure(fid, figures[fid])
    return md


def _md_skipped(outcomes: list[Outcome], meta: dict) -> list[str]:
    """The "Skipped" section: each skipped check and figure, what it needs and the command that installs it."""
    checks = [o for o in outcomes if o.status == "skipped"]
    figs = skipped_figures(meta)
    if not checks and not figs:
        return []
    md = ["## Skipped", "", "These need an optional package that is not installed here (an extra of theorylab, see "
          "the README's install section); they did not run and do not count as failures. To run them: "
          + "; ".join(f"`{c}`" for c in install_commands(outcomes, meta)) + ".", "",
          "| check or figure | needs (not installed) | install with |", "|---|---|---|"]
    md += [f"| `{o.id}` | {_cell(o.missing_dependency)} | `{o.install}` |" for o in checks]
    md += [f"| figure `{fid}` | {_cell(f.get('missing_dependency'))} | `{f.get('install')}` |"
           for fid, f in figs.items()]
    return md + [""]


def _md_figure(fid: str, f: dict) -> list[str]:
    return [f"![{fid}](figs/{fid}.png)", "", f"*Figure `{fid}` ({f['answers']}): {f['caption']}*", ""]


def write_markdown(report_dir: Path, outcomes: list[Outcome], meta: dict, figures: dict) -> Path:
    """REPORT.md: summary, the table, the controls, then one section per check with its figures embedded."""
    report_dir = Path(report_dir)
    s = summarize(outcomes)
    md = [
        "# theorylab verification report", "",
        f"Generated {meta['date']} on {meta['machine']}; seed {meta['seed']}; "
        f"{'quick' if meta['quick'] else 'full'} run; {timing(meta)}.", "",
        "Summary: " + ", ".join(f"**{v}** {k}" for k, v in s.items()) + shared_text(outcomes), "",
        "Statuses: `pass` the claim holds within tolerance (for every seed) and its negative control fails; "
        "`refuted` the claim as stated does not hold here (a finding, argued below; its positive control shows "
        "the comparison can say 'holds'); `reported` a conjecture or open law, or a claim that holds for some "
        "seeds only: numbers without verdict; `fail` the check is broken; `missing` not implemented; "
        "`skipped` it needs an optional package that is not installed (the section says which, and the command "
        "that installs it). A status `pass 3/3` says for how many seeds the claim held.", "",
        "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER),
    ]
    md += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in table_rows(outcomes)]
    md.append("")
    if meta.get("plugins"):
        md += ["Plugins loaded: " + ", ".join(f"`{p}`" for p in meta["plugins"]), ""]
    for fid, err in (meta.get("figure_errors") or {}).items():
        md.append(f"- **figure `{fid}` failed**: `{err}`")
    md += _md_skipped(outcomes, meta)
    md += _md_controls(outcomes)
    shown: set = set()
    for o in outcomes:
        md += _md_check(o, figures, shown)
    rest = [fid for fid in figures if fid not in shown]
    if rest:
        md += ["## Other figures", ""]
        for fid in rest:
            md += _md_figure(fid, figures[fid])
    path = report_dir / "REPORT.md"
    atomic_write_text(path, "\n".join(md) + "\n")
    return path


def run_meta(seed: int, quick: bool, seconds: float, **extra) -> dict:
    """The run's metadata; ``seconds`` is the whole run, ``check_seconds`` (in ``extra``) the checks alone."""
    meta = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "seed": seed, "quick": quick,
            "seconds": seconds, "check_seconds": seconds,
            "machine": f"{platform.node()} ({platform.machine()}, Python {platform.python_version()})"}
    meta.update(extra)
    return meta
