"""theory.rank: RD Eq 4 numerical rank, float32 rule, PCA dimension, Thm 1 Weyl margin, ψ-law, MP."""
import math
import os
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import integrate, special, stats

from theory import rank as R


def test_numerical_rank_low_rank_and_relative_threshold():
    rng = np.random.default_rng(0)
    w = rng.standard_normal((30, 5)) @ rng.standard_normal((5, 20))
    assert R.numerical_rank(w, 1e-10) == 5
    assert R.numerical_rank(1e6 * w, 1e-10) == 5  # relative to ‖W‖₂
    d = np.diag([1.0, 0.5, 1e-3, 1e-9])
    assert R.numerical_rank(d, 1e-3) == 3  # σ ≥ ε‖W‖ (inclusive)
    assert R.numerical_rank(d, 2e-3) == 2
    assert R.numerical_rank(np.zeros((3, 3)), 0.1) == 0
    assert R.numerical_rank(d) == 3  # float32 rule: ε = 4 × 1.19e-7


def test_float32_rule():
    assert R.float32_eps_rule(1000) == pytest.approx(1.1920929e-4)
    with pytest.raises(ValueError):
        R.float32_eps_rule(0)


@pytest.mark.parametrize("bad", [np.array([[1.0, np.nan]]), np.array([[np.inf, 1.0]]), np.zeros((0, 3))])
def test_bad_matrices(bad):
    with pytest.raises(ValueError):
        R.numerical_rank(bad, 0.1)


@pytest.mark.parametrize("eps", [0, -1e-3, np.nan, "x"])
def test_bad_eps(eps):
    with pytest.raises(ValueError):
        R.numerical_rank(np.eye(3), eps)


def test_nan_message_names_column():
    w = np.eye(3)
    w[1, 2] = np.nan
    with pytest.raises(ValueError, match="column 2"):
        R.numerical_rank(w, 0.1)


def test_pca_dim():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((500, 4)) @ rng.standard_normal((4, 12)) + 3.0
    assert R.pca_dim(x) == 4
    assert R.pca_dim(rng.standard_normal((500, 12))) == 12
    with pytest.raises(ValueError):
        R.pca_dim(np.ones((1, 3)))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), eps=st.floats(1e-4, 0.5))
def test_weyl_delta_max_certifies(seed, eps):
    """Thm 1: below δ_max the numerical rank never changes, whatever the direction D."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((8, 6)) * np.logspace(0, -3, 6)
    d = rng.standard_normal((8, 6))
    dm = R.weyl_delta_max(w, eps, d)
    base = R.numerical_rank(w, eps)
    for frac in (0.0, 0.5, 0.999):
        assert R.numerical_rank(w + frac * dm * d, eps) == base


def test_weyl_delta_max_nearly_tight():
    """An adversarial D (−u_k v_kᵀ) crosses the threshold just past the bound's δ."""
    w = np.diag([1.0, 0.12, 0.01])
    eps = 0.1
    u, s, vt = np.linalg.svd(w)
    d = -np.outer(u[:, 1], vt[1])
    dm = R.weyl_delta_max(w, eps, d)
    assert R.numerical_rank(w + 0.99 * dm * d, eps) == 2
    assert R.numerical_rank(w + 1.3 * dm * d, eps) == 1


def test_eps_max_low_rank():
    rng = np.random.default_rng(2)
    w = rng.standard_normal((10, 3)) @ rng.standard_normal((3, 10))
    em = R.eps_max_low_rank(w)
    assert R.numerical_rank(w, 0.5 * em) == 3 == np.linalg.matrix_rank(w)


def test_lyapunov_law_values():
    lam = R.lyapunov_law(4)
    assert lam.shape == (4,) and np.all(np.diff(lam) < 0)
    assert lam[-1] == pytest.approx(0.5 * (np.log(2) + special.digamma(0.5)))
    assert R.gradient_explosion_rate(4) == pytest.approx(lam[0])
    r = R.ratio_law(4)
    assert r[0] == 1.0 and np.all(r[1:] < 1)
    # E[½ log χ²_m] = ½(log 2 + ψ(m/2)), checked by Monte Carlo
    rng = np.random.default_rng(3)
    mc = 0.5 * np.log(rng.chisquare(3, 400_000)).mean()
    assert mc == pytest.approx(0.5 * (np.log(2) + special.digamma(1.5)), abs=5e-3)
    with pytest.raises(ValueError):
        R.lyapunov_law(0)


