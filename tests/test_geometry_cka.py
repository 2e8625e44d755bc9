"""Linear CKA and HSIC (theory.geometry.cka): against the n×n Gram reference, closed forms and invariances."""
from __future__ import annotations

import numpy as np
import pytest

from theory.geometry import CrossMoments, linear_cka, linear_hsic
from theory.geometry.cka import _terms_from_data


def ref_hsic(X, Y, debiased):
    """The textbook estimators on n×n Gram matrices: K = XXᵀ, L = YYᵀ (no centring of the data)."""
    K, L = X @ X.T, Y @ Y.T
    n = K.shape[0]
    if not debiased:  # Gretton et al.: tr(KHLH)/(n − 1)²
        H = np.eye(n) - 1.0 / n
        return np.trace(K @ H @ L @ H) / (n - 1) ** 2
    Kt, Lt = K - np.diag(np.diag(K)), L - np.diag(np.diag(L))  # zeroed diagonals (Song et al. 2012)
    one = np.ones(n)
    return (np.trace(Kt @ Lt) + (one @ Kt @ one) * (one @ Lt @ one) / ((n - 1) * (n - 2))
            - 2.0 / (n - 2) * (one @ Kt @ Lt @ one)) / (n * (n - 3))


def ref_cka(X, Y, debiased):
    return ref_hsic(X, Y, debiased) / np.sqrt(ref_hsic(X, X, debiased) * ref_hsic(Y, Y, debiased))


def pair(seed, n=60, p=7, q=5, noise=1.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) + rng.standard_normal(p)
    Y = X[:, :q] @ rng.standard_normal((q, q)) + noise * rng.standard_normal((n, q)) - 3.0
    return X, Y


@pytest.mark.parametrize("debiased", [False, True])
@pytest.mark.parametrize("shape", [(60, 7, 5), (9, 20, 30), (4, 3, 2), (5, 1, 1)])
def test_cka_matches_gram_reference(debiased, shape):
    n, p, q = shape
    X, Y = pair(n + p, n, p, min(p, q) if q > p else q)
    if Y.shape[1] < q:
        Y = np.hstack([Y, np.random.default_rng(1).standard_normal((n, q - Y.shape[1]))])
    ref = ref_cka(X, Y, debiased)
    assert linear_cka(X, Y, debiased=debiased) == pytest.approx(ref, rel=1e-10, abs=1e-13)
    assert CrossMoments.from_data(X, Y, batch=3).cka(debiased) == pytest.approx(ref, rel=1e-10, abs=1e-13)
    assert linear_hsic(X, Y, debiased) == pytest.approx(ref_hsic(X, Y, debiased), rel=1e-10, abs=1e-13)


def test_gram_and_feature_routes_agree():
    X, Y = pair(3, 30, 6, 4)
    Xc, Yc = X - X.mean(0), Y - Y.mean(0)
    a, b = _terms_from_data(Xc, Yc, gram=True), _terms_from_data(Xc, Yc, gram=False)
    for k in a:
        assert a[k] == pytest.approx(b[k], rel=1e-12), k


def test_unbiased_hsic_is_unbiased_not_always_negative():
    """The wrong diagonal removal makes HSIC₁ negative for correlated data; the right one is near ‖Cov‖²."""
    rng = np.random.default_rng(5)
    vals = []
    for _ in range(200):
        x = rng.standard_normal((8, 1))
        vals.append(linear_hsic(x, x + rng.standard_normal((8, 1)), debiased=True))
    vals = np.array(vals)
    se = vals.std(ddof=1) / np.sqrt(vals.size)
    assert abs(vals.mean() - 1.0) < 4 * se  # E HSIC₁ = Cov(x, y)² = 1
    assert (vals > 0).mean() > 0.6


@pytest.mark.parametrize("debiased", [False, True])
def test_identical_and_transformed_copies_give_one(debiased):
    rng = np.random.default_rng(2)
    X = rng.standard_normal((50, 6))
    Q, _ = np.linalg.qr(rng.standard_normal((6, 6)))
    assert linear_cka(X, X, debiased) == pytest.approx(1.0, abs=1e-13)
    Y = 37.5 * X @ Q + 1e6  # rotated, rescaled, translated
    assert linear_cka(X, Y, debiased) == pytest.approx(1.0, abs=1e-10)
    assert CrossMoments.from_data(X, Y, batch=7).cka(debiased) == pytest.approx(1.0, abs=1e-10)
    # a non-isotropic rescaling is not an invariance: CKA drops below 1
    assert linear_cka(X, X * np.arange(1, 7.0), debiased) < 0.99


