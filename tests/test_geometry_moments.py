"""CrossMoments (theory.geometry.moments): one pass, exact merges in any order, offsets, scales, float32."""
from __future__ import annotations

import itertools
import pickle

import numpy as np
import pytest

from theory.geometry import CrossMoments, linear_cka
from theory.geometry.moments import _ORDERS, batch_sums, shift


def data(seed=0, n=300, p=6, q=4, offset=0.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) * np.linspace(0.5, 2, p)
    Y = X[:, :q] @ rng.standard_normal((q, q)) + rng.standard_normal((n, q))
    return X + offset, Y - offset


def test_shift_identities_against_direct_sums():
    rng = np.random.default_rng(1)
    X, Y = rng.standard_normal((20, 3)) + 2, rng.standard_normal((20, 2)) - 1
    cx, cy = rng.standard_normal(3), rng.standard_normal(2)
    got, want = shift(batch_sums(X, Y), 20, cx, cy), batch_sums(X - cx, Y - cy)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-12, atol=1e-11, err_msg=k)


def test_centred_moments_match_two_pass():
    X, Y = data(2, offset=1e3)
    c = CrossMoments.from_data(X, Y, batch=17).centred()
    Xc, Yc = X - X.mean(0), Y - Y.mean(0)
    want, size = batch_sums(Xc, Yc), batch_sums(np.abs(Xc), np.abs(Yc))  # size: the sums without cancellation
    for k in ("cxx", "cyy", "cxy", "uxx", "uyy", "uxy", "uyx", "wxx", "wyy", "wxy"):
        i, j = _ORDERS[k]  # the sum is of order i in x̃ = x·2^-ex and j in ỹ
        got = np.ldexp(c[k], i * c["ex"] + j * c["ey"])
        assert np.max(np.abs(got - want[k])) <= 1e-12 * np.max(size[k]), k


@pytest.mark.parametrize("debiased", [False, True])
def test_stream_equals_two_pass(debiased):
    X, Y = data(3)
    ref = linear_cka(X, Y, debiased)
    m = CrossMoments(6, 4)
    for s in range(0, 300, 23):
        m.update(X[s:s + 23], Y[s:s + 23])
    assert m.n == 300
    assert abs(m.cka(debiased) - ref) <= 1e-12 * abs(ref)


