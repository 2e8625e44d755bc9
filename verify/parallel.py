"""Running a verify selection in worker processes: ``theorylab verify --jobs N`` (the CLI's default: the usable
CPUs, at most 8; ``verify.run(jobs=1)``, the API's default, runs everything in this process).

Why: most checks, and every glyph network, run on one thread (sims/threads.py says why), so one process uses
one core. With N workers a run is one graph of tasks spread over the workers:

* **preparations** — the cached computations the selected checks read, declared with ``@check(prepare=...)``
  as :class:`Prep` items (a glyph network, one point of a transfer grid, one seed's collapse curves; one that
  reads another — a read-out of a network several read-outs share — names it in ``after``: it waits for it). Each
  lands in the disk cache (:mod:`sims.cache`), and the check later reads it from there. An entry two
  processes ask for at once is computed once (the cache's inter-process lock: the second waits for the first).
  A preparation that raises is recorded (``Run.preparations``) and otherwise ignored: the check computes the
  same thing itself and reports the error as its own (so does one whose ``after`` runs in a cycle: never run);
* **checks**, each ready once its own preparations have ended (so no worker sits waiting for a cache entry
  another one is computing). Each runs with the same :class:`~verify.registry.Context` as in one
  process. A check's random numbers depend on the seed and its id only, so its verdict does not
  depend on the worker or the order; the outcomes are returned in the selection's (catalog) order, and
  ``on_outcome`` is called as each one finishes.

List scheduling: at most N tasks are in the pool at a time (its own queue is first in, first out); a worker that
frees up gets the ready task with the longest chain of work still to come from it (:func:`critical_path`: its cost
plus the costs of what waits for it; a check's cost is ``@check(cost=...)``, its seconds once its preparations are
done, a preparation's its own estimate).

Each worker runs one thread (torch, BLAS/OpenMP and numba: environment variables set before it starts), so N
workers fill N cores without spin-waiting on each other; its malloc keeps freed memory for reuse (:data:`MALLOC`).
A worker imports only the modules that declare the checks and figures it is given (:mod:`verify.declarations`),
not all of them.
A worker that dies (killed, out of memory) breaks the pool: the checks it took down are run again one at a time,
each in a fresh single-worker pool, so the one that kills its worker fails with a one-line reason and the others
get their verdicts. Functions monkeypatched in this process (tests) do not reach the workers: use ``jobs=1`` for
those.
"""
from __future__ import annotations

import concurrent.futures as cf
import contextlib
import dataclasses
import multiprocessing
import os
import time
import traceback
from typing import Callable

from verify import declarations, registry
from verify.registry import Outcome

#: Thread pools pinned to one thread in the workers (read by OpenBLAS, MKL, OpenMP, numba when they start).
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
#: glibc malloc in the workers keeps freed blocks up to 32 MiB in its heap instead of returning them to the system:
#: a training step frees and re-allocates the same 1–17 MB activations every step, which with the default are
#: often mapped afresh and zero-filled by the kernel (a cold ``make verify``: 141 s of system time, 61 M page
#: faults). Measured (LeNet step, one thread): 112 → 100 ms, page faults 525 k → 117 k;
#: FG run: system time 1.65 → 0.39 s. Ignored by other C libraries; the numbers are the same bit for bit.
MALLOC = {"MALLOC_MMAP_THRESHOLD_": str(32 << 20), "MALLOC_TRIM_THRESHOLD_": str(1 << 30)}
WORKER_ENV = {**ONE_THREAD, **MALLOC}
MAX_AUTO_JOBS = 8


@dataclasses.dataclass(frozen=True)
class Prep:
    """One cached computation a check reads: ``fn(*args, **dict(kwargs))`` (``fn`` a module-level function, so
    it reaches a worker). ``label`` names it in the progress bar and identifies it: two checks listing the same
    label share one preparation. ``cost``: its seconds in a cold full run (order only)."""

    label: str
    fn: Callable
    args: tuple = ()
    kwargs: tuple = ()
    cost: float = 1.0
    after: tuple = ()
    """Labels of preparations this one reads (e.g. the network a read-out needs): it starts when they have ended."""


