"""theory.collapse at the edges: extreme and uneven feature scales (right answer or a clear error), bad input
(ValueError/TypeError naming the argument, never NaN or a raw library error), imbalanced classes (VCI's n_k/N
weights, the probe loss's π_k² weights against directly optimised probes)."""
import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st_
from scipy import optimize

from theory import collapse as vc

DIMLESS = {"vci": vc.vci, "trace_ratio": vc.trace_ratio, "fuzziness": vc.fuzziness,
           "squared_distance": vc.squared_distance, "cosine_similarity": vc.cosine_similarity,
           "class_separation": vc.class_separation, "probe_loss": vc.probe_loss,
           "probe_loss_lstsq": vc.probe_loss_lstsq}


def _data(seed=0, K=5, N=20, p=8, counts=None):
    rng = np.random.default_rng(seed)
    y = np.repeat(np.arange(K), N if counts is None else counts)
    H = 3 * rng.normal(size=(K, p))[y] + rng.normal(size=(len(y), p))
    return H, y


# ----------------------------------------------------------------------------------------------------------
# scale (the bugs caught: H·1e150 gave fuzziness NaN; 1e200 a LinAlgError; 1e−150 fuzziness 0; 1e−200 VCI 1.0)
# ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("s", [1e150, 1e200, 1e300, 1e-150, 1e-200, 1e-300])
def test_dimensionless_metrics_right_at_extreme_scales(s):
    H, y = _data()
    for name, f in DIMLESS.items():
        ref, got = f(H, y), f(H * s, y)
        assert got == pytest.approx(ref, rel=1e-12, abs=1e-14), name
    m, m0 = vc.metrics(H * s, y), vc.metrics(H, y)
    for k in ("vci", "fuzziness", "squared_distance", "cosine_similarity", "probe_loss"):
        assert m[k] == pytest.approx(m0[k], rel=1e-12, abs=1e-14), k


@pytest.mark.parametrize("e", [520, 350, -350, -540])
def test_quantities_with_units_right_or_clear_error(e):
    """Σ's, the V_B split and the spectra carry the square of the features' unit: exact (H scaled by 2^e) when
    representable, else a ValueError saying over- or underflow — never inf, NaN or silent zeros."""
    H, y = _data()
    s = 2.0 ** e
    st, st0 = vc.ClassStats.from_features(H * s, y), vc.ClassStats.from_features(H, y)
    np.testing.assert_allclose(st.means, st0.means * s, rtol=1e-14)
    calls = {"sigma_w": (st.sigma_w, lambda: st0.sigma_w()), "sigma_t": (st.sigma_t, lambda: st0.sigma_t()),
             "within_vb": (lambda: vc.vb_split(st)["within_vb"], lambda: vc.vb_split(st0)["within_vb"]),
             "spectra": (lambda: vc.spectra(st)["sigma_t"], lambda: vc.spectra(st0)["sigma_t"])}
    for name, (f, ref) in calls.items():
        if abs(e) < 500:
            np.testing.assert_allclose(f(), ref() * s * s, rtol=1e-12, atol=1e-12 * np.max(np.abs(ref())) * s * s)
        else:
            with pytest.raises(ValueError, match="overflows|underflows"):
                f()


@pytest.mark.parametrize("lo, hi", [(-3, 3), (-100, 100), (-300, 300)])
def test_invariant_metrics_ignore_per_feature_scales(lo, hi):
    """VCI, Tr[Σ_T†Σ_B] and the probe loss are invariant to invertible maps (VC Cor 5.4, Obs 4.5), so to per-feature
    scales spanning 1e±300 too."""
    H, y = _data(1)
    D = np.random.default_rng(2).permutation(np.logspace(lo, hi, H.shape[1]))
    for name in ("vci", "trace_ratio", "probe_loss", "probe_loss_lstsq"):
        assert DIMLESS[name](H * D, y) == pytest.approx(DIMLESS[name](H, y), rel=1e-11, abs=1e-13), name
    # fuzziness at rank p (K − 1 ≥ p, Σ_B invertible) is invariant as well
    H2, y2 = _data(3, K=6, N=10, p=4)
    D2 = np.random.default_rng(4).permutation(np.logspace(lo, hi, 4))
    assert vc.fuzziness(H2 * D2, y2) == pytest.approx(vc.fuzziness(H2, y2), rel=1e-10)


