"""Tests that kill the survivors of ``make mutate`` in theory/ (issue 15 §3; docs/mutation.md lists each one).

Each test states a property of the mathematics or of the input contract — a closed form checked against an
independent computation, an invariance, an error that names the offending argument — not the current output.
The whole module runs in a few seconds.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
from scipy import integrate, special, stats

import theory.collapse as vc
import theory.covlasso as cl
import theory.dependency as dep
import theory.multiview as mv
import theory.neural_dependency as nd
import theory.rank as R
from theory import validate as V
from theory._homotopy import _homotopy
from theory.symbolic import vc as svc

C3 = np.array([[2.0, 0.5, 0.1], [0.5, 1.0, 0.2], [0.1, 0.2, 1.5]])


def _spd(n, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((3 * n, n))
    return a.T @ a / (3 * n)


# ------------------------------------------------------------------------------------------- theory/validate.py

def test_zero_covariance_is_accepted_and_other_non_positive_diagonals_are_not():
    z = V.as_covariance(np.zeros((3, 3)))  # E[f fᵀ] of dead logits: valid (PSD), not an error
    assert z.shape == (3, 3) and not z.any()
    for bad in (np.array([[0.0, 1.0], [1.0, 0.0]]), -np.eye(2)):  # zero diagonal with entries, or all < 0
        with pytest.raises(ValueError, match="cov: not PSD"):
            V.as_covariance(bad)


def test_negative_diagonal_message_names_the_negative_entry():
    c = np.diag([1.0, -1e-3, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"cov\[1,1\] = -0.001 < 0"):
        V.as_covariance(c)


def test_as_covariance_symmetrises_and_names_the_asymmetric_pair():
    c = C3.copy()
    c[0, 2] += 1e-12  # within sym_rtol: accepted, returned exactly symmetric
    out = V.as_covariance(c)
    assert np.array_equal(out, out.T) and out[0, 2] == pytest.approx(0.1 + 0.5e-12, abs=1e-15)
    c[2, 1] += 1e-3
    with pytest.raises(ValueError, match=r"\|cov\[(2,1|1,2)\] - cov\[(1,2|2,1)\]\|"):
        V.as_covariance(c)


def test_symmetry_tolerance_is_inclusive():
    """Symmetric within sym_rtol means |K_ij − K_ji| ≤ sym_rtol (docstring): on a unit-diagonal matrix K = cov
    exactly, so an asymmetry of exactly 2⁻¹⁰ passes at sym_rtol = 2⁻¹⁰, and sym_rtol = 0 accepts exact symmetry."""
    c = np.array([[1.0, 0.5], [0.5 + 2.0**-10, 1.0]])
    out = V.as_covariance(c, sym_rtol=2.0**-10)
    assert out[0, 1] == out[1, 0] == 0.5 + 2.0**-11
    with pytest.raises(ValueError, match="not symmetric"):
        V.as_covariance(c, sym_rtol=2.0**-11)
    V.as_covariance(np.array([[1.0, 0.5], [0.5, 1.0]]), sym_rtol=0.0)


def test_psd_rtol_zero_means_exactly_psd():
    """psd_rtol = 0: exactly PSD is accepted — a dead logit (a zero row and column) included — and a negative
    eigenvalue is not."""
    out = V.as_covariance(np.diag([1.0, 0.0, 2.0]), psd_rtol=0.0)
    assert out.tolist() == np.diag([1.0, 0.0, 2.0]).tolist()
    with pytest.raises(ValueError, match="not PSD"):
        V.as_covariance(np.array([[1.0, 1.0 + 1e-9], [1.0 + 1e-9, 1.0]]), psd_rtol=0.0)


def test_psd_tolerance_is_relative_and_scale_free():
    q = np.linalg.qr(np.random.default_rng(0).standard_normal((4, 4)))[0]
    for lam_min, ok in ((-1e-13, True), (-1e-6, False)):
        c = (q * np.array([1.0, 1.0, 1.0, lam_min])) @ q.T
        c = 0.5 * (c + c.T)
        for s in (1e-200, 1.0, 1e200):
            if ok:
                V.as_covariance(s * c)
            else:
                with pytest.raises(ValueError, match="not PSD.*smallest eigenvalue"):
                    V.as_covariance(s * c)


def test_check_positive_excludes_zero_unless_allowed():
    assert V.check_positive(2.5, "x") == 2.5
    assert V.check_positive(0, "x", allow_zero=True) == 0.0
    for bad in (0, 0.0, -1e-300, np.nan, np.inf):
        with pytest.raises(ValueError, match="x: must be > 0"):
            V.check_positive(bad, "x")
    with pytest.raises(ValueError, match="y: must be >= 0"):
        V.check_positive(-1, "y", allow_zero=True)


def test_check_index_and_check_tolerance():
    assert V.check_index(np.int64(2), 3) == 2
    for bad in (3, -1):
        with pytest.raises(ValueError, match="out of range for n = 3"):
            V.check_index(bad, 3, "i")
    for bad in (True, 1.0, "1"):
        with pytest.raises(ValueError, match="k: must be an integer"):
            V.check_index(bad, 3, "k")
    assert V.check_tolerance(0, "tol") == 0.0
    for bad, err in ((True, TypeError), ("1e-3", TypeError), (-1e-9, ValueError), (np.nan, ValueError)):
        with pytest.raises(err, match="tol"):
            V.check_tolerance(bad, "tol")


def test_check_real_and_check_int():
    assert V.check_real(np.float32(0.25), "x") == 0.25 and V.check_real(3, "x") == 3.0
    for bad in (np.nan, np.inf, -np.inf):
        with pytest.raises(ValueError, match="x: must be finite"):
            V.check_real(bad, "x")
    for bad in (True, "1", None, 1j, np.array(1.0)):
        with pytest.raises(TypeError, match="x: must be a real number"):
            V.check_real(bad, "x")
    assert V.check_int(np.int64(3), "n", 1, 3) == 3
    for bad, err in ((0, ValueError), (4, ValueError), (2.0, TypeError), (True, TypeError)):
        with pytest.raises(err, match="n: must be an integer"):
            V.check_int(bad, "n", 1, 3)


def test_check_finite_names_the_first_bad_entry():
    a = np.zeros((2, 3))
    a[1, 2], a[0, 1] = np.inf, np.nan
    with pytest.raises(ValueError, match=r"x: 2 non-finite value\(s\); first is NaN at column 1 \(entry \(0, 1\)\)"):
        V.check_finite(a, "x")
    with pytest.raises(ValueError, match=r"first is Inf at entry \(2,\)"):
        V.check_finite(np.array([0.0, 1.0, -np.inf]), "v")


# ------------------------------------------------------------------------------------------- theory/rank.py

def test_lyapunov_law_and_sd_are_the_moments_of_half_log_chi2():
    """λ_k = E[½ log χ²_ν] and sd_k = sd[½ log χ²_ν], ν = n − k + 1, by quadrature against the χ² density
    (independent of the digamma/trigamma closed forms), and the two classical values ψ'(½) = π²/2, ψ'(1) = π²/6."""
    n = 4
    lam, sd = R.lyapunov_law(n), R.lyapunov_law_sd(n)
    for k in range(1, n + 1):
        nu = n - k + 1
        dist = stats.chi2(nu)
        m1 = dist.expect(lambda x: 0.5 * np.log(x))
        m2 = dist.expect(lambda x: (0.5 * np.log(x)) ** 2)
        assert lam[k - 1] == pytest.approx(m1, rel=1e-7, abs=1e-9)
        assert sd[k - 1] == pytest.approx(math.sqrt(m2 - m1 * m1), rel=1e-6)
    assert sd[-1] == pytest.approx(math.pi / (2 * math.sqrt(2)), rel=1e-14)
    assert sd[-2] == pytest.approx(0.5 * math.pi / math.sqrt(6), rel=1e-14)


def test_lyapunov_law_memory_guard_counts_three_float64_arrays(monkeypatch):
    """The ψ-law for n exponents needs three float64 arrays (24·n bytes): on a machine reporting 1 MiB of memory
    n = 30,000 (720 kB > half of it) is a MemoryError naming n, n = 10,000 (240 kB) is computed."""
    sizes = {"SC_PHYS_PAGES": 256, "SC_PAGE_SIZE": 4096}
    monkeypatch.setattr(R.os, "sysconf", lambda key: sizes[key])
    with pytest.raises(MemoryError, match="n = 30000"):
        R.lyapunov_law(30_000)
    assert R.lyapunov_law(10_000).shape == (10_000,)


def test_gradient_explosion_rate_and_ratio_law():
    n = 5
    assert R.gradient_explosion_rate(n) == pytest.approx(R.lyapunov_law(n)[0], rel=1e-15)
    r = R.ratio_law(n)
    assert r[0] == 1.0 and np.all(np.diff(r) < 0)
    np.testing.assert_allclose(np.log(r), 0.5 * (special.digamma((n - np.arange(1, n + 1) + 1) / 2)
                                                 - special.digamma(n / 2)), rtol=1e-13)


def test_mp_cdf_is_the_integral_of_mp_density():
    for g in (0.25, 1.0):
        a, b = R.mp_edges(g)
        for x in (a + 0.3 * (b - a), a + 0.8 * (b - a)):
            ref, _ = integrate.quad(lambda t: float(R.mp_density(t, g)), a, x, limit=200)
            assert R.mp_cdf(x, g) == pytest.approx(ref, abs=1e-6)
        assert R.mp_cdf(b + 1, g) == 1.0 and R.mp_cdf(a - 1e-3, g) == 0.0


# ------------------------------------------------------------------------------------------- theory/symbolic/vc.py

def test_planted_decomposition_residual_is_the_normaliser_error():
    """The planted Σ_W uses 1/(K(N−1)) instead of 1/(KN): the residual is Σ_W(1/(KN)) − Σ_W(1/(K(N−1)))
    = −Σ_W/(N−1), Σ_W computed here in floating point from the same numbers (defaults K = N = p = 2)."""
    K = N = p = 2
    rng = np.random.default_rng(3)
    h = rng.integers(-9, 10, size=(K, N, p))
    subs = {sp.Symbol(f"h{k}_{i}_{j}"): int(h[k, i, j]) for k in range(K) for i in range(N) for j in range(p)}
    mu = h.mean(axis=1, keepdims=True)
    d = (h - mu).reshape(-1, p)
    sw = d.T @ d / (K * N)
    res = np.array(svc.decomposition_residual(planted=True).subs(subs), dtype=float)
    np.testing.assert_allclose(res, -sw / (N - 1), rtol=1e-12, atol=1e-12)
    assert all(e == 0 for e in svc.decomposition_residual())


def test_fuzziness_counterexample_claimed_identity_keeps_the_trace():
    """VC Obs 4.2: if (UΣ_BUᵀ)† were U⁻ᵀΣ_B†U⁻¹, Tr[(UΣ_BUᵀ)†UΣ_WUᵀ] would be Tr[U⁻ᵀΣ_B†Σ_WUᵀ] = Tr[Σ_B†Σ_W]
    (a similarity): the 'after via the claimed identity' value equals 'before' for every invertible U."""
    for U in (None, [[1, 1], [0, 1]], [[2, 1], [1, 3]], [[0, 1], [1, 0]], [[3, 0], [5, -2]]):
        out = svc.fuzziness_counterexample(U)
        assert out["after_via_claimed_identity"] == out["before"] == 1
    assert svc.fuzziness_counterexample()["after"] == 2


# ------------------------------------------------------------------------------------------- theory/dependency.py

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


def test_theta_floor_attains_the_error_floor_on_a_rectangular_free_case():
    """θ*(0) = −Cov⁻¹e_i/(Cov⁻¹)_ii: θ_i = −1 and err_i(θ*(0)) = 1/(Cov⁻¹)_ii (ND A28, A30)."""
    c = _spd(4, 5) * np.array([1.0, 1e3, 1e-3, 10.0])[:, None] * np.array([1.0, 1e3, 1e-3, 10.0])[None, :]
    inv = np.linalg.inv(c)
    for i in range(4):
        th = dep.theta_floor(c, i)
        np.testing.assert_allclose(th, -inv[:, i] / inv[i, i], rtol=1e-8)
        assert dep.prediction_error(c, th) == pytest.approx(1 / inv[i, i], rel=1e-8)


# ------------------------------------------------------------------------------------------- theory/neural_dependency.py

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


def test_mixed_cov_allows_a_dead_logit():
    m = nd.mixed_cov(np.eye(4), np.zeros(4), 0.0, 1)  # g_i ≡ 0: E[g_i²] = 0 is a valid moment
    assert np.array_equal(m, np.diag([1.0, 0.0, 1.0, 1.0]))


# ------------------------------------------------------------------------------------------- theory/covlasso.py

def test_prepare_scales_by_a_power_of_four_to_unit_diagonal():
    """covlasso._prepare's contract: (Cov·4⁻ᵏ, 2k) with max Cov_jj in [1/2, 2), exact (a power of two)."""
    c = _spd(4, 11)
    for k in (-480, -7, 0, 3, 480):
        scaled, e = cl._prepare(np.ldexp(c, k))
        assert e % 2 == 0 and 0.5 <= np.diag(scaled).max() < 2.0
        assert np.array_equal(np.ldexp(scaled, e), np.ldexp(c, k))


