"""ND closed forms: property tests (hypothesis) and bad input."""
import warnings
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


# ---- the error floor in closed form (ND A28, A30, Eq 5): eigen forms, θ*(0), a declared null space

C3 = np.array([[2.0, 0.5, 0.1], [0.5, 1.0, 0.2], [0.1, 0.2, 1.5]])


def _spd(n, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((3 * n, n))
    return a.T @ a / (3 * n)


def test_eigen_forms_equal_the_inverse_and_reject_singular_cov():
    c = _spd(5, 1)
    inv = np.linalg.inv(c)
    np.testing.assert_allclose(dep.error_floor_eigen(c), 1 / np.diag(inv), rtol=1e-10)
    np.testing.assert_allclose(dep.relative_floor_eigen(c), 1 / (np.diag(inv) * np.diag(c)), rtol=1e-10)
    np.testing.assert_allclose(dep.error_floor(c), 1 / np.diag(inv), rtol=1e-10)
    for fn in (dep.error_floor_eigen, dep.relative_floor_eigen):
        for singular in (np.diag([1.0, 0.0, 4.0]), np.array([[1.0, 1.0], [1.0, 1.0]])):  # PSD, not PD
            with pytest.raises(ValueError, match="eigen form needs SPD"):
                fn(singular)


def test_theta_floor_attains_the_error_floor_on_a_badly_scaled_cov():
    """θ*(0) = −Cov⁻¹e_i/(Cov⁻¹)_ii: θ_i = −1 and err_i(θ*(0)) = 1/(Cov⁻¹)_ii (ND A28, A30)."""
    c = _spd(4, 5) * np.array([1.0, 1e3, 1e-3, 10.0])[:, None] * np.array([1.0, 1e3, 1e-3, 10.0])[None, :]
    inv = np.linalg.inv(c)
    for i in range(4):
        th = dep.theta_floor(c, i)
        np.testing.assert_allclose(th, -inv[:, i] / inv[i, i], rtol=1e-8)
        assert dep.prediction_error(c, th) == pytest.approx(1 / inv[i, i], rel=1e-8)


def test_theta_floor_with_null_tol_uses_the_declared_null_space():
    """ND A28 on K with eigenvalues (0.046, 0.44, 1)·λ_max: by default θ*(0) = −K⁻¹e_i/(K⁻¹)_ii; with
    null_tol = 0.06 the smallest direction is declared an exact dependency and θ = −P_N e_i/(P_N)_ii (P_N the
    projector on that null space) — both against numpy, and the floor is then 0."""
    K = np.array([[1, 0.9, 0.3], [0.9, 1, 0.2], [0.3, 0.2, 1.0]])
    Ki = np.linalg.inv(K)
    np.testing.assert_allclose(dep.theta_floor(K, 0), -Ki[:, 0] / Ki[0, 0], rtol=1e-12)
    w, U = np.linalg.eigh(K)
    PN = np.outer(U[:, 0], U[:, 0])
    np.testing.assert_allclose(dep.theta_floor(K, 0, null_tol=0.06), -PN[:, 0] / PN[0, 0], rtol=1e-12)
    assert dep.error_floor(K, null_tol=0.06)[0] == 0.0


def test_inverse_diagonal_names_a_dead_category():
    """ND Eq 5's err_i = 1/(Cov⁻¹)_ii needs Cov⁻¹: a category with Cov_jj = 0 is named in the error."""
    with pytest.raises(ValueError, match=r"cov: Cov\[1,1\] = 0: singular"):
        dep.inverse_diagonal(np.diag([1.0, 0.0, 2.0]))
    np.testing.assert_allclose(dep.inverse_diagonal(C3), np.diag(np.linalg.inv(C3)), rtol=1e-14)


@pytest.mark.parametrize("r", [0.5, 1.5])
def test_singular_to_working_precision_is_trace_k_inv_at_1_over_m2_eps(r):
    """second_moment/inverse_diagonal's rule: K is singular to working precision when trace(K⁻¹) ≥ 1/(m²ε).
    K = (1 − δ)·11ᵀ + δI (m = 100) has trace(K⁻¹) = (m−1)/δ + 1/(1 + (m−1)(1−δ)) in closed form; δ is set so that
    trace(K⁻¹)·m²ε = r. At r = 0.5 diag(K⁻¹) comes back (matching the closed form, κ ~ 1e12 so to ~1e−4);
    at r = 1.5 it is the documented error."""
    from theory.dependency import inverse_diagonal
    m, eps = 100, np.finfo(float).eps
    delta = (m - 1) * m * m * eps / r  # the 1/(1 + (m−1)(1−δ)) term adds ~1e−12 relative: negligible here
    K = np.full((m, m), 1.0 - delta)
    np.fill_diagonal(K, 1.0)
    if r < 1:
        a = 1.0 - delta
        want = 1 / delta - a / (delta * (1 + (m - 1) * a))
        np.testing.assert_allclose(inverse_diagonal(K), want, rtol=1e-4)
    else:
        with pytest.raises(ValueError, match="singular to working precision"):
            inverse_diagonal(K)


def test_error_floor_single_energetic_category():
    """error_floor: with one energetic category it has nothing to predict from, so its floor is Cov_ii (others 0)."""
    cov = np.diag([2.0, 0.0])
    np.testing.assert_array_equal(dep.error_floor(cov), [2.0, 0.0])
    np.testing.assert_array_equal(dep.error_floor(cov, null_tol=0.5), [2.0, 0.0])


def test_theta_floor_single_energetic_category():
    """theta_floor: with one energetic category θ*(0) = −e_i (no predictor), also for the zero-energy one."""
    cov = np.diag([2.0, 0.0])
    np.testing.assert_array_equal(dep.theta_floor(cov, 0), [-1.0, 0.0])
    np.testing.assert_array_equal(dep.theta_floor(cov, 1), [0.0, -1.0])


# ---- what counts as a null direction of K (ND Sec 2.2)

def _null_row_case(seed: int, m: int = 6, s: float = 1e-6):
    """(K, ρ₀): a unit-diagonal Gram K = VᵀV of m unit vectors in R^{m−1} (exactly one null vector v, v_0 ≠ 0: f_0
    is an exact combination of the others, with little weight on K's small kept eigenvalue s²), and ρ₀ = |v_0|
    divided by the documented per-category rounding level without its factor: m·ε·λ_max·‖(U_0j/λ_j)_j‖ over the
    kept eigenpairs, from eigvalsh/eigh here (not by _null_split); X = Q1 diag(1..2, s) Q2, n its column norms."""
    rng = np.random.default_rng(seed)
    Q1, _ = np.linalg.qr(rng.standard_normal((m - 1, m - 1)))
    Q2, _ = np.linalg.qr(rng.standard_normal((m - 1, m - 1)))
    X = Q1 @ np.diag(np.r_[np.linspace(1.0, 2.0, m - 1)[:-1], s]) @ Q2
    n = np.linalg.norm(X, axis=0)
    V = np.column_stack([Q1[:, -1], X / n])
    K = V.T @ V
    w, U = np.linalg.eigh(K)
    v0 = 1.0 / np.sqrt(1.0 + np.sum((Q2[-1, :] * n) ** 2) / s**2)
    return K, v0 / (m * np.finfo(float).eps * w[-1] * np.linalg.norm(U[0, 1:] / w[1:]))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_null_space_component_is_judged_against_the_documented_rounding_level(seed, monkeypatch):
    """ND Sec 2.2: f_0 is an exact linear combination of the others (R = 0) exactly when e_0 has a component in
    null(K); relative_floor counts a component as real above NULL_NOISE·m·ε·λ_max·‖(U_0j/λ_j)_j‖ (first-order
    Davis–Kahan accuracy of eigh's null space row by row, NULL_NOISE = 10), not by a single global level such as
    10·m·ε·κ_r, which calls real null components of 5e-5 rounding and so reports a floor where f_0 is an exact
    combination of the others. With NULL_NOISE set so that |v_0| is 1.5× the level the floor is
    0; at 0.6× it is rounding and R comes from the kept eigenvalues (≈ 1: e_0's range component is nearly
    orthogonal to the other logits' span). The rule is judged alone (CAP_LEVELS = −1: no certified cap); with the
    cap, the null-space θ it exhibits brings the floor back down (a floor is never above what a θ achieves)."""
    from theory import dependency
    from theory.dependency import relative_floor
    assert dependency.NULL_NOISE == 10.0
    K, rho0 = _null_row_case(seed)
    assert rho0 > 10 * 1.5  # with the documented NULL_NOISE this component is real: floor 0
    assert relative_floor(K)[0] == 0.0
    monkeypatch.setattr(dependency, "CAP_LEVELS", -1)
    monkeypatch.setattr(dependency, "NULL_NOISE", rho0 / 1.5)
    assert relative_floor(K)[0] == 0.0
    monkeypatch.setattr(dependency, "NULL_NOISE", rho0 / 0.6)
    assert relative_floor(K)[0] > 0.5
    monkeypatch.setattr(dependency, "CAP_LEVELS", 3)
    assert relative_floor(K)[0] < 1e-4


def test_null_tol_of_one_is_refused():
    """null_tol is a fraction of λ_max(K) in [0, 1): at 1 even λ_max would count as null."""
    from theory.dependency import relative_floor
    with pytest.raises(ValueError, match=r"null_tol: a fraction of λ_max\(K\) must be < 1"):
        relative_floor(np.eye(2), null_tol=1.0)


def test_null_tol_zero_counts_an_exact_zero_eigenvalue_as_null():
    """null_tol = 0 keeps the eigenvalues > 0·λ_max: an exactly zero eigenvalue (f_0 = f_1, eigh gives 0.0 here)
    is null, so R = 0 for the two copies and R = 1 for the independent f_2 (ND Sec 2.2), never a 0/0."""
    from theory.dependency import relative_floor
    K = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    np.testing.assert_array_equal(relative_floor(K, null_tol=0.0), [0.0, 0.0, 1.0])


def test_relative_floor_edges_of_the_diagonal():
    """Cov_ii = the smallest normal float64 is valid (R = 1 for two independent logits); a zero Cov_ii is an error
    that names its category (here 1, not the first category)."""
    from theory.dependency import relative_floor
    np.testing.assert_array_equal(relative_floor(np.diag([np.finfo(float).tiny, 1.0])), [1.0, 1.0])
    with pytest.raises(ValueError, match=r"Cov\[1,1\] = 0; R\(Cov, 1\)"):
        relative_floor(np.diag([1.0, 0.0, 2.0]))
    with pytest.raises(ValueError, match=r"Cov\[0,0\] = 1e-310 is subnormal"):  # the first subnormal one
        relative_floor(np.diag([1e-310, 1.0, 1e-311]))


# ---- the second moment Cov = FᵀF/N (ND Eq 2): memory layouts, extreme scales, unreadable input

@pytest.mark.parametrize("view", ["rows", "cols", "both"])
def test_second_moment_of_a_strided_view_is_ftf_over_n(view):
    """Cov = FᵀF/N (ND Eq 2) for logits that are neither C- nor Fortran-contiguous (a strided view of a larger
    array: the third BLAS branch, which copies), against a plain numpy product."""
    from theory.dependency import second_moment
    F = np.random.default_rng(8).standard_normal((40, 12))
    V = {"rows": F[::2], "cols": F[:, ::2], "both": F[::2, ::3]}[view]
    assert not V.flags.c_contiguous and not V.flags.f_contiguous
    np.testing.assert_allclose(second_moment(V), V.T @ V / V.shape[0], rtol=1e-13, atol=1e-15)


def test_second_moment_of_fortran_ordered_logits_is_ftf_over_n():
    """second_moment: a Fortran-ordered F gives FᵀF/N, the same as C order (to rounding)."""
    rng = np.random.default_rng(15)
    Fc = rng.standard_normal((37, 5)) + np.arange(5)  # nonzero means: not a symmetric-by-accident product
    Ff = np.asfortranarray(Fc)
    assert Ff.flags.f_contiguous and not Ff.flags.c_contiguous
    ref = Fc.T @ Fc / Fc.shape[0]
    got = dep.second_moment(Ff)
    assert got.shape == (5, 5)
    np.testing.assert_allclose(got, ref, rtol=1e-14, atol=1e-14 * np.abs(ref).max())
    np.testing.assert_allclose(got, dep.second_moment(Fc), rtol=1e-14, atol=1e-14 * np.abs(ref).max())
    np.testing.assert_array_equal(got, got.T)


@pytest.mark.parametrize("order", ["C", "F"])
def test_second_moment_does_not_copy_contiguous_logits(order):
    """second_moment: a C- or Fortran-ordered F is read in place (one dsyrk, no copy of the N×n logits)."""
    import tracemalloc

    F = np.asarray(np.random.default_rng(16).standard_normal((20000, 4)), order=order)
    ref = dep.second_moment(F)  # warm-up: lazy imports and BLAS set-up are not counted
    tracemalloc.start()
    try:
        got = dep.second_moment(F)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(got, ref)
    assert peak < F.nbytes / 10, f"peak allocation {peak} B for {F.nbytes} B of logits: F was copied"


def test_second_moment_of_a_column_spanning_150_decades():
    """A logit column with entries from 1e−150 down to subnormal 1e−310 (E[f²] ~ 1e−301: its products lose digits
    unless the column is rescaled by its largest entry first), beside an all-zero logit (a category with no
    energy: valid, Cov_jj = 0, not an underflow). Cov must equal the exactly rescaled product."""
    from theory.dependency import second_moment
    rng = np.random.default_rng(10)
    F = rng.standard_normal((20, 3))
    F[:, 1] = np.ldexp(F[:, 1], -498)  # ~1e-150
    F[0, 1] = 1e-310
    F[:, 2] = 0.0
    u = np.ldexp(1.0, [0, 498, 0])
    G = F * u[None, :]
    want = (G.T @ G / 20) / u[:, None] / u[None, :]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and quietly: no log2(0) or overflow warning from the rescaled path
        got = second_moment(F)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=0)


