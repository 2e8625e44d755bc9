"""RD Sec 4.2 and Sec 3.1 by simulation: products of random layer Jacobians, Marchenko–Pastur ranks.

* :func:`lyapunov_spectrum` — per-layer Lyapunov exponents of J_L ⋯ J_1 by the Benettin/QR
  recursion (A = J_l Q_{l−1} = Q_l R_l, λ_k ≈ (1/L) Σ_l log|R_l,kk|), never by forming the product,
  which overflows float64 after a few hundred layers. RD Thm 4, Thm 5, Eq 10.
* :func:`benettin_sums` — the running sums Σ_{l ≤ L} log|R_l,kk| at chosen depths: log σ_k(J_L ⋯ J_1)
  up to O(1), beyond any floating-point range, so σ_k/σ_1 can be followed to exp(−1000).
* :func:`log_top_singular` — exact log ‖J_L ⋯ J_1‖₂ through a renormalised product (RD Cor 1).
* :func:`mc_numerical_rank` — Monte Carlo numerical rank (RD Eq 4) of N×d Gaussian matrices, with an
  optional planted low-rank signal, against the Marchenko–Pastur prediction (RD Sec 3.1).

Layer distributions (``dist``):

``"gaussian"``         iid N(0, 1) entries (the setting of Thm 5);
``"relu"``             a ReLU layer's Jacobian diag(m) W, W Gaussian, m_i iid Bernoulli(½) (the mask
                       of a ReLU at pre-activations symmetric around 0). Each factor has rank m = Σ m_i,
                       so the product has exact rank min_l m_l: the exponents past it are −∞;
``"orthogonal_diag"``  O·diag(d), O Haar orthogonal, d_i iid Uniform(0.5, 1.5) (a scaled orthogonal
                       layer times a random diagonal, e.g. an activation's slopes);
``"heavy_tailed"``     iid Student-t entries with 3 degrees of freedom (finite variance, heavy tails;
                       E log⁺‖J‖ < ∞ as Thm 4 requires);
``"orthogonal"``       Haar orthogonal matrices: all exponents 0, no centralization (negative control).

Numba kernels: ``cache=True``, ``prange`` over trials. Each trial seeds numba's per-thread generator
with (seed, trial) at its start, so results do not depend on the number of threads.
"""
from __future__ import annotations

import numba as nb
import numpy as np

from sims.threads import single_threaded


def _blas_single_thread(user_api="blas"):
    """Single-threaded BLAS/LAPACK (and OpenMP with ``user_api=None``) for the duration of a block.

    Inside a prange region BLAS must run single-threaded: OpenBLAS called from an OpenMP parallel region
    warns that it may hang, and nested threads oversubscribe the cores (see :mod:`sims.threads`)."""
    return single_threaded(torch_threads=None, user_api=user_api)


DISTS = {"gaussian": 0, "relu": 1, "orthogonal_diag": 2, "heavy_tailed": 3, "orthogonal": 4}


def _dist_code(dist: str) -> int:
    if dist not in DISTS:
        raise ValueError(f"dist: must be one of {sorted(DISTS)}, got {dist!r}")
    return DISTS[dist]


def _check_int(x, name, lo=1) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < lo:
        raise ValueError(f"{name}: must be an integer >= {lo}, got {x!r}")
    return int(x)


def _trial_seed(seed: int, t: int) -> int:
    return (seed * 1_000_003 + t * 7919 + 12345) % (2**32 - 1)


@nb.njit(cache=True)
def _haar(n):
    a = np.random.standard_normal((n, n))
    q, r = np.linalg.qr(a)
    for j in range(n):
        if r[j, j] < 0:
            for i in range(n):
                q[i, j] = -q[i, j]
    return q


@nb.njit(cache=True)
def _layer(n, dist):
    """One layer Jacobian drawn from ``dist`` (codes of DISTS)."""
    if dist == 0:
        return np.random.standard_normal((n, n))
    if dist == 1:
        m = np.random.standard_normal((n, n))
        for i in range(n):
            if np.random.random() < 0.5:
                for j in range(n):
                    m[i, j] = 0.0
        return m
    if dist == 2:
        q = _haar(n)
        for j in range(n):
            dj = 0.5 + np.random.random()
            for i in range(n):
                q[i, j] *= dj
        return q
    if dist == 3:
        m = np.empty((n, n))
        for i in range(n):
            for j in range(n):
                z = np.random.standard_normal()
                c = 0.0
                for _ in range(3):
                    g = np.random.standard_normal()
                    c += g * g
                m[i, j] = z / np.sqrt(c / 3.0)
        return m
    return _haar(n)


@nb.njit(cache=True)
def _benettin_step(m, q, s, tiny):
    a = m @ q
    q2, r = np.linalg.qr(a)
    q2 = np.ascontiguousarray(q2)
    n = s.size
    fro = 0.0
    for i in range(n):
        for j in range(i, n):
            fro += r[i, j] * r[i, j]
    thresh = tiny * np.sqrt(fro)
    for k in range(n):
        v = abs(r[k, k])
        if v <= thresh:  # exact rank loss (e.g. a ReLU mask): log 0
            s[k] = -np.inf
        else:
            s[k] += np.log(v)
    return q2


