"""RSA (theory.geometry.rdms): RDMs and their comparisons, and the moment route for squared Euclidean RDMs.

References: scipy's ``pdist`` (direct differences); the whitened cosine as Diedrichsen et al. 2021 define it,
aᵀV⁻¹b/√(aᵀV⁻¹a·bᵀV⁻¹b) with V = (CCᵀ)∘(CCᵀ), C the pairwise contrast matrix (solved densely); scipy's
spearmanr; rsatoolbox's own test properties (a comparison of an RDM with itself is 1; the matrix of
comparisons equals a loop over pairs).
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import pdist
from scipy.stats import pearsonr, spearmanr

from theory.geometry import CrossMoments, compare_rdms, linear_cka, rdm, rsa, rsa_from_moments


def reps(seed=0, n=25, p=12, q=9, offset=4.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) + offset
    Y = X[:, :6] @ rng.standard_normal((6, q)) + rng.standard_normal((n, q))
    return X, Y


def whitened(a, b, n):
    """Diedrichsen et al. 2021: the cosine under V⁻¹, V the covariance of distance estimates (sigma_k = I)."""
    iu = np.triu_indices(n, 1)
    C = np.zeros((iu[0].size, n))
    C[np.arange(iu[0].size), iu[0]], C[np.arange(iu[0].size), iu[1]] = 1.0, -1.0
    Xi = C @ C.T
    V = Xi * Xi
    va, vb = np.linalg.solve(V, a), np.linalg.solve(V, b)
    return a @ vb / np.sqrt((a @ va) * (b @ vb))


@pytest.mark.parametrize("metric", ["sqeuclidean", "euclidean", "correlation", "cosine"])
def test_rdm_against_pdist(metric):
    X, _ = reps(offset=1e3)
    ref = pdist(X, metric)
    # centred Gram identities: absolute error ~ε·(a_i + a_j) with a_i = ‖x_c,i‖² ≈ p (distances), ~ε for the
    # unit-vector metrics; pdist (direct differences of the offset data) rounds at ε·|x| ≈ 2e-13 itself
    tol = {"sqeuclidean": 1e-9, "euclidean": 1e-10, "correlation": 1e-13, "cosine": 1e-13}[metric]
    assert np.allclose(rdm(X, metric), ref, rtol=0, atol=tol * max(1.0, ref.max()))
    assert np.array_equal(rdm(2.0 ** 500 * X, "correlation"), rdm(X, "correlation"))  # an exact rescaling


@pytest.mark.parametrize("method", ["cosine", "corr", "spearman", "cosine_cov", "corr_cov"])
def test_compare_rdms_against_definitions(method):
    X, Y = reps(1)
    a, b = rdm(X), rdm(Y, "correlation")
    n = X.shape[0]
    ref = {"cosine": a @ b / np.linalg.norm(a) / np.linalg.norm(b), "corr": pearsonr(a, b)[0],
           "spearman": spearmanr(a, b)[0], "cosine_cov": whitened(a, b, n),
           "corr_cov": whitened(a - a.mean(), b - b.mean(), n)}[method]
    # V is well conditioned for n = 25 (κ ≈ n): the dense solves agree to ~1e-13
    assert compare_rdms(a, b, method) == pytest.approx(ref, rel=1e-11)
    assert compare_rdms(a, a, method) == pytest.approx(1.0, abs=1e-13)  # rsatoolbox's property: self = 1
    assert compare_rdms(b, a, method) == pytest.approx(compare_rdms(a, b, method), rel=1e-13)
    assert compare_rdms(3e150 * a, b, method) == pytest.approx(compare_rdms(a, b, method), rel=1e-13)


@pytest.mark.parametrize("method", ["cosine", "corr", "cosine_cov", "corr_cov"])
@pytest.mark.parametrize("offset", [0.0, 1e6])
def test_squared_euclidean_rsa_from_moments_equals_the_rdms(method, offset):
    X, Y = reps(2, n=40, offset=offset)
    dense = compare_rdms(pdist(X - X.mean(0), "sqeuclidean"), pdist(Y - Y.mean(0), "sqeuclidean"), method)
    # sums of n² products of distances against the same sums from the moments: ~n²ε relative
    assert rsa(X, Y, method=method) == pytest.approx(dense, rel=1e-11)
    m = CrossMoments.from_data(X, Y, batch=7)
    assert rsa_from_moments(m, method) == pytest.approx(dense, rel=1e-11)


def test_whitened_cosine_of_squared_euclidean_rdms_is_linear_cka():
    """−½HDH = X_cX_cᵀ for a squared Euclidean RDM: the whitened cosine is biased linear CKA (closed form)."""
    X, Y = reps(3)
    assert compare_rdms(rdm(X), rdm(Y), "cosine_cov") == pytest.approx(linear_cka(X, Y), rel=1e-11)
    assert rsa(X, Y, method="cosine_cov") == pytest.approx(linear_cka(X, Y), rel=1e-13)


def test_a_matrix_of_comparisons_equals_the_loop():
    """rsatoolbox's test_compare_cosine_loop / corr_loop: several RDMs against several, pair by pair."""
    rng = np.random.default_rng(0)
    A, B = rng.random((3, 15)), rng.random((7, 15))  # RDMs of 6 conditions, as rsatoolbox's test
    for method, f in (("cosine", lambda u, v: u @ v / np.sqrt(u @ u) / np.sqrt(v @ v)),
                      ("corr", lambda u, v: np.corrcoef(u, v)[0, 1])):
        for i in range(3):
            for j in range(7):
                assert compare_rdms(A[i], B[j], method) == pytest.approx(f(A[i], B[j]), rel=1e-12)


def test_rsa_other_metrics_and_errors():
    X, Y = reps(4)
    assert rsa(X, Y, "correlation", "spearman") == pytest.approx(
        spearmanr(pdist(X, "correlation"), pdist(Y, "correlation"))[0], rel=1e-12)
    assert rsa(X, Y, "sqeuclidean", "spearman") == pytest.approx(spearmanr(pdist(X), pdist(Y))[0], rel=1e-12)
    with pytest.raises(ValueError, match="metric"):
        rdm(X, "manhattan")
    with pytest.raises(ValueError, match="method"):
        compare_rdms(rdm(X), rdm(Y), "kendall")
    with pytest.raises(ValueError, match="b: an RDM of 24"):
        compare_rdms(rdm(X), rdm(Y[:24]))
    with pytest.raises(ValueError, match="a: length 4"):
        compare_rdms(np.ones(4), np.ones(4))
    with pytest.raises(ValueError, match="constant"):
        rdm(np.ones((5, 3)), "correlation")
    with pytest.raises(ValueError, match="constant"):
        rsa(np.ones((5, 3)), Y[:5])
    with pytest.raises(ValueError, match="method"):
        rsa_from_moments(CrossMoments.from_data(X, Y), "spearman")
    with pytest.raises(ValueError, match="X: needs at least 3"):
        rsa(X[:2], Y[:2])
    with pytest.raises(ValueError, match="squared distances: overflows"):
        rdm(1e160 * X)
