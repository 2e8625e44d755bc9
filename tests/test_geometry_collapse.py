"""NC1–NC4 and CDNV (theory.geometry.collapse_nc): simplex ETF, exact collapse, imbalanced hand computations."""
from __future__ import annotations

import numpy as np
import pytest

from theory.collapse import ClassStats, fuzziness, vci
from theory.geometry import cdnv, nc1, nc2, nc3, nc4


def etf_means(K=4, p=6, seed=0, radius=3.0, centre=7.0):
    rng = np.random.default_rng(seed)
    E = (np.eye(K) - 1.0 / K) * np.sqrt(K / (K - 1.0))  # rows: a simplex ETF (unit norm, cos −1/(K−1))
    Q, _ = np.linalg.qr(rng.standard_normal((p, K)))
    return radius * E @ Q.T + centre


def ncc_classifier(M):
    """The nearest-class-centre rule as an affine classifier: W = μ_k − μ̄, b_k = −w_kᵀμ̄ − ½‖μ_k − μ̄‖²."""
    c = M.mean(0)
    W = M - c
    return W, -(W @ c) - 0.5 * np.sum(W * W, axis=1)


COUNTS = [5, 9, 3, 7]


def test_simplex_etf_at_exact_collapse():
    M = etf_means()
    y = np.repeat(np.arange(4), COUNTS)  # imbalanced: the class weighting still sees the ETF
    H = M[y]
    assert nc1(H, y) < 1e-28 and nc1(H, y, "sample") < 1e-28  # rounding of the class means only
    d = nc2(H, y)
    assert d["cos_mean"] == pytest.approx(-1 / 3, abs=1e-14)
    for k in ("equinorm", "cos_std", "equiangularity", "etf_distance"):
        assert d[k] == pytest.approx(0.0, abs=1e-14), k
    # the sample-weighted centre is not the ETF's centre when classes are imbalanced
    assert nc2(H, y, "sample")["etf_distance"] > 0.05
    W, b = ncc_classifier(M)
    r = nc3(H, y, W, b)
    assert r["duality"] == pytest.approx(0, abs=1e-14) and r["bias_gap"] == pytest.approx(0, abs=1e-14)
    assert r["scale"] == pytest.approx(1.0, rel=1e-12)
    assert nc4(H + 0.1 * np.random.default_rng(1).standard_normal(H.shape), y, W, b) == 0.0


def test_classifier_bias_is_not_dropped():
    M = etf_means(K=5, p=6, centre=0.0)
    M = M * np.array([1, 1.4, 0.6, 1.1, 0.8])[:, None] + 20.0  # unequal norms, far from the origin
    y = np.repeat(np.arange(5), 30)
    H = M[y] + 0.4 * np.random.default_rng(2).standard_normal((150, 6))
    W, b = ncc_classifier(M)
    assert nc4(H, y, W, b) < nc4(H, y, W, np.zeros(5))  # without its bias the rule disagrees with the NCC
    assert nc4(H, y, W, np.zeros(5)) > 0.2
    assert nc3(H, y, W, np.zeros(5))["bias_gap"] > 0.5 > nc3(H, y, W, b)["bias_gap"]
    with pytest.raises(ValueError, match="b: the classifier's bias is required"):
        nc4(H, y, W, None)
    with pytest.raises(ValueError, match=r"W: expected shape \(K, p\)"):
        nc3(H, y, W.T, b)


def hand_nc1(H, y, weighting):
    K = y.max() + 1
    mus = np.array([H[y == k].mean(0) for k in range(K)])
    n = np.bincount(y)
    if weighting == "sample":
        w = n / n.sum()
        Sw = sum(np.outer(h - mus[k], h - mus[k]) for h, k in zip(H, y)) / len(y)
    else:
        w = np.full(K, 1.0 / K)
        Sw = sum(np.cov(H[y == k].T, bias=True) for k in range(K)) / K
    c = w @ mus
    Sb = sum(w[k] * np.outer(mus[k] - c, mus[k] - c) for k in range(K))
    return np.trace(Sw @ np.linalg.pinv(Sb)) / K


@pytest.mark.parametrize("weighting", ["sample", "class"])
def test_nc1_imbalanced_against_hand_computation(weighting):
    rng = np.random.default_rng(3)
    M = etf_means(K=4, p=6) + rng.standard_normal((4, 6))
    y = np.repeat(np.arange(4), [40, 7, 19, 3])
    H = M[y] + rng.standard_normal((69, 6)) * np.array([0.3, 1.0, 0.5, 2.0])[y][:, None]  # class-dependent spread
    assert nc1(H, y, weighting) == pytest.approx(hand_nc1(H, y, weighting), rel=1e-10)
    assert nc1(H + 1e6, y, weighting) == pytest.approx(hand_nc1(H, y, weighting), rel=1e-8)
    assert nc1(1e150 * H, y, weighting) == pytest.approx(hand_nc1(H, y, weighting), rel=1e-10)


