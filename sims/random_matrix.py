"""RD Sec 4.2 by simulation: products of random layer Jacobians.

* :func:`lyapunov_spectrum` — per-layer Lyapunov exponents of J_L ⋯ J_1 by the Benettin/QR
  recursion (A = J_l Q_{l−1} = Q_l R_l, λ_k ≈ (1/L) Σ_l log|R_l,kk|), never by forming the product,
  which overflows float64 after a few hundred layers. RD Thm 4, Thm 5, Eq 10.
* :func:`benettin_sums` — the running sums Σ_{l ≤ L} log|R_l,kk| at chosen depths: log σ_k(J_L ⋯ J_1)
  up to O(1), beyond any floating-point range, so σ_k/σ_1 can be followed to exp(−1000).
* :func:`log_top_singular` — exact log ‖J_L ⋯ J_1‖₂ through a renormalised product (RD Cor 1).
* :func:`explicit_log_ratios` — log σ_k/σ_1 from the SVD of the renormalised explicit product: what a
  researcher gets without the Benettin recursion (it saturates at the float64 floor; a negative control).

The Monte Carlo numerical rank of Gaussian matrices (RD Sec 3.1) is in :mod:`sims.marchenko_pastur`.

Layer distributions (``dist``). Thm 4 allows any law μ of the layer Jacobian with E log⁺‖J‖ < ∞; the
iid entry laws (:data:`IID_LAWS`) are

``"gaussian"``         N(0, 1) entries (the setting of Thm 5);
``"rademacher"``       ±1 with probability ½ (discrete: a layer is singular with probability > 0);
``"uniform"``          Uniform(−√3, √3) (unit variance, bounded);
``"heavy_tailed"``     Student-t with 3 degrees of freedom (finite variance, heavy tails);
``"cauchy"``           standard Cauchy (no mean, no variance; E log⁺|x| < ∞, so Thm 4 applies);
``"sparse"``           Bernoulli(p)·N(0, 1), p = :data:`SPARSE_P` (mostly zeros; zero rows/columns occur);

and the structured laws

``"relu"``             a ReLU layer's Jacobian diag(m) W, W Gaussian, m_i iid Bernoulli(½). Each factor has
                       rank Σ m_i, so the product has exact rank min_l Σ m_i: exponents past it are −∞;
``"orthogonal_diag"``  O·diag(d), O Haar orthogonal, d_i iid Uniform(0.5, 1.5);
``"orthogonal"``       Haar orthogonal: all exponents 0, σ_k/σ_1 = 1 at every depth. It satisfies Thm 4's
                       stated hypotheses, so it is a counterexample to Thm 4 as stated (see docs/rd.md).

Randomness: trial t draws its layers from numpy Generators seeded by (seed, t, stream), in blocks of
layers (numpy's ziggurat sampler; the draw order per stream does not depend on the block size), so a
result depends on (n, L, dist, trials, seed) only, not on the thread count. A worker thread draws the
next block while the kernel works on the current one. The Benettin kernel (numba,
``prange`` over trials) keeps Q_l implicit as Householder reflectors: A = J_l Q_{l−1} is one LAPACK
``dormqr`` and the QR one ``dgeqrf`` (called through scipy's cython LAPACK), which costs less than
forming Q (``dorgqr``) and multiplying. Every buffer is allocated, and its size checked against the
available memory, before the parallel loop: a size that cannot be allocated is a ``MemoryError`` naming
it, never a kernel returning garbage.
"""
from __future__ import annotations

import os

import llvmlite.binding as _ll
import numba as nb
import numpy as np
from numba.extending import get_cython_function_address

from sims.threads import single_threaded


def _blas_single_thread(user_api="blas"):
    """Single-threaded BLAS/LAPACK (and OpenMP with ``user_api=None``) for the duration of a block.

    Inside a prange region BLAS must run single-threaded: OpenBLAS called from an OpenMP parallel region
    warns that it may hang, and nested threads oversubscribe the cores (see :mod:`sims.threads`)."""
    return single_threaded(torch_threads=None, user_api=user_api)


