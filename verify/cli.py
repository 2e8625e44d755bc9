"""The ``theorylab`` command: verify | figs, plus the subcommands found in ``verify/commands``.

Each module of ``verify.commands`` exposes ``register(subparsers)`` that adds its parser and sets
``func``; so a new command is one new file. ``verify`` and ``figs`` are thin layers over
:mod:`verify.api`. Bad input (a pattern that matches nothing, a device that is not there, a folder that
cannot be written, a plugin that does not import) is found before any work and printed as one line;
so is any other error (``-v`` prints its traceback). Exit status: 0 all well, 1 a check or figure failed,
2 bad input or an error, 130 interrupted.
"""
from __future__ import annotations

import argparse
import os
import importlib
import pkgutil
import sys
import traceback
from pathlib import Path

from verify import api, report


def select(ids, patterns: list[str]) -> list[str]:
    """Ids matching any pattern: a glob (``nd.*``), an exact id, or a prefix (``nd``, ``rd.lyap``)."""
    return api.select(ids, patterns)


def _plugin_list(args) -> list[str]:
    return [m for spec in (getattr(args, "plugins", None) or []) for m in spec.split(",") if m.strip()]


def _import_errors(verbose: bool) -> None:
    from verify import registry

    for name, tb in registry.IMPORT_ERRORS.items():
        where = f"verify/checks/{name.replace('.', '/')}.py" if " " not in name else name
        last = tb.strip().splitlines()[-1] if tb.strip() else "?"
        print(f"ERROR: {where} does not import ({last}); its checks count as missing", file=sys.stderr)
        if verbose:
            print(tb, file=sys.stderr)


def cmd_list(args) -> int:
    if args.json and args.json != "-":
        api.prepare_file(args.json, "--json")
    rows = api.list_claims(args.patterns, plugins=_plugin_list(args))
    _import_errors(args.verbose)
    if not rows:
        print(f"no check id matches {' '.join(args.patterns)}", file=sys.stderr)
        return 2
    if args.json == "-":  # newline-delimited JSON on stdout, one catalog entry a line, and nothing else
        for r in rows:
            print(report.json_line(r))
        return 0
    if args.json:
        report.write_ndjson(args.json, rows)
    for r in rows:
        state = "implemented" if r["implemented"] else "missing"
        print(f"{r['id']:32s} {state:12s} {r['kind']:17s} {r['file'] or '':38s} {report.cut(r['claim'], 60)}")
    return 0


def measured_type(x) -> str:
    """The JSON type of a measured value: number, integer, bool, list, object, text or none."""
    import numbers

    if hasattr(x, "tolist") and not isinstance(x, (str, bytes)):  # numpy arrays and scalars
        x = x.tolist()
    if x is None:
        return "none"
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, numbers.Integral):
        return "integer"
    if isinstance(x, numbers.Real):
        return "number"
    if isinstance(x, (list, tuple)):
        return "list"
    if isinstance(x, dict):
        return "object"
    return "text"


def stream_record(o) -> dict:
    """One ``verify --json -`` record: the check's report.json entry plus ``measured_type`` (the JSON type of
    ``measured``, which differs by check: number, integer, bool, list, object, text or none), ``measured_text`` and
    ``expected_text`` (the strings the table prints)."""
    rec = getattr(report, "check_record", type(o).to_json)(o)  # report.json's entry for the check
    rec.update(measured_type=measured_type(o.measured), measured_text=report.fmt(o.measured),
               expected_text=report.fmt(o.expected))
    return rec


