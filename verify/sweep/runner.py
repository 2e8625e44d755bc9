"""Run or resume a sweep: points → tasks on a backend → one point file each, then the index and summary."""
from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Iterable

from sims import resources
from verify.sweep import budget, experiments
from verify.sweep.backends import connect_dask, make_backend, parse_scheduler
from verify.sweep.plot import check_plot, default_spec, plot as draw_plot
from verify.sweep.points import _check_value, derive_seed, expand_points, point_key
from verify.sweep.store import FolderLock, Store, log, read_point
from verify.sweep.summary import write_summary


@dataclasses.dataclass
class SweepResult:
    """What a sweep did: one record per point in point order (params, seed, key, status, result or
    error/traceback), how many ran now / were found finished / were lost (left unrecorded: interrupted, or
    the cluster failed), and the point files found corrupt and replaced (key, reason)."""

    experiment: str
    out_dir: Path
    seed: int
    records: list[dict]
    ran: int = 0
    skipped: int = 0
    lost: int = 0
    files: dict = dataclasses.field(default_factory=dict)
    replaced: list = dataclasses.field(default_factory=list)

    @property
    def done(self) -> list[dict]:
        return [r for r in self.records if r.get("status") == "done"]

    @property
    def failed(self) -> list[dict]:
        return [r for r in self.records if r.get("status") == "failed"]

    @property
    def crashed(self) -> list[dict]:
        """Points that killed their worker on every try."""
        return [r for r in self.records if r.get("status") == "crashed"]

    @property
    def pending(self) -> list[dict]:
        return [r for r in self.records if r.get("status") not in ("done", "failed", "crashed")]

    @property
    def ok(self) -> bool:
        return len(self.done) == len(self.records)

    def results(self) -> list:
        """The results in point order (None for a point not done)."""
        return [r.get("result") if r.get("status") == "done" else None for r in self.records]


def run_sweep(experiment: str, points, out_dir, scheduler: str = "local", seed: int = 0,
              retry_failed: bool = False, workers: int | None = None, progress: bool = True,
              plot: dict | None = None, connect_timeout: float = 5.0, name: str | None = None,
              wait: float | None = 0.0, tries: int = 2, plugins=(), force: bool = False) -> SweepResult:
    """Run (or resume) a sweep of ``experiment`` over ``points`` into ``out_dir``.

    ``points``: a list of parameter dicts or a grid spec (see :func:`expand_points`). ``scheduler``:
    ``"local"`` (process pool of ``workers``), ``"serial"`` or ``"tcp://HOST:PORT"`` (dask). Points whose
    file exists are skipped (failed and crashed ones rerun with ``retry_failed``). ``plot``: ``{"x", "y",
    "hue", "xscale", "yscale"}`` for the summary plot (default: the experiment's). ``wait``: seconds to wait
    for another sweep holding ``out_dir`` (0: FolderBusy at once; None: as long as it takes). ``tries``: how
    many local workers a point may kill before it is recorded ``crashed``. ``plugins``: modules to import first
    (their experiments and data models join the built-in ones; :mod:`verify.plugins`); a worker imports the
    plugin modules its points need (the module that registered the experiment or data model) before running
    them. ``force``: run points whose estimated memory does not fit this machine (:mod:`verify.sweep.budget`:
    otherwise refused before anything is written; the local pool runs only as many points at once as fit).
    Returns a :class:`SweepResult`.
    """
    from verify import plugins as _plugins

    _plugins.load([plugins] if isinstance(plugins, str) else list(plugins or ()))
    exp = experiments.get(experiment)
    pts = [exp.canonical(p) for p in expand_points(points)]
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
    if isinstance(tries, bool) or not isinstance(tries, int) or tries < 1:
        raise ValueError(f"tries must be an integer >= 1, got {tries!r}")
    if wait is not None and (isinstance(wait, bool) or not isinstance(wait, (int, float)) or not wait >= 0):
        raise ValueError(f"wait must be a number of seconds >= 0 or None, got {wait!r}")
    sched = parse_scheduler(scheduler)
    plot_spec = check_plot(exp, default_spec(exp, plot, pts), pts)
    records = []
    seen = {}
    imports: set = set()  # the plugin modules the points need (imported by the workers)
    for p in pts:
        for k, v in p.items():
            _check_value(k, v)
        s = derive_seed(seed, exp.name, p)
        key = point_key(exp.name, exp.version, p, s, _plugin_code(exp, p, imports))
        if key in seen:
            raise ValueError(f"duplicate point {p} (points #{seen[key]} and #{len(records)})")
        seen[key] = len(records)
        records.append({"key": key, "params": p, "seed": s, "status": "pending"})

    # memory from the parameters alone, for the points that will run, before anything is written
    todo = [r for r in records if not _finished(Path(out_dir), exp, r, retry_failed)]
    workers = budget.check(exp, todo, sched, workers, force=force or None)["workers"]
    client = connect_dask(sched, connect_timeout) if sched.startswith(("tcp://", "tls://")) else None
    try:
        with FolderLock(Path(out_dir), wait), resources.forced(force):  # workers inherit --force
            return _execute(exp, records, Path(out_dir), sched, client, seed, retry_failed, workers, progress,
                            plot_spec, name, tries, sorted(imports))
    finally:
        if client is not None:
            client.close()


def _finished(out: Path, exp, rec: dict, retry_failed: bool) -> bool:
    """Whether the point has a valid file that this run keeps (done; failed or crashed unless retried)."""
    old, _problem = read_point(out / "points" / f"{rec['key']}.json", exp, rec)
    return old is not None and (old["status"] == "done" or not retry_failed)