def test_homotopy_max_steps_guard():
    """The path of a generic n×n Cov to λ = 0 has at least n − 1 breakpoints: a cap below that must stop
    with status 1 (and covlasso must say so), a cap above it must finish."""
    c = _spd(8, 6)
    th, status, *_ = _homotopy(c, 0, 0.0, False, 3)
    assert status == 1
    th, status, *_ = _homotopy(c, 0, 0.0, False, cl._max_steps(8))
    assert status == 0
    np.testing.assert_allclose(th, dep.theta_floor(c, 0), rtol=1e-8, atol=1e-12)


def test_covlasso_reports_a_spent_step_budget(monkeypatch):
    c = _spd(8, 6)
    monkeypatch.setattr(cl, "_max_steps", lambda n: 2)
    with pytest.raises(RuntimeError, match="did not reach"):
        cl.covlasso(c, 0, 0.0)
    with pytest.raises(RuntimeError, match="did not finish"):
        cl.covlasso_path(c, 0)
    with pytest.raises(RuntimeError, match="did not finish"):
        cl.covlasso_all(c, 0.0)


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


# ------------------------------------------------------------------------------------------- theory/multiview.py

def test_lucky_set_sizes_smallest_d():
    """d = 2 has log d < 1/log⁵ d (τ₋ undefined), d = 3 is the smallest valid patch dimension."""
    with pytest.raises(ValueError, match="d = 2 is too small"):
        mv.lucky_set_sizes(10, 2, 1.0)
    out = mv.lucky_set_sizes(10, 3, 1.0)
    assert 0 < out["S_star"] < out["S"] < 10


@pytest.mark.parametrize("m, d, c_b", [(800, 100, 1.17), (10, 3, 1.0), (50, 7, 4.1)])
def test_lucky_set_sizes_are_the_prop1_expectations(m, d, c_b):
    """FG Prop 1 steps 1–2: E|S| = m·Q(τ₋), E|S*| = m·Q(τ₊)(1 − Q(τ₋))^{d−1} (the other d − 1 coordinates of an
    orthonormal V all below τ₋), τ± = √(c_b(log d ± 1/log⁵ d)); Q from scipy's normal survival function."""
    from scipy.stats import norm
    eps = math.log(d) ** -5
    t_lo, t_hi = math.sqrt(c_b * (math.log(d) - eps)), math.sqrt(c_b * (math.log(d) + eps))
    out = mv.lucky_set_sizes(m, d, c_b)
    assert out["S"] == pytest.approx(m * norm.sf(t_lo), rel=1e-12)
    assert out["S_star"] == pytest.approx(m * norm.sf(t_hi) * norm.cdf(t_lo) ** (d - 1), rel=1e-12)


# ------------------------------------------------------------------------------------------- theory/collapse

def test_metrics_at_once_equal_the_metrics_one_by_one():
    """:func:`metrics` shares one eigendecomposition between the metrics; each value must be the one its own
    function computes (VC Def 5.3, Thm 5.2, Eq 4, Sec 3.2)."""
    rng = np.random.default_rng(8)
    y = np.repeat(np.arange(4), 30)
    X = rng.standard_normal((120, 6)) + 2.0 * rng.standard_normal((4, 6))[y]
    m = vc.metrics(X, y)
    for name in ("vci", "trace_ratio", "probe_loss", "fuzziness", "squared_distance", "cosine_similarity",
                 "class_separation"):
        assert m[name] == pytest.approx(getattr(vc, name)(X, y), rel=1e-9, abs=1e-12), name
    split = vc.vb_split(X, y)
    for name in ("within_vb", "within_vb_perp"):
        assert m[name] == pytest.approx(split[name], rel=1e-9), name


