"""Branches of theory/ that no other test executes (issue 15: mutation kill rate).

Each test reaches one rarely taken branch through a public entry point and asserts its specific outcome:
the exact error type with the distinctive part of its message, or the exact value against an independent
computation, so that a ``raise → pass`` mutant, a flipped condition or a boundary shift (``<=`` → ``<``)
makes it fail.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

from theory import covlasso as cl
from theory import dependency as dp
from theory import rank as rk
from theory.validate import as_float_array

C3 = np.array([[1.0, 0.5, 0.2], [0.5, 1.0, 0.1], [0.2, 0.1, 1.0]])
# category 0 uncorrelated with the others: λ_max(0) = 0
C_ISO = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.5], [0.0, 0.5, 1.0]])
# near-collinear correlation matrix: the regression of f0 on (f1, f2) has coefficients ≈ (10.05, −9.95)
K_COLL = np.array([[1.0, 0.1, 0.08], [0.1, 1.0, 0.999], [0.08, 0.999, 1.0]])


class _DtypeRaises:
    """An object whose ``.dtype`` raises TypeError: np.iscomplexobj propagates it (it only catches AttributeError)."""

    @property
    def dtype(self):
        raise TypeError("no dtype here")


RAGGED = [[1.0, 2.0], [3.0]]


# ------------------------------------------------------------------------------------------ covlasso

def test_covlasso_cd_zero_energy_category_is_an_error():
    """covlasso_cd: a predictor category with Cov_jj = 0 exactly is a ValueError naming that category j."""
    cov = np.diag([1.0, 1.0, 0.0])  # zero row/column 2: PSD, boundary Cov_jj = 0
    with pytest.raises(ValueError, match=r"Cov\[2,2\] = 0: category 2 has no energy"):
        cl.covlasso_cd(cov, 0, 0.1)
    # the target itself may have no energy: it is not among the predictors, so no error
    th = cl.covlasso_cd(cov, 2, 0.1)
    np.testing.assert_array_equal(th, [0.0, 0.0, -1.0])


def test_covlasso_zero_covariance_gives_minus_e_i():
    """The zero Cov (max Cov_jj = 0, the boundary of the scaling) is solved unscaled: θ* = −e_i for every λ."""
    z = np.zeros((3, 3))
    for i in range(3):
        np.testing.assert_array_equal(cl.covlasso(z, i, lam=1.0), -np.eye(3)[i])
        np.testing.assert_array_equal(cl.covlasso(z, i, lam=0.0), -np.eye(3)[i])
    np.testing.assert_array_equal(cl.covlasso_all(z, lam=0.0), -np.eye(3))
    p = cl.covlasso_path(z, 1)
    np.testing.assert_array_equal(p.breakpoints, [0.0])
    np.testing.assert_array_equal(p.coefs, [[0.0, -1.0, 0.0]])
    # λ_max(i) = 0: the exact optimum −e_i has KKT residual 0, anything else is infinitely far
    assert cl.kkt_violation(z, 0, 1.0, [-1.0, 0.0, 0.0]) == 0.0
    assert cl.kkt_violation(z, 0, 1.0, [-1.0, 0.25, 0.0]) == np.inf


def test_covlasso_path_breakpoint_overflow_is_an_error():
    """covlasso_path: a λ_max(i) = 2|Cov_ij| beyond float64 is a ValueError, never an inf breakpoint."""
    big = 1.7e308 * np.array([[1.0, 0.9], [0.9, 1.0]])  # valid Cov; 2·0.9·1.7e308 > DBL_MAX
    with pytest.raises(ValueError, match=r"λ_max\(i\) overflows float64"):
        cl.covlasso_path(big, 0)
    # just inside the range the path is returned, with the exact λ_max(i)
    ok = 0.5e308 * np.array([[1.0, 0.9], [0.9, 1.0]])
    np.testing.assert_allclose(cl.covlasso_path(ok, 0).breakpoints[0], 2 * 0.9 * 0.5e308, rtol=1e-15)


def test_resolve_lambda_rho_overflow_is_an_error():
    """rho·λ_max(i) beyond float64 is a ValueError (resolve_lambda directly, and covlasso(rho=) via the scaled Cov)."""
    big = 1.7e308 * np.array([[1.0, 0.9], [0.9, 1.0]])
    with pytest.raises(ValueError, match=r"rho: ρ·λ_max\(i\) overflows float64"):
        cl.resolve_lambda(big, 0, None, 1.0)
    with pytest.raises(ValueError, match=r"rho: ρ·λ_max\(i\) overflows float64"):
        cl.covlasso(C3, 0, rho=1e308)
    assert cl.resolve_lambda(C3, 0, None, 0.5) == 0.5 * 2 * 0.5


def test_path_at_just_below_single_breakpoint():
    """CovLassoPath.at: a λ within rounding below a path of one breakpoint (λ_max) reads θ* there, finite and exact."""
    p = cl.covlasso_path(C3, 0, [1.0])  # λ_max(0) = 2·0.5 = 1: the path is the single point θ* = −e_0
    np.testing.assert_array_equal(p.breakpoints, [1.0])
    lam = np.nextafter(1.0, 0.0)  # inside the 1e-15 tolerance of the last breakpoint, so allowed
    np.testing.assert_array_equal(p.at(lam), [-1.0, 0.0, 0.0])


def test_path_at_equal_lowest_knots():
    """CovLassoPath.at: two equal lowest breakpoints (zero-length segment) give the coefficients there, never 0/0."""
    coefs = np.array([[-1.0, 0.0, 0.0], [-1.0, 0.3, 0.0], [-1.0, 0.5, 0.25]])
    p = cl.CovLassoPath(i=0, breakpoints=np.array([2.0, 1.0, 1.0]), coefs=coefs)
    out = p.at(np.nextafter(1.0, 0.0))
    np.testing.assert_array_equal(out, coefs[-1])
    # an interior λ still interpolates linearly on the non-degenerate segment [1, 2]
    np.testing.assert_allclose(p.at(1.5), 0.5 * coefs[0] + 0.5 * coefs[1], rtol=0, atol=1e-16)


def test_kkt_violation_theta_overflow_is_an_error():
    """kkt_violation: a θ so large that Ĉov θ̂ overflows is a ValueError, never an inf/NaN residual."""
    with pytest.raises(ValueError, match=r"theta: Ĉov θ̂ overflows float64"):
        cl.kkt_violation(C_ISO, 0, 0.5, [-1.0, 1.5e308, 1.5e308])


def test_kkt_violation_uncorrelated_target():
    """kkt_violation with λ_max(i) = 0 (f_i uncorrelated with all): 0 at θ̂ = 0, inf for any other θ̂."""
    assert cl.kkt_violation(C_ISO, 0, 0.5, [-1.0, 0.0, 0.0]) == 0.0
    assert cl.kkt_violation(C_ISO, 0, 0.0, [-1.0, 0.0, 0.0]) == 0.0
    assert cl.kkt_violation(C_ISO, 0, 0.5, [-1.0, 0.5, 0.0]) == np.inf
    # the same θ̂ = 0 for a correlated target (λ_max > 0) is measured in units of λ_max: (|−0.5| − 0.1/2)/1
    assert cl.kkt_violation(C_ISO, 1, 0.1, [0.0, -1.0, 0.0]) == pytest.approx(0.45, rel=1e-15)
    np.testing.assert_array_equal(cl.kkt_violation_all(C_ISO, -np.eye(3), lam=0.5), [0.0, 0.25, 0.25])


def test_kkt_violation_all_overflow_is_an_error():
    """kkt_violation_all: a Θ so large that Θ·Cov overflows is a ValueError."""
    T = -np.eye(3)
    T[0, 1] = T[0, 2] = 1.5e308
    with pytest.raises(ValueError, match=r"Theta: Θ·Cov overflows float64"):
        cl.kkt_violation_all(C_ISO, T, lam=0.5)


# ------------------------------------------------------------------------------------------ dependency

@pytest.mark.parametrize("bad", [RAGGED, _DtypeRaises(), [["a", "b"]], object()],
                         ids=["ragged", "dtype-raises", "strings", "object"])
def test_second_moment_unreadable_input(bad):
    """second_moment: ragged or non-numeric logits are a ValueError 'cannot be read as a float64 array'."""
    with pytest.raises(ValueError, match=r"logits: cannot be read as a float64 array"):
        dp.second_moment(bad)


@pytest.mark.parametrize("shape", [(0, 3), (3, 0)])
def test_second_moment_empty(shape):
    """second_moment: an empty 2-D logit array is a ValueError naming its shape."""
    with pytest.raises(ValueError, match=r"logits: is empty \(shape \(%d, %d\)\)" % shape):
        dp.second_moment(np.zeros(shape))


def test_second_moment_fortran_order():
    """second_moment: a Fortran-ordered F gives FᵀF/N, the same as C order (to rounding)."""
    rng = np.random.default_rng(15)
    Fc = rng.standard_normal((37, 5)) + np.arange(5)  # nonzero means: not a symmetric-by-accident product
    Ff = np.asfortranarray(Fc)
    assert Ff.flags.f_contiguous and not Ff.flags.c_contiguous
    ref = Fc.T @ Fc / Fc.shape[0]
    got = dp.second_moment(Ff)
    assert got.shape == (5, 5)
    np.testing.assert_allclose(got, ref, rtol=1e-14, atol=1e-14 * np.abs(ref).max())
    np.testing.assert_allclose(got, dp.second_moment(Fc), rtol=1e-14, atol=1e-14 * np.abs(ref).max())
    np.testing.assert_array_equal(got, got.T)


@pytest.mark.parametrize("order", ["C", "F"])
def test_second_moment_does_not_copy_contiguous_logits(order):
    """second_moment: a C- or Fortran-ordered F is read in place (one dsyrk, no copy of the N×n logits)."""
    import tracemalloc

    F = np.asarray(np.random.default_rng(16).standard_normal((20000, 4)), order=order)
    ref = dp.second_moment(F)  # warm-up: lazy imports and BLAS set-up are not counted
    tracemalloc.start()
    try:
        got = dp.second_moment(F)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(got, ref)
    assert peak < F.nbytes / 10, f"peak allocation {peak} B for {F.nbytes} B of logits: F was copied"


def test_error_floor_single_energetic_category():
    """error_floor: with one energetic category it has nothing to predict from, so its floor is Cov_ii (others 0)."""
    cov = np.diag([2.0, 0.0])
    np.testing.assert_array_equal(dp.error_floor(cov), [2.0, 0.0])
    np.testing.assert_array_equal(dp.error_floor(cov, null_tol=0.5), [2.0, 0.0])


def test_theta_floor_single_energetic_category():
    """theta_floor: with one energetic category θ*(0) = −e_i (no predictor), also for the zero-energy one."""
    cov = np.diag([2.0, 0.0])
    np.testing.assert_array_equal(dp.theta_floor(cov, 0), [-1.0, 0.0])
    np.testing.assert_array_equal(dp.theta_floor(cov, 1), [0.0, -1.0])


def _scaled(K, d):
    s = np.sqrt(np.asarray(d, dtype=float))
    return K * s[:, None] * s[None, :]


def test_theta_floor_overflow_is_an_error():
    """theta_floor: θ*(0)_j = ψ_j·√(Cov_ii/Cov_jj) beyond float64 is a ValueError, never inf."""
    beta = np.linalg.solve(K_COLL[1:, 1:], K_COLL[1:, 0])  # θ*(0) of the correlation matrix, ≈ (10.05, −9.95)
    np.testing.assert_allclose(dp.theta_floor(K_COLL, 0), np.r_[-1.0, beta], rtol=1e-12)
    # scale ratio √(1e300/1e-300) = 1e300: finite, θ*(0) scaled exactly
    np.testing.assert_allclose(dp.theta_floor(_scaled(K_COLL, [1e300, 1e-300, 1e-300]), 0),
                               np.r_[-1.0, beta * 1e300], rtol=1e-12)
    # ratio √(1e308/1e-307) ≈ 3.2e307, times |ψ| ≈ 10: beyond DBL_MAX
    with pytest.raises(ValueError, match=r"θ\*\(0\) overflows float64"):
        dp.theta_floor(_scaled(K_COLL, [1e308, 1e-307, 1e-307]), 0)


def test_prediction_error_theta_overflow_is_an_error():
    """prediction_error: θ_j·√Cov_jj beyond float64 is a ValueError."""
    with pytest.raises(ValueError, match=r"theta: θ_j·√Cov_jj overflows float64"):
        dp.prediction_error(4.0 * np.eye(2), [1e308, 1e308])


def test_prediction_error_zero_combination():
    """prediction_error: θ = 0, or θ only on zero-energy categories, has error exactly 0 (no 0/0)."""
    assert dp.prediction_error(4.0 * np.eye(2), [0.0, 0.0]) == 0.0
    assert dp.prediction_error(np.diag([1.0, 0.0]), [0.0, 5.0]) == 0.0
    # the smallest nonzero θ gives a nonzero, finite answer through the scaled route: 4·(1e-300)² underflows to 0
    assert dp.prediction_error(4.0 * np.eye(2), [1e-150, 0.0]) == pytest.approx(4e-300, rel=1e-14)


def test_lambda_max_needs_two_categories():
    """lambda_max: n = 1 is a ValueError; n = 2 (the boundary) works: λ_max = 2|Cov_01|."""
    with pytest.raises(ValueError, match=r"cov: need at least 2 categories"):
        dp.lambda_max([[1.0]])
    np.testing.assert_array_equal(dp.lambda_max([[1.0, 0.25], [0.25, 1.0]]), [0.5, 0.5])


def test_det_ratio_needs_two_categories():
    """det_ratio: n = 1 is a ValueError; n = 2 (the boundary) gives det Cov / Cov_11."""
    with pytest.raises(ValueError, match=r"cov: need at least 2 categories"):
        dp.det_ratio([[1.0]], 0)
    assert dp.det_ratio([[1.0, 0.5], [0.5, 2.0]], 0) == pytest.approx((2.0 - 0.25) / 2.0, rel=1e-14)


# ------------------------------------------------------------------------------------------ rank

@pytest.mark.parametrize("exc", [ValueError, OSError, AttributeError])
def test_check_alloc_without_sysconf(monkeypatch, exc):
    """Where os.sysconf fails, the memory guard is skipped and the ψ-law is still computed."""
    def fail(name):
        raise exc(name)

    monkeypatch.setattr(os, "sysconf", fail)
    np.testing.assert_allclose(rk.lyapunov_law(2), [0.5 * (np.log(2.0) + (-np.euler_gamma)),
                                                    0.5 * (np.log(2.0) + (-np.euler_gamma - 2 * np.log(2.0)))],
                               rtol=1e-14)


def test_check_alloc_boundary(monkeypatch):
    """The memory guard refuses strictly more than half the physical memory; exactly half is allowed."""
    pages = {"SC_PHYS_PAGES": 48, "SC_PAGE_SIZE": 1}  # total 48 bytes: half is 24 = one ψ-law exponent (24·n)
    monkeypatch.setattr(os, "sysconf", lambda name: pages[name])
    assert rk.lyapunov_law(1).shape == (1,)
    with pytest.raises(MemoryError, match=r"n = 2 exponents"):
        rk.lyapunov_law(2)


def test_weyl_delta_max_zero_perturbation():
    """weyl_delta_max: D = 0 never changes the rank, δ_max = inf (also for a rank-deficient W)."""
    assert rk.weyl_delta_max(np.eye(3), 0.1, np.zeros((3, 3))) == np.inf
    assert rk.weyl_delta_max(np.diag([1.0, 0.0]), 0.1, np.zeros((2, 2))) == np.inf


# ------------------------------------------------------------------------------------------ validate

@pytest.mark.parametrize("bad", [RAGGED, _DtypeRaises()], ids=["ragged", "dtype-raises"])
def test_as_float_array_unreadable(bad):
    """as_float_array: input on which np.iscomplexobj itself raises is a ValueError 'cannot be read', not a crash."""
    with pytest.raises(ValueError, match=r"x: cannot be read as a float64 array"):
        as_float_array(bad, "x")
