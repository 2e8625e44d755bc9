"""``theorylab verify --scheduler tcp://HOST:PORT``: the preparations and checks of one run as tasks of a Dask cluster.

:func:`verify.parallel.run_checks` drives the same graph in the same critical-path order through :class:`DaskPool`
instead of a local process pool; each worker loads the checks on first use, runs a check with its artifacts in a
temporary folder and returns them with the outcome, which are written into this run's report stage here; the
figures and the report are drawn and written here. A check's random numbers depend only on the seed and its id, so
the statuses and numbers equal a local run's on the same kernels (tests/test_parallel_dask.py).
"""
from __future__ import annotations

import concurrent.futures as cf


class DaskPool:
    """The part of ``concurrent.futures.ProcessPoolExecutor`` that :func:`run_checks` uses, on a Dask cluster: tasks
    are submitted under readable keys, run on whichever worker is free, and (the scheduler's rule) run again on
    another worker when theirs dies, up to ``distributed.scheduler.allowed-failures``; :meth:`died` says how often
    that happened to a task. The workers load the checks on first use (their own install of theorylab, same code);
    their results cache is their own THEORYLAB_CACHE (a shared filesystem lets them share it)."""

    def __init__(self, client, plugins=(), entry_points: bool = True):
        self.client, self.plugins, self.entry_points = client, tuple(plugins), entry_points
        self.futures: dict = {}
        self._died: dict = {}
        run = uuid_prefix()
        self._key = lambda k: f"theorylab {run} {k}"

    def submit(self, fn, *args, key: str):
        fut = self.client.submit(fn, *args, key=self._key(key), pure=False, retries=0)
        wrapped = cf.Future()
        self.futures[wrapped] = fut

        def done(f):  # distributed runs it in a thread of its own
            try:
                wrapped.set_result(f.result())
            except BaseException as exc:
                wrapped.set_exception(cf.process.BrokenProcessPool(f"{type(exc).__name__}: {exc}")
                                      if type(exc).__name__ == "KilledWorker" else exc)
        fut.add_done_callback(done)
        return wrapped

    def died(self, wrapped) -> int:
        """How many times the task's worker died while running it (asked of the scheduler, once)."""
        if wrapped not in self._died:
            try:
                self._died[wrapped] = int(self.client.run_on_scheduler(_suspicious, self.futures[wrapped].key))
            except Exception:  # the scheduler forgot the task: nothing to say
                self._died[wrapped] = 0
        return self._died[wrapped]

    @staticmethod
    def unpack(res, stage):
        """(outcome, artifacts) from a worker: the artifacts written into this run's report stage."""
        outcome, files = res
        if stage is not None:
            for rel, data in files.items():
                path = stage / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
        return outcome

    def shutdown(self, wait: bool = True, cancel_futures: bool = False) -> None:
        if cancel_futures:
            self.client.cancel([f for w, f in self.futures.items() if not w.done()], force=True)


def _suspicious(key, dask_scheduler=None) -> int:
    """On the scheduler: how many times a task's worker died while it ran (TaskState.suspicious)."""
    ts = dask_scheduler.tasks.get(key)
    return int(getattr(ts, "suspicious", 0)) if ts is not None else 0


def uuid_prefix() -> str:
    import uuid

    return uuid.uuid4().hex[:8]


def connect(scheduler: str, timeout: float = 10.0):
    """A ``distributed.Client`` of the Dask scheduler at ``scheduler`` (tcp://HOST:PORT): ConnectionError naming it
    when unreachable, a ValueError naming the extra when dask is not installed, and the number of worker threads
    (the run's ``jobs``)."""
    from verify.sweep.backends import connect_dask

    client = connect_dask(scheduler, timeout)
    threads = sum(w.get("nthreads", 1) for w in client.scheduler_info().get("workers", {}).values())
    return client, max(1, threads)
