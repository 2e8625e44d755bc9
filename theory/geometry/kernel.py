"""Kernel CKA and HSIC with an RBF (or linear) kernel, three HSIC estimators, exact from n×n kernels in row blocks.

Kernels (x, y rows of the representation, centred and divided by a power of two first: every quantity here is
invariant to a translation, and the bandwidth carries the scale):

* RBF: k(x, x') = exp(−‖x − x'‖²/(2σ²)) (Kornblith et al. 2019, Sec 3 "RBF CKA"); linear: k(x, x') = xᵀx'.
* Bandwidth σ (``sigma``): a number (in the features' units), or a median heuristic (:func:`median_bandwidth`):
  "median" — the median of the n(n − 1)/2 distances ‖x_i − x_j‖, i < j (repsim's ``rbf`` kernel); "kornblith"
  — the square root of the median of the n×n squared-distance matrix, its n zeros included (Kornblith et al.
  2019's reference code, numpy's median); "ckatorch" — the same with the lower of the two middle values
  (``torch.median``, ckatorch's ``rbf_kernel``). ``scale`` multiplies a heuristic σ (ckatorch's ``threshold``).

HSIC estimators of kernels K, L (n ≥ 4 for the last two), all written with the doubly centred Kc = HKH, Lc = HLH:

* "gretton" (biased; Gretton et al. 2005): HSIC₀ = tr(KHLH)/(n − 1)² = ⟨Kc, Lc⟩/(n − 1)²;
* "song" (unbiased; Song et al. 2012, Thm 2; "debiased CKA", Nguyen et al. 2021): Song's formula on K̃, L̃ with
  zeroed diagonals. Its U-statistic kernel ¼(k₁₂ + k₃₄ − k₁₃ − k₂₄)(l₁₂ + l₃₄ − l₁₃ − l₂₄) does not change when
  K_ij (i ≠ j) moves by u_i + u_j + c, and Kc = K − r1ᵀ/n − 1rᵀ/n + s/n² is such a move (r = K1, s = 1ᵀK1),
  so HSIC₁(K, L) = HSIC₁(Kc, Lc); with Kc1 = 0 this is
      n(n − 3)·HSIC₁ = ⟨Kc, Lc⟩ + tr Kc·tr Lc/((n − 1)(n − 2)) − n/(n − 2)·Σ_i Kc_ii Lc_ii,
  the formula of :mod:`theory.geometry.cka` with the Gram matrices of the kernel;
* "lange" (Lange et al. 2023, as repsim implements it): 2/(n(n − 3))·Σ_{i>j} Kc_ij Lc_ij
  = (⟨Kc, Lc⟩ − Σ_i Kc_ii Lc_ii)/(n(n − 3)).

CKA = HSIC(K, L)/√(HSIC(K, K)·HSIC(L, L)) with the same estimator in the numerator and both normalisers
(Kornblith et al. 2019, Sec 3).

Computation (RBF). One pass over row blocks of the n×n kernels (memory O(block·n), never n×n): each block of
squared distances d² = a_i + a_j − 2x_iᵀx_j (clipped at 0, exactly 0 on the diagonal) of the centred data gives
K's block, from which the sums ⟨K, L⟩, ⟨K, K⟩, ⟨L, L⟩, the row sums K1, L1 and the diagonal are accumulated; the
centred sums follow from ⟨Kc, Lc⟩ = ⟨K, L⟩ − (2/n)(K1)ᵀ(L1) + (1ᵀK1)(1ᵀL1)/n² and (Kc)_ii = K_ii − 2(K1)_i/n +
1ᵀK1/n². The constant that centring removes is taken out of K first: where the mean distance is small next to
σ (mean d²/(2σ²) < ln 2) the block holds K − 1 = expm1(−d²/(2σ²)), exact to rounding where K ≈ 1, else K itself,
so that the cancellation in those identities stays a small factor above ε. Linear kernels go through
:func:`theory.geometry.cka._streamed_terms` (no n×n matrix when n ≥ p). Cost O(n²(p + q)); the "median"
heuristics hold the n(n − 1)/2 distances.
"""
from __future__ import annotations

