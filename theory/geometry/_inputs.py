"""Input checks and exact power-of-two rescaling shared by the geometry metrics.

Every metric here is invariant to a translation of the features and to one global positive scale (per
representation), so the data are used as (X − mean)·2^−e: centred in two passes (the mean of the residuals
is added back, so an offset of 1e6 standard deviations costs nothing), then divided by a power of two (an
exact operation) so that the largest centred entry lies in [½, 1). Squares and fourth powers of features
of size 1e±150 then neither overflow nor underflow.
"""
from __future__ import annotations

import numpy as np

from theory.collapse.stats import check_real_numeric, pow2_exponent
from theory.validate import check_finite


def features(x, name: str, min_rows: int = 1, why: str = "") -> np.ndarray:
    """``x`` as a 2-D float64 array (a new array when converted; never written to), or a clear error.

    TypeError for complex, boolean or non-numeric input; ValueError (naming ``name``) for a wrong rank, no
    columns, fewer than ``min_rows`` rows (``why`` says what needs them) or a NaN/Inf entry.
    """
    a = np.asarray(feature_matrix(x, name, min_rows, why), dtype=np.float64)
    check_finite(a, name)
    return a


def feature_matrix(x, name: str, min_rows: int = 1, why: str = "") -> np.ndarray:
    """``x`` as a 2-D real numeric array in its own dtype (no copy of an ndarray): the shape errors of
    :func:`features`, without its float64 conversion and NaN/Inf scan."""
    a = check_real_numeric(x, name)
    if a.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D (samples, features) array, got shape {a.shape}")
    if a.shape[1] == 0:
        raise ValueError(f"{name}: has no feature columns (shape {a.shape})")
    if a.shape[0] < min_rows:
        raise ValueError(f"{name}: needs at least {min_rows} samples (rows){why}, got {a.shape[0]}")
    return a


def same_rows(X: np.ndarray, Y: np.ndarray, xname: str = "X", yname: str = "Y") -> None:
    if X.shape[0] != Y.shape[0]:
        raise ValueError(f"{yname}: has {Y.shape[0]} rows, {xname} has {X.shape[0]}; the rows must be the same "
                         "samples")


def top_exponent(a: np.ndarray) -> int:
    """e with max|a|·2^−e in [½, 1); 0 for an all-zero array."""
    m = float(np.max(np.abs(a))) if a.size else 0.0
    return int(pow2_exponent(m)) if m > 0 else 0


def centre_scale_mean(X: np.ndarray) -> tuple[np.ndarray, int, np.ndarray]:
    """((X − mean)·2^−e, e, mean): columns centred (two passes, scale-safe), one global power of two e.

    X is first divided by the power of two of its largest entry (exact; the column sums and the differences
    cannot overflow even for entries near the float64 maximum), centred, the residual mean removed (second
    pass), then rescaled so that the largest centred entry lies in [½, 1). An all-constant X gives zeros
    and e = 0. ``mean`` is the column mean in the features' units (finite: |mean| ≤ max|X|).
    """
    e0 = top_exponent(X)
    Z0 = np.ldexp(X, -e0)
    m = Z0.mean(axis=0)
    m = m + (Z0 - m).mean(axis=0)  # the rounding of the first mean, removed in a second pass
    Z = Z0 - m  # one subtraction from the data: the rows are relative to exactly the origin returned
    mean = np.ldexp(m, e0)
    e1 = top_exponent(Z)
    if not np.any(Z):
        return Z, 0, mean
    return (np.ldexp(Z, -e1) if e1 else Z), e0 + e1, mean


def centre_scale(X: np.ndarray) -> tuple[np.ndarray, int]:
    """((X − mean)·2^−e, e) of :func:`centre_scale_mean`, with the rows' residual mean (the rounding of the
    origin, ~ε·|mean|) removed as well: the columns sum to zero to ε·spread, as the centred formulas assume
    (without this, CKA at an offset 1e6 is off by ~3e-14 relative instead of ~1e-15)."""
    Z, e, _ = centre_scale_mean(X)
    if np.any(Z):
        Z -= Z.mean(axis=0)
    return Z, e


def scaled_difference(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, int]:
    """(d, e) with a − b = d·2^e, max|d| in [½, 1) (d = 0, e = 0 when a = b), without overflow near float64's max."""
    E = max(top_exponent(a), top_exponent(b))
    d = np.ldexp(a, -E) - np.ldexp(b, -E)
    if not np.any(d):
        return d, 0
    e1 = top_exponent(d)
    return np.ldexp(d, -e1), E + e1