def test_second_moment_at_exactly_the_smallest_normal():
    """E[f_0²] = 2^-1022 exactly (entries 2^-511): the smallest normal float64 is representable, not an underflow."""
    from theory.dependency import second_moment
    F = np.full((4, 2), 2.0**-511)
    F[:, 1] = 1.0
    np.testing.assert_array_equal(second_moment(F), [[2.0**-1022, 2.0**-511], [2.0**-511, 1.0]])


def test_second_moment_names_the_first_category_whose_energy_underflows():
    """ND Eq 2's E[f fᵀ] beyond float64: logits of 1e−170 in categories 1 and 3 have E[f_j²] ~1e−340 (below the
    smallest subnormal); the error names the first such category, j = 1."""
    from theory import dependency as dp
    F = np.random.default_rng(0).standard_normal((50, 4))
    F[:, [1, 3]] *= 1e-170
    with pytest.raises(ValueError, match=r"logits: E\[f_1²\] = 0 underflows float64"):
        dp.second_moment(F)
    F[:, 1] *= 1e170  # only category 3 left
    with pytest.raises(ValueError, match=r"logits: E\[f_3²\] = 0 underflows float64"):
        dp.second_moment(F)


def test_second_moment_refuses_complex_logits():
    """Casting complex logits to float64 would drop the imaginary part silently: a TypeError instead."""
    from theory.dependency import second_moment
    with pytest.raises(TypeError, match="logits: complex input is not supported"):
        second_moment(np.ones((3, 2)) + 1j)