@nb.njit(parallel=True, cache=True)
def _benettin_kernel(n, dist, trials, seeds, checkpoints, tiny):
    nc = checkpoints.size
    out = np.empty((trials, nc, n))
    for t in nb.prange(trials):
        np.random.seed(seeds[t])
        q = np.eye(n)
        s = np.zeros(n)
        c = 0
        for layer in range(1, checkpoints[nc - 1] + 1):
            m = np.ascontiguousarray(_layer(n, dist))
            q = _benettin_step(m, q, s, tiny)
            if layer == checkpoints[c]:
                out[t, c, :] = s
                c += 1
    return out


@nb.njit(cache=True)
def benettin_given(mats):
    """Benettin sums Σ_l log|R_l,kk| for given layer matrices ``mats`` (L, n, n), applied in order."""
    n = mats.shape[1]
    q = np.ascontiguousarray(np.eye(n))
    s = np.zeros(n)
    for layer in range(mats.shape[0]):
        m = np.ascontiguousarray(mats[layer])
        q = _benettin_step(m, q, s, 64 * n * 2.220446049250313e-16)
    return s


def benettin_sums(n: int, checkpoints, dist: str = "gaussian", trials: int = 8, seed: int = 0) -> np.ndarray:
    """Running Benettin sums S_k(L) = Σ_{l ≤ L} log|R_l,kk| at each depth in ``checkpoints``.

    Returns (trials, len(checkpoints), n), columns in the order of the QR recursion (asymptotically
    descending). S_k(L) = log σ_k(J_L ⋯ J_1) + O(1); −∞ marks exact rank loss.
    """
    n = _check_int(n, "n")
    trials = _check_int(trials, "trials")
    code = _dist_code(dist)
    cp = np.asarray(checkpoints, dtype=np.int64).ravel()
    if cp.size == 0 or np.any(cp < 1) or np.any(np.diff(cp) <= 0):
        raise ValueError(f"checkpoints: must be increasing depths >= 1, got {checkpoints!r}")
    seeds = np.array([_trial_seed(int(seed), t) for t in range(trials)], dtype=np.int64)
    with _blas_single_thread():
        return _benettin_kernel(n, code, trials, seeds, cp, 64 * n * np.finfo(float).eps)


def lyapunov_spectrum(n: int, L: int, dist: str = "gaussian", trials: int = 8, seed: int = 0,
                      sort: bool = True) -> np.ndarray:
    """Per-layer Lyapunov exponents of J_L ⋯ J_1, shape (trials, n), by repeated QR (Benettin).

    λ_k ≈ (1/L) Σ_l log|R_l,kk| (RD Thm 4/5). ``sort=True``: each trial's exponents descending;
    ``sort=False``: the QR order (column k estimates λ_k without the order-statistics bias that
    sorting adds where exponents are closer than the O(1/√L) noise). Finite-L error bars: the spread
    across trials. −∞ marks exact rank loss (``"relu"``).
    """
    L = _check_int(L, "L")
    s = benettin_sums(n, [L], dist, trials, seed)[:, 0, :] / L
    return -np.sort(-s, axis=1) if sort else s


def layer_matrix(n: int, dist: str, seed: int = 0) -> np.ndarray:
    """One layer Jacobian drawn as the kernels draw it (for tests and figures)."""
    n = _check_int(n, "n")
    return _one_layer(n, _dist_code(dist), _trial_seed(int(seed), 0))


@nb.njit(cache=True)
def _one_layer(n, dist, seed):
    np.random.seed(seed)
    return _layer(n, dist)


def lyapunov_spectrum_numpy(n: int, L: int, rng: np.random.Generator, dist: str = "gaussian") -> np.ndarray:
    """The plain numpy Benettin loop (one trial, Gaussian or heavy-tailed layers): the benchmark anchor."""
    q = np.eye(n)
    s = np.zeros(n)
    for _ in range(L):
        if dist == "gaussian":
            m = rng.standard_normal((n, n))
        elif dist == "heavy_tailed":
            m = rng.standard_t(3, size=(n, n))
        else:
            raise ValueError(f"dist: the numpy loop knows 'gaussian' and 'heavy_tailed', got {dist!r}")
        q, r = np.linalg.qr(m @ q)
        s += np.log(np.abs(np.diag(r)))
    return -np.sort(-s / L)


def log_top_singular(n: int, depths, dist: str = "gaussian", trials: int = 8, seed: int = 0) -> np.ndarray:
    """Exact log‖J_L ⋯ J_1‖₂ at each depth (RD Cor 1), (trials, len(depths)), via the renormalised product.

    P ← J_l P / ‖J_l P‖_F with the log-scales accumulated; log σ_1 = Σ log-scales + log σ_1(P).
    """
    n = _check_int(n, "n")
    trials = _check_int(trials, "trials")
    code = _dist_code(dist)
    d = np.asarray(depths, dtype=np.int64).ravel()
    if d.size == 0 or np.any(d < 1) or np.any(np.diff(d) <= 0):
        raise ValueError(f"depths: must be increasing depths >= 1, got {depths!r}")
    seeds = np.array([_trial_seed(int(seed), t) for t in range(trials)], dtype=np.int64)
    with _blas_single_thread():
        return _top_kernel(n, code, trials, seeds, d)


