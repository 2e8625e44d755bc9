"""theorylab's Python API: the calls ``theorylab verify`` and ``theorylab figs`` make, as functions.

Everything here is re-exported from the ``verify`` package::

    import verify

    run = verify.run(["nd.lambda_max", "vc.*"], quick=True)    # ids, globs or prefixes
    o = run["nd.lambda_max"]                                   # a verify.Outcome
    o.status, o.measured, o.expected, o.miss, o.details        # 'pass', 3.1e-13, '<= 1e-10', ...
    o.negative_control_result, o.control_miss                  # 'failed as it should', 8.2e3
    run.summary, run.ok, run.seconds                           # {'pass': 2, ...}, True, 4.2
    verify.write_report(run, "report/")                        # report.json, REPORT.md, figs/
    verify.draw_figure("nd.remark2_det_ratio", "figs/", quick=True)
    verify.list_claims("nd")                                   # catalog entries, implemented or not

A check or figure that needs an optional package that is not installed is ``skipped`` (``o.install`` and
``run.figure_skipped`` give the pip command; :mod:`verify.optional`) and does not make ``run.ok`` False.

Bad input (an unknown pattern, a device that is not there, a folder that cannot be written) raises
:class:`UsageError` (a ``ValueError``) *before* any check runs. Checks and catalog entries from outside
the package (``plugins=["my_checks"]`` and the ``theorylab.checks`` entry points) are described in
:mod:`verify.plugins`.
"""
from __future__ import annotations

import dataclasses
import fnmatch
import operator
import sys
import time
import traceback
import weakref
from pathlib import Path

from verify import optional
from verify import parallel as _parallel
from verify import plugins as _plugins
from verify import registry, report
from verify.registry import Check, Outcome

from verify.errors import UsageError  # noqa: E402  (re-exported: verify.api.UsageError)
from verify.report_dir import (REPORT_MARKER, _install_report, _remove_stage, _stage_dir,  # noqa: E402,F401
                               adopt_report_dir, is_report_dir, prepare_dir, prepare_file, prepare_report_dir,
                               written_files)


def select(ids, patterns, strict: bool = False, what: str = "check id") -> list[str]:
    """Ids matching any pattern: a glob (``nd.*``), an exact id, or a prefix (``nd``, ``rd.lyap``).

    ``strict``: a pattern that matches nothing is a :class:`UsageError` naming it, even beside one that
    matches (``nd.* zz``).
    """
    patterns = [patterns] if isinstance(patterns, str) else list(patterns or ())
    if not patterns:
        return list(ids)
    ids = list(ids)
    if strict:
        bad = [p for p in patterns if not any(fnmatch.fnmatch(i, p) or i.startswith(p) for i in ids)]
        if bad:
            see = "`theorylab figs --list`" if what == "figure id" else "`theorylab verify --list`"
            raise UsageError(f"no {what} matches {' '.join(bad)}; see {see}")
    return [i for i in ids if any(fnmatch.fnmatch(i, p) or i.startswith(p) for p in patterns)]


def check_seed(seed) -> int:
    """``seed`` as an int (a non-negative integer, numpy integers too), else :class:`UsageError`."""
    try:
        if isinstance(seed, bool):
            raise TypeError
        value = operator.index(seed)
    except TypeError:
        raise UsageError(f"seed must be a non-negative integer, got {seed!r}") from None
    if value < 0:
        raise UsageError(f"seed must be a non-negative integer, got {seed!r}")
    return int(value)


def load_plugins(modules=(), entry_points: bool = True) -> list[str]:
    """Import the ``theorylab.checks`` entry points and the named plugin modules (see :mod:`verify.plugins`)."""
    return _plugins.load([modules] if isinstance(modules, str) else modules, entry_points=entry_points)


def load_checks(plugins=(), entry_points: bool = True) -> dict[str, Check]:
    """Every registered check: the built-in ones (``verify/checks``) and the plugins'."""
    load_plugins(plugins, entry_points)
    return registry.discover()


def catalog(plugins=(), entry_points: bool = True) -> dict[str, dict]:
    """Every claim id (built-in catalog and plugins' entries) -> {id, paper, kind, claim}."""
    load_plugins(plugins, entry_points)
    return registry.load_catalog()


