"""sims.random_matrix: Benettin QR against numpy, ψ-law, laws, MP Monte Carlo, sizes that cannot be allocated, bad input."""
import numpy as np
import pytest

from sims import marchenko_pastur as mp
from sims import random_matrix as rm
from theory import rank as R


def _numpy_benettin(mats, q=None):
    n = mats.shape[1]
    q, s = (np.eye(n) if q is None else q), np.zeros(n)
    for m in mats:
        q, r = np.linalg.qr(m @ q)
        s += np.log(np.abs(np.diag(r)))
    return s


def test_benettin_matches_numpy_qr_on_given_matrices():
    mats = np.random.default_rng(0).standard_normal((40, 6, 6))
    assert np.allclose(rm.benettin_given(mats), _numpy_benettin(mats), atol=1e-10)


def test_benettin_sums_match_numpy_on_the_same_layers():
    """The kernel (implicit Q, dormqr + dgeqrf, random initial frame) against the numpy QR loop on its own draws."""
    n, L, seed = 5, 30, 7
    out = rm.benettin_sums(n, [10, L], "heavy_tailed", trials=2, seed=seed)
    for t in range(2):
        gens = rm._trial_gens(seed, t)
        frame = gens[2].standard_normal((n, n))
        mats = np.empty((L, n, n))
        rm.draw_layers(gens, "heavy_tailed", mats)
        q0 = np.linalg.qr(frame)[0]
        assert np.allclose(out[t, 1], _numpy_benettin(mats, q0), atol=1e-9)
        assert np.allclose(out[t, 0], _numpy_benettin(mats[:10], q0), atol=1e-9)


def test_results_do_not_depend_on_the_block_size(monkeypatch):
    a = rm.benettin_sums(6, [7, 40], "relu", trials=3, seed=2)
    monkeypatch.setattr(rm, "BLOCK_BYTES", 8 * 3 * 36 * 3)  # 3 layers per block
    b = rm.benettin_sums(6, [7, 40], "relu", trials=3, seed=2)
    assert np.array_equal(a, b)


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


@pytest.mark.parametrize("dist", rm.DISTS)
def test_laws(dist):
    m = rm.layer_matrix(6, dist, seed=1)
    assert m.shape == (6, 6) and np.all(np.isfinite(m))
    s = rm.lyapunov_spectrum(6, 60, dist, trials=2, seed=1)
    assert s.shape == (2, 6) and not np.isnan(s).any()


def test_structured_laws():
    o = rm.layer_matrix(6, "orthogonal")
    assert np.allclose(o @ o.T, np.eye(6))
    assert np.allclose(rm.lyapunov_spectrum(5, 50, "orthogonal", trials=2), 0, atol=1e-12)
    od = rm.layer_matrix(6, "orthogonal_diag", seed=3)
    col = np.linalg.norm(od, axis=0)  # O·diag(d): column norms are the d_i
    assert np.all((col >= 0.5) & (col <= 1.5))
    r = rm.layer_matrix(16, "relu", seed=2)
    assert np.linalg.matrix_rank(r) == np.count_nonzero(np.abs(r).sum(1))
    # ReLU products lose rank exactly: −inf exponents once a layer masks everything past some k
    assert np.isneginf(rm.lyapunov_spectrum(4, 200, "relu", trials=2)).any()
    sp = rm.layer_matrix(200, "sparse", seed=4)
    assert np.mean(sp != 0) == pytest.approx(rm.SPARSE_P, abs=0.01)
    assert set(np.unique(rm.layer_matrix(5, "rademacher"))) <= {-1.0, 1.0}


def test_random_initial_frame_keeps_sigma_1_for_coordinate_kernels():
    """A layer killing e_1 (zero first column) must not make λ_1 = −∞: the recursion starts from a random frame."""
    n = 4
    out = rm.benettin_sums(n, [1], "gaussian", trials=1, seed=0)
    assert np.all(np.isfinite(out))
    mats = np.random.default_rng(0).standard_normal((3, n, n))
    mats[0][:, 0] = 0.0  # J_1 e_1 = 0: with Q_0 = I (benettin_given) the first column is lost
    assert np.isneginf(rm.benettin_given(mats)[0])


def test_log_top_singular_matches_explicit_product():
    n, depths, seed = 5, [3, 6], 4
    out = rm.log_top_singular(n, depths, trials=2, seed=seed)
    for t in range(2):
        mats = np.empty((6, n, n))
        rm.draw_layers(rm._trial_gens(seed, t), "gaussian", mats)
        prod = np.eye(n)
        for i, m in enumerate(mats):
            prod = m @ prod
            if i + 1 in depths:
                assert out[t, depths.index(i + 1)] == pytest.approx(np.log(np.linalg.norm(prod, 2)), rel=1e-12)


