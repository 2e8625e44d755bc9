"""Tests from the exhaustive (``--sample 0``) per-module mutation runs of issue 15 §3 (docs/mutation.md, phase 4).

As in ``test_theory_mutants.py``: each test states a property of the mathematics or of the documented input
contract, checked against an independent computation, not the current output.
"""
from __future__ import annotations

import numpy as np
import pytest

import theory.rank as R


# ---------------------------------------------------------------------------------------------- theory/rank.py
def test_mp_numerical_rank_default_theta_plants_directions_of_zero_strength():
    """RD Sec 3.1: θ = 0 (the default) plants directions of strength 0: the top singular value is the bulk edge
    1 + √γ, so the prediction is r + (m − r)·P_MP(λ ≥ ε²(1 + √γ)²), the no-signal fraction on the other m − r."""
    N, d, eps, r = 400, 100, 0.6, 5  # (ε·σ_top)² inside the MP support [0.25, 2.25]
    no_signal = R.mp_numerical_rank(N, d, eps) / min(N, d)
    assert R.mp_numerical_rank(N, d, eps, signal_rank=r) == pytest.approx(r + (d - r) * no_signal, rel=1e-12)
    assert R.mp_numerical_rank(N, d, eps, signal_rank=r, theta=2.0) < R.mp_numerical_rank(N, d, eps, signal_rank=r)


@pytest.mark.parametrize("N, d, eps, method, route", [
    (21, 10, 1e-10, "auto", "cov"),              # N > 2d and ε ≥ 1e−10: the d×d covariance
    (20, 10, 1e-10, "auto", "svd"),              # N = 2d is not N > 2d
    (21, 10, 1e-10 * (1 - 1e-12), "auto", "svd"),  # ε below 1e−10: the covariance's rounding would show
    (1000, 3, 1.0, "svd", "svd"),                # a named method is taken as is
    (4, 3, 1e-20, "cov", "cov"),
])
def test_pca_route_is_the_documented_rule(N, d, eps, method, route):
    assert R.pca_route(N, d, eps, method) == route


def test_pca_dim_takes_the_route_pca_route_names(monkeypatch):
    """pca_dim computes the spectrum by eigvalsh of the covariance exactly when pca_route says "cov"."""
    calls = []
    eigvalsh = np.linalg.eigvalsh
    monkeypatch.setattr(np.linalg, "eigvalsh", lambda a: calls.append(a.shape) or eigvalsh(a))
    rng = np.random.default_rng(0)
    for N, d in ((50, 4), (8, 4), (9, 4)):
        x = rng.standard_normal((N, d))
        for eps, method in ((None, "auto"), (1e-12, "auto"), (None, "svd"), (None, "cov")):
            calls.clear()
            e = R.float32_eps_rule(min(N - 1, d)) if eps is None else eps
            assert R.pca_dim(x, eps=eps, method=method) == d
            assert (calls == [(d, d)]) == (R.pca_route(N, d, e, method) == "cov"), (N, d, eps, method)


def test_psi_law_rank_counts_gaps_below_the_top_exponent():
    """RD Eq 10 at finite depth: σ_k/σ_1 ≈ exp(L(λ_k − λ_1)) with λ_k − λ_1 = ½(ψ((n−k+1)/2) − ψ(n/2)), so the
    rank is #{k : L·½(ψ((n−k+1)/2) − ψ(n/2)) ≥ log ε} — n at L = 0, falling to 1 (only σ_1 itself) for deep nets."""
    from scipy import special
    n, eps = 12, 1e-3
    k = np.arange(1, n + 1)
    gaps = 0.5 * (special.digamma((n - k + 1) / 2.0) - special.digamma(n / 2.0))
    L = np.array([0.0, 1.0, 3.0, 10.0, 30.0, 1e6])
    want = [int(np.count_nonzero(l * gaps >= np.log(eps))) for l in L]
    assert R.psi_law_rank(n, L, eps).tolist() == want
    assert want[0] == n and want[-1] == 1 and len(set(want)) >= 4