class _DtypeRaises:
    """An object whose ``.dtype`` raises TypeError: np.iscomplexobj propagates it (it only catches AttributeError)."""

    @property
    def dtype(self):
        raise TypeError("no dtype here")


RAGGED = [[1.0, 2.0], [3.0]]


@pytest.mark.parametrize("bad", [RAGGED, _DtypeRaises(), [["a", "b"]], object()],
                         ids=["ragged", "dtype-raises", "strings", "object"])
def test_second_moment_refuses_logits_numpy_cannot_read(bad):
    """second_moment: ragged or non-numeric logits are a ValueError 'cannot be read as a float64 array'."""
    with pytest.raises(ValueError, match=r"logits: cannot be read as a float64 array"):
        dep.second_moment(bad)


@pytest.mark.parametrize("shape", [(0, 3), (3, 0)])
def test_second_moment_refuses_empty_logits(shape):
    """second_moment: an empty 2-D logit array is a ValueError naming its shape."""
    with pytest.raises(ValueError, match=r"logits: is empty \(shape \(%d, %d\)\)" % shape):
        dep.second_moment(np.zeros(shape))


# ---- overflow and too few categories are errors, never inf; det_ratio's sign

# near-collinear correlation matrix: the regression of f0 on (f1, f2) has coefficients ≈ (10.05, −9.95)
K_COLL = np.array([[1.0, 0.1, 0.08], [0.1, 1.0, 0.999], [0.08, 0.999, 1.0]])


