"""Spectral dimension metrics of a representation Z (n samples × p features), or of the X side of a
:class:`~theory.geometry.moments.CrossMoments` (its covariance, accumulated in one pass).

Spectra. σ_1 ≥ σ_2 ≥ … the singular values of Z (uncentred) or of Z_c (column-centred); λ_i = σ_i(Z_c)²/(n − 1)
the eigenvalues of the sample covariance. Every metric below is invariant to a positive scale of Z, so the
matrix is first divided by a power of two (exact): features of size 1e±150 give the same numbers.

* :func:`rankme` — Garrido et al. 2023 (RankMe), Eq 1: exp(−Σ p_k log p_k) with
  ``variant="sigma"``: p_k = σ_k/Σσ (the paper's definition; the effective rank of Roy & Vetterli 2007 of the
  embedding matrix), or ``variant="sigma2"``: p_k = σ_k²/Σσ² (the entropy of the second-moment spectrum; it
  is the σ-variant of ZᵀZ, not of Z, and is smaller for any non-flat spectrum). Uncentred Z by default, as
  in the paper. The paper adds ε = 1e-7 to every p_k to avoid log 0; here 0·log 0 = 0 exactly (``eps=0``,
  the default), so k equal singular values give exactly k; ``eps=1e-7`` reproduces the paper's number.
* :func:`effective_rank` — Roy & Vetterli 2007's effective rank of the sample covariance: exp(entropy of
  λ/Σλ) (= rankme(Z, "sigma2", center=True)).
* :func:`stable_rank` — ‖Z_c‖_F²/‖Z_c‖₂² = Σλ/λ_1 (Rudelson & Vershynin 2007).
* :func:`participation_ratio` — (Σλ)²/Σλ² (Gao et al. 2017; Recanatesi et al. 2019).
* :func:`numerical_rank` — #{σ_i > ε·σ_1}, with a dtype-aware ε: by default ε = max(n, p)·eps(dtype of Z)
  (numpy's matrix_rank rule: the rounding of the matrix as stored, 1.19e-7 for float32, 2.2e-16 for float64;
  integer input counts as float64). ``eps="rd"`` gives Rank Diminishing's Eq 4 with its float32 rule
  ε = 1.19e-7·min(n, p) (:func:`theory.rank.numerical_rank`); a number sets ε.
* :func:`alpha_req` — Agrawal et al. 2022 (α-ReQ): the decay α of λ_i ∝ i^−α, fitted to log λ_i against log i
  over a stated index range, by ordinary least squares (``fit="ols"``, the default) or weighted by 1/i
  (``fit="weighted"``: Stringer et al. 2019's power-law fit, which gives each decade of i the same weight;
  reptrix's). Default range: the decade i = ⌊m/100⌋ + 1 … ⌊m/10⌋ of m = min(n, p) (at least the first 10
  indices), cut at r, the number of eigenvalues above the dtype-aware cutoff λ_i > max(n, p)·eps·λ_1. It
  leaves out the top of the spectrum (a few signal directions) and its bottom, where white noise's
  Marchenko–Pastur bulk falls to its lower edge and would dominate the slope; at m = 1000 it is i = 11 … 100.

The entropy and ratio metrics (effective rank, stable rank, participation ratio) read an array in blocks: the
p×p covariance streamed through a CrossMoments when n ≥ p, else the n×n centred Gram matrix accumulated
over column blocks (:mod:`theory.geometry._blocks`); their eigenvalues are those of the covariance (resolved
down to ~p·ε·λ_1, far below what these metrics weigh).
* :mod:`theory.geometry.mp` — the Marchenko–Pastur bulk edge and the number of spikes.
"""
from __future__ import annotations

import numpy as np

from theory.geometry._blocks import centred_gram, lazy_features
from theory.geometry.moments import stream_moments_one
from theory.geometry._inputs import centre_scale, features, top_exponent
from theory.geometry.moments import CrossMoments
from theory.rank import numerical_rank as rd_numerical_rank
from theory.rank import rank_from_singular_values


def _variant(variant) -> str:
    if variant not in ("sigma", "sigma2"):
        raise ValueError(f"variant: 'sigma' (p_k ∝ σ_k, Garrido et al.'s RankMe) or 'sigma2' (p_k ∝ σ_k²), "
                         f"got {variant!r}")
    return variant


def _center(center) -> bool:
    if not isinstance(center, (bool, np.bool_)):
        raise ValueError(f"center: must be True or False, got {center!r}")
    return bool(center)


def dtype_eps(Z) -> float:
    """Machine epsilon of the dtype Z is stored in (float64 for integer input)."""
    dt = np.asarray(Z).dtype
    return float(np.finfo(dt).eps) if np.issubdtype(dt, np.floating) else float(np.finfo(np.float64).eps)