def shards(X, Y, cuts):
    return [CrossMoments.from_data(X[a:b], Y[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]


@pytest.mark.parametrize("offset", [0.0, 1e6])
def test_merge_in_any_order_equals_one_pass(offset):
    X, Y = data(4, offset=offset)
    one = CrossMoments.from_data(X, Y, batch=300)
    parts = shards(X, Y, [0, 1, 40, 41, 150, 299, 300])  # single-row shards included
    refs = {d: one.cka(d) for d in (False, True)}
    for perm in itertools.islice(itertools.permutations(range(len(parts))), 0, 720, 37):
        acc = CrossMoments(6, 4)
        for i in perm:
            acc = acc.merge(parts[i])
        for d in (False, True):
            assert abs(acc.cka(d) - refs[d]) <= 1e-12 * abs(refs[d]), (perm, d)
    tree = (parts[0].merge(parts[1])).merge(parts[2].merge(parts[3]).merge(parts[4].merge(parts[5])))
    assert abs(tree.cka(True) - refs[True]) <= 1e-12 * abs(refs[True])
    np.testing.assert_allclose(tree.covariance("x"), np.cov(X.T), rtol=1e-11, atol=1e-12)


def test_float32_far_from_zero_agrees_with_float64_two_pass():
    X, Y = data(5, n=2000)
    X32, Y32 = (X + 1e6).astype(np.float32), (Y - 1e6).astype(np.float32)
    for d in (False, True):
        ref = linear_cka(X32.astype(np.float64), Y32.astype(np.float64), d)
        got = CrossMoments.from_data(X32, Y32, batch=128).cka(d)
        assert abs(got - ref) <= 1e-9 * abs(ref), d
        # and the float64 two-pass itself is not fooled by the offset (a raw-sums CKA would be)
        assert ref == pytest.approx(linear_cka(X32.astype(np.float64) - 1e6, Y32.astype(np.float64) + 1e6, d),
                                    rel=1e-9)


def test_raw_sums_would_fail_the_offset_test():
    """Negative control: E[X²] − E[X]² at an offset 1e6 loses ~12 digits; the accumulator does not."""
    X, _ = data(6, n=500)
    Xo = X + 1e6
    raw = (Xo.T @ Xo - np.outer(Xo.sum(0), Xo.sum(0)) / 500) / 499
    good = CrossMoments.from_data(Xo, Xo[:, :2], batch=50).covariance("x")
    ref = np.cov(X.T)
    assert np.max(np.abs(raw - ref)) > 1e-6 * np.max(np.abs(ref))
    assert np.max(np.abs(good - ref)) < 1e-9 * np.max(np.abs(ref))


@pytest.mark.parametrize("scale", [1e150, 1e-150])
def test_extreme_scales_stream(scale):
    X, Y = data(7)
    ref = linear_cka(X, Y, True)
    m = CrossMoments(6, 4)
    m.update(X[:5] * scale, Y[:5])
    m = m.merge(CrossMoments.from_data(X[5:] * scale, Y[5:], batch=31))
    assert m.cka(True) == pytest.approx(ref, rel=1e-12)


def test_constant_batches_then_spread():
    """Single-row or constant batches have no spread of their own: their origins set the scale on merging."""
    X, Y = data(8, n=40)
    m = CrossMoments(6, 4)
    for i in range(40):
        m.update(X[i:i + 1], Y[i:i + 1])
    assert m.cka(True) == pytest.approx(linear_cka(X, Y, True), rel=1e-12)
    c = CrossMoments(1, 1).update(np.ones((3, 1)), np.ones((3, 1)))
    c.update(np.full((3, 1), 2.0), np.array([[1.0], [2.0], [4.0]]))
    assert c.covariance("x")[0, 0] == pytest.approx(np.var([1, 1, 1, 2, 2, 2], ddof=1), rel=1e-14)


def test_merge_does_not_change_operands_and_pickles():
    X, Y = data(9, n=50)
    a, b = CrossMoments.from_data(X[:20], Y[:20]), CrossMoments.from_data(X[20:], Y[20:])
    ca, cb = a.cka(True), b.cka(True)
    ab = a.merge(b)
    assert a.n == 20 and b.n == 30 and ab.n == 50 and a.cka(True) == ca and b.cka(True) == cb
    assert CrossMoments(6, 4).merge(a).cka(True) == ca and a.merge(CrossMoments(6, 4)).cka(True) == ca
    back = pickle.loads(pickle.dumps(ab))
    assert back.cka(True) == ab.cka(True) and "n=50" in repr(back)
    np.testing.assert_allclose(ab.mean_x, X.mean(0), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(ab.mean_y, Y.mean(0), rtol=1e-14, atol=1e-15)


def test_update_validation():
    m = CrossMoments(2, 3)
    with pytest.raises(ValueError, match="feature columns"):
        m.update(np.ones((4, 3)), np.ones((4, 3)))
    with pytest.raises(ValueError, match="Y: has 3 rows"):
        m.update(np.ones((4, 2)), np.ones((3, 3)))
    with pytest.raises(ValueError, match=r"X: .*Inf"):
        m.update(np.array([[1.0, np.inf]]), np.ones((1, 3)))
    with pytest.raises(ValueError, match="n_x_features"):
        CrossMoments(0, 2)
    with pytest.raises(ValueError, match="other: shapes differ"):
        m.merge(CrossMoments(3, 3))
    with pytest.raises(ValueError, match="no samples"):
        m.centred()
    with pytest.raises(ValueError, match="side"):
        m.update(np.ones((2, 2)), np.ones((2, 3))).covariance("z")
    assert m.n == 2  # the failed updates added nothing


def longdouble_cka(X, Y, debiased):
    """CKA on 80-bit long doubles (64-bit mantissa): a reference 2000× finer than float64."""
    X, Y = X.astype(np.longdouble), Y.astype(np.longdouble)
    n = X.shape[0]
    X, Y = X - X.mean(0), Y - Y.mean(0)
    X, Y = X - X.mean(0), Y - Y.mean(0)
    kd, ld = (X * X).sum(1), (Y * Y).sum(1)

    def h(A, B, ka, kb):
        f = ((A.T @ B) ** 2).sum()
        return f if not debiased else f + ka.sum() * kb.sum() / ((n - 1) * (n - 2)) - n / (n - 2) * (ka * kb).sum()
    return float(h(X, Y, kd, ld) / np.sqrt(h(X, X, kd, kd) * h(Y, Y, ld, ld)))


@pytest.mark.skipif(np.finfo(np.longdouble).eps >= np.finfo(np.float64).eps / 100, reason="no extended precision")
def test_offset_accuracy_against_extended_precision():
    """At an offset 1e6, both routes stay at the float64 level (~1e-15); leaving the rounding of the origin in
    the two-pass centring (columns summing to ε·1e6 instead of 0) costs ~3e-14."""
    for seed in range(3):
        X, Y = data(10 + seed, n=5000, p=20, q=10, offset=1e6)
        X, Y = X.astype(np.float32).astype(np.float64), Y.astype(np.float32).astype(np.float64)
        for d in (False, True):
            ref = longdouble_cka(X, Y, d)
            assert abs(linear_cka(X, Y, d) - ref) <= 5e-15 * abs(ref), (seed, d)
            assert abs(CrossMoments.from_data(X, Y, batch=256).cka(d) - ref) <= 5e-15 * abs(ref), (seed, d)


def test_from_state_round_trip_and_checks():
    X, Y = data(13, n=40)
    m = CrossMoments.from_data(X, Y, batch=9)
    back = CrossMoments.from_state(m.n, m.ox, m.oy, m.ex, m.ey, m.sums)
    assert back.cka(True) == m.cka(True) and back.merge(m).n == 80
    assert back.sums["cxx"] is not m.sums["cxx"]
    with pytest.raises(ValueError, match="sums: cxy has shape"):
        CrossMoments.from_state(m.n, m.ox, m.oy, m.ex, m.ey, {**m.sums, "cxy": m.sums["cxy"].T})
    with pytest.raises(ValueError, match="sums: missing"):
        CrossMoments.from_state(m.n, m.ox, m.oy, m.ex, m.ey, {"sx": m.sums["sx"]})
