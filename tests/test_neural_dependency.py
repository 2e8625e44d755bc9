"""theory.neural_dependency: dependencies between two networks (ND Sec 2.4: mixed logits and their
covariance), ND Tab 1's replaced-logit metrics, and dependencies() from logits or from a covariance."""
from __future__ import annotations

import math

import numpy as np
import pytest

import theory.dependency as dep
import theory.neural_dependency as nd


# ---- moments between two networks: the mixed logits and their covariance

def test_mixed_cov_is_the_second_moment_of_the_mixed_logits():
    rng = np.random.default_rng(4)
    F, G = rng.standard_normal((300, 4)), rng.standard_normal((300, 3))
    N = F.shape[0]
    for i in range(3):
        want = dep.second_moment(nd.mixed_logits(F, G, i))
        for cross in (F.T @ G / N, F.T @ G[:, i] / N):
            got = nd.mixed_cov(F.T @ F / N, cross, float(G[:, i] @ G[:, i] / N), i)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_mixed_logits_checks_i_against_g_categories():
    rng = np.random.default_rng(5)
    F, G = rng.standard_normal((40, 4)), rng.standard_normal((40, 2))  # g has 2 categories, 40 samples
    np.testing.assert_array_equal(nd.mixed_logits(F, G, 1)[:, 1], G[:, 1])
    with pytest.raises(ValueError, match=r"i \(category of g\) = 3 is out of range for n = 2"):
        nd.mixed_logits(F, G, 3)


@pytest.mark.parametrize("cross, g_sq, i, err, msg", [
    (np.zeros((3, 2)), 1.0, 0, ValueError, "cross_fg: expected 4 rows"),
    (np.zeros((4, 2)), 1.0, 2, ValueError, r"i \(column of cross_fg\)"),
    (np.zeros(3), 1.0, 0, ValueError, r"cross_fg: expected shape \(4,\)"),
    (np.zeros(4), True, 0, TypeError, "g_sq"),
    (np.zeros(4), "1", 0, TypeError, "g_sq"),
    (np.zeros(4), -1.0, 0, ValueError, "g_sq"),
    (np.zeros(4), np.nan, 0, ValueError, "g_sq"),
    (np.zeros(4), 0.0, 4, ValueError, "i = 4 is out of range"),
    (np.ones(4) * 5, 1.0, 0, ValueError, "not PSD"),  # |E[f_j g_i]| > √(E f_j² E g_i²): impossible moments
])
def test_mixed_cov_rejects_bad_moments(cross, g_sq, i, err, msg):
    with pytest.raises(err, match=msg):
        nd.mixed_cov(np.eye(4), cross, g_sq, i)


@pytest.mark.parametrize("g_sq", [-1.0, float("nan"), float("inf")])
def test_mixed_cov_refuses_a_negative_or_non_finite_second_moment(g_sq):
    """ND Sec 2.4 (dependencies between two networks): E[g_i²] is a second moment, finite and ≥ 0."""
    from theory.neural_dependency import mixed_cov
    C = np.array([[2.0, 0.5], [0.5, 1.0]])
    with pytest.raises(ValueError, match=r"g_sq: E\[g_i\^2\] must be finite and >= 0"):
        mixed_cov(C, np.array([0.3, 0.2]), g_sq, 0)


def test_mixed_cov_allows_a_dead_logit():
    m = nd.mixed_cov(np.eye(4), np.zeros(4), 0.0, 1)  # g_i ≡ 0: E[g_i²] = 0 is a valid moment
    assert np.array_equal(m, np.diag([1.0, 0.0, 1.0, 1.0]))


# ---- ND Tab 1's replaced-logit metrics

def test_replaced_logit_metrics_closed_cases():
    """ND Tab 1: f̂_i = Σ_{j≠i} θ_j f_j. An exact linear dependency gives abs_err = 0 and the original accuracy;
    θ = 0 off i gives f̂_i = 0, so abs_err = mean|f_i| and rel_err = 1."""
    rng = np.random.default_rng(9)
    F = rng.standard_normal((200, 4))
    F[:, 2] = 2.0 * F[:, 0] - F[:, 1] + 0.5 * F[:, 3]
    y = F.argmax(axis=1)
    m = nd.replaced_logit_metrics(F, y, 2, [2.0, -1.0, -1.0, 0.5])
    assert m["abs_err"] == pytest.approx(0.0, abs=1e-12) and m["acc"] == m["orig_acc"] == 1.0
    assert m["n_pos"] == int(np.sum(y == 2)) and m["pos_acc"] == 1.0
    m0 = nd.replaced_logit_metrics(F, y, 2, [0.0, 0.0, -1.0, 0.0])
    assert m0["abs_err"] == pytest.approx(np.mean(np.abs(F[:, 2])), rel=1e-12)
    assert m0["rel_err"] == pytest.approx(1.0, rel=1e-12)