def list_claims(patterns=(), plugins=(), entry_points: bool = True) -> list[dict]:
    """The catalog entries matching ``patterns``, each with ``implemented`` (a check is registered), ``source``
    (built-in or plugin) and ``file`` (where the check's code is: path relative to the project, and line)."""
    found = load_checks(plugins, entry_points)
    cat = registry.load_catalog()
    builtin = registry.builtin_catalog()
    return [dict(cat[i], implemented=i in found, source="built-in" if i in builtin else "plugin",
                 file=_where(found[i].compare) if i in found else None)
            for i in select(cat, patterns, strict=True)]


def _where(fn) -> str | None:
    """``path:line`` of a check's function (relative to the project root when inside it)."""
    import inspect

    fn = inspect.unwrap(fn)
    try:
        path, line = Path(inspect.getsourcefile(fn)), inspect.getsourcelines(fn)[1]
    except (TypeError, OSError):
        return None
    root = Path(__file__).resolve().parents[1]
    return f"{path.relative_to(root) if path.is_relative_to(root) else path}:{line}"


def check_device(device: str) -> str:
    """``device`` if torch can use it here (cpu, cuda[:N], mps), else :class:`UsageError` saying why."""
    if device == "cpu":
        return device
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError) as exc:
        raise UsageError(f"--device {device!r} is not a torch device ({exc})") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise UsageError(f"--device {device}: CUDA is not available here (torch.cuda.is_available() is False); "
                             "use --device cpu")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise UsageError(f"--device {device}: only {torch.cuda.device_count()} CUDA device(s) here")
    elif dev.type == "mps":
        if not torch.backends.mps.is_available():
            raise UsageError(f"--device {device}: MPS is not available here; use --device cpu")
    elif dev.type != "cpu":
        raise UsageError(f"--device {device}: only cpu, cuda[:N] and mps are supported")
    return device


@dataclasses.dataclass
class Run:
    """The outcome of :func:`run`: one :class:`verify.Outcome` per selected id, plus timings and figures."""

    outcomes: list[Outcome]
    patterns: tuple = ()
    quick: bool = False
    seed: int = 0
    device: str = "cpu"
    check_seconds: float = 0.0
    report_dir: Path | None = None
    plugins: list = dataclasses.field(default_factory=list)
    import_errors: dict = dataclasses.field(default_factory=dict)
    figures: dict = dataclasses.field(default_factory=dict)
    figure_errors: dict = dataclasses.field(default_factory=dict)
    figure_skipped: dict = dataclasses.field(default_factory=dict)
    """Figures not drawn because an optional package is missing: id -> {missing_dependency, install}."""
    figure_seconds: float = 0.0
    figure_tracebacks: dict = dataclasses.field(default_factory=dict, repr=False)
    staging: Path | None = dataclasses.field(default=None, repr=False)
    """Where the run's artifacts wait for :func:`write_report` (a temporary folder beside ``report_dir``)."""
    report_files: list = dataclasses.field(default_factory=list, repr=False)
    jobs: int = 1
    """Worker processes the checks ran in (1: this process)."""
    preparations: dict = dataclasses.field(default_factory=dict)
    """With ``jobs`` > 1: each preparation's label -> {seconds, error} (:mod:`verify.parallel`)."""
    sources: tuple = dataclasses.field(default=((), True), repr=False)
    """(plugin modules, entry points?) as given to :func:`run`: what the figure workers load."""

    def __getitem__(self, cid: str) -> Outcome:
        for o in self.outcomes:
            if o.id == cid:
                return o
        raise KeyError(cid)

    def __iter__(self):
        return iter(self.outcomes)

    def __len__(self) -> int:
        return len(self.outcomes)

    @property
    def seconds(self) -> float:
        """The whole run: checks plus figures (the number the summary line and REPORT.md show)."""
        return self.check_seconds + self.figure_seconds

    @property
    def summary(self) -> dict[str, int]:
        return registry.summarize(self.outcomes)

    @property
    def ok(self) -> bool:
        """No check failed, every check module imported and every figure drew (skipped ones aside: what they
        need is not installed, see :mod:`verify.optional`)."""
        return not (self.summary["fail"] or self.import_errors or self.figure_errors)

    def meta(self) -> dict:
        return report.run_meta(self.seed, self.quick, self.seconds, check_seconds=self.check_seconds,
                               figures_total_seconds=self.figure_seconds, device=self.device,
                               figure_seconds={f: v["seconds"] for f, v in self.figures.items()},
                               figure_errors=dict(self.figure_errors),
                               figure_skipped=dict(self.figure_skipped), plugins=list(self.plugins),
                               patterns=list(self.patterns), jobs=self.jobs, preparations=dict(self.preparations))


