"""Compile every numba kernel once, into the on-disk cache (``NUMBA_CACHE_DIR``), at install time.

The kernels are ``cache=True``; the first call on a fresh machine still compiles them (the CovLasso homotopy
and the random-matrix kernels, most of the time in the ``parallel=True`` ones; docs/reproducibility.md). ``make``
runs ``python -m sims.warmup`` right after installing, so that ``theorylab verify --quick`` and the tests
measure the mathematics, not the compiler. Each entry point is called on a tiny input with the argument
types the package uses, so the cached signatures are the ones later calls look up.
"""
from __future__ import annotations

import time

import numpy as np


def compile_kernels(verbose: bool = False, only=None) -> dict[str, float]:
    """Call each numba entry point once on a tiny problem (``only``: those names); returns seconds per entry point."""
    from sims import marchenko_pastur as mp
    from sims import random_matrix as rm
    from theory import covlasso as cl

    rng = np.random.default_rng(0)
    a = rng.standard_normal((12, 6))
    cov = a.T @ a / 12
    jobs = {
        "covlasso": lambda: cl.covlasso(cov, 0, rho=0.3),
        "covlasso_all": lambda: cl.covlasso_all(cov, rho=0.3),
        "covlasso_path": lambda: cl.covlasso_path(cov, 1),
        "lyapunov_spectrum": lambda: [rm.lyapunov_spectrum(4, 3, dist=d, trials=2) for d in rm.DISTS],
        "benettin_given": lambda: rm.benettin_given(rng.standard_normal((3, 4, 4))),
        "log_top_singular": lambda: rm.log_top_singular(4, [1, 2], trials=2),  # also explicit_log_ratios' kernel
        "mc_numerical_rank": lambda: mp.mc_numerical_rank(6, 4, 0.1, trials=2),
    }
    seconds = {}
    for name, job in jobs.items():
        if only is not None and name not in only:
            continue
        t0 = time.perf_counter()
        job()
        seconds[name] = time.perf_counter() - t0
        if verbose:
            print(f"  {name:20s} {seconds[name]:6.1f} s")
    return seconds


#: Two groups compiled in two processes at once by ``python -m sims.warmup`` (distinct kernels write distinct cache
#: files): the CovLasso kernels, which share their helpers (compiled once per process: splitting them would compile
#: the helpers twice), 15 s serially; the random-matrix kernels, 10 s.
GROUPS = (("covlasso", "covlasso_all", "covlasso_path"),
          ("lyapunov_spectrum", "benettin_given", "log_top_singular", "mc_numerical_rank"))


def _group(names):
    return compile_kernels(only=names)


if __name__ == "__main__":
    import multiprocessing

    t = time.perf_counter()
    print("compiling numba kernels into the cache (once per install, two processes):")
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        for part in pool.map(_group, GROUPS):
            for name, sec in part.items():
                print(f"  {name:20s} {sec:6.1f} s")
    print(f"done in {time.perf_counter() - t:.1f} s")
