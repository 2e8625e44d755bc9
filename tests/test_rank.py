"""theory.rank: RD Eq 4 numerical rank, float32 rule, PCA dimension, Thm 1 Weyl margin, ψ-law, MP."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import special

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
        from scipy import integrate
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


# ----------------------------------------------------------------------------- scales and bad input (issue 16 §1)

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
