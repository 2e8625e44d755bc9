"""Input validation shared by the mathematics: every bad input is a ValueError that says what and where.

Never a silent NaN: shapes, NaN/Inf, asymmetric or non-PSD matrices, empty or single classes.
"""
from __future__ import annotations

import numpy as np


def as_float_array(x, name: str, ndim: int | None = None, dtype=np.float64) -> np.ndarray:
    """``x`` as a float array (float64 by default) after checking its rank and finiteness."""
    try:
        a = np.asarray(x, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: cannot be read as a {np.dtype(dtype).name} array ({exc})") from None
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{name}: expected a {ndim}-D array, got shape {a.shape}")
    if a.size == 0:
        raise ValueError(f"{name}: is empty (shape {a.shape})")
    check_finite(a, name)
    return a


def check_finite(a: np.ndarray, name: str) -> None:
    """Raise naming the first NaN/Inf entry (and, for 2-D arrays, its column)."""
    bad = ~np.isfinite(a)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        what = "NaN" if np.isnan(a[idx]) else "Inf"
        where = f"column {idx[1]} (entry {idx})" if a.ndim == 2 else f"entry {idx}"
        raise ValueError(f"{name}: {int(bad.sum())} non-finite value(s); first is {what} at {where}")


def as_covariance(cov, name: str = "cov", sym_rtol: float = 1e-8, psd_rtol: float = 1e-10) -> np.ndarray:
    """A validated float64 symmetric PSD matrix (symmetrised exactly on return).

    Symmetric within ``sym_rtol * max|cov|``; PSD within ``psd_rtol * n * max|cov|`` (≥ psd_rtol·‖cov‖₂: the
    smallest eigenvalue may be that much below zero, rounding of a Gram matrix, and no more).
    """
    c = as_float_array(cov, name, ndim=2)
    n, m = c.shape
    if n != m:
        raise ValueError(f"{name}: must be square, got shape {c.shape}")
    scale = float(np.max(np.abs(c)))
    asym = np.abs(c - c.T)
    if asym.max() > sym_rtol * max(scale, np.finfo(float).tiny):
        i, j = (int(v) for v in np.unravel_index(np.argmax(asym), asym.shape))
        raise ValueError(
            f"{name}: not symmetric: |cov[{i},{j}] - cov[{j},{i}]| = {asym[i, j]:.3g} "
            f"> {sym_rtol:g} * max|cov| = {sym_rtol * scale:.3g}")
    c = 0.5 * (c + c.T)
    if np.any(np.diag(c) < -psd_rtol * scale):
        i = int(np.argmin(np.diag(c)))
        raise ValueError(f"{name}: not PSD: diagonal entry cov[{i},{i}] = {c[i, i]:.3g} < 0")
    # PSD within tolerance  <=>  C + δI is positive definite, δ = psd_rtol·n·max|C| (≥ psd_rtol·‖C‖₂):
    # one Cholesky (n³/3) instead of an eigendecomposition; the eigenvalues only to word the error.
    delta = psd_rtol * n * scale + np.finfo(float).tiny
    try:
        np.linalg.cholesky(c + delta * np.eye(n))
    except np.linalg.LinAlgError:
        w = np.linalg.eigvalsh(c)
        raise ValueError(
            f"{name}: not PSD: smallest eigenvalue {w[0]:.3g} < -{psd_rtol:g} * n * max|cov| "
            f"(largest eigenvalue {w[-1]:.3g})") from None
    return c


def check_index(i, n: int, name: str = "i") -> int:
    if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
        raise ValueError(f"{name}: must be an integer index, got {i!r}")
    if not 0 <= int(i) < n:
        raise ValueError(f"{name} = {i} is out of range for n = {n}")
    return int(i)


def check_positive(x, name: str, allow_zero: bool = False) -> float:
    x = float(x)
    if not np.isfinite(x) or x < 0 or (x == 0 and not allow_zero):
        raise ValueError(f"{name}: must be {'>= 0' if allow_zero else '> 0'} and finite, got {x}")
    return x