def cmd_verify(args) -> int:
    """Each check's row is printed as it finishes (none with -q); the summary line comes at the end. With
    ``--json -`` stdout carries only newline-delimited JSON: each check's report.json entry as it finishes,
    then one object with ``meta`` and ``summary``; the summary line goes to stderr."""
    if args.list:
        return cmd_list(args)
    ndjson = args.json == "-"
    json_path = None if ndjson else args.json
    if json_path:
        api.prepare_file(json_path, "--json")
    human = sys.stderr if ndjson else sys.stdout  # where the summary line and the report's path go
    streamed = []

    def on_outcome(o) -> None:
        if ndjson:
            print(report.json_line(stream_record(o)), flush=True)
        elif not args.quiet:
            if not streamed:
                print(report.stream_header())
            print(report.stream_row(o), flush=True)
        streamed.append(o.id)

    run = api.run(args.patterns, quick=args.quick, seed=args.seed, device=args.device, report_dir=args.report,
                  plugins=_plugin_list(args), progress=True, on_outcome=on_outcome, jobs=args.jobs,
                  scheduler=args.scheduler)
    _import_errors(args.verbose)
    for o in run.outcomes:
        if o.status == "fail":
            print(f"\nFAIL {o.id}: {o.error}", file=sys.stderr)
            tb = o.details.get("traceback") if isinstance(o.details, dict) else None
            if tb and args.verbose:
                print(tb, file=sys.stderr)
    path = api.write_report(run, args.report, figures=not args.no_figs, json_path=json_path, progress=True)
    for fid, err in run.figure_errors.items():
        print(f"figure {fid} failed: {err}", file=sys.stderr)
        if args.verbose:
            print(run.figure_tracebacks.get(fid, ""), file=sys.stderr)
    meta = run.meta()
    if ndjson:
        print(report.json_line(report.summary_record(run.outcomes, meta)), flush=True)
    rows_shown = not (ndjson or args.quiet)
    print(("\n" if rows_shown else "") + report.summary_line(run.outcomes, meta), file=human)
    if path is not None:
        print(f"report: {path}  ({len(run.figures)} figures in {Path(args.report) / 'figs'})", file=human)
    return 0 if run.ok else 1


def cmd_figs(args) -> int:
    plugins = _plugin_list(args)
    if args.list:
        for f in api.figures(plugins).values():
            print(f"{f.id:36s} {f.answers:20s} {report.cut(f.caption, 70)}")
        return 0
    fr = api.draw_figures(args.out, args.ids or None, quick=args.quick, progress=True, plugins=plugins,
                          jobs=args.jobs)
    for fid, err in fr.failed.items():
        print(f"figure {fid} failed: {err}", file=sys.stderr)
        if args.verbose:
            print(fr.tracebacks[fid], file=sys.stderr)
    for fid, why in fr.skipped.items():
        print(f"figure {fid} {report.skip_note(why)}", file=sys.stderr)
    print(f"{len(fr.done)} figure(s) written to {args.out}" + (f"; {len(fr.failed)} failed" if fr.failed else "")
          + (f"; {len(fr.skipped)} skipped (a missing optional package)" if fr.skipped else ""))
    return 1 if fr.failed else 0


