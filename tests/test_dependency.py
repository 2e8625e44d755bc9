"""ND closed forms: property tests (hypothesis) and bad input."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sims.spd import gram, lowrank_logits, spd_with_condition
from theory import dependency as dep
from theory.covlasso import covlasso_cd

seeds = st.integers(0, 2**32 - 1)


@settings(max_examples=40, deadline=None)
@given(seed=seeds, n=st.integers(2, 12), logcond=st.floats(0, 8))
def test_floor_is_minimum_of_constrained_quadratic(seed, n, logcond):
    rng = np.random.default_rng(seed)
    c = spd_with_condition(n, 10**logcond, rng, scale=10 ** rng.uniform(-3, 3))
    floor = dep.error_floor(c)
    for i in range(n):
        th = dep.theta_floor(c, i)
        assert th[i] == -1.0
        assert np.isclose(th @ c @ th, floor[i], rtol=1e-6)
        # any other feasible θ does no better
        other = th + rng.standard_normal(n) * 0.1
        other[i] = -1.0
        assert other @ c @ other >= floor[i] * (1 - 1e-9)
    # floor between 0 and Cov_ii (ND Eq 5), relative floor in (0, 1]
    assert np.all(floor > 0) and np.all(floor <= np.diag(c) * (1 + 1e-9))
    R = dep.relative_floor(c)
    assert np.all(R <= 1 + 1e-9) and np.allclose(R, dep.relative_floor_eigen(c), rtol=1e-5)


@settings(max_examples=25, deadline=None)
@given(seed=seeds, n=st.integers(2, 8))
def test_lambda_max_is_where_the_path_leaves_minus_e_i(seed, n):
    rng = np.random.default_rng(seed)
    c = spd_with_condition(n, 10 ** rng.uniform(0, 3), rng)
    i = int(rng.integers(n))
    lm = dep.lambda_max(c)[i]
    e = np.zeros(n)
    e[i] = -1
    assert np.array_equal(covlasso_cd(c, i, lm * 1.001), e)
    assert not np.array_equal(covlasso_cd(c, i, lm * 0.99), e)


def test_singular_cov_has_zero_floor_massive_categories():
    rng = np.random.default_rng(0)
    F = lowrank_logits(500, 40, 10, 0.0, rng)  # n = 40 logits of a rank-10 model: ND Sec 2.2
    floor = dep.error_floor(gram(F))
    assert np.all(floor == 0.0)
    th = dep.theta_floor(gram(F), 3)
    assert np.allclose(F @ th, 0, atol=1e-8 * np.abs(F).max())


def test_det_ratio_is_nan_for_large_logit_cov():
    rng = np.random.default_rng(1)
    c = gram(lowrank_logits(800, 400, 80, 1e-3, rng))
    r = dep.det_ratio(c, 0, raw=True)
    assert not np.isfinite(r) or r == 0
    with pytest.raises(ValueError, match="under/overflow"):
        dep.det_ratio(c, 0)
    assert np.isfinite(dep.error_floor(c)[0]) and dep.error_floor(c)[0] > 0


@pytest.mark.parametrize("bad, msg", [
    (np.ones((3, 4)), "square"),
    (np.array([[1.0, 2.0], [0.0, 1.0]]), "not symmetric"),
    (np.array([[1.0, 2.0], [2.0, 1.0]]), "not PSD"),
    (np.array([[1.0, np.nan], [np.nan, 1.0]]), "NaN at column 1"),
    (np.array([[np.inf, 0.0], [0.0, 1.0]]), "Inf"),
    (np.ones((1, 1)), "at least 2"),
    (np.zeros((0, 0)), "empty"),
    (np.ones(3), "2-D"),
])
def test_bad_covariance_is_a_clear_error(bad, msg):
    with pytest.raises(ValueError, match=msg):
        dep.error_floor(bad)


def test_bad_index_and_relative_floor_of_dead_logit():
    c = np.diag([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="out of range"):
        dep.theta_floor(c, 3)
    with pytest.raises(ValueError, match="no energy"):
        dep.relative_floor(np.diag([1.0, 0.0, 2.0]))
    with pytest.raises(ValueError, match="lam"):
        covlasso_cd(c, 0, -1.0)