def test_pca_dim_needs_two_samples_and_says_so():
    """One sample has no covariance: the error names the count (not a downstream failure on an empty spectrum)."""
    with pytest.raises(ValueError, match="at least 2 samples .* got 1"):
        R.pca_dim(np.ones((1, 3)))
    assert R.pca_dim(np.array([[0.0, 1.0, 2.0], [1.0, 1.0, 0.0]])) == 1  # two samples: one direction


# ------------------------------------------------------------------------------------ theory/collapse/linalg.py
def test_sum_pow2_ignores_zero_terms_whatever_their_exponent():
    """Σ_j a_j·2^e_j: a zero a_j contributes nothing, even with a huge e_j (a constant column of features stored
    at a large scale); it must not set the common exponent and flush the real terms to 0."""
    from theory.collapse.linalg import sum_pow2
    m, E = sum_pow2(np.array([1.5, 0.0, 0.25]), np.array([3, 2000, 1]))
    assert np.ldexp(m, E) == 1.5 * 8 + 0.25 * 2
    assert sum_pow2(np.zeros(3), np.array([5, 6, 7])) == (0.0, 0)


def test_check_kept_is_relative_to_the_largest_eigenvalue():
    """A resolved λ_r is judged against λ_max (λ_r > 100·max(p, K)·ε·λ_max), so the verdict does not depend on the
    frame's unit: Σ_B = diag(1, 1e−8)·c keeps rank 2 for every power-of-two c; diag(1, 1e−15) never does."""
    from theory.collapse.linalg import Frame
    for c in (2.0 ** -40, 1.0, 2.0 ** 40):
        for small, ok in ((1e-8, True), (1e-15, False)):
            M = np.array([[1.0, 0.0], [0.0, np.sqrt(small)], [0.0, 0.0]]) * np.sqrt(c)
            f = Frame(M, np.eye(2), np.full(3, 1 / 3))
            if ok:
                np.testing.assert_allclose(f.check_kept(2), [c, small * c], rtol=1e-12)
            else:
                with pytest.raises(ValueError, match="eigenvalue 2 of Σ_B"):
                    f.check_kept(2)


def test_psi_law_memory_guard_counts_three_float64_arrays(monkeypatch):
    """_check_n's guard budgets 24 bytes per exponent (three float64 arrays of length n): with half the memory
    at 23 bytes even n = 1 is refused, at 24 bytes it is allowed (the boundary test in test_theory_branches)."""
    import os
    monkeypatch.setattr(os, "sysconf", lambda name: {"SC_PHYS_PAGES": 46, "SC_PAGE_SIZE": 1}[name])
    with pytest.raises(MemoryError, match=r"n = 1 exponents \(three float64 arrays of length n\) needs about"):
        R.lyapunov_law(1)


def test_rank_arg_exact_uses_the_matrix_rank_tolerance():
    """rank='exact': eigenvalues of Σ_B above max(p, K)·ε·λ_max (numpy's matrix_rank convention, the rounding level
    of an eigh of a max(p, K)-sized matrix) count; one between ε·λ_max and that level does not."""
    from theory.collapse.linalg import rank_arg
    eps = np.finfo(float).eps
    K, p = 4, 3
    assert rank_arg("exact", K, p, np.array([1.0, 2.0 * eps, 0.0])) == 1        # 2ε < 4ε: rounding level
    assert rank_arg("exact", K, p, np.array([1.0, 8.0 * eps, 0.0])) == 2        # 8ε > 4ε: resolved
    assert rank_arg("exact", K, p, np.array([8.0, 16.0 * eps, 0.0])) == 1       # relative to λ_max = 8
    assert rank_arg("exact", K, p, np.array([1.0, 2.0 * eps, 0.0]), rtol=eps) == 2  # an explicit rtol replaces it