def prep(label: str, fn: Callable, *args, cost: float = 1.0, after=(), **kwargs) -> Prep:
    """A :class:`Prep` of ``fn(*args, **kwargs)``; ``after``: the labels it waits for (:attr:`Prep.after`)."""
    return Prep(label, fn, tuple(args), tuple(sorted(kwargs.items())), float(cost), tuple(after))


def auto_jobs() -> int:
    """The usable CPUs (the process's affinity where the OS tells it), at most :data:`MAX_AUTO_JOBS`."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(MAX_AUTO_JOBS, n))


def check_jobs(jobs) -> int:
    """``jobs`` as an int ≥ 1 (``'auto'``/None → :func:`auto_jobs`), else ValueError naming it."""
    if jobs is None or jobs == "auto":
        return auto_jobs()
    if isinstance(jobs, str) and jobs.strip().isdigit():
        jobs = int(jobs)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be an integer ≥ 1 or 'auto', got {jobs!r}")
    return jobs


# ---------------------------------------------------------------------------------------------------- workers
_WORKER: dict = {}


def _worker_init(plugins, entry_points) -> None:
    """A worker's plugins (what verify.api's load_checks and figures give the parent), loaded here without
    verify.api, which imports this module. Built-in checks and figures are imported when a task needs them, each
    from the module that declares it (:func:`_check`, :func:`_figure`)."""
    from verify import plugins as _plugins

    _plugins.load([plugins] if isinstance(plugins, str) else plugins, entry_points=entry_points)
    _WORKER["ready"] = True


def _check(cid: str):
    return declarations.find(cid, registry._CHECKS, "verify.checks", "check", registry.discover)


def _figure(fid: str):
    from paper_figs import registry as figreg

    return declarations.find(fid, figreg._FIGURES, "paper_figs", "figure", figreg.discover)


def _draw(fid: str, out_dir, quick: bool):
    """One figure in a worker: ('done', seconds) | ('skipped', what, install) | ('failed', line, traceback)."""
    from paper_figs import registry as figreg
    from verify import optional

    try:
        return ("done", figreg.render(_figure(fid), out_dir, quick=quick)["seconds"])
    except Exception as exc:
        missing = optional.find_missing(exc)
        if missing is not None:
            return ("skipped", missing.what, missing.install)
        return ("failed", f"{type(exc).__name__}: {exc}".splitlines()[0], traceback.format_exc())


def _ping() -> int:
    return os.getpid()


NO_START = ("the worker processes could not start. With jobs > 1 they are started by multiprocessing's 'spawn' "
            "method, which imports the calling script again: put the verify.run(...) call under "
            "`if __name__ == \"__main__\":`, or use jobs=1")


def _started(ex: cf.ProcessPoolExecutor, jobs: int) -> None:
    """Wait until the workers answer (they have loaded the plugins); a pool that breaks here never started: raise
    RuntimeError saying the likely cause instead of failing every check as 'worker died'."""
    try:
        for f in [ex.submit(_ping) for _ in range(jobs)]:
            f.result()
    except cf.process.BrokenProcessPool:
        ex.shutdown(wait=False, cancel_futures=True)
        raise RuntimeError(NO_START) from None


def _ensure(plugins=(), entry_points: bool = True) -> None:
    """Load the plugins in a worker that was not started by :func:`_pool` (a Dask worker), once."""
    if "ready" not in _WORKER:
        _worker_init(tuple(plugins), entry_points)


def _run_prep(p: Prep, plugins=(), entry_points: bool = True):
    _ensure(plugins, entry_points)
    t0 = time.perf_counter()
    try:
        p.fn(*p.args, **dict(p.kwargs))
        err = None
    except Exception as exc:  # the check computes it again and reports its own error
        err = f"{type(exc).__name__}: {exc}".splitlines()[0]
    return p.label, time.perf_counter() - t0, err


def _run_check(cid: str, quick: bool, seed: int, stage, device: str, plugins=(), entry_points: bool = True,
               ship: bool = False):
    """One check in a worker. ``ship`` (a Dask worker, maybe on another machine): its artifacts are written to a
    temporary folder there and returned with the outcome, (outcome, {path relative to the report: bytes})."""
    _ensure(plugins, entry_points)
    if not ship:
        ctx = registry.Context(check_id=cid, quick=quick, seed=seed, report_dir=stage, device=device)
        return registry.run_check(_check(cid), ctx)
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory(prefix="theorylab-worker-") as tmp:
        ctx = registry.Context(check_id=cid, quick=quick, seed=seed, report_dir=Path(tmp), device=device)
        out = registry.run_check(_check(cid), ctx)
        files = {p.relative_to(tmp).as_posix(): p.read_bytes() for p in Path(tmp).rglob("*") if p.is_file()}
    return out, files


@contextlib.contextmanager
def _one_thread_env():
    """The worker environment (:data:`WORKER_ENV`: one thread, malloc keeping freed memory) while the pool starts
    its processes (the FG sweep's own pool, started from a worker, inherits it)."""
    old = {k: os.environ.get(k) for k in WORKER_ENV}
    os.environ.update(WORKER_ENV)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _pool(n: int, plugins, entry_points) -> cf.ProcessPoolExecutor:
    return cf.ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context("spawn"),
                                  initializer=_worker_init, initargs=(tuple(plugins), entry_points))


