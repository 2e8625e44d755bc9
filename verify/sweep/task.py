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
    of an ill-conditioned result (docs/sweep.md). One thread per task everywhere makes a point's
    result the same wherever it runs; the pool runs one task per core anyway.
    """
    from sims.threads import single_threaded

    return single_threaded(torch_threads=None)


_CODE: dict = {}


def _code_modules(exp, params) -> list:
    from sims.codehash import code_fingerprint

    plugin, _ = experiments.plugin_code(exp, params)
    return code_fingerprint(exp.run, *plugin)[1]


def point_code(exp, params: dict) -> str:
    """The fingerprint (16 hex digits) of the code a point runs: the experiment's function (a built-in one's module
    and everything it imports), and a plugin's experiment or data model (:func:`experiments.plugin_code`)."""
    from sims.codehash import code_fingerprint

    plugin, _ = experiments.plugin_code(exp, params)
    key = (exp.name, tuple(id(c) for c in plugin))
    if key not in _CODE:
        _CODE[key] = code_fingerprint(exp.run, *plugin)
    return _CODE[key][0][:16]


def run_point(experiment: str, params: dict, seed: int, imports=(), code: str = "") -> dict:
    """One task (runs in a worker): the experiment's result, or the error and its traceback. Never raises.

    ``imports``: the sweep's plugin modules, imported first (:func:`verify.plugins.import_in_worker`), so a
    plugin's experiment or data model is known in the worker too. ``code``: the fingerprint the point's key holds;
    a worker whose loaded code is not that code (another version on disk, or a module edited after the worker
    imported it) records the point failed instead of storing another code's result under that key."""
    t0 = time.perf_counter()
    rec = {"status": "done", "result": None, "error": None, "traceback": None}
    try:
        if imports:
            from verify.plugins import import_in_worker

            import_in_worker(imports)
        with _one_blas_thread():
            result = experiments.run(experiment, params, seed)
        if code:  # after the run: an edit made while it ran counts too
            from sims.codehash import stale

            exp = experiments.get(experiment)
            _CODE.clear()
            here = point_code(exp, params)
            old = stale(_code_modules(exp, params))
            if here != code or old:
                raise RuntimeError(f"the worker's code is not the code the point's key names ({here} vs {code}"
                                   + (f"; changed on disk after the worker imported them: {', '.join(old)}" if old else "")
                                   + "): rerun the sweep")
        rec["result"] = to_jsonable(result)
    except Exception as exc:  # recorded, not raised: the sweep goes on and the point can be retried
        rec.update(status="failed", error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc())
    rec["seconds"] = time.perf_counter() - t0
    rec["worker"] = f"{socket.gethostname()}:{os.getpid()}"
    return rec
