"""theory.multiview (FG's closed forms): the lucky neurons of Prop 1 and the bias threshold, the paper's widths
and c_b, the ideal linear classifier's error (App B.2), the regime table (B.3), and the argument ranges."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import theory.multiview as mv


# ---- the lucky neurons (FG Prop 1): set sizes, c_b for a lucky count, the paper's width and c_b

def test_lucky_set_sizes_smallest_d():
    """d = 2 has log d < 1/log⁵ d (τ₋ undefined), d = 3 is the smallest valid patch dimension."""
    with pytest.raises(ValueError, match="d = 2 is too small"):
        mv.lucky_set_sizes(10, 2, 1.0)
    out = mv.lucky_set_sizes(10, 3, 1.0)
    assert 0 < out["S_star"] < out["S"] < 10


@pytest.mark.parametrize("m, d, c_b", [(800, 100, 1.17), (10, 3, 1.0), (50, 7, 4.1)])
def test_lucky_set_sizes_are_the_prop1_expectations(m, d, c_b):
    """FG Prop 1 steps 1–2: E|S| = m·Q(τ₋), E|S*| = m·Q(τ₊)(1 − Q(τ₋))^{d−1} (the other d − 1 coordinates of an
    orthonormal V all below τ₋), τ± = √(c_b(log d ± 1/log⁵ d)); Q from scipy's normal survival function."""
    from scipy.stats import norm
    eps = math.log(d) ** -5
    t_lo, t_hi = math.sqrt(c_b * (math.log(d) - eps)), math.sqrt(c_b * (math.log(d) + eps))
    out = mv.lucky_set_sizes(m, d, c_b)
    assert out["S"] == pytest.approx(m * norm.sf(t_lo), rel=1e-12)
    assert out["S_star"] == pytest.approx(m * norm.sf(t_hi) * norm.cdf(t_lo) ** (d - 1), rel=1e-12)


def test_c_b_for_lucky_solves_the_lucky_neuron_equation():
    """FG (our choice of the free pair, theory/multiview.py): c_b solves m·Q(√(c_b log d)) = lucky, for any
    lucky in (0, m/2) — fewer than one expected lucky neuron included."""
    for m, lucky, d in ((800, 8.0, 100), (100, 0.5, 50), (5, 2.4, 3), (1, 0.25, 100)):
        c_b = mv.c_b_for_lucky(m, lucky, d)
        assert m * float(mv.gaussian_tail(math.sqrt(c_b * math.log(d)))) == pytest.approx(lucky, rel=1e-10)
        sizes = mv.lucky_set_sizes(m, d, c_b)  # τ₋ < √(c_b log d) < τ₊ and the exclusivity factor is < 1
        assert sizes["S_star"] < lucky < sizes["S"]
        assert sizes["tau_lo"] < mv.bias_threshold(c_b, d) < sizes["tau_hi"]
        assert m * float(mv.gaussian_tail(mv.bias_threshold(c_b, d))) == pytest.approx(lucky, rel=1e-10)


def test_paper_width_and_c_b():
    """FG B.3 items 5–6, Prop 1/2: m = d^{2+2c₀} (coarse), d^{1+2c₀} (fine); c_b = 4 + 2c₀ / 2 + 2c₀."""
    assert mv.paper_width(100, 0.05) == pytest.approx(100**2.1, rel=1e-14)
    assert mv.paper_width(100, 0.05, fine=True) == pytest.approx(100**1.1, rel=1e-14)
    assert mv.paper_width(1, 0.07) == 1.0 and mv.paper_width(3, 0.05) == pytest.approx(3**2.1, rel=1e-14)
    assert mv.paper_c_b(0.05) == pytest.approx(4.1) and mv.paper_c_b(0.05, fine=True) == pytest.approx(2.1)
    # item 5 gives no value of c₀: ours is 0.05 by default, the same in every function that takes it
    assert mv.paper_c_b() == mv.paper_c_b(0.05) and mv.paper_c_b(fine=True) == mv.paper_c_b(0.05, fine=True)
    assert mv.paper_width(100) == mv.paper_width(100, 0.05)
    assert mv.paper_width(100, fine=True) == mv.paper_width(100, 0.05, fine=True)
    for bad in (0.0, 0.1, -0.01):
        with pytest.raises(ValueError, match="c0"):
            mv.paper_width(100, bad)


