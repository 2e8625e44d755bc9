"""``theorylab sweep CONFIG.toml [--scheduler SPEC] [--out DIR] [--retry-failed]``: run or resume a sweep.

SPEC is ``local`` (default: a process pool on this machine), ``serial`` (in this process) or
``tcp://HOST:PORT`` (a running ``dask scheduler``). Exit status: 0 all points done, 1 some point failed,
crashed (killed its worker on every try) or was lost (rerun to resume; ``--retry-failed`` reruns the failed and
crashed ones), 2 bad input, an unreachable scheduler, or an output folder in use by another sweep.
"""
from __future__ import annotations

import sys
from pathlib import Path


def cmd_sweep(args) -> int:
    from verify import sweep
    from verify.sweep import experiments as sweep_experiments
    from verify.sweep.store import FolderBusy

    if args.list:
        for name, e in sweep_experiments.EXPERIMENTS.items():
            print(f"{name:16s} {e.description}")
            if e.params is None:
                print(f"{'':16s} parameters: {', '.join(e.param_names())} (checked by the implementation)")
            for pname, par in (e.params or {}).items():
                print(f"{'':16s} {pname:10s} {par.describe()}")
        return 0
    if not args.config:
        print("theorylab sweep: error: give a CONFIG.toml (or --list)", file=sys.stderr)
        return 2
    try:
        cfg = sweep.load_config(args.config)
        out = Path(args.out or cfg["out"] or Path("report") / "sweeps" / cfg["name"])
        scheduler = args.scheduler or cfg["scheduler"] or "local"
        workers = args.workers if args.workers is not None else cfg["workers"]
        seed = args.seed if args.seed is not None else cfg["seed"]
        res = sweep.run_sweep(cfg["experiment"], cfg["points"], out, scheduler=scheduler, seed=seed,
                              retry_failed=args.retry_failed, workers=workers, progress=not args.no_progress,
                              plot=cfg["plot"], connect_timeout=args.connect_timeout, name=cfg["name"],
                              wait=None if args.wait else 0.0, tries=args.tries)
    except (ValueError, ConnectionError, FolderBusy) as exc:
        print(f"theorylab sweep: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\ninterrupted: finished points are saved in {out}; rerun the same command to resume",
              file=sys.stderr)
        return 130
    n = len(res.records)
    print(f"{cfg['experiment']}: {len(res.done)}/{n} done ({res.ran} run now, {res.skipped} found finished), "
          f"{len(res.failed)} failed, {len(res.crashed)} crashed, {res.lost} lost  ->  {out}")
    for name in ("summary_md", "summary_csv", "plot", "index"):
        if name in res.files:
            print(f"  {name:12s} {res.files[name]}")
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
    p.add_argument("--list", action="store_true", help="list the experiments and their parameters")
    p.set_defaults(func=cmd_sweep)
