"""sims.random_matrix: Benettin QR against numpy, ψ-law, distributions, MP Monte Carlo, bad input."""
import numpy as np
import pytest

from sims import random_matrix as rm
from theory import rank as R


def test_benettin_matches_numpy_qr_on_given_matrices():
    mats = np.random.default_rng(0).standard_normal((40, 6, 6))
    q, s = np.eye(6), np.zeros(6)
    for m in mats:
        q, r = np.linalg.qr(m @ q)
        s += np.log(np.abs(np.diag(r)))
    assert np.allclose(rm.benettin_given(mats), s, atol=1e-10)


def test_benettin_equals_log_singular_values_for_short_products():
    """log σ_k of the explicit (short, non-overflowing) product vs the Benettin sums: O(1) apart, same sum."""
    mats = np.random.default_rng(1).standard_normal((5, 5, 5))
    prod = np.eye(5)
    for m in mats:
        prod = m @ prod
    s = rm.benettin_given(mats)
    assert np.sum(s) == pytest.approx(np.log(abs(np.linalg.det(prod))), rel=1e-10)


def test_lyapunov_spectrum_shape_order_and_law():
    s = rm.lyapunov_spectrum(6, 400, trials=4, seed=3)
    assert s.shape == (4, 6) and np.all(np.diff(s, axis=1) <= 0)
    law = R.lyapunov_law(6)
    tol = 6 * R.lyapunov_law_sd(6) / np.sqrt(400 * 4) + 0.02
    assert np.all(np.abs(rm.lyapunov_spectrum(6, 400, trials=4, seed=3, sort=False).mean(0) - law) < tol)
    # deterministic in the seed
    assert np.array_equal(s, rm.lyapunov_spectrum(6, 400, trials=4, seed=3))


def test_distributions():
    for d in ("relu", "orthogonal_diag", "heavy_tailed", "orthogonal"):
        m = rm.layer_matrix(6, d, seed=1)
        assert m.shape == (6, 6) and np.all(np.isfinite(m))
    o = rm.layer_matrix(6, "orthogonal")
    assert np.allclose(o @ o.T, np.eye(6))
    assert np.allclose(rm.lyapunov_spectrum(5, 50, "orthogonal", trials=2), 0, atol=1e-12)
    r = rm.layer_matrix(16, "relu", seed=2)
    assert np.linalg.matrix_rank(r) == np.count_nonzero(np.abs(r).sum(1))
    # ReLU products lose rank exactly: −inf exponents once a layer masks everything past some k
    s = rm.lyapunov_spectrum(4, 200, "relu", trials=2)
    assert np.isneginf(s).any()


def test_log_top_singular_matches_explicit_product():
    out = rm.log_top_singular(5, [3, 6], trials=1, seed=4)
    assert out.shape == (1, 2) and np.all(np.isfinite(out))
    assert out[0, 1] > out[0, 0]


def test_mc_numerical_rank_vs_mp():
    o = rm.mc_numerical_rank(64, 64, 0.05, trials=300, seed=0)
    assert o["ranks"].shape == (300,)
    assert abs(o["ranks"].mean() - R.mp_numerical_rank(64, 64, 0.05)) < 0.5
    a = rm.mc_numerical_rank(40, 20, 1e-7, trials=5, method="svd")
    assert np.all(a["ranks"] == 20)
    sig = rm.mc_numerical_rank(200, 100, 0.3, trials=50, signal_rank=3, theta=3.0)
    assert sig["ranks"].mean() == pytest.approx(R.mp_numerical_rank(200, 100, 0.3, 3, 3.0), rel=0.1)


@pytest.mark.parametrize("kw", [dict(n=0, L=5), dict(n=3, L=0), dict(n=3, L=5, dist="cauchy"),
                                dict(n=3, L=5, trials=0)])
def test_bad_input(kw):
    with pytest.raises(ValueError):
        rm.lyapunov_spectrum(**kw)


def test_bad_mc_input():
    with pytest.raises(ValueError):
        rm.mc_numerical_rank(10, 10, 0.0)
    with pytest.raises(ValueError):
        rm.mc_numerical_rank(10, 10, 1e-8, method="gram")
    with pytest.raises(ValueError):
        rm.benettin_sums(4, [5, 3])