# ---- the ideal linear classifier's error (FG App B.2)

def test_linear_error_default_has_no_feature_strength_noise():
    """FG App B.2: ι defaults to 0 (α ≡ 1); a positive ι only adds signal variance, so the error grows."""
    base = mv.linear_error(16, 3.0, 2, 0.1)
    assert base == mv.linear_error(16, 3.0, 2, 0.1, iota=0.0)
    assert mv.linear_error(16, 3.0, 2, 0.1, iota=0.5) > base


def test_linear_error_noiseless_limit_is_half_the_featureless_mass():
    """FG App B.2: as σ_ζ → 0 every sample with a feature patch is classified right (Q(n/0⁺) = 0), and one with
    none (n = 0) is a coin flip: the error tends to ½·P(C + S = 0)."""
    _, total = mv.patch_count_pmf(4, 1.0)
    assert total[0] > 0.01
    assert mv.linear_error(4, 1.0, 1, 1e-9) == pytest.approx(0.5 * total[0], rel=1e-12)


def test_linear_error_matches_a_patchwise_monte_carlo():
    """FG App B.2's ideal linear classifier, simulated patch by patch: P patches in R^(2+2k) with orthonormal
    features, u = v₊ + Σ_j v₊,ⱼ − v₋ − Σ_j v₋,ⱼ, n ~ the feature-patch count pmf, every patch
    carrying N(0, σ_ζ² I) noise, feature strengths α ~ U[1 − ι, 1 + ι]; error = P(F₊ − F₋ < 0), a coin flip when
    n = 0. linear_error agrees within 4 Monte-Carlo standard deviations."""
    rng = np.random.default_rng(12)
    P, s, k, N = 4, 1.5, 1, 400_000
    d = 2 + 2 * k
    u = np.concatenate([np.ones(1 + k), -np.ones(1 + k)])  # in the basis (v₊, v₊,ⱼ, v₋, v₋,ⱼ)
    _, total = mv.patch_count_pmf(P, s)
    for sz, iota in ((0.3, 0.0), (0.1, 0.6)):  # noise-dominated; the feature strengths α ~ U[1 − ι, 1 + ι] matter
        n = rng.choice(P + 1, size=N, p=total)
        X = sz * rng.standard_normal((N, P, d))
        feat = np.arange(P)[None, :] < n[:, None]  # the first n patches carry a '+' feature (v₊ or a v₊,ⱼ)
        alpha = rng.uniform(1 - iota, 1 + iota, (N, P))
        X[:, :, 0] += feat * alpha  # ⟨u, v⟩ = 1 for every '+' feature: v₊ stands for all of them
        F = (X @ u).sum(axis=1)
        vals = np.where(n > 0, F < 0, 0.5)
        want = mv.linear_error(P, s, k, sz, iota)
        assert abs(vals.mean() - want) < 4 * vals.std() / math.sqrt(N), (sz, iota, vals.mean(), want)


def test_linear_error_planted_is_the_one_patch_noise_formula():
    """FG App B.2's negative control: the planted claim lets only one patch's noise in (P → 1 in the noise
    variance, the signal variance nι²/3 unchanged): Σ_n pmf(n)·Q(n/√(σ_ζ²(2+2k) + nι²/3)), ½ at n = 0."""
    P, s, k, sz, iota = 8, 3.0, 2, 0.4, 0.3
    _, total = mv.patch_count_pmf(P, s)
    n = np.arange(P + 1)
    q = np.where(n > 0, stats.norm.sf(n / np.sqrt(sz**2 * (2 + 2 * k) + n * iota**2 / 3)), 0.5)
    assert mv.linear_error(P, s, k, sz, iota, planted=True) == pytest.approx(float(total @ q), rel=1e-12)


# ---- the regime table (FG B.3): each row's paper value and its inside flag

