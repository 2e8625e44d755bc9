"""theory.collapse: ClassStats streaming/merging against two-pass formulas, metrics against direct formulas,
bad inputs."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st_

from theory import collapse as vc


def _data(seed=0, K=4, N=12, p=6, offset=0.0):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(K), N)
    H = 2 * rng.normal(size=(K, p))[y] + rng.normal(size=(K * N, p)) + offset
    return H, y


def _direct(H, y, K):
    mu = np.stack([H[y == k].mean(0) for k in range(K)])
    mg = H.mean(0)
    n = len(y)
    Sw = (H - mu[y]).T @ (H - mu[y]) / n
    cnt = np.bincount(y, minlength=K)
    Sb = ((mu - mg) * (cnt / n)[:, None]).T @ (mu - mg)
    St = (H - mg).T @ (H - mg) / n
    return Sw, Sb, St


@settings(max_examples=25, deadline=None)
@given(seed=st_.integers(0, 10_000), batch=st_.integers(1, 30))
def test_streaming_equals_two_pass(seed, batch):
    rng = np.random.default_rng(seed)
    K, p = int(rng.integers(2, 6)), int(rng.integers(1, 8))
    y = rng.integers(0, K, size=60)
    y[:K] = np.arange(K)
    H = rng.normal(size=(60, p)) * 3 + 5
    st = vc.ClassStats(p, K)
    for s in range(0, 60, batch):
        st.update(H[s:s + batch], y[s:s + batch])
    Sw, Sb, St = _direct(H, y, K)
    np.testing.assert_allclose(st.sigma_w(), Sw, atol=1e-12)
    np.testing.assert_allclose(st.sigma_b(), Sb, atol=1e-12)
    np.testing.assert_allclose(st.sigma_t(), St, atol=1e-12)
    np.testing.assert_allclose(st.global_mean, H.mean(0), atol=1e-12)


def test_merge_and_large_offset():
    H, y = _data(offset=1e8)
    a = vc.ClassStats(6, 4).update(H[::2], y[::2])
    b = vc.ClassStats(6, 4).update(H[1::2], y[1::2])
    m = a.merge(b)
    ref = vc.ClassStats.from_features(H - 1e8, y)
    # the accumulator works relative to an origin inside the data (issue 25): the 1e8 offset costs nothing (it
    # cost ~1e8·ε = 1e-8 before, (1e8)²·ε with raw moments); H − 1e8 is exact, so ref holds the same data
    np.testing.assert_allclose(m.sigma_w(), ref.sigma_w(), atol=1e-13)
    np.testing.assert_allclose(m.sigma_b(), ref.sigma_b(), atol=1e-13)
    np.testing.assert_array_equal(m.counts, ref.counts)
    assert m is not a and a.n == 24


def test_metrics_match_direct_formulas():
    H, y = _data()
    K = 4
    Sw, Sb, St = _direct(H, y, K)
    assert vc.vci(H, y) == pytest.approx(1 - np.trace(np.linalg.pinv(St) @ Sb) / (K - 1), abs=1e-12)
    assert vc.fuzziness(H, y) == pytest.approx(np.trace(np.linalg.pinv(Sb, rcond=1e-10) @ Sw), rel=1e-10)
    assert vc.squared_distance(H, y) == pytest.approx(np.trace(Sw) / np.trace(Sb), rel=1e-12)
    # cosine: the paper's O(N²) double sums
    Hn = H / np.linalg.norm(H, axis=1, keepdims=True)
    S = Hn @ Hn.T
    within = np.mean([np.mean(1 - S[np.ix_(y == k, y == k)]) for k in range(K)])
    assert vc.cosine_similarity(H, y) == pytest.approx(within, abs=1e-12)
    assert vc.class_separation(H, y) == pytest.approx(1 - within / np.mean(1 - S), abs=1e-12)
    assert vc.probe_loss(vc.ClassStats.from_features(H, y)) == pytest.approx(vc.probe_loss_lstsq(H, y), abs=1e-12)
    m = vc.metrics(H, y)
    assert m["vci"] == pytest.approx(vc.vci(H, y)) and m["fuzziness"] == pytest.approx(vc.fuzziness(H, y))
    assert m["within_vb"] + m["within_vb_perp"] == pytest.approx(np.trace(Sw))


def test_imbalanced_probe_loss_and_singleton_class():
    rng = np.random.default_rng(3)
    y = np.array([0] * 9 + [1] * 4 + [2])  # class 2 has one sample: contributes nothing to Σ_W
    H = rng.normal(size=(len(y), 3)) + np.eye(3)[y] * 3
    st = vc.ClassStats.from_features(H, y)
    assert vc.probe_loss(st) == pytest.approx(vc.probe_loss_lstsq(H, y), abs=1e-12)
    np.testing.assert_allclose(st.sigma_t(), np.cov(H.T, bias=True), atol=1e-12)


def test_full_collapse_and_rank_choice():
    rng = np.random.default_rng(1)
    mu = rng.normal(size=(5, 12))
    y = np.repeat(np.arange(5), 3)
    assert vc.vci(mu[y], y) == pytest.approx(0.0, abs=1e-10)
    # class means in a 2-D subspace: rank Σ_B = 2 < K − 1 = 4; "paper" rank biases VCI upward
    mu2 = rng.normal(size=(5, 2)) @ rng.normal(size=(2, 12))
    assert vc.vci(mu2[y], y, rank="exact") == pytest.approx(0.0, abs=1e-8)
    assert vc.vci(mu2[y], y, rank="paper") == pytest.approx(0.5, abs=1e-8)


def test_mlog():
    assert vc.mlog([0.5, 0.5], 0.5) == pytest.approx(0.0)
    assert vc.mlog([[90.0, 80.0]], [75.0], percent=True)[0] == pytest.approx(
        np.mean([np.log(9), np.log(4)]) - np.log(3))
    with pytest.raises(ValueError, match="percent=True"):
        vc.mlog([90.0], 75.0)


@pytest.mark.parametrize("bad, match", [
    (lambda st: st.update(np.ones((3, 2)), np.array([0.0, 1.0, 1.0])), "integers"),
    (lambda st: st.update(np.ones((3, 2)), np.array([0, 1])), "length"),
    (lambda st: st.update(np.ones((3, 3)), np.array([0, 1, 1])), "feature columns"),
    (lambda st: st.update(np.array([[1.0, np.nan], [0, 0]]), np.array([0, 1])), "NaN at column 1"),
    (lambda st: st.update(np.array([[1.0, np.inf], [0, 0]]), np.array([0, 1])), "Inf"),
    (lambda st: st.update(np.ones((2, 2)), np.array([0, 3])), "outside"),
    (lambda st: st.update(np.ones((2, 2)), np.array([0, 0])).sigma_w(), "class 1 has no samples"),
])
def test_bad_input(bad, match):
    with pytest.raises(ValueError, match=match):
        bad(vc.ClassStats(2, 2))


def test_bad_input_constructors():
    with pytest.raises(ValueError, match="K = 1"):
        vc.ClassStats(3, 1)
    with pytest.raises(ValueError, match="K = 1"):
        vc.vci(np.ones((4, 2)), np.zeros(4, dtype=int))
    with pytest.raises(ValueError, match="labels"):
        vc.vci(np.ones((4, 2)))
    with pytest.raises(ValueError, match="no samples"):
        vc.vci(np.random.default_rng(0).normal(size=(4, 2)), np.array([0, 0, 2, 2]))
    with pytest.raises(ValueError, match="rank"):
        vc.vci(*_data(), rank="bogus")


def test_pickle_drops_scratch_and_float32_input():
    import pickle

    H, y = _data()
    st = vc.ClassStats(6, 4).update(H.astype(np.float32), y)
    blob = pickle.dumps(st)
    assert len(blob) < 10_000  # no (batch × p) scratch buffers shipped
    back = pickle.loads(blob)
    ref = vc.ClassStats.from_features(H.astype(np.float32).astype(np.float64), y)
    np.testing.assert_allclose(back.sigma_w(), ref.sigma_w(), atol=1e-12)
    back.update(H, y)  # still usable after unpickling
    assert back.n == 2 * len(y)