def singular_values(Z, center: bool = False, name: str = "Z") -> np.ndarray:
    """Singular values (descending) of Z or of the centred Z_c, divided by a power of two (relative scale only)."""
    center = _center(center)
    A = features(Z, name, 2 if center else 1, " to centre the columns" if center else "")
    if center:
        A, _ = centre_scale(A)
    else:
        e = top_exponent(A)
        A = np.ldexp(A, -e) if e else A
    return np.linalg.svd(A, compute_uv=False)


def covariance_eigenvalues(Z, name: str = "Z") -> np.ndarray:
    """λ (descending, ≥ 0) of the sample covariance of Z, up to one positive factor (the metrics are
    scale-free). Z: (n, p) features, n ≥ 2, or a :class:`CrossMoments` (its X side)."""
    if isinstance(Z, CrossMoments):
        if Z.n < 2:
            raise ValueError(f"{name}: a covariance needs n >= 2 samples, got {Z.n}")
        C = Z.centred()["cxx"]
        return np.clip(np.linalg.eigvalsh(0.5 * (C + C.T)), 0.0, None)[::-1]
    return singular_values(Z, center=True, name=name) ** 2


def _streamed_eigenvalues(Z, name: str = "Z") -> np.ndarray:
    """Covariance eigenvalues (descending, ≥ 0, relative units) of an array read in blocks, or of a CrossMoments."""
    if isinstance(Z, CrossMoments):
        return covariance_eigenvalues(Z, name)
    A = lazy_features(Z, name, 2, " to centre the columns")
    if A.shape[0] >= A.shape[1]:
        C = stream_moments_one(A, name=name).centred()["cxx"]
        C = 0.5 * (C + C.T)
    else:
        C, _ = centred_gram(A, name)
    return np.clip(np.linalg.eigvalsh(C), 0.0, None)[::-1]


def _entropy_rank(v: np.ndarray, eps: float, what: str) -> float:
    tot = float(v.sum())
    if not tot > 0:
        raise ValueError(f"Z: {what} is zero (an all-zero matrix has no spectrum to spread)")
    pk = v / tot + eps
    nz = pk[pk > 0]
    return float(np.exp(-np.sum(nz * np.log(nz))))


def rankme(Z, variant: str = "sigma", center: bool = False, eps: float = 0.0) -> float:
    """RankMe (Garrido et al. 2023, Eq 1): exp of the entropy of the normalised spectrum (module doc).

    ``variant``: "sigma" (p_k ∝ σ_k, the paper) or "sigma2" (p_k ∝ σ_k²). ``center``: centre the columns
    first (default False, as the paper). ``eps``: added to each p_k (the paper's 1e-7; default 0, exact).
    """
    variant = _variant(variant)
    eps = _eps_value(eps)
    if eps >= 1:
        raise ValueError(f"eps: must lie in [0, 1) (added to probabilities; the paper uses 1e-7), got {eps!r}")
    s = singular_values(Z, center)
    return _entropy_rank(s if variant == "sigma" else s * s, eps, "the spectrum")


def _eps_value(eps) -> float:
    if isinstance(eps, (bool, np.bool_)) or not isinstance(eps, (int, float, np.integer, np.floating)) \
            or not np.isfinite(eps) or eps < 0:
        raise ValueError(f"eps: must be a finite number >= 0, got {eps!r}")
    return float(eps)


def effective_rank(Z) -> float:
    """Roy & Vetterli 2007's effective rank of the sample covariance: exp(−Σ p_i log p_i), p_i = λ_i/Σλ."""
    return _entropy_rank(_streamed_eigenvalues(Z), 0.0, "the covariance")


def stable_rank(Z) -> float:
    """Stable rank of the centred data, Σλ/λ_1 = ‖Z_c‖_F²/‖Z_c‖₂² (Rudelson & Vershynin 2007)."""
    lam = _streamed_eigenvalues(Z)
    if not lam[0] > 0:
        raise ValueError("Z: the covariance is zero (every feature is constant): stable rank undefined")
    return float(lam.sum() / lam[0])


def participation_ratio(Z) -> float:
    """Participation ratio (Σλ)²/Σλ² of the covariance spectrum (Gao et al. 2017), between 1 and rank."""
    lam = _streamed_eigenvalues(Z)
    if not lam[0] > 0:
        raise ValueError("Z: the covariance is zero (every feature is constant): participation ratio undefined")
    lam = lam / lam[0]
    return float(lam.sum() ** 2 / np.sum(lam * lam))


def numerical_rank(Z, eps=None, center: bool = False) -> int:
    """#{σ_i > ε·σ_1} of Z (or Z_c): ε = max(n, p)·eps(Z.dtype) by default (dtype-aware: the rounding of the
    matrix as stored), ``eps="rd"`` for RD Eq 4 with its float32 rule (theory.rank), or a number in (0, 1)."""
    if isinstance(eps, str):
        if eps != "rd":
            raise ValueError(f"eps: None (dtype-aware), 'rd' (RD Eq 4's float32 rule) or a number, got {eps!r}")
        if center:
            return rank_from_singular_values(singular_values(Z, True), _rd_eps(Z))
        return rd_numerical_rank(features(Z, "Z"))
    n, p = np.shape(Z)[:2] if np.ndim(Z) == 2 else (0, 0)
    s = singular_values(Z, center)
    e = max(n, p) * dtype_eps(Z) if eps is None else _eps_value(eps)
    if not 0 < e < 1:
        raise ValueError(f"eps: must lie in (0, 1) (relative to σ_1), got {e!r}")
    if s[0] == 0:
        return 0
    return int(np.count_nonzero(s > e * s[0]))