def test_regime_table_sigma0_bound():
    """FG B.3 item 14: σ0 ≤ 1/(d³ s log d); the table shows that bound and flags σ0 inside iff it holds."""
    d, s = 100, 3.0
    bound = 1 / (d**3 * s * math.log(d))

    def row(sigma0):
        rows = mv.regime_table(d, 16, s, 8, 800, 100, 8.0, 0.5, sigma0, sigma0)
        return next(r for r in rows if r["parameter"] == "sigma0")

    r = row(0.5 * bound)
    assert float(r["paper value at this d"]) == pytest.approx(bound, rel=0.06) and r["inside"] is True
    assert row(2.0 * bound)["inside"] is False


def test_regime_table_bias_row_is_minus_sigma0_times_the_threshold():
    """FG B.3 item 6: the initial bias b⁽⁰⁾ = −σ0·√(c_b log d), shown for our c_b and the paper's 4 + 2c0."""
    d, sigma0, c0 = 100, 1e-7, 0.05
    rows = mv.regime_table(d, 16, 3.0, 8, 800, 100, 8.0, 0.5, sigma0, sigma0, c0, c_b_coarse=2.5, c_b_fine=1.5)
    r = next(r for r in rows if r["parameter"].startswith("bias"))
    assert r["value"] == pytest.approx(-sigma0 * math.sqrt(2.5 * math.log(d)), rel=1e-4)
    assert float(r["paper value at this d"]) == pytest.approx(-sigma0 * math.sqrt((4 + 2 * c0) * math.log(d)),
                                                               rel=1e-3)
    assert r["inside"] is False


def test_regime_table_item_13_is_inclusive_at_equality():
    """FG B.3 item 13, P σ_ζ ≥ polylog d read as ≥ log d, inclusive: at d = 64 (√d = 8), P = 64 and
    σ_ζ√d = log(64)/8 give P σ_ζ = log d exactly in binary (powers of two only)."""
    import math
    import theory.multiview as mv
    L = math.log(64)
    rows = {r["parameter"]: r for r in mv.regime_table(d=64, P=64, s=3.0, k=8, m_coarse=800, m_fine=100, lucky=8.0,
                                                       noise_norm=L / 8, sigma0=1e-7, eta=1e-7)}
    assert rows["P"]["inside"] is True


