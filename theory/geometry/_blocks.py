"""Streaming over the rows or the columns of (n, p) arrays, shared by the metrics that read whole arrays.

The input is validated without converting it (dtype, rank, shape), then read in blocks that are converted to
float64 one at a time and checked for NaN/Inf as they are read, so that a metric's peak memory is the input
plus a few blocks and its own O(p² + q²) or O(n²) result — never a float64 copy of the whole input.

* :func:`lazy_features` — the checks of :func:`theory.geometry._inputs.features` that need no conversion;
* :func:`float_block` — one float64 block, its NaN/Inf entries named by their position in the whole array;
* :func:`centred_gram` — the n×n Gram matrix Z_cZ_cᵀ of the column-centred array, column block by column block
  (centring is per column, so each block is centred exactly as the whole array would be), accumulated with
  BLAS ``syrk`` into one n×n array.
"""
from __future__ import annotations

import numpy as np
from scipy.linalg import blas

from theory.geometry._inputs import centre_scale, feature_matrix

BLOCK_BYTES = 4 * 2**20  # one float64 block of the widest side holds about this many bytes


def lazy_features(x, name: str, min_rows: int = 1, why: str = "") -> np.ndarray:
    """``x`` as a 2-D real numeric array in its own dtype (no copy of an ndarray), or the errors of
    :func:`theory.geometry._inputs.features` (NaN/Inf are found later, block by block)."""
    return feature_matrix(x, name, min_rows, why)


def rows_per_block(width: int) -> int:
    """Rows of a block of ``width`` float64 columns that holds about BLOCK_BYTES (at least 64)."""
    return max(64, BLOCK_BYTES // (8 * max(int(width), 1)))


def float_block(a: np.ndarray, rows: slice, cols: slice, name: str) -> np.ndarray:
    """``a[rows, cols]`` as float64 (a view when ``a`` is float64 already), or a ValueError naming the first
    NaN/Inf entry by its index in ``a``."""
    b = np.asarray(a[rows, cols], dtype=np.float64)
    ok = np.isfinite(b)
    if not ok.all():
        i, j = (int(v) for v in np.argwhere(~ok)[0])
        gi, gj = i + (rows.start or 0), j + (cols.start or 0)
        what = "NaN" if np.isnan(b[i, j]) else "Inf"
        raise ValueError(f"{name}: non-finite values; first is {what} at column {gj} (entry ({gi}, {gj}))")
    return b


def _column_blocks(n: int, p: int):
    width = max(16, BLOCK_BYTES // (8 * max(n, 1)))
    return [slice(s, min(s + width, p)) for s in range(0, p, width)]


def centred_gram(A: np.ndarray, name: str = "X") -> tuple[np.ndarray, int]:
    """(K, e): K = Z Zᵀ (n×n, symmetric) with Z = (A − column means)·2^−e, the largest |Z| entry in [½, 1) (K = 0,
    e = 0 when every column is constant). Two passes over column blocks: the first finds each block's exponent,
    the second accumulates the blocks brought to the common one (exact powers of two)."""
    n, p = A.shape
    blocks = _column_blocks(n, p)
    rows = slice(None)
    exps = []
    for c in blocks:
        Z, e = centre_scale(float_block(A, rows, c, name))
        exps.append(e if np.any(Z) else None)
    valid = [e for e in exps if e is not None]
    K = np.zeros((n, n), order="F")
    if not valid:
        return K, 0
    E = max(valid)
    for c, e in zip(blocks, exps):
        if e is None:
            continue
        Z, _ = centre_scale(float_block(A, rows, c, name))
        Zs = np.ldexp(Z, e - E) if e != E else Z
        K = blas.dsyrk(1.0, Zs.T, beta=1.0, c=K, trans=1, lower=0, overwrite_c=1)  # upper triangle of Z Zᵀ
    step = max(1, BLOCK_BYTES // (8 * n))
    for s in range(0, n, step):  # mirror the upper triangle, a strip at a time
        t = min(s + step, n)
        K[s:t, :s] = K[:s, s:t].T
        D = K[s:t, s:t]
        K[s:t, s:t] = np.triu(D) + np.triu(D, 1).T
    return K, E
