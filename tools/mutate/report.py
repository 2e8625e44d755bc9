"""The mutation report: kill rate per module, and every survivor as a diff (JSON + text)."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

OUTCOMES = ("killed", "survived", "uncovered", "equivalent")


def summarize(results: list[dict], population: dict[str, int] | None = None) -> dict[str, dict]:
    """Per module: counts of each outcome, timeouts, and the kill rate over non-equivalent mutants.

    With ``population`` (module -> its number of mutants), TOTAL also gets ``weighted_kill_rate``: the
    per-module rates weighted by population, the estimate for all of the modules' mutants (a sample takes the
    same number from every module, so the plain TOTAL over-weights the small ones)."""
    out: dict[str, dict] = {}
    for r in results:
        s = out.setdefault(r["module"], {**{o: 0 for o in OUTCOMES}, "timeouts": 0, "seconds": 0.0})
        s[r["outcome"]] += 1
        s["timeouts"] += r["outcome"] == "killed" and str(r.get("by", "")).startswith("timeout")
        s["seconds"] += r.get("seconds", 0.0)
    total = {**{o: 0 for o in OUTCOMES}, "timeouts": 0, "seconds": 0.0}
    for s in out.values():
        for k in total:
            total[k] += s[k]
    out = dict(sorted(out.items()))
    out["TOTAL"] = total
    for s in out.values():
        judged = s["killed"] + s["survived"] + s["uncovered"]
        s["kill_rate"] = round(s["killed"] / judged, 3) if judged else None
        s["seconds"] = round(s["seconds"], 1)
    if population:
        rated = [(population[m], s["kill_rate"]) for m, s in out.items() if m in population and s["kill_rate"] is not None]
        w = sum(n for n, _ in rated)
        out["TOTAL"]["weighted_kill_rate"] = round(sum(n * k for n, k in rated) / w, 3) if w else None
    return out


def rescore(results: list[dict], equivalent: dict[str, str]) -> list[dict]:
    """The results with survivors declared equivalent since the run (equivalent.toml now) marked equivalent:
    the kill rate the suite of that run had over the mutants now known to be non-equivalent."""
    return [{**r, "outcome": "equivalent", "by": equivalent[r["key"]]}
            if r["outcome"] in ("survived", "uncovered") and r["key"] in equivalent else r for r in results]


def text(results: list[dict], summary: dict, meta: dict) -> str:
    not_run = f" ({meta['not_run']} more sampled, not run: budget spent)" if meta.get("not_run") else ""
    lines = [f"mutation run: {meta['mutants']} mutants{not_run}, seed {meta['seed']}, sample {meta['sample']} per module, "
             f"{meta['seconds']:.0f} s (baseline {meta['baseline_seconds']:.0f} s"
             f"{', cached' if meta['baseline_cached'] else ''}); mean {meta['seconds_per_run_mutant']:.1f} s "
             f"per mutant run", "",
             f"{'module':34s} {'killed':>6s} {'surv.':>6s} {'uncov.':>6s} {'equiv.':>6s} {'t/o':>4s} {'kill rate':>9s}"]
    for mod, s in summary.items():
        rate = "-" if s["kill_rate"] is None else f"{100 * s['kill_rate']:.0f} %"
        lines.append(f"{mod:34s} {s['killed']:6d} {s['survived']:6d} {s['uncovered']:6d} {s['equivalent']:6d} "
                     f"{s['timeouts']:4d} {rate:>9s}")
    if summary["TOTAL"].get("weighted_kill_rate") is not None:
        lines.append(f"{'weighted by module size':34s} {'':34s} {100 * summary['TOTAL']['weighted_kill_rate']:6.0f} %")
    lines.append("")
    lines.append("kill rate = killed / (killed + survived + uncovered); equivalent mutants (tools/mutate/equivalent.toml)"
                 " are left out; a timeout counts as killed.")
    left = [r for r in results if r["outcome"] in ("survived", "uncovered")]
    lines.append(f"\n{len(left)} surviving mutant(s):" if left else "\nno surviving mutant")
    for r in left:
        lines.append(f"\n[{r['outcome']}] {r['key']}  (line {r['line']}; ran {r['tests']} tests, "
                     f"{r['checks']} checks)")
        lines.append(r["diff"].rstrip())
    return "\n".join(lines) + "\n"


def atomic_write(path: Path, data: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(data)
    os.replace(tmp, path)


def write(report_dir: Path, results: list[dict], meta: dict, population: dict[str, int] | None = None) -> str:
    summary = summarize(results, population)
    body = text(results, summary, meta)
    atomic_write(report_dir / "mutation.json", json.dumps({"meta": meta, "summary": summary, "mutants": results},
                                                          indent=1))
    atomic_write(report_dir / "mutation.txt", body)
    return body