def test_psi_law_rank():
    assert R.psi_law_rank(50, [0], 1e-3)[0] == 50
    p = R.psi_law_rank(50, [1, 10, 100, 1000], 1e-3)
    assert np.all(np.diff(p) <= 0) and p[-1] >= 1


def test_marchenko_pastur():
    for g in (1.0, 0.25):
        a, b = R.mp_edges(g)
        assert R.mp_cdf(b, g) == 1.0 and R.mp_cdf(a, g) == 0.0
        mid = 0.5 * (a + b)
        num, _ = integrate.quad(lambda x: R.mp_density(np.array([x]), g)[0], max(a, 1e-12), mid, limit=200)
        assert R.mp_cdf(mid, g) == pytest.approx(num, abs=1e-6)
    # square Gaussian: rank ≈ d(1 − 4ε/π) for small ε (quarter-circle law)
    assert R.mp_numerical_rank(64, 64, 0.01) == pytest.approx(64 * (1 - 0.04 / np.pi), rel=1e-3)
    assert R.spiked_top_singular(0.1, 0.5) == pytest.approx(1 + np.sqrt(0.5))
    assert R.spiked_top_singular(3.0, 0.5) > 1 + np.sqrt(0.5)
    with pytest.raises(ValueError):
        R.mp_cdf(1.0, 1.5)


def test_pca_dim_methods_agree():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2000, 6)) @ np.diag([1, 1, 0.1, 1e-2, 1e-5, 0]) @ rng.standard_normal((6, 30))
    assert R.pca_dim(x, method="svd") == R.pca_dim(x, method="cov") == 4
    with pytest.raises(ValueError):
        R.pca_dim(x, method="qr")


# ----------------------------------------------------------------------------- scales and bad input: a right answer or a clear error

@pytest.mark.parametrize("scale", [1e-300, 1e-150, 1e-20, 1.0, 1e20, 1e150, 1e300])
def test_scale_invariance(scale):
    """Numerical rank, PCA dimension and ε_max are scale-invariant; δ_max scales with W; σ with W."""
    rng = np.random.default_rng(7)
    w = rng.standard_normal((30, 5)) @ rng.standard_normal((5, 20)) + 1e-9 * rng.standard_normal((30, 20))
    x = rng.standard_normal((500, 4)) @ rng.standard_normal((4, 12)) + 3.0
    d = rng.standard_normal((30, 20))
    assert R.numerical_rank(scale * w, 1e-6) == R.numerical_rank(w, 1e-6) == 5
    assert R.numerical_rank(scale * w) == R.numerical_rank(w) == 5
    for method in ("auto", "svd", "cov"):
        assert R.pca_dim(scale * x, method=method) == 4
    assert R.weyl_delta_max(scale * w, 1e-3, d) == pytest.approx(scale * R.weyl_delta_max(w, 1e-3, d), rel=1e-10)
    assert R.weyl_delta_max(w, 1e-3, scale * d) == pytest.approx(R.weyl_delta_max(w, 1e-3, d) / scale, rel=1e-10)
    assert R.eps_max_low_rank(scale * np.diag([1.0, 0.1, 0.0])) == pytest.approx(0.1, rel=1e-12)
    assert R.rank_from_singular_values(scale * np.array([1.0, 1e-3, 1e-9]), 1e-6) == 2
    assert np.allclose(R.singular_values(scale * np.diag([2.0, 1.0])) / scale, [2.0, 1.0], rtol=1e-14)


