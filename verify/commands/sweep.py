"""``theorylab sweep CONFIG.toml [--scheduler SPEC] [--out DIR] [--retry-failed]``: run or resume a sweep.

SPEC is ``local`` (default: a process pool on this machine), ``serial`` (in this process) or
``tcp://HOST:PORT`` (a running ``dask scheduler``). ``--plugins MODULE`` imports a plugin first (its sweep
experiments and FG data models join the built-in ones; the workers import it too). ``--json PATH`` also writes
the summary as one JSON object (:func:`summary_json`); ``--json -`` prints it on stdout and nothing else (the
other lines go to stderr). Exit status: 0 all points done, 1 some point failed, crashed (killed its worker on
every try) or was lost (rerun to resume; ``--retry-failed`` reruns the failed and crashed ones), 2 bad input,
an unreachable scheduler, or an output folder in use by another sweep.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def summary_json(res, out) -> dict:
    """The sweep's outcome as one JSON-able object: counts, files, and per point its key, parameters, seed,
    status, seconds, error and the scalar fields of its result (dotted names, as in summary.csv)."""
    from verify.sweep.summary import flat_result

    points = [{"key": r["key"], "params": r["params"], "seed": r["seed"], "status": r["status"],
               "seconds": r.get("seconds"), "error": r.get("error"),
               "result": flat_result(r.get("result")) if r["status"] == "done" else None} for r in res.records]
    return {"experiment": res.experiment, "out": str(out), "seed": res.seed, "ok": res.ok,
            "counts": {"points": len(res.records), "done": len(res.done), "failed": len(res.failed),
                       "crashed": len(res.crashed), "lost": res.lost, "ran": res.ran, "skipped": res.skipped},
            "files": {k: str(v) for k, v in res.files.items()}, "points": points}


def cmd_sweep(args) -> int:
    from verify import plugins, sweep
    from verify.api import prepare_file
    from verify.cli import _plugin_list
    from verify.sweep import experiments as sweep_experiments
    from verify.sweep.store import FolderBusy, to_jsonable

    mods = _plugin_list(args)
    try:
        plugins.load(mods)
    except plugins.PluginError as exc:
        print(f"theorylab sweep: error: {exc}", file=sys.stderr)
        return 2
    if args.list:
        for name, e in sweep_experiments.EXPERIMENTS.items():
            print(f"{name:16s} {e.description}")
            if e.params is None:
                print(f"{'':16s} parameters: {', '.join(e.param_names())} (checked by the implementation)")
            for pname, par in (e.params or {}).items():
                print(f"{'':16s} {pname:10s} {par.describe()}")
            if name == "multiview":
                from sims.multiview.models import model_names, resolve

                print(f"{'':16s} model: {', '.join(model_names())} or 'pkg.mod:Factory' (docs/datamodel.md)")
                for m in model_names():
                    own = resolve(m).params
                    if own and not resolve(m).builtin:
                        print(f"{'':16s} model {m!r} also takes: "
                              + ", ".join(f"{k} (default {v!r})" for k, v in own.items()))
        return 0
    if not args.config:
        print("theorylab sweep: error: give a CONFIG.toml (or --list)", file=sys.stderr)
        return 2
    to_stdout = args.json == "-"
    human = sys.stderr if to_stdout else sys.stdout
    if args.json and not to_stdout:
        prepare_file(args.json, "--json")
    try:
        cfg = sweep.load_config(args.config)
        out = Path(args.out or cfg["out"] or Path("report") / "sweeps" / cfg["name"])
        scheduler = args.scheduler or cfg["scheduler"] or "local"
        workers = args.workers if args.workers is not None else cfg["workers"]
        seed = args.seed if args.seed is not None else cfg["seed"]
        res = sweep.run_sweep(cfg["experiment"], cfg["points"], out, scheduler=scheduler, seed=seed,
                              retry_failed=args.retry_failed, workers=workers, progress=not args.no_progress,
                              plot=cfg["plot"], connect_timeout=args.connect_timeout, name=cfg["name"],
                              wait=None if args.wait else 0.0, tries=args.tries, plugins=mods, force=args.force)
    except (ValueError, ConnectionError, FolderBusy) as exc:
        print(f"theorylab sweep: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\ninterrupted: finished points are saved in {out}; rerun the same command to resume",
              file=sys.stderr)
        return 130
    n = len(res.records)
    if args.json:
        text = json.dumps(to_jsonable(summary_json(res, out)))
        if to_stdout:
            print(text, flush=True)
        else:
            from sims.cache import atomic_write_text

            atomic_write_text(Path(args.json), text + "\n")
    print(f"{cfg['experiment']}: {len(res.done)}/{n} done ({res.ran} run now, {res.skipped} found finished), "
          f"{len(res.failed)} failed, {len(res.crashed)} crashed, {res.lost} lost  ->  {out}", file=human)
    for name in ("summary_md", "summary_csv", "plot", "index"):
        if name in res.files:
            print(f"  {name:12s} {res.files[name]}", file=human)
    if args.json and not to_stdout:
        print(f"  {'json':12s} {args.json}", file=human)
    for r in res.failed:
        print(f"FAILED {r['params']}: {r.get('error')}  (traceback in {out}/points/{r['key']}.json; "
              f"rerun with --retry-failed)", file=sys.stderr)
    for r in res.crashed:
        print(f"CRASHED {r['params']}: {r.get('error')}  (rerun with --retry-failed to try it again)",
              file=sys.stderr)
    if res.replaced:
        print(f"{len(res.replaced)} corrupt point file(s) replaced (reasons above)", file=sys.stderr)
    if res.lost:
        print(f"{res.lost} point(s) not recorded (the cluster lost them); rerun the same command to resume",
              file=sys.stderr)
    return 0 if res.ok else 1


def register(subparsers) -> None:
    p = subparsers.add_parser("sweep", help="run or resume a parameter sweep (local or on a Dask cluster)",
                              description=__doc__.splitlines()[0])
    p.add_argument("config", nargs="?", metavar="CONFIG.toml", help="sweep config (see examples/sweeps/)")
    p.add_argument("--scheduler", metavar="SPEC", help="local (default), serial, or tcp://HOST:PORT (dask)")
    p.add_argument("--out", metavar="DIR", help="output folder (default: config 'out' or report/sweeps/<name>)")
    p.add_argument("--retry-failed", action="store_true",
                   help="rerun the points that raised or crashed their worker last time")
    p.add_argument("--tries", type=int, default=2, metavar="N",
                   help="local pool: a point that kills its worker N times is recorded 'crashed' (default 2)")
    p.add_argument("--wait", action="store_true",
                   help="wait for another sweep writing to the same folder instead of refusing")
    p.add_argument("--workers", type=int, help="local process-pool size (default: the CPU count)")
    p.add_argument("--seed", type=int, help="sweep seed (overrides the config's)")
    p.add_argument("--connect-timeout", type=float, default=5.0, metavar="S",
                   help="seconds to wait for a dask scheduler (default 5)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--force", action="store_true", help="run points whose estimated memory does not fit this "
                   "machine (refused by default, before anything runs)")
    p.add_argument("--list", action="store_true", help="list the experiments and their parameters")
    p.add_argument("--plugins", action="append", metavar="MODULE[,MODULE]",
                   help="import these modules first: their sweep experiments and data models join the built-in "
                        "ones (the workers import them too)")
    p.add_argument("--json", metavar="PATH", help="also write the summary as JSON to PATH; '-': the JSON on stdout "
                   "and nothing else (the other lines go to stderr)")
    p.set_defaults(func=cmd_sweep)
