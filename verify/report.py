"""Write report.json and REPORT.md (with embedded figures) for a verify run."""
from __future__ import annotations

import datetime
import json
import platform
from pathlib import Path

from sims.cache import atomic_write_text
from verify.registry import Outcome, summarize, to_jsonable


def fmt(x, width: int | None = None) -> str:
    """Short human form of a measured/expected value."""
    if isinstance(x, float):
        s = f"{x:.4g}"
    elif isinstance(x, (list, tuple)):
        s = "[" + ", ".join(fmt(v) for v in x[:4]) + (", …]" if len(x) > 4 else "]")
    elif x is None:
        s = "—"
    else:
        s = str(x)
    if width and len(s) > width:
        s = s[: width - 1] + "…"
    return s


def table_rows(outcomes: list[Outcome]) -> list[list[str]]:
    return [[o.id, o.kind, fmt(o.measured, 28), fmt(o.expected, 28), fmt(o.tolerance, 14), o.status,
             f"{o.seconds:.1f}"] for o in outcomes]


HEADER = ["id", "kind", "measured", "expected", "tolerance", "status", "s"]


def text_table(outcomes: list[Outcome]) -> str:
    rows = [HEADER] + table_rows(outcomes)
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def write_json(path: Path, outcomes: list[Outcome], meta: dict) -> None:
    payload = {"meta": meta, "checks": [o.to_json() for o in outcomes], "summary": summarize(outcomes)}
    atomic_write_text(Path(path), json.dumps(to_jsonable(payload), indent=2))


def _md_details(d: dict, depth: int = 0) -> list[str]:
    lines = []
    for k, v in d.items():
        if k == "traceback":
            continue
        if isinstance(v, dict):
            lines.append("  " * depth + f"- {k}:")
            lines += _md_details(v, depth + 1)
        else:
            lines.append("  " * depth + f"- {k}: {fmt(v) if not isinstance(v, str) else v}")
    return lines


def write_markdown(report_dir: Path, outcomes: list[Outcome], meta: dict, figures: dict) -> Path:
    """REPORT.md: summary, the table, then one section per check with its figures embedded."""
    report_dir = Path(report_dir)
    s = summarize(outcomes)
    md = [
        "# theorylab verification report", "",
        f"Generated {meta['date']} on {meta['machine']}; seed {meta['seed']}; "
        f"{'quick' if meta['quick'] else 'full'} run; {meta['seconds']:.0f} s in all.", "",
        "Summary: " + ", ".join(f"**{v}** {k}" for k, v in s.items()), "",
        "Statuses: `pass` the claim holds within tolerance and its negative control fails; "
        "`refuted` the claim as stated does not hold here (a finding, argued below); `reported` a conjecture "
        "or open law, numbers without verdict; `fail` the check is broken; `missing` not implemented.", "",
        "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER),
    ]
    md += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in table_rows(outcomes)]
    md.append("")
    shown = set()
    for o in outcomes:
        md += [f"## `{o.id}` — {o.status}", "", f"*{o.paper} {o.equation}* — {o.statement}", ""]
        if o.status == "missing":
            md += ["Not implemented yet.", ""]
            continue
        md += [f"- measured: {fmt(o.measured)}; expected: {fmt(o.expected)}",
               f"- tolerance: {fmt(o.tolerance)} — {o.tolerance_reason}",
               f"- negative control ({o.negative_control}): {o.negative_control_result}"
               f" (measured {fmt(o.control_measured)})",
               f"- seconds: {o.seconds:.2f}"]
        if o.erratum:
            md.append(f"- **erratum**: {o.erratum}")
        if o.error:
            md.append(f"- **error**: `{o.error}`")
        md.append("")
        if o.finding:
            md += [f"**Finding.** {o.finding}", ""]
        if o.details:
            md += _md_details(o.details) + [""]
        for a in o.artifacts:
            md.append(f"- artifact: [{a}]({a})")
        for fid in o.figures:
            if fid in figures:
                shown.add(fid)
                f = figures[fid]
                md += [f"![{fid}](figs/{fid}.png)", "", f"*Figure `{fid}` ({f['answers']}): {f['caption']}*", ""]
    rest = [fid for fid in figures if fid not in shown]
    if rest:
        md += ["## Other figures", ""]
        for fid in rest:
            f = figures[fid]
            md += [f"![{fid}](figs/{fid}.png)", "", f"*Figure `{fid}` ({f['answers']}): {f['caption']}*", ""]
    path = report_dir / "REPORT.md"
    atomic_write_text(path, "\n".join(md) + "\n")
    return path


def run_meta(seed: int, quick: bool, seconds: float) -> dict:
    return {"date": datetime.datetime.now().isoformat(timespec="seconds"), "seed": seed, "quick": quick,
            "seconds": seconds, "machine": f"{platform.node()} ({platform.machine()}, Python {platform.python_version()})"}