def test_regime_table_every_row_against_fg_b3():
    """FG B.3 read with O(·) constants 1 and polylog d = log d: each row shows the paper's value at this d and
    flags ours inside exactly when the condition holds (checked on both sides of every bound)."""
    d, c0 = 100, 0.05
    L = math.log(d)

    def rows(**kw):
        a = dict(d=d, P=16, s=3.0, k=8, m_coarse=800, m_fine=100, lucky=8.0, noise_norm=0.5, sigma0=1e-7, eta=1e-7)
        a.update(kw)
        return {r["parameter"]: r for r in mv.regime_table(**a, c0=c0)}

    base = rows(iota_lower=0.25, iota_upper=0.5, hard_noise_norm=2.0, steps=100, batch=64)
    assert base["d"]["inside"] == "n/a" and base["steps"]["inside"] == "n/a" and base["steps"]["value"] == 100
    # item 13: P σ_ζ ≥ log d  (σ_ζ = noise_norm / √d)
    assert base["P"]["paper value at this d"] == f"P σ_ζ = {16 * 0.5 / 10:.2g} vs log d = {L:.2f}"
    assert base["P"]["inside"] is False and rows(P=100, noise_norm=0.99 * L / 10)["P"]["inside"] is False
    assert rows(P=100, noise_norm=1.001 * L / 10)["P"]["inside"] is True  # P·σ_ζ just above log d
    # item 10: s ≥ log^15 d
    assert base["s"]["paper value at this d"] == f"log^15 d = {L ** 15:.1e}"
    assert base["s"]["inside"] is False and rows(s=L ** 15)["s"]["inside"] is True
    assert rows(s=100.0)["s"]["inside"] is False  # 100 ≪ log^15 d ≈ 8.8e9
    assert rows(s=0.5 * L ** 15)["s"]["inside"] is False  # the exponent is 15: log^14 d ≈ 1.9e9 would let it in
    # item 14: σ0 ≤ 1/(d³ s log d), inclusive
    assert rows(sigma0=1 / (d ** 3 * 3.0 * L), eta=1 / (d ** 3 * 3.0 * L))["sigma0"]["inside"] is True
    # item 4: log d ≤ k ≤ d^0.4 (4.61 ≤ k ≤ 6.31 at d = 100) and k ≥ s·log⁵ d (k bounded below by a polylog)
    assert base["k"]["paper value at this d"] == f"[max({L:.2f}, s·log⁵ d = {3.0 * L ** 5:.0f}), {d ** 0.4:.2f}]"
    assert [rows(k=k, s=1e-3)["k"]["inside"] for k in (4, 5, 6, 7)] == [False, True, True, False]
    assert rows(k=5)["k"]["inside"] is False  # s = 3: s·log⁵ d = 6214 > 5 (the item-4 part the old row reversed)
    assert rows(k=5, s=5 / L ** 5)["k"]["inside"] is True and rows(k=5, s=5.01 / L ** 5)["k"]["inside"] is False
    assert rows(d=32, k=4, s=1e-3)["k"]["inside"] is True  # 32^0.4 = 4 exactly: the upper edge is inclusive
    assert rows(P=1, k=1)["P"]["value"] == 1 and rows(P=1, k=1)["k"]["inside"] is False  # the smallest valid P, k
    assert rows(d=2)["d"]["value"] == 2  # and d (log d > 0)
    for bad in (dict(P=0), dict(k=0), dict(d=1)):
        with pytest.raises(ValueError, match=next(iter(bad))):
            rows(**bad)
    # Prop 1–2 widths and item 6's c_b = 4 + 2c0 (coarse), 2 + 2c0 (fine)
    assert base["m_coarse"]["paper value at this d"] == f"{d ** (2 + 2 * c0):.0f}"
    assert base["m_fine"]["paper value at this d"] == f"{d ** (1 + 2 * c0):.0f}"
    # Θ(·) read as one decade each way (as item 14), inclusive: d^2.1 = 15849, d^1.1 = 158.5 at d = 100
    wc, wf = d ** (2 + 2 * c0), d ** (1 + 2 * c0)
    assert [rows(m_coarse=int(r * wc))["m_coarse"]["inside"] for r in (0.09, 0.11, 9.9, 10.1)] == \
        [False, True, True, False]
    assert [rows(m_fine=int(r * wf), lucky=2.0)["m_fine"]["inside"] for r in (0.09, 0.11, 9.9, 10.1)] == \
        [False, True, True, False]
    assert base["m_coarse"]["inside"] is False and base["m_fine"]["inside"] is True  # 800 < 1585; 100 ∈ [15.8, 1585]
    # the upper edge is inclusive: at d = 256, c0 = 1/16 the widths are powers of two (2^17, 2^9), so 10·W is an
    # integer a width can equal
    edge = {r["parameter"]: r for r in mv.regime_table(
        d=256, P=16, s=3.0, k=8, m_coarse=10 * 2**17, m_fine=10 * 2**9, lucky=8.0, noise_norm=0.5, sigma0=1e-7,
        eta=1e-7, c0=0.0625)}
    assert edge["m_coarse"]["inside"] is True and edge["m_fine"]["inside"] is True
    assert base["c_b_coarse"]["paper value at this d"] == f"{4 + 2 * c0:.2f}"
    assert base["c_b_fine"]["paper value at this d"] == f"{2 + 2 * c0:.2f}"
    on = rows(c_b_coarse=4 + 2 * c0, c_b_fine=2 + 2 * c0)
    tau = math.sqrt((4 + 2 * c0) * L)  # the bias row shows −σ0 τ to 4 significant digits
    assert on["bias b⁽⁰⁾ (coarse)"]["value"] == float(f"{-1e-7 * tau:.4g}")
    # α′ rows only when both ι_lower and ι_upper are given
    assert "α′ lower ι_lower" not in rows(iota_lower=0.25) and "α′ upper: s·ι_upper" not in rows(iota_upper=0.5)
    assert on["c_b_coarse"]["inside"] is True and on["c_b_fine"]["inside"] is True and on["bias b⁽⁰⁾ (coarse)"]["inside"]
    # "equals the paper's c_b" is read to 1e−9 (a c_b from m·Q = lucky is an isf, never exact): every c_b row, both sides
    for dc, inside in ((0.5e-9, True), (-0.5e-9, True), (1.5e-9, False), (-1.5e-9, False)):
        near = rows(c_b_coarse=4 + 2 * c0 + dc, c_b_fine=2 + 2 * c0 + dc)
        assert [near[r]["inside"] for r in ("c_b_coarse", "c_b_fine", "bias b⁽⁰⁾ (coarse)")] == [inside] * 3, dc
    assert rows(c_b_coarse=4.12345, c_b_fine=2.12345)["c_b_coarse"]["value"] == 4.123  # displayed to 3 decimals
    assert rows(c_b_coarse=4.12345, c_b_fine=2.12345)["c_b_fine"]["value"] == 2.123
    off = rows(c_b_coarse=4.2, c_b_fine=2.2)
    assert off["c_b_coarse"]["value"] == 4.2 and not off["c_b_coarse"]["inside"] and not off["c_b_fine"]["inside"]
    # item 14: η/σ0 ∈ [0.1, 10] (Θ(1) read as one decade each way), inclusive
    assert [rows(eta=r * 1e-7)["eta"]["inside"] for r in (0.09, 0.1, 10.0, 10.5)] == [False, True, True, False]
    assert rows(eta=2e-7)["eta"]["paper value at this d"] == "η/σ0 = 2"
    # item 7: ι ≤ 1/log d
    assert base["iota"]["paper value at this d"] == f"{1 / L:.3f}"
    assert rows(iota=1 / L)["iota"]["inside"] is True and rows(iota=1.01 / L)["iota"]["inside"] is False
    # item 11: σ_ζ√d = 1/log^10 d (inside up to 1.5×)
    assert base["noise norm σ_ζ√d"]["paper value at this d"] == f"{L ** -10:.1e}"
    assert rows(noise_norm=1.5 * L ** -10)["noise norm σ_ζ√d"]["inside"] is True
    assert rows(noise_norm=1.6 * L ** -10)["noise norm σ_ζ√d"]["inside"] is False
    assert base["noise norm σ_ζ√d"]["inside"] is False
    # item 8: ι_lower ≥ 1/log⁴ d, s·ι_upper ≤ 1/log d
    assert base["α′ lower ι_lower"]["paper value at this d"] == f"{L ** -4:.4f}" and base["α′ lower ι_lower"]["inside"]
    assert not rows(iota_lower=0.9 * L ** -4, iota_upper=0.5)["α′ lower ι_lower"]["inside"]
    # the displayed s·ι_upper is rounded to 4 decimals (3 × 0.123456 = 0.370368)
    assert rows(iota_lower=0.01, iota_upper=0.123456)["α′ upper: s·ι_upper"]["value"] == 0.3704
    up = base["α′ upper: s·ι_upper"]
    assert up["value"] == 1.5 and up["paper value at this d"] == f"{1 / L:.3f}" and up["inside"] is False
    assert rows(iota_lower=0.01, iota_upper=1 / (3.0 * L))["α′ upper: s·ι_upper"]["inside"] is True
    lo, hi = L ** -4 * (1 - 1e-9), (1 + 1e-9) / L  # the slack edges, inclusive (s = 2: s·ι exact in binary)
    assert rows(iota_lower=lo, iota_upper=0.5)["α′ lower ι_lower"]["inside"] is True
    assert rows(iota_lower=lo * (1 - 0.5e-9), iota_upper=0.5)["α′ lower ι_lower"]["inside"] is False
    assert rows(s=2.0, iota_lower=0.01, iota_upper=hi / 2)["α′ upper: s·ι_upper"]["inside"] is True
    # half the slack again beyond each edge is outside (a slack of 2e−9 would take it in)
    assert rows(s=2.0, iota_lower=0.01, iota_upper=hi * (1 + 0.5e-9) / 2)["α′ upper: s·ι_upper"]["inside"] is False
    # item 12 (lower edge) and item 15
    assert base["big noise σ_ζ*√d"]["inside"] is False and rows(hard_noise_norm=L)["big noise σ_ζ*√d"]["inside"]
    edge = L * (1 - 1e-9)  # the bounds carry a 1e−9 relative slack for rounding, inclusive
    assert rows(hard_noise_norm=edge)["big noise σ_ζ*√d"]["inside"] is True
    assert rows(hard_noise_norm=edge * (1 - 0.5e-9))["big noise σ_ζ*√d"]["inside"] is False
    assert base["batch N"]["paper value at this d"] == f"k d log d = {8 * d * L:.0f}" and not base["batch N"]["inside"]
    assert rows(batch=math.ceil(8 * d * L))["batch N"]["inside"] is True
    assert rows(batch=1000)["batch N"]["inside"] is False  # 1000 < k d log d ≈ 3684
    assert {"α′ lower ι_lower", "big noise σ_ζ*√d", "steps", "batch N"}.isdisjoint(rows())  # optional rows