def _fuzz_mp(H, y, r):
    """Fuzziness Tr[Σ_B,r†Σ_W] of the float64 input in 60-digit arithmetic (mpmath): the reference."""
    import mpmath as mp

    mp.mp.dps = 60
    K, n, p = int(y.max()) + 1, len(y), H.shape[1]
    X = [[mp.mpf(float(v)) for v in row] for row in H]
    cnt = [int(np.sum(y == k)) for k in range(K)]
    mu = [[mp.fsum(X[i][j] for i in range(n) if y[i] == k) / cnt[k] for j in range(p)] for k in range(K)]
    mg = [mp.fsum(cnt[k] * mu[k][j] for k in range(K)) / n for j in range(p)]
    Sb, Sw = mp.zeros(p, p), mp.zeros(p, p)
    for k in range(K):
        d = [mu[k][j] - mg[j] for j in range(p)]
        for a in range(p):
            for b in range(p):
                Sb[a, b] += mp.mpf(cnt[k]) / n * d[a] * d[b]
    for i in range(n):
        d = [X[i][j] - mu[y[i]][j] for j in range(p)]
        for a in range(p):
            for b in range(p):
                Sw[a, b] += d[a] * d[b] / n
    E, Q = mp.eigsy(Sb)
    top = sorted(range(p), key=lambda i: -E[i])[:r]
    return float(mp.fsum((Q[:, i].T * Sw * Q[:, i])[0] / E[i] for i in top)), float(E[top[-1]] / E[top[0]])


@pytest.mark.parametrize("lo, hi", [(0, 0), (-2, 2), (-8, 8), (-40, 40)])
def test_fuzziness_uneven_scales_right_to_its_conditioning_or_error(lo, hi):
    """Fuzziness (rank K − 1 < p) is not invariant to per-feature scales: against a 60-digit reference it is right to
    its condition number λ_max/λ_r times ε, or raises a ValueError when λ_r is at rounding level."""
    H, y = _data(5, K=4, N=6, p=6)
    X = H * np.random.default_rng(6).permutation(np.logspace(lo, hi, 6))
    ref, ratio = _fuzz_mp(X, y, 3)
    try:
        got = vc.fuzziness(X, y)
    except ValueError as exc:
        assert "rounding level" in str(exc) and ratio < 1e-13
        return
    assert got == pytest.approx(ref, rel=100 * np.finfo(float).eps / ratio)


def test_cosine_metric_at_scales_where_squared_norms_overflow():
    H, y = _data(7)
    ref = vc.cosine_distances(H, y)
    for s in (1e160, 1e-160, 1e-310):
        got = vc.cosine_distances(H * s, y)
        assert got["d_within"] == pytest.approx(ref["d_within"], rel=1e-12 if s > 1e-300 else 1e-9)
        assert got["d_total"] == pytest.approx(ref["d_total"], rel=1e-12 if s > 1e-300 else 1e-9)


def test_merge_across_column_units_and_mixed_batches():
    """Batches of very different scales in one accumulator: the power-of-two units follow, results stay exact."""
    rng = np.random.default_rng(8)
    H, y = _data(8, K=3, N=30, p=5)
    D = np.ldexp(1.0, np.array([0, 600, -600, 300, -900]))  # per-column units, exact
    X = H * D
    a = vc.ClassStats(5, 3).update(X[:20], y[:20])
    b = vc.ClassStats(5, 3)
    for s in range(20, 90, 7):
        b.update(X[s:s + 7], y[s:s + 7])
    m, one = a.merge(b), vc.ClassStats.from_features(X, y, batch=int(rng.integers(1, 9)))
    ref = vc.ClassStats.from_features(H, y)
    for st in (m, one):
        assert vc.vci(st) == pytest.approx(vc.vci(ref), rel=1e-12)
        np.testing.assert_allclose(st.means, ref.means * D, rtol=1e-13)
    # a column that is zero in the first batch and 1e300 later
    Z = H.copy()
    Z[:, 0] = 0.0
    Z[40:, 0] = 1e300 * H[40:, 0]
    st = vc.ClassStats(5, 3).update(Z[:40], y[:40]).update(Z[40:], y[40:])
    st_ref = vc.ClassStats.from_features(Z * np.array([1e-300, 1, 1, 1, 1]), y)
    assert vc.vci(st) == pytest.approx(vc.vci(st_ref), rel=1e-11)


