"""Kernel CKA and HSIC (theory.geometry.kernel) and its random-feature approximation (kernel_approx).

References: dense n×n kernels built from scipy's pairwise distances (direct differences) and centred by matrix
products with H, the textbook estimators on them; mpmath at 40 digits for extreme bandwidths; the closed form
RBF CKA → linear CKA as σ → ∞.
"""
from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest
from scipy.spatial.distance import pdist, squareform

from theory.geometry import (RBFFeatureCKA, kernel_cka, kernel_hsic, linear_cka, linear_hsic, median_bandwidth,
                             rbf_cka_rff)


def pair(seed=0, n=40, p=6, q=5, offset=3.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) + offset
    Y = np.tanh(X[:, :q] @ rng.standard_normal((q, q))) + 0.4 * rng.standard_normal((n, q)) - offset
    return X, Y


def dense_hsic(K, L, estimator):
    n = K.shape[0]
    H = np.eye(n) - 1.0 / n
    if estimator == "gretton":
        return np.trace(K @ H @ L @ H) / (n - 1) ** 2
    if estimator == "song":  # Song et al. 2012, Thm 2, on zeroed diagonals
        Kt, Lt = K - np.diag(np.diag(K)), L - np.diag(np.diag(L))
        one = np.ones(n)
        return (np.trace(Kt @ Lt) + (one @ Kt @ one) * (one @ Lt @ one) / ((n - 1) * (n - 2))
                - 2.0 / (n - 2) * (one @ Kt @ Lt @ one)) / (n * (n - 3))
    Kc, Lc = H @ K @ H, H @ L @ H  # Lange et al.: 2/(n(n − 3)) Σ_{i>j} Kc_ij Lc_ij
    il = np.tril_indices(n, -1)
    return 2.0 / (n * (n - 3)) * np.sum(Kc[il] * Lc[il])


def rbf(X, sigma):
    return np.exp(-squareform(pdist(X, "sqeuclidean")) / (2.0 * sigma ** 2))


def dense_cka(X, Y, sx, sy, estimator):
    K, L = rbf(X, sx), rbf(Y, sy)
    return dense_hsic(K, L, estimator) / np.sqrt(dense_hsic(K, K, estimator) * dense_hsic(L, L, estimator))


@pytest.mark.parametrize("estimator", ["gretton", "song", "lange"])
@pytest.mark.parametrize("scale", [0.5, 1.0, 3.0])
def test_rbf_cka_and_hsic_match_dense_kernels(estimator, scale):
    X, Y = pair(1)
    sx, sy = scale * median_bandwidth(X), scale * median_bandwidth(Y)
    # both sides sum n² kernel values of size ≤ 1 with rounding ε each, then centre (a cancellation of at most
    # ‖K‖²/‖HKH‖² ≲ 1e2 here): |difference| ≲ n²ε·1e2 ≈ 4e-11 relative
    assert kernel_cka(X, Y, sigma=(sx, sy), estimator=estimator) == pytest.approx(
        dense_cka(X, Y, sx, sy, estimator), rel=1e-10)
    assert kernel_cka(X, Y, sigma="median", scale=scale, estimator=estimator) == pytest.approx(
        dense_cka(X, Y, sx, sy, estimator), rel=1e-10)
    assert kernel_hsic(X, Y, sigma=(sx, sy), estimator=estimator) == pytest.approx(
        dense_hsic(rbf(X, sx), rbf(Y, sy), estimator), rel=1e-10)


def mp_cka(X, Y, sx, sy, estimator):
    """RBF CKA at 40 significant digits: distances, kernels, centring and sums in mpmath."""
    mp.mp.dps = 40
    n = X.shape[0]

    def kernel(A, s):
        rows = [[mp.mpf(float(v)) for v in r] for r in A]
        return [[mp.exp(-sum((a - b) ** 2 for a, b in zip(rows[i], rows[j])) / (2 * mp.mpf(s) ** 2))
                 for j in range(n)] for i in range(n)]

    def centred(K):
        r = [sum(row) / n for row in K]
        s = sum(r) / n
        return [[K[i][j] - r[i] - r[j] + s for j in range(n)] for i in range(n)]

    def hsic(Kc, Lc):
        f = sum(Kc[i][j] * Lc[i][j] for i in range(n) for j in range(n))
        w = sum(Kc[i][i] * Lc[i][i] for i in range(n))
        if estimator == "gretton":
            return f / (n - 1) ** 2
        if estimator == "lange":
            return (f - w) / (n * (n - 3))
        tk, tl = sum(Kc[i][i] for i in range(n)), sum(Lc[i][i] for i in range(n))
        return (f + tk * tl / ((n - 1) * (n - 2)) - mp.mpf(n) / (n - 2) * w) / (n * (n - 3))
    Kc, Lc = centred(kernel(X, sx)), centred(kernel(Y, sy))
    return float(hsic(Kc, Lc) / mp.sqrt(hsic(Kc, Kc) * hsic(Lc, Lc)))