def test_the_two_weightings_differ_and_mixing_them_is_not_either():
    rng = np.random.default_rng(4)
    M = etf_means(K=3, p=4) + rng.standard_normal((3, 4))
    y = np.repeat(np.arange(3), [60, 5, 12])
    H = M[y] + rng.standard_normal((77, 4)) * np.array([0.2, 2.0, 0.7])[y][:, None]
    a, b = nc1(H, y, "sample"), nc1(H, y, "class")
    assert abs(a - b) > 0.1 * max(a, b)
    # the known bug: Σ_W sample-weighted but Σ_B about the unweighted mean of means, with 1/K weights
    mus = np.array([H[y == k].mean(0) for k in range(3)])
    Sw = sum(np.outer(h - mus[k], h - mus[k]) for h, k in zip(H, y)) / len(y)
    Sb = np.cov(mus.T, bias=True)
    mixed = np.trace(Sw @ np.linalg.pinv(Sb)) / 3
    assert abs(mixed - a) > 1e-3 * a and abs(mixed - b) > 1e-3 * b


def test_nc1_sample_weighting_is_fuzziness_over_k_and_streams():
    rng = np.random.default_rng(5)
    y = np.repeat(np.arange(5), [10, 20, 30, 15, 8])
    H = rng.standard_normal((5, 8))[y] + 0.5 * rng.standard_normal((83, 8))
    st = ClassStats.from_features(H, y, batch=11)
    assert nc1(st, weighting="sample") == pytest.approx(nc1(H, y, "sample"), rel=1e-12)
    assert nc1(H, y, "sample") == pytest.approx(fuzziness(H, y) / 5, rel=1e-12)
    with pytest.raises(ValueError, match="only weighting='sample'"):
        nc1(st)
    with pytest.raises(ValueError, match="y: give labels only"):
        nc1(st, y, weighting="sample")


def test_vci_invariant_under_invertible_linear_maps():
    rng = np.random.default_rng(6)
    y = np.repeat(np.arange(4), 25)
    H = rng.standard_normal((4, 5))[y] + 0.7 * rng.standard_normal((100, 5))
    A = rng.standard_normal((5, 5)) + 3 * np.eye(5)
    assert vci(H @ A.T + 5.0, y) == pytest.approx(vci(H, y), rel=1e-10)
    assert nc1(H @ A.T, y) != pytest.approx(nc1(H, y), rel=1e-3)  # NC1 is not invariant to such maps


def test_cdnv_closed_form():
    # two classes: ±d/2·e_1 with within-class points at ±s on e_2: Var = s², CDNV = 2s²/(2d²) = s²/d²
    s, d = 0.5, 4.0
    H = np.array([[-d / 2, s], [-d / 2, -s], [d / 2, s], [d / 2, -s]]) + 1e6
    y = np.array([0, 0, 1, 1])
    r = cdnv(H, y)
    assert r["mean"] == pytest.approx(s ** 2 / d ** 2, rel=1e-9)
    assert r["matrix"][0, 1] == r["matrix"][1, 0] == pytest.approx(s ** 2 / d ** 2, rel=1e-9)
    with pytest.raises(ValueError, match="classes 0 and 1 have the same mean"):
        cdnv(np.array([[0.0], [1.0], [0.5], [0.5]]), y)


def test_errors_and_no_mutation():
    H = np.random.default_rng(0).standard_normal((6, 3))
    y = np.array([0, 1, 0, 1, 0, 1])
    with pytest.raises(ValueError, match="y: class 2 has no samples"):
        nc1(H, y, n_classes=3)
    with pytest.raises(ValueError, match="weighting"):
        nc1(H, y, "balanced")
    with pytest.raises(ValueError, match="y: label"):
        nc2(H, np.array([0, 1, 0, 1, 0, 5]), n_classes=2)
    with pytest.raises(ValueError, match="nc1: Σ_B = 0"):
        nc1(np.ones((4, 2)), np.array([0, 1, 0, 1]))
    with pytest.raises(ValueError, match="rank"):
        nc1(H, y, rank=2)
    with pytest.raises(ValueError, match="y: labels are required"):
        nc1(H)
    keep, ky = H.copy(), y.copy()
    W, b = np.ones((2, 3)), np.zeros(2)
    nc1(H, y), nc2(H, y), nc3(H, y, W, b), nc4(H, y, W, b), cdnv(H, y)
    assert np.array_equal(H, keep) and np.array_equal(y, ky)