def _died(cid: str, chk, why: str) -> Outcome:
    return Outcome(id=cid, paper=chk.paper, equation=chk.equation, kind=chk.kind, statement=chk.statement,
                   status="fail", tolerance=chk.tolerance, tolerance_reason=chk.tolerance_reason,
                   negative_control=chk.negative_control, positive_control=chk.positive_control,
                   figures=chk.figures, error=why)


def topological(deps: dict) -> tuple[list, list]:
    """(an order of the graph ``deps`` — task -> the tasks it waits for — in which every task comes after those it
    waits for, the tasks no order can start: those on a cycle and those waiting for one)."""
    left = {t: set(d) for t, d in deps.items()}
    free = [t for t, d in left.items() if not d]
    order = []
    while free:
        t = free.pop()
        order.append(t)
        for u, d in left.items():
            if t in d:
                d.discard(t)
                if not d:
                    free.append(u)
    done = set(order)
    return order, [t for t in deps if t not in done]


def critical_path(deps: dict, cost: dict) -> dict:
    """For each task of the graph ``deps`` (task -> the tasks it waits for): its cost plus the largest such sum
    over the tasks that wait for it, i.e. the longest chain of work from its start to the end of the run (the
    priority of list scheduling). A cycle is an error naming a task on it."""
    order, stuck = topological(deps)
    if stuck:
        t = stuck[0][-1] if isinstance(stuck[0], tuple) else stuck[0]
        raise ValueError(f"preparations wait for each other in a cycle through {t!r}")
    waiters: dict = {t: [] for t in deps}
    for t, d in deps.items():
        for u in d:
            waiters[u].append(t)
    out: dict = {}
    for t in reversed(order):
        out[t] = cost[t] + max((out[w] for w in waiters[t]), default=0.0)
    return out


