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
    a = check_real_numeric(x, name)
    if a.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D (samples, features) array, got shape {a.shape}")
    if a.shape[1] == 0:
        raise ValueError(f"{name}: has no feature columns (shape {a.shape})")
    if a.shape[0] < min_rows:
        raise ValueError(f"{name}: needs at least {min_rows} samples (rows){why}, got {a.shape[0]}")
    a = np.asarray(a, dtype=np.float64)
    check_finite(a, name)
    return a


def same_rows(X: np.ndarray, Y: np.ndarray, xname: str = "X", yname: str = "Y") -> None:
    if X.shape[0] != Y.shape[0]:
        raise ValueError(f"{yname}: has {Y.shape[0]} rows, {xname} has {X.shape[0]}; the rows must be the same "
                         "samples")


def top_exponent(a: np.ndarray) -> int:
    """e with max|a|·2^−e in [½, 1); 0 for an all-zero array."""
    m = float(np.max(np.abs(a))) if a.size else 0.0
    return int(pow2_exponent(m)) if m > 0 else 0


def centre_scale(X: np.ndarray) -> tuple[np.ndarray, int]:
    """((X − mean)·2^−e, e): columns centred (two passes, scale-safe), one global power of two e.

    X is first divided by the power of two of its largest entry (so that the column sums cannot overflow),
    centred, the residual mean removed, then rescaled so that the largest centred entry lies in [½, 1).
    An all-constant X gives zeros and e = 0.
    """
    e0 = top_exponent(X)
    Z = np.ldexp(X, -e0)
    Z = Z - Z.mean(axis=0)
    Z -= Z.mean(axis=0)  # the rounding of the first mean, removed in a second pass
    e1 = top_exponent(Z)
    if e1:
        Z = np.ldexp(Z, -e1)
    return Z, e0 + e1 if np.any(Z) else 0