def test_independent_data_debiased_is_zero_in_expectation_biased_positive():
    vals, biased = [], []
    for seed in range(60):
        rng = np.random.default_rng(100 + seed)
        X, Y = rng.standard_normal((40, 5)), rng.standard_normal((40, 4))
        vals.append(linear_cka(X, Y, debiased=True))
        biased.append(linear_cka(X, Y))
    vals = np.array(vals)
    se = vals.std(ddof=1) / np.sqrt(vals.size)
    assert abs(vals.mean()) < 3 * se
    assert min(biased) > 0 and np.mean(biased) > 10 * se  # the biased estimator's positive bias (~pq/n)


def test_not_comparing_a_representation_with_itself():
    X, Y = pair(7)
    v = linear_cka(X, Y)
    assert v < 0.95 and v == pytest.approx(ref_cka(X, Y, False), rel=1e-12)
    assert linear_cka(Y, X) == pytest.approx(v, rel=1e-14)  # symmetric


@pytest.mark.parametrize("debiased", [False, True])
def test_extreme_scales_and_offsets(debiased):
    X, Y = pair(11)
    ref = linear_cka(X, Y, debiased)
    for sx, sy in [(1e150, 1e-150), (1e-150, 1.0), (1e150, 1e150)]:
        assert linear_cka(sx * X, sy * Y, debiased) == pytest.approx(ref, rel=1e-12)
        assert CrossMoments.from_data(sx * X, sy * Y, batch=13).cka(debiased) == pytest.approx(ref, rel=1e-12)
    assert linear_cka(X + 1e6, Y - 1e6, debiased) == pytest.approx(ref, rel=1e-9)


def test_hsic_units_and_overflow_is_an_error():
    X, Y = pair(12)
    h = linear_hsic(X, Y, True)
    assert linear_hsic(2 * X, 3 * Y, True) == pytest.approx(36 * h, rel=1e-12)
    with pytest.raises(ValueError, match="hsic"):
        linear_hsic(1e160 * X, 1e160 * Y)


def test_small_batches_and_degenerate_inputs_are_clear_errors():
    X, Y = pair(1, n=3)
    with pytest.raises(ValueError, match=r"X: needs at least 4 samples"):
        linear_cka(X, Y, debiased=True)
    with pytest.raises(ValueError, match=r"at least 4 samples"):
        CrossMoments.from_data(X, Y).cka(debiased=True)
    assert np.isfinite(linear_cka(X, Y))  # the biased estimator is defined for n = 3
    with pytest.raises(ValueError, match=r"X: needs at least 2"):
        linear_cka(X[:1], Y[:1])
    with pytest.raises(ValueError, match="constant"):
        linear_cka(np.ones((10, 3)), Y[:1].repeat(10, 0) + np.arange(10)[:, None])
    # one sample dominating four: HSIC₁(X, X) = 0 exactly in exact arithmetic -> an error, never NaN or inf
    Xd = np.array([[3.0], [-1.0], [-1.0], [-1.0]]) + 0.25
    with pytest.raises(ValueError, match=r"unbiased HSIC\(X, X\)|constant"):
        linear_cka(Xd, np.arange(4.0)[:, None], debiased=True)


@pytest.mark.parametrize("bad, match", [
    (np.ones(5), "X: expected a 2-D"), (np.full((5, 2), np.nan), "X: .*NaN"), (np.ones((5, 0)), "no feature"),
])
def test_bad_x(bad, match):
    with pytest.raises(ValueError, match=match):
        linear_cka(bad, np.ones((5, 2)))


def test_bad_y_and_flags():
    X = np.random.default_rng(0).standard_normal((6, 2))
    with pytest.raises(ValueError, match="Y: has 5 rows"):
        linear_cka(X, X[:5])
    with pytest.raises(TypeError, match="complex"):
        linear_cka(X, X + 1j)
    with pytest.raises(ValueError, match="debiased"):
        linear_cka(X, X, debiased="yes")


def test_inputs_not_mutated():
    X, Y = pair(4)
    X32 = X.astype(np.float32)
    cx, cy, c32 = X.copy(), Y.copy(), X32.copy()
    linear_cka(X, Y, True)
    linear_cka(X32, Y)
    CrossMoments.from_data(X, Y).cka(True)
    assert np.array_equal(X, cx) and np.array_equal(Y, cy) and np.array_equal(X32, c32)