def _scaled(K, d):
    s = np.sqrt(np.asarray(d, dtype=float))
    return K * s[:, None] * s[None, :]


def test_theta_floor_overflow_is_an_error():
    """theta_floor: θ*(0)_j = ψ_j·√(Cov_ii/Cov_jj) beyond float64 is a ValueError, never inf."""
    beta = np.linalg.solve(K_COLL[1:, 1:], K_COLL[1:, 0])  # θ*(0) of the correlation matrix, ≈ (10.05, −9.95)
    np.testing.assert_allclose(dep.theta_floor(K_COLL, 0), np.r_[-1.0, beta], rtol=1e-12)
    # scale ratio √(1e300/1e-300) = 1e300: finite, θ*(0) scaled exactly
    np.testing.assert_allclose(dep.theta_floor(_scaled(K_COLL, [1e300, 1e-300, 1e-300]), 0),
                               np.r_[-1.0, beta * 1e300], rtol=1e-12)
    # ratio √(1e308/1e-307) ≈ 3.2e307, times |ψ| ≈ 10: beyond DBL_MAX
    with pytest.raises(ValueError, match=r"θ\*\(0\) overflows float64"):
        dep.theta_floor(_scaled(K_COLL, [1e308, 1e-307, 1e-307]), 0)


def test_prediction_error_theta_overflow_is_an_error():
    """prediction_error: θ_j·√Cov_jj beyond float64 is a ValueError."""
    with pytest.raises(ValueError, match=r"theta: θ_j·√Cov_jj overflows float64"):
        dep.prediction_error(4.0 * np.eye(2), [1e308, 1e308])


