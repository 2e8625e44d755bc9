"""Spectral dimension metrics and the Marchenko–Pastur spike count (theory.geometry.spectrum, .mp)."""
from __future__ import annotations

import numpy as np
import pytest

from theory import rank as rd
from theory.geometry import (CrossMoments, alpha_req, effective_rank, mp_edge, numerical_rank, participation_ratio,
                             rankme, spike_count, stable_rank)
from theory.geometry.mp import mp_median, tw_threshold


def with_singular_values(s, n=40, p=12, seed=0):
    rng = np.random.default_rng(seed)
    U, _ = np.linalg.qr(rng.standard_normal((n, len(s))))
    V, _ = np.linalg.qr(rng.standard_normal((p, len(s))))
    return U @ np.diag(s) @ V.T


def with_covariance_spectrum(lam, n=200, seed=0, offset=0.0):
    """Data whose sample covariance has exactly the eigenvalues ``lam`` (centred orthonormal columns)."""
    rng = np.random.default_rng(seed)
    p = len(lam)
    G = rng.standard_normal((n, p))
    Q, _ = np.linalg.qr(G - G.mean(0))  # columns orthonormal and orthogonal to 1: centred
    R, _ = np.linalg.qr(rng.standard_normal((p, p)))
    return Q @ np.diag(np.sqrt((n - 1) * np.asarray(lam, float))) @ R.T + offset


@pytest.mark.parametrize("k", [1, 3, 7])
@pytest.mark.parametrize("variant", ["sigma", "sigma2"])
def test_rankme_of_k_equal_singular_values_is_k(k, variant):
    Z = with_singular_values([2.5] * k)
    assert rankme(Z, variant) == pytest.approx(k, rel=1e-12)
    assert rankme(1e150 * Z, variant) == pytest.approx(k, rel=1e-12)


def test_rankme_variants_differ_and_paper_eps():
    s = np.array([4.0, 2.0, 1.0])
    Z = with_singular_values(s)
    for v, w in (("sigma", s), ("sigma2", s * s)):
        pk = w / w.sum()
        assert rankme(Z, v) == pytest.approx(np.exp(-np.sum(pk * np.log(pk))), rel=1e-12)
        # Garrido et al.'s +ε on all min(n, p) = 12 values of p_k
        pe = np.concatenate([pk, np.zeros(9)]) + 1e-7
        assert rankme(Z, v, eps=1e-7) == pytest.approx(np.exp(-np.sum(pe * np.log(pe))), rel=1e-9)
    assert rankme(Z, "sigma2") < rankme(Z, "sigma")
    with pytest.raises(ValueError, match="variant"):
        rankme(Z, "sigma^2")


def test_covariance_metrics_of_a_known_spectrum():
    lam = np.array([5.0, 3.0, 1.0, 1.0, 0.5])
    Z = with_covariance_spectrum(lam, offset=1e6)
    p = lam / lam.sum()
    assert effective_rank(Z) == pytest.approx(np.exp(-np.sum(p * np.log(p))), rel=1e-9)
    assert stable_rank(Z) == pytest.approx(lam.sum() / lam.max(), rel=1e-9)
    assert participation_ratio(Z) == pytest.approx(lam.sum() ** 2 / np.sum(lam ** 2), rel=1e-9)
    assert effective_rank(Z) == pytest.approx(rankme(Z, "sigma2", center=True), rel=1e-12)
    m = CrossMoments.from_data(Z, Z[:, :1], batch=33)  # the same metrics from one-pass moments
    for f in (effective_rank, stable_rank, participation_ratio):
        assert f(m) == pytest.approx(f(Z), rel=1e-9)
    flat = with_covariance_spectrum(np.ones(6))
    assert participation_ratio(flat) == pytest.approx(6, rel=1e-12) and stable_rank(flat) == pytest.approx(6)


def test_numerical_rank_is_dtype_aware():
    rng = np.random.default_rng(3)
    A = rng.standard_normal((200, 5)) @ rng.standard_normal((5, 60))
    A32 = A.astype(np.float32)  # rank 5 plus float32 rounding (~1e-7 relative)
    assert numerical_rank(A32) == 5  # ε = max(n, p)·eps32
    assert numerical_rank(A32.astype(np.float64)) == 60  # the same numbers stored as float64: rounding is signal
    assert numerical_rank(A) == 5
    assert numerical_rank(A32, eps="rd") == rd.numerical_rank(A32) == 5
    assert numerical_rank(A32 + 1e3, eps="rd", center=True) == 5
    assert numerical_rank(A32, eps=1e-12) == 60
    assert numerical_rank(np.zeros((3, 4))) == 0
    assert numerical_rank(np.ones((6, 3)) + np.arange(3), center=True) == 0
    with pytest.raises(ValueError, match="eps"):
        numerical_rank(A, eps=1.5)
    with pytest.raises(ValueError, match="eps"):
        numerical_rank(A, eps="float32")


