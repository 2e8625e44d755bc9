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
    # the accumulator works relative to an origin inside the data: the 1e8 offset costs nothing (it
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


# ---- metrics() against each metric alone and against direct numpy formulas

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


def test_metrics_of_fully_collapsed_features():
    """Perfect neural collapse (every sample at its class mean, Σ_W = 0 exactly): no within-class variability
    anywhere, so fuzziness, squared distance, Tr Σ_W on and off V_B and its share on V_B are all 0 (the share is
    defined as 0 when Tr Σ_W = 0), and VCI = 1 − Tr[Σ_T†Σ_B]/(K − 1) = 0."""
    import theory.collapse as vc
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 4)
    m = vc.metrics(rng.standard_normal((3, 5))[y], y)
    assert m["fuzziness"] == m["squared_distance"] == m["within_vb"] == m["within_vb_perp"] == 0.0
    assert m["within_vb_share"] == 0.0
    assert abs(m["vci"]) <= 1e-14 and m["trace_ratio"] == pytest.approx(2.0, rel=1e-14)


def _three_classes(seed=1, p=5):
    rng = np.random.default_rng(seed)
    K, n = 3, 30
    y = np.repeat(np.arange(K), n)
    X = 2 * rng.standard_normal((K, p))[y] + rng.standard_normal((K * n, p)) * np.array([1, 2, 0.5, 1, 3])[:p]
    return X, y


def test_vb_basis_is_orthonormal_and_spans_the_class_means():
    """V_B (VC Sec 3.2) for K ≤ p (the K×K Gram route): orthonormal columns whose projector is that of Σ_B's top
    r = K − 1 eigenvectors, computed here from Σ_B directly."""
    import theory.collapse as vc
    X, y = _three_classes()
    V = vc.vb_basis(X, y)
    np.testing.assert_allclose(V.T @ V, np.eye(2), atol=1e-13)
    mu = np.array([X[y == k].mean(axis=0) for k in range(3)])
    M = mu - mu.mean(axis=0)
    W = np.linalg.eigh(M.T @ M)[1][:, -2:]
    np.testing.assert_allclose(V @ V.T, W @ W.T, atol=1e-12)


def test_within_vb_share_is_the_share_of_tr_sigma_w_on_v_b():
    """metrics' within_vb_share = Tr[P_{V_B} Σ_W] / Tr Σ_W (VC Sec 3.2), computed here from Σ_W and Σ_B's top
    eigenvectors directly; it agrees with within_vb / (within_vb + within_vb_perp)."""
    import theory.collapse as vc
    X, y = _three_classes()
    m = vc.metrics(X, y)
    mu = np.array([X[y == k].mean(axis=0) for k in range(3)])
    D = X - mu[y]
    Sw = D.T @ D / len(y)
    M = mu - mu.mean(axis=0)
    W = np.linalg.eigh(M.T @ M)[1][:, -2:]
    share = np.trace(W.T @ Sw @ W) / np.trace(Sw)
    assert m["within_vb_share"] == pytest.approx(share, rel=1e-12)
    assert m["within_vb_share"] == pytest.approx(m["within_vb"] / (m["within_vb"] + m["within_vb_perp"]), rel=1e-12)
    assert 0.2 < share < 0.8  # a case where a wrong numerator or denominator shows


def test_sigma_t_pseudo_inverse_default_cutoff_is_p_eps():
    """trace_ratio / VCI: Σ_T† drops eigenvalues below rtol·λ_max with the documented default rtol = p·ε (numpy's
    pinv convention for a p×p matrix); the default and the explicit p·ε give the same trace."""
    import theory.collapse as vc
    from theory.collapse.linalg import Spectra
    X, y = _three_classes()
    st = vc.ClassStats(5, 3)
    st.update(X, y)
    assert Spectra(st).rtol_t == 5 * np.finfo(float).eps
    assert vc.trace_ratio(X, y) == vc.trace_ratio(X, y, rtol=5 * np.finfo(float).eps)


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


# ---- features at very different scales: VCI and the spectra in the features' units

def _direct_vci(X, y, K):
    """VC Def 5.3 by the textbook formula, 1 − Tr[Σ_T⁻¹Σ_B]/(K − 1) (Σ_B weighted by class shares), and cond Σ_T."""
    mu = X.mean(axis=0)
    St = (X - mu).T @ (X - mu) / len(y)
    Sb = sum((y == k).mean() * np.outer(X[y == k].mean(axis=0) - mu, X[y == k].mean(axis=0) - mu) for k in range(K))
    return 1 - np.trace(np.linalg.solve(St, Sb)) / (K - 1), np.linalg.cond(St)