@pytest.mark.parametrize("estimator", ["gretton", "song", "lange"])
@pytest.mark.parametrize("scale", [0.3, 1e3, 1e6])
def test_rbf_cka_against_extended_precision_at_extreme_bandwidths(estimator, scale):
    X, Y = pair(2, n=10, p=3, q=2, offset=1e4)
    sx, sy = scale * median_bandwidth(X), scale * median_bandwidth(Y)
    # σ ≫ the spread: K ≈ 1 − d²/2σ² and the centred kernel is ~(spread/σ)² of K; stored as K − 1 (expm1) it keeps
    # its relative accuracy, so the result is good to ~n²ε ≈ 1e-13 (float64 inputs are exact in mpmath)
    assert kernel_cka(X, Y, sigma=(sx, sy), estimator=estimator) == pytest.approx(
        mp_cka(X, Y, sx, sy, estimator), rel=1e-11)


@pytest.mark.parametrize("estimator", ["gretton", "song"])
def test_large_bandwidth_tends_to_linear_cka(estimator):
    X, Y = pair(3)
    lin = linear_cka(X, Y, debiased=estimator == "song")
    # RBF CKA = linear CKA + O((spread/σ)²): at σ = 1e4·median the gap is ~1e-8 relative
    assert kernel_cka(X, Y, scale=1e4, estimator=estimator) == pytest.approx(lin, rel=1e-6)
    assert kernel_cka(X, Y, kernel="linear", estimator=estimator) == pytest.approx(lin, rel=1e-13)
    assert kernel_hsic(X, Y, kernel="linear", estimator=estimator) == pytest.approx(
        linear_hsic(X, Y, estimator == "song"), rel=1e-13)


def test_linear_lange_estimator_against_dense():
    X, Y = pair(4, n=30, p=40, q=7)  # n < p: the Gram route
    K, L = (X - X.mean(0)) @ (X - X.mean(0)).T, (Y - Y.mean(0)) @ (Y - Y.mean(0)).T
    ref = dense_hsic(K, L, "lange") / np.sqrt(dense_hsic(K, K, "lange") * dense_hsic(L, L, "lange"))
    assert kernel_cka(X, Y, kernel="linear", estimator="lange") == pytest.approx(ref, rel=1e-11)
    assert kernel_hsic(X, Y, kernel="linear", estimator="lange") == pytest.approx(dense_hsic(K, L, "lange"), rel=1e-11)


@pytest.mark.parametrize("n", [9, 10])
def test_bandwidth_conventions(n):
    X, _ = pair(5, n=n)
    d = pdist(X)
    full = np.sort(squareform(pdist(X, "sqeuclidean")).ravel())  # the n×n matrix, its n zeros included
    assert median_bandwidth(X, "median") == pytest.approx(np.median(d), rel=1e-12)
    assert median_bandwidth(X, "kornblith") == pytest.approx(np.sqrt(np.median(full)), rel=1e-12)
    lower = full[(full.size - 1) // 2]  # torch.median: the lower of the two middle values
    assert median_bandwidth(X, "ckatorch") == pytest.approx(np.sqrt(lower), rel=1e-12)
    assert median_bandwidth(1e150 * X + 7e150) == pytest.approx(1e150 * np.median(d), rel=1e-12)


def test_invariances_and_scales():
    X, Y = pair(6)
    ref = kernel_cka(X, Y)
    Q, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((6, 6)))
    for A in (X @ Q, X + 1e8, 1e150 * X, 1e-150 * X):  # rotation, offset, scale (the median bandwidth follows)
        assert kernel_cka(A, Y) == pytest.approx(ref, rel=1e-9)
    assert kernel_cka(X, X) == pytest.approx(1.0, rel=1e-14)
    assert kernel_cka(Y, X) == pytest.approx(ref, rel=1e-13)
    # a number is a bandwidth in the features' units
    s = median_bandwidth(X)
    assert kernel_cka(1e150 * X, Y, sigma=(1e150 * s, median_bandwidth(Y))) == pytest.approx(ref, rel=1e-9)


