"""The ``theorylab`` command: verify | figs, plus the subcommands found in ``verify/commands``.

Each module of ``verify.commands`` exposes ``register(subparsers)`` that adds its parser and sets
``func``; so a new command is one new file.
"""
from __future__ import annotations

import argparse
import fnmatch
import importlib
import pkgutil
import sys
import time
from pathlib import Path


def select(ids, patterns: list[str]) -> list[str]:
    """Ids matching any pattern: a glob (``nd.*``), an exact id, or a prefix (``nd``, ``rd.lyap``)."""
    if not patterns:
        return list(ids)
    return [i for i in ids if any(fnmatch.fnmatch(i, p) or i.startswith(p) for p in patterns)]


def cmd_verify(args) -> int:
    from tqdm import tqdm

    from verify import registry, report

    catalog = registry.load_catalog()
    checks = registry.discover()
    for mod, tb in registry.IMPORT_ERRORS.items():
        print(f"ERROR: verify/checks/{mod}.py does not import; its checks count as missing:\n{tb}",
              file=sys.stderr)
    if args.list:
        for cid, entry in catalog.items():
            state = "implemented" if cid in checks else "missing"
            print(f"{cid:32s} {state:12s} {entry['kind']:17s} {entry['claim'][:80]}")
        return 0
    ids = select(catalog, args.patterns)
    if not ids:
        print(f"no check id matches {args.patterns}; see `theorylab verify --list`", file=sys.stderr)
        return 2
    report_dir = Path(args.report) if args.report else None
    outcomes = []
    t0 = time.perf_counter()
    bar = tqdm(ids, desc="checks", unit="check", file=sys.stderr, disable=None)
    for cid in bar:
        bar.set_postfix_str(cid)
        if cid not in checks:
            e = catalog[cid]
            outcomes.append(registry.Outcome(id=cid, paper=e["paper"], equation="", kind=e["kind"],
                                             statement=e["claim"], status="missing"))
            continue
        ctx = registry.Context(check_id=cid, quick=args.quick, seed=args.seed, report_dir=report_dir,
                               device=args.device)
        outcomes.append(registry.run_check(checks[cid], ctx))
    bar.close()
    seconds = time.perf_counter() - t0
    print(report.text_table(outcomes))
    for o in outcomes:
        if o.status == "fail":
            print(f"\nFAIL {o.id}: {o.error}", file=sys.stderr)
            tb = o.details.get("traceback") if isinstance(o.details, dict) else None
            if tb and args.verbose:
                print(tb, file=sys.stderr)
    summary = registry.summarize(outcomes)
    print("\n" + ", ".join(f"{v} {k}" for k, v in summary.items()) + f"  ({seconds:.0f} s)")
    meta = report.run_meta(args.seed, args.quick, seconds)
    if args.json:
        report.write_json(Path(args.json), outcomes, meta)
    if report_dir is not None:
        figures = {}
        if not args.no_figs:
            selected = set(ids)
            figures = make_figures(report_dir / "figs", args.quick,
                                   lambda f: not args.patterns or bool(selected & set(f.checks)))
        meta["figure_seconds"] = {fid: f["seconds"] for fid, f in figures.items()}
        meta["seconds"] = time.perf_counter() - t0
        report.write_json(report_dir / "report.json", outcomes, meta)
        path = report.write_markdown(report_dir, outcomes, meta, figures)
        print(f"report: {path}  ({len(figures)} figures in {report_dir / 'figs'})")
    return 1 if summary["fail"] or registry.IMPORT_ERRORS else 0


def make_figures(out_dir: Path, quick: bool, keep=lambda f: True, ids: list[str] | None = None) -> dict:
    from tqdm import tqdm

    from paper_figs import registry as figreg

    figs = figreg.discover()
    chosen = [f for f in figs.values() if keep(f) and (ids is None or f.id in ids)]
    done = {}
    for f in tqdm(chosen, desc="figures", unit="fig", file=sys.stderr, disable=None):
        try:
            r = figreg.render(f, out_dir, quick=quick)
            done[f.id] = {"answers": f.answers, "caption": f.caption, "seconds": round(r["seconds"], 2)}
        except Exception as exc:  # a broken figure must not hide the check results; say so loudly
            print(f"figure {f.id} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    return done


def cmd_figs(args) -> int:
    from paper_figs import registry as figreg

    figs = figreg.discover()
    if args.list:
        for f in figs.values():
            print(f"{f.id:36s} {f.answers:20s} {f.caption[:70]}")
        return 0
    ids = select(figs, args.ids) if args.ids else None
    if args.ids and not ids:
        print(f"no figure id matches {args.ids}; see `theorylab figs --list`", file=sys.stderr)
        return 2
    done = make_figures(Path(args.out), args.quick, ids=ids)
    print(f"{len(done)} figure(s) written to {args.out}")
    return 0 if len(done) == len(ids or figs) else 1


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="theorylab", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)

    v = sub.add_parser("verify", help="run the registered checks and write the report")
    v.add_argument("patterns", nargs="*", metavar="PATTERN", help="check ids, globs (nd.*) or prefixes (nd)")
    v.add_argument("--quick", action="store_true", help="small sizes: the whole run stays under 2 minutes")
    v.add_argument("--seed", type=int, default=0, help="global seed (each check derives its own from it)")
    v.add_argument("--json", metavar="PATH", help="also write the JSON report here")
    v.add_argument("--report", metavar="DIR", help="write DIR/report.json, DIR/REPORT.md and DIR/figs/")
    v.add_argument("--list", action="store_true", help="list every catalog id as implemented or missing")
    v.add_argument("--no-figs", action="store_true", help="with --report: skip the figures")
    v.add_argument("--device", default="cpu", help="torch device for simulations (cpu, cuda)")
    v.add_argument("-v", "--verbose", action="store_true", help="print tracebacks of failing checks")
    v.set_defaults(func=cmd_verify)

    f = sub.add_parser("figs", help="draw the paper figures (PNG and PDF)")
    f.add_argument("ids", nargs="*", metavar="ID")
    f.add_argument("--out", default="report/figs")
    f.add_argument("--quick", action="store_true")
    f.add_argument("--list", action="store_true")
    f.set_defaults(func=cmd_figs)

    import verify.commands as cmds

    for mod in pkgutil.iter_modules(cmds.__path__):
        if not mod.name.startswith("_"):
            importlib.import_module(f"verify.commands.{mod.name}").register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