IID_LAWS = ("gaussian", "rademacher", "uniform", "heavy_tailed", "cauchy", "sparse")
DISTS = IID_LAWS + ("relu", "orthogonal_diag", "orthogonal")
SPARSE_P = 0.2
#: bytes of layer matrices drawn per block (all trials together)
BLOCK_BYTES = 32 * 2**20
#: LAPACK takes 32-bit integers: n·n must stay below 2³¹
MAX_N = 46_340


# ----------------------------------------------------------------------------- validation, memory

def _check_int(x, name, lo=1, hi=None) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise ValueError(f"{name}: must be an integer, got {x!r} ({type(x).__name__})")
    if x < lo or (hi is not None and x > hi):
        rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise ValueError(f"{name}: must be an integer {rng}, got {x!r}")
    return int(x)


def _check_dist(dist) -> str:
    if not isinstance(dist, str) or dist not in DISTS:
        raise ValueError(f"dist: must be one of {list(DISTS)}, got {dist!r}")
    return dist


def _check_depths(depths, name) -> np.ndarray:
    a = np.asarray(depths)
    if a.size == 0 or a.dtype.kind not in "iu" or a.ndim > 1:
        raise ValueError(f"{name}: must be a non-empty 1-D sequence of integer depths, got {depths!r}")
    a = a.astype(np.int64).ravel()
    if np.any(a < 1) or np.any(np.diff(a) <= 0):
        raise ValueError(f"{name}: must be increasing depths >= 1, got {depths!r}")
    return a


def available_bytes() -> int | None:
    """Memory available to this process now (psutil if installed, else sysconf; None if unknown)."""
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except Exception:  # noqa: BLE001 - psutil is optional
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def check_memory(nbytes: int, what: str, fraction: float = 0.8) -> None:
    """MemoryError naming ``what`` when ``nbytes`` exceeds ``fraction`` of the available memory."""
    avail = available_bytes()
    if avail is not None and nbytes > fraction * avail:
        raise MemoryError(f"{what} needs about {nbytes / 2**30:.3g} GiB, but only {avail / 2**30:.3g} GiB of "
                          f"memory is available: use a smaller size or fewer trials")


def _check_n(n, what="n") -> int:
    n = _check_int(n, what, 1)
    if n > MAX_N:
        raise ValueError(f"{what} = {n} is too large: LAPACK's 32-bit indices need n·n < 2³¹ (n <= {MAX_N}); an "
                         f"{n}×{n} float64 matrix alone would take {8 * n * n / 2**30:.3g} GiB")
    return n


def _check_shape(N, d) -> tuple[int, int]:
    N, d = _check_int(N, "N"), _check_int(d, "d")
    if N * d >= 2**31:
        raise ValueError(f"N×d = {N}×{d} is too large: LAPACK's 32-bit indices need N·d < 2³¹; the matrix alone "
                         f"would take {8 * N * d / 2**30:.3g} GiB")
    return N, d


# ----------------------------------------------------------------------------- layer laws (numpy)

def _trial_gens(seed: int, t: int) -> tuple:
    """Independent streams for trial t: the matrix entries, auxiliary draws (masks, scales), the initial frame."""
    return tuple(np.random.default_rng([int(seed), int(t), j]) for j in (0, 1, 2))


def _haar(g, b, n):
    z = g.standard_normal((b, n, n))
    q, r = np.linalg.qr(z)
    return q * np.sign(np.diagonal(r, axis1=1, axis2=2))[:, None, :]


def draw_layers(gens, dist: str, out: np.ndarray) -> None:
    """Fill ``out`` (b, n, n), C-contiguous float64, with b layer Jacobians J (math orientation) from ``dist``."""
    b, n = out.shape[0], out.shape[1]
    g0, g1 = gens[:2]
    if dist == "gaussian":
        g0.standard_normal(out=out)
    elif dist == "rademacher":
        out[...] = g0.integers(0, 2, size=out.shape, dtype=np.int8)
        out *= 2.0
        out -= 1.0
    elif dist == "uniform":
        out[...] = g0.uniform(-np.sqrt(3.0), np.sqrt(3.0), size=out.shape)
    elif dist == "heavy_tailed":
        out[...] = g0.standard_t(3, size=out.shape)
    elif dist == "cauchy":
        out[...] = g0.standard_cauchy(size=out.shape)
    elif dist == "sparse":
        g0.standard_normal(out=out)
        out *= g1.random(size=out.shape) < SPARSE_P
    elif dist == "relu":
        g0.standard_normal(out=out)
        out *= g1.random(size=(b, n, 1)) < 0.5  # diag(m) W: rows masked
    elif dist == "orthogonal_diag":
        out[...] = _haar(g0, b, n) * g1.uniform(0.5, 1.5, size=(b, 1, n))  # O diag(d): columns scaled
    elif dist == "orthogonal":
        out[...] = _haar(g0, b, n)
    else:  # pragma: no cover - _check_dist guards
        raise ValueError(f"dist: unknown {dist!r}")


