"""VC linear probe: the optimal MSE probe loss in closed form (Thm 5.1), for balanced and imbalanced classes,
and an independent least-squares probe to check it against.

Derivation (the proof of VC Thm 5.1, App A.2, with class priors π_k = n_k/N instead of 1/K). For
L(W, b) = (1/2N) Σ_i ‖W h_i + b − e_{y_i}‖² the optimal bias is b = π − Wμ_G, which leaves a least-squares
problem in centred variables: L* = ½ Tr Cov(e_y) − ½ Tr[C Σ_T† Cᵀ] with the cross-covariance
C = (1/N) Σ_i (e_{y_i} − π)(h_i − μ_G)ᵀ, whose row k is π_k(μ_k − μ_G)ᵀ. With Tr Cov(e_y) = 1 − Σ_k π_k²:

    L* = ½(1 − Σ_k π_k²) − ½ Σ_k π_k² (μ_k − μ_G)ᵀ Σ_T† (μ_k − μ_G) = ½(1 − Σπ_k²) − ½ Tr[Σ_T† Σ̃_B],

    Σ̃_B = Σ_k π_k² (μ_k − μ_G)(μ_k − μ_G)ᵀ   (π_k² weights, where Σ_B has π_k).

For π_k = 1/K, Σ̃_B = Σ_B/K and this is Thm 5.1: −Tr[Σ_T†Σ_B]/(2K) + 1/2 − 1/(2K). For imbalanced classes
the probe loss is no longer a function of Tr[Σ_T†Σ_B] (hence of VCI): Σ̃_B ⪯ max_k π_k·Σ_B, so
Tr[Σ_T†Σ̃_B] ≤ max_k π_k·Tr[Σ_T†Σ_B] ≤ max_k π_k·rank Σ_B (Thm 5.2), with equality for balanced classes.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from theory.collapse.linalg import Spectra, check_rtol, trace_pinv
from theory.collapse.stats import as_stats, check_labels, check_real_numeric, pow2_exponent
from theory.validate import check_finite, check_int, check_real


def probe_loss_balanced(trace_tb: float, K: int) -> float:
    """VC Thm 5.1 as printed: −Tr[Σ_T†Σ_B]/(2K) + 1/2 − 1/(2K) (balanced classes)."""
    trace_tb, K = check_real(trace_tb, "trace_tb"), check_int(K, "K", 2)
    return -trace_tb / (2 * K) + 0.5 - 0.5 / K


def _weighted_trace(sp: Spectra, rtol: float) -> float:
    f = sp.inv
    Dw = f.M * np.sqrt(sp.priors)[:, None]  # rows π_k (μ_k − μ_G), since M's rows are √π_k (μ_k − μ_G)
    return trace_pinv(f.sigma_t(), Dw, rtol)[0]


def weighted_trace(stats, labels=None, rtol: float | None = None) -> float:
    """Tr[Σ_T†Σ̃_B] = Σ_k π_k² (μ_k − μ_G)ᵀΣ_T†(μ_k − μ_G) (module doc), in the equilibrated frame."""
    sp = Spectra(as_stats(stats, labels), check_rtol(rtol))
    return _weighted_trace(sp, sp.rtol_t)


def loss_from(sp: Spectra) -> float:
    """The optimal probe loss from the factorisations of one :class:`~theory.collapse.linalg.Spectra`."""
    if sp.st.balanced:
        return probe_loss_balanced(sp.trace_tb(), sp.st.K)
    return 0.5 * (1.0 - float(sp.priors @ sp.priors)) - 0.5 * _weighted_trace(sp, sp.rtol_t)


def probe_loss(stats, labels=None, rtol: float | None = None) -> float:
    """Optimal linear-probe MSE loss min_{W,b} (1/2N) Σ ‖W h + b − e_y‖², closed form (VC Thm 5.1).

    Balanced: −Tr[Σ_T†Σ_B]/(2K) + 1/2 − 1/(2K) (Thm 5.1). General priors π_k = n_k/N (same derivation, see
    the module doc): ½(1 − Σπ_k²) − ½ Tr[Σ_T†Σ̃_B] with Σ̃_B = Σ_k π_k²(μ_k − μ_G)(μ_k − μ_G)ᵀ.
    """
    return loss_from(Spectra(as_stats(stats, labels), check_rtol(rtol)))


def probe_loss_lstsq(features, labels, n_classes: int | None = None) -> float:
    """The same optimum by an explicit least-squares solve of [H, 1]·B ≈ one-hot (scipy gelsd, minimum norm).

    Independent of Σ_T†: no covariance is formed. Valid also when p > N (then the probe interpolates). The
    columns of H are centred and scaled by powers of two first (the loss is invariant to invertible affine
    maps of the features, since the probe has a bias), so extreme or uneven feature scales do not make gelsd
    drop the bias column or real directions.
    """
    H = check_real_numeric(features, "features")
    if H.ndim != 2 or H.shape[0] == 0:
        raise ValueError(f"features: expected a non-empty 2-D (samples, features) array, got shape {H.shape}")
    H = np.asarray(H, dtype=np.float64)
    check_finite(H, "features")
    ya = np.asarray(labels)
    if ya.ndim == 1 and ya.size and np.issubdtype(ya.dtype, np.integer) and ya.dtype != bool:
        K_seen = int(ya.max()) + 1
    else:
        K_seen = 2  # check_labels below names what is wrong
    if n_classes is not None:
        if isinstance(n_classes, bool) or not isinstance(n_classes, (int, np.integer)) or n_classes < 2:
            raise ValueError(f"n_classes: must be an integer >= 2, got {n_classes!r}")
    K = int(n_classes) if n_classes is not None else K_seen
    y = check_labels(labels, H.shape[0], K)
    if K < 2:
        raise ValueError("labels: every sample is in class 0: K = 1 has no between-class variation")
    empty = np.flatnonzero(np.bincount(y, minlength=K) == 0)
    if empty.size:
        raise ValueError(f"labels: class {int(empty[0])} has no samples ({empty.size} of K = {K} classes are empty"
                         + ("" if n_classes is None else f"; n_classes = {n_classes}") + ")")
    X = np.ldexp(H, -pow2_exponent(np.max(np.abs(H), axis=0))[None, :])  # columns ≤ 1
    X -= X.mean(axis=0)
    rms = np.sqrt(np.mean(X * X, axis=0))
    X = np.ldexp(X, -np.where(rms > 0, pow2_exponent(rms), 0)[None, :])  # columns of rms ~1 (affine map)
    X = np.hstack([X, np.ones((H.shape[0], 1))])
    Y = np.eye(K)[y]
    B, *_ = sla.lstsq(X, Y, lapack_driver="gelsd")
    R = X @ B - Y
    return float(np.sum(R * R) / (2 * H.shape[0]))