@pytest.mark.parametrize("call", [
    lambda: R.numerical_rank(np.eye(3) * (1 + 1j), 0.1),
    lambda: R.numerical_rank(np.eye(3, dtype=bool), 0.1),
    lambda: R.numerical_rank([[1.0, "a"]], 0.1),
    lambda: R.numerical_rank(np.ones(3), 0.1),
    lambda: R.numerical_rank(np.eye(3), 1j),
    lambda: R.numerical_rank(np.eye(3), True),
    lambda: R.pca_dim(np.ones((5, 3)) + 0j),
    lambda: R.pca_dim(np.ones(3)),
    lambda: R.pca_dim(np.ones((5, 3)), eps=-0.1),
    lambda: R.pca_dim(np.ones((5, 3)), method=3),
    lambda: R.rank_from_singular_values([1.0, -1.0], 0.1),
    lambda: R.rank_from_singular_values([1.0, np.nan], 0.1),
    lambda: R.weyl_delta_max(np.eye(3), 0.1, np.eye(4)),
    lambda: R.weyl_delta_max(np.zeros((3, 3)), 0.1, np.eye(3)),
    lambda: R.weyl_delta_max(np.eye(3) * 1e300, 0.1, np.eye(3) * 1e-300),
    lambda: R.eps_max_low_rank(np.zeros((3, 3))),
    lambda: R.eps_max_low_rank(np.eye(3), rank_tol=-1.0),
    lambda: R.float32_eps_rule(2.5),
    lambda: R.lyapunov_law(4.0),
    lambda: R.lyapunov_law(-3),
    lambda: R.lyapunov_law_sd(True),
    lambda: R.gradient_explosion_rate(0),
    lambda: R.psi_law_rank(4, [1, np.nan], 0.1),
    lambda: R.psi_law_rank(4, [-1], 0.1),
    lambda: R.psi_law_rank(4, [1], 0.0),
    lambda: R.mp_edges(1.5),
    lambda: R.mp_edges(np.nan),
    lambda: R.mp_cdf(np.nan, 0.5),
    lambda: R.mp_density([np.inf], 0.5),
    lambda: R.spiked_top_singular(-1.0, 0.5),
    lambda: R.spiked_top_singular(np.inf, 0.5),
    lambda: R.mp_numerical_rank(10.5, 4, 0.1),
    lambda: R.mp_numerical_rank(10, 4, 0.1, signal_rank=7),
    lambda: R.mp_numerical_rank(10, 4, 0.1, signal_rank=1.5),
])
def test_bad_input_is_a_value_error(call):
    with pytest.raises(ValueError):
        call()


def test_sizes_that_cannot_be_allocated():
    with pytest.raises(MemoryError, match="GiB"):
        R.lyapunov_law(10**12)


# ---- the ψ-law and the Lyapunov exponents (RD Eq 10)

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


def test_gradient_explosion_rate_is_the_top_exponent_and_ratio_law_the_digamma_gap():
    n = 5
    assert R.gradient_explosion_rate(n) == pytest.approx(R.lyapunov_law(n)[0], rel=1e-15)
    r = R.ratio_law(n)
    assert r[0] == 1.0 and np.all(np.diff(r) < 0)
    np.testing.assert_allclose(np.log(r), 0.5 * (special.digamma((n - np.arange(1, n + 1) + 1) / 2)
                                                 - special.digamma(n / 2)), rtol=1e-13)


def test_psi_law_rank_counts_gaps_below_the_top_exponent():
    """RD Eq 10 at finite depth: σ_k/σ_1 ≈ exp(L(λ_k − λ_1)) with λ_k − λ_1 = ½(ψ((n−k+1)/2) − ψ(n/2)), so the
    rank is #{k : L·½(ψ((n−k+1)/2) − ψ(n/2)) ≥ log ε} — n at L = 0, falling to 1 (only σ_1 itself) for deep nets."""
    from scipy import special
    n, eps = 12, 1e-3
    k = np.arange(1, n + 1)
    gaps = 0.5 * (special.digamma((n - k + 1) / 2.0) - special.digamma(n / 2.0))
    L = np.array([0.0, 1.0, 3.0, 10.0, 30.0, 1e6])
    want = [int(np.count_nonzero(l * gaps >= np.log(eps))) for l in L]
    assert R.psi_law_rank(n, L, eps).tolist() == want
    assert want[0] == n and want[-1] == 1 and len(set(want)) >= 4
    # Rank_ε counts σ_k ≥ ε·σ_1 inclusively: at ε = 1 it is 1 (σ_1 itself) once L > 0, n at L = 0 (all σ equal)
    assert R.psi_law_rank(n, [0.0, 3.0], 1.0).tolist() == [n, 1]


# ---- the ψ-law's memory guard: 24 bytes per exponent, at most half the physical memory

def test_lyapunov_law_memory_guard_counts_three_float64_arrays(monkeypatch):
    """The ψ-law for n exponents needs three float64 arrays (24·n bytes): on a machine reporting 1 MiB of memory
    n = 30,000 (720 kB > half of it) is a MemoryError naming n, n = 10,000 (240 kB) is computed."""
    sizes = {"SC_PHYS_PAGES": 256, "SC_PAGE_SIZE": 4096}
    monkeypatch.setattr(R.os, "sysconf", lambda key: sizes[key])
    with pytest.raises(MemoryError, match="n = 30000"):
        R.lyapunov_law(30_000)
    assert R.lyapunov_law(10_000).shape == (10_000,)


