"""The local backend: a pool of worker processes that survives the death of a worker.

``concurrent.futures.ProcessPoolExecutor`` cannot tell which task killed a worker, and once one dies the
whole pool is broken: every pending point failed with it, and since a rerun hit the same point again, the
sweep never finished. Here each worker has its own pipe and runs one point at a time, so the parent knows
exactly which point a dead worker held: it starts a new worker, carries on with the other points, retries
that point up to ``tries`` times in all, and then reports it ``crashed`` (with the exit code or signal), so
the sweep ends and a rerun does not try it again unless asked (``retry_failed``).

Workers are started with the *spawn* method (safe with torch, numba and threads), ignore Ctrl-C (the sweep
process handles it and terminates them; SIGTERM exits through Python, so no named semaphore is left behind for
multiprocessing's resource tracker to warn about), and say "ready" once imported: a worker that dies before that is
a start-up failure (typically a script without ``if __name__ == "__main__":``), raised as RuntimeError
rather than charged to a point.
"""
from __future__ import annotations

import collections
import multiprocessing as mp
import signal
import time
from multiprocessing.connection import wait


def _stop(signum, frame):
    raise SystemExit(128 + signum)


def _worker(conn) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # terminated (a sweep interrupted by Ctrl-C): exit through Python, so multiprocessing's finalizers unlink and
    # unregister the semaphores this process made, and the resource tracker has nothing to warn about
    signal.signal(signal.SIGTERM, _stop)
    import threading

    from tqdm import tqdm

    tqdm.set_lock(threading.RLock())  # tqdm's default lock is a multiprocessing semaphore (spawn: a named one)
    from verify.sweep.task import run_point

    conn.send(("ready", None))
    while True:
        try:
            task = conn.recv()
        except EOFError:  # the sweep process is gone
            return
        if task is None:
            return
        i, _key, args = task
        conn.send(("done", (i, run_point(*args))))


def death(code: int | None) -> str:
    """A worker's exit code in words."""
    if code is None:
        return "vanished"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"


class _Slot:
    def __init__(self, ctx):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child,), daemon=True, name="theorylab-sweep-worker")
        self.proc.start()
        child.close()
        self.ready, self.task, self.started = False, None, 0.0


class LocalPool:
    """``workers`` processes; :meth:`run` yields ``(i, outcome)`` as points finish (see module docstring)."""

    def __init__(self, workers: int, tries: int = 2):
        if tries < 1:
            raise ValueError(f"tries must be >= 1, got {tries}")
        self.ctx = mp.get_context("spawn")
        self.n, self.tries = workers, tries
        self.slots: list[_Slot] = []

    def run(self, tasks):
        queue = collections.deque(tasks)  # (i, key, (experiment, params, seed))
        tries: collections.Counter = collections.Counter()
        startup_deaths, ever_ready = 0, False
        self.slots = [_Slot(self.ctx) for _ in range(min(self.n, len(queue)))]
        while queue or any(s.task is not None for s in self.slots):
            for s in self.slots:  # hand out work to idle workers
                if s.ready and s.task is None and queue:
                    s.task, s.started = queue.popleft(), time.perf_counter()
                    try:
                        s.conn.send(s.task)
                    except OSError:  # died while idle: the task goes back, the death is seen below
                        queue.appendleft(s.task)
                        s.task = None
            ready = set(wait([s.conn for s in self.slots] + [s.proc.sentinel for s in self.slots]))
            for k, s in enumerate(list(self.slots)):
                if s.conn not in ready and s.proc.sentinel not in ready:
                    continue
                msg = None
                try:  # a message sent just before the worker died is still read
                    msg = s.conn.recv() if s.conn.poll() else None
                except (EOFError, OSError):
                    msg = None
                if msg is not None:
                    kind, payload = msg
                    if kind == "ready":
                        s.ready = ever_ready = True
                    else:
                        s.task = None
                        yield payload
                    continue
                if s.proc.is_alive() and s.proc.sentinel not in ready:
                    continue
                s.proc.join()  # the worker is dead
                code = s.proc.exitcode
                s.conn.close()
                task, seconds = s.task, time.perf_counter() - s.started
                if not s.ready:
                    startup_deaths += 1
                    if startup_deaths >= (2 if not ever_ready else 2 * self.n + 2):
                        raise RuntimeError(
                            f"sweep workers die while starting ({death(code)}): a script that runs a sweep on "
                            f"the local pool needs `if __name__ == '__main__':` around it (the workers are "
                            f"spawned and import the main module); see the error printed above")
                worker = f"pid {s.proc.pid}"
                self.slots[k] = _Slot(self.ctx) if (queue or task is not None) else None
                if task is None:
                    continue
                tries[task[0]] += 1
                if tries[task[0]] < self.tries:
                    queue.appendleft(task)  # retried on a fresh worker
                else:
                    yield task[0], {"status": "crashed", "tries": tries[task[0]], "seconds": seconds,
                                    "worker": worker,
                                    "error": f"its worker {death(code)} on each of {tries[task[0]]} tries"}
            self.slots = [s for s in self.slots if s is not None]

    def close(self, cancel: bool = False) -> None:
        """Stop the workers: ask them to exit, or (``cancel``) terminate them at once."""
        self.slots = [s for s in self.slots if s is not None]
        for s in self.slots:
            if not cancel and s.proc.is_alive():
                try:
                    s.conn.send(None)
                except OSError:
                    pass
        for s in self.slots:
            if cancel:
                s.proc.terminate()
            s.proc.join(5)
            if s.proc.is_alive():
                s.proc.kill()
                s.proc.join(5)
            s.conn.close()
        self.slots = []