# ------------------------------------------------------------------------------------------------------- run
def run_checks(ids, found: dict, *, quick: bool, seed: int, stage, device: str, jobs: int, plugins=(),
               entry_points: bool = True, on_done=None, bar=None, client=None) -> tuple[dict, dict]:
    """Run the checks ``ids`` (all in ``found``) in ``jobs`` workers (module doc).

    Returns ``(outcomes by id, preparations label -> {seconds, error})``. ``on_done(outcome)`` is called in
    this process as each check finishes; ``bar`` (a tqdm) is advanced once per preparation and per check.
    ``client``: a ``distributed.Client`` — the same graph and order run as tasks of its cluster (:class:`DaskPool`),
    ``jobs`` of them at a time (its workers' threads), the artifacts shipped back here."""
    ctx0 = {cid: registry.Context(check_id=cid, quick=quick, seed=seed, report_dir=stage, device=device)
            for cid in ids}
    preps: dict[str, Prep] = {}
    owner: dict[str, str] = {}
    needs: dict[str, set] = {}
    for cid in ids:
        needs[cid] = set()
        for p in found[cid].preparations(ctx0[cid]):
            if not isinstance(p, Prep):
                raise TypeError(f"check {cid}: prepare() must return verify.parallel.Prep items, got {p!r}")
            q = preps.setdefault(p.label, p)
            if (q.fn, repr(q.args), repr(q.kwargs), q.after) != (p.fn, repr(p.args), repr(p.kwargs), p.after):
                raise ValueError(f"check {cid} prepares {p.label!r} differently from {owner[p.label]} (function, "
                                 f"arguments or `after`): one label must name one computation")
            owner.setdefault(p.label, cid)
            needs[cid].add(p.label)
    order = sorted(ids, key=lambda c: -found[c].cost)
    # the graph: a preparation waits for the preparations it reads (``after``), a check for its own preparations
    deps = {("prep", p.label): {("prep", a) for a in p.after if a in preps} for p in preps.values()}
    deps.update({("check", cid): {("prep", lab) for lab in needs[cid]} for cid in ids})
    prepared: dict[str, dict] = {}
    for t in topological(deps)[1]:  # a preparation that waits, through `after`, on a cycle never runs (its checks
        if t[0] == "prep":       # compute what they need themselves, as with -j 1)
            prepared[t[1]] = {"seconds": None, "error": "not run: its `after` preparations wait for each other in a "
                                                        "cycle"}
    for lab in prepared:
        del deps[("prep", lab)]
    for d in deps.values():
        d -= {("prep", lab) for lab in prepared}
    cost = {("prep", p.label): p.cost for p in preps.values()}
    cost.update({("check", cid): found[cid].cost for cid in ids})
    rank = critical_path(deps, cost)
    tie = {t: i for i, t in enumerate([("prep", p.label) for p in sorted(preps.values(), key=lambda p: -p.cost)]
                                      + [("check", c) for c in order])}
    if bar is not None:
        bar.reset(total=len(preps) + len(order))
    outcomes: dict[str, Outcome] = {}
    broken: list[str] = []
    if bar is not None:
        bar.update(len(prepared))

    def finish(cid, o):
        outcomes[cid] = o
        if bar is not None:
            bar.update(1)
        if on_done is not None:
            on_done(o)

    ex = None
    remote = client is not None
    try:
        if remote:
            from verify.dask_pool import DaskPool

            ex = DaskPool(client, plugins, entry_points)
        else:
            with _one_thread_env():
                ex = _pool(jobs, plugins, entry_points)
                _started(ex, jobs)
        # list scheduling: at most ``jobs`` tasks in the pool (its queue is first in, first out), the next one the
        # ready task that heads the longest chain of work still to come (its critical path), so a network that a
        # read-out and a check wait for starts before a check nothing waits for
        left = {t: set(d) for t, d in deps.items()}
        ready = [t for t, d in left.items() if not d]
        pending = {}

        def put(key, fn, *args):  # a Dask task gets a readable key; a local pool takes none
            return ex.submit(fn, *args, key=key) if remote else ex.submit(fn, *args)

        def submit():
            ready.sort(key=lambda t: (-rank[t], tie[t]))
            while ready and len(pending) < jobs:
                kind, name = t = ready.pop(0)
                try:
                    if kind == "prep":
                        pending[put(f"prep {name}", _run_prep, preps[name], plugins, entry_points)] = t
                    else:
                        pending[put(f"check {name}", _run_check, name, quick, seed, None if remote else stage,
                                    device, plugins, entry_points, remote)] = t
                except cf.process.BrokenProcessPool:
                    if kind == "prep":
                        prepared[name] = {"seconds": None, "error": "BrokenProcessPool"}
                        if bar is not None:
                            bar.update(1)
                        end(t)
                    else:
                        broken.append(name)

        def end(t):  # a task whose last dependency ended becomes ready (once: each task ends once)
            for u, d in left.items():
                if t in d:
                    d.discard(t)
                    if not d:
                        ready.append(u)

        submit()
        while pending:
            done, _ = cf.wait(list(pending), return_when=cf.FIRST_COMPLETED)
            for fut in done:
                kind, name = t = pending.pop(fut)
                if kind == "prep":
                    try:
                        label, secs, err = fut.result()
                        prepared[label] = {"seconds": round(secs, 2), "error": err}
                        if remote and ex.died(fut):
                            prepared[label]["worker died"] = (f"its worker died {ex.died(fut)} time(s) while "
                                                              "running it; the cluster ran it again")
                    except Exception as exc:  # the pool broke under it: the checks recompute what they need
                        prepared[name] = {"seconds": None, "error": f"{type(exc).__name__}: {exc}"}
                    if bar is not None:
                        bar.update(1)
                        bar.set_postfix_str(name)
                else:
                    try:
                        res = fut.result()
                        if remote:
                            res = ex.unpack(res, stage)
                        finish(name, res)
                    except cf.process.BrokenProcessPool:
                        broken.append(name)
                    except Exception as exc:  # e.g. an outcome that cannot be sent back
                        finish(name, _died(name, found[name], f"the worker could not return the outcome: "
                                                              f"{type(exc).__name__}: {exc}".splitlines()[0]))
                end(t)
            submit()
        for lab in preps:  # never started: the pool broke first
            prepared.setdefault(lab, {"seconds": None, "error": "not started (the worker pool broke)"})
        broken += [c for c in order if c not in outcomes and c not in broken]  # never submitted
    except BaseException:  # Ctrl-C included: stop the workers, keep nothing
        if ex is not None:
            ex.shutdown(wait=False, cancel_futures=True)
            if not remote:
                _kill(ex)
        raise
    ex.shutdown(wait=True)
    if remote:  # a check the cluster gave up on (KilledWorker after its allowed failures) fails, named
        for cid in broken:
            finish(cid, _died(cid, found[cid], "its worker died each time the cluster ran it (KilledWorker)"))
        return outcomes, prepared
    for cid in sorted(broken, key=order.index):  # one at a time: the one that kills its worker is named
        finish(cid, _isolated(cid, found[cid], quick, seed, stage, device, plugins, entry_points))
    return outcomes, prepared