def test_c_b_for_lucky_solves_the_lucky_neuron_equation():
    """FG (our choice of the free pair, theory/multiview.py): c_b solves m·Q(√(c_b log d)) = lucky, for any
    lucky in (0, m/2) — fewer than one expected lucky neuron included."""
    for m, lucky, d in ((800, 8.0, 100), (100, 0.5, 50), (5, 2.4, 3), (1, 0.25, 100)):
        c_b = mv.c_b_for_lucky(m, lucky, d)
        assert m * float(mv.gaussian_tail(math.sqrt(c_b * math.log(d)))) == pytest.approx(lucky, rel=1e-10)
        sizes = mv.lucky_set_sizes(m, d, c_b)  # τ₋ < √(c_b log d) < τ₊ and the exclusivity factor is < 1
        assert sizes["S_star"] < lucky < sizes["S"]
        assert sizes["tau_lo"] < mv.bias_threshold(c_b, d) < sizes["tau_hi"]
        assert m * float(mv.gaussian_tail(mv.bias_threshold(c_b, d))) == pytest.approx(lucky, rel=1e-10)


def test_paper_width_and_c_b():
    """FG B.3 items 5–6, Prop 1/2: m = d^{2+2c₀} (coarse), d^{1+2c₀} (fine); c_b = 4 + 2c₀ / 2 + 2c₀."""
    assert mv.paper_width(100, 0.05) == pytest.approx(100**2.1, rel=1e-14)
    assert mv.paper_width(100, 0.05, fine=True) == pytest.approx(100**1.1, rel=1e-14)
    assert mv.paper_width(1, 0.07) == 1.0 and mv.paper_width(3, 0.05) == pytest.approx(3**2.1, rel=1e-14)
    assert mv.paper_c_b(0.05) == pytest.approx(4.1) and mv.paper_c_b(0.05, fine=True) == pytest.approx(2.1)
    # item 5 gives no value of c₀: ours is 0.05 by default, the same in every function that takes it
    assert mv.paper_c_b() == mv.paper_c_b(0.05) and mv.paper_c_b(fine=True) == mv.paper_c_b(0.05, fine=True)
    assert mv.paper_width(100) == mv.paper_width(100, 0.05)
    assert mv.paper_width(100, fine=True) == mv.paper_width(100, 0.05, fine=True)
    for bad in (0.0, 0.1, -0.01):
        with pytest.raises(ValueError, match="c0"):
            mv.paper_width(100, bad)


def test_mp_numerical_rank_limits():
    """Rank_ε = r + (m − r)·P_MP(λ ≥ ε²σ_top²): every direction planted (r = m = min(N, d)) gives m exactly,
    no signal and ε → 0 gives m, ε beyond the bulk edge gives r."""
    N, d = 60, 20
    assert R.mp_numerical_rank(N, d, 1e-3, signal_rank=d, theta=3.0) == d
    assert R.mp_numerical_rank(d, N, 1e-3, signal_rank=d, theta=3.0) == d  # N < d: m = N
    assert R.mp_numerical_rank(N, d, 1e-12) == pytest.approx(d)
    assert R.mp_numerical_rank(N, d, 1.0 - 1e-12, signal_rank=2, theta=3.0) == pytest.approx(2)
    with pytest.raises(ValueError, match="signal_rank"):
        R.mp_numerical_rank(N, d, 1e-3, signal_rank=d + 1, theta=3.0)


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


# ------------------------------------------------------------------------------------------- theory/_cachedir.py

def test_set_numba_cache_dir_returns_the_folder_in_use(monkeypatch, tmp_path):
    from theory import _cachedir

    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("THEORYLAB_CACHE", str(tmp_path))
    assert _cachedir.set_numba_cache_dir() == str(tmp_path / "numba")
    import os

    assert os.environ["NUMBA_CACHE_DIR"] == str(tmp_path / "numba")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))  # a user's choice is kept
    assert _cachedir.set_numba_cache_dir() == str(tmp_path / "mine")


def test_probe_loss_balanced_limits():
    """VC Thm 5.1 (balanced): the loss is 0 at full collapse, where Tr[Σ_T†Σ_B] = rank Σ_B = K − 1, and
    1/2 − 1/(2K) when the means carry no signal (Tr = 0); K = 1 has no between-class variation."""
    for K in (2, 3, 10):
        assert vc.probe_loss_balanced(K - 1, K) == pytest.approx(0.0, abs=1e-15)
        assert vc.probe_loss_balanced(0.0, K) == pytest.approx(0.5 - 0.5 / K, rel=1e-15)
    with pytest.raises(ValueError, match="K"):
        vc.probe_loss_balanced(0.0, 1)



def test_obs42_identity_size_caps():
    """r ≤ 3 and 2 ≤ p ≤ 4 are the symbolic size caps; r = 3 is within them, and r = p = 3 is rejected because V_B
    must be a proper subspace — a different error from the cap."""
    with pytest.raises(ValueError, match="proper subspace"):
        svc.obs42_identity(3, 3)
    with pytest.raises(ValueError, match=r"r: must be an integer in \[1, 3\]"):
        svc.obs42_identity(4, 4)


def test_replaced_logit_metrics_rejects_non_integer_labels():
    F = np.random.default_rng(1).standard_normal((20, 3))
    y = F.argmax(axis=1)
    for bad in (y.astype(float), y.astype(bool), y + 0.5):
        with pytest.raises(ValueError, match="labels: must be integers"):
            nd.replaced_logit_metrics(F, bad, 0, [-1.0, 0.5, 0.5])
    for bad in (-1, 3):
        with pytest.raises(ValueError, match=r"labels: must lie in \[0, 3\)"):
            nd.replaced_logit_metrics(F, np.where(np.arange(20) == 0, bad, y), 0, [-1.0, 0.5, 0.5])


def test_mlog_closed_form_and_type():
    """VC Eq 6: mean log-odds of the downstream accuracies minus the pre-training log-odds; a float for one row."""
    d, q = np.array([0.5, 0.8]), 0.6
    want = np.mean(np.log(d / (1 - d))) - np.log(q / (1 - q))
    out = vc.mlog(d, q)
    assert type(out) is float and out == pytest.approx(want, rel=1e-14)
    rows = vc.mlog(np.array([[0.5, 0.8], [0.6, 0.6]]), np.array([0.6, 0.6]))
    assert rows.shape == (2,) and rows[0] == pytest.approx(want, rel=1e-14) and rows[1] == 0.0


def test_linear_error_default_has_no_feature_strength_noise():
    """FG App B.2: ι defaults to 0 (α ≡ 1); a positive ι only adds signal variance, so the error grows."""
    base = mv.linear_error(16, 3.0, 2, 0.1)
    assert base == mv.linear_error(16, 3.0, 2, 0.1, iota=0.0)
    assert mv.linear_error(16, 3.0, 2, 0.1, iota=0.5) > base


def test_mlog_percent_hint_and_lambda_max_overflow():
    with pytest.raises(ValueError, match="pass percent=True"):
        vc.mlog([50.0, 99.5], 60.0)  # percentages given as fractions: the error says so
    c = np.array([[1e308, 0.9e308], [0.9e308, 1e308]])
    with pytest.raises(ValueError, match="overflows float64"):
        dep.lambda_max(c)  # 2·0.9e308 is beyond float64: an error, not inf


def test_linear_error_noiseless_limit_is_half_the_featureless_mass():
    """FG App B.2: as σ_ζ → 0 every sample with a feature patch is classified right (Q(n/0⁺) = 0), and one with
    none (n = 0) is a coin flip: the error tends to ½·P(C + S = 0)."""
    _, total = mv.patch_count_pmf(4, 1.0)
    assert total[0] > 0.01
    assert mv.linear_error(4, 1.0, 1, 1e-9) == pytest.approx(0.5 * total[0], rel=1e-12)


def test_trace_pinv_takes_cholesky_only_with_the_documented_margin():
    """collapse/linalg.trace_pinv: Cholesky (St⁻¹) only when the condition estimate puts λ_min 1000× above the
    pseudo-inverse's cutoff rtol·λ_max; closer to the cutoff it takes eigh. For a diagonal St the estimate is
    exact (rcond = λ_min/λ_max), so the route is pinned; both routes give Σ_j M_ij²/λ_j when nothing is cut."""
    from theory.collapse.linalg import trace_pinv

    rtol = 1e-6
    M0 = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 0.25]])
    Q, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((3, 3)))  # a non-diagonal St: both triangles
    lam = np.array([1.0, 0.5, 1e4 * rtol])
    t, r = trace_pinv(Q @ np.diag(lam) @ Q.T, M0 @ Q.T, rtol)
    assert r == "cholesky" and t == pytest.approx(float(np.sum(M0**2 / lam)), rel=1e-9)
    for scale in (1.0, 1e-8, 1e8):  # St → s·St, M → √s·M leaves the trace and the route unchanged
        M = M0 * math.sqrt(scale)
        for ratio, route in ((1e4 * rtol, "cholesky"), (1.2e3 * rtol, "cholesky"), (0.8e3 * rtol, "eigh"),
                             (1e2 * rtol, "eigh"), (2.0 * rtol, "eigh")):
            lam = scale * np.array([1.0, 0.5, ratio])
            t, r = trace_pinv(np.diag(lam), M, rtol)
            assert r == route, (scale, ratio, r)
            assert t == pytest.approx(float(np.sum(M0**2 / (lam / scale))), rel=1e-12)
        lam = scale * np.array([1.0, 0.5, 0.5 * rtol])  # below the cutoff rtol·λ_max: that direction is dropped
        t, r = trace_pinv(np.diag(lam), M, rtol)
        assert r == "eigh" and t == pytest.approx(float(np.sum(M0[:, :2] ** 2 / (lam[:2] / scale))), rel=1e-12)


