"""theory.collapse.stats: ClassStats stores each feature column in its own power-of-two frame — the scatter
read back in the features' units, streaming and merging across frames, unscaling at the float64 range's edge —
and one-sample, balanced, partially seen and mislabelled data."""
from __future__ import annotations

import numpy as np
import pytest

import theory.collapse as vc


# ---- the stored scatter in power-of-two frames, read back in the features' units

def test_scatter_within_is_n_sigma_w_with_columns_at_different_scales():
    """scatter_within = Σ_k Σ_i (h − μ_k)(h − μ_k)ᵀ = N·Σ_W in the features' units, entry (i, j) carrying both
    columns' units: columns at 2^300, 1 and 2^-300 (outside the store's band: three stored exponents), against a
    direct numpy sum."""
    from theory.collapse.stats import ClassStats
    rng = np.random.default_rng(4)
    y = np.repeat(np.arange(3), 8)
    H = (rng.standard_normal((24, 3)) + rng.standard_normal((3, 3))[y]) * np.ldexp(1.0, [300, 0, -300])
    C = H - np.array([H[y == k].mean(axis=0) for k in range(3)])[y]
    np.testing.assert_allclose(ClassStats.from_features(H, y).scatter_within, C.T @ C, rtol=1e-12, atol=0)


@pytest.mark.parametrize("k, spread", [(500, 1e-6), (510, 1e-6), (-510, 1.0)])
def test_scatter_of_features_at_2_to_the_minus_510_is_exact(k, spread):
    """Features scaled by 2⁻ᵏ (~1e−151, 1e−154 with a within-class spread of 1e−6 of the means; ~1e154 with a
    spread of 1): the power-of-two scaling is exact, so the stored scatter, read back in the features' frame,
    must equal that of the unscaled features times 2⁻²ᵏ. Stored raw, the small scatter's entries (~2⁻¹⁰⁵⁰) would
    be subnormal and lose up to half their digits, the large one's (60·2^1020) would overflow; the store keeps
    every column within [2^−BAND, 2^BAND] (BAND = 256) to avoid exactly this."""
    from theory.collapse.stats import ClassStats
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 20)
    H = rng.standard_normal((3, 4))[y] + spread * rng.standard_normal((60, 4))
    ref = ClassStats.from_features(H, y).sigma_w()
    _, Sw, e = ClassStats.from_features(np.ldexp(H, -k), y).scaled()
    np.testing.assert_allclose(np.ldexp(Sw, e[:, None] + e[None, :] + 2 * k), ref, rtol=1e-12, atol=0)


def _assert_same_stats(st, ref):
    """Means and Σ_W (VC Eq 1) of two ClassStats equal to rounding, Σ_W compared in the features' units through
    each store's own power-of-two frame (so that no unscaled covariance has to fit in float64)."""
    np.testing.assert_allclose(st.means, ref.means, rtol=1e-13, atol=0)
    (_, S1, e1), (_, S2, e2) = st.scaled(), ref.scaled()
    np.testing.assert_allclose(np.ldexp(S1, e1[:, None] + e1[None, :]), np.ldexp(S2, e2[:, None] + e2[None, :]),
                               rtol=1e-13, atol=0)


@pytest.mark.parametrize("a, b", [(250, 260), (-250, -260), (250, -300)])
def test_streaming_and_merging_across_the_band_equal_one_pass(a, b):
    """Half the samples at 2^a, half at 2^b, streamed in either order and merged: the store keeps every column
    within [2^−256, 2^256] (BAND) by re-basing it by powers of two, with data already stored, in the unit of the
    largest |value| seen so far. 2^±250 is inside the band (stored as is), 2^±260 outside (re-based after the
    first batch); a batch at 2^−300 after 2^250 data must leave the column in the 2^250 frame (re-basing on the
    small batch alone would shift the stored data to ~2^550 and overflow its scatter). Chan's merge must give
    the one-pass statistics to rounding."""
    from theory.collapse.stats import ClassStats
    rng = np.random.default_rng(1)
    y = np.tile(np.arange(3), 10)
    H = rng.standard_normal((30, 3)) + np.arange(3)[y][:, None]
    H[:15], H[15:] = np.ldexp(H[:15], a), np.ldexp(H[15:], b)
    one = ClassStats.from_features(H, y)
    for first, second in ((slice(0, 15), slice(15, 30)), (slice(15, 30), slice(0, 15))):
        _assert_same_stats(ClassStats(3, 3).update(H[first], y[first]).update(H[second], y[second]), one)
    # a merge of two stores in different frames, then one more batch
    merged = ClassStats(3, 3).update(H[:15], y[:15]).merge(ClassStats(3, 3).update(H[15:24], y[15:24]))
    _assert_same_stats(merged.update(H[24:], y[24:]), one)


