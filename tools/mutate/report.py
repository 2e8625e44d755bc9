"""The mutation report: kill rate per module, and every survivor as a diff (JSON + text)."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

OUTCOMES = ("killed", "survived", "uncovered", "equivalent")


def summarize(results: list[dict]) -> dict[str, dict]:
    """Per module: counts of each outcome, timeouts, and the kill rate over non-equivalent mutants."""
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
    return out


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


def write(report_dir: Path, results: list[dict], meta: dict) -> str:
    summary = summarize(results)
    body = text(results, summary, meta)
    atomic_write(report_dir / "mutation.json", json.dumps({"meta": meta, "summary": summary, "mutants": results},
                                                          indent=1))
    atomic_write(report_dir / "mutation.txt", body)
    return body
