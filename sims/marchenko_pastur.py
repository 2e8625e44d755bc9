"""RD Sec 3.1 by simulation: the numerical rank (Eq 4) of N×d Gaussian matrices, optionally with a planted
low-rank signal, against the Marchenko–Pastur prediction (:func:`theory.rank.mp_numerical_rank`).

* :func:`mc_numerical_rank` — Monte Carlo Rank_ε, numba ``prange`` over trials (each trial seeds numba's
  generator with (seed, trial), so the result does not depend on the thread count); sizes are checked
  against LAPACK's 32-bit indices and the available memory before the parallel loop;
* :func:`mc_numerical_rank_numpy` — the plain numpy loop (the benchmark anchor);
* :func:`mp_sample_eigenvalues` — pooled eigenvalues of GᵀG/N (the MP histogram of the figure);
* :func:`mp_rank_data` — the cached driver of ``rd.marchenko_pastur`` and its figure.
"""
from __future__ import annotations

import numba as nb
import numpy as np

from sims.random_matrix import _blas_single_thread, _check_int, _check_shape, check_memory
from theory.rank import _check_eps


@nb.njit(parallel=True, cache=True)
def _mc_rank_kernel(N, d, eps, seeds, signal_rank, theta, gram):
    trials = seeds.size
    ranks = np.empty(trials, dtype=np.int64)
    tops = np.empty(trials)
    m = min(N, d)
    for t in nb.prange(trials):
        np.random.seed(seeds[t])
        a = np.random.standard_normal((N, d))
        for i in range(signal_rank):
            a[i, i] += theta * np.sqrt(N)
        if gram:
            g = a.T @ a if d <= N else a @ a.T
            w = np.linalg.eigvalsh(g)
            s = np.sqrt(np.maximum(w, 0.0))
        else:
            s = np.linalg.svd(a)[1]
        top = s.max()
        cnt = 0
        for i in range(m):
            if s[i] >= eps * top:
                cnt += 1
        ranks[t] = cnt
        tops[t] = top / np.sqrt(max(N, d))
    return ranks, tops


def _trial_seed(seed: int, t: int) -> int:
    return (seed * 1_000_003 + t * 7919 + 12345) % (2**32 - 1)


def mc_numerical_rank(N: int, d: int, eps: float, trials: int = 1000, seed: int = 0,
                      signal_rank: int = 0, theta: float = 0.0, method: str = "auto") -> dict:
    """Monte Carlo Rank_ε (RD Eq 4) of N×d matrices G + θ√N·Σ_{i<r} e_i e_iᵀ, G iid N(0, 1).

    Returns {"ranks": (trials,) int, "top": (trials,) σ_1/√max(N, d)}. ``method``: "gram" (eigvalsh of
    the Gram matrix: σ accurate to ~1e−8·σ_1, so only for ε ≥ 1e−6), "svd", or "auto" (gram when
    ε ≥ 1e−6). Compare with :func:`theory.rank.mp_numerical_rank`.
    """
    N, d = _check_shape(N, d)
    trials = _check_int(trials, "trials")
    seed = _check_int(seed, "seed", 0)
    e = _check_eps(eps)
    r = _check_int(signal_rank, "signal_rank", lo=0)
    if r > min(N, d):
        raise ValueError(f"signal_rank: {r} exceeds min(N, d) = {min(N, d)}")
    try:
        th = float(theta)
    except (TypeError, ValueError):
        raise ValueError(f"theta: must be a finite number >= 0, got {theta!r}") from None
    if not np.isfinite(th) or th < 0 or isinstance(theta, complex):
        raise ValueError(f"theta: must be a finite number >= 0, got {theta!r}")
    if method not in ("auto", "gram", "svd"):
        raise ValueError(f"method: 'auto', 'gram' or 'svd', got {method!r}")
    gram = (e >= 1e-6) if method == "auto" else method == "gram"
    if gram and e < 1e-6:
        raise ValueError(f"method='gram' squares σ and loses half the digits: needs eps >= 1e-6, got {e}")
    m, M = min(N, d), max(N, d)
    # per concurrent trial: the matrix, the Gram matrix or SVD factors, LAPACK workspace
    per = 8 * (N * d + (m * m if gram else N * d + m * m + M * m) + 64 * M)
    conc = min(trials, nb.get_num_threads())
    check_memory(conc * per, f"mc_numerical_rank(N={N}, d={d}): {conc} concurrent {N}×{d} float64 trials")
    seeds = np.array([_trial_seed(seed, t) for t in range(trials)], dtype=np.int64)
    with _blas_single_thread():
        ranks, tops = _mc_rank_kernel(N, d, e, seeds, r, th, gram)
    return {"ranks": ranks, "top": tops}


def mc_numerical_rank_numpy(N: int, d: int, eps: float, trials: int, rng: np.random.Generator) -> np.ndarray:
    """The plain numpy loop (one SVD per trial): the benchmark anchor of :func:`mc_numerical_rank`."""
    out = np.empty(trials, dtype=np.int64)
    for t in range(trials):
        s = np.linalg.svd(rng.standard_normal((N, d)), compute_uv=False)
        out[t] = np.count_nonzero(s >= eps * s[0])
    return out


def mp_sample_eigenvalues(N: int, d: int, trials: int, rng: np.random.Generator) -> np.ndarray:
    """Eigenvalues of GᵀG/N (G N×d iid N(0,1), d ≤ N), pooled over trials: the MP histogram."""
    N, d = _check_shape(N, d)
    trials = _check_int(trials, "trials")
    if d > N:
        raise ValueError(f"d = {d} must be <= N = {N}")
    check_memory(8 * (2 * N * d + trials * d), f"mp_sample_eigenvalues(N={N}, d={d})")
    out = []
    with _blas_single_thread():
        for _ in range(trials):
            s = np.linalg.svd(rng.standard_normal((N, d)), compute_uv=False)
            out.append(s**2 / N)
    return np.concatenate(out)


def mp_rank_data(cases, trials: int, seed: int = 0) -> dict:
    """Monte Carlo Rank_ε for each case (N, d, eps, signal_rank, theta): "ranks_<i>", "top_<i>"; cached."""
    from sims.cache import cached

    cs = [[int(c[0]), int(c[1]), float(c[2]), int(c[3]), float(c[4])] for c in cases]
    params = {"version": 1, "cases": cs, "trials": int(trials), "seed": int(seed)}

    def compute():
        out = {}
        for i, (N, d, e, r, th) in enumerate(cs):
            o = mc_numerical_rank(N, d, e, trials, seed + i, r, th)
            out[f"ranks_{i}"], out[f"top_{i}"] = o["ranks"], o["top"]
        return out

    return cached("rd_mp", params, compute)
