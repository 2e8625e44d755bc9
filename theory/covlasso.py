"""CovLasso (ND Eq 2, Eq 6) on a covariance matrix.

    min_{θ: θ_i = −1} θᵀ Cov θ + λ‖θ‖₁   ⇔   min_θ̂ θ̂ᵀĈovθ̂ − 2b̂ᵀθ̂ + λ‖θ̂‖₁   (Eq 6)

with Ĉov = Cov₋ᵢ₋ᵢ, b̂ = Cov₋ᵢ,ᵢ. KKT (A35–A37): |Ĉov_jθ̂ − b̂_j| ≤ λ/2, with equality and
sign(θ̂_j) = sign(b̂_j − Ĉov_jθ̂ + ...) on the support.

This module starts with a plain reference coordinate descent (:func:`covlasso_cd`), used as an
independent solver by the checks; the fast exact solver belongs here too.
"""
from __future__ import annotations

import numpy as np

from theory.validate import as_covariance, check_index


def covlasso_cd(cov, i: int, lam: float, tol: float = 1e-13, max_sweeps: int = 100_000) -> np.ndarray:
    """Reference cyclic coordinate descent for ND Eq 6 (small n; exact zeros by soft-thresholding).

    Stops when a full sweep changes no coordinate by more than ``tol`` (relative to max|θ̂|+1).
    Returns θ with θ_i = −1.
    """
    c = as_covariance(cov)
    n = c.shape[0]
    i = check_index(i, n)
    if n < 2:
        raise ValueError("cov: need at least 2 categories")
    lam = float(lam)
    if not np.isfinite(lam) or lam < 0:
        raise ValueError(f"lam: must be finite and >= 0, got {lam}")
    rest = np.delete(np.arange(n), i)
    C = c[np.ix_(rest, rest)]
    b = c[rest, i]
    diag = np.diag(C).copy()
    if np.any(diag <= 0):
        j = int(rest[np.argmin(diag)])
        raise ValueError(f"cov: Cov[{j},{j}] = 0: category {j} has no energy; drop it before CovLasso")
    t = np.zeros(n - 1)
    grad = -b.copy()  # Ĉ t − b
    for _ in range(max_sweeps):
        delta = 0.0
        for j in range(n - 1):
            z = t[j] * diag[j] - grad[j]  # b_j − Σ_{k≠j} C_jk t_k
            new = np.sign(z) * max(abs(z) - lam / 2, 0.0) / diag[j]
            d = new - t[j]
            if d != 0.0:
                grad += d * C[:, j]
                t[j] = new
                delta = max(delta, abs(d))
        if delta <= tol * (1.0 + np.abs(t).max()):
            break
    else:
        raise RuntimeError(f"covlasso_cd: no convergence in {max_sweeps} sweeps (i={i}, lam={lam:g})")
    theta = np.empty(n)
    theta[rest] = t
    theta[i] = -1.0
    return theta


def resolve_lambda(cov: np.ndarray, i: int, lam: float | None, rho: float | None) -> float:
    """λ from an absolute ``lam`` or a relative ``rho`` (λ = ρ·λ_max(i), ND Thm 1); exactly one is given."""
    if (lam is None) == (rho is None):
        raise ValueError("give exactly one of lam= (absolute λ) or rho= (λ = rho·λ_max(i))")
    if rho is not None:
        rho = float(rho)
        if not np.isfinite(rho) or rho < 0:
            raise ValueError(f"rho: must be finite and >= 0, got {rho}")
        rest = np.delete(np.arange(cov.shape[0]), i)
        return rho * 2.0 * float(np.abs(cov[rest, i]).max())
    lam = float(lam)
    if not np.isfinite(lam) or lam < 0:
        raise ValueError(f"lam: must be finite and >= 0, got {lam}")
    return lam


def covlasso(cov, i: int, lam: float | None = None, *, rho: float | None = None) -> np.ndarray:
    """θ*(λ) of ND Eq 2 / Eq 6 for category ``i`` (θ_i = −1); λ absolute or ``rho=`` relative.

    Public entry point. Until the exact active-set solver lands it calls :func:`covlasso_cd`.
    """
    c = as_covariance(cov)
    i = check_index(i, c.shape[0])
    return covlasso_cd(c, i, resolve_lambda(c, i, lam, rho))


def kkt_violation(cov, i: int, lam: float, theta) -> float:
    """max_j of the KKT residual of Eq 6 (A35) at θ, in units of λ_max(i) (0 at the exact optimum)."""
    c = as_covariance(cov)
    n = c.shape[0]
    i = check_index(i, n)
    rest = np.delete(np.arange(n), i)
    t = np.asarray(theta, float)[rest]
    g = c[np.ix_(rest, rest)] @ t - c[rest, i]  # ½ gradient of the smooth part
    half = lam / 2.0
    on = t != 0
    r = np.where(on, np.abs(g + half * np.sign(t)), np.maximum(np.abs(g) - half, 0.0))
    lmax = 2.0 * np.abs(c[rest, i]).max()
    return float(r.max() / max(lmax, np.finfo(float).tiny))