def test_planted_trace_identity_residual_is_the_normaliser_error():
    """VC Thm 5.2's planted bug, Σ_T with n/(n−1): the residual is p·det(Σ_B+Σ_W)·c^(p−1)·(1 − c), c = n/(n−1),
    cleared of denominators — i.e. −p·det·n^(p−1)·(n−1)^(p−1) — not merely some nonzero polynomial."""
    n = sp.Symbol("n")
    for p in (1, 2, 3):
        r = svc.trace_identity_residual(p, planted=True)
        det = (svc.generic_symmetric(p, "b") + svc.generic_symmetric(p, "w")).det(method="berkowitz")
        assert sp.factor(r / (p * det * n ** (p - 1))) == -(n - 1) ** (p - 1)
        assert svc.trace_identity_residual(p) == 0


def test_resolve_lambda_rejects_non_square_covariances():
    """ND Thm 1's λ = ρ·λ_max(i) reads a column of a square Cov: a rectangular array is an error, not a guess."""
    for bad in (np.ones((2, 3)), np.ones((3, 2)), np.ones((1, 1)), np.ones(3)):
        with pytest.raises(ValueError, match="cov: expected a square matrix with n >= 2"):
            cl.resolve_lambda(bad, 0, None, 0.5)
    assert cl.resolve_lambda(C3, 1, None, 0.5) == pytest.approx(0.5 * 2 * 0.5)


def test_regime_table_sigma0_bound():
    """FG B.3 item 14: σ0 ≤ 1/(d³ s log d); the table shows that bound and flags σ0 inside iff it holds."""
    d, s = 100, 3.0
    bound = 1 / (d**3 * s * math.log(d))

    def row(sigma0):
        rows = mv.regime_table(d, 16, s, 8, 800, 100, 8.0, 0.5, sigma0, sigma0)
        return next(r for r in rows if r["parameter"] == "sigma0")

    r = row(0.5 * bound)
    assert float(r["paper value at this d"]) == pytest.approx(bound, rel=0.06) and r["inside"] is True
    assert row(2.0 * bound)["inside"] is False


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


def _fuzz_reference(H, y, r):
    """Tr[Σ_B,r†Σ_W] from numpy alone: Σ_B = Σ_k π_k(μ_k − μ_G)(μ_k − μ_G)ᵀ, Σ_W = (1/N)Σ_i (h_i − μ_yi)(…)ᵀ."""
    K = int(y.max()) + 1
    mu = np.stack([H[y == k].mean(0) for k in range(K)])
    pi = np.bincount(y) / len(y)
    D = mu - pi @ mu
    Sb = (D * pi[:, None]).T @ D
    R = H - mu[y]
    Sw = R.T @ R / len(y)
    w, V = np.linalg.eigh(Sb)
    w, V = w[::-1][:r], V[:, ::-1][:, :r]
    return float(np.sum(np.einsum("ij,ij->j", Sw @ V, V) / w))


@pytest.mark.parametrize("p, K, r", [(6, 4, 1), (6, 4, 2), (3, 6, 1), (3, 6, 2)])
def test_fuzziness_at_a_lower_rank_matches_numpy(p, K, r):
    """VC Sec 3.2: fuzziness with Σ_B† from the top r eigenpairs, by the K×K Gram route (K ≤ p) and the p×p
    route (K > p), equals the same trace from numpy's eigh of Σ_B (imbalanced classes: π_k weights)."""
    rng = np.random.default_rng(p * 10 + K)
    y = np.concatenate([np.arange(K), rng.integers(0, K, 60)])
    H = 3.0 * rng.standard_normal((K, p))[y] + rng.standard_normal((len(y), p))
    assert vc.fuzziness(H, y, rank=r) == pytest.approx(_fuzz_reference(H, y, r), rel=1e-10)
    full = min(p, K - 1)  # generic class means: the numerical rank of Σ_B is the paper's rank
    assert vc.fuzziness(H, y, rank="exact") == pytest.approx(_fuzz_reference(H, y, full), rel=1e-10)


def test_collapse_degenerate_inputs_are_named_errors():
    """VC metrics on data where they are undefined (coincident class means, all features one direction, one
    class, mismatched accumulators, labels given twice) raise a ValueError saying which — no 0/0 or NaN."""
    y = np.array([0, 0, 1, 1])
    same = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])  # both class means 0
    with pytest.raises(ValueError, match="vci: Σ_B is numerically zero"):
        vc.vci(same, y, rank="exact")
    one_way = np.array([[1.0, 0.0], [2.0, 0.0], [3.0, 0.0], [5.0, 0.0]])  # every h/‖h‖ = e₁: d̄_total = 0 exactly
    assert vc.cosine_distances(one_way, y)["d_total"] == 0.0
    with pytest.raises(ValueError, match="class_separation: d̄_total = 0"):
        vc.class_separation(one_way, y)
    one_way3 = np.array([[1.0, 0.0], [2.0, 0.0], [3.0, 0.0], [5.0, 0.0], [4.0, 0.0], [9.0, 0.0]])
    with pytest.raises(ValueError, match="metrics: d̄_total = 0"):
        vc.metrics(one_way3, np.array([0, 0, 1, 1, 2, 2]), rank=1)
    with pytest.raises(ValueError, match="K = 1 has no between-class variation"):
        vc.probe_loss_lstsq(same, np.zeros(4, dtype=int))
    a = vc.ClassStats(2, 2).update(same, y)
    with pytest.raises(ValueError, match=r"merge: shapes differ: \(p, K\) = \(2, 2\) vs \(2, 3\)"):
        a.merge(vc.ClassStats(2, 3))
    with pytest.raises(ValueError, match="labels: give labels only with a feature array"):
        vc.vci(a, y)
    assert repr(a) == "ClassStats(n_features=2, n_classes=2, n=4)"


def test_regime_table_bias_row_is_minus_sigma0_times_the_threshold():
    """FG B.3 item 6: the initial bias b⁽⁰⁾ = −σ0·√(c_b log d), shown for our c_b and the paper's 4 + 2c0."""
    d, sigma0, c0 = 100, 1e-7, 0.05
    rows = mv.regime_table(d, 16, 3.0, 8, 800, 100, 8.0, 0.5, sigma0, sigma0, c0, c_b_coarse=2.5, c_b_fine=1.5)
    r = next(r for r in rows if r["parameter"].startswith("bias"))
    assert r["value"] == pytest.approx(-sigma0 * math.sqrt(2.5 * math.log(d)), rel=1e-4)
    assert float(r["paper value at this d"]) == pytest.approx(-sigma0 * math.sqrt((4 + 2 * c0) * math.log(d)),
                                                               rel=1e-3)
    assert r["inside"] is False


def test_regime_table_defaults_describe_the_default_experiment():
    """theory.multiview.regime_table's default ι is that of sims' default FG experiment, so a
    table built without them describes the run the package makes by default."""
    import inspect

    from sims.multiview.experiment import DEFAULTS

    sig = inspect.signature(mv.regime_table).parameters
    assert sig["iota"].default == DEFAULTS["iota"]
    rows = mv.regime_table(100, 16, 3.0, 8, 800, 100, 8.0, 0.5, 1e-7, 1e-7)
    assert next(r for r in rows if r["parameter"] == "iota")["value"] == DEFAULTS["iota"]


def test_mlog_suggests_percent_only_for_percent_like_input():
    """VC Eq 6 needs accuracies in (0, 1): the 'pass percent=True' hint is given only when some value exceeds 1
    and all are below 100 (they look like percentages), not for 0, 1, negative fractions, or a 100 that
    percent=True would reject as well."""
    for bad in ([0.0, 0.5], [1.0, 0.5], [-0.2, 0.5], [100.0, 50.0]):  # 100 % is outside (0, 100) too: no hint
        with pytest.raises(ValueError, match=r"strictly inside \(0, 1\)$"):
            vc.mlog(bad, 0.6)
    with pytest.raises(ValueError, match=r"strictly inside \(0, 1\) \(pass percent=True"):
        vc.mlog([1.5, 0.5], 0.6)


