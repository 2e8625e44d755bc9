"""``make mutate`` / ``python -m tools.mutate``: sampled mutation testing of theory/ and the numerics of sims/.

    python -m tools.mutate [MODULE ...] [--sample N] [--seed S] [--budget SECONDS] [--only TEXT] [--list]

MODULE: paths, prefixes or globs under theory/ or sims/ (default: theory/ and ``run.NUMERIC_SIMS``).
Prints the kill rate per module and every survivor as a diff; writes ``report/mutation.json`` and
``report/mutation.txt``. Results are kept per source state in ``--workdir``, so a rerun (or an
interrupted run) only runs the mutants it has not judged yet. See docs/mutation.md.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from tools.mutate import report, run
from tools.mutate.mutants import generate


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.mutate", description=__doc__.splitlines()[0])
    p.add_argument("modules", nargs="*", metavar="MODULE")
    p.add_argument("--sample", type=int, default=6, help="mutants per module, a seeded random sample (0: all)")
    p.add_argument("--seed", type=int, default=0, help="seed of the sample")
    p.add_argument("--budget", type=float, default=1200.0,
                   help="seconds; no new mutant starts after this (the baseline counts)")
    p.add_argument("--timeout-factor", type=float, default=3.0,
                   help="a mutant is killed by timeout after this many times its tests' and checks' baseline "
                        "seconds (+60 s, +120 s in a module with numba kernels)")
    p.add_argument("--workdir", default=".theorylab_cache/mutate", help="the copy of the tree, baselines, results")
    p.add_argument("--report", default="report", help="writes REPORT/mutation.json and REPORT/mutation.txt")
    p.add_argument("--only", metavar="TEXT", help="keep only the sampled mutants whose key contains TEXT "
                   "(with --sample 0: e.g. every mutant of one function)")
    p.add_argument("--list", action="store_true", help="list the sampled mutants (key and diff) and exit")
    p.add_argument("--fresh", action="store_true", help="ignore results stored for this source state")
    p.add_argument("--recheck", metavar="JSON", help="judge today's versions of the survivors of a written "
                   "mutation.json (matched by key, or by unit, operator and edited lines after a renumbering) "
                   "instead of a sample; survivors whose code is gone are listed")
    p.add_argument("--rescore", metavar="JSON", help="re-read a written mutation.json with today's equivalent.toml "
                   "(survivors argued equivalent since that run leave the rate) and print its summary; runs nothing")
    a = p.parse_args(argv)

    root = Path.cwd().resolve()
    if not (root / "theory").is_dir():
        raise SystemExit("mutate: run from the repository root")
    if a.rescore:
        old = json.loads(Path(a.rescore).read_text())
        results = report.rescore(old["mutants"], run.load_equivalent())
        pop = old["meta"].get("population") or {  # older reports: today's module sizes
            mod: len(generate(mod, (root / mod).read_text(encoding="utf-8"))) for mod in old["meta"]["modules"]}
        print(report.text(results, report.summarize(results, pop), old["meta"]))
        return 0
    modules = run.select_modules(root, a.modules)

    def sampled(src: Path) -> list:
        if a.recheck:
            found, gone = run.match_survivors(json.loads(Path(a.recheck).read_text())["mutants"], src)
            for key in gone:
                print(f"mutate: {key}: its code is gone (no mutant with the same edit in the same unit today)")
            return found
        return [m for m in run.sample(src, modules, a.sample, a.seed) if not a.only or a.only in m.key]

    if a.list:
        mutants = sampled(root)
        for m in mutants:
            print(f"{m.key}  (line {m.line})\n{m.diff((root / m.module).read_text(encoding='utf-8'))}")
        print(f"{len(mutants)} mutants in {len(modules)} modules")
        return 0

    t0 = time.perf_counter()
    work = (root / a.workdir).resolve()
    tree = work / "tree"
    run.sync_tree(root, tree)
    # mutants, their spans and their diffs come from the copy: edits of the worktree during a run touch neither
    mutants = sampled(tree)
    sources = {mod: (tree / mod).read_text(encoding="utf-8") for mod in {m.module for m in mutants}}
    code_fp, test_hashes = run.fingerprints(tree)
    fp = run.state(code_fp, test_hashes)
    cached = (work / f"baseline-{code_fp}.json").exists()
    base = run.run_baseline(tree, work, code_fp, test_hashes)
    baseline_seconds = time.perf_counter() - t0
    equivalent, eq_lines = run.load_equivalent(), run.load_equivalent(lines=True)
    for m in mutants:
        if m.key in equivalent and not run.equivalent_applies(m, sources[m.module], eq_lines[m.key]):
            print(f"mutate: equivalent.toml's {m.key} was argued for `{eq_lines[m.key]}`, which is no longer its "
                  "line: judged as any other mutant (update the entry)", flush=True)
            del equivalent[m.key]
    store = work / f"results-{fp}.jsonl"
    done = {} if a.fresh or not store.exists() else \
        {r["key"]: r for r in map(json.loads, store.read_text().splitlines()) if r}
    print(f"mutate: {len(mutants)} mutants sampled from {len(modules)} modules (seed {a.seed}); "
          f"{sum(m.key in done for m in mutants)} already judged for this source state", flush=True)

    results, ran_seconds, ran, server, not_run = [], 0.0, 0, None, 0
    try:
        for i, m in enumerate(mutants, 1):
            if m.key in equivalent:
                r = {"key": m.key, "module": m.module, "line": m.line, "operator": m.operator, "unit": m.unit,
                     "tests": 0, "checks": 0, "outcome": "equivalent", "by": equivalent[m.key], "seconds": 0.0}
            elif m.key in done:
                r = done[m.key]
            elif time.perf_counter() - t0 > a.budget:
                not_run += 1
                continue
            else:
                server = server or run.Server(tree, work)
                r = run.run_mutant(m, tree, work, base, a.timeout_factor, server)
                if r["outcome"] != "uncovered":
                    ran_seconds, ran = ran_seconds + r["seconds"], ran + 1
                with open(store, "a", encoding="utf-8") as fh:  # one line per mutant: a run resumes here
                    fh.write(json.dumps(r) + "\n")
                    fh.flush()
                    os.fsync(fh.fileno())
            r = {**r, "diff": m.diff(sources[m.module])}
            results.append(r)
            print(f"[{i}/{len(mutants)}] {r['outcome']:10s} {r.get('seconds', 0):6.1f} s  {m.module}:{m.line} "
                  f"{m.operator}: {m.original.strip()[:40]!r} -> {m.replacement.strip()[:40]!r}  "
                  f"({str(r.get('by'))[:90]})", flush=True)
    finally:
        if server:
            server.close()
    if not_run:
        print(f"mutate: budget of {a.budget:.0f} s spent; {not_run} sampled mutants not run "
              "(run again to continue: judged mutants are kept)", flush=True)

    meta = {"seed": a.seed, "sample": a.sample, "modules": modules, "mutants": len(results), "not_run": not_run,
            "seconds": time.perf_counter() - t0, "baseline_seconds": baseline_seconds, "baseline_cached": cached,
            "seconds_per_run_mutant": ran_seconds / ran if ran else 0.0, "source_state": fp,
            "baseline_not_passing": sorted(n for n, t in base["tests"].items() if t["outcome"] != "passed"),
            "population": {mod: len(generate(mod, (tree / mod).read_text(encoding="utf-8"))) for mod in modules}}
    from verify.api import adopt_report_dir

    adopt_report_dir(root / a.report)  # a new or empty report/ is marked theorylab's, so `verify --report` takes it
    print("\n" + report.write(root / a.report, results, meta, meta["population"]))
    print(f"written: {a.report}/mutation.json, {a.report}/mutation.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