def test_alpha_req_exact_and_within_fit_error():
    i = np.arange(1, 41.0)
    Z = with_covariance_spectrum(i ** -1.3, n=300, offset=1e3)
    r = alpha_req(Z)
    # the default decade for m = min(n, p) = 40: i = 1 … max(⌊40/10⌋, 10) = 10
    assert r["alpha"] == pytest.approx(1.3, abs=1e-8) and r["fit_range"] == (1, 10) and r["stderr"] < 1e-8
    for fit in ("ols", "weighted"):  # an exact power law: every fit and range gives α exactly
        assert alpha_req(Z, fit_range=(5, 30), fit=fit)["alpha"] == pytest.approx(1.3, abs=1e-8)
        assert alpha_req(Z, fit_range=(1, None), fit=fit)["fit_range"] == (1, 40)
    for fit in ("ols", "weighted"):
        hits = 0
        for seed in range(30):  # log-normal scatter about the power law: α̂ within ~2 stderr most of the time
            rng = np.random.default_rng(seed)
            lam = np.sort(i ** -0.8 * np.exp(0.05 * rng.standard_normal(40)))[::-1]
            r = alpha_req(with_covariance_spectrum(lam, n=300, seed=seed), fit_range=(1, 40), fit=fit)
            hits += abs(r["alpha"] - 0.8) < 2 * r["stderr"]
        assert hits >= 24, fit


def test_alpha_req_ignores_rounding_level_eigenvalues_and_checks_range():
    Z = with_covariance_spectrum(np.arange(1, 9.0) ** -2.0, n=50)
    Z = np.hstack([Z, Z[:, :3] @ np.ones((3, 4))])  # 4 dependent columns: eigenvalues at rounding level
    r = alpha_req(Z, fit_range=(1, None))
    assert r["fit_range"][1] == 8
    assert alpha_req(Z)["fit_range"] == (1, 8)  # the default's upper end is cut at r as well
    with pytest.raises(ValueError, match="fit_range"):
        alpha_req(Z, fit_range=(1, 12))
    with pytest.raises(ValueError, match="at least 3"):
        alpha_req(Z, fit_range=(3, 4))


def test_white_noise_edge_and_no_spikes():
    n, p, var = 2000, 500, 4.0
    assert mp_edge(n, p, var) == pytest.approx(var * (1 + np.sqrt(p / (n - 1))) ** 2)
    assert mp_edge(n, p, 1.0) == pytest.approx(rd.mp_edges(p / (n - 1))[1])
    spikes = 0
    for seed in range(8):
        Z = 2.0 * np.random.default_rng(seed).standard_normal((n, p)) + 1e6
        r = spike_count(Z)
        spikes += r["n_spikes"]
        assert r["noise_var"] == pytest.approx(var, rel=0.02)
        assert r["top"][0] == pytest.approx(mp_edge(n, p, var), rel=0.03)  # the top eigenvalue sits at the edge
    assert spikes == 0
    # p > n: the same edge formula (the roles of n − 1 and p swap in the MP law)
    Z = np.random.default_rng(9).standard_normal((300, 900))
    r = spike_count(Z)
    assert r["n_spikes"] == 0 and r["top"][0] == pytest.approx(mp_edge(300, 900), rel=0.03)


@pytest.mark.parametrize("thetas", [(9.0,), (2.0, 5.0, 11.0)])
def test_planted_spikes_are_counted(thetas):
    n, p = 2000, 500
    for seed in range(3):
        rng = np.random.default_rng(seed)
        V, _ = np.linalg.qr(rng.standard_normal((p, len(thetas))))
        Z = rng.standard_normal((n, p)) + (rng.standard_normal((n, len(thetas))) * np.sqrt(thetas)) @ V.T
        assert spike_count(Z)["n_spikes"] == len(thetas)
        assert spike_count(Z, noise_var=1.0)["n_spikes"] == len(thetas)
        m = CrossMoments.from_data(Z, Z[:, :1], batch=500)
        assert spike_count(m)["n_spikes"] == len(thetas)