def draw_figures(fids, out_dir, *, quick: bool, jobs: int, plugins=(), entry_points: bool = True, bar=None) -> dict:
    """Draw the figures ``fids`` into ``out_dir`` in ``jobs`` workers: fid -> what :func:`_draw` returns (a worker
    that dies fails the figures it took down, one line each)."""
    out = {}
    with _one_thread_env():
        ex = _pool(jobs, plugins, entry_points)
        _started(ex, jobs)
        futs = {ex.submit(_draw, fid, out_dir, quick): fid for fid in fids}
    try:
        for fut in cf.as_completed(futs):
            try:
                out[futs[fut]] = fut.result()
            except Exception as exc:  # BrokenProcessPool and the like
                out[futs[fut]] = ("failed", f"its worker process died ({type(exc).__name__})", "")
            if bar is not None:
                bar.update(1)
    except BaseException:
        ex.shutdown(wait=False, cancel_futures=True)
        _kill(ex)
        raise
    ex.shutdown(wait=True)
    return out


def _isolated(cid, chk, quick, seed, stage, device, plugins, entry_points) -> Outcome:
    with _one_thread_env():
        ex = _pool(1, plugins, entry_points)
        fut = ex.submit(_run_check, cid, quick, seed, stage, device)
    try:
        return fut.result()
    except cf.process.BrokenProcessPool:
        return _died(cid, chk, "its worker process died while running it (killed, or out of memory?)")
    except Exception as exc:
        return _died(cid, chk, "".join(traceback.format_exception_only(type(exc), exc)).strip())
    finally:
        ex.shutdown(wait=True)


def _kill(ex: cf.ProcessPoolExecutor) -> None:
    for proc in list(getattr(ex, "_processes", {}).values()):
        with contextlib.suppress(Exception):
            proc.kill()