def test_replaced_logit_metrics_zero_target_logit():
    """ND Tab 1's Rel Err = mean|t_i − f̂_i| / mean|t_i|: for a dead target logit (t_i ≡ 0) it is 0 when the
    replacement is exact too and +inf otherwise — never a ZeroDivisionError or NaN."""
    F = np.random.default_rng(3).standard_normal((12, 3))
    F[:, 0] = 0.0
    y = np.arange(12) % 3
    exact = nd.replaced_logit_metrics(F, y, 0, [-1.0, 0.0, 0.0])
    assert exact["abs_err"] == 0.0 and exact["rel_err"] == 0.0
    off = nd.replaced_logit_metrics(F, y, 0, [-1.0, 0.5, 0.0])
    assert off["abs_err"] == pytest.approx(np.mean(np.abs(0.5 * F[:, 1]))) and off["rel_err"] == math.inf


def test_replaced_logit_metrics_rejects_non_integer_labels():
    F = np.random.default_rng(1).standard_normal((20, 3))
    y = F.argmax(axis=1)
    for bad in (y.astype(float), y.astype(bool), y + 0.5):
        with pytest.raises(ValueError, match="labels: must be integers"):
            nd.replaced_logit_metrics(F, bad, 0, [-1.0, 0.5, 0.5])
    for bad in (-1, 3):
        with pytest.raises(ValueError, match=r"labels: must lie in \[0, 3\)"):
            nd.replaced_logit_metrics(F, np.where(np.arange(20) == 0, bad, y), 0, [-1.0, 0.5, 0.5])


# ---- dependencies(): from logits or from a covariance

def test_dependencies_auto_kind_and_its_errors():
    """ND Eq 2 from logits or from Cov = FᵀF/N: kind='auto' reads a non-square array, or any array with labels,
    as logits (the same answer as kind='logits'); the mixed-up combinations are errors that say what to pass."""
    rng = np.random.default_rng(5)
    F = rng.standard_normal((40, 4)) @ np.array([[1, 0.5, 0, 0], [0, 1, 0.3, 0], [0, 0, 1, 0], [0.2, 0, 0, 1.0]])
    a, b = nd.dependencies(F, 1, rho=0.3), nd.dependencies(F, 1, rho=0.3, kind="logits")
    c = nd.dependencies(F.T @ F / 40, 1, rho=0.3, kind="cov")
    np.testing.assert_allclose(a.theta, b.theta, rtol=0, atol=0)
    np.testing.assert_allclose(a.theta, c.theta, rtol=1e-9, atol=1e-12)
    Fs = F[:4]  # square logits (N = n = 4): labels make them logits
    y = np.arange(4)
    sq = nd.dependencies(Fs, 1, rho=0.3, labels=y)
    assert sq.metrics is not None and sq.metrics["n_pos"] == 1
    with pytest.raises(ValueError, match="cross=/g_sq= go with a covariance"):
        nd.dependencies(F, 1, rho=0.3, cross=np.zeros(4), g_sq=1.0)
    with pytest.raises(ValueError, match="logits: need at least 2 samples, got 1"):
        nd.dependencies(F[:1], 1, rho=0.3)


