"""Neural-collapse metrics NC1–NC4 (Papyan, Han & Donoho 2020, "Prevalence of neural collapse", Sec 3 and
Fig 6–9) and the class-distance normalised variance CDNV (Galanti, György & Hutter 2022, Def 1).

Notation: features h ∈ R^p, K classes with n_k samples, class means μ_k, classifier logits z = Wh + b with W
(K, p) and b (K,). Two weightings, both consistent (the centre c, Σ_W and Σ_B use the same weights):

* ``weighting="sample"``: class k weighs π_k = n_k/N. c = μ_G = Σ π_k μ_k (the sample mean),
  Σ_W = (1/N) Σ_i (h_i − μ_{y_i})(…)ᵀ, Σ_B = Σ_k π_k (μ_k − μ_G)(…)ᵀ — VC Eq 1–2 (theory.collapse), so
  NC1 = fuzziness/K there;
* ``weighting="class"`` (default): every class weighs 1/K. c = μ̄ = (1/K) Σ_k μ_k, Σ_W = (1/K) Σ_k Σ_k with Σ_k
  the class-k covariance (1/n_k), Σ_B = (1/K) Σ_k (μ_k − μ̄)(…)ᵀ — Papyan's "Ave_c" read for imbalanced data.

For balanced classes the two coincide with Papyan et al.'s definitions. Metrics:

* :func:`nc1` — Tr(Σ_W Σ_B†)/K (Papyan Fig 6), Σ_B† from the top ``rank`` eigenpairs of Σ_B (default
  min(p, K − 1), the rank of K centred means; a ValueError if that eigenvalue is at rounding level).
* :func:`nc2` — equinorm: std/mean of ‖μ_k − c‖ (Fig 2); equiangularity: mean and std over k ≠ k′ of the
  cosines of μ_k − c (−1/(K − 1) and 0 for a simplex ETF) and Papyan's Avg|cos + 1/(K − 1)| (Fig 3);
  ``etf_distance``: ‖G/‖G‖_F − (I − 11ᵀ/K)/√(K − 1)‖_F with G the Gram matrix of the μ_k − c (Zhu et al. 2021).
* :func:`nc3` — self-duality ‖W/‖W‖_F − M̃/‖M̃‖_F‖_F, M̃ rows μ_k − c (Papyan Fig 5), and, with the bias
  included, ``bias_gap``: the nearest-class-centre rule is the affine classifier m_kᵀ(h − c) − ½‖m_k‖²
  (m_k = μ_k − c), so W = sM̃ is that rule scaled by s only if the effective biases β_k = b_k + w_kᵀc equal
  −(s/2)‖m_k‖² up to a common constant. bias_gap = ‖P(β − β*)‖₂/(√K·s·mean_k‖m_k‖²), P the centring across
  classes, s = ⟨W, M̃⟩/‖M̃‖_F² (None when s ≤ 0: W is not aligned with the means at all).
* :func:`nc4` — the fraction of samples where argmax_k(w_kᵀh + b_k) (bias included) differs from the
  nearest class centre argmin_k ‖h − μ_k‖² (Papyan Fig 7).
* :func:`cdnv` — (Var_i + Var_j)/(2‖μ_i − μ_j‖²), Var_i = mean ‖h − μ_i‖² over class i; mean over i < j.

Numerics: features are centred at their sample mean and divided by one power of two
(:func:`~theory.geometry._inputs.centre_scale`); every metric above is invariant to both, so offsets of
1e6 and scales 1e±150 give the same numbers. Squared distances to centres are computed from centred
vectors, never as ‖h‖² − 2hᵀμ + ‖μ‖² at the features' offset.
"""
from __future__ import annotations

import numpy as np

from theory.collapse.linalg import original_frame
from theory.collapse.metrics import fuzziness
from theory.collapse.stats import ClassStats, check_labels
from theory.geometry._inputs import centre_scale_mean, features


def _weighting(w) -> str:
    if w not in ("sample", "class"):
        raise ValueError(f"weighting: 'sample' (class k weighs n_k/N) or 'class' (every class 1/K), got {w!r}")
    return w


