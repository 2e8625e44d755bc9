"""A sweep's summary: one row per point as CSV (every parameter and scalar result field) and as Markdown for a
person (the grid's axes, the headline results once, the fixed parameters that differ from the defaults above
the table)."""
from __future__ import annotations

import csv
import fnmatch
import io
import json
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


RECORD_COLUMNS = ("seed", "status", "seconds")


def _result_columns(records: list[dict], params: list[str]) -> list[str]:
    """Scalar result fields of the done points, less the copies of the parameters (``config.<param>``,
    ``config.seed``); a field named like a record column is kept as ``result.<name>``."""
    cols = []
    for r in records:
        if r.get("status") != "done":
            continue
        for k in flat_result(r.get("result")):
            if k.startswith("config.") and (k[7:] in params or k[7:] == "seed"):
                continue
            if k not in cols:
                cols.append(k)
    return cols


def _result_value(res: dict, col: str):
    return res.get(col[7:]) if col.startswith("result.") and col not in res else res.get(col)


def summary_rows(records: list[dict]) -> tuple[list[str], list[dict]]:
    """Every column (parameters, then seed/status, then the scalar result fields, then the point's seconds) and
    one row per point: summary.csv. Copies of the parameters inside the result (``config.*``) are left out."""
    pcols = []
    for r in records:
        for k in r["params"]:
            if k not in pcols:
                pcols.append(k)
    rcols = [f"result.{k}" if k in RECORD_COLUMNS or k in pcols else k for k in _result_columns(records, pcols)]
    cols = pcols + ["seed", "status"] + rcols + ["seconds"]
    rows = []
    for r in records:
        row = {k: r["params"].get(k) for k in pcols}
        row.update(seed=r["seed"], status=r["status"], seconds=r.get("seconds"))
        res = flat_result(r.get("result"))
        for k in rcols:
            row[k] = _result_value(res, k)
        rows.append(row)
    return cols, rows


def axes(records: list[dict]) -> list[str]:
    """The parameters whose value differs between the points (the grid's axes), in the order they appear."""
    seen: dict = {}
    for r in records:
        for k, v in r["params"].items():
            seen.setdefault(k, set()).add(json.dumps(v, sort_keys=True))
    return [k for k, vals in seen.items() if len(vals) > 1]


def fixed_values(exp, records: list[dict], varying: list[str]) -> dict:
    """The parameters every point shares whose value is not the experiment's default (all of them when the
    defaults are unknown)."""
    if not records:
        return {}
    try:
        defaults = exp.canonical({})
    except ValueError:
        defaults = {}
    first = records[0]["params"]
    return {k: v for k, v in first.items() if k not in varying and (k not in defaults or defaults[k] != v)}


def headline_columns(exp, records: list[dict]) -> list[str]:
    """The result columns of summary.md: the experiment's ``summary`` fields, else those its ``results``
    declares, else every scalar field; each once."""
    cols = _result_columns(records, [k for r in records[:1] for k in r["params"]])
    for patterns in (exp.summary, exp.results):
        chosen = [c for c in cols if c != "seconds" and any(fnmatch.fnmatchcase(c, p) for p in patterns)]
        if chosen:
            if exp.summary and patterns is exp.summary:  # in the order the experiment lists them
                chosen = [c for p in exp.summary for c in chosen if fnmatch.fnmatchcase(c, p)]
                chosen = list(dict.fromkeys(chosen))
            return chosen
    return [c for c in cols if c != "seconds"]


def fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def markdown(exp, records: list[dict]) -> str:
    """summary.md: the grid's axes and the headline results, one row per point; the fixed parameters that
    differ from the defaults once above the table; every other field is in summary.csv and the point files."""
    counts = {st: sum(r["status"] == st for r in records) for st in ("done", "failed", "crashed")}
    varying = axes(records)
    fixed = fixed_values(exp, records, varying)
    heads = headline_columns(exp, records)
    show_status = any(r["status"] != "done" for r in records)
    cols = varying + (["status"] if show_status else []) + heads + ["seconds"]
    sizes = {a: len({fmt(r["params"].get(a)) for r in records}) for a in varying}
    lines = [f"# sweep `{exp.name}`", "", ", ".join(f"{v} {k}" for k, v in counts.items()) +
             f", {len(records)} points" + ("; axes: " + ", ".join(f"{a} ({n} values)" for a, n in sizes.items())
                                           if varying else ""), ""]
    if fixed:
        lines += ["Fixed: " + ", ".join(f"{k} = {fmt(v)}" for k, v in fixed.items()), ""]
    lines += ["Every parameter and scalar result of every point: `summary.csv`; whole results: `points/*.json`.", ""]
    lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in records:
        res = flat_result(r.get("result"))
        row = {**{k: r["params"].get(k) for k in varying}, "status": r["status"], "seconds": r.get("seconds"),
               **{k: res.get(k) for k in heads}}
        lines.append("| " + " | ".join(fmt(row.get(k)) for k in cols) + " |")
    for status in ("failed", "crashed"):
        bad = [r for r in records if r["status"] == status]
        if bad:
            lines += ["", f"## {status} points", ""]
            lines += [f"- `{r['key']}` {r['params'] if not varying else {k: r['params'].get(k) for k in varying}}: "
                      f"{r.get('error')}" for r in bad]
    return "\n".join(lines) + "\n"


def write_summary(out: Path, exp, records: list[dict]) -> dict:
    """summary.csv (every column, :func:`summary_rows`) and summary.md (:func:`markdown`)."""
    cols, rows = summary_rows(records)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    for row in rows:
        w.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in cols})
    atomic_write_text(out / "summary.csv", buf.getvalue())
    atomic_write_text(out / "summary.md", markdown(exp, records))
    files = {"summary_csv": out / "summary.csv", "summary_md": out / "summary.md"}
    return files