def test_unscale_keeps_the_smallest_normal_and_rejects_below():
    """stats.unscale: x·2^e exactly; a largest entry equal to the smallest normal (2^−1022) is kept, one below it
    (subnormal: precision lost) is an error naming the quantity."""
    from theory.collapse.stats import unscale

    assert unscale(np.array([1.0, 0.5]), -1022, "q")[0] == np.finfo(float).tiny
    with pytest.raises(ValueError, match="q: underflows float64"):
        unscale(np.array([1.0, 0.5]), -1023, "q")


def test_scalar_metrics_are_builtin_floats_at_any_scale():
    """Scalars of the metrics are Python floats (as their annotations say; unscale returns float for 0-d), at scale
    1 and 2^-300 (where they pass through the power-of-two unscaling)."""
    import theory.collapse as vc
    rng = np.random.default_rng(3)
    y = np.repeat(np.arange(3), 10)
    H = rng.standard_normal((30, 4)) + 3.0 * rng.standard_normal((3, 4))[y]
    for X in (H, np.ldexp(H, -300)):
        assert type(vc.squared_distance(X, y)) is float
        assert all(type(v) is float for k, v in vc.vb_split(X, y).items() if k != "rank")


# ---- merging, one sample, balanced classes, labels outside the classes

def test_merge_of_two_stats_missing_the_same_class_then_more_data():
    """merge takes only the classes the other side has seen: two halves without class 2, merged, then class 2's
    samples, give the statistics of all the data (an unseen class must stay empty, not 0/0)."""
    from theory.collapse.stats import ClassStats
    rng = np.random.default_rng(6)
    y = np.repeat(np.arange(3), 6)
    H = rng.standard_normal((18, 3)) + 2.0 * rng.standard_normal((3, 3))[y]
    a = ClassStats(3, 3).update(H[:6], y[:6])
    b = ClassStats(3, 3).update(H[6:12], y[6:12])
    m = a.merge(b).update(H[12:], y[12:])
    ref = ClassStats.from_features(H, y)
    np.testing.assert_allclose(m.means, ref.means, rtol=1e-13)
    np.testing.assert_allclose(m.sigma_w(), ref.sigma_w(), rtol=1e-12)


def test_class_stats_of_one_sample():
    """One sample is valid input for the accumulator (K = 2, class 0 empty), but not for a metric."""
    from theory.collapse.stats import ClassStats
    one = ClassStats.from_features(np.ones((1, 3)), np.array([1]))
    assert one.n == 1 and one.counts.tolist() == [0, 1]
    with pytest.raises(ValueError, match="class 0 has no samples"):
        one.sigma_w()


def test_balanced_means_equal_class_counts():
    """VC Thm 5.1's balanced case (the closed form of the probe loss uses it): all n_k equal."""
    from theory.collapse.stats import ClassStats
    assert ClassStats.from_features(np.ones((4, 2)), np.array([0, 1, 0, 1])).balanced is True
    assert ClassStats.from_features(np.ones((5, 2)), np.array([0, 1, 0, 1, 1])).balanced is False


def test_labels_just_outside_the_classes_are_errors():
    """check_labels: −1 (a padding label) and K are outside [0, K): named errors, never a silent wrap-around."""
    H = np.random.default_rng(2).standard_normal((6, 2))
    for bad in (-1, 3):
        y = np.array([0, 1, 2, 0, 1, bad])
        with pytest.raises(ValueError, match=rf"label {bad} is outside \[0, 3\)"):
            vc.ClassStats(2, 3).update(H, y)
