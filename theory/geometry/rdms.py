"""Representational similarity analysis: dissimilarity matrices (RDMs) and their comparisons.

RDM of a representation X (n conditions × p features), the n(n − 1)/2 entries d_ij, i < j, in row-major order
(scipy's ``pdist`` order; rsatoolbox's ``get_vectors``), by :func:`rdm`:

* "sqeuclidean": ‖x_i − x_j‖² (rsatoolbox's "euclidean" RDM is this divided by p); "euclidean": ‖x_i − x_j‖;
* "correlation": 1 − Pearson r of the two patterns across features (rsatoolbox's "correlation");
* "cosine": 1 − cos∠(x_i, x_j) of the uncentred patterns.

Distances are computed from the Gram matrix of the centred data (distances do not change under a translation)
in row blocks: d² = a_i + a_j − 2z_iᵀz_j, clipped at 0 — absolute error ~ε·(a_i + a_j), where the Gram
identity of the uncentred data would lose ε·‖offset‖². Correlation and cosine distances are 1 − u_iᵀu_j of the
normalised (centred across features, for correlation) patterns: absolute error ~ε.

Comparisons of two RDM vectors a, b (:func:`compare_rdms`; Diedrichsen & Kriegeskorte 2017, Diedrichsen et al.
2021 for the whitened ones; rsatoolbox's ``compare`` methods of the same names):

* "cosine": aᵀb/(‖a‖‖b‖); "corr": Pearson r of a and b; "spearman": Pearson r of their ranks (ties averaged);
* "cosine_cov" (whitened cosine, rsatoolbox's with ``sigma_k = None``): the cosine under the inner product
  V⁻¹, V the covariance of distance estimates of iid patterns (Diedrichsen et al. 2021, Eq 5). It equals
  ⟨G_a, G_b⟩_F/(‖G_a‖_F‖G_b‖_F) of the double-centred second-moment matrices G = −½HDH (D the square RDM,
  zero diagonal), which is how it is computed; "corr_cov": the same after subtracting each vector's mean.

For squared Euclidean RDMs of two representations of the same samples every comparison but "spearman" is a
function of the centred cross-moments (K = X_cX_cᵀ, a_i = K_ii; L, b_i for Y; Σ_{i<j} over the M = n(n − 1)/2
pairs):  Σ_{i<j} d^X_ij d^Y_ij = n·Σa_ib_i + Σa·Σb + 2‖X_cᵀY_c‖_F²,  Σ_{i<j} d^X_ij = n·Σa,  and
−½HD^XH = K, so "cosine_cov" is the biased linear CKA of X and Y, and "corr_cov" uses K − (Σa/(n − 1))·H
(the mean distance 2Σa/(n − 1) removed from the off-diagonal entries), with ⟨K, H⟩ = Σa and ⟨H, H⟩ = n − 1.
:func:`rsa` uses this route (:func:`rsa_from_moments`, no n×n matrix, any n) for ``metric="sqeuclidean"``.
"""
from __future__ import annotations

import numpy as np
from scipy.stats import rankdata

from theory.collapse.stats import unscale
from theory.geometry._blocks import BLOCK_BYTES
from theory.geometry.kernel import _centred, _pair_distances

METRICS = ("sqeuclidean", "euclidean", "correlation", "cosine")
METHODS = ("cosine", "corr", "cosine_cov", "corr_cov", "spearman")


