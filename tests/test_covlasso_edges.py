"""theory.covlasso beyond the homotopy: the reference coordinate descent (stopping rule, steps), KKT residuals
in units of λ_max (ND Eq 7), λ from ρ, reading a path between breakpoints, and zero, smallest-normal, subnormal
and overflowing covariances (each a right answer or an error that names it, never inf or NaN)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from theory import covlasso as cl

C3 = np.array([[2.0, 0.5, 0.1], [0.5, 1.0, 0.2], [0.1, 0.2, 1.5]])


# ---- the reference coordinate descent: stopping rule, steps, a category without energy

def test_covlasso_cd_stopping_rule_is_relative_to_theta():
    """CD stops when a sweep moves no coordinate by more than tol·(1 + max|θ̂|). Two predictors with correlation
    0.99 make CD contract by ≈ ρ² ≈ 0.98 a sweep (~125 sweeps a decade); the target is 1e6·(f_0 − 2f_1), so
    |θ̂| ≈ 2e6. The relative rule at tol = 1e-8 needs ~800 sweeps; an absolute one (changes ≤ 1e-8, i.e.
    6.3 decades further) ~1,600: 1,100 sweeps separate the two by ~2.4 decades either way."""
    rng = np.random.default_rng(7)
    z = rng.standard_normal((400, 3))
    F = np.column_stack([z[:, 0], 0.99 * z[:, 0] + 0.141 * z[:, 1], z[:, 2]])
    F = np.column_stack([F, 1e6 * (F[:, 0] - 2 * F[:, 1]) + rng.standard_normal(400)])
    c = F.T @ F / 400
    lam = 1e-9 * 2 * np.abs(c[:3, 3]).max()
    ref = cl.covlasso(c, 3, lam)
    got = cl.covlasso_cd(c, 3, lam, tol=1e-8, max_sweeps=1100)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-5 * np.abs(ref).max())
    with pytest.raises(RuntimeError, match="no convergence in 100 sweeps"):
        cl.covlasso_cd(c, 3, lam, tol=1e-8, max_sweeps=100)


def test_covlasso_cd_one_sweep_ends_when_its_change_is_within_tol_of_one_plus_theta():
    """ND Eq 6 by CD: the loop ends after the first sweep whose largest change is ≤ tol·(1 + max|θ|). From θ = 0
    the first sweep changes each coordinate by its new value, so at tol = 0.5 and max|θ| ≤ 1 one sweep ends it;
    that sweep is one Gauss–Seidel pass of soft-thresholded updates θ_j = S(b_j − Σ_{k≠j} C_jk θ_k, λ/2)/C_jj."""
    i, lam = 2, 0.05
    got = cl.covlasso_cd(C3, i, lam, tol=0.5, max_sweeps=1)
    rest = [0, 1]
    C, b = C3[np.ix_(rest, rest)], C3[rest, i]
    t = np.zeros(2)
    for j in range(2):
        z = b[j] - sum(C[j, k] * t[k] for k in range(2) if k != j)
        t[j] = np.sign(z) * max(abs(z) - lam / 2, 0.0) / C[j, j]
    assert np.abs(t).max() <= 1 and np.abs(t).max() > 0
    np.testing.assert_allclose(got[rest], t, rtol=1e-14, atol=0)
    assert got[i] == -1.0


def test_covlasso_cd_default_tol_leaves_no_sweep_change_above_1e13():
    """covlasso_cd stops at the first sweep whose largest change is ≤ tol·(1 + max|θ|), tol = 1e−13 by default. On
    a slowly converging problem (equicorrelated categories, ρ = 0.95: each sweep shrinks the error by a factor
    close to 1) one more Gauss–Seidel sweep, written out here, must then change no coordinate by more than
    1e−13·(1 + max|θ|): a looser default would stop where the next sweep still moves θ by more."""
    from theory.covlasso import covlasso_cd
    n, rho, i, lam = 8, 0.95, 0, 0.01
    C = np.full((n, n), rho) + (1 - rho) * np.eye(n)
    C[0, 1:] = C[1:, 0] = np.linspace(0.6, 0.55, n - 1)
    assert np.all(np.linalg.eigvalsh(C) > 0)
    th = covlasso_cd(C, i, lam)
    rest = np.arange(1, n)
    A, b, t = C[np.ix_(rest, rest)], C[rest, i], th[rest].copy()
    worst = 0.0
    for j in range(n - 1):
        z = b[j] - A[j] @ t + A[j, j] * t[j]
        new = np.sign(z) * max(abs(z) - lam / 2, 0.0) / A[j, j]
        worst, t[j] = max(worst, abs(new - t[j])), new
    assert 0.0 < worst <= 1e-13 * (1 + np.abs(th[rest]).max())


def test_covlasso_cd_takes_a_coordinate_step_of_exactly_one():
    """n = 2, Cov = [[4, 1.5], [1.5, 1]], λ = 1: ND Eq 6 in one coordinate, θ_1 = (b − λ/2)/Ĉov = (1.5 − 0.5)/1 = 1,
    reached by coordinate descent in one step of exactly 1 (any step size must be taken, 1 included)."""
    from theory.covlasso import covlasso, covlasso_cd
    C = np.array([[4.0, 1.5], [1.5, 1.0]])
    np.testing.assert_array_equal(covlasso_cd(C, 0, 1.0), [-1.0, 1.0])
    np.testing.assert_allclose(covlasso(C, 0, 1.0), [-1.0, 1.0], rtol=1e-15)


def test_covlasso_cd_zero_energy_category_is_an_error():
    """covlasso_cd: a predictor category with Cov_jj = 0 exactly is a ValueError naming that category j."""
    cov = np.diag([1.0, 1.0, 0.0])  # zero row/column 2: PSD, boundary Cov_jj = 0
    with pytest.raises(ValueError, match=r"Cov\[2,2\] = 0: category 2 has no energy"):
        cl.covlasso_cd(cov, 0, 0.1)
    # the target itself may have no energy: it is not among the predictors, so no error
    th = cl.covlasso_cd(cov, 2, 0.1)
    np.testing.assert_array_equal(th, [0.0, 0.0, -1.0])


# ---- KKT residuals (ND Eq 7) in units of λ_max

# category 0 uncorrelated with the others: λ_max(0) = 0
C_ISO = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.5], [0.0, 0.5, 1.0]])


def test_kkt_violation_all_is_in_units_of_lambda_max_and_follows_the_scale():
    """Θ = −I on Cov = [[1, .25], [.25, 1]], ρ = 0.5: every off-support |G_ij| = 0.25 exceeds λ/2 = ρλ_max/2 = 0.125
    by 0.125 = 0.25 λ_max. And an absolute λ is taken in Cov's units: covlasso_all's rows at λ = 0.5 for a Cov
    scaled by 8 (stored in another power-of-two frame) meet KKT to rounding. (And covlasso_path's λ grid must be 1-D.)"""
    from theory.covlasso import covlasso_all, covlasso_path, kkt_violation, kkt_violation_all
    C = np.array([[1.0, 0.25], [0.25, 1.0]])
    np.testing.assert_allclose(kkt_violation_all(C, -np.eye(2), rho=0.5), [0.25, 0.25], rtol=1e-15)
    assert kkt_violation(C, 0, 0.25, np.array([-1.0, 0.0])) == pytest.approx(0.25, rel=1e-15)  # one row, λ absolute
    C8 = 8 * np.array([[2.0, 0.5, 0.3], [0.5, 1.0, 0.2], [0.3, 0.2, 1.5]])
    assert np.all(kkt_violation_all(C8, covlasso_all(C8, lam=0.5), lam=0.5) < 1e-14)
    with pytest.raises(ValueError, match="lams: must be a non-empty 1-D array of finite values >= 0"):
        covlasso_path(C, 0, lams=[[0.1, 0.2]])


def test_kkt_violation_all_of_a_sparse_solution_is_quiet():
    """KKT residuals (ND Eq 7) of covlasso_all's rows, which have exact zeros off the support: at rounding level,
    and computed without a divide-by-zero or invalid-value warning from the zero entries."""
    from theory.covlasso import covlasso_all, kkt_violation_all
    F = np.random.default_rng(12).standard_normal((200, 6))
    C = F.T @ F / 200
    T = covlasso_all(C, rho=0.5)
    assert np.any(T == 0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = kkt_violation_all(C, T, rho=0.5)
    assert np.all(r < 1e-12)


def test_kkt_violation_of_an_isolated_category_is_zero_not_inf():
    """A category uncorrelated with all others has λ_max(i) = 0 and θ* = −e_i: its KKT residual is 0 (exactly
    met), reported as 0; a violated row with λ_max = 0 (here θ_20 = 0.3) has no finite value in units of λ_max: inf."""
    from theory.covlasso import covlasso_all, kkt_violation_all
    C = np.eye(3)
    C[0, 1] = C[1, 0] = 0.5
    T = covlasso_all(C, rho=0.5)
    np.testing.assert_array_equal(kkt_violation_all(C, T, rho=0.5), [0.0, 0.0, 0.0])
    T[2, 0] = 0.3
    assert kkt_violation_all(C, T, rho=0.5)[2] == np.inf


def test_kkt_violation_of_an_uncorrelated_target_is_zero_or_inf():
    """kkt_violation with λ_max(i) = 0 (f_i uncorrelated with all): 0 at θ̂ = 0, inf for any other θ̂."""
    assert cl.kkt_violation(C_ISO, 0, 0.5, [-1.0, 0.0, 0.0]) == 0.0
    assert cl.kkt_violation(C_ISO, 0, 0.0, [-1.0, 0.0, 0.0]) == 0.0
    assert cl.kkt_violation(C_ISO, 0, 0.5, [-1.0, 0.5, 0.0]) == np.inf
    # the same θ̂ = 0 for a correlated target (λ_max > 0) is measured in units of λ_max: (|−0.5| − 0.1/2)/1
    assert cl.kkt_violation(C_ISO, 1, 0.1, [0.0, -1.0, 0.0]) == pytest.approx(0.45, rel=1e-15)
    np.testing.assert_array_equal(cl.kkt_violation_all(C_ISO, -np.eye(3), lam=0.5), [0.0, 0.25, 0.25])


def test_kkt_violation_theta_overflow_is_an_error():
    """kkt_violation: a θ so large that Ĉov θ̂ overflows is a ValueError, never an inf/NaN residual."""
    with pytest.raises(ValueError, match=r"theta: Ĉov θ̂ overflows float64"):
        cl.kkt_violation(C_ISO, 0, 0.5, [-1.0, 1.5e308, 1.5e308])


def test_kkt_violation_all_overflow_is_an_error():
    """kkt_violation_all: a Θ so large that Θ·Cov overflows is a ValueError."""
    T = -np.eye(3)
    T[0, 1] = T[0, 2] = 1.5e308
    with pytest.raises(ValueError, match=r"Theta: Θ·Cov overflows float64"):
        cl.kkt_violation_all(C_ISO, T, lam=0.5)


# ---- λ from ρ, and reading a path between its breakpoints

C3_UNIT = np.array([[1.0, 0.5, 0.2], [0.5, 1.0, 0.1], [0.2, 0.1, 1.0]])


def test_resolve_lambda_rejects_non_square_covariances():
    """ND Thm 1's λ = ρ·λ_max(i) reads a column of a square Cov: a rectangular array is an error, not a guess."""
    for bad in (np.ones((2, 3)), np.ones((3, 2)), np.ones((1, 1)), np.ones(3)):
        with pytest.raises(ValueError, match="cov: expected a square matrix with n >= 2"):
            cl.resolve_lambda(bad, 0, None, 0.5)
    assert cl.resolve_lambda(C3, 1, None, 0.5) == pytest.approx(0.5 * 2 * 0.5)


def test_resolve_lambda_rho_overflow_is_an_error():
    """rho·λ_max(i) beyond float64 is a ValueError (resolve_lambda directly, and covlasso(rho=) via the scaled Cov)."""
    big = 1.7e308 * np.array([[1.0, 0.9], [0.9, 1.0]])
    with pytest.raises(ValueError, match=r"rho: ρ·λ_max\(i\) overflows float64"):
        cl.resolve_lambda(big, 0, None, 1.0)
    with pytest.raises(ValueError, match=r"rho: ρ·λ_max\(i\) overflows float64"):
        cl.covlasso(C3_UNIT, 0, rho=1e308)
    assert cl.resolve_lambda(C3_UNIT, 0, None, 0.5) == 0.5 * 2 * 0.5


def test_covlasso_path_breakpoint_overflow_is_an_error():
    """covlasso_path: a λ_max(i) = 2|Cov_ij| beyond float64 is a ValueError, never an inf breakpoint."""
    big = 1.7e308 * np.array([[1.0, 0.9], [0.9, 1.0]])  # valid Cov; 2·0.9·1.7e308 > DBL_MAX
    with pytest.raises(ValueError, match=r"λ_max\(i\) overflows float64"):
        cl.covlasso_path(big, 0)
    # just inside the range the path is returned, with the exact λ_max(i)
    ok = 0.5e308 * np.array([[1.0, 0.9], [0.9, 1.0]])
    np.testing.assert_allclose(cl.covlasso_path(ok, 0).breakpoints[0], 2 * 0.9 * 0.5e308, rtol=1e-15)


def test_path_at_a_lambda_just_below_its_single_breakpoint():
    """CovLassoPath.at: a λ within rounding below a path of one breakpoint (λ_max) reads θ* there, finite and exact."""
    p = cl.covlasso_path(C3_UNIT, 0, [1.0])  # λ_max(0) = 2·0.5 = 1: the path is the single point θ* = −e_0
    np.testing.assert_array_equal(p.breakpoints, [1.0])
    lam = np.nextafter(1.0, 0.0)  # inside the 1e-15 tolerance of the last breakpoint, so allowed
    np.testing.assert_array_equal(p.at(lam), [-1.0, 0.0, 0.0])


def test_path_at_two_equal_lowest_breakpoints_is_never_0_over_0():
    """CovLassoPath.at: two equal lowest breakpoints (zero-length segment) give the coefficients there, never 0/0."""
    coefs = np.array([[-1.0, 0.0, 0.0], [-1.0, 0.3, 0.0], [-1.0, 0.5, 0.25]])
    p = cl.CovLassoPath(i=0, breakpoints=np.array([2.0, 1.0, 1.0]), coefs=coefs)
    out = p.at(np.nextafter(1.0, 0.0))
    np.testing.assert_array_equal(out, coefs[-1])
    # an interior λ still interpolates linearly on the non-degenerate segment [1, 2]
    np.testing.assert_allclose(p.at(1.5), 0.5 * coefs[0] + 0.5 * coefs[1], rtol=0, atol=1e-16)


# ---- zero, smallest-normal and subnormal covariances

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


def test_covlasso_accepts_the_smallest_normal_diagonal():
    """ND Eq 6 is scale-invariant: Cov·2^−1022 (smallest diagonal exactly the smallest normal float64) gives the
    same θ̂ at λ scaled alike; only a subnormal diagonal (precision lost) is an error."""
    T = np.finfo(float).tiny
    c = C3 * T  # diag (2, 1, 1.5)·2^−1022, all normal
    np.testing.assert_allclose(cl.covlasso(c, 0, 0.1 * T), cl.covlasso(C3, 0, 0.1), rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="subnormal"):
        cl.covlasso(C3 * (T / 2), 0, 0.05 * T)


def test_covlasso_names_the_first_subnormal_category_and_resolves_an_absolute_lambda():
    from theory.covlasso import covlasso, resolve_lambda
    with pytest.raises(ValueError, match=r"Cov\[0,0\] = 1e-310 is subnormal"):
        covlasso(np.diag([1e-310, 1.0, 1e-311]), 1, 0.1)
    assert resolve_lambda(np.eye(2), 0, 0.3, None) == 0.3
