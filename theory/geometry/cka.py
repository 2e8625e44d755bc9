"""Linear CKA and HSIC, biased and debiased, from data or from streamed moments — never an n×n Gram for the moments.

Definitions (K = XXᵀ, L = YYᵀ the linear-kernel Gram matrices of n samples, H = I − 11ᵀ/n):

* biased HSIC (Gretton et al. 2005; Kornblith et al. 2019, Sec 3): HSIC₀ = tr(KHLH)/(n − 1)²
  = ‖X_cᵀY_c‖_F²/(n − 1)², X_c, Y_c the column-centred data;
* unbiased HSIC (Song et al. 2012, Thm 2; used for "debiased CKA" by Nguyen et al. 2021, minibatch CKA), with
  K̃, L̃ the Gram matrices with zeroed diagonals:
      HSIC₁ = [tr(K̃L̃) + 1ᵀK̃1·1ᵀL̃1/((n − 1)(n − 2)) − 2/(n − 2)·1ᵀK̃L̃1] / (n(n − 3)),   n ≥ 4;
* CKA = HSIC(X, Y)/√(HSIC(X, X)·HSIC(Y, Y)) (Kornblith et al. 2019, Sec 3), biased with HSIC₀ and debiased
  with HSIC₁. Biased linear CKA = ‖X_cᵀY_c‖_F²/(‖X_cᵀX_c‖_F‖Y_cᵀY_c‖_F).

How HSIC₁ is computed from sums (derivation). HSIC₁ is the U-statistic of the kernel
h(1,2,3,4) = ¼ (k₁₂ + k₃₄ − k₁₃ − k₂₄)(l₁₂ + l₃₄ − l₁₃ − l₂₄), symmetrised over the 4! orders (expanding the
product gives Song et al.'s k_tu l_tu + k_tu l_vw − 2 k_tu l_tv). For linear kernels
k₁₂ + k₃₄ − k₁₃ − k₂₄ = (x₁ − x₄)ᵀ(x₂ − x₃), which does not change when every x moves by the same vector:
HSIC₁ is exactly invariant to translating X or Y. So it may be evaluated on the centred data x_c, y_c.
There, with k_i = ‖x_{c,i}‖², l_i = ‖y_{c,i}‖² and Σx_c = 0:
  tr(K̃L̃) = Σ_{i≠j} K_ij L_ij = ‖X_cᵀY_c‖_F² − Σ k_i l_i;    1ᵀK̃1 = ‖Σx_c‖² − Σk_i = −tr(X_cᵀX_c);
  (K̃1)_i = x_{c,i}ᵀΣx_c − k_i = −k_i, so 1ᵀK̃L̃1 = Σ k_i l_i;  hence
      n(n − 3)·HSIC₁ = ‖X_cᵀY_c‖_F² + tr(X_cᵀX_c)·tr(Y_cᵀY_c)/((n − 1)(n − 2)) − n/(n − 2)·Σ_i ‖x_{c,i}‖²‖y_{c,i}‖².
Every term is a centred cross-moment: X_cᵀY_c, X_cᵀX_c, Y_cᵀY_c and Σ‖x_c‖²‖y_c‖². From streamed sums about an
origin o (:class:`~theory.geometry.moments.CrossMoments`), the centred ones follow by the exact shift
identities of :func:`theory.geometry.moments.shift` with c = mean − o, which need Σx, Σy, XᵀX, YᵀY, XᵀY,
Σ‖x‖²y, Σ‖y‖²x (and Σ‖x‖²x, Σ‖y‖²y, Σ‖x‖⁴, Σ‖y‖⁴ for the normalisers) and Σ‖x‖²‖y‖². Since o is inside the data,
c is of the order of the spread and nothing cancels catastrophically however far the features sit from zero.

Each representation is used as (X − mean)·2^−e (:func:`~theory.geometry._inputs.centre_scale`): CKA is
invariant to a translation and to a positive scale of either side, so this is exact, and features of size
1e±150 (squares and fourth powers outside float64) are handled. ``hsic`` returns values in the features'
units (a ValueError if those leave float64).
"""
from __future__ import annotations