def _normalised_rows(X, centre: bool) -> np.ndarray:
    from theory.geometry._blocks import float_block, lazy_features
    A = lazy_features(X, "X", 2, " for a dissimilarity")
    n, p = A.shape
    out = np.empty((n, p))
    step = max(1, BLOCK_BYTES // (8 * p))
    for s in range(0, n, step):
        B = float_block(A, slice(s, min(s + step, n)), slice(None), "X")
        e = np.frexp(np.max(np.abs(B), axis=1))[1]  # per-row power of two: cosine and correlation are scale-free
        B = np.ldexp(B, -e[:, None])
        if centre:
            B = B - B.mean(axis=1, keepdims=True)
            B = B - B.mean(axis=1, keepdims=True)
        nrm = np.sqrt(np.einsum("ij,ij->i", B, B))
        if not np.all(nrm > 0):
            i = s + int(np.flatnonzero(~(nrm > 0))[0])
            what = "constant across features" if centre else "all zero"
            raise ValueError(f"X: pattern (row) {i} is {what}: its {'correlation' if centre else 'cosine'} distance "
                             "is undefined")
        out[s:s + B.shape[0]] = B / nrm[:, None]
    return out


def rdm(X, metric: str = "sqeuclidean") -> np.ndarray:
    """The RDM of X (n, p) as the n(n − 1)/2 entries d_ij, i < j (module doc). "sqeuclidean"/"euclidean" in the
    features' (squared) units (a ValueError if they leave float64); "correlation"/"cosine" in [0, 2]."""
    if metric not in METRICS:
        raise ValueError(f"metric: one of {METRICS}, got {metric!r}")
    if metric in ("sqeuclidean", "euclidean"):
        Z, e = _centred(X, "X", 2, " for a dissimilarity")
        d2 = _pair_distances(Z)
        if metric == "euclidean":
            return unscale(np.sqrt(d2), e, "X: distances")
        return unscale(d2, 2 * e, "X: squared distances")
    U = _normalised_rows(X, metric == "correlation")
    n = U.shape[0]
    out = np.empty(n * (n - 1) // 2)
    k = 0
    step = max(1, BLOCK_BYTES // (8 * n))
    for s in range(0, n - 1, step):
        t = min(s + step, n - 1)
        G = U[s:t] @ U.T
        for i in range(s, t):
            row = G[i - s, i + 1:]
            out[k:k + row.size] = 1.0 - row
            k += row.size
    return np.clip(out, 0.0, 2.0)


def _rdm_vector(v, name: str) -> tuple[np.ndarray, int]:
    from theory.collapse.stats import check_real_numeric
    from theory.validate import check_finite
    a = np.asarray(check_real_numeric(v, name), dtype=np.float64)
    if a.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D RDM vector (the n(n − 1)/2 entries i < j), got shape {a.shape}")
    n = int(round((1 + np.sqrt(1 + 8 * a.size)) / 2))
    if n < 3 or n * (n - 1) // 2 != a.size:
        raise ValueError(f"{name}: length {a.size} is not n(n − 1)/2 for an n >= 3")
    check_finite(a, name)
    return a, n


def _cos(x: np.ndarray, y: np.ndarray, what: str) -> float:
    nx, ny = np.sqrt(x @ x), np.sqrt(y @ y)
    for v, name in ((nx, "a"), (ny, "b")):
        if not v > 0:
            raise ValueError(f"{name}: the RDM vector is {what}; the comparison is undefined")
    return float(np.clip((x / nx) @ (y / ny), -1.0, 1.0))


def _second_moment(v: np.ndarray, n: int) -> np.ndarray:
    """G = −½HDH of the square RDM D (zero diagonal) of the vector v."""
    D = np.zeros((n, n))
    iu = np.triu_indices(n, 1)
    D[iu] = v
    D += D.T
    r = D.mean(axis=0)
    return -0.5 * (D - r[:, None] - r[None, :] + r.mean())


def compare_rdms(a, b, method: str = "cosine") -> float:
    """Similarity of two RDM vectors of the same n conditions: "cosine", "corr", "spearman", "cosine_cov" or
    "corr_cov" (whitened; module doc). The whitened methods hold two n×n matrices."""
    if method not in METHODS:
        raise ValueError(f"method: one of {METHODS}, got {method!r}")
    (x, n), (y, m) = _rdm_vector(a, "a"), _rdm_vector(b, "b")
    if n != m:
        raise ValueError(f"b: an RDM of {m} conditions, a has {n}")
    sx = np.ldexp(x, -int(np.frexp(np.max(np.abs(x)))[1]))  # each vector's scale drops out
    sy = np.ldexp(y, -int(np.frexp(np.max(np.abs(y)))[1]))
    if method == "cosine":
        return _cos(sx, sy, "zero")
    if method == "spearman":
        rx, ry = rankdata(sx), rankdata(sy)
        return _cos(rx - rx.mean(), ry - ry.mean(), "constant")
    if method in ("corr", "corr_cov"):
        sx, sy = sx - sx.mean(), sy - sy.mean()
    if method == "corr":
        return _cos(sx, sy, "constant")
    Ga, Gb = _second_moment(sx, n), _second_moment(sy, n)
    return _cos(Ga.ravel(), Gb.ravel(), "zero after double centring")


def _moment_sums(t: dict) -> dict:
    n = t["n"]
    M = n * (n - 1) / 2.0
    s = {"xy": n * t["wxy"] + t["tx"] * t["ty"] + 2.0 * t["fxy"], "xx": n * t["wxx"] + t["tx"] ** 2 + 2.0 * t["fxx"],
         "yy": n * t["wyy"] + t["ty"] ** 2 + 2.0 * t["fyy"], "x": n * t["tx"], "y": n * t["ty"], "M": M}
    return s


def rsa_from_moments(moments, method: str = "cosine") -> float:
    """The comparison ``method`` ("cosine", "corr", "cosine_cov", "corr_cov") of the squared Euclidean RDMs of
    the two sides of a :class:`~theory.geometry.moments.CrossMoments`, from its centred sums (module doc)."""
    from theory.geometry._hsic import _terms_from_moments
    from theory.geometry.moments import CrossMoments
    if not isinstance(moments, CrossMoments):
        raise TypeError(f"moments: expected a CrossMoments, got {type(moments).__name__}")
    if method not in METHODS or method == "spearman":
        raise ValueError(f"method: one of {METHODS[:4]} from moments (ranks need the RDMs), got {method!r}")
    if moments.n < 3:
        raise ValueError(f"moments: an RDM comparison needs at least 3 samples, got n = {moments.n}")
    return _from_terms(_terms_from_moments(moments.centred()), method)


def _from_terms(t: dict, method: str) -> float:
    n = t["n"]
    for side in ("x", "y"):
        if not t["t" + side] > 0:
            raise ValueError(f"{side.upper()}: every feature is constant: its RDM is zero and the comparison undefined")
    if method == "cosine_cov":
        return float(np.clip(t["fxy"] / np.sqrt(t["fxx"]) / np.sqrt(t["fyy"]), -1.0, 1.0))
    if method == "corr_cov":
        ax, ay = t["tx"] / (n - 1.0), t["ty"] / (n - 1.0)
        gxy = t["fxy"] - ay * t["tx"] - ax * t["ty"] + ax * ay * (n - 1.0)
        gxx = t["fxx"] - 2.0 * ax * t["tx"] + ax * ax * (n - 1.0)
        gyy = t["fyy"] - 2.0 * ay * t["ty"] + ay * ay * (n - 1.0)
        return _ratio(gxy, gxx, gyy)
    s = _moment_sums(t)
    if method == "cosine":
        return _ratio(s["xy"], s["xx"], s["yy"])
    M = s["M"]
    return _ratio(s["xy"] - s["x"] * s["y"] / M, s["xx"] - s["x"] ** 2 / M, s["yy"] - s["y"] ** 2 / M)


def _ratio(xy: float, xx: float, yy: float) -> float:
    for v, name in ((xx, "X"), (yy, "Y")):
        if not v > 0:
            raise ValueError(f"{name}: the RDM has no variance left after centring; the comparison is undefined")
    return float(np.clip(xy / np.sqrt(xx) / np.sqrt(yy), -1.0, 1.0))


def rsa(X, Y, metric: str = "sqeuclidean", method: str = "cosine") -> float:
    """Compare the RDMs of X (n, p) and Y (n, q) of the same n conditions. ``metric="sqeuclidean"`` with any
    ``method`` but "spearman": from streamed cross-moments (:func:`rsa_from_moments`, no n×n matrix); otherwise
    the two RDMs are built (:func:`rdm`) and compared (:func:`compare_rdms`)."""
    if metric not in METRICS:
        raise ValueError(f"metric: one of {METRICS}, got {metric!r}")
    if method not in METHODS:
        raise ValueError(f"method: one of {METHODS}, got {method!r}")
    if metric == "sqeuclidean" and method != "spearman":
        from theory.geometry.cka import _streamed_terms
        t, _, _ = _streamed_terms(X, Y, 3, " for an RDM comparison")
        return _from_terms(t, method)
    from theory.geometry._blocks import lazy_features
    from theory.geometry._inputs import same_rows
    same_rows(lazy_features(X, "X", 3, " for an RDM comparison"), lazy_features(Y, "Y", 3, " for an RDM comparison"))
    return compare_rdms(rdm(X, metric), rdm(Y, metric), method)