def layer_matrix(n: int, dist: str, seed: int = 0) -> np.ndarray:
    """The first layer Jacobian of trial 0, drawn as the kernels draw it (for tests and figures)."""
    n = _check_n(n)
    dist = _check_dist(dist)
    seed = _check_int(seed, "seed", 0)
    out = np.empty((1, n, n))
    draw_layers(_trial_gens(seed, 0), dist, out)
    return out[0]


# ----------------------------------------------------------------------------- LAPACK from numba

# scipy's LAPACK, called from numba by symbol (an ExternalFunction caches; a ctypes global would not).
# Pointers travel as intp: on LP64 platforms a pointer and a 64-bit integer are passed alike.
for _name in ("dgeqrf", "dormqr"):
    _ll.add_symbol(f"theorylab_{_name}", get_cython_function_address("scipy.linalg.cython_lapack", _name))
_dgeqrf = nb.types.ExternalFunction("theorylab_dgeqrf", nb.types.void(*([nb.types.intp] * 8)))
_dormqr = nb.types.ExternalFunction("theorylab_dormqr", nb.types.void(*([nb.types.intp] * 13)))


def _lwork(n: int) -> int:
    """Optimal workspace of dgeqrf and dormqr(side='R') for n×n (LAPACK workspace queries)."""
    from scipy.linalg import lapack

    a = np.zeros((n, n), order="F")
    w1 = lapack.dgeqrf(a, lwork=-1)[2][0]
    w2 = lapack.dormqr("R", "N", a, np.zeros(n), np.zeros((n, n), order="F"), lwork=-1)[1][0]
    return int(max(w1, w2, n, 1))


@nb.njit(cache=True)
def _benettin_layer(m, qr, c, tau, work, s, first, tiny, iv, side, trans):
    """One Benettin step on layer matrix ``m``: C = m·Q_prev (dormqr), C = Q R (dgeqrf), s += log|R_kk|.

    LAPACK is column-major: buffer ``c`` holds the transpose of the matrix LAPACK sees, so we copy mᵀ in.
    ``qr``/``tau`` carry Q_prev as Householder reflectors and receive the new ones.
    """
    n = m.shape[0]
    pn = iv.ctypes.data  # int32 [n, lwork, info]
    for i in range(n):
        for j in range(n):
            c[j, i] = m[i, j]
    if not first:
        _dormqr(side.ctypes.data, trans.ctypes.data, pn, pn, pn, qr.ctypes.data, pn, tau.ctypes.data, c.ctypes.data,
                pn, work.ctypes.data, pn + 4, pn + 8)
    _dgeqrf(pn, pn, c.ctypes.data, pn, tau.ctypes.data, work.ctypes.data, pn + 4, pn + 8)
    fro = 0.0
    for j in range(n):  # R (LAPACK view) is upper triangular: R[i, j] = c[j, i], i <= j
        for i in range(j + 1):
            fro += c[j, i] * c[j, i]
    thresh = tiny * np.sqrt(fro)
    for k in range(n):
        v = abs(c[k, k])
        if v <= thresh:  # exact rank loss (a ReLU mask, a zero column): log 0
            s[k] = -np.inf
        else:
            s[k] += np.log(v)
    qr[:, :] = c


