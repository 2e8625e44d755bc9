"""Peak memory of the metrics that read whole arrays, measured with tracemalloc (numpy's allocations are traced).

The arrays are read in blocks of about B = 4 MiB of float64 (theory.geometry._blocks.BLOCK_BYTES). Accounting
for one block of each side: the float64 conversion (float32 input only), the centring's copies (the block over
a power of two, minus its mean, the residual mean, the rescaled result: ≤ 3 alive at once) — at most 4 blocks
per side, 8·B in all — plus the metric's own state: the CrossMoments' p×p, q×q, p×q sums and their shifted copies
during a merge (≤ 3 sets: 24(p + q)² bytes), or the n×n Gram matrices when n < p. None of it grows with n:
the peak at 2n equals the peak at n. (The former implementation held 4 float64 copies of the input: 156 MiB at
n = 20 000, p = 256, against the ≤ 38 MiB allowed here; 19 MiB float64 and 27 MiB float32 measured.)
"""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from theory.geometry import CrossMoments, effective_rank, linear_cka, participation_ratio, rsa, stable_rank
from theory.geometry._blocks import BLOCK_BYTES

N, P = 20000, 256
BOUND = 8 * BLOCK_BYTES + 24 * (2 * P) ** 2


@pytest.fixture(scope="module")
def arrays():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((N, P)) + 3.0
    Y = X[:, :P // 2] @ rng.standard_normal((P // 2, P)) + rng.standard_normal((N, P))
    return X, Y


def peak(fn):
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_linear_cka_from_arrays_streams(arrays, dtype):
    X, Y = (a.astype(dtype) for a in arrays)
    for debiased in (False, True):
        assert peak(lambda: linear_cka(X, Y, debiased)) < BOUND
    assert peak(lambda: CrossMoments.from_data(X, Y).cka()) < BOUND
    assert peak(lambda: rsa(X, Y, method="corr_cov")) < BOUND


def test_peak_does_not_grow_with_the_number_of_samples(arrays):
    X, Y = arrays
    half = peak(lambda: linear_cka(X[:N // 2], Y[:N // 2]))
    full = peak(lambda: linear_cka(X, Y))
    assert full < 1.05 * half + 2**20


def test_covariance_spectrum_metrics_stream(arrays):
    X, _ = arrays
    for f in (effective_rank, stable_rank, participation_ratio):
        assert peak(lambda: f(X)) < BOUND


def test_wide_arrays_stream_through_the_gram_route():
    rng = np.random.default_rng(1)
    X, Y = rng.standard_normal((300, 20000)), rng.standard_normal((300, 15000))
    # n < p: column blocks of X, Y; the two 300×300 Gram matrices (0.7 MiB each) and the syrk result
    bound = 8 * BLOCK_BYTES + 4 * 300 ** 2 * 8
    assert peak(lambda: linear_cka(X, Y)) < bound
    assert peak(lambda: effective_rank(X)) < bound
    assert bound < 0.9 * X.nbytes