class _Classes:
    """Centred, scaled features with their labels, class counts and class means (module doc)."""

    def __init__(self, H, y, n_classes=None):
        A = features(H, "H", 2)
        ya = np.asarray(y)
        if n_classes is None:
            if ya.ndim == 1 and ya.size and np.issubdtype(ya.dtype, np.integer) and ya.dtype != bool:
                n_classes = max(int(ya.max()) + 1, 2)
            else:
                n_classes = 2  # check_labels names what is wrong
        elif isinstance(n_classes, bool) or not isinstance(n_classes, (int, np.integer)) or n_classes < 2:
            raise ValueError(f"n_classes: must be an integer >= 2, got {n_classes!r}")
        self.K = int(n_classes)
        if self.K > A.shape[0]:
            raise ValueError(f"y: K = {self.K} classes (n_classes, or the largest label + 1) cannot all have samples "
                             f"among N = {A.shape[0]}; every class needs at least one")
        self.y = check_labels(y, A.shape[0], self.K, "y")
        self.counts = np.bincount(self.y, minlength=self.K)
        empty = np.flatnonzero(self.counts == 0)
        if empty.size:
            raise ValueError(f"y: class {int(empty[0])} has no samples ({empty.size} of K = {self.K} classes are "
                             "empty); every class needs at least one")
        self.Hs, self.e, self.origin = centre_scale_mean(A)  # origin: the sample mean, two passes
        self.means = np.zeros((self.K, A.shape[1]))
        np.add.at(self.means, self.y, self.Hs)
        self.means /= self.counts[:, None]
        self.R = self.Hs - self.means[self.y]

    def weights(self, weighting: str) -> np.ndarray:
        return self.counts / self.counts.sum() if weighting == "sample" else np.full(self.K, 1.0 / self.K)

    def centred_means(self, weighting: str) -> tuple[np.ndarray, np.ndarray]:
        """(rows μ_k − c, c) in the scaled frame."""
        c = self.weights(weighting) @ self.means
        return self.means - c, c

    def sigma_w(self, weighting: str) -> np.ndarray:
        rw = 1.0 / self.counts.sum() if weighting == "sample" else 1.0 / (self.K * self.counts[self.y])
        Rw = self.R * np.sqrt(rw)[:, None] if np.ndim(rw) else self.R * np.sqrt(rw)
        return Rw.T @ Rw


def _rank(rank, K: int, p: int) -> int:
    if rank is None:
        return min(p, K - 1)
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or not 1 <= rank <= min(p, K - 1):
        raise ValueError(f"rank: None (min(p, K − 1)) or an int in [1, {min(p, K - 1)}], got {rank!r}")
    return int(rank)


def nc1(H, y=None, weighting: str = "class", rank: int | None = None, n_classes: int | None = None) -> float:
    """NC1 = Tr(Σ_W Σ_B†)/K (Papyan et al. 2020; module doc for the two weightings).

    H (N, p) features and y (N,) labels in [0, K); or a :class:`~theory.collapse.ClassStats` (streamed, one
    pass) with ``weighting="sample"`` (it pools the within-class scatter, so the class weighting, which needs
    each class's own covariance, is not available from it). 0 at exact collapse.
    """
    weighting = _weighting(weighting)
    if isinstance(H, ClassStats):
        if y is not None:
            raise ValueError("y: give labels only with a feature array, not with a ClassStats")
        if weighting != "sample":
            raise ValueError("weighting: a ClassStats pools the within-class scatter, so only weighting='sample' "
                             "is available from it (pass features and labels for 'class')")
        H._require_complete()
        return fuzziness(H, rank=_rank(rank, H.K, H.p)) / H.K
    if y is None:
        raise ValueError("y: labels are required with a feature array")
    d = _Classes(H, y, n_classes)
    r = _rank(rank, d.K, d.Hs.shape[1])
    Mc, _ = d.centred_means(weighting)
    w = d.weights(weighting)
    if not np.any(Mc):
        raise ValueError("nc1: Σ_B = 0 (all class means coincide); NC1 is undefined")
    f = original_frame(Mc * np.sqrt(w)[:, None], d.sigma_w(weighting), np.zeros(Mc.shape[1], dtype=np.int64), w)
    try:
        return f.fuzz_vb(r)[0] / d.K
    except ValueError as exc:
        raise ValueError(f"nc1: {exc}") from None


def nc2(H, y, weighting: str = "class", n_classes: int | None = None) -> dict:
    """NC2: {"equinorm", "cos_mean", "cos_std", "equiangularity", "etf_distance"} (module doc)."""
    weighting = _weighting(weighting)
    d = _Classes(H, y, n_classes)
    Mc, _ = d.centred_means(weighting)
    norms = np.sqrt(np.einsum("ij,ij->i", Mc, Mc))
    if not np.all(norms > 0):
        k = int(np.flatnonzero(norms == 0)[0])
        raise ValueError(f"nc2: class {k}'s mean is the centre itself (‖μ_k − c‖ = 0): its angles are undefined")
    K = d.K
    U = Mc / norms[:, None]
    cos = (U @ U.T)[~np.eye(K, dtype=bool)]
    G = Mc @ Mc.T
    etf = (np.eye(K) - 1.0 / K) / np.sqrt(K - 1.0)
    return {"equinorm": float(np.std(norms) / np.mean(norms)), "cos_mean": float(cos.mean()),
            "cos_std": float(cos.std()), "equiangularity": float(np.mean(np.abs(cos + 1.0 / (K - 1)))),
            "etf_distance": float(np.linalg.norm(G / np.linalg.norm(G) - etf))}