def _rd_eps(Z) -> float:
    from theory.rank import float32_eps_rule
    return float32_eps_rule(min(np.shape(Z)))


def alpha_req(Z, fit_range: tuple[int, int] | None = None, fit: str = "ols") -> dict:
    """α-ReQ (Agrawal et al. 2022): α in λ_i ≈ c·i^−α, a straight-line fit of log λ_i on log i.

    ``fit_range=(i_min, i_max)``: 1-based inclusive indices of the eigenvalues fitted (i_max = None: up to r).
    Default: :func:`_default_fit_range` — the decade ⌊m/100⌋ + 1 … max(⌊m/10⌋, 10) of m = min(n, p), cut at
    r = #{λ_i > max(n, p)·eps·λ_1} (eps of Z's dtype), so that rounding-level eigenvalues never enter.
    ``fit``: "ols" (ordinary least squares, the default) or "weighted" (weights 1/i: Stringer et al. 2019's
    fit, reptrix's ``get_alpha``). Needs ≥ 3 fitted eigenvalues. Returns {"alpha", "stderr" (the standard
    error of α of that least-squares fit), "intercept" (log c, in the relative units of the scaled data),
    "fit_range", "fit"}.
    """
    if fit not in ("ols", "weighted"):
        raise ValueError(f"fit: 'ols' (ordinary least squares) or 'weighted' (weights 1/i, Stringer et al. 2019), "
                         f"got {fit!r}")
    lam = covariance_eigenvalues(Z)
    if isinstance(Z, CrossMoments):
        n, p, eps = Z.n, Z.p, float(np.finfo(np.float64).eps)
    else:
        (n, p), eps = np.shape(Z), dtype_eps(Z)
    if not lam[0] > 0:
        raise ValueError("Z: the covariance is zero (every feature is constant): no spectrum to fit")
    r = int(np.count_nonzero(lam > max(n, p) * eps * lam[0]))
    lo, hi = _default_fit_range(min(n, p), r) if fit_range is None else _fit_range(fit_range, r)
    if hi - lo + 1 < 3:
        raise ValueError(f"fit_range: needs at least 3 eigenvalues above the rounding cutoff, got indices "
                         f"[{lo}, {hi}] (r = {r} resolved eigenvalues)")
    i = np.arange(lo, hi + 1, dtype=np.float64)
    x, y = np.log(i), np.log(lam[lo - 1:hi])
    w = 1.0 / i if fit == "weighted" else np.ones_like(i)
    w = w / w.sum()
    xc, yc = x - w @ x, y - w @ y
    sxx = float(w @ (xc * xc))
    slope = float(w @ (xc * yc)) / sxx
    resid = yc - slope * xc
    m = hi - lo + 1
    # errors of log λ taken as of one variance σ² (the weights spread the fit over the decades; they are not a
    # noise model): Var(slope) = σ²·Σw²xc²/(Σw·xc²)², σ² estimated by Σresid²/(m − 2) — for w = 1/m the OLS
    # standard error
    se = float(np.sqrt(float(resid @ resid) / (m - 2) * float(w @ (w * xc * xc))) / sxx)
    return {"alpha": -slope, "stderr": se, "intercept": float(w @ y - slope * (w @ x)), "fit_range": (lo, hi),
            "fit": fit}


def _default_fit_range(m: int, r: int) -> tuple[int, int]:
    """α-ReQ's default indices for m = min(n, p) and r resolved eigenvalues: (⌊m/100⌋ + 1, max(⌊m/10⌋, 10)),
    the upper end cut at r (module doc). At m = 1000: (11, 100)."""
    lo = m // 100 + 1
    hi = min(max(m // 10, 10), r)
    return (min(lo, max(hi - 2, 1)), hi)


def _fit_range(fr, r: int) -> tuple[int, int]:
    if not isinstance(fr, (tuple, list)) or len(fr) != 2:
        raise ValueError(f"fit_range: must be a pair (i_min, i_max) of 1-based indices, got {fr!r}")
    lo, hi = fr[0], r if fr[1] is None else fr[1]
    for v in (lo, hi):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise ValueError(f"fit_range: indices must be integers (or i_max None), got {fr!r}")
    if not 1 <= lo <= hi <= r:
        raise ValueError(f"fit_range: must satisfy 1 <= i_min <= i_max <= r = {r} (eigenvalues above the "
                         f"rounding cutoff), got {fr!r}")
    return int(lo), int(hi)