def test_explicit_ratios_saturate_at_the_float64_floor():
    ex = rm.explicit_log_ratios(8, [5, 400], "gaussian", trials=2, seed=1)
    assert ex.shape == (2, 2, 8) and np.all(ex[:, :, 0] == 0)
    # the Benettin sums keep falling (≈ −2.6 per layer for k = n) while the explicit product is stuck near log 1e−16
    assert np.all(ex[:, 1, -1] > -45)
    bs = rm.benettin_sums(8, [400], "gaussian", trials=2, seed=1)
    assert np.all(bs[:, 0, -1] - bs[:, 0, 0] < -500)


def test_mc_numerical_rank_vs_mp():
    o = mp.mc_numerical_rank(64, 64, 0.05, trials=300, seed=0)
    assert o["ranks"].shape == (300,)
    assert abs(o["ranks"].mean() - R.mp_numerical_rank(64, 64, 0.05)) < 0.5
    a = mp.mc_numerical_rank(40, 20, 1e-7, trials=5, method="svd")
    assert np.all(a["ranks"] == 20)
    sig = mp.mc_numerical_rank(200, 100, 0.3, trials=50, signal_rank=3, theta=3.0)
    assert sig["ranks"].mean() == pytest.approx(R.mp_numerical_rank(200, 100, 0.3, 3, 3.0), rel=0.1)


# ----------------------------------------------------------------------------- sizes and input that used to give silent garbage

@pytest.mark.parametrize("call", [
    lambda: rm.lyapunov_spectrum(n=10**6, L=5),
    lambda: rm.benettin_sums(2 * 10**5, [3]),
    lambda: rm.log_top_singular(10**6, [3]),
    lambda: mp.mc_numerical_rank(10**6, 10**6, 0.1),
], ids=["lyapunov_1e6", "benettin_2e5", "log_top_1e6", "mc_rank_1e6"])
def test_sizes_beyond_lapack_are_a_clear_error(call):
    with pytest.raises(ValueError, match="too large"):
        call()


@pytest.mark.parametrize("call", [
    lambda: rm.benettin_sums(30_000, [3], trials=8),
    lambda: rm.log_top_singular(40_000, [3], trials=4),
    lambda: rm.explicit_log_ratios(40_000, [3], trials=4),
    lambda: mp.mc_numerical_rank(40_000, 40_000, 0.1, trials=64),
], ids=["benettin", "log_top", "explicit", "mc_rank"])
def test_sizes_beyond_memory_are_a_memory_error(call, monkeypatch):
    monkeypatch.setattr(rm, "available_bytes", lambda: 8 * 2**30)  # whatever this machine has free right now
    with pytest.raises(MemoryError, match="GiB"):
        call()


@pytest.mark.parametrize("kw", [dict(n=0, L=5), dict(n=3, L=0), dict(n=3, L=5, dist="levy"), dict(n=3.0, L=5),
                                dict(n=3, L=5.5), dict(n=True, L=5), dict(n=3, L=5, trials=0), dict(n=3, L=5, seed=-1),
                                dict(n=3, L=5, seed=1.5), dict(n=3, L=5, sort="no"), dict(n="3", L=5)])
def test_bad_input(kw):
    with pytest.raises(ValueError):
        rm.lyapunov_spectrum(**kw)


@pytest.mark.parametrize("call", [
    lambda: mp.mc_numerical_rank(10, 10, 0.0),
    lambda: mp.mc_numerical_rank(10, 10, -0.1),
    lambda: mp.mc_numerical_rank(10, 10, float("nan")),
    lambda: mp.mc_numerical_rank(10, 10, 1e-8, method="gram"),
    lambda: mp.mc_numerical_rank(10, 10, 0.1, method="qr"),
    lambda: mp.mc_numerical_rank(10, 10, 0.1, theta=float("inf")),
    lambda: mp.mc_numerical_rank(10, 10, 0.1, theta=-1.0),
    lambda: mp.mc_numerical_rank(10, 10, 0.1, signal_rank=11),
    lambda: mp.mc_numerical_rank(10.5, 10, 0.1),
    lambda: rm.benettin_sums(4, [5, 3]),
    lambda: rm.benettin_sums(4, []),
    lambda: rm.benettin_sums(4, [1.5]),
    lambda: rm.log_top_singular(4, [0, 3]),
    lambda: rm.benettin_given(np.full((2, 3, 3), np.nan)),
    lambda: rm.benettin_given(np.ones((2, 3, 3), dtype=complex)),
    lambda: rm.benettin_given(np.ones((2, 3, 4))),
    lambda: rm.benettin_given(np.ones((3, 3))),
    lambda: rm.layer_matrix(3, "orthogonal", seed=-2),
    lambda: mp.mp_sample_eigenvalues(10, 20, 2, np.random.default_rng(0)),
])
def test_bad_input_other_entry_points(call):
    with pytest.raises(ValueError):
        call()