def test_regime_table_every_row_against_fg_b3():
    """FG B.3 read with O(·) constants 1 and polylog d = log d: each row shows the paper's value at this d and
    flags ours inside exactly when the condition holds (checked on both sides of every bound)."""
    d, c0 = 100, 0.05
    L = math.log(d)

    def rows(**kw):
        a = dict(d=d, P=16, s=3.0, k=8, m_coarse=800, m_fine=100, lucky=8.0, noise_norm=0.5, sigma0=1e-7, eta=1e-7)
        a.update(kw)
        return {r["parameter"]: r for r in mv.regime_table(**a, c0=c0)}

    base = rows(iota_lower=0.25, iota_upper=0.5, hard_noise_norm=2.0, steps=100, batch=64)
    assert base["d"]["inside"] == "n/a" and base["steps"]["inside"] == "n/a" and base["steps"]["value"] == 100
    # item 13: P σ_ζ ≥ log d  (σ_ζ = noise_norm / √d)
    assert base["P"]["paper value at this d"] == f"P σ_ζ = {16 * 0.5 / 10:.2g} vs log d = {L:.2f}"
    assert base["P"]["inside"] is False and rows(P=100, noise_norm=0.99 * L / 10)["P"]["inside"] is False
    assert rows(P=100, noise_norm=1.001 * L / 10)["P"]["inside"] is True  # P·σ_ζ just above log d
    # item 10: s ≥ log^15 d
    assert base["s"]["paper value at this d"] == f"log^15 d = {L ** 15:.1e}"
    assert base["s"]["inside"] is False and rows(s=L ** 15)["s"]["inside"] is True
    assert rows(s=100.0)["s"]["inside"] is False  # 100 ≪ log^15 d ≈ 8.8e9
    assert rows(s=0.5 * L ** 15)["s"]["inside"] is False  # the exponent is 15: log^14 d ≈ 1.9e9 would let it in
    # item 14: σ0 ≤ 1/(d³ s log d), inclusive
    assert rows(sigma0=1 / (d ** 3 * 3.0 * L), eta=1 / (d ** 3 * 3.0 * L))["sigma0"]["inside"] is True
    # item 4: log d ≤ k ≤ d^0.4 (4.61 ≤ k ≤ 6.31 at d = 100) and k ≥ s·log⁵ d (k bounded below by a polylog)
    assert base["k"]["paper value at this d"] == f"[max({L:.2f}, s·log⁵ d = {3.0 * L ** 5:.0f}), {d ** 0.4:.2f}]"
    assert [rows(k=k, s=1e-3)["k"]["inside"] for k in (4, 5, 6, 7)] == [False, True, True, False]
    assert rows(k=5)["k"]["inside"] is False  # s = 3: s·log⁵ d = 6214 > 5 (the item-4 part the old row reversed)
    assert rows(k=5, s=5 / L ** 5)["k"]["inside"] is True and rows(k=5, s=5.01 / L ** 5)["k"]["inside"] is False
    assert rows(d=32, k=4, s=1e-3)["k"]["inside"] is True  # 32^0.4 = 4 exactly: the upper edge is inclusive
    assert rows(P=1, k=1)["P"]["value"] == 1 and rows(P=1, k=1)["k"]["inside"] is False  # the smallest valid P, k
    assert rows(d=2)["d"]["value"] == 2  # and d (log d > 0)
    for bad in (dict(P=0), dict(k=0), dict(d=1)):
        with pytest.raises(ValueError, match=next(iter(bad))):
            rows(**bad)
    # Prop 1–2 widths and item 6's c_b = 4 + 2c0 (coarse), 2 + 2c0 (fine)
    assert base["m_coarse"]["paper value at this d"] == f"{d ** (2 + 2 * c0):.0f}"
    assert base["m_fine"]["paper value at this d"] == f"{d ** (1 + 2 * c0):.0f}"
    # Θ(·) read as one decade each way (as item 14), inclusive: d^2.1 = 15849, d^1.1 = 158.5 at d = 100
    wc, wf = d ** (2 + 2 * c0), d ** (1 + 2 * c0)
    assert [rows(m_coarse=int(r * wc))["m_coarse"]["inside"] for r in (0.09, 0.11, 9.9, 10.1)] == \
        [False, True, True, False]
    assert [rows(m_fine=int(r * wf), lucky=2.0)["m_fine"]["inside"] for r in (0.09, 0.11, 9.9, 10.1)] == \
        [False, True, True, False]
    assert base["m_coarse"]["inside"] is False and base["m_fine"]["inside"] is True  # 800 < 1585; 100 ∈ [15.8, 1585]
    # the upper edge is inclusive: at d = 256, c0 = 1/16 the widths are powers of two (2^17, 2^9), so 10·W is an
    # integer a width can equal
    edge = {r["parameter"]: r for r in mv.regime_table(
        d=256, P=16, s=3.0, k=8, m_coarse=10 * 2**17, m_fine=10 * 2**9, lucky=8.0, noise_norm=0.5, sigma0=1e-7,
        eta=1e-7, c0=0.0625)}
    assert edge["m_coarse"]["inside"] is True and edge["m_fine"]["inside"] is True
    assert base["c_b_coarse"]["paper value at this d"] == f"{4 + 2 * c0:.2f}"
    assert base["c_b_fine"]["paper value at this d"] == f"{2 + 2 * c0:.2f}"
    on = rows(c_b_coarse=4 + 2 * c0, c_b_fine=2 + 2 * c0)
    tau = math.sqrt((4 + 2 * c0) * L)  # the bias row shows −σ0 τ to 4 significant digits
    assert on["bias b⁽⁰⁾ (coarse)"]["value"] == float(f"{-1e-7 * tau:.4g}")
    # α′ rows only when both ι_lower and ι_upper are given
    assert "α′ lower ι_lower" not in rows(iota_lower=0.25) and "α′ upper: s·ι_upper" not in rows(iota_upper=0.5)
    assert on["c_b_coarse"]["inside"] is True and on["c_b_fine"]["inside"] is True and on["bias b⁽⁰⁾ (coarse)"]["inside"]
    # "equals the paper's c_b" is read to 1e−9 (a c_b from m·Q = lucky is an isf, never exact): every c_b row, both sides
    for dc, inside in ((0.5e-9, True), (-0.5e-9, True), (1.5e-9, False), (-1.5e-9, False)):
        near = rows(c_b_coarse=4 + 2 * c0 + dc, c_b_fine=2 + 2 * c0 + dc)
        assert [near[r]["inside"] for r in ("c_b_coarse", "c_b_fine", "bias b⁽⁰⁾ (coarse)")] == [inside] * 3, dc
    assert rows(c_b_coarse=4.12345, c_b_fine=2.12345)["c_b_coarse"]["value"] == 4.123  # displayed to 3 decimals
    assert rows(c_b_coarse=4.12345, c_b_fine=2.12345)["c_b_fine"]["value"] == 2.123
    off = rows(c_b_coarse=4.2, c_b_fine=2.2)
    assert off["c_b_coarse"]["value"] == 4.2 and not off["c_b_coarse"]["inside"] and not off["c_b_fine"]["inside"]
    # item 14: η/σ0 ∈ [0.1, 10] (Θ(1) read as one decade each way), inclusive
    assert [rows(eta=r * 1e-7)["eta"]["inside"] for r in (0.09, 0.1, 10.0, 10.5)] == [False, True, True, False]
    assert rows(eta=2e-7)["eta"]["paper value at this d"] == "η/σ0 = 2"
    # item 7: ι ≤ 1/log d
    assert base["iota"]["paper value at this d"] == f"{1 / L:.3f}"
    assert rows(iota=1 / L)["iota"]["inside"] is True and rows(iota=1.01 / L)["iota"]["inside"] is False
    # item 11: σ_ζ√d = 1/log^10 d (inside up to 1.5×)
    assert base["noise norm σ_ζ√d"]["paper value at this d"] == f"{L ** -10:.1e}"
    assert rows(noise_norm=1.5 * L ** -10)["noise norm σ_ζ√d"]["inside"] is True
    assert rows(noise_norm=1.6 * L ** -10)["noise norm σ_ζ√d"]["inside"] is False
    assert base["noise norm σ_ζ√d"]["inside"] is False
    # item 8: ι_lower ≥ 1/log⁴ d, s·ι_upper ≤ 1/log d
    assert base["α′ lower ι_lower"]["paper value at this d"] == f"{L ** -4:.4f}" and base["α′ lower ι_lower"]["inside"]
    assert not rows(iota_lower=0.9 * L ** -4, iota_upper=0.5)["α′ lower ι_lower"]["inside"]
    # the displayed s·ι_upper is rounded to 4 decimals (3 × 0.123456 = 0.370368)
    assert rows(iota_lower=0.01, iota_upper=0.123456)["α′ upper: s·ι_upper"]["value"] == 0.3704
    up = base["α′ upper: s·ι_upper"]
    assert up["value"] == 1.5 and up["paper value at this d"] == f"{1 / L:.3f}" and up["inside"] is False
    assert rows(iota_lower=0.01, iota_upper=1 / (3.0 * L))["α′ upper: s·ι_upper"]["inside"] is True
    lo, hi = L ** -4 * (1 - 1e-9), (1 + 1e-9) / L  # the slack edges, inclusive (s = 2: s·ι exact in binary)
    assert rows(iota_lower=lo, iota_upper=0.5)["α′ lower ι_lower"]["inside"] is True
    assert rows(iota_lower=lo * (1 - 0.5e-9), iota_upper=0.5)["α′ lower ι_lower"]["inside"] is False
    assert rows(s=2.0, iota_lower=0.01, iota_upper=hi / 2)["α′ upper: s·ι_upper"]["inside"] is True
    # half the slack again beyond each edge is outside (a slack of 2e−9 would take it in)
    assert rows(s=2.0, iota_lower=0.01, iota_upper=hi * (1 + 0.5e-9) / 2)["α′ upper: s·ι_upper"]["inside"] is False
    # item 12 (lower edge) and item 15
    assert base["big noise σ_ζ*√d"]["inside"] is False and rows(hard_noise_norm=L)["big noise σ_ζ*√d"]["inside"]
    edge = L * (1 - 1e-9)  # the bounds carry a 1e−9 relative slack for rounding, inclusive
    assert rows(hard_noise_norm=edge)["big noise σ_ζ*√d"]["inside"] is True
    assert rows(hard_noise_norm=edge * (1 - 0.5e-9))["big noise σ_ζ*√d"]["inside"] is False
    assert base["batch N"]["paper value at this d"] == f"k d log d = {8 * d * L:.0f}" and not base["batch N"]["inside"]
    assert rows(batch=math.ceil(8 * d * L))["batch N"]["inside"] is True
    assert rows(batch=1000)["batch N"]["inside"] is False  # 1000 < k d log d ≈ 3684
    assert {"α′ lower ι_lower", "big noise σ_ζ*√d", "steps", "batch N"}.isdisjoint(rows())  # optional rows


