"""Closed forms of the neural-dependency paper (ND, seed 000): error floors, θ*(0), λ_max, R(Cov, i).

Notation (ND Eq 2): f ∈ R^n are the logits, Cov = E[f fᵀ] (uncentred). For a target category i,
CovLasso solves  min_{θ: θ_i = −1} θᵀ Cov θ + λ‖θ‖₁,  and err_i(θ) = θᵀ Cov θ = E[(θᵀf)²].

* ND A15/A30/A33: err_i(θ*(0)) = det Cov / det Cov₋ᵢ₋ᵢ = 1/(Cov⁻¹)_ii = (Σ_j α_j²/σ_j²)⁻¹, with
  (σ_j², q_j) the eigenpairs of Cov and α_j = ⟨e_i, q_j⟩; θ*(0) = −Cov⁻¹e_i/(Cov⁻¹)_ii (A28 with
  η = 2/(Cov⁻¹)_ii of A27).
* ND A16/A47: λ_max(i) = 2‖Cov₋ᵢ,ᵢ‖_∞ (the i-th column without its diagonal entry; the main text's
  "Cov_{[n]∖i}^{[n]∖i}" below Eq 5 is an extraction garble of A47's 2‖b̂‖_∞ with b̂ = Cov_{[n]∖i}^i).
* ND A31–A32: R(Cov, i) = det Cov/(Cov_ii det Cov₋ᵢ₋ᵢ) = 1/(Σα²/σ² · Σα²σ²), the smallest relative
  error err_i/Cov_ii along the path (Σ_j α_j²σ_j² = Cov_ii).

The determinant ratio is never used to compute anything here (ND Remark 2: it under/overflows);
:func:`det_ratio` exists only to show that.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from theory.validate import as_covariance, check_index


def _cholesky(cov: np.ndarray):
    """Lower Cholesky factor, or None when Cov is singular to working precision."""
    try:
        L = np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        return None
    d = np.diag(L)
    if d.min() ** 2 <= cov.shape[0] * np.finfo(float).eps * d.max() ** 2:
        return None  # κ beyond 1/(nε): singular to working precision (the eigen path decides which floors are 0)
    return L


def inverse_diagonal(cov) -> np.ndarray:
    """diag(Cov⁻¹) for an SPD Cov via Cholesky: (Cov⁻¹)_ii = ‖L⁻¹e_i‖² (sum of squares, no cancellation).

    Raises ValueError if Cov is singular to working precision.
    """
    c = as_covariance(cov)
    L = _cholesky(c)
    if L is None:
        raise ValueError("cov: singular to working precision (Cholesky failed); diag(Cov^-1) does not exist")
    Linv = sla.solve_triangular(L, np.eye(c.shape[0]), lower=True)
    return np.einsum("ki,ki->i", Linv, Linv)


def error_floor(cov, null_tol: float | None = None) -> np.ndarray:
    """err_i(θ*(0)) = 1/(Cov⁻¹)_ii for every category i at once (ND A15, A30, A33).

    SPD Cov: Cholesky, (Cov⁻¹)_ii = ‖L⁻¹e_i‖²; forward relative error O(κ(Cov)·ε).
    Singular Cov (Cholesky fails, or a squared pivot below n·ε times the largest): the eigen form
    (Σ_j α_j²/σ_j²)⁻¹ over the eigenvalues above ``null_tol`` (default n·ε·σ_max²); a category whose
    axis has weight Σ_{σ_j² ≤ tol} α_j² > √ε in the numerical null space has floor 0: f_i is a linear
    combination of the other logits (ND Sec 2.2, massive categories).
    """
    c = as_covariance(cov)
    n = c.shape[0]
    if n < 2:
        raise ValueError("cov: need at least 2 categories (n = 1 has no other logit to predict from)")
    L = _cholesky(c)
    if L is not None:
        Linv = sla.solve_triangular(L, np.eye(n), lower=True)
        return 1.0 / np.einsum("ki,ki->i", Linv, Linv)
    w, U = np.linalg.eigh(c)
    tol = n * np.finfo(float).eps * max(w[-1], 0.0) if null_tol is None else null_tol
    keep = w > tol
    null_weight = (U[:, ~keep] ** 2).sum(axis=1)
    s = (U[:, keep] ** 2 / w[keep]).sum(axis=1)
    with np.errstate(divide="ignore"):
        floor = np.where(s > 0, 1.0 / s, 0.0)
    return np.where(null_weight > np.sqrt(np.finfo(float).eps), 0.0, floor)


def error_floor_eigen(cov) -> np.ndarray:
    """The eigen form of ND A33, (Σ_j α_j²/σ_j²)⁻¹, for comparison (SPD Cov only)."""
    c = as_covariance(cov)
    w, U = np.linalg.eigh(c)
    if w[0] <= 0:
        raise ValueError(f"cov: smallest eigenvalue {w[0]:.3g} <= 0; the eigen form needs SPD")
    return 1.0 / (U**2 / w).sum(axis=1)


def theta_floor(cov, i: int) -> np.ndarray:
    """θ*(0) = −Cov⁻¹e_i/(Cov⁻¹)_ii (ND A28 with η of A27); θ_i = −1.

    For a singular Cov the minimiser is not unique; this returns θ̂ = Ĉov⁺b̂ (minimum-norm least
    squares on the other categories, Ĉov = Cov₋ᵢ₋ᵢ, b̂ = Cov₋ᵢ,ᵢ), which attains the floor.
    """
    c = as_covariance(cov)
    n = c.shape[0]
    i = check_index(i, n)
    if n < 2:
        raise ValueError("cov: need at least 2 categories")
    L = _cholesky(c)
    if L is not None:
        e = np.zeros(n)
        e[i] = 1.0
        x = sla.cho_solve((L, True), e)
        return -x / x[i]
    rest = np.delete(np.arange(n), i)
    theta_hat = np.linalg.lstsq(c[np.ix_(rest, rest)], c[rest, i], rcond=None)[0]
    theta = np.empty(n)
    theta[rest] = theta_hat
    theta[i] = -1.0
    return theta


def prediction_error(cov, theta) -> float:
    """err_i(θ) = θᵀ Cov θ = E[(θᵀf)²] (ND Sec 2.2)."""
    c = as_covariance(cov)
    t = np.asarray(theta, dtype=float)
    if t.shape != (c.shape[0],):
        raise ValueError(f"theta: expected shape ({c.shape[0]},), got {t.shape}")
    return float(t @ c @ t)


def lambda_max(cov) -> np.ndarray:
    """λ_max(i) = 2‖Cov₋ᵢ,ᵢ‖_∞ for every i (ND A47): θ*(λ) = −e_i iff λ ≥ λ_max(i)."""
    c = as_covariance(cov)
    if c.shape[0] < 2:
        raise ValueError("cov: need at least 2 categories")
    off = np.abs(c)
    np.fill_diagonal(off, 0.0)
    return 2.0 * off.max(axis=0)


def relative_floor(cov) -> np.ndarray:
    """R(Cov, i) = err_i(θ*(0))/Cov_ii for every i (ND A31–A32): the smallest relative error on the path."""
    c = as_covariance(cov)
    d = np.diag(c)
    if np.any(d <= 0):
        i = int(np.argmin(d))
        raise ValueError(f"cov: Cov[{i},{i}] = {d[i]:.3g}; R(Cov, {i}) is undefined for a logit with no energy")
    return error_floor(c) / d


def relative_floor_eigen(cov) -> np.ndarray:
    """A31's eigen form 1/(Σ_j α_j²/σ_j² · Σ_j α_j²σ_j²), for comparison (SPD Cov only)."""
    c = as_covariance(cov)
    w, U = np.linalg.eigh(c)
    if w[0] <= 0:
        raise ValueError(f"cov: smallest eigenvalue {w[0]:.3g} <= 0; the eigen form needs SPD")
    a2 = U**2
    return 1.0 / ((a2 / w).sum(axis=1) * (a2 * w).sum(axis=1))


def det_ratio(cov, i: int, method: str = "det") -> float:
    """det Cov / det Cov₋ᵢ₋ᵢ as the paper writes it (ND Eq 5, A15): numerically fragile (Remark 2).

    ``method="det"`` uses ``numpy.linalg.det`` (LU), which under/overflows for large n: the result
    can be NaN (0/0), inf or 0. ``method="slogdet"`` takes exp of the log-det difference. Kept only
    to demonstrate Remark 2; use :func:`error_floor`.
    """
    c = np.asarray(cov, dtype=float)
    i = check_index(i, c.shape[0])
    minor = np.delete(np.delete(c, i, 0), i, 1)
    if method == "det":
        with np.errstate(all="ignore"):
            return float(np.float64(np.linalg.det(c)) / np.float64(np.linalg.det(minor)))
    if method == "slogdet":
        s1, l1 = np.linalg.slogdet(c)
        s2, l2 = np.linalg.slogdet(minor)
        with np.errstate(all="ignore"):
            return float(s1 * s2 * np.exp(l1 - l2))
    raise ValueError(f"method must be 'det' or 'slogdet', got {method!r}")
