"""LiDAR (Thilak et al. 2024): the effective rank of the linear-discriminant matrix of a surrogate task.

Data: n objects (the surrogate classes), each seen in q augmentations, embeddings z_ij ∈ R^p: an (n, q, p) array,
or (n·q, p) rows grouped by object (``n_augs=q``). With the object means μ_i and their mean μ:

    Σ_b = 1/(n − 1)·Σ_i (μ_i − μ)(μ_i − μ)ᵀ,    Σ_w = 1/(n(q − 1))·Σ_i Σ_j (z_ij − μ_i)(z_ij − μ_i)ᵀ + δI,
    Σ_lidar = Σ_w^−½ Σ_b Σ_w^−½,    LiDAR = exp(−Σ_k p_k log p_k),  p_k = λ_k/Σλ + ε,

λ the eigenvalues of Σ_lidar (the generalised eigenvalues of (Σ_b, Σ_w), computed as such: a Cholesky factor
of Σ_w, never an explicit inverse square root). δ ≥ 0 (``delta``) is absolute, in the features' squared units;
ε (``eps``) defaults to 0 with 0·log 0 = 0, so k equal eigenvalues give exactly k.

``convention="reptrix"`` reproduces reptrix's ``get_lidar``: Σ_b un-normalised (Σ_i, no 1/(n − 1)), Σ_w the
mean over objects of the within-object scatter Σ_j (no 1/(q − 1)), δ added, ε = 1e-7, and — its departure from
the definition — the spectrum taken as the PCA explained-variance ratios of Σ_lidar treated as a data matrix
(the squared singular values of its column-centred rows), not Σ_lidar's eigenvalues.

Computation: one pass over blocks of objects, each converted to float64 on its own; within-object residuals
about each object's mean (two passes per object) and the means about their own mean, all divided by one power
of two (δ rescaled with them), so offsets and scales 1e±150 do not matter.
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import eigh

from theory.collapse.stats import check_real_numeric
from theory.geometry._blocks import BLOCK_BYTES
from theory.geometry._inputs import centre_scale_mean, top_exponent


def _as_objects(Z, n_augs) -> np.ndarray:
    a = check_real_numeric(Z, "Z")
    if a.ndim == 2:
        if isinstance(n_augs, bool) or not isinstance(n_augs, (int, np.integer)) or n_augs < 2:
            raise ValueError(f"n_augs: an integer >= 2 (the augmentations per object) is needed with 2-D Z, got "
                             f"{n_augs!r}")
        if a.shape[0] % int(n_augs):
            raise ValueError(f"n_augs: {a.shape[0]} rows are not a whole number of objects of {n_augs} rows each")
        a = a.reshape(a.shape[0] // int(n_augs), int(n_augs), a.shape[1])
    elif a.ndim != 3:
        raise ValueError(f"Z: expected an (objects, augmentations, features) array or 2-D rows with n_augs, got "
                         f"shape {a.shape}")
    elif n_augs is not None and n_augs != a.shape[1]:
        raise ValueError(f"n_augs: {n_augs!r} differs from Z's second axis {a.shape[1]}")
    n, q, p = a.shape
    if n < 2 or q < 2 or p < 1:
        raise ValueError(f"Z: needs at least 2 objects, 2 augmentations each and 1 feature, got shape {a.shape}")
    return a


def _block(a: np.ndarray, s: int, t: int) -> np.ndarray:
    b = np.asarray(a[s:t], dtype=np.float64)
    if not np.all(np.isfinite(b)):
        i = int(np.argwhere(~np.isfinite(b))[0][0]) + s
        raise ValueError(f"Z: non-finite values (NaN or Inf); first in object {i}")
    return b


def _scatter(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """(W, B, e): the within-object scatter Σ_iΣ_j and the scatter of the object means Σ_i about their mean, of
    the data divided by 2^e."""
    n, q, p = a.shape
    step = max(1, BLOCK_BYTES // (8 * q * p))
    means = np.empty((n, p))
    e_res = []
    zmax = 0.0
    for s in range(0, n, step):  # pass 1: object means (two-pass each) and the residuals' exponent
        b = _block(a, s, min(s + step, n))
        m = b.mean(axis=1)
        m += (b - m[:, None]).mean(axis=1)
        means[s:s + b.shape[0]] = m
        e_res.append(top_exponent(b - m[:, None]))
        zmax = max(zmax, float(np.max(np.abs(b))))
    M, e_mean, _ = centre_scale_mean(means)
    if not np.any(M) or np.ldexp(1.0, e_mean) <= 8 * np.finfo(np.float64).eps * zmax:
        M = np.zeros_like(M)  # the means differ only by their own rounding (~ε·max|z|): they coincide
    e = max(e_res + [e_mean])
    W = np.zeros((p, p))
    for s in range(0, n, step):  # pass 2: within-object scatter about the means, at the common exponent
        b = _block(a, s, min(s + step, n))
        R = np.ldexp(b - means[s:s + b.shape[0], None], -e).reshape(-1, p)
        W += R.T @ R
    Ms = np.ldexp(M, e_mean - e)
    Ms -= Ms.mean(axis=0)
    return W, Ms.T @ Ms, e


def lidar(Z, n_augs: int | None = None, delta: float = 1e-6, eps: float | None = None,
          convention: str = "lda") -> float:
    """LiDAR of embeddings Z (n objects, q augmentations, p features), or (n·q, p) with ``n_augs=q`` (module doc).

    ``delta``: δ ≥ 0 added to Σ_w (features' squared units; 0 needs Σ_w positive definite). ``eps``: added to
    each p_k (default 0; 1e-7 under ``convention="reptrix"``). ``convention``: "lda" (the definition) or
    "reptrix" (reptrix's ``get_lidar``, its published test value included)."""
    if convention not in ("lda", "reptrix"):
        raise ValueError(f"convention: 'lda' (Thilak et al.'s definition) or 'reptrix', got {convention!r}")
    if isinstance(delta, (bool, np.bool_)) or not isinstance(delta, (int, float, np.integer, np.floating)) \
            or not np.isfinite(delta) or delta < 0:
        raise ValueError(f"delta: must be a finite number >= 0, got {delta!r}")
    eps = (1e-7 if convention == "reptrix" else 0.0) if eps is None else eps
    if isinstance(eps, (bool, np.bool_)) or not isinstance(eps, (int, float, np.integer, np.floating)) \
            or not 0 <= eps < 1:
        raise ValueError(f"eps: must be a number in [0, 1), got {eps!r}")
    a = _as_objects(Z, n_augs)
    n, q, p = a.shape
    W, B, e = _scatter(a)
    if convention == "lda":
        W, B = W / (n * (q - 1.0)), B / (n - 1.0)
    else:
        W = W / n
    with np.errstate(over="ignore", under="ignore"):
        d = float(np.ldexp(float(delta), -2 * e))
    if not np.isfinite(d):
        raise ValueError("delta: overflows float64 relative to the features' spread (the features are tiny next "
                         "to delta); rescale the features or lower delta")
    Sw = W + d * np.eye(p)
    try:
        lam = eigh(B, Sw, eigvals_only=True) if convention == "lda" else _reptrix_spectrum(B, Sw)
    except np.linalg.LinAlgError:
        raise ValueError("delta: the within-object covariance (+ delta·I) is singular; use delta > 0") from None
    lam = np.clip(lam, 0.0, None)
    tot = float(lam.sum())
    if not tot > 0:
        raise ValueError("Z: the object means coincide (Σ_b = 0): no discriminant spectrum")
    pk = lam / tot + float(eps)
    pk = pk[pk > 0]
    return float(np.exp(-np.sum(pk * np.log(pk))))


def _reptrix_spectrum(B: np.ndarray, Sw: np.ndarray) -> np.ndarray:
    w, V = np.linalg.eigh(Sw)
    if not w[0] > 0:
        raise np.linalg.LinAlgError("singular")
    R = (V / np.sqrt(w)) @ V.T
    L = R @ B @ R
    L = L - L.mean(axis=0)
    return np.linalg.svd(L, compute_uv=False) ** 2