def test_mp_helpers():
    for beta in (1.0, 0.3, 0.01):
        assert rd.mp_cdf(mp_median(beta), beta) == pytest.approx(0.5, abs=1e-9)
    assert tw_threshold(1000, 100, level=0.99) > tw_threshold(1000, 100, level=0.95) > mp_edge(1000, 100)
    with pytest.raises(ValueError, match="level"):
        tw_threshold(1000, 100, level=0.9)
    with pytest.raises(ValueError, match="n: needs at least 3"):
        mp_edge(2, 5)
    with pytest.raises(ValueError, match="noise_var"):
        spike_count(np.random.default_rng(0).standard_normal((20, 3)), noise_var=0.0)


def test_errors_never_nan_and_no_mutation():
    with pytest.raises(ValueError, match="zero"):
        rankme(np.zeros((4, 3)))
    with pytest.raises(ValueError, match="constant"):
        stable_rank(np.ones((5, 3)))
    with pytest.raises(ValueError, match="constant"):
        participation_ratio(np.ones((5, 3)))
    with pytest.raises(ValueError, match="Z: needs at least 2"):
        effective_rank(np.ones((1, 3)))
    with pytest.raises(ValueError, match="Z: expected a 2-D"):
        rankme(np.ones(3))
    with pytest.raises(ValueError, match="center"):
        rankme(np.ones((3, 3)), center=1)
    Z = np.random.default_rng(0).standard_normal((30, 4)).astype(np.float32)
    keep = Z.copy()
    for f in (rankme, effective_rank, stable_rank, participation_ratio, numerical_rank, alpha_req, spike_count):
        f(Z)
    assert np.array_equal(Z, keep)


def mp_quantile_alpha(n, p, lo, hi):
    """α of the Marchenko–Pastur law's own quantiles over indices lo…hi: the i-th largest of m = min(n − 1, p)
    white-noise eigenvalues sits near the MP quantile at 1 − (i − ½)/m (theory.rank.mp_cdf inverted)."""
    from scipy.optimize import brentq

    m = min(n - 1, p)
    g = m / max(n - 1, p)
    a, b = rd.mp_edges(g)
    i = np.arange(lo, hi + 1, dtype=float)
    q = [brentq(lambda x: rd.mp_cdf(x, g) - (1 - (k - 0.5) / m), max(a, 1e-300), b, xtol=1e-14) for k in i]
    x, y = np.log(i), np.log(q)
    return -np.polyfit(x, y, 1)[0]


@pytest.mark.parametrize("n, p", [(1000, 1024), (2000, 200)])
def test_alpha_req_default_range_on_white_noise(n, p):
    """White noise has no power law (α = 0 in population). The default decade of indices leaves out the bottom
    of the MP bulk, where the old default (1 … r) read α ≈ 1.3: what remains is the MP law's own slope over the
    same indices, small and predicted in closed form."""
    Z = np.random.default_rng(n).standard_normal((n, p))
    r = alpha_req(Z)
    m = min(n, p)
    assert r["fit_range"] == (m // 100 + 1, m // 10)
    ref = mp_quantile_alpha(n, p, *r["fit_range"])
    assert ref < 0.2 and r["alpha"] < 0.2
    # finite-n fluctuation of the top eigenvalues about their quantiles (Tracy–Widom scale n^(−2/3) at the top):
    # measured spread over seeds ~1e-3 here; 4 stderr of the fit covers it
    assert abs(r["alpha"] - ref) < max(4 * r["stderr"], 0.01)
    if n <= p:  # the case: all of 1 … r, the bulk's fall to its lower edge dominates (α ≈ 1.3)
        assert alpha_req(Z, fit_range=(1, None))["alpha"] > 1.0


def test_streamed_spectrum_metrics_against_the_svd_when_p_exceeds_n():
    rng = np.random.default_rng(3)
    Z = rng.standard_normal((40, 300)) * np.linspace(0.1, 3.0, 300) + 1e4
    s = np.linalg.svd(Z - Z.mean(0), compute_uv=False) ** 2  # an SVD of the centred data: a different route
    pk = s / s.sum()
    assert effective_rank(Z) == pytest.approx(np.exp(-np.sum(pk[pk > 0] * np.log(pk[pk > 0]))), rel=1e-10)
    assert stable_rank(Z) == pytest.approx(s.sum() / s[0], rel=1e-10)
    assert participation_ratio(Z) == pytest.approx(s.sum() ** 2 / np.sum(s ** 2), rel=1e-10)
    assert effective_rank(Z.astype(np.float32)) == pytest.approx(
        effective_rank(Z.astype(np.float32).astype(np.float64)), rel=1e-12)