def _revive_old_format(st):
    """A ClassStats unpickled from the attributes it had before the scaled store (plain means and scatter)."""
    revived = vc.ClassStats.__new__(vc.ClassStats)
    revived.__setstate__({"p": st.p, "K": st.K, "counts": st.counts, "unit_sums": st.unit_sums, "means": st.means,
                          "scatter_within": st.scatter_within})
    return revived


def test_pickle_round_trip_and_old_format():
    H, y = _data(9)
    st = vc.ClassStats.from_features(H * 1e200, y)
    back = pickle.loads(pickle.dumps(st))
    assert vc.vci(back) == vc.vci(st)
    old = vc.ClassStats.from_features(H, y)
    revived = _revive_old_format(old)
    assert vc.vci(revived) == pytest.approx(vc.vci(old), rel=1e-14)
    H2, y2 = _data(11)  # and it keeps accumulating: = the statistics of both sets at once
    both = vc.ClassStats.from_features(np.vstack([H, H2]), np.r_[y, y2])
    np.testing.assert_allclose(revived.update(H2, y2).sigma_w(), both.sigma_w(), rtol=1e-12)


def test_old_format_pickle_keeps_its_largest_value_as_the_column_scale():
    """A pickle from before the scaled store (plain means, scatter) is revived with the largest stored |mean| as
    each column's scale, so a later batch at 2^-300 does not re-base 2^250 data (a class mean of exactly 0, as
    here, must not be taken for the column's scale)."""
    rng = np.random.default_rng(7)
    y = np.repeat(np.arange(3), 4)
    H = rng.standard_normal((12, 2)) + np.arange(3)[y][:, None]
    H[2:4] = -H[:2]  # class 0's mean is exactly 0
    H = np.ldexp(H, 250)
    old = vc.ClassStats.from_features(H, y)
    revived = _revive_old_format(old)
    H2 = np.ldexp(rng.standard_normal((6, 2)), -300)
    y2 = np.repeat(np.arange(3), 2)
    both = vc.ClassStats.from_features(np.vstack([H, H2]), np.r_[y, y2])
    np.testing.assert_allclose(revived.update(H2, y2).sigma_w(), both.sigma_w(), rtol=1e-12, atol=0)


# ----------------------------------------------------------------------------------------------------------
# bad input: clear errors naming the argument
# ----------------------------------------------------------------------------------------------------------
H0, Y0 = _data(10, K=3, N=4, p=3)
# 5 class means whose 4th centred direction is 1e-20: Σ_B's 4th eigenvalue ~1e-40 λ_max, below rounding
MEANS_4TH_TINY = np.array([[1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0], [0, 0, 1, 0, 0, 0], [0, 0, 0, 0, 0, 0],
                           [0.5, 0.5, 0, 1e-20, 0, 0]])