def _classifier(W, b, K: int, p: int) -> tuple[np.ndarray, np.ndarray]:
    W = features(W, "W")
    if W.shape != (K, p):
        raise ValueError(f"W: expected shape (K, p) = {(K, p)} (one row per class), got {W.shape}")
    if b is None:
        raise ValueError("b: the classifier's bias is required (pass zeros for a classifier without one): the "
                         "nearest-centre comparison depends on it")
    b = features(np.reshape(b, (1, -1)) if np.ndim(b) == 1 else b, "b")
    if b.shape != (1, K):
        raise ValueError(f"b: expected shape (K,) = ({K},), got {np.shape(b)}")
    return W, b[0]


def _scaled_classifier(d: _Classes, W, b):
    """(W_s, b_s) acting on the scaled frame: W h + b = W_s h_s + b_s with h = origin + 2^e h_s."""
    W, b = _classifier(W, b, d.K, d.Hs.shape[1])
    with np.errstate(over="ignore"):
        Ws = np.ldexp(W, d.e)
        bs = b + W @ d.origin
    if not (np.all(np.isfinite(Ws)) and np.all(np.isfinite(bs))):
        raise ValueError("W: the logits W h + b overflow float64 for these features")
    return Ws, bs


def nc3(H, y, W, b, weighting: str = "class", n_classes: int | None = None) -> dict:
    """NC3 with the bias included: {"duality", "bias_gap", "scale"} (module doc); ``scale`` is s, W ≈ s·M̃."""
    weighting = _weighting(weighting)
    d = _Classes(H, y, n_classes)
    Mc, c = d.centred_means(weighting)
    Ws, bs = _scaled_classifier(d, W, b)
    nm, nw = np.linalg.norm(Mc), np.linalg.norm(Ws)
    if nm == 0 or nw == 0:
        raise ValueError("nc3: " + ("all class means coincide" if nm == 0 else "W is zero") + ": NC3 is undefined")
    duality = float(np.linalg.norm(Ws / nw - Mc / nm))
    s = float(np.sum(Ws * Mc) / nm ** 2)
    gap = None
    if s > 0:
        sq = np.einsum("ij,ij->i", Mc, Mc)
        g = bs + Ws @ c + 0.5 * s * sq  # β − β*
        gap = float(np.linalg.norm(g - g.mean()) / (np.sqrt(d.K) * s * sq.mean()))
    with np.errstate(over="ignore", under="ignore"):
        scale = float(np.ldexp(s, -2 * d.e))  # W ≈ scale·M̃ in the features' own units
    return {"duality": duality, "bias_gap": gap, "scale": scale}


def nc4(H, y, W, b, n_classes: int | None = None) -> float:
    """NC4: the fraction of samples where the classifier argmax_k(w_kᵀh + b_k) and the nearest class centre
    argmin_k ‖h − μ_k‖² disagree (class means from (H, y); ties go to the lower class index)."""
    d = _Classes(H, y, n_classes)
    Ws, bs = _scaled_classifier(d, W, b)
    clf = np.argmax(d.Hs @ Ws.T + bs, axis=1)
    M = d.means
    ncc = np.argmax(d.Hs @ M.T - 0.5 * np.einsum("ij,ij->i", M, M), axis=1)  # centred frame: no offset cancels
    return float(np.mean(clf != ncc))


def cdnv(H, y, n_classes: int | None = None) -> dict:
    """CDNV (Galanti et al. 2022, Def 1): {"mean" over class pairs i < j, "matrix" (K, K), diagonal 0}."""
    d = _Classes(H, y, n_classes)
    var = np.bincount(d.y, weights=np.einsum("ij,ij->i", d.R, d.R), minlength=d.K) / d.counts
    D = d.means[:, None, :] - d.means[None, :, :]
    dist2 = np.einsum("ijk,ijk->ij", D, D)
    iu = np.triu_indices(d.K, 1)
    if np.any(dist2[iu] == 0):
        i, j = (int(v[np.flatnonzero(dist2[iu] == 0)[0]]) for v in iu)
        raise ValueError(f"cdnv: classes {i} and {j} have the same mean: their CDNV is infinite")
    V = np.zeros((d.K, d.K))
    V[iu] = (var[iu[0]] + var[iu[1]]) / (2.0 * dist2[iu])
    V = V + V.T
    return {"mean": float(V[iu].mean()), "matrix": V}