def test_regime_table_defaults_describe_the_default_experiment():
    """theory.multiview.regime_table's default ι is that of sims' default FG experiment, so a
    table built without them describes the run the package makes by default."""
    import inspect

    from sims.multiview.experiment import DEFAULTS

    sig = inspect.signature(mv.regime_table).parameters
    assert sig["iota"].default == DEFAULTS["iota"]
    rows = mv.regime_table(100, 16, 3.0, 8, 800, 100, 8.0, 0.5, 1e-7, 1e-7)
    assert next(r for r in rows if r["parameter"] == "iota")["value"] == DEFAULTS["iota"]


# ---- argument ranges

def test_multiview_size_and_count_limits_are_named():
    """FG App B.1: P ≥ 1 patches, capped at MAX_P = 10 000 (patch_count_pmf is O(P²): ~9 s at the cap), and
    k ≥ 1 subclasses per class (‖u‖² = 2 + 2k of the linear model); out of range is a ValueError naming both."""
    import theory.multiview as mv
    with pytest.raises(ValueError, match=r"P: must be an integer in \[1, 10000\], got 10001"):
        mv.patch_count_pmf(10_001, 3.0)
    with pytest.raises(ValueError, match=r"k: must be an integer in \[1, "):
        mv.linear_error(16, 3.0, 0, 0.1)
    with pytest.raises(ValueError, match=r"m: must be an integer in \[1, "):  # no neurons: no lucky set
        mv.lucky_set_sizes(0, 100, 1.0)
    for f in (lambda: mv.bias_threshold(1.0, 1), lambda: mv.c_b_for_lucky(800, 8.0, 1)):
        with pytest.raises(ValueError, match=r"d: must be an integer in \[2, "):  # log d = 0 at d = 1
            f()
    with pytest.raises(ValueError, match=r"P: must be an integer in \[1, 10000\], got 0"):
        mv.patch_count_pmf(0, 1.0)
    with pytest.raises(ValueError, match=r"s must lie in \(0, P\]"):
        mv.patch_count_pmf(4, 0.0)
    assert mv.bias_threshold(1.0, 2) == pytest.approx(np.sqrt(np.log(2.0)), rel=1e-15)  # d = 2 is valid
    assert mv.c_b_for_lucky(10, 1.0, 2) > 0
    np.testing.assert_array_equal(mv.patch_count_pmf(1, 1.0)[1], [0.0, 1.0])  # P = 1: one common patch
    with pytest.raises(ValueError, match=r"d: must be an integer in \[2, "):
        mv.lucky_set_sizes(10, 1, 1.0)
    with pytest.raises(ValueError, match=r"d: must be an integer in \[3, "):  # as lucky_set_sizes (τ₋ at d = 2)
        mv.paper_regime(2, 3.0)
    assert mv.paper_regime(3, 3.0)["hard_noise_norm"] == pytest.approx(np.log(3.0), rel=1e-15)
    with pytest.raises(ValueError, match=r"m: must be an integer in \[1, "):
        mv.c_b_for_lucky(0, 0.5, 100)
    with pytest.raises(ValueError, match=r"lucky must lie in \(0, m/2\)"):  # Q(τ) = 1/2 would give τ = 0
        mv.c_b_for_lucky(10, 5.0, 100)
    with pytest.raises(ValueError, match=r"d: must be an integer in \[1, "):
        mv.paper_width(0)
    # s = P is allowed (every patch common, C = P surely): (0, P] is closed at P
    np.testing.assert_array_equal(mv.patch_count_pmf(4, 4.0)[1], [0.0, 0.0, 0.0, 0.0, 1.0])
