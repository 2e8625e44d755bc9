"""Input validation shared by the mathematics: every bad input is a ValueError that says what and where.

Never a silent NaN: shapes, NaN/Inf, asymmetric or non-PSD matrices, empty or single classes.
"""
from __future__ import annotations

import numpy as np


def as_float_array(x, name: str, ndim: int | None = None, dtype=np.float64) -> np.ndarray:
    """``x`` as a float array (float64 by default) after checking its rank and finiteness.

    Complex input is a TypeError (a cast would silently drop the imaginary part)."""
    try:
        is_complex = np.iscomplexobj(x)
    except (TypeError, ValueError):
        is_complex = False  # ragged or unreadable: reported below
    if is_complex:
        raise TypeError(f"{name}: complex input is not supported (casting would drop the imaginary part)")
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

    Both tests are made on the equilibrated matrix K = S·cov·S, S = diag(cov_ii^{-1/2}) (S_ii = max_j cov_jj^{-1/2}
    where cov_ii = 0), so they mean the same at every overall scale and for logits of very different scales:
    symmetric within ``sym_rtol`` (|cov_ij − cov_ji| ≤ sym_rtol·√(cov_ii cov_jj)); PSD within ``psd_rtol``·n
    (K + psd_rtol·n·I is positive definite: rounding of a Gram matrix, and no more).
    """
    sym_rtol, psd_rtol = check_tolerance(sym_rtol, "sym_rtol"), check_tolerance(psd_rtol, "psd_rtol")
    c = as_float_array(cov, name, ndim=2)
    n, m = c.shape
    if n != m:
        raise ValueError(f"{name}: must be square, got shape {c.shape}")
    d = np.diag(c).copy()
    dmax = float(d.max())
    if dmax <= 0:
        if np.any(c != 0) or dmax < 0:
            raise ValueError(f"{name}: not PSD: no positive diagonal entry but nonzero entries (or cov_ii < 0)")
        return c.copy()  # the zero matrix
    if np.any(d < 0):  # a second moment's diagonal is a sum of squares: never negative, not even by rounding
        i = int(np.argmin(d))
        raise ValueError(f"{name}: not PSD: diagonal entry cov[{i},{i}] = {d[i]:.3g} < 0")
    dpos = np.where(d > 0, d, dmax)
    s = 1.0 / np.sqrt(dpos)
    K = (c * s[:, None]) * s[None, :]
    asym = np.abs(K - K.T)
    if asym.max() > sym_rtol:
        i, j = (int(v) for v in np.unravel_index(np.argmax(asym), asym.shape))
        raise ValueError(
            f"{name}: not symmetric: |cov[{i},{j}] - cov[{j},{i}]| = {abs(c[i, j] - c[j, i]):.3g} "
            f"> {sym_rtol:g} * sqrt(cov_ii cov_jj)")
    K = 0.5 * (K + K.T)
    # PSD within tolerance  <=>  K + δI is positive definite, δ = psd_rtol·n: one Cholesky (n³/3) instead of an
    # eigendecomposition; the eigenvalues only to word the error.
    delta = psd_rtol * n + np.finfo(float).tiny
    try:
        np.linalg.cholesky(K + delta * np.eye(n))
    except np.linalg.LinAlgError:
        w = np.linalg.eigvalsh(K)
        raise ValueError(
            f"{name}: not PSD: the correlation matrix diag(cov)^-1/2 cov diag(cov)^-1/2 has smallest eigenvalue "
            f"{w[0]:.3g} < -{psd_rtol:g} * n (largest {w[-1]:.3g})") from None
    return 0.5 * c + 0.5 * c.T


def check_index(i, n: int, name: str = "i") -> int:
    if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
        raise ValueError(f"{name}: must be an integer index, got {i!r}")
    if not 0 <= int(i) < n:
        raise ValueError(f"{name} = {i} is out of range for n = {n}")
    return int(i)


def check_real(x, name: str) -> float:
    """A finite real number: TypeError (naming ``name``) for a non-number, bool or complex, ValueError for NaN/Inf."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: must be a real number, got {x!r}")
    v = float(x)
    if not np.isfinite(v):
        raise ValueError(f"{name}: must be finite, got {x!r}")
    return v


def check_int(x, name: str, lo: int | None = None, hi: int | None = None) -> int:
    """An integer (TypeError naming ``name`` otherwise, bool included) in [lo, hi] (ValueError otherwise)."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        raise TypeError(f"{name}: must be an integer, got {x!r}")
    if (lo is not None and x < lo) or (hi is not None and x > hi):
        raise ValueError(f"{name}: must be an integer in [{lo}, {'∞' if hi is None else hi}], got {x}")
    return int(x)


def check_positive(x, name: str, allow_zero: bool = False) -> float:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: must be a real number, got {x!r}")
    x = float(x)
    if not np.isfinite(x) or x < 0 or (x == 0 and not allow_zero):
        raise ValueError(f"{name}: must be {'>= 0' if allow_zero else '> 0'} and finite, got {x}")
    return x


def check_tolerance(x, name: str) -> float:
    """A tolerance: a real number, finite and >= 0 (TypeError for a non-number, ValueError otherwise)."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: must be a real number, got {x!r}")
    v = float(x)
    if not np.isfinite(v) or v < 0:
        raise ValueError(f"{name}: must be finite and >= 0, got {x!r}")
    return v