def _plugin_code(exp, params: dict, imports: set) -> str:
    """The fingerprint of the code the point runs — the experiment's function and what it imports, a plugin's
    model or experiment included (:func:`verify.sweep.task.point_code`) — so that an edit of a data model, a trainer
    or an experiment reruns the points it changes; adds a plugin's module to ``imports``."""
    from verify.sweep.task import point_code

    _, modules = experiments.plugin_code(exp, params)
    imports.update(modules)
    return point_code(exp, params)


def _execute(exp, records, out, sched, client, seed, retry_failed, workers, progress, plot, name, tries, imports):
    from tqdm import tqdm

    store = Store(out, exp)
    store.open(seed, name, len(records))
    result = SweepResult(experiment=exp.name, out_dir=out, seed=seed, records=records)
    todo = []
    for i, rec in enumerate(records):
        old, problem = store.read(rec)
        if problem:
            log.warning("sweep: point file %s is not a record of the point %s (%s); it is replaced when the "
                        "point has run again", store.path(rec["key"]), rec["params"], problem)
            result.replaced.append((rec["key"], problem))
        if old is not None and (old["status"] == "done" or not retry_failed):
            records[i] = old
            result.skipped += 1
        else:
            todo.append(i)
    last_index = [0.0]

    def write_index(force=False):
        t = time.monotonic()
        if force or t - last_index[0] > 2.0:
            last_index[0] = t
            store.write_index(seed, records)

    write_index(force=True)
    bar = tqdm(total=len(records), initial=result.skipped, desc=f"sweep {exp.name}", unit="pt", file=sys.stderr,
               disable=None if progress else True, dynamic_ncols=True)
    backend = None
    try:
        if todo:
            backend = make_backend(sched, client, workers, len(todo), tries, imports)
            tasks = [(i, records[i]["key"], (exp.name, records[i]["params"], records[i]["seed"], imports,
                                             _plugin_code(exp, records[i]["params"], set())))
                     for i in todo]
            for i, outcome in backend.run(tasks):
                bar.update(1)
                if outcome["status"] == "lost":  # not recorded: a rerun resumes it
                    result.lost += 1
                    records[i].update(status="lost", error=outcome["error"])
                    continue
                records[i] = store.write(records[i], outcome)
                result.ran += 1
                bad = {k: len(v) for k, v in (("failed", result.failed), ("crashed", result.crashed)) if v}
                if bad:
                    bar.set_postfix_str(", ".join(f"{v} {k}" for k, v in bad.items()))
                write_index()
    except BaseException:
        if backend is not None:
            backend.close(cancel=True)  # interrupted: stop the running points now (they rerun next time)
            backend = None
        write_index(force=True)
        raise
    finally:
        bar.close()
        if backend is not None:
            backend.close()
    write_index(force=True)
    result.files = write_summary(out, exp, records)
    png = draw_plot(out, exp, records, plot)
    if png is not None:
        result.files["plot"] = png
    result.files["index"] = out / "index.json"
    return result


def load_sweep(out_dir, plugins=()) -> SweepResult:
    """The records of a finished or interrupted sweep from its ``index.json`` and point files (a point file
    that is missing or not a record of its point counts as pending). ``plugins``: the modules of a plugin
    experiment."""
    from verify import plugins as _plugins

    _plugins.load(list(plugins or ()))
    out = Path(out_dir)
    index = json.loads((out / "index.json").read_text())
    exp = experiments.get(index["experiment"])
    records = []
    for p in index["points"]:
        rec, _problem = read_point(out / p["file"], exp, p)
        records.append(rec if rec is not None else {**p, "status": "pending"})
    return SweepResult(experiment=index["experiment"], out_dir=out, seed=index["seed"], records=records)


def sweep_runner(out_dir, experiment: str = "multiview", scheduler: str = "local", seed: int = 0,
                 workers: int | None = None, progress: bool = True, retry_failed: bool = False,
                 wait: float | None = None, plugins=()):
    """A ``runner(configs) -> results`` callable that runs each config as one sweep point (resumable,
    local or on a Dask cluster) and returns the experiment's results in the configs' order.

    Meant for functions in ``sims`` that loop over configs (e.g. ``granularity_sweep(..., runner=...)``):
    they cannot import ``verify``, so they take the runner as a parameter. Raises RuntimeError naming the
    first point that did not finish (a failed point's traceback is in its file). By default it waits for
    another sweep writing to ``out_dir`` (two ``theorylab verify`` runs sharing a cache) and then finds the
    points it finished.
    """

    def runner(configs: Iterable[dict]) -> list:
        configs = [dict(c) for c in configs]
        res = run_sweep(experiment, configs, out_dir, scheduler=scheduler, seed=seed, workers=workers,
                        progress=progress, retry_failed=retry_failed, wait=wait, plugins=plugins)
        bad = [r for r in res.records if r["status"] != "done"]
        if bad:
            r = bad[0]
            where = {"failed": f"traceback in {Path(out_dir) / 'points' / (r['key'] + '.json')}",
                     "crashed": "rerun with retry_failed=True to try it again"}.get(
                         r["status"], "interrupted: rerun to resume")
            raise RuntimeError(f"{len(bad)} of {len(configs)} sweep point(s) did not finish; first: {r['params']} "
                               f"{r['status']}: {r.get('error')} ({where})")
        return res.results()

    return runner