def run(patterns=(), *, quick: bool = False, seed: int = 0, device: str = "cpu", report_dir=None,
        plugins=(), entry_points: bool = True, progress: bool = False, on_outcome=None, jobs=1,
        scheduler=None) -> Run:
    """Run the checks whose ids match ``patterns`` (all when empty); returns a :class:`Run`.

    ``on_outcome``: called with each :class:`Outcome` as soon as its check finishes (missing ids too), with
    the progress bar cleared meanwhile; what it raises stops the run (as Ctrl-C does). ``jobs``: worker
    processes (an int, or ``'auto'``: the usable CPUs, ≤ 8); 1 runs every check in this process, in order;
    more runs the checks' preparations and then the checks in workers (:mod:`verify.parallel`), the outcomes
    still in the selection's order. Same verdicts either way. The workers are started with the 'spawn' method, so
    a script calling ``run(jobs=2)`` needs its ``if __name__ == "__main__":`` guard (without it: RuntimeError).
    ``scheduler``: None or "local" (the process pool above), or a Dask scheduler's address "tcp://HOST:PORT" (or
    a ``distributed.Client``): the same preparations and checks run as tasks of that cluster, as many at a time as
    its workers have threads (``jobs`` is ignored), the artifacts come back here (:mod:`verify.dask_pool`).

    Checked first, before any check runs: the seed, the device, the patterns (each must match) and the
    report folder (new, empty or an earlier report; it is not changed). The checks save their artifacts in a
    temporary folder beside ``report_dir``; :func:`write_report` adds the report to it and swaps it in, so
    an interrupted run leaves the earlier report whole.
    """
    t0 = time.perf_counter()  # the run's time includes importing the checks
    patterns = (patterns,) if isinstance(patterns, str) else tuple(patterns or ())
    seed = check_seed(seed)
    device = check_device(device)
    try:
        jobs = _parallel.check_jobs(jobs)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    client, own_client = None, False
    if scheduler not in (None, "local"):
        if isinstance(scheduler, str):
            if not scheduler.startswith(("tcp://", "tls://")):
                raise UsageError(f"scheduler: 'local' or a Dask scheduler's address tcp://HOST:PORT, got {scheduler!r}")
            try:
                client, jobs = _parallel_connect(scheduler)
            except (ConnectionError, ValueError) as exc:
                raise UsageError(str(exc)) from None
            own_client = True
        else:
            client = scheduler
            jobs = max(1, sum(w.get("nthreads", 1) for w in client.scheduler_info().get("workers", {}).values()))
    found = load_checks(plugins, entry_points)
    cat = registry.load_catalog()
    ids = select(cat, patterns, strict=True)
    rdir = prepare_report_dir(report_dir) if report_dir is not None else None
    stage = _stage_dir(rdir) if rdir is not None else None
    from tqdm import tqdm

    outcomes, prepared = [], {}
    try:
        here = [cid for cid in ids if cid in found]
        if client is not None or (jobs > 1 and len(here) > 1):
            bar = tqdm(total=len(ids), desc="checks", unit="job", file=sys.stderr, disable=None if progress else True)
            for cid in ids:
                if cid not in found:
                    _report(_missing(cat[cid], cid), on_outcome)
            done, prepared = _parallel.run_checks(
                here, found, quick=quick, seed=seed, stage=stage, device=device, jobs=jobs, plugins=plugins,
                entry_points=entry_points, on_done=lambda o: _report(o, on_outcome), bar=bar, client=client)
            outcomes = [done[cid] if cid in done else _missing(cat[cid], cid) for cid in ids]
        else:
            bar = tqdm(ids, desc="checks", unit="check", file=sys.stderr, disable=None if progress else True)
            for cid in bar:
                bar.set_postfix_str(cid)
                if cid not in found:
                    outcomes.append(_missing(cat[cid], cid))
                else:
                    ctx = registry.Context(check_id=cid, quick=quick, seed=seed, report_dir=stage, device=device)
                    outcomes.append(registry.run_check(found[cid], ctx))
                _report(outcomes[-1], on_outcome)
        bar.close()
    except BaseException:  # Ctrl-C included: the earlier report stays as it was
        _remove_stage(stage)
        raise
    finally:
        if own_client:
            client.close()
    r = Run(outcomes=outcomes, patterns=patterns, quick=quick, seed=seed, device=device,
            check_seconds=time.perf_counter() - t0, report_dir=rdir, plugins=sorted(_plugins.LOADED),
            import_errors=dict(registry.IMPORT_ERRORS), staging=stage, jobs=jobs, preparations=prepared,
            sources=(tuple([plugins] if isinstance(plugins, str) else plugins or ()), bool(entry_points)))
    if stage is not None:  # a run whose report is never written leaves no temporary folder
        r._cleanup = weakref.finalize(r, _remove_stage, stage)
    return r


