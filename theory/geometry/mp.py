"""The Marchenko–Pastur bulk edge of a feature covariance and the number of spikes above it.

Model: Z (n, p) with rows iid N(μ, σ²I) ("white noise"). The centred sample covariance S = Z_cᵀZ_c/(n − 1)
is σ²·Wishart_p(n′, I)/n′ with n′ = n − 1 degrees of freedom (centring removes one), so its nonzero
eigenvalues follow the Marchenko–Pastur law (Marchenko & Pastur 1967): for p ≤ n′, σ²·MP(γ = p/n′); for
p > n′, σ²·(p/n′)·MP(n′/p). In both cases the bulk's upper edge is

    λ₊ = σ²(1 + √(p/n′))²                                             (:func:`mp_edge`)

(theory.rank.mp_edges gives the unit-variance support). At finite size the largest noise eigenvalue sits
at λ₊ up to Tracy–Widom fluctuations: Johnstone 2001 (Thm 1.1) centres the largest eigenvalue ℓ₁ of a white
Wishart W = XᵀX (X n′×p) with μ = (√(n′ − 1) + √p)² and scales it with σ_J = (√(n′ − 1) + √p)(1/√(n′ − 1)
+ 1/√p)^{1/3}: (ℓ₁ − μ)/σ_J → TW₁. :func:`spike_count` counts the covariance eigenvalues above
σ²(μ + s·σ_J)/n′, s the TW₁ quantile of ``level`` (0.95: 0.9793, 0.99: 2.0234, Tracy & Widom's tables as
reprinted by Johnstone 2001, Table 1): the number of directions of variance that white noise of level σ²
would exceed with probability 1 − ``level`` only (a "spike"; a population spike σ²(1 + θ) is resolved by the
sample only above the BBP threshold θ > √(p/n′), Baik, Ben Arous & Péché 2005).

σ² unknown (``noise_var=None``): estimated as the median nonzero covariance eigenvalue divided by the median
of the MP law it should follow (Gavish & Donoho 2014's robust estimator), so a few spikes do not inflate it.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import brentq

from theory.geometry.spectrum import covariance_eigenvalues, features
from theory.geometry.moments import CrossMoments
from theory.rank import mp_cdf, mp_edges

TW1_QUANTILES = {0.95: 0.9793, 0.99: 2.0234}  # Johnstone 2001, Table 1 (Tracy–Widom, β = 1)


def _check_n_p(n, p) -> tuple[int, int]:
    for v, name in ((n, "n"), (p, "p")):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise ValueError(f"{name}: must be an integer, got {v!r}")
    if n < 3:
        raise ValueError(f"n: needs at least 3 samples (n − 1 ≥ 2 degrees of freedom after centring), got {n}")
    if p < 1:
        raise ValueError(f"p: must be >= 1, got {p}")
    return int(n), int(p)


def _check_var(v, name: str = "noise_var") -> float:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)) \
            or not np.isfinite(v) or v <= 0:
        raise ValueError(f"{name}: must be a finite number > 0, got {v!r}")
    return float(v)


def mp_edge(n: int, p: int, noise_var: float = 1.0) -> float:
    """λ₊ = σ²(1 + √(p/(n − 1)))²: the upper bulk edge of the centred sample covariance of n white samples."""
    n, p = _check_n_p(n, p)
    return _finite(_check_var(noise_var) * (1.0 + np.sqrt(p / (n - 1.0))) ** 2)


def _finite(v: float) -> float:
    if not np.isfinite(v):
        raise ValueError("noise_var: the edge σ²(1 + √(p/(n − 1)))² overflows float64 (noise_var too large)")
    return float(v)


def mp_median(beta: float) -> float:
    """The median of the unit-variance MP law with aspect ratio β ∈ (0, 1] (bisection of theory.rank.mp_cdf)."""
    if isinstance(beta, (bool, np.bool_)) or not isinstance(beta, (int, float, np.integer, np.floating)) \
            or not 0 < beta <= 1:
        raise ValueError(f"beta: the aspect ratio min/max must be a number in (0, 1], got {beta!r}")
    beta = float(beta)
    a, b = mp_edges(beta)
    if beta == 1.0:
        a = 1e-300
    if not a < b:  # β below ~1e-32: the law is a point mass at 1 to float64's resolution
        return float(a)
    return float(brentq(lambda x: mp_cdf(x, beta) - 0.5, a, b, xtol=1e-14, rtol=1e-13))


def tw_threshold(n: int, p: int, noise_var: float = 1.0, level: float = 0.99) -> float:
    """σ²(μ + s·σ_J)/n′ (module doc): the covariance eigenvalue white noise exceeds with probability 1 − level."""
    n, p = _check_n_p(n, p)
    if isinstance(level, (bool, np.bool_)) or not isinstance(level, (float, np.floating)) \
            or float(level) not in TW1_QUANTILES:
        raise ValueError(f"level: one of {sorted(TW1_QUANTILES)} (tabulated Tracy–Widom quantiles), got {level!r}")
    m = n - 1.0
    a, b = np.sqrt(m - 1.0), np.sqrt(float(p))
    mu = (a + b) ** 2
    sj = (a + b) * (1.0 / a + 1.0 / b) ** (1.0 / 3.0)
    return _finite(_check_var(noise_var) * (mu + TW1_QUANTILES[float(level)] * sj) / m)


def spike_count(Z, noise_var: float | None = None, level: float = 0.99) -> dict:
    """Spikes of the feature covariance of Z (n, p) — or of a :class:`CrossMoments`' X side — above the MP bulk.

    Returns {"n_spikes", "edge" (λ₊ = σ²(1 + √(p/(n − 1)))²), "threshold" (the Tracy–Widom ``level`` cutoff),
    "noise_var" (σ², given or estimated: module doc), "top" (the largest eigenvalues, descending, up to 10
    past the spikes)}, all in the features' squared units.
    """
    lam, n, p = _eigs(Z)
    if noise_var is None:
        m = min(n - 1, p)
        beta = m / max(n - 1, p)
        med = float(np.median(lam[:m]))
        if not med > 0:
            raise ValueError("Z: the median covariance eigenvalue is zero (the data span too few directions for "
                             "a noise estimate); pass noise_var")
        sigma2 = med / (max(n - 1, p) / (n - 1.0) * mp_median(beta))
    else:
        sigma2 = _check_var(noise_var)
    thr = tw_threshold(n, p, sigma2, level)
    k = int(np.count_nonzero(lam > thr))
    return {"n_spikes": k, "edge": mp_edge(n, p, sigma2), "threshold": thr, "noise_var": sigma2,
            "top": lam[:k + 10].copy()}


def _eigs(Z) -> tuple[np.ndarray, int, int]:
    """Covariance eigenvalues (descending) in the features' squared units, n and p."""
    if isinstance(Z, CrossMoments):
        if Z.n < 3:
            raise ValueError(f"Z: needs at least 3 samples, got n = {Z.n}")
        C = Z.covariance("x")
        return np.clip(np.linalg.eigvalsh(C), 0.0, None)[::-1], Z.n, Z.p
    A = features(Z, "Z", 3, " (n − 1 ≥ 2 degrees of freedom after centring)")
    n, p = A.shape
    lam = covariance_eigenvalues(A)  # relative units: put the scale back below
    from theory.geometry._inputs import centre_scale
    from theory.collapse.stats import unscale
    _, e = centre_scale(A)
    return unscale(lam / (n - 1.0), 2 * e, "Z: covariance eigenvalues"), n, p