def test_rank_additive_planted_residual_is_minus_one_over_n():
    """VC Thm 5.2 with rank-additive Σ_B = bbᵀ, Σ_W = wwᵀ: Tr[Σ_T⁻¹Σ_B] = 1 exactly; with Σ_T·n/(n−1) (np.cov's
    ddof=1) it is (n−1)/n, so the planted residual is exactly −1/n."""
    assert svc.rank_additive_equality() == 0
    assert sp.simplify(svc.rank_additive_equality(planted=True) + 1 / sp.Symbol("n")) == 0


def test_obs42_penrose_pattern_matches_numpy():
    """VC Obs 4.2: which Moore–Penrose conditions X = U⁻ᵀΣ_B†U⁻¹ satisfies for Y = UΣ_BUᵀ, from sympy, equals the
    pattern numpy finds on random numeric U of each coupling (exact zero residuals vs clearly nonzero)."""
    rng = np.random.default_rng(11)
    for r, p in ((1, 2), (1, 3), (2, 3)):
        for coupling in ("none", "upper", "lower"):
            sym = {k: all(svc.vanishes(e) for e in R) for k, R in svc.obs42_identity(r, p, coupling).items()}
            q = p - r
            S = rng.standard_normal((r, r))
            S = S @ S.T + np.eye(r)
            U = np.block([[rng.standard_normal((r, r)) + 2 * np.eye(r),
                           rng.standard_normal((r, q)) if coupling == "upper" else np.zeros((r, q))],
                          [rng.standard_normal((q, r)) if coupling == "lower" else np.zeros((q, r)),
                           rng.standard_normal((q, q)) + 2 * np.eye(q)]])
            Sb = np.zeros((p, p))
            Sb[:r, :r] = S
            Sbp = np.zeros((p, p))
            Sbp[:r, :r] = np.linalg.inv(S)
            Ui = np.linalg.inv(U)
            X, Y = Ui.T @ Sbp @ Ui, U @ Sb @ U.T
            num = {"YXY = Y": Y @ X @ Y - Y, "XYX = X": X @ Y @ X - X, "(YX)ᵀ = YX": (Y @ X).T - Y @ X,
                   "(XY)ᵀ = XY": (X @ Y).T - X @ Y}
            for k, R in num.items():
                assert sym[k] == (np.abs(R).max() < 1e-9), (r, p, coupling, k, np.abs(R).max())
            assert all(sym.values()) == (coupling == "none")


def test_penrose_residuals_of_a_wrong_inverse():
    """The four Penrose residuals of X = I for Y = diag(1, 0): YXY − Y = 0, XYX − X = diag(0, −1), the two
    symmetry residuals 0 — so a wrong X is seen by condition 2 alone here."""
    R = svc.penrose_residuals(sp.diag(1, 0), sp.eye(2))
    assert list(R) == ["YXY = Y", "XYX = X", "(YX)ᵀ = YX", "(XY)ᵀ = XY"]
    assert R["YXY = Y"] == sp.zeros(2, 2) and R["XYX = X"] == sp.diag(0, -1)
    assert R["(YX)ᵀ = YX"] == sp.zeros(2, 2) and R["(XY)ᵀ = XY"] == sp.zeros(2, 2)
    S = sp.Matrix([[1, 2], [0, 0]])  # non-symmetric YX with X = I: condition 3 and 4 see it
    R = svc.penrose_residuals(S, sp.eye(2))
    assert R["(YX)ᵀ = YX"] == S.T - S and R["(XY)ᵀ = XY"] == S.T - S


@pytest.mark.parametrize("call, ok, bad", [
    ("decomposition_residual", [dict(K=4, N=1, p=1), dict(K=1, N=4, p=1), dict(K=1, N=1, p=3)],
     [(dict(K=5), "K"), (dict(N=5), "N"), (dict(p=4), "p"), (dict(K=0), "K"), (dict(N=0), "N"), (dict(p=0), "p")]),
    ("trace_identity_residual", [dict(p=1), dict(p=4)], [(dict(p=5), "p"), (dict(p=0), "p")]),
    ("obs42_identity", [dict(r=1, p=2), dict(r=1, p=4), dict(r=3, p=4)], [(dict(r=1, p=1), "p"), (dict(r=1, p=5), "p"),
                                                                          (dict(r=0, p=2), "r")]),
])
def test_symbolic_size_caps_are_exactly_the_documented_ones(call, ok, bad):
    """The symbolic statements accept every size up to their documented caps (decomposition K, N ≤ 4, p ≤ 3; trace
    identity p ≤ 4; Obs 4.2 2 ≤ p ≤ 4, 1 ≤ r ≤ 3) and reject the next one with an error naming the argument."""
    f = getattr(svc, call)
    for kw in ok:
        f(**kw)
    caps = {"decomposition_residual": {"K": (1, 4), "N": (1, 4), "p": (1, 3)},
            "trace_identity_residual": {"p": (1, 4)}, "obs42_identity": {"r": (1, 3), "p": (2, 4)}}[call]
    for kw, name in bad:
        lo, hi = caps[name]
        with pytest.raises(ValueError, match=rf"^{name}: must be an integer in \[{lo}, {hi}\]"):
            f(**kw)


def test_labels_just_outside_the_classes_are_errors():
    """check_labels: −1 (a padding label) and K are outside [0, K): named errors, never a silent wrap-around."""
    H = np.random.default_rng(2).standard_normal((6, 2))
    for bad in (-1, 3):
        y = np.array([0, 1, 2, 0, 1, bad])
        with pytest.raises(ValueError, match=rf"label {bad} is outside \[0, 3\)"):
            vc.ClassStats(2, 3).update(H, y)