BAD = [
    (lambda: vc.ClassStats(3, 2).update(H0 + 1j, Y0), TypeError, "H: complex"),
    (lambda: vc.ClassStats(3, 2).update(np.zeros((0, 3), complex), np.zeros(0, int)), TypeError, "complex"),
    (lambda: vc.ClassStats(3, 3).update(H0.astype(object), Y0), TypeError, "real numeric"),
    (lambda: vc.ClassStats(3, 3).update(H0 > 0, Y0), TypeError, "real numeric"),
    (lambda: vc.ClassStats.from_features(H0, Y0, batch=0), ValueError, "batch: must be >= 1"),
    (lambda: vc.ClassStats.from_features(H0, Y0, batch=2.5), ValueError, "batch: must be an integer"),
    (lambda: vc.ClassStats.from_features(H0 + 0j, Y0), TypeError, "features: complex"),
    (lambda: vc.ClassStats(3.0, 2), ValueError, "n_features"),
    (lambda: vc.ClassStats(3, True), ValueError, "n_classes"),
    (lambda: vc.vci(np.where(np.arange(12)[:, None] == 3, np.nan, H0), Y0), ValueError, "NaN at column"),
    (lambda: vc.vci(np.where(np.arange(12)[:, None] == 3, np.inf, H0), Y0), ValueError, "Inf"),
    (lambda: vc.vci(H0, np.zeros(12, int)), ValueError, "K = 1"),
    (lambda: vc.vci(H0[:2], Y0[:2]), ValueError, "K = 1"),
    (lambda: vc.vci(H0[:2], Y0[:2] + np.array([0, 2])), ValueError, "class 1 has no samples"),
    (lambda: vc.vci(H0, np.where(Y0 == 1, 2, Y0)), ValueError, "class 1 has no samples"),
    (lambda: vc.vci(np.ones((12, 3)), Y0), ValueError, "Σ_B = 0"),
    (lambda: vc.fuzziness(np.ones((12, 3)), Y0), ValueError, "numerically zero"),
    (lambda: vc.squared_distance(np.ones((12, 3)), Y0), ValueError, "Tr Σ_B = 0"),
    (lambda: vc.vci(H0, Y0, rtol=-1e-3), ValueError, "rtol"),
    (lambda: vc.vci(H0, Y0, rtol=float("nan")), ValueError, "rtol"),
    (lambda: vc.trace_ratio(H0, Y0, rtol="small"), ValueError, "rtol"),
    (lambda: vc.probe_loss(H0, Y0, rtol=1.5), ValueError, "rtol"),
    (lambda: vc.vci(H0, Y0, rank=5), ValueError, "rank"),
    (lambda: vc.vci(H0, Y0, rank=True), ValueError, "rank"),
    (lambda: vc.fuzziness(np.repeat(MEANS_4TH_TINY, 3, axis=0) + np.tile([[0.1] * 6, [-0.1] * 6, [0] * 6], (5, 1)),
                          np.repeat(np.arange(5), 3)), ValueError, "rounding level"),
    (lambda: vc.probe_loss_lstsq(H0 + 1j, Y0), TypeError, "features: complex"),
    (lambda: vc.probe_loss_lstsq(H0, Y0, n_classes=1), ValueError, "n_classes"),
    (lambda: vc.probe_loss_lstsq(H0, Y0, n_classes=2.5), ValueError, "n_classes"),
    (lambda: vc.probe_loss_lstsq(H0, Y0, n_classes=5), ValueError, "class 3 has no samples"),
    (lambda: vc.probe_loss_lstsq(np.full((12, 3), np.nan), Y0), ValueError, "NaN"),
    (lambda: vc.probe_loss_lstsq(H0, Y0.astype(float)), ValueError, "integers"),
    (lambda: vc.mlog([0.6 + 0.1j], 0.5), TypeError, "downstream: complex"),
    (lambda: vc.mlog([[0.6, 0.7]], [0.5, 0.4]), ValueError, "pretrain: shape"),
    (lambda: vc.mlog([0.6], 0.5, percent="no"), ValueError, "percent"),
    (lambda: vc.mlog([], 0.5), ValueError, "empty"),
    (lambda: vc.ClassStats(3, 3).merge("stats"), ValueError, "merge"),
    (lambda: vc.ClassStats(3, 3).sigma_t(), ValueError, "no samples"),
    (lambda: vc.vci(vc.ClassStats(3, 2)), ValueError, "no samples yet"),
    (lambda: vc.vci(np.ones((4, 3))), ValueError, "labels: required when the first argument is a feature array"),
    (lambda: vc.ClassStats(0, 3), ValueError, "n_features"),
    (lambda: vc.ClassStats.from_features(np.zeros((0, 3)), np.zeros(0, int)), ValueError,
     "labels: expected a non-empty 1-D array"),
    (lambda: vc.ClassStats.from_features(np.zeros((4, 3)), np.array([[0, 1], [1, 0]])), ValueError,
     "labels: expected a non-empty 1-D array"),
    (lambda: vc.ClassStats.from_features(np.ones((4, 3)), np.array([0, -1, 7, 2]), n_classes=3), ValueError,
     r"labels: label -1 is outside \[0, 3\)"),  # the first bad label named
    (lambda: vc.probe_loss_lstsq(np.zeros((0, 3)), np.zeros(0, int)), ValueError,
     r"features: expected a non-empty 2-D \(samples, features\) array"),
]