import numpy as np

from theory.geometry._blocks import BLOCK_BYTES, float_block, lazy_features
from theory.geometry._inputs import centre_scale, same_rows
from theory.geometry._hsic import _cka, _hsic_parts
from theory.geometry.cka import _streamed_terms

ESTIMATORS = ("gretton", "song", "lange")
CONVENTIONS = ("median", "kornblith", "ckatorch")


def _check_estimator(estimator) -> str:
    if estimator not in ESTIMATORS:
        raise ValueError(f"estimator: one of {ESTIMATORS} (biased Gretton, unbiased Song, Lange), got {estimator!r}")
    return estimator


def _check_kernel(kernel) -> str:
    if kernel not in ("rbf", "linear"):
        raise ValueError(f"kernel: 'rbf' or 'linear', got {kernel!r}")
    return kernel


def _positive(v, name: str) -> float:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)) \
            or not np.isfinite(v) or v <= 0:
        raise ValueError(f"{name}: must be a finite number > 0, got {v!r}")
    return float(v)


def _centred(X, name: str, min_rows: int = 2, why: str = "") -> tuple[np.ndarray, int]:
    """(Z, e): the centred data divided by 2^e (an (n, p) float64 copy), read in blocks of columns."""
    A = lazy_features(X, name, min_rows, why)
    n, p = A.shape
    width = max(16, BLOCK_BYTES // (8 * n))
    parts = [centre_scale(float_block(A, slice(None), slice(s, min(s + width, p)), name)) for s in range(0, p, width)]
    nz = [e for Z, e in parts if np.any(Z)]
    if not nz:
        return np.zeros((n, p)), 0
    E = max(nz)
    return np.hstack([np.ldexp(Z, e - E) if np.any(Z) else Z for Z, e in parts]), E


def _pair_distances(Z: np.ndarray) -> np.ndarray:
    """The n(n − 1)/2 squared distances ‖z_i − z_j‖², i < j, in row-major order (scipy's pdist order)."""
    n = Z.shape[0]
    a = np.einsum("ij,ij->i", Z, Z)
    out = np.empty(n * (n - 1) // 2)
    k = 0
    step = max(1, BLOCK_BYTES // (8 * n))
    for s in range(0, n - 1, step):
        t = min(s + step, n - 1)
        G = Z[s:t] @ Z.T
        D = a[s:t, None] + a[None, :] - 2.0 * G
        for i in range(s, t):
            row = D[i - s, i + 1:]
            out[k:k + row.size] = row
            k += row.size
    return np.clip(out, 0.0, None)


def _median_sq(d2: np.ndarray, n: int, convention: str) -> float:
    """Median of the squared distances by ``convention`` (module doc); d2 the i < j values."""
    if convention == "median":
        return float(np.median(np.sqrt(d2))) ** 2
    d2 = np.sort(d2)
    total = n * n  # n zeros, then every pair twice

    def kth(k):  # the k-th (0-based) of the sorted n×n multiset
        return 0.0 if k < n else float(d2[(k - n) // 2])
    if total % 2:
        return kth(total // 2)
    lo, hi = kth(total // 2 - 1), kth(total // 2)
    return lo if convention == "ckatorch" else 0.5 * (lo + hi)


def median_bandwidth(X, convention: str = "median") -> float:
    """The RBF bandwidth σ of a median heuristic (module doc: "median", "kornblith", "ckatorch"), in the
    features' units. Holds the n(n − 1)/2 pairwise distances; a ValueError when they are all zero."""
    if convention not in CONVENTIONS:
        raise ValueError(f"convention: one of {CONVENTIONS}, got {convention!r}")
    Z, e = _centred(X, "X")
    return _sigma_scaled(Z, convention, "X") * 2.0 ** e


def _sigma_scaled(Z: np.ndarray, convention: str, name: str) -> float:
    m = _median_sq(_pair_distances(Z), Z.shape[0], convention)
    if not m > 0:
        raise ValueError(f"{name}: the median pairwise distance is zero (most samples coincide); pass sigma as a "
                         "number")
    return float(np.sqrt(m))


def _resolve_sigma(sigma, scale, Z: np.ndarray, e: int, name: str) -> float:
    """σ in the scaled units of Z (the data divided by 2^e)."""
    if isinstance(sigma, str):
        if sigma not in CONVENTIONS:
            raise ValueError(f"sigma: a number > 0 or one of {CONVENTIONS}, got {sigma!r}")
        with np.errstate(over="ignore", under="ignore"):
            v = _positive(scale, "scale") * _sigma_scaled(Z, sigma, name)
        what = "scale"
    else:
        s = _positive(sigma, "sigma")
        with np.errstate(over="ignore", under="ignore"):
            v = float(np.ldexp(s, -e))
        what = "sigma"
    v = float(v)
    if not (np.isfinite(v) and v > 0 and 1e-300 < v * v < 1e300):
        raise ValueError(f"{what}: gives a bandwidth {v!r} relative to {name}'s spread (2^{e}) whose 1/(2σ²) "
                         "leaves float64")
    return float(v)


def _rbf_terms(Zx, sx, Zy, sy) -> dict:
    """The centred-kernel sums of the module doc, from one pass over row blocks of the two RBF kernels."""
    n = Zx.shape[0]
    ax, ay = np.einsum("ij,ij->i", Zx, Zx), np.einsum("ij,ij->i", Zy, Zy)
    gx, gy = 0.5 / (sx * sx), 0.5 / (sy * sy)
    # mean pairwise d² = 2n/(n − 1)·mean a (centred data): decide K − 1 or K once per kernel
    mx = 2.0 * ax.sum() / (n - 1.0) * gx
    my = 2.0 * ay.sum() / (n - 1.0) * gy
    shift_x, shift_y = mx < np.log(2.0), my < np.log(2.0)
    rx, ry = np.zeros(n), np.zeros(n)
    kxy = kxx = kyy = 0.0
    step = max(1, BLOCK_BYTES // (8 * n))
    for s in range(0, n, step):
        t = min(s + step, n)
        Kb = _rbf_block(Zx, ax, s, t, gx, shift_x)
        Lb = _rbf_block(Zy, ay, s, t, gy, shift_y)
        rx[s:t], ry[s:t] = Kb.sum(axis=1), Lb.sum(axis=1)
        kxy += float(np.vdot(Kb, Lb))
        kxx += float(np.vdot(Kb, Kb))
        kyy += float(np.vdot(Lb, Lb))
    dx = np.zeros(n) if shift_x else np.ones(n)  # the kernel's diagonal as stored: K_ii − 1 = 0 or K_ii = 1
    dy = np.zeros(n) if shift_y else np.ones(n)
    return _centred_sums(n, rx, ry, dx, dy, kxy, kxx, kyy)


def _rbf_block(Z, a, s, t, g, shift):
    D = a[s:t, None] + a[None, :] - 2.0 * (Z[s:t] @ Z.T)
    np.maximum(D, 0.0, out=D)
    idx = np.arange(s, t)
    D[idx - s, idx] = 0.0
    D *= -g
    return np.expm1(D, out=D) if shift else np.exp(D, out=D)


def _centred_sums(n, rx, ry, dx, dy, kxy, kxx, kyy) -> dict:
    """The terms of :func:`theory.geometry.cka._hsic_parts` for Kc = HKH, Lc = HLH from uncentred sums."""
    sx, sy = float(rx.sum()), float(ry.sum())
    cdx = dx - 2.0 * rx / n + sx / n ** 2  # diag(Kc)
    cdy = dy - 2.0 * ry / n + sy / n ** 2

    def centred(k, ra, rb, sa, sb):
        return k - 2.0 / n * float(ra @ rb) + sa * sb / n ** 2
    return {"n": n, "fxy": centred(kxy, rx, ry, sx, sy), "fxx": centred(kxx, rx, rx, sx, sx),
            "fyy": centred(kyy, ry, ry, sy, sy), "tx": float(cdx.sum()), "ty": float(cdy.sum()),
            "wxy": float(cdx @ cdy), "wxx": float(cdx @ cdx), "wyy": float(cdy @ cdy)}


def _parts(t: dict, estimator: str) -> tuple[float, float, float]:
    if estimator == "lange":
        d = t["n"] * (t["n"] - 3.0)
        return (t["fxy"] - t["wxy"]) / d, (t["fxx"] - t["wxx"]) / d, (t["fyy"] - t["wyy"]) / d
    return _hsic_parts(t, estimator == "song")


def _kernel_terms(X, Y, kernel: str = "rbf", sigma="median", scale: float = 1.0, estimator: str = "gretton"):
    """(terms, units): the centred-kernel sums of X and Y (module doc) and the log2 factor that brings an HSIC in
    the scaled units back to the features' (0 for RBF kernels, which are dimensionless)."""
    kernel, estimator = _check_kernel(kernel), _check_estimator(estimator)
    k, why = (2, " for a centred HSIC") if estimator == "gretton" else \
        (4, f" for the {estimator} HSIC estimator (its normaliser n(n − 3) vanishes below 4)")
    if kernel == "linear":
        t, ex, ey = _streamed_terms(X, Y, k, why)
        return t, 2 * (ex + ey)
    Ax, Ay = lazy_features(X, "X", k, why), lazy_features(Y, "Y", 1)
    same_rows(Ax, Ay)
    (Zx, ex), (Zy, ey) = _centred(Ax, "X", k, why), _centred(Ay, "Y")
    sig = sigma if isinstance(sigma, (tuple, list)) else (sigma, sigma)
    if len(sig) != 2:
        raise ValueError(f"sigma: a number, a heuristic name or a pair (sigma_x, sigma_y), got {sigma!r}")
    sx, sy = _resolve_sigma(sig[0], scale, Zx, ex, "X"), _resolve_sigma(sig[1], scale, Zy, ey, "Y")
    return _rbf_terms(Zx, sx, Zy, sy), 0


def kernel_hsic(X, Y, kernel: str = "rbf", sigma="median", scale: float = 1.0, estimator: str = "gretton") -> float:
    """HSIC(X, Y) with an RBF or linear kernel and one of the estimators "gretton", "song", "lange" (module doc).
    RBF: dimensionless; linear: in the features' units (HSIC₀ and HSIC₁ equal :func:`~theory.geometry.linear_hsic`)."""
    from theory.collapse.stats import unscale

    t, units = _kernel_terms(X, Y, kernel, sigma, scale, estimator)
    return unscale(_parts(t, estimator)[0], units, "hsic")


def kernel_cka(X, Y, kernel: str = "rbf", sigma="median", scale: float = 1.0, estimator: str = "gretton") -> float:
    """CKA of X (n, p) and Y (n, q) with an RBF (default, bandwidth ``sigma``·``scale``) or linear kernel and the
    HSIC ``estimator`` "gretton" (biased, default), "song" (unbiased: debiased CKA) or "lange" (module doc),
    the same estimator in the numerator and both normalisers. A ValueError where an estimator's HSIC(X, X) or
    HSIC(Y, Y) is ≤ 0 (too few samples) makes CKA undefined."""
    t, _ = _kernel_terms(X, Y, kernel, sigma, scale, estimator)
    if kernel == "rbf":
        for side in ("x", "y"):
            if not t["f" + side * 2] > 0:
                raise ValueError(f"{side.upper()}: its RBF kernel matrix is constant (all samples equal, or sigma "
                                 "far outside the spread of the data); CKA is undefined")
    if estimator == "lange":
        hxy, hxx, hyy = _parts(t, estimator)
        for h, name in ((hxx, "X"), (hyy, "Y")):
            if not h > 0:
                raise ValueError(f"{name}: the Lange HSIC({name}, {name}) is {h:.3g} <= 0 with n = {t['n']} samples "
                                 "(constant features, or too few samples); CKA is undefined here")
        return float(hxy / np.sqrt(hxx) / np.sqrt(hyy))
    return _cka(t, estimator == "song")