import numpy as np

from theory.collapse.stats import unscale
from theory.geometry._hsic import (_check_debiased, _cka, _hsic_parts, _min_rows,  # noqa: F401 (re-exported)
                                   _terms_from_data, _terms_from_moments)
from theory.geometry._inputs import same_rows
from theory.geometry.moments import CrossMoments, stream_moments


def _streamed_terms(X, Y, min_rows: int = 2, why: str = "") -> tuple[dict, int, int]:
    """(terms, ex, ey) of X (n, p) and Y (n, q) read in blocks (:mod:`theory.geometry._blocks`): through the
    streamed :class:`~theory.geometry.moments.CrossMoments` when n ≥ max(p, q), else through the n×n centred
    Gram matrices accumulated over column blocks. Peak memory: the input plus O(p² + q² + pq), or O(n²), and a
    few blocks of about 4 MiB — no float64 copy of the whole input."""
    from theory.geometry._blocks import centred_gram, lazy_features

    X, Y = lazy_features(X, "X", min_rows, why), lazy_features(Y, "Y", 1)
    same_rows(X, Y)
    n, p, q = X.shape[0], X.shape[1], Y.shape[1]
    if n >= max(p, q):
        c = stream_moments(X, Y).centred()
        return _terms_from_moments(c), c["ex"], c["ey"]
    (K, ex), (L, ey) = centred_gram(X, "X"), centred_gram(Y, "Y")
    kd, ld = np.diag(K).copy(), np.diag(L).copy()
    t = {"n": n, "fxy": float(np.vdot(K, L)), "fxx": float(np.vdot(K, K)), "fyy": float(np.vdot(L, L)),
         "tx": float(kd.sum()), "ty": float(ld.sum()), "wxy": float(kd @ ld), "wxx": float(kd @ kd),
         "wyy": float(ld @ ld)}
    return t, ex, ey


def linear_cka(X, Y, debiased: bool = False) -> float:
    """Linear CKA of two representations X (n, p) and Y (n, q) of the same n samples (module doc).

    ``debiased=False``: Kornblith et al. 2019's CKA with the biased HSIC₀ (n ≥ 2). ``debiased=True``: with
    Song et al. 2012's unbiased HSIC₁ (Nguyen et al. 2021), n ≥ 4; a ValueError where HSIC₁(X, X) ≤ 0 (few
    samples) makes it undefined. Invariant to translations, orthogonal maps and positive scalings of X or Y.
    The arrays are read in blocks (:func:`_streamed_terms`): any real dtype, never copied whole.
    """
    debiased = _check_debiased(debiased)
    t, _, _ = _streamed_terms(X, Y, *_min_rows(debiased))
    return _cka(t, debiased)


def linear_hsic(X, Y, debiased: bool = False) -> float:
    """HSIC₀ (biased) or HSIC₁ (unbiased, n ≥ 4) of X and Y with linear kernels, in the features' units."""
    debiased = _check_debiased(debiased)
    t, ex, ey = _streamed_terms(X, Y, *_min_rows(debiased))
    return unscale(_hsic_parts(t, debiased)[0], 2 * (ex + ey), "hsic")


def cka_from_moments(moments, debiased: bool = False) -> float:
    """Linear CKA (biased or debiased, as :func:`linear_cka`) from a :class:`CrossMoments`: exact, O(pq + p² + q²)."""
    return _as_moments(moments).cka(debiased)


def hsic_from_moments(moments, debiased: bool = False) -> float:
    """HSIC₀ or HSIC₁ of X and Y from a :class:`CrossMoments`, in the features' units."""
    return _as_moments(moments).hsic(debiased)


def _as_moments(m) -> CrossMoments:
    if not isinstance(m, CrossMoments):
        raise TypeError(f"moments: expected a CrossMoments, got {type(m).__name__}")
    return m