def test_pca_dim_svd_route_resolves_what_the_covariance_route_cannot():
    """RD Sec 4.3: method='svd' (and 'auto' for ε < 1e−10) gets PCA eigenvalues right to ~1e−16 relative to each
    σ_i, so λ = 1e−18·λ_max directions count at ε = 1e−19 and not at ε = 1e−17; the covariance route's absolute
    error ~d·1e−16·λ_max could not tell these apart."""
    rng = np.random.default_rng(4)
    N, d = 256, 4
    W = np.linalg.qr(rng.standard_normal((N, d)))[0] * math.sqrt(N - 1)  # centred orthonormal-ish columns
    W -= W.mean(axis=0)
    W = np.linalg.qr(W)[0] * math.sqrt(N - 1)
    Q = np.linalg.qr(rng.standard_normal((d, d)))[0]
    X = W @ np.diag([1.0, 1e-9, 1e-9, 1e-9]) @ Q.T  # PCA eigenvalues 1, 1e−18 ×3, rotated
    for method in ("svd", "auto"):
        assert R.pca_dim(X, eps=1e-19, method=method) == 4
        assert R.pca_dim(X, eps=1e-17, method=method) == 1
    assert R.pca_dim(X, eps=1e-19, method="cov") < 4  # the covariance route really is the inaccurate one here
    # 'svd' is the SVD whatever ε: eigenvalues 1e−10·λ_max (σ ratio 1e−5) are resolved to ~1e−11 relative, so
    # they count at ε = 1e−10·(1 − 1e−8) and not at 1e−10·(1 + 1e−8); the covariance's ~4e−6 could not split them
    Y = W @ np.diag([1.0, 1e-5, 1e-5, 1e-5]) @ Q.T
    assert R.pca_dim(Y, eps=1e-10 * (1 - 1e-8), method="svd") == 4
    assert R.pca_dim(Y, eps=1e-10 * (1 + 1e-8), method="svd") == 1


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


def test_metrics_names_itself_when_fuzziness_is_undefined():
    """VC Sec 4.3's instability at its limit: class means on a line (rank Σ_B = 1) with the paper's rank
    min(p, K−1) = 2 leave no resolved second eigenvalue; metrics() raises a ValueError prefixed 'metrics:'."""
    rng = np.random.default_rng(8)
    y = np.repeat(np.arange(3), 20)
    H = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]])[y] + 0.1 * rng.standard_normal((60, 2))
    H -= np.stack([H[y == k].mean(0) for k in range(3)])[y] - np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]])[y]
    with pytest.raises(ValueError, match=r"^metrics: .*Σ_B"):
        vc.metrics(H, y)
    assert np.isfinite(vc.metrics(H, y, rank=1)["vci"])


def test_rtol_zero_is_a_valid_cutoff_and_one_is_not():
    """VC metrics' rtol is a cutoff relative to λ_max in [0, 1): 0 keeps every positive eigenvalue (a plain
    inverse for a full-rank Σ_T: the same trace as the default cutoff here), 1 would drop everything."""
    from theory.collapse.linalg import check_rtol

    assert check_rtol(0.0) == 0.0 and check_rtol(0) == 0.0 and check_rtol(None) is None
    rng = np.random.default_rng(9)
    y = np.repeat(np.arange(3), 10)
    H = rng.standard_normal((3, 4))[y] + rng.standard_normal((30, 4))
    assert vc.trace_ratio(H, y, rtol=0.0) == pytest.approx(vc.trace_ratio(H, y), rel=1e-12)
    for bad in (1.0, -1e-300):
        with pytest.raises(ValueError, match=r"rtol: must lie in \[0, 1\)"):
            vc.trace_ratio(H, y, rtol=bad)


def test_fuzziness_gram_route_only_with_the_documented_margin():
    """collapse/linalg.Frame.fuzz_vb at r = K − 1 ≤ p: the one-Cholesky Gram route only when the condition estimate
    of G + qqᵀ is above 1e3·K·ε; a Σ_B with eigenvalues (1, 1, ρ) takes it at ρ = 0.1 and not at ρ = 5e−13
    (rcond ≈ 0.6ρ < 1e3·4·ε ≈ 8.9e−13, though still resolved: ρ > 100·p·ε), and both routes give
    Tr[Σ_B†Σ_W] = Σ_j 1/g_j for Σ_W = I, Σ_B = Σ_j g_j e_j e_jᵀ."""
    from theory.collapse.linalg import Frame

    K = p = 4
    priors = np.full(K, 0.25)
    U = np.array([[1, 1, -1, -1], [1, -1, 1, -1], [1, -1, -1, 1]], dtype=float).T / 2  # ⟂ q = √π = ½·1
    for rho, route in ((0.1, "gram"), (5e-13, "eigen")):
        g = np.array([1.0, 1.0, rho])
        M = np.zeros((K, p))
        M[:, :3] = U * np.sqrt(g)  # M = Σ_j √g_j u_j e_jᵀ: Σ_B = MᵀM = diag(g, 0), G = MMᵀ
        f = Frame(M, np.eye(p), priors)
        fz, on = f.fuzz_vb(K - 1)
        assert f.fuzz_route[K - 1] == route, (rho, f.fuzz_route)
        tol = 1e-12 + 10 * np.finfo(float).eps / rho  # eigh's error ε·λ_max is ε/ρ relative on the 1/ρ term
        assert fz == pytest.approx(float(np.sum(1 / g)), rel=tol) and on == pytest.approx(3.0, rel=tol)


def test_spiked_top_singular_bbp_threshold_and_continuity():
    """BBP (RD's random-matrix baseline): below θ = γ^{1/4} the top singular value is the bulk edge 1 + √γ; above
    it √((1+θ²)(γ+θ²))/θ, which equals the edge at the threshold (continuity) and exceeds it beyond."""
    g = 0.25
    edge = 1 + math.sqrt(g)
    thr = g**0.25
    assert R.spiked_top_singular(0.6, g) == edge  # 0.6 < γ^{1/4} ≈ 0.707: no outlier yet
    assert R.spiked_top_singular(thr, g) == pytest.approx(edge, rel=1e-15)
    f = lambda t: math.sqrt((1 + t * t) * (g + t * t)) / t  # noqa: E731
    assert f(thr) == pytest.approx(edge, rel=1e-12)  # the two branches meet at the threshold
    for t in (0.8, 2.0):
        assert R.spiked_top_singular(t, g) == pytest.approx(f(t), rel=1e-14) and f(t) > edge


def test_unscale_keeps_the_smallest_normal_and_rejects_below():
    """stats.unscale: x·2^e exactly; a largest entry equal to the smallest normal (2^−1022) is kept, one below it
    (subnormal: precision lost) is an error naming the quantity."""
    from theory.collapse.stats import unscale

    assert unscale(np.array([1.0, 0.5]), -1022, "q")[0] == np.finfo(float).tiny
    with pytest.raises(ValueError, match="q: underflows float64"):
        unscale(np.array([1.0, 0.5]), -1023, "q")


def test_linear_error_matches_a_patchwise_monte_carlo():
    """FG App B.2's ideal linear classifier, simulated patch by patch: P patches in R^(2+2k) with orthonormal
    features, u = v₊ + Σ_j v₊,ⱼ − v₋ − Σ_j v₋,ⱼ, n ~ the feature-patch count pmf, every patch
    carrying N(0, σ_ζ² I) noise, feature strengths α ~ U[1 − ι, 1 + ι]; error = P(F₊ − F₋ < 0), a coin flip when
    n = 0. linear_error agrees within 4 Monte-Carlo standard deviations."""
    rng = np.random.default_rng(12)
    P, s, k, N = 4, 1.5, 1, 400_000
    d = 2 + 2 * k
    u = np.concatenate([np.ones(1 + k), -np.ones(1 + k)])  # in the basis (v₊, v₊,ⱼ, v₋, v₋,ⱼ)
    _, total = mv.patch_count_pmf(P, s)
    for sz, iota in ((0.3, 0.0), (0.1, 0.6)):  # noise-dominated; the feature strengths α ~ U[1 − ι, 1 + ι] matter
        n = rng.choice(P + 1, size=N, p=total)
        X = sz * rng.standard_normal((N, P, d))
        feat = np.arange(P)[None, :] < n[:, None]  # the first n patches carry a '+' feature (v₊ or a v₊,ⱼ)
        alpha = rng.uniform(1 - iota, 1 + iota, (N, P))
        X[:, :, 0] += feat * alpha  # ⟨u, v⟩ = 1 for every '+' feature: v₊ stands for all of them
        F = (X @ u).sum(axis=1)
        vals = np.where(n > 0, F < 0, 0.5)
        want = mv.linear_error(P, s, k, sz, iota)
        assert abs(vals.mean() - want) < 4 * vals.std() / math.sqrt(N), (sz, iota, vals.mean(), want)


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