def test_vci_with_a_nearly_collapsed_feature_matches_the_direct_formula():
    """VC Def 5.3, VCI = 1 − Tr[Σ_T⁻¹Σ_B]/(K − 1), when one feature is almost a class indicator (within-class spread
    1e−13 of its between-class spread) beside ordinary ones: Σ_T is well conditioned (cond ~300), so the direct
    numpy formula is accurate. The invariant frame must equilibrate by Σ_T's diagonal; by Σ_W's alone it would
    blow that column up by ~2^43 and the pseudo-inverse cutoff would drop the other directions."""
    import theory.collapse as vc
    rng = np.random.default_rng(3)
    K, n, p = 3, 40, 4
    y = np.repeat(np.arange(K), n)
    X = np.c_[y + 1e-13 * rng.standard_normal(K * n),
              3 * rng.standard_normal((K, p - 1))[y] + rng.standard_normal((K * n, p - 1))]
    want, cond = _direct_vci(X, y, K)
    assert cond < 1e3
    assert vc.vci(X, y) == pytest.approx(want, rel=1e-9)


def test_vci_with_a_feature_that_barely_separates_the_classes():
    """The twin of the nearly-collapsed case: a feature whose class means differ by only 1e−12 of its within-class
    spread (pure within-class noise for the classes). The invariant frame equilibrates by Σ_T's diagonal, which
    this feature's Σ_W fills; by Σ_B's alone it would blow the column up by ~2^40."""
    import theory.collapse as vc
    rng = np.random.default_rng(4)
    K, n = 3, 40
    y = np.repeat(np.arange(K), n)
    noise = rng.standard_normal(K * n)
    for k in range(K):  # exact class means 1e−12·k
        noise[y == k] -= noise[y == k].mean() - 1e-12 * k
    X = np.c_[3 * rng.standard_normal((K, 3))[y] + rng.standard_normal((K * n, 3)), noise]
    want, cond = _direct_vci(X, y, K)
    assert cond < 1e3
    assert vc.vci(X, y) == pytest.approx(want, rel=1e-9)


def test_spectra_with_a_class_indicator_feature_beside_a_tiny_one():
    """VC Fig 2's spectra in the features' units when one feature is constant within each class (Σ_W,11 = 0 exactly,
    a label-like feature) and another lives at 1e−155: the original frame's unit is set by the largest diagonal of
    Σ_T (here Σ_B's), not of Σ_W alone, or the class-indicator column is scaled up by ~2^515 and Σ_B overflows."""
    rng = np.random.default_rng(0)
    K, n = 3, 20
    y = np.repeat(np.arange(K), n)
    X = np.c_[y.astype(float), 1e-155 * rng.standard_normal(K * n)]
    import theory.collapse as vc
    s = vc.spectra(X, y)
    mu = np.array([X[y == k].mean(axis=0) for k in range(K)])
    M = mu - mu.mean(axis=0)
    assert s["sigma_b"][0] == pytest.approx(np.linalg.eigvalsh(M.T @ M / K)[-1], rel=1e-13)  # 2/3
    assert s["sigma_t"][0] == pytest.approx(2 / 3, rel=1e-13)


def test_spectra_of_features_at_1e100_and_1e_minus_100():
    """VC Fig 2's spectra in the features' own units when two features differ in scale by 1e200: the original frame
    is anchored at the largest column unit (the smaller column may underflow there, negligibly); anchored at the
    smallest, the large column would be scaled up by ~2^1329 and overflow."""
    import theory.collapse as vc
    rng = np.random.default_rng(5)
    K, n = 3, 25
    y = np.repeat(np.arange(K), n)
    X = (rng.standard_normal((K, 2))[y] + 0.3 * rng.standard_normal((K * n, 2))) * np.array([1e100, 1e-100])
    s = vc.spectra(X, y)
    mu = np.array([X[y == k].mean(axis=0) for k in range(K)])
    M = mu - mu.mean(axis=0)
    want = np.linalg.eigvalsh(M.T @ M / K)[::-1]
    assert np.all(np.isfinite(s["sigma_b"])) and s["sigma_b"][0] == pytest.approx(want[0], rel=1e-12)
    assert s["sigma_t"][0] == pytest.approx(np.linalg.eigvalsh(np.cov(X.T, bias=True))[-1], rel=1e-12)


# ---- undefined metrics and bad rank/rtol arguments are named errors

def test_degenerate_inputs_are_named_errors():
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