def test_spread_relative_error_can_fail_where_the_abs_relative_one_cannot():
    """Logits sharing a large offset (every glyph logit ≈ −37): a constant prediction has |f|-relative error 0.03
    (Table 1's 0.3 passed whatever the fit) but spread-relative error ≈ 1 (the fit does no better than a constant)."""
    rng = np.random.default_rng(0)
    F = rng.normal(size=(500, 6)) - 37.0
    y = F.argmax(1)
    theta = np.zeros(6)
    theta[0] = -1.0
    theta[1] = F[:, 0].mean() / F[:, 1].mean()  # predicts f_0 by a constant multiple of f_1 ≈ the mean of f_0
    m = nd.replaced_logit_metrics(F, y, 0, theta)
    assert m["rel_err"] < 0.05 and m["spread_rel_err"] > 0.9
    exact = F.copy()
    exact[:, 0] = 0.7 * F[:, 1] + 0.3 * F[:, 2]
    m2 = nd.replaced_logit_metrics(exact, exact.argmax(1), 0, [-1.0, 0.7, 0.3, 0, 0, 0])
    assert m2["spread_rel_err"] < 1e-12 and m2["support"] == 2


def test_many_pairs_equal_one_pair_at_a_time_with_bias_and_between_networks():
    """replaced_logit_metrics_many (top-2 argmax, O(N) per pair) against the plain function, pair by pair: within a
    network with a classifier bias, between two networks (g's column replaced), with and without labels."""
    rng = np.random.default_rng(3)
    N, n = 400, 9
    F = rng.normal(size=(N, n)) * rng.uniform(0.5, 3, n) + rng.normal(size=(N, 1))
    G = F @ rng.normal(size=(n, n)) * 0.3 + rng.normal(size=(N, n))
    b = rng.normal(size=n)
    y = rng.integers(0, n, N)
    pairs = [(i, rng.normal(size=n) * (rng.random(n) < 0.4)) for i in range(n) for _ in range(3)]
    for labels in (y, None):
        for E, off in ((None, b), (G, None), (G, b)):
            many = nd.replaced_logit_metrics_many(F, labels, pairs, offset=off, evaluated=E)
            for (i, th), m in zip(pairs, many):
                ref = nd.replaced_logit_metrics(F, labels, i, th, evaluated=E, offset=off)
                for k, v in ref.items():
                    assert (m[k] == v) if v is None or isinstance(v, int) else m[k] == pytest.approx(v, rel=1e-12), k


def test_many_pairs_in_small_blocks_equal_one_block(monkeypatch):
    """The pairs are computed in blocks by support size (empty, sparse and dense supports): blocks of one pair
    give the numbers of one block of all, to rounding (the replaced logit's sum of s products may be ordered
    differently by einsum at another block shape: ≤ s ulp of its terms)."""
    rng = np.random.default_rng(8)
    N, n = 300, 12
    F = rng.normal(size=(N, n)) + 3.0
    y = rng.integers(0, n, N)
    b = rng.normal(size=n)
    pairs = [(i, rng.normal(size=n) * (rng.random(n) < q)) for i in range(n) for q in (0.0, 0.15, 0.6)]
    whole = nd.replaced_logit_metrics_many(F, y, pairs, offset=b)
    monkeypatch.setattr(nd, "_BLOCK_ELEMS", 1)
    small = nd.replaced_logit_metrics_many(F, y, pairs, offset=b)
    sizes = {m["support"] for m in whole}
    assert 0 in sizes and any(0 < s < n // 4 for s in sizes) and max(sizes) >= n // 4
    for m, r in zip(small, whole):
        for k, v in r.items():
            assert (m[k] == v) if v is None or isinstance(v, int) else m[k] == pytest.approx(v, rel=1e-13, abs=0), k


def test_between_all_equals_covlasso_on_each_mixed_covariance():
    """between_all (one validation, a reused buffer) against covlasso on mixed_cov for every target (ND Sec 2.4)."""
    from theory.covlasso import covlasso

    rng = np.random.default_rng(5)
    N, n = 300, 7
    F = rng.normal(size=(N, 4)) @ rng.normal(size=(4, n)) + 0.1 * rng.normal(size=(N, n))
    G = F @ rng.normal(size=(n, n)) * 0.5 + 0.05 * rng.normal(size=(N, n))
    cov_f, cross, g_sq = F.T @ F / N, F.T @ G / N, (G * G).sum(0) / N
    for rho in (0.3, 0.05):
        Th = nd.between_all(cov_f, cross, g_sq, rho)
        for i in range(n):
            ref = covlasso(nd.mixed_cov(cov_f, cross, g_sq[i], i), i, rho=rho)
            assert np.allclose(Th[i], ref, rtol=0, atol=1e-12), (rho, i)
