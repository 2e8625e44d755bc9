"""One place that limits thread pools: torch's intra-op threads and the BLAS/OpenMP pools (threadpoolctl).

Why it matters here. The matrices of most checks and simulations are small (a few hundred rows); on a
machine shared with other processes, thread pools that spin-wait for descheduled workers make such operations
much slower than one thread (docs/reproducibility.md has the measurements). One thread also fixes the order of
BLAS reductions, so a sweep point gives the same
floats in a local pool, serially or on a Dask worker, and BLAS called inside a numba ``prange`` region must
not start threads of its own.

``single_threaded`` is a context manager and, like every ``contextlib.contextmanager``, also a decorator.
"""
from __future__ import annotations

import contextlib


@contextlib.contextmanager
def single_threaded(torch_threads: int | None = 1, blas_threads: int | None = 1, user_api: str | None = None):
    """Run the block with ``torch_threads`` torch intra-op threads and ``blas_threads`` BLAS/OpenMP threads.

    ``None`` leaves that pool alone (``torch_threads=None`` never imports torch). ``user_api`` restricts the
    BLAS limit to ``"blas"`` or ``"openmp"`` (threadpoolctl's names); default both, and the OpenMP limit
    also reaches torch's CPU pool (torch uses OpenMP). Restored on exit.
    """
    with contextlib.ExitStack() as stack:
        if blas_threads is not None:
            from threadpoolctl import threadpool_limits

            stack.enter_context(threadpool_limits(limits=blas_threads, user_api=user_api))
        if torch_threads is not None:
            import torch

            old = torch.get_num_threads()
            torch.set_num_threads(torch_threads)
            stack.callback(torch.set_num_threads, old)
        yield