def test_nd_generic_symmetric_needs_a_positive_size():
    """symbolic/nd: the generic symmetric n×n Cov needs n ≥ 1 (n = 0 is an error, not an empty matrix)."""
    from theory.symbolic import nd as snd

    assert snd.generic_symmetric(1).shape == (1, 1)
    with pytest.raises(ValueError, match="n: must be a positive integer"):
        snd.generic_symmetric(0)


def test_pca_dim_counts_at_most_n_minus_one_eigenvalues():
    """RD Sec 4.3: N centred samples span at most N − 1 directions, so PCA has min(N − 1, d) eigenvalues; the
    N-th singular value of the centred data is rounding and never counts, even at ε = 1e−300."""
    X = np.random.default_rng(13).standard_normal((5, 10))
    assert R.pca_dim(X, eps=1e-300) == 4
    assert R.pca_dim(X, eps=1e-300, method="cov") <= 4


def test_covlasso_accepts_the_smallest_normal_diagonal():
    """ND Eq 6 is scale-invariant: Cov·2^−1022 (smallest diagonal exactly the smallest normal float64) gives the
    same θ̂ at λ scaled alike; only a subnormal diagonal (precision lost) is an error."""
    T = np.finfo(float).tiny
    c = C3 * T  # diag (2, 1, 1.5)·2^−1022, all normal
    np.testing.assert_allclose(cl.covlasso(c, 0, 0.1 * T), cl.covlasso(C3, 0, 0.1), rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="subnormal"):
        cl.covlasso(C3 * (T / 2), 0, 0.05 * T)


def test_eps_max_low_rank_with_an_absolute_rank_tolerance():
    """RD Thm 1: ε_max = σ_r/σ_1 with r the rank at the given absolute tolerance; any finite rank_tol ≥ 0 is
    valid (0.5 here: rank 2 of diag(3, 2, 1e−3), so ε_max = 2/3), a negative one is an error."""
    W = np.diag([3.0, 2.0, 1e-3])
    assert R.eps_max_low_rank(W, rank_tol=0.5) == pytest.approx(2 / 3, rel=1e-15)
    assert R.eps_max_low_rank(W, rank_tol=0.0) == pytest.approx(1e-3 / 3, rel=1e-12)
    with pytest.raises(ValueError, match="rank_tol: must be finite and >= 0"):
        R.eps_max_low_rank(W, rank_tol=-1e-300)


def test_metrics_exact_rank_vci_is_the_invariant_frames():
    """VC Def 5.3 with rank='exact' is invariant to per-feature scales, so metrics()['vci'] uses the equilibrated
    frame's rank like vci(): class means along a feature of scale 1e−9 are rank 2 there, though the features'
    own Σ_B has a 1e−18·λ_max eigenvalue (rank 1 at the max(p, K)·ε cutoff, which fuzziness uses)."""
    rng = np.random.default_rng(14)
    y = np.repeat(np.arange(3), 30)
    H = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])[y] + 0.3 * rng.standard_normal((90, 2))
    H[:, 1] *= 1e-9
    m = vc.metrics(H, y, rank="exact")
    assert m["vci"] == pytest.approx(vc.vci(H, y, rank="exact"), rel=1e-12)
    assert m["vci"] == pytest.approx(vc.vci(H, y), rel=1e-12)  # exact rank 2 = the paper's min(p, K − 1)


def test_rank_zero_is_not_a_valid_rank():
    """VC metrics' explicit rank is an int in [1, min(p, K−1)]: 0 is the argument's error, not 'Σ_B is zero'."""
    y = np.repeat(np.arange(3), 5)
    H = np.random.default_rng(15).standard_normal((15, 3)) + np.eye(3)[y]
    for f in (vc.vci, vc.fuzziness):
        with pytest.raises(ValueError, match=r"rank: an int must lie in \[1, min\(p, K-1\)\] = \[1, 2\], got 0"):
            f(H, y, rank=0)


def test_probe_loss_lstsq_with_a_constant_feature():
    """A constant feature carries nothing (the probe has a bias): probe_loss_lstsq equals probe_loss without it."""
    rng = np.random.default_rng(16)
    y = np.repeat(np.arange(3), 10)
    H = rng.standard_normal((30, 2)) + np.eye(3, 2)[y]
    Hc = np.column_stack([H, np.full(30, 7.0)])
    assert vc.probe_loss_lstsq(Hc, y) == pytest.approx(vc.probe_loss(vc.ClassStats.from_features(H, y)), abs=1e-12)


def test_inverse_diagonal_names_a_dead_category():
    """ND Eq 5's err_i = 1/(Cov⁻¹)_ii needs Cov⁻¹: a category with Cov_jj = 0 is named in the error."""
    with pytest.raises(ValueError, match=r"cov: Cov\[1,1\] = 0: singular"):
        dep.inverse_diagonal(np.diag([1.0, 0.0, 2.0]))
    np.testing.assert_allclose(dep.inverse_diagonal(C3), np.diag(np.linalg.inv(C3)), rtol=1e-14)


def test_floor_residuals_default_target_is_category_zero():
    """ND A15/A30 symbolic residuals: the default target i = 0 is valid and gives the same residuals as i=0."""
    from theory.symbolic import nd as snd

    a, b = snd.floor_residuals(2), snd.floor_residuals(2, 0)
    assert a.keys() == b.keys() and all(sp.simplify(a[k] - b[k]) == 0 for k in a)


def test_spectra_are_numpys_eigenvalues_of_sigma_b_and_sigma_t():
    """VC Fig 2: the descending eigenvalues of Σ_B = Σ_k π_k(μ_k − μ_G)(μ_k − μ_G)ᵀ and of Σ_T (np.cov with
    ddof=0), all p of them, in the features' units."""
    rng = np.random.default_rng(17)
    y = np.concatenate([np.arange(4), rng.integers(0, 4, 50)])
    H = 2.0 * rng.standard_normal((4, 5))[y] + rng.standard_normal((len(y), 5))
    mu = np.stack([H[y == k].mean(0) for k in range(4)])
    pi = np.bincount(y) / len(y)
    D = mu - pi @ mu
    out = vc.spectra(H, y)
    np.testing.assert_allclose(out["sigma_b"], np.linalg.eigvalsh((D * pi[:, None]).T @ D)[::-1], rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(out["sigma_t"], np.linalg.eigvalsh(np.cov(H.T, ddof=0))[::-1], rtol=1e-10)


def test_centred_is_the_second_moment_minus_the_mean_outer_product():
    """symbolic/nd.centred (the planted 'centred covariance' of the ND checks): C − μμᵀ entry by entry."""
    from theory.symbolic import nd as snd

    C = snd.generic_symmetric(2)
    Cc = snd.centred(C)
    m0, m1 = sp.symbols("mu0 mu1")
    assert sp.expand(Cc[0, 1] - (C[0, 1] - m0 * m1)) == 0 and sp.expand(Cc[1, 1] - (C[1, 1] - m1**2)) == 0


def test_obs42_identity_defaults_are_the_papers_2d_example():
    """VC Obs 4.2's defaults r = 1, p = 2, coupling 'none' (the paper's 2-D setting): 2×2 residuals, all ≡ 0."""
    R2 = svc.obs42_identity()
    assert all(M.shape == (2, 2) for M in R2.values())
    assert all(svc.vanishes(e) for M in R2.values() for e in M)
    assert svc.obs42_identity_holds() and not svc.obs42_identity_holds(coupling="upper")


def test_linear_error_planted_is_the_one_patch_noise_formula():
    """FG App B.2's negative control: the planted claim lets only one patch's noise in (P → 1 in the noise
    variance, the signal variance nι²/3 unchanged): Σ_n pmf(n)·Q(n/√(σ_ζ²(2+2k) + nι²/3)), ½ at n = 0."""
    P, s, k, sz, iota = 8, 3.0, 2, 0.4, 0.3
    _, total = mv.patch_count_pmf(P, s)
    n = np.arange(P + 1)
    q = np.where(n > 0, stats.norm.sf(n / np.sqrt(sz**2 * (2 + 2 * k) + n * iota**2 / 3)), 0.5)
    assert mv.linear_error(P, s, k, sz, iota, planted=True) == pytest.approx(float(total @ q), rel=1e-12)


def test_vc_generic_symmetric_size_cap():
    """symbolic/vc.generic_symmetric: 1 ≤ p ≤ 6 (the symbolic cost cap), p = 7 is an error naming p."""
    assert svc.generic_symmetric(6, "x").shape == (6, 6) and svc.generic_symmetric(1, "x").shape == (1, 1)
    for bad in (0, 7):
        with pytest.raises(ValueError, match=r"^p: must be an integer in \[1, 6\]"):
            svc.generic_symmetric(bad, "x")