def _parallel_connect(address: str):
    from verify.dask_pool import connect

    return connect(address)


def _missing(entry: dict, cid: str) -> Outcome:
    return Outcome(id=cid, paper=entry["paper"], equation="", kind=entry["kind"], statement=entry["claim"],
                   status="missing")


def _report(o: Outcome, on_outcome) -> None:
    if on_outcome is not None:
        from tqdm import tqdm

        with tqdm.external_write_mode():  # the caller's line does not land inside the bar
            on_outcome(o)


@dataclasses.dataclass
class Figures:
    """What :func:`draw_figures` drew: ``done`` id -> {answers, caption, seconds}; ``failed`` id -> one line;
    ``skipped`` id -> {missing_dependency, install} (an optional package it needs is not installed)."""

    done: dict
    failed: dict
    tracebacks: dict
    seconds: float
    skipped: dict = dataclasses.field(default_factory=dict)


def figures(plugins=(), entry_points: bool = True) -> dict:
    """Every registered figure (``paper_figs`` and the plugins'): id -> paper_figs.registry.Figure."""
    from paper_figs import registry as figreg

    load_plugins(plugins, entry_points)
    return figreg.discover()


def draw_figures(out_dir, ids=None, *, for_checks=None, quick: bool = False, progress: bool = False,
                 plugins=(), entry_points: bool = True, jobs=1) -> Figures:
    """Draw figures into ``out_dir`` (PNG and PDF): those matching ``ids`` (patterns; all when None), or
    those illustrating any of the check ids ``for_checks``. A figure that raises is recorded, not raised: in
    ``skipped`` if what it lacks is an optional package that is not installed, else in ``failed``."""
    from tqdm import tqdm

    from paper_figs import registry as figreg

    figs = figures(plugins, entry_points)
    chosen = list(figs) if ids is None else select(figs, ids, strict=True, what="figure id")
    if ids is not None and not chosen:
        raise UsageError(f"no figure id matches {' '.join(ids)}; see `theorylab figs --list`")
    if for_checks is not None:
        chosen = [f for f in chosen if set(for_checks) & set(figs[f].checks)]
    out = prepare_dir(out_dir, "figure folder")
    done, failed, tbs, skipped = {}, {}, {}, {}
    t0 = time.perf_counter()
    try:
        jobs = _parallel.check_jobs(jobs)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    bar = tqdm(total=len(chosen), desc="figures", unit="fig", file=sys.stderr, disable=None if progress else True)
    if jobs > 1 and len(chosen) > 1:
        drawn = _parallel.draw_figures(chosen, out, quick=quick, jobs=jobs, plugins=plugins,
                                       entry_points=entry_points, bar=bar)
    else:
        drawn = {}
        for fid in chosen:
            drawn[fid] = _draw_here(figreg, figs[fid], out, quick)
            bar.update(1)
    bar.close()
    for fid in chosen:  # the figures' order, whoever drew them
        kind, *rest = drawn[fid]
        if kind == "done":
            done[fid] = {"answers": figs[fid].answers, "caption": figs[fid].caption, "seconds": round(rest[0], 2)}
        elif kind == "skipped":
            skipped[fid] = {"missing_dependency": rest[0], "install": rest[1]}
        else:
            failed[fid], tbs[fid] = rest
    return Figures(done, failed, tbs, time.perf_counter() - t0, skipped)