@pytest.mark.parametrize("call, exc, match", BAD)
def test_bad_input_is_a_clear_error(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(K=st_.integers(2, 4), n=st_.integers(2, 12), p=st_.integers(1, 5),
       scale=st_.sampled_from([1.0, 1e-300, 1e-160, 1e160, 1e300, 0.0]),
       special=st_.sampled_from([None, np.nan, np.inf, -np.inf, 0.0, 5e-324, 1.7e308]),
       seed=st_.integers(0, 2**16))
def test_every_metric_answers_or_raises_clearly(K, n, p, scale, special, seed):
    """Arbitrary shapes, scales and special values: a finite number or a ValueError/TypeError, never NaN/inf or a
    raw library error (LinAlgError, ZeroDivisionError, FloatingPointError)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, K, size=n)
    H = rng.normal(size=(n, p)) * scale
    if special is not None:
        H[rng.integers(n), rng.integers(p)] = special
    for name, f in {**DIMLESS, "metrics": lambda a, b: vc.metrics(a, b)["vci"],
                    "vb_split": lambda a, b: vc.vb_split(a, b)["within_vb"],
                    "spectra": lambda a, b: vc.spectra(a, b)["sigma_t"][0]}.items():
        try:
            v = f(H, y)
        except (ValueError, TypeError):
            continue
        assert np.all(np.isfinite(v)), (name, v)


# ----------------------------------------------------------------------------------------------------------
# imbalanced classes: VCI's n_k/N weights, the probe loss's π_k² weights
# ----------------------------------------------------------------------------------------------------------
def _two_pass(H, y, K):
    n = len(y)
    mu = np.stack([H[y == k].mean(0) for k in range(K)])
    mg = H.mean(0)  # the sample mean, computed directly (= Σ π_k μ_k)
    Sw = sum((H[y == k] - mu[k]).T @ (H[y == k] - mu[k]) for k in range(K)) / n
    Sb = sum(np.sum(y == k) * np.outer(mu[k] - mg, mu[k] - mg) for k in range(K)) / n
    St = (H - mg).T @ (H - mg) / n
    return Sw, Sb, St


def test_sigma_t_equals_two_pass_with_imbalanced_classes():
    counts = np.array([1, 3, 40, 200, 7])
    H, y = _data(12, K=5, p=6, counts=counts)
    H = H + 50.0  # an offset, as features far from the origin
    perm = np.random.default_rng(13).permutation(len(y))
    H, y = H[perm], y[perm]
    st = vc.ClassStats(6, 5)
    for s in range(0, len(y), 17):
        st.update(H[s:s + 17], y[s:s + 17])
    Sw, Sb, St = _two_pass(H, y, 5)
    np.testing.assert_allclose(st.sigma_t(), St, rtol=0, atol=1e-12 * np.max(np.abs(St)))
    np.testing.assert_allclose(st.sigma_w(), Sw, rtol=0, atol=1e-12 * np.max(np.abs(St)))
    np.testing.assert_allclose(st.sigma_b(), Sb, rtol=0, atol=1e-12 * np.max(np.abs(St)))
    np.testing.assert_allclose(st.priors, counts / counts.sum())


def test_vci_weights_classes_by_n_k_and_reduces_to_eq2_when_balanced():
    H, y = _data(14, K=4, N=10, p=6)
    K = 4
    mu = np.stack([H[y == k].mean(0) for k in range(K)])
    Sb_eq2 = sum(np.outer(m - mu.mean(0), m - mu.mean(0)) for m in mu) / K  # VC Eq 2 (balanced)
    St = np.cov(H.T, bias=True)
    assert vc.vci(H, y) == pytest.approx(1 - np.trace(np.linalg.pinv(St) @ Sb_eq2) / (K - 1), abs=1e-12)
    keep = np.concatenate([np.flatnonzero(y == k)[: 2 + 3 * k] for k in range(K)])  # 2, 5, 8, 11 samples
    Hi, yi = H[keep], y[keep]
    Sw, Sb, St = _two_pass(Hi, yi, K)
    assert vc.vci(Hi, yi) == pytest.approx(1 - np.trace(np.linalg.pinv(St) @ Sb) / (K - 1), abs=1e-12)
    mui = np.stack([Hi[yi == k].mean(0) for k in range(K)])
    Sb_unw = sum(np.outer(m - mui.mean(0), m - mui.mean(0)) for m in mui) / K
    assert abs(vc.vci(Hi, yi) - (1 - np.trace(np.linalg.pinv(St) @ Sb_unw) / (K - 1))) > 1e-3


def _probe_by_lbfgs(H, y, K):
    """min_{W,b} (1/2N) Σ ‖W h + b − e_y‖² by L-BFGS on the raw parameters (no closed form, no lstsq)."""
    n, p = H.shape
    Y = np.eye(K)[y]

    def f(theta):
        W, b = theta[:K * p].reshape(K, p), theta[K * p:]
        R = H @ W.T + b - Y
        g = R / n
        return 0.5 * np.sum(R * R) / n, np.concatenate([(g.T @ H).ravel(), g.sum(0)])

    res = optimize.minimize(f, np.zeros(K * p + K), jac=True, method="L-BFGS-B",
                            options={"maxiter": 20000, "gtol": 1e-13, "ftol": 1e-16})
    return res.fun


@pytest.mark.parametrize("counts", [[3, 9, 30], [50, 5, 12, 2], [1, 1, 60]])
def test_imbalanced_probe_loss_pi_squared_weights(counts):
    """VC Thm 5.1's proof with priors π_k: L* = ½(1 − Σπ_k²) − ½ Tr[Σ_T†Σ̃_B], Σ̃_B = Σ π_k² (μ_k − μ_G)(μ_k − μ_G)ᵀ,
    against the gelsd least-squares probe and a probe optimised directly by L-BFGS; Thm 5.1 as printed is off."""
    K = len(counts)
    H, y = _data(15, K=K, p=5, counts=np.array(counts))
    st = vc.ClassStats.from_features(H, y)
    closed = vc.probe_loss(st)
    assert closed == pytest.approx(vc.probe_loss_lstsq(H, y), abs=1e-12)
    assert closed == pytest.approx(_probe_by_lbfgs(H, y, K), abs=1e-7)
    pi = st.priors
    Sw, Sb, St = _two_pass(H, y, K)
    mu = np.stack([H[y == k].mean(0) for k in range(K)])
    D = mu - H.mean(0)
    Sb2 = (D.T * pi ** 2) @ D
    assert closed == pytest.approx(0.5 * (1 - pi @ pi) - 0.5 * np.trace(np.linalg.pinv(St) @ Sb2), abs=1e-12)
    # the printed (balanced) formula is wrong here, and Tr[Σ_T†Σ̃_B] ≤ max π_k · Tr[Σ_T†Σ_B]
    assert abs(vc.probe_loss_balanced(vc.trace_ratio(st), K) - closed) > 1e-3
    assert vc.weighted_trace(st) <= pi.max() * vc.trace_ratio(st) + 1e-12


# ----------------------------------------------------------------------------------------------------------
# offsets far from zero (the bug caught: the streaming Σ_T error grew as offset·ε: 1.7e-13 at 1e3, 1.9e-12 at
# 1e4, 3e-10 at 1e6)
# ----------------------------------------------------------------------------------------------------------
def _translated_two_pass(H, y, K):
    """Σ_W, Σ_B, Σ_T of H by two passes after the translation H − h_0 (exact for entries within a factor 2 of
    h_0, else rounded to ε·|h − h_0|): the reference carries ε·spread, not ε·offset."""
    X = H - H[0]
    mu = np.stack([X[y == k].mean(0) for k in range(K)])
    pi = np.bincount(y, minlength=K) / len(y)
    R, D, G = X - mu[y], mu - pi @ mu, X - X.mean(0)
    return R.T @ R / len(y), (D.T * pi) @ D, G.T @ G / len(y)


def _err(a, b, d):
    s = np.sqrt(d)
    return float(np.max(np.abs(a - b) / s[:, None] / s[None, :]))


@pytest.mark.parametrize("scale", [1.0, 1e150, 1e-150])
@pytest.mark.parametrize("offset", [1e0, 1e2, 1e4, 1e6, 1e8])
def test_streaming_and_merging_stay_at_two_pass_precision_far_from_zero(offset, scale):
    """Features at an offset c·spread from zero (c up to 1e8, per feature; imbalanced classes; overall scales
    1e±150), streamed in batches of 1–17 and merged from three parts: Σ_W, Σ_B, Σ_T within 1e-13 of the two-pass
    values in units of √(Σ_T,ii Σ_T,jj) (measured ≤ 2e-15; the accumulator without its origin was off by 4e-8 at
    c = 1e8), and the class means within ε·|μ| of the two-pass means (their representation's own rounding)."""
    rng = np.random.default_rng(int(np.log10(offset)) + (0 if scale == 1 else 7 if scale > 1 else 13))
    K, p = 4, 7
    y = rng.permutation(np.repeat(np.arange(K), [3, 25, 11, 40]))
    H = 3 * rng.normal(size=(K, p))[y] + rng.normal(size=(len(y), p)) * rng.uniform(0.1, 2, size=p)
    H = (H + offset * rng.uniform(0.5, 2, size=p) * H.std(0)) * scale
    Sw, Sb, St = _translated_two_pass(H, y, K)
    d = np.diag(St)
    one = vc.ClassStats(p, K)
    s = 0
    while s < len(y):
        b = int(rng.integers(1, 18))
        one.update(H[s:s + b], y[s:s + b])
        s += b
    cut = np.sort(rng.choice(np.arange(1, len(y)), size=2, replace=False))
    parts = [vc.ClassStats.from_features(H[a:b], y[a:b], n_classes=K, batch=5)
             for a, b in zip((0, *cut), (*cut, len(y)))]
    merged = parts[0].merge(parts[1]).merge(parts[2])
    for st in (one, merged, vc.ClassStats(p, K).merge(merged)):
        for got, ref in ((st.sigma_w(), Sw), (st.sigma_b(), Sb), (st.sigma_t(), St)):
            assert _err(got, ref, d) <= 1e-13
        mu = np.stack([H[y == k].mean(0) for k in range(K)])
        np.testing.assert_allclose(st.means, mu, rtol=1e-14)
        np.testing.assert_allclose(st.global_mean, H.mean(0), rtol=1e-14)
    ref_vci = vc.vci(vc.ClassStats.from_features(H - H[0], y))
    assert vc.vci(one) == pytest.approx(ref_vci, abs=1e-13)


def test_merge_with_different_origins_is_one_stream():
    """Two accumulators whose origins (their first batches' column means) differ by the between-class distance:
    the merge re-expresses one side's means relative to the other's origin, and equals one stream over the union."""
    rng = np.random.default_rng(25)
    K, p = 3, 4
    y = np.repeat(np.arange(K), 20)
    H = 1e6 + 5 * np.arange(K)[y][:, None] * np.ones(p) + rng.normal(size=(len(y), p))
    a = vc.ClassStats(p, K).update(H[y == 0], y[y == 0])  # origin at class 0's mean
    b = vc.ClassStats(p, K).update(H[y == 2], y[y == 2]).update(H[y == 1], y[y == 1])  # origin at class 2's
    one = vc.ClassStats.from_features(H, y)
    for m in (a.merge(b), b.merge(a)):
        Sw, Sb, St = _translated_two_pass(H, y, K)
        d = np.diag(St)
        assert _err(m.sigma_t(), St, d) <= 1e-14 and _err(m.sigma_b(), Sb, d) <= 1e-14
        np.testing.assert_allclose(m.sigma_w(), one.sigma_w(), rtol=1e-13, atol=1e-14 * d.max())
        np.testing.assert_array_equal(m.counts, one.counts)
        np.testing.assert_allclose(m.means, one.means, rtol=1e-15)


def test_pickle_from_before_the_origin_revives_relative_to_zero():
    """A pickle with the scaled store but no origin (means stored relative to 0) keeps its meaning."""
    H, y = _data(12)
    H = H + 1e3
    st = vc.ClassStats.from_features(H, y)
    state = st.__getstate__()
    state["_mean"] = state["_mean"] + state.pop("_origin")  # what such a pickle held
    old = vc.ClassStats.__new__(vc.ClassStats)
    old.__setstate__(state)
    np.testing.assert_allclose(old.means, st.means, rtol=1e-15)
    assert vc.vci(old) == pytest.approx(vc.vci(st), abs=1e-12)
    back = pickle.loads(pickle.dumps(st))
    np.testing.assert_array_equal(back._origin, st._origin)
    assert vc.vci(back) == vc.vci(st)


def test_batches_longer_than_a_centring_block_far_from_zero():
    """One batch of 1300 rows (several of update's in-place centring blocks) at an offset of 1e6 spreads: every
    row is centred (Σ_W to two-pass precision), as with the same rows in batches of 7."""
    rng = np.random.default_rng(31)
    K, p = 3, 5
    y = rng.integers(0, K, size=1300)
    H = 1e6 + 2 * rng.normal(size=(K, p))[y] + rng.normal(size=(1300, p))
    Sw, Sb, St = _translated_two_pass(H, y, K)
    d = np.diag(St)
    for st in (vc.ClassStats(p, K).update(H, y), vc.ClassStats.from_features(H, y, batch=7)):
        assert _err(st.sigma_w(), Sw, d) <= 1e-14 and _err(st.sigma_t(), St, d) <= 1e-14


def test_means_of_unseen_classes_are_zero_and_of_a_single_sample_the_sample():
    """``means``: zero rows for classes not seen yet (not the origin), a one-sample class is that sample."""
    H = np.array([[1e3 + 1.0, 2e3], [1e3 + 3.0, 2e3 + 1.0], [5.0, 7.0]])
    st = vc.ClassStats(2, 4).update(H, np.array([0, 0, 2]))
    np.testing.assert_array_equal(st.means, [[1e3 + 2.0, 2e3 + 0.5], [0.0, 0.0], [5.0, 7.0], [0.0, 0.0]])


def test_vci_of_float32_features_ignores_their_rounding_directions():
    """Features lifted from 6 to 24 dimensions (a Linear layer) have a rank-6 Σ_T; stored in float32 they gain 18
    directions of rounding noise (eigenvalues ~u²·λ_max). VCI's Σ_T† must not invert them: VCI of the float32
    features equals the float64 lift's (to the float32 perturbation of the kept directions) and is invariant under a
    rotation (VC Cor 5.4). Without the noise floor (the float64 cut p·ε) it moves by 1e-3 here and the rotation
    changes it."""
    from theory.collapse import vci

    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 6)) + 5.0
    y = rng.integers(0, 4, 400)
    X[:, 0] += 0.8 * y  # class structure
    W = rng.standard_normal((24, 6)) * 0.7
    H64 = X @ W.T + rng.standard_normal(24)
    H32 = H64.astype(np.float32)
    Q = np.linalg.qr(rng.standard_normal((24, 24)))[0]
    ClassStats = vc.ClassStats
    exact = vci(ClassStats.from_features(H64, y, 4))
    for H in (H32, (H64 @ Q).astype(np.float32)):
        assert abs(vci(ClassStats.from_features(H, y, 4)) - exact) < 1e-5  # float32 error of the kept directions
    # the same float32 numbers handed over as float64: the user said they are exact, so the noise is inverted
    wrong = vci(ClassStats.from_features(H32.astype(np.float64), y, 4))
    assert abs(wrong - exact) > 1e-4  # 9e-4: 90× the float32 tolerance above
    # merged statistics keep the coarsest precision
    a = ClassStats.from_features(H32[:200], y[:200], 4)
    b = ClassStats.from_features(H64[200:], y[200:], 4)
    assert a.merge(b).input_eps == b.merge(a).input_eps == float(np.finfo(np.float32).eps)
