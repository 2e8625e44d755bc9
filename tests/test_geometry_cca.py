"""CCA family (theory.geometry.cca): canonical correlations, mean CCA, SVCCA, PWCCA from streamed moments.

References: data built with exactly known sample canonical correlations (orthonormal centred columns); CCA by QR
of the centred data and an SVD of Q_xᵀQ_y (a different algorithm: no covariance, no eigendecomposition); SVCCA
by an SVD of the data; PWCCA with the canonical variates formed in sample space, as Morcos et al. describe.
"""
from __future__ import annotations

import numpy as np
import pytest

from theory.geometry import CrossMoments, canonical_correlations, mean_cca, pwcca, svcca

RHO = np.array([0.95, 0.6, 0.25])


def planted(seed=0, n=300, offset=0.0):
    """X (n, 6), Y (n, 5) whose sample canonical correlations are exactly RHO (and 0 for the rest)."""
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((n, 11))
    Q, _ = np.linalg.qr(G - G.mean(0))  # orthonormal, centred columns
    k = RHO.size
    Q *= np.sqrt(n)  # unit-variance columns
    Xc = np.hstack([Q[:, :k], Q[:, 6:9]])  # 3 canonical + 3 unrelated directions
    Yc = np.hstack([Q[:, :k] * RHO + Q[:, k:2 * k] * np.sqrt(1 - RHO ** 2), Q[:, 9:11]])
    return Xc @ rng.standard_normal((6, 6)) + offset, Yc @ rng.standard_normal((5, 5)) - offset


def qr_cca(X, Y):
    qx, _ = np.linalg.qr(X - X.mean(0))
    qy, _ = np.linalg.qr(Y - Y.mean(0))
    U, s, Vt = np.linalg.svd(qx.T @ qy, full_matrices=False)
    return s, qx @ U, qy @ Vt.T  # correlations and the unit-norm canonical variates of each side


def data(seed=1, n=200, p=10, q=8):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) @ rng.standard_normal((p, p)) + 5.0
    Y = X[:, :6] @ rng.standard_normal((6, q)) + rng.standard_normal((n, q))
    return X, Y


@pytest.mark.parametrize("offset", [0.0, 1e6])
def test_planted_canonical_correlations_exact(offset):
    X, Y = planted(offset=offset)
    rho = canonical_correlations(X, Y)
    assert rho.size == 5
    # the inputs themselves are rounded to ε·|offset| ≈ 2e-10 on a spread ~1: correlations that are 0 exactly
    # come out at that level (~1e-10·√(p)); the algorithm adds ~κ²ε on top
    tol = 1e-12 + 50 * np.finfo(float).eps * offset
    assert np.allclose(rho, np.r_[RHO, 0, 0], atol=tol)
    assert mean_cca(X, Y) == pytest.approx(RHO.sum() / 5, abs=tol)
    assert mean_cca(X, Y, "yanai") == pytest.approx((RHO ** 2).sum() / 5, abs=tol)


def test_against_qr_reference_and_streamed_moments():
    X, Y = data()
    ref, _, _ = qr_cca(X, Y)
    # the moments route squares the condition number (κ(X_c) ≈ 30 here): errors ~κ²ε ≈ 1e-13
    assert np.allclose(canonical_correlations(X, Y), ref, atol=1e-11)
    m = CrossMoments.from_data(X, Y, batch=23)
    assert np.allclose(canonical_correlations(m), ref, atol=1e-11)
    assert mean_cca(m) == pytest.approx(ref.mean(), abs=1e-11)


def test_svcca_against_svd_of_the_data():
    X, Y = data(2)
    Xc, Yc = X - X.mean(0), Y - Y.mean(0)

    def reduce(A, keep):
        U, s, _ = np.linalg.svd(A, full_matrices=False)
        k = int(np.searchsorted(np.cumsum(s ** 2) / np.sum(s ** 2), keep)) + 1
        return U[:, :k] * s[:k]
    for keep in (0.5, 0.9, 0.99, 1.0):
        ref, _, _ = qr_cca(reduce(Xc, keep), reduce(Yc, keep))
        assert svcca(X, Y, keep=keep) == pytest.approx(ref.mean(), abs=1e-11), keep
    assert svcca(X, Y, keep=1.0) == pytest.approx(mean_cca(X, Y), abs=1e-12)


@pytest.mark.parametrize("side", ["x", "y", "both"])
def test_pwcca_against_sample_space_variates(side):
    X, Y = data(3)
    rho, hx, hy = qr_cca(X, Y)

    def weighted(h, A):  # Morcos et al. 2018: α_i = Σ_j |⟨h_i, x_j⟩| over the centred neurons x_j
        a = np.abs(h.T @ (A - A.mean(0))).sum(axis=1)
        return a @ rho / a.sum()
    ref = {"x": weighted(hx, X), "y": weighted(hy, Y)}
    ref["both"] = 0.5 * (ref["x"] + ref["y"])
    assert pwcca(X, Y, side=side) == pytest.approx(ref[side], abs=1e-11)


def test_invariances_and_scales():
    X, Y = data(4)
    A = np.random.default_rng(0).standard_normal((10, 10))  # invertible
    Q, _ = np.linalg.qr(A)
    for f in (canonical_correlations, mean_cca):
        r = np.asarray(f(X, Y))
        assert np.allclose(f(X @ A + 3e6, 1e150 * Y), r, atol=1e-9)
    # SVCCA: orthogonal maps and scalings (not every linear map: the variance kept depends on it); PWCCA: its
    # weights are L1 norms over the neurons, so permutations and sign flips of neurons, and scalings
    assert svcca(1e-150 * (X @ Q - 2.0), Y * 7.0) == pytest.approx(svcca(X, Y), abs=1e-9)
    P = np.eye(10)[np.random.default_rng(1).permutation(10)] * np.where(np.arange(10) % 3, 1.0, -1.0)
    assert pwcca(1e-150 * (X @ P - 2.0), Y * 7.0) == pytest.approx(pwcca(X, Y), abs=1e-9)
    assert pwcca(X @ Q, Y) != pytest.approx(pwcca(X, Y), abs=1e-3)
    assert mean_cca(X, X) == pytest.approx(1.0, abs=1e-12)
    assert pwcca(Y, X, side="y") == pytest.approx(pwcca(X, Y, side="x"), abs=1e-13)


def test_rank_deficient_sides_and_errors():
    X, Y = data(5)
    Xd = np.hstack([X, X[:, :3] @ np.ones((3, 2))])  # two dependent columns: rank 10 of 12
    assert canonical_correlations(Xd, Y).size == 8
    assert np.allclose(canonical_correlations(Xd, Y), canonical_correlations(X, Y), atol=1e-9)
    with pytest.raises(ValueError, match="constant"):
        mean_cca(np.ones((20, 3)), Y[:20])
    with pytest.raises(ValueError, match="summary"):
        mean_cca(X, Y, summary="mean")
    with pytest.raises(ValueError, match="keep"):
        svcca(X, Y, keep=0.0)
    with pytest.raises(ValueError, match="side"):
        pwcca(X, Y, side="left")
    with pytest.raises(ValueError, match="tol"):
        canonical_correlations(X, Y, tol=2.0)
    with pytest.raises(ValueError, match="Y: required"):
        canonical_correlations(X)
    with pytest.raises(ValueError, match="Y: give either"):
        canonical_correlations(CrossMoments.from_data(X, Y), Y)