def test_prediction_error_of_a_zero_combination_is_exactly_zero():
    """prediction_error: θ = 0, or θ only on zero-energy categories, has error exactly 0 (no 0/0)."""
    assert dep.prediction_error(4.0 * np.eye(2), [0.0, 0.0]) == 0.0
    assert dep.prediction_error(np.diag([1.0, 0.0]), [0.0, 5.0]) == 0.0
    # the smallest nonzero θ gives a nonzero, finite answer through the scaled route: 4·(1e-300)² underflows to 0
    assert dep.prediction_error(4.0 * np.eye(2), [1e-150, 0.0]) == pytest.approx(4e-300, rel=1e-14)


def test_lambda_max_overflow_is_an_error():
    """λ_max(i) = 2·max_{j≠i} |Cov_ij| beyond float64 is an error, not inf."""
    c = np.array([[1e308, 0.9e308], [0.9e308, 1e308]])
    with pytest.raises(ValueError, match="overflows float64"):
        dep.lambda_max(c)  # 2·0.9e308 is beyond float64: an error, not inf


def test_lambda_max_needs_two_categories():
    """lambda_max: n = 1 is a ValueError; n = 2 (the boundary) works: λ_max = 2|Cov_01|."""
    with pytest.raises(ValueError, match=r"cov: need at least 2 categories"):
        dep.lambda_max([[1.0]])
    np.testing.assert_array_equal(dep.lambda_max([[1.0, 0.25], [0.25, 1.0]]), [0.5, 0.5])


def test_det_ratio_needs_two_categories():
    """det_ratio: n = 1 is a ValueError; n = 2 (the boundary) gives det Cov / Cov_11."""
    with pytest.raises(ValueError, match=r"cov: need at least 2 categories"):
        dep.det_ratio([[1.0]], 0)
    assert dep.det_ratio([[1.0, 0.5], [0.5, 2.0]], 0) == pytest.approx((2.0 - 0.25) / 2.0, rel=1e-14)


def test_det_ratio_methods_agree_in_sign_on_covariances_indefinite_by_rounding():
    """ND Remark 2's det Cov / det Cov₋ᵢ₋ᵢ: ``slogdet`` and ``det`` compute the same ratio, sign included (raw=True
    returns the IEEE value). A PSD matrix stored with an eigenvalue of −1e−13 (accepted: within as_covariance's
    PSD tolerance) makes det Cov < 0; whether the minor's det is < 0 too depends on e_0's component in that
    direction (here: nonzero → ratio < 0; zero → both negative, ratio > 0). A singular Cov (ratio 0) is an error."""
    from theory.dependency import det_ratio
    Q, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((3, 3)))
    A = Q @ np.diag([1.0, 0.5, -1e-13]) @ Q.T
    u, v = np.array([0.0, 1.0, -1.0]) / np.sqrt(2), np.array([0.0, 1.0, 1.0]) / np.sqrt(2)
    B = np.diag([1.0, 0.0, 0.0]) + 0.5 * np.outer(u, u) - 1e-13 * np.outer(v, v)
    for C, sign in (((A + A.T) / 2, -1.0), (B, 1.0)):
        r = det_ratio(C, 0, method="slogdet", raw=True)
        assert np.sign(r) == sign and r == pytest.approx(det_ratio(C, 0, method="det", raw=True), rel=1e-9)
    for method in ("det", "slogdet"):
        with pytest.raises(ValueError, match="Cov is singular"):
            det_ratio(np.ones((2, 2)), 0, method=method)
    # without raw, a negative ratio and an overflowed one (det Cov = inf, det of the minor 1e200) are errors too
    for C in ((A + A.T) / 2, np.diag([1e200, 1e200, 1.0])):
        with pytest.raises(ValueError, match="under/overflow or Cov is singular"):
            det_ratio(C, 0)
