"""One sweep point, run in a worker: the experiment's result or the error and its traceback."""
from __future__ import annotations

import os
import socket
import time
import traceback

from verify.sweep import experiments
from verify.sweep.store import to_jsonable


def _one_blas_thread():
    """BLAS/OpenMP pools limited to one thread while a point runs (:mod:`sims.threads`).

    A multithreaded BLAS sums in an order that depends on its thread count, which changes the last bits
    of an ill-conditioned result (measured: 1e-12 relative differences in ``massive_floors`` at n = p
    between a 2-thread local pool and 1-thread dask workers). One thread per task everywhere makes a point's
    result the same wherever it runs; the pool runs one task per core anyway.
    """
    from sims.threads import single_threaded

    return single_threaded(torch_threads=None)


def run_point(experiment: str, params: dict, seed: int, imports=()) -> dict:
    """One task (runs in a worker): the experiment's result, or the error and its traceback. Never raises.

    ``imports``: the sweep's plugin modules, imported first (:func:`verify.plugins.import_in_worker`), so a
    plugin's experiment or data model is known in the worker too."""
    t0 = time.perf_counter()
    rec = {"status": "done", "result": None, "error": None, "traceback": None}
    try:
        if imports:
            from verify.plugins import import_in_worker

            import_in_worker(imports)
        with _one_blas_thread():
            result = experiments.run(experiment, params, seed)
        rec["result"] = to_jsonable(result)
    except Exception as exc:  # recorded, not raised: the sweep goes on and the point can be retried
        rec.update(status="failed", error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc())
    rec["seconds"] = time.perf_counter() - t0
    rec["worker"] = f"{socket.gethostname()}:{os.getpid()}"
    return rec