@nb.njit(parallel=True, cache=True)
def _top_kernel(n, dist, trials, seeds, depths):
    nd = depths.size
    out = np.empty((trials, nd))
    for t in nb.prange(trials):
        np.random.seed(seeds[t])
        p = np.eye(n)
        logscale = 0.0
        c = 0
        for layer in range(1, depths[nd - 1] + 1):
            p = np.ascontiguousarray(_layer(n, dist)) @ p
            f = np.sqrt(np.sum(p * p))
            p /= f
            logscale += np.log(f)
            if layer == depths[c]:
                sv = np.linalg.svd(p)[1]
                out[t, c] = logscale + np.log(sv[0])
                c += 1
    return out


# ----------------------------------------------------------------------------- Marchenko–Pastur

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


def mc_numerical_rank(N: int, d: int, eps: float, trials: int = 1000, seed: int = 0,
                      signal_rank: int = 0, theta: float = 0.0, method: str = "auto") -> dict:
    """Monte Carlo Rank_ε (RD Eq 4) of N×d matrices G + θ√N·Σ_{i<r} e_i e_iᵀ, G iid N(0, 1).

    Returns {"ranks": (trials,) int, "top": (trials,) σ_1/√max(N, d)}. ``method``: "gram" (eigvalsh of
    the Gram matrix: σ accurate to ~1e−8·σ_1, so only for ε ≥ 1e−6), "svd", or "auto" (gram when
    ε ≥ 1e−6). Compare with :func:`theory.rank.mp_numerical_rank`.
    """
    from theory.rank import _check_eps

    N, d = _check_int(N, "N"), _check_int(d, "d")
    trials = _check_int(trials, "trials")
    e = _check_eps(eps)
    r = _check_int(signal_rank, "signal_rank", lo=0)
    if r > min(N, d):
        raise ValueError(f"signal_rank: {r} exceeds min(N, d) = {min(N, d)}")
    if method not in ("auto", "gram", "svd"):
        raise ValueError(f"method: 'auto', 'gram' or 'svd', got {method!r}")
    gram = (e >= 1e-6) if method == "auto" else method == "gram"
    if gram and e < 1e-6:
        raise ValueError(f"method='gram' squares σ and loses half the digits: needs eps >= 1e-6, got {e}")
    seeds = np.array([_trial_seed(int(seed), t) for t in range(trials)], dtype=np.int64)
    with _blas_single_thread():
        ranks, tops = _mc_rank_kernel(N, d, e, seeds, r, float(theta), gram)
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
    N, d = _check_int(N, "N"), _check_int(d, "d")
    if d > N:
        raise ValueError(f"d = {d} must be <= N = {N}")
    out = []
    with _blas_single_thread():
        for _ in range(trials):
            s = np.linalg.svd(rng.standard_normal((N, d)), compute_uv=False)
            out.append(s**2 / N)
    return np.concatenate(out)


# ----------------------------------------------------------------------------- cached experiments

def lyapunov_data(ns, L: int, trials: int, seed: int = 0, dist: str = "gaussian") -> dict:
    """Unsorted per-layer exponents for each n in ``ns`` ("spec_<n>": (trials, n)), cached on disk."""
    from sims.cache import cached

    params = {"version": 1, "ns": [int(n) for n in ns], "L": int(L), "trials": int(trials), "seed": int(seed),
              "dist": dist}
    return cached("rd_lyapunov", params, lambda: {
        f"spec_{n}": lyapunov_spectrum(int(n), int(L), dist, trials, seed + i, sort=False) for i, n in enumerate(ns)})


def centralization_data(n: int, checkpoints, dists, trials: int, seed: int = 0) -> dict:
    """Benettin sums (trials, len(checkpoints), n) per distribution ("sums_<dist>"), cached on disk."""
    from sims.cache import cached

    cp = [int(c) for c in checkpoints]
    params = {"version": 1, "n": int(n), "cp": cp, "dists": list(dists), "trials": int(trials), "seed": int(seed)}

    def compute():
        out = {"checkpoints": np.array(cp)}
        for i, d in enumerate(dists):
            out[f"sums_{d}"] = benettin_sums(n, cp, d, trials, seed + 17 * i)
        return out

    return cached("rd_centralization", params, compute)


def top_singular_data(ns, depths, trials: int, seed: int = 0) -> dict:
    """log‖J_L ⋯ J_1‖₂ for Gaussian layers ("log_top_<n>": (trials, len(depths))), cached on disk."""
    from sims.cache import cached

    params = {"version": 1, "ns": [int(n) for n in ns], "depths": [int(d) for d in depths], "trials": int(trials),
              "seed": int(seed)}
    return cached("rd_top_singular", params, lambda: {
        f"log_top_{n}": log_top_singular(int(n), depths, "gaussian", trials, seed + i) for i, n in enumerate(ns)})


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