@nb.njit(parallel=True, cache=True, nogil=True)
def _benettin_block(mats, nlayers, qr, c, tau, work, s, frame, rec, out, tiny):
    """``nlayers`` Benettin steps per trial (prange). ``frame`` (trials, n, n) or empty: start a new recursion
    whose initial Q_0 is the Q factor of frame[t] (a Gaussian matrix: a Haar-random frame)."""
    trials, n = mats.shape[0], mats.shape[2]
    for t in nb.prange(trials):
        iv = np.empty(3, dtype=np.int32)
        iv[0], iv[1], iv[2] = n, work.shape[1], 0
        side = np.array([ord("R")], dtype=np.uint8)
        trans = np.array([ord("N")], dtype=np.uint8)
        if frame.shape[0] > 0:
            _benettin_layer(frame[t], qr[t], c[t], tau[t], work[t], np.zeros(n), True, tiny, iv, side, trans)
        for l in range(nlayers):
            _benettin_layer(mats[t, l], qr[t], c[t], tau[t], work[t], s[t], False, tiny, iv, side, trans)
            if rec[l] >= 0:
                out[t, rec[l], :] = s[t]


def _block_size(trials: int, n: int, L: int) -> int:
    return int(max(1, min(L, BLOCK_BYTES // (8 * trials * n * n))))


def _layer_blocks(gens, dist, trials, b, n, L):
    """Yield (start, nb, mats) for blocks of ≤ b layers, mats[t, :nb] the layers start+1..start+nb of trial t.

    Double-buffered: a worker thread draws block i+1 (numpy's Generator releases the GIL while it fills)
    while the caller's kernel (``nogil``) works on block i, so on a machine with a free core the drawing
    costs no wall time. The draws, and so the results, do not depend on the timing."""
    from concurrent.futures import ThreadPoolExecutor

    bufs = [np.empty((trials, b, n, n)), np.empty((trials, b, n, n))] if L > b else [np.empty((trials, b, n, n))]

    def fill(i, nb_):
        for t in range(trials):
            draw_layers(gens[t], dist, bufs[i % len(bufs)][t, :nb_])
        return nb_

    starts = list(range(0, L, b))
    with ThreadPoolExecutor(max_workers=1) as ex:
        fut = ex.submit(fill, 0, min(b, L))
        for i, start in enumerate(starts):
            nb_ = fut.result()
            if i + 1 < len(starts):
                fut = ex.submit(fill, i + 1, min(b, L - starts[i + 1]))
            yield start, nb_, bufs[i % len(bufs)]


def _record_map(cp, start, nb_):
    rec = -np.ones(nb_, dtype=np.int64)
    for ci, c in enumerate(cp):
        if start < c <= start + nb_:
            rec[c - start - 1] = ci
    return rec


def benettin_sums(n: int, checkpoints, dist: str = "gaussian", trials: int = 8, seed: int = 0) -> np.ndarray:
    """Running Benettin sums S_k(L) = Σ_{l ≤ L} log|R_l,kk| at each depth in ``checkpoints``.

    Returns (trials, len(checkpoints), n), columns in the order of the QR recursion (asymptotically
    descending). S_k(L) = log σ_k(J_L ⋯ J_1) + O(1); −∞ marks exact rank loss.
    """
    n = _check_n(n)
    trials = _check_int(trials, "trials")
    dist = _check_dist(dist)
    seed = _check_int(seed, "seed", 0)
    cp = _check_depths(checkpoints, "checkpoints")
    L = int(cp[-1])
    b = _block_size(trials, n, L)
    lw = _lwork(n) if n <= 4096 else 64 * n
    check_memory(8 * trials * ((2 * b + 3) * n * n + lw + 2 * n + cp.size * n),
                 f"benettin_sums(n={n}, trials={trials}): {trials} × (2 × {b} layers + 3) × {n}×{n} float64")
    qr, c = np.empty((trials, n, n)), np.empty((trials, n, n))
    tau, work = np.empty((trials, n)), np.empty((trials, lw))
    s, out = np.zeros((trials, n)), np.empty((trials, cp.size, n))
    gens = [_trial_gens(seed, t) for t in range(trials)]
    # Q_0: a Haar-random frame, not the identity: for laws with coordinate-aligned kernels (sparse, Rademacher)
    # e_1 is killed with positive probability and the recursion would report −∞ for a nonzero σ_1
    frame = np.stack([g[2].standard_normal((n, n)) for g in gens])
    tiny = 64 * n * np.finfo(float).eps
    with _blas_single_thread():
        for start, nb_, mats in _layer_blocks(gens, dist, trials, b, n, L):
            _benettin_block(mats, nb_, qr, c, tau, work, s, frame if start == 0 else frame[:0],
                            _record_map(cp, start, nb_), out, tiny)
    return out


def benettin_given(mats) -> np.ndarray:
    """Benettin sums Σ_l log|R_l,kk| for given layer matrices ``mats`` (L, n, n), applied in order (Q_0 = I)."""
    a = np.asarray(mats)
    if np.iscomplexobj(a) or a.dtype.kind not in "fiu":
        raise ValueError(f"mats: must be a real array of shape (L, n, n), got dtype {a.dtype}")
    if a.ndim != 3 or a.shape[1] != a.shape[2] or a.shape[0] == 0 or a.shape[1] == 0:
        raise ValueError(f"mats: must have shape (L, n, n) with L, n >= 1, got {a.shape}")
    a = np.ascontiguousarray(a, dtype=np.float64)
    if not np.all(np.isfinite(a)):
        raise ValueError("mats: contains NaN or Inf")
    n = _check_n(int(a.shape[1]), "n (mats.shape[1])")
    out = np.empty((1, 1, n))
    with _blas_single_thread():
        _benettin_block(a[None], a.shape[0], np.empty((1, n, n)), np.empty((1, n, n)), np.empty((1, n)),
                        np.empty((1, _lwork(n))), np.zeros((1, n)), np.eye(n)[None],
                        _record_map(np.array([a.shape[0]]), 0, a.shape[0]), out, 64 * n * np.finfo(float).eps)
    return out[0, 0]


def lyapunov_spectrum(n: int, L: int, dist: str = "gaussian", trials: int = 8, seed: int = 0,
                      sort: bool = True) -> np.ndarray:
    """Per-layer Lyapunov exponents of J_L ⋯ J_1, shape (trials, n), by repeated QR (Benettin).

    λ_k ≈ (1/L) Σ_l log|R_l,kk| (RD Thm 4/5). ``sort=True``: each trial's exponents descending;
    ``sort=False``: the QR order (column k estimates λ_k without the order-statistics bias that
    sorting adds where exponents are closer than the O(1/√L) noise). Finite-L error bars: the spread
    across trials. −∞ marks exact rank loss (``"relu"``, ``"sparse"``, ``"rademacher"`` at small n).
    """
    L = _check_int(L, "L")
    if not isinstance(sort, (bool, np.bool_)):
        raise ValueError(f"sort: must be True or False, got {sort!r}")
    s = benettin_sums(n, [L], dist, trials, seed)[:, 0, :] / L
    return -np.sort(-s, axis=1) if sort else s


def lyapunov_spectrum_numpy(n: int, L: int, rng: np.random.Generator, dist: str = "gaussian") -> np.ndarray:
    """The plain numpy Benettin loop (one trial, Gaussian or heavy-tailed layers): the benchmark anchor."""
    n, L = _check_n(n), _check_int(L, "L")
    check_memory(8 * 4 * n * n, f"lyapunov_spectrum_numpy(n={n})")
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


# ----------------------------------------------------------------------------- renormalised products

@nb.njit(parallel=True, cache=True, nogil=True)
def _product_block(mats, nlayers, p, tmp, logscale, rec, out, full):
    """P ← J_l P / ‖J_l P‖_F per trial; at recorded depths: log σ_1 (``full=False``) or all log σ_k."""
    trials = mats.shape[0]
    for t in nb.prange(trials):
        for l in range(nlayers):
            np.dot(mats[t, l], p[t], tmp[t])
            f = np.sqrt(np.sum(tmp[t] * tmp[t]))
            p[t, :, :] = tmp[t] / f
            logscale[t] += np.log(f)
            if rec[l] >= 0:
                sv = np.linalg.svd(p[t])[1]
                if full:
                    for k in range(sv.size):
                        out[t, rec[l], k] = np.log(sv[k]) - np.log(sv[0]) if sv[k] > 0 else -np.inf
                else:
                    out[t, rec[l], 0] = logscale[t] + np.log(sv[0])


def _products(n, depths, dist, trials, seed, full, what):
    n = _check_n(n)
    trials = _check_int(trials, "trials")
    dist = _check_dist(dist)
    seed = _check_int(seed, "seed", 0)
    d = _check_depths(depths, "depths")
    L = int(d[-1])
    b = _block_size(trials, n, L)
    check_memory(8 * trials * ((2 * b + 6) * n * n + d.size * n),
                 f"{what}(n={n}, trials={trials}): {trials} × (2 × {b} layers + 6) × {n}×{n} float64")
    p = np.empty((trials, n, n))
    p[:] = np.eye(n)
    tmp, logscale = np.empty((trials, n, n)), np.zeros(trials)
    out = np.empty((trials, d.size, n if full else 1))
    gens = [_trial_gens(seed, t) for t in range(trials)]
    with _blas_single_thread():
        for start, nb_, mats in _layer_blocks(gens, dist, trials, b, n, L):
            _product_block(mats, nb_, p, tmp, logscale, _record_map(d, start, nb_), out, full)
    return out


def log_top_singular(n: int, depths, dist: str = "gaussian", trials: int = 8, seed: int = 0) -> np.ndarray:
    """Exact log‖J_L ⋯ J_1‖₂ at each depth (RD Cor 1), (trials, len(depths)), via the renormalised product.

    P ← J_l P / ‖J_l P‖_F with the log-scales accumulated; log σ_1 = Σ log-scales + log σ_1(P).
    The layers are the same as those of :func:`benettin_sums` with the same arguments.
    """
    return _products(n, depths, dist, trials, seed, False, "log_top_singular")[:, :, 0]


def explicit_log_ratios(n: int, depths, dist: str = "gaussian", trials: int = 8, seed: int = 0) -> np.ndarray:
    """log(σ_k/σ_1) from the SVD of the renormalised explicit product, (trials, len(depths), n).

    No overflow, but the SVD of the product resolves σ_k/σ_1 only down to ~1e−16: the ratios saturate
    at the float64 floor once L·μ_k ≳ 37. This is the computation the Benettin recursion replaces; the
    centralization check uses it as its negative control.
    """
    return _products(n, depths, dist, trials, seed, True, "explicit_log_ratios")


# ----------------------------------------------------------------------------- cached experiments

def lyapunov_data(ns, checkpoints, trials: int, seed: int = 0, dist: str = "gaussian") -> dict:
    """Benettin sums for each n in ``ns`` ("sums_<n>": (trials, len(checkpoints), n), QR order), cached on disk."""
    from sims.cache import cached

    cp = [int(c) for c in checkpoints]
    params = {"version": 2, "ns": [int(n) for n in ns], "cp": cp, "trials": int(trials), "seed": int(seed),
              "dist": dist}
    return cached("rd_lyapunov", params, lambda: {
        f"sums_{n}": benettin_sums(int(n), cp, dist, trials, seed + i) for i, n in enumerate(ns)})


def centralization_data(ns, checkpoints, dists, trials: int, seed: int = 0, explicit: bool = False) -> dict:
    """Benettin sums (trials, len(checkpoints), n) per size and law ("sums_<n>_<dist>"), cached on disk.

    ``explicit=True``: log σ_k/σ_1 of the renormalised explicit product instead (:func:`explicit_log_ratios`).
    """
    from sims.cache import cached

    cp = [int(c) for c in checkpoints]
    params = {"version": 2, "ns": [int(n) for n in ns], "cp": cp, "dists": list(dists), "trials": int(trials),
              "seed": int(seed), "explicit": bool(explicit)}
    fn = explicit_log_ratios if explicit else benettin_sums

    def compute():
        out = {"checkpoints": np.array(cp)}
        for j, n in enumerate(ns):
            for i, d in enumerate(dists):
                out[f"sums_{n}_{d}"] = fn(int(n), cp, d, trials, seed + 17 * i + 1000 * j)
        return out

    return cached("rd_centralization", params, compute)


def top_singular_data(ns, depths, trials: int, seed: int = 0) -> dict:
    """log‖J_L ⋯ J_1‖₂ for Gaussian layers ("log_top_<n>": (trials, len(depths))), cached on disk."""
    from sims.cache import cached

    params = {"version": 2, "ns": [int(n) for n in ns], "depths": [int(d) for d in depths], "trials": int(trials),
              "seed": int(seed)}
    return cached("rd_top_singular", params, lambda: {
        f"log_top_{n}": log_top_singular(int(n), depths, "gaussian", trials, seed + i) for i, n in enumerate(ns)})