def test_memory_guard_refuses_one_exponent_when_half_the_memory_is_23_bytes(monkeypatch):
    """_check_n's guard budgets 24 bytes per exponent (three float64 arrays of length n): with half the memory
    at 23 bytes even n = 1 is refused, at 24 bytes it is allowed (test_memory_guard_allows_exactly_half_the_memory)."""
    import os
    monkeypatch.setattr(os, "sysconf", lambda name: {"SC_PHYS_PAGES": 46, "SC_PAGE_SIZE": 1}[name])
    with pytest.raises(MemoryError, match=r"n = 1 exponents \(three float64 arrays of length n\) needs about"):
        R.lyapunov_law(1)


def test_memory_guard_allows_exactly_half_the_memory(monkeypatch):
    """The memory guard refuses strictly more than half the physical memory; exactly half is allowed."""
    pages = {"SC_PHYS_PAGES": 48, "SC_PAGE_SIZE": 1}  # total 48 bytes: half is 24 = one ψ-law exponent (24·n)
    monkeypatch.setattr(os, "sysconf", lambda name: pages[name])
    assert R.lyapunov_law(1).shape == (1,)
    with pytest.raises(MemoryError, match=r"n = 2 exponents"):
        R.lyapunov_law(2)


@pytest.mark.parametrize("exc", [ValueError, OSError, AttributeError])
def test_memory_guard_is_skipped_where_sysconf_fails(monkeypatch, exc):
    """Where os.sysconf fails, the memory guard is skipped and the ψ-law is still computed."""
    def fail(name):
        raise exc(name)

    monkeypatch.setattr(os, "sysconf", fail)
    np.testing.assert_allclose(R.lyapunov_law(2), [0.5 * (np.log(2.0) + (-np.euler_gamma)),
                                                    0.5 * (np.log(2.0) + (-np.euler_gamma - 2 * np.log(2.0)))],
                               rtol=1e-14)


# ---- PCA dimension (RD Sec 4.3): the covariance and SVD routes, sample count, constant features

@pytest.mark.parametrize("N, d, eps, method, route", [
    (21, 10, 1e-10, "auto", "cov"),              # N > 2d and ε ≥ 1e−10: the d×d covariance
    (20, 10, 1e-10, "auto", "svd"),              # N = 2d is not N > 2d
    (21, 10, 1e-10 * (1 - 1e-12), "auto", "svd"),  # ε below 1e−10: the covariance's rounding would show
    (1000, 3, 1.0, "svd", "svd"),                # a named method is taken as is
    (4, 3, 1e-20, "cov", "cov"),
])
def test_pca_route_is_the_documented_rule(N, d, eps, method, route):
    assert R._pca_route(N, d, eps, method) == route


def test_pca_dim_takes_the_route_pca_route_names(monkeypatch):
    """pca_dim computes the spectrum by eigvalsh of the covariance exactly when _pca_route says "cov"."""
    calls = []
    eigvalsh = np.linalg.eigvalsh
    monkeypatch.setattr(np.linalg, "eigvalsh", lambda a: calls.append(a.shape) or eigvalsh(a))
    rng = np.random.default_rng(0)
    for N, d in ((50, 4), (8, 4), (9, 4)):
        x = rng.standard_normal((N, d))
        for eps, method in ((None, "auto"), (1e-12, "auto"), (None, "svd"), (None, "cov")):
            calls.clear()
            e = R.float32_eps_rule(min(N - 1, d)) if eps is None else eps
            assert R.pca_dim(x, eps=eps, method=method) == d
            assert (calls == [(d, d)]) == (R._pca_route(N, d, e, method) == "cov"), (N, d, eps, method)


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


def test_pca_dim_counts_at_most_n_minus_one_eigenvalues():
    """RD Sec 4.3: N centred samples span at most N − 1 directions, so PCA has min(N − 1, d) eigenvalues; the
    N-th singular value of the centred data is rounding and never counts, even at ε = 1e−300."""
    X = np.random.default_rng(13).standard_normal((5, 10))
    assert R.pca_dim(X, eps=1e-300) == 4
    assert R.pca_dim(X, eps=1e-300, method="cov") <= 4


def test_pca_dim_needs_two_samples_and_says_so():
    """One sample has no covariance: the error names the count (not a downstream failure on an empty spectrum)."""
    with pytest.raises(ValueError, match="at least 2 samples .* got 1"):
        R.pca_dim(np.ones((1, 3)))
    two = np.array([[0.0, 1.0, 2.0], [1.0, 1.0, 0.0]])
    for method in ("auto", "svd", "cov"):
        assert R.pca_dim(two, method=method) == 1  # two samples: one direction (normaliser N − 1 = 1)


