"""A sweep's summary: one row per point (parameters, seed, status, scalar result fields) as CSV and Markdown."""
from __future__ import annotations

import csv
import io
from pathlib import Path

from sims.cache import atomic_write_text


def _scalar(v) -> bool:
    return v is None or isinstance(v, (int, float, str, bool))


def flat_result(result) -> dict:
    """The scalar fields of a result; nested dicts flattened with dotted names (``summary.hard_gap``)."""
    out = {}

    def walk(prefix, d):
        for k, v in d.items():
            name = f"{prefix}{k}"
            if isinstance(v, dict):
                walk(name + ".", v)
            elif _scalar(v):
                out[name] = v

    if isinstance(result, dict):
        walk("", result)
    return out


def summary_rows(records: list[dict]) -> tuple[list[str], list[dict]]:
    """Columns (parameters, then seed/status, then scalar result fields) and one row per point."""
    pcols, rcols = [], []
    for r in records:
        for k in r["params"]:
            if k not in pcols:
                pcols.append(k)
        if r.get("status") == "done":
            for k in flat_result(r.get("result")):
                if k not in rcols:
                    rcols.append(k)
    cols = pcols + ["seed", "status"] + rcols + ["seconds"]
    rows = []
    for r in records:
        row = {k: r["params"].get(k) for k in pcols}
        row.update(seed=r["seed"], status=r["status"], seconds=r.get("seconds"))
        res = flat_result(r.get("result"))
        for k in rcols:
            row[k] = res.get(k)
        rows.append(row)
    return cols, rows


def fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def write_summary(out: Path, exp, records: list[dict]) -> dict:
    cols, rows = summary_rows(records)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    for row in rows:
        w.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in cols})
    atomic_write_text(out / "summary.csv", buf.getvalue())
    counts = {st: sum(r["status"] == st for r in records) for st in ("done", "failed", "crashed")}
    lines = [f"# sweep `{exp.name}`", "", ", ".join(f"{v} {k}" for k, v in counts.items()) +
             f", {len(records)} points", "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(row.get(k)) for k in cols) + " |" for row in rows]
    for status in ("failed", "crashed"):
        bad = [r for r in records if r["status"] == status]
        if bad:
            lines += ["", f"## {status} points", ""]
            lines += [f"- `{r['key']}` {r['params']}: {r.get('error')}" for r in bad]
    atomic_write_text(out / "summary.md", "\n".join(lines) + "\n")
    files = {"summary_csv": out / "summary.csv", "summary_md": out / "summary.md"}
    return files