def _draw_here(figreg, f, out, quick) -> tuple:
    """One figure in this process, in :func:`verify.parallel._draw`'s form. A broken figure must not hide the
    others: it is recorded (the caller says so loudly)."""
    try:
        return ("done", figreg.render(f, out, quick=quick)["seconds"])
    except Exception as exc:
        missing = optional.find_missing(exc)
        if missing is not None:
            return ("skipped", missing.what, missing.install)
        return ("failed", f"{type(exc).__name__}: {exc}".splitlines()[0], traceback.format_exc())


def draw_figure(fid: str, out_dir, quick: bool = False) -> dict:
    """Draw one figure; returns {id, png, pdf, seconds}. Unknown id: :class:`UsageError`; a failing draw raises
    (:class:`verify.MissingDependency`, naming the install command, when an optional package is missing)."""
    from paper_figs import registry as figreg

    figs = figures()
    if fid not in figs:
        raise UsageError(f"no figure {fid!r}; see `theorylab figs --list`")
    try:
        return figreg.render(figs[fid], prepare_dir(out_dir, "figure folder"), quick=quick)
    except Exception as exc:
        missing = optional.find_missing(exc)
        if missing is None or missing is exc:
            raise
        raise missing from exc


def write_report(run: Run, report_dir=None, *, figures: bool = True, json_path=None,
                 progress: bool = False) -> Path | None:
    """Write ``report_dir``/report.json, REPORT.md and figs/ (the figures of the run's checks; all of them
    when the run had no pattern), and/or ``json_path``. Returns REPORT.md's path (None without a folder).

    The report is built in a temporary folder beside ``report_dir`` and swapped in at the end: an
    interrupted or failing write leaves the earlier report whole. Of the earlier report's files, those the
    new one does not write again are deleted; nothing else in the folder is touched (see the README).
    """
    md = None
    if report_dir is not None:
        d = Path(report_dir)
        same = run.report_dir is not None and Path(run.report_dir).resolve() == d.resolve()
        if same and run.staging is not None and Path(run.staging).is_dir():
            stage, run.staging = Path(run.staging), None
            if getattr(run, "_cleanup", None) is not None:
                run._cleanup.detach()
        else:
            d = prepare_report_dir(d)
            stage = _stage_dir(d)
        try:
            if figures:
                ids = {o.id for o in run.outcomes}
                fr = draw_figures(stage / "figs", for_checks=ids if run.patterns else None, quick=run.quick,
                                  progress=progress, plugins=run.sources[0], entry_points=run.sources[1],
                                  jobs=min(run.jobs, _parallel.auto_jobs()))  # figures: drawn here
                run.figures, run.figure_errors, run.figure_seconds = fr.done, fr.failed, fr.seconds
                run.figure_skipped = fr.skipped
                run.figure_tracebacks = fr.tracebacks
            meta = run.meta()
            report.write_json(stage / "report.json", run.outcomes, meta)
            report.write_markdown(stage, run.outcomes, meta, run.figures)
            # a second write of the same run keeps the artifacts its first one swapped in
            keep = [f for f in run.report_files if f.startswith("artifacts/")] if same else []
            files = _install_report(stage, d, keep=keep)
            if same:
                run.report_files = files
        finally:
            _remove_stage(stage)
        md = d / "REPORT.md"
    if json_path is not None:
        report.write_json(prepare_file(json_path, "--json"), run.outcomes, run.meta())
    return md