def test_pca_dim_of_a_constant_feature_is_zero_on_both_routes():
    """A single feature that never varies has no PCA direction: rank 0 (its one eigenvalue is exactly 0)."""
    for method in ("svd", "cov"):
        assert R.pca_dim(np.full((6, 1), 3.0), method=method) == 0
        assert R.pca_dim(np.arange(6.0)[:, None], method=method) == 1


# ---- numerical rank, ε_max and the Weyl margin (RD Eq 4, Thm 1)

def test_numerical_rank_default_eps_counts_the_singular_values_measured():
    """RD Sec 4.3's float32 rule ε = 1.19e−7·N with N = min(n, d), the number of singular values: for a 3×300
    matrix ε = 3.6e−7, so σ = 5e−6·σ_1 counts (it would not at 1.19e−7·300 = 3.6e−5)."""
    rng = np.random.default_rng(0)
    U = np.linalg.qr(rng.standard_normal((3, 3)))[0]
    V = np.linalg.qr(rng.standard_normal((300, 3)))[0]
    W = U @ np.diag([1.0, 1e-4, 5e-6]) @ V.T
    assert R.numerical_rank(W) == 3 == R.numerical_rank(W.T)
    assert R.numerical_rank(W, eps=1.19e-7 * 300) == 2


def test_eps_max_low_rank_with_an_absolute_rank_tolerance():
    """RD Thm 1: ε_max = σ_r/σ_1 with r the rank at the given absolute tolerance; any finite rank_tol ≥ 0 is
    valid (0.5 here: rank 2 of diag(3, 2, 1e−3), so ε_max = 2/3), a negative one is an error."""
    W = np.diag([3.0, 2.0, 1e-3])
    assert R.eps_max_low_rank(W, rank_tol=0.5) == pytest.approx(2 / 3, rel=1e-15)
    assert R.eps_max_low_rank(W, rank_tol=0.0) == pytest.approx(1e-3 / 3, rel=1e-12)
    with pytest.raises(ValueError, match="rank_tol: must be finite and >= 0"):
        R.eps_max_low_rank(W, rank_tol=-1e-300)


def test_eps_max_low_rank_uses_numpys_rank_tolerance():
    """r = numpy's matrix_rank of W (tolerance max(n, d)·ε₆₄·σ_1): a σ of 1e−15·σ_1 in a 4×10 matrix is below
    10·ε₆₄ = 2.2e−15 and does not count, so ε_max = σ_2/σ_1 = 0.5; matrix_rank agrees."""
    rng = np.random.default_rng(0)
    U = np.linalg.qr(rng.standard_normal((4, 4)))[0]
    V = np.linalg.qr(rng.standard_normal((10, 4)))[0]
    W = U @ np.diag([1.0, 0.5, 1e-15, 0.0]) @ V.T
    assert np.linalg.matrix_rank(W) == 2
    assert R.eps_max_low_rank(W) == pytest.approx(0.5, rel=1e-12)
    W3 = U @ np.diag([1.0, 0.5, 1e-13, 0.0]) @ V.T  # 1e−13 > 2.2e−15: rank 3
    assert np.linalg.matrix_rank(W3) == 3
    assert R.eps_max_low_rank(W3) == pytest.approx(1e-13, rel=1e-3)


def test_weyl_delta_max_underflow_is_an_error_but_an_exact_zero_is_not():
    """RD Thm 1's δ_max scales as scale(W)/scale(D): W at 1e−200 and D at 1e200 put it at ~2^−1329, below float64,
    which is an error (not a silent 0); at ε = σ_2/σ_1 exactly the margin is 0 and δ_max = 0 is the true value."""
    W = np.diag([1.0, 0.5, 1e-3])
    with pytest.raises(ValueError, match=r"outside the float64 range"):
        R.weyl_delta_max(W * 1e-200, 0.01, np.ones((3, 3)) * 1e200)
    assert R.weyl_delta_max(W, 0.5, np.ones((3, 3))) == 0.0


def test_weyl_delta_max_of_a_zero_perturbation_is_inf():
    """weyl_delta_max: D = 0 never changes the rank, δ_max = inf (also for a rank-deficient W)."""
    assert R.weyl_delta_max(np.eye(3), 0.1, np.zeros((3, 3))) == np.inf
    assert R.weyl_delta_max(np.diag([1.0, 0.0]), 0.1, np.zeros((2, 2))) == np.inf