def test_errors_name_the_argument():
    X, Y = pair(7, n=6)
    with pytest.raises(ValueError, match="estimator"):
        kernel_cka(X, Y, estimator="unbiased")
    with pytest.raises(ValueError, match="kernel"):
        kernel_cka(X, Y, kernel="poly")
    with pytest.raises(ValueError, match="sigma"):
        kernel_cka(X, Y, sigma=-1.0)
    with pytest.raises(ValueError, match="sigma"):
        kernel_cka(X, Y, sigma="mean")
    with pytest.raises(ValueError, match="scale"):
        kernel_cka(X, Y, scale=0.0)
    with pytest.raises(ValueError, match="X: needs at least 4"):
        kernel_cka(X[:3], Y[:3], estimator="song")
    with pytest.raises(ValueError, match="Y: has 5 rows"):
        kernel_cka(X, Y[:5])
    with pytest.raises(ValueError, match="median pairwise distance is zero"):
        kernel_cka(np.ones((6, 2)), Y)
    with pytest.raises(ValueError, match="convention"):
        median_bandwidth(X, "mean")
    with pytest.raises(ValueError, match="X: .*NaN"):
        kernel_cka(np.where(X > 3, np.nan, X), Y)


# ---------------------------------------------------------------------------------------------- random features

def test_rff_error_is_unbiased_and_falls_like_one_over_sqrt_d():
    """Over 16 seeds: the mean error is within 3 standard errors of 0 (the three HSICs are unbiased, the ratio's
    bias O(1/D) is below that), and the error's SD falls by ~2 from D = 64 to 256 (1/√D). Sampling: the SD of
    16 draws has relative SE 1/√30 ≈ 0.18, the ratio of two √2·0.18 ≈ 0.26 in log: 3 SE is a factor e^0.77."""
    X, Y = pair(8, n=120)
    sx, sy = median_bandwidth(X), median_bandwidth(Y)
    sd = {}
    for deb in (False, True):
        exact = kernel_cka(X, Y, sigma=(sx, sy), estimator="song" if deb else "gretton")
        for D in (64, 256):
            err = np.array([rbf_cka_rff(X, Y, sx, sy, D, seed=s, debiased=deb) - exact for s in range(16)])
            assert abs(err.mean()) < 3 * err.std(ddof=1) / 4, (deb, D)
            sd[deb, D] = err.std(ddof=1)
        ratio = sd[deb, 64] / sd[deb, 256]
        assert 2 * np.exp(-0.77) < ratio < 2 * np.exp(0.77), ratio
        assert sd[deb, 256] * np.sqrt(256) < 0.6  # docs/geometry.md: SD ≈ 0.3/√D on data like these


def test_rff_streams_and_merges_exactly():
    X, Y = pair(9, n=90, offset=1e6)
    sx, sy = median_bandwidth(X), median_bandwidth(Y)
    ox, oy = X.mean(0), Y.mean(0)
    one = RBFFeatureCKA(6, 5, sx, sy, n_components=32, seed=3, origin_x=ox, origin_y=oy).update(X, Y)
    parts = [RBFFeatureCKA(6, 5, sx, sy, n_components=32, seed=3, origin_x=ox, origin_y=oy).update(X[s:s + 17],
                                                                                                   Y[s:s + 17])
             for s in range(0, 90, 17)]
    merged = parts[3]
    for p_ in parts[:3] + parts[4:]:
        merged = merged.merge(p_)
    # the same maps on the same rows: the merge of shards equals one pass to the moments' rounding (~1e-15)
    for deb in (False, True):
        assert merged.cka(deb) == pytest.approx(one.cka(deb), rel=1e-12)
    with pytest.raises(ValueError, match="seed"):
        one.merge(RBFFeatureCKA(6, 5, sx, sy, n_components=32, seed=4, origin_x=ox, origin_y=oy))
    with pytest.raises(ValueError, match="origin"):
        one.merge(RBFFeatureCKA(6, 5, sx, sy, n_components=32, seed=3, origin_x=ox + 1, origin_y=oy).update(X, Y))
    with pytest.raises(ValueError, match="sigma_x"):
        RBFFeatureCKA(6, 5, 0.0, sy)
    with pytest.raises(ValueError, match="n_components"):
        RBFFeatureCKA(6, 5, sx, sy, n_components=0)
    with pytest.raises(ValueError, match="X, Y: have"):
        one.update(X[:, :4], Y)