def test_rank_zero_is_not_a_valid_rank():
    """VC metrics' explicit rank is an int in [1, min(p, K−1)]: 0 is the argument's error, not 'Σ_B is zero'."""
    y = np.repeat(np.arange(3), 5)
    H = np.random.default_rng(15).standard_normal((15, 3)) + np.eye(3)[y]
    for f in (vc.vci, vc.fuzziness):
        with pytest.raises(ValueError, match=r"rank: an int must lie in \[1, min\(p, K-1\)\] = \[1, 2\], got 0"):
            f(H, y, rank=0)


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


# ---- the probe loss (VC Thm 5.1)

def test_probe_loss_balanced_limits():
    """VC Thm 5.1 (balanced): the loss is 0 at full collapse, where Tr[Σ_T†Σ_B] = rank Σ_B = K − 1, and
    1/2 − 1/(2K) when the means carry no signal (Tr = 0); K = 1 has no between-class variation."""
    for K in (2, 3, 10):
        assert vc.probe_loss_balanced(K - 1, K) == pytest.approx(0.0, abs=1e-15)
        assert vc.probe_loss_balanced(0.0, K) == pytest.approx(0.5 - 0.5 / K, rel=1e-15)
    with pytest.raises(ValueError, match="K"):
        vc.probe_loss_balanced(0.0, 1)


def test_probe_loss_lstsq_with_a_constant_feature():
    """A constant feature carries nothing (the probe has a bias): probe_loss_lstsq equals probe_loss without it."""
    rng = np.random.default_rng(16)
    y = np.repeat(np.arange(3), 10)
    H = rng.standard_normal((30, 2)) + np.eye(3, 2)[y]
    Hc = np.column_stack([H, np.full(30, 7.0)])
    assert vc.probe_loss_lstsq(Hc, y) == pytest.approx(vc.probe_loss(vc.ClassStats.from_features(H, y)), abs=1e-12)


def test_probe_loss_lstsq_without_features_is_the_bias_only_loss():
    """p = 0 (an (N, 0) feature matrix) is a valid input: the probe is its bias alone, whose optimum predicts the
    class priors, loss ½(1 − Σ_k π_k²) (VC Thm 5.1 with Σ_B = 0)."""
    from theory.collapse.probe import probe_loss_lstsq
    y = np.array([0, 0, 0, 1, 1, 2])
    pi = np.bincount(y) / y.size
    assert probe_loss_lstsq(np.zeros((6, 0)), y) == pytest.approx(0.5 * (1 - np.sum(pi**2)), rel=1e-12)


def test_probe_loss_lstsq_keeps_a_feature_that_varies_by_one_ulp_of_its_offset():
    """h = 2⁵² + y separates two classes exactly (loss 0: the affine probe (h − 2⁵²) recovers the one-hot). Its
    variation is one ulp of its offset, 2⁻⁵² of the bias column once centred, so gelsd keeps the direction only
    because each centred column is rescaled to rms ~1 first (the docstring's affine invariance)."""
    from theory.collapse.probe import probe_loss_lstsq
    y = np.tile([0, 1], 20)
    H = (2.0**52 + y)[:, None]
    assert probe_loss_lstsq(H, y) == pytest.approx(0.0, abs=1e-20)


# ---- mlog (VC Eq 6)

def test_mlog_closed_form_and_type():
    """VC Eq 6: mean log-odds of the downstream accuracies minus the pre-training log-odds; a float for one row."""
    d, q = np.array([0.5, 0.8]), 0.6
    want = np.mean(np.log(d / (1 - d))) - np.log(q / (1 - q))
    out = vc.mlog(d, q)
    assert type(out) is float and out == pytest.approx(want, rel=1e-14)
    rows = vc.mlog(np.array([[0.5, 0.8], [0.6, 0.6]]), np.array([0.6, 0.6]))
    assert rows.shape == (2,) and rows[0] == pytest.approx(want, rel=1e-14) and rows[1] == 0.0


def test_mlog_suggests_percent_only_for_percent_like_input():
    """VC Eq 6 needs accuracies in (0, 1): the 'pass percent=True' hint is given only when some value exceeds 1
    and all are below 100 (they look like percentages), not for 0, 1, negative fractions, or a 100 that
    percent=True would reject as well."""
    for bad in ([0.0, 0.5], [1.0, 0.5], [-0.2, 0.5], [100.0, 50.0]):  # 100 % is outside (0, 100) too: no hint
        with pytest.raises(ValueError, match=r"strictly inside \(0, 1\)$"):
            vc.mlog(bad, 0.6)
    with pytest.raises(ValueError, match=r"strictly inside \(0, 1\) \(pass percent=True"):
        vc.mlog([1.5, 0.5], 0.6)
    with pytest.raises(ValueError, match="pass percent=True"):
        vc.mlog([50.0, 99.5], 60.0)  # percentages given as fractions: the error says so