@pytest.mark.parametrize("f", [R.singular_values, R.numerical_rank, R.pca_dim, R.eps_max_low_rank])
def test_complex_input_is_named_as_complex(f):
    """A complex matrix (e.g. an FFT feature left complex) is refused with a message that says so, before any
    dtype conversion could drop the imaginary part."""
    with pytest.raises(ValueError, match=r"must be real, got a complex array \(dtype complex128\)"):
        f(np.ones((5, 3)) + 1j)


# ---- Marchenko–Pastur and the spiked model (RD's random-matrix baseline)

def test_mp_cdf_is_the_integral_of_mp_density():
    for g in (0.25, 1.0):
        a, b = R.mp_edges(g)
        for x in (a + 0.3 * (b - a), a + 0.8 * (b - a)):
            ref, _ = integrate.quad(lambda t: float(R.mp_density(t, g)), a, x, limit=200)
            assert R.mp_cdf(x, g) == pytest.approx(ref, abs=1e-6)
        assert R.mp_cdf(b + 1, g) == 1.0 and R.mp_cdf(a - 1e-3, g) == 0.0


def test_mp_cdf_is_a_distribution_function_up_to_the_edges():
    """P_MP(λ ≤ x) lies in [0, 1] and does not decrease, also within 1e−13 of the upper edge, where the quadrature
    alone overshoots 1 by up to ~6e−11 (γ ≈ 0.66) and ~4e−12 (γ = 1): the clamp is part of the function."""
    for g in (0.05, 0.3, 0.6616153846153846, 0.9, 1.0):
        a, b = R.mp_edges(g)
        xs = np.sort(np.r_[a, a + (b - a) * np.linspace(1e-9, 1 - 1e-9, 41), b * (1 - np.logspace(-5, -15, 11)), b])
        F = np.array([R.mp_cdf(float(x), g) for x in xs])
        assert np.all((F >= 0.0) & (F <= 1.0)), g
        assert np.all(np.diff(F) >= 0.0), g
        assert F[0] == 0.0 and F[-1] == 1.0


def test_mp_cdf_of_nan_is_an_error():
    with pytest.raises(ValueError, match="x: is NaN"):
        R.mp_cdf(float("nan"), 0.5)


@pytest.mark.parametrize("f", [R.mp_edges, lambda g: R.mp_density(1.0, g), lambda g: R.mp_cdf(1.0, g)])
def test_mp_aspect_ratio_zero_is_outside_the_law(f):
    """γ = d/N ∈ (0, 1]: γ = 0 (no columns) has no MP law (the density's 1/γ), so it is refused like γ > 1; the
    end points 1 and a tiny γ are accepted."""
    with pytest.raises(ValueError, match=r"gamma: aspect ratio d/N must be in \(0, 1\], got 0.0"):
        f(0.0)
    f(1.0)
    f(1e-12)


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


def test_mp_numerical_rank_default_theta_plants_directions_of_zero_strength():
    """RD Sec 3.1: θ = 0 (the default) plants directions of strength 0: the top singular value is the bulk edge
    1 + √γ, so the prediction is r + (m − r)·P_MP(λ ≥ ε²(1 + √γ)²), the no-signal fraction on the other m − r."""
    N, d, eps, r = 400, 100, 0.6, 5  # (ε·σ_top)² inside the MP support [0.25, 2.25]
    no_signal = R.mp_numerical_rank(N, d, eps) / min(N, d)
    assert R.mp_numerical_rank(N, d, eps, signal_rank=0, theta=3.0) == no_signal * d  # θ without planted directions
    assert R.mp_numerical_rank(N, d, eps, signal_rank=r) == pytest.approx(r + (d - r) * no_signal, rel=1e-12)
    assert R.mp_numerical_rank(N, d, eps, signal_rank=r, theta=2.0) < R.mp_numerical_rank(N, d, eps, signal_rank=r)


def test_mp_numerical_rank_refuses_a_negative_signal_rank():
    with pytest.raises(ValueError, match=r"signal_rank: must be an integer in \[0, min\(N, d\) = 50\], got -1"):
        R.mp_numerical_rank(100, 50, 0.1, signal_rank=-1)
    assert R.mp_numerical_rank(100, 50, 0.1, signal_rank=50, theta=2.0) == 50.0  # every direction planted


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