def _version() -> str:
    import verify

    return f"theorylab {verify.__version__}"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="theorylab", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=_version())
    p.add_argument("-v", "--verbose", action="store_true", help="print tracebacks (of errors, failing checks)")
    sub = p.add_subparsers(dest="command", required=True)
    quiet = argparse.SUPPRESS  # a subcommand's -v must not reset a -v given before it

    v = sub.add_parser("verify", help="run the registered checks and write the report")
    v.add_argument("patterns", nargs="*", metavar="PATTERN", help="check ids, globs (nd.*) or prefixes (nd)")
    v.add_argument("--quick", action="store_true", help="small sizes: the whole run stays under 2 minutes")
    v.add_argument("--seed", type=int, default=0, help="global seed (each check derives its own from it)")
    v.add_argument("--json", metavar="PATH", help="also write the JSON report here; '-': newline-delimited JSON "
                   "on stdout, one object per check as it finishes, then the summary (with --list: the entries)")
    v.add_argument("-q", "--quiet", action="store_true", help="print no row per check: the summary line and errors")
    v.add_argument("--report", metavar="DIR", help="write DIR/report.json, DIR/REPORT.md and DIR/figs/")
    v.add_argument("--list", action="store_true", help="list the catalog ids matching PATTERN (all by default)")
    v.add_argument("--no-figs", action="store_true", help="with --report: skip the figures")
    v.add_argument("--device", default="cpu", help="torch device for simulations (cpu, cuda, cuda:1, mps)")
    v.add_argument("-j", "--jobs", default=os.environ.get("THEORYLAB_JOBS", "auto"), metavar="N|auto",
                   help="worker processes: the checks' cached computations, then the checks, spread over them "
                        "(default: $THEORYLAB_JOBS, else auto = the usable CPUs, at most 8; 1: one process)")
    v.add_argument("--scheduler", default="local", metavar="local|tcp://HOST:PORT",
                   help="where the preparations and checks run: 'local' (the worker processes of --jobs) or an "
                        "existing Dask cluster's scheduler (as many at a time as its workers have threads); the "
                        "figures and the report are written here")
    v.add_argument("--plugins", action="append", metavar="MODULE[,MODULE]",
                   help="import these modules first: their checks and claims join the built-in ones")
    v.add_argument("-v", "--verbose", action="store_true", default=quiet, help="print tracebacks")
    v.set_defaults(func=cmd_verify)

    f = sub.add_parser("figs", help="draw the paper figures (PNG and PDF)")
    f.add_argument("ids", nargs="*", metavar="ID", help="figure ids, globs or prefixes (all by default)")
    f.add_argument("--out", default="report/figs")
    f.add_argument("--quick", action="store_true")
    f.add_argument("--list", action="store_true")
    f.add_argument("--plugins", action="append", metavar="MODULE[,MODULE]", help="import these modules first")
    f.add_argument("-j", "--jobs", default=os.environ.get("THEORYLAB_JOBS", "auto"), metavar="N|auto",
                   help="worker processes drawing the figures (as for verify)")
    f.add_argument("-v", "--verbose", action="store_true", default=quiet, help="print tracebacks")
    f.set_defaults(func=cmd_figs)

    import verify.commands as cmds

    for mod in pkgutil.iter_modules(cmds.__path__):
        if not mod.name.startswith("_"):
            importlib.import_module(f"verify.commands.{mod.name}").register(sub)
    return p


def _clean_warnings(command: str, verbose: bool):
    """Python warnings as one line each, ``theorylab COMMAND: warning: ...`` (``-v``: Python's own form, with the
    file and line)."""
    import warnings

    if verbose:
        return warnings.catch_warnings()

    class _Clean(warnings.catch_warnings):
        def __enter__(self):
            recording = getattr(warnings._showwarnmsg_impl, "__name__", "") != "_showwarnmsg_impl"
            out = super().__enter__()
            if recording or warnings.showwarning is not getattr(warnings, "_showwarning_orig", warnings.showwarning):
                return out  # someone records or shows warnings their own way (a test's pytest.warns): leave it

            def show(message, category, filename, lineno, file=None, line=None):
                text = " / ".join(ln.strip() for ln in str(message).splitlines() if ln.strip())
                print(f"theorylab {command}: warning: {text}", file=file or sys.stderr, flush=True)

            warnings.showwarning = show
            return out

    return _Clean()


PATH_ARGS = ("report", "out", "json", "config", "images", "weights", "labels", "class_names")


def _expand_paths(args) -> None:
    """``~`` and ``~user`` at the start of a path argument mean the home folder, also when the shell left them
    (quoted: ``--report '~/r'``), so no folder literally named ``~`` is made."""
    for name in PATH_ARGS:
        v = getattr(args, name, None)
        if isinstance(v, str) and v.startswith("~"):
            setattr(args, name, os.path.expanduser(v))


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _expand_paths(args)
    try:
        with _clean_warnings(args.command, args.verbose):
            return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"\ntheorylab {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # one line, exit 2; the traceback with -v
        if args.verbose:
            traceback.print_exc()
        msg = " / ".join(ln.strip() for ln in str(exc).splitlines() if ln.strip()) or type(exc).__name__
        if isinstance(exc, (ValueError, OSError)):
            print(f"theorylab {args.command}: error: {msg}", file=sys.stderr)
        else:
            print(f"theorylab {args.command}: error: {type(exc).__name__}: {msg}"
                  + ("" if args.verbose else " (rerun with -v for the traceback)"), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
