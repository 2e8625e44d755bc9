"""theory.collapse.linalg: which route a pseudo-inverse trace takes (Cholesky or eigh; the Gram route of the
fuzziness) and that both give the same value, which eigenvalues of Σ_B count as resolved, the rank argument,
and sums of power-of-two-scaled terms."""
from __future__ import annotations

import math

import numpy as np
import pytest


# ---- Tr[Σ†M] (trace_pinv) and the fuzziness (fuzz_vb): the route taken, the same value on both routes

def test_trace_pinv_takes_cholesky_only_with_the_documented_margin():
    """collapse/linalg.trace_pinv: Cholesky (St⁻¹) only when the condition estimate puts λ_min 1000× above the
    pseudo-inverse's cutoff rtol·λ_max; closer to the cutoff it takes eigh. For a diagonal St the estimate is
    exact (rcond = λ_min/λ_max), so the route is pinned; both routes give Σ_j M_ij²/λ_j when nothing is cut."""
    from theory.collapse.linalg import trace_pinv

    rtol = 1e-6
    M0 = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 0.25]])
    Q, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((3, 3)))  # a non-diagonal St: both triangles
    lam = np.array([1.0, 0.5, 1e4 * rtol])
    t, r = trace_pinv(Q @ np.diag(lam) @ Q.T, M0 @ Q.T, rtol)
    assert r == "cholesky" and t == pytest.approx(float(np.sum(M0**2 / lam)), rel=1e-9)
    for scale in (1.0, 1e-8, 1e8):  # St → s·St, M → √s·M leaves the trace and the route unchanged
        M = M0 * math.sqrt(scale)
        for ratio, route in ((1e4 * rtol, "cholesky"), (1.2e3 * rtol, "cholesky"), (0.8e3 * rtol, "eigh"),
                             (1e2 * rtol, "eigh"), (2.0 * rtol, "eigh")):
            lam = scale * np.array([1.0, 0.5, ratio])
            t, r = trace_pinv(np.diag(lam), M, rtol)
            assert r == route, (scale, ratio, r)
            assert t == pytest.approx(float(np.sum(M0**2 / (lam / scale))), rel=1e-12)
        lam = scale * np.array([1.0, 0.5, 0.5 * rtol])  # below the cutoff rtol·λ_max: that direction is dropped
        t, r = trace_pinv(np.diag(lam), M, rtol)
        assert r == "eigh" and t == pytest.approx(float(np.sum(M0[:, :2] ** 2 / (lam[:2] / scale))), rel=1e-12)


def test_fuzziness_gram_route_only_with_the_documented_margin():
    """collapse/linalg.Frame.fuzz_vb at r = K − 1 ≤ p: the one-Cholesky Gram route only when the condition estimate
    of G + qqᵀ is above 1e3·K·ε; a Σ_B with eigenvalues (1, 1, ρ) takes it at ρ = 0.1 and not at ρ = 5e−13
    (rcond ≈ 0.6ρ < 1e3·4·ε ≈ 8.9e−13, though still resolved: ρ > 100·p·ε), and both routes give
    Tr[Σ_B†Σ_W] = Σ_j 1/g_j for Σ_W = I, Σ_B = Σ_j g_j e_j e_jᵀ."""
    from theory.collapse.linalg import Frame

    K = p = 4
    priors = np.full(K, 0.25)
    U = np.array([[1, 1, -1, -1], [1, -1, 1, -1], [1, -1, -1, 1]], dtype=float).T / 2  # ⟂ q = √π = ½·1
    for rho, route in ((0.1, "gram"), (5e-13, "eigen")):
        g = np.array([1.0, 1.0, rho])
        M = np.zeros((K, p))
        M[:, :3] = U * np.sqrt(g)  # M = Σ_j √g_j u_j e_jᵀ: Σ_B = MᵀM = diag(g, 0), G = MMᵀ
        f = Frame(M, np.eye(p), priors)
        fz, on = f.fuzz_vb(K - 1)
        assert f.fuzz_route[K - 1] == route, (rho, f.fuzz_route)
        tol = 1e-12 + 10 * np.finfo(float).eps / rho  # eigh's error ε·λ_max is ε/ρ relative on the 1/ρ term
        assert fz == pytest.approx(float(np.sum(1 / g)), rel=tol) and on == pytest.approx(3.0, rel=tol)


def _centred_basis(K):
    """q = (√π_k) for K equal classes, and an orthonormal basis Q (K × K−1) of q⊥: rows of M = Q·(...) are centred
    class means (Mᵀq = 0)."""
    q = np.full(K, 1 / np.sqrt(K))
    return q, np.linalg.qr(np.c_[q, np.eye(K)[:, : K - 1]])[0][:, 1:K]


def test_fuzz_vb_takes_the_gram_route_exactly_when_gp_is_1e3_k_eps_conditioned():
    """VC Sec 3.2 fuzziness at r = K − 1 ≤ p: the one-Cholesky Gram route is taken iff the (1-norm) reciprocal
    condition of Gp = Gn + qqᵀ exceeds 1e3·K·ε, else the eigenpairs. Σ_B = W·diag(1, s²)·Wᵀ (W orthonormal, class
    means centred: Mᵀq = 0) and Σ_W = 0.3·I give Tr[Σ_B†Σ_W] = 0.3·(1 + 1/s²) exactly on both routes; s sweeps
    rcond(Gp) ≈ s²/(2·3) (computed here with numpy's exact 1-norms) across the margin."""
    from theory.collapse.linalg import Frame
    eps = np.finfo(float).eps
    K = 3
    q, Q = _centred_basis(K)
    W = np.linalg.qr(np.random.default_rng(0).standard_normal((4, 2)))[0]
    routes = set()
    for s in np.geomspace(4e-7, 3e-6, 12):
        M = Q @ np.diag([1.0, s]) @ W.T
        f = Frame(M, 0.3 * np.eye(4), np.full(K, 1 / K))
        fz, _ = f.fuzz_vb(2)
        Gn = M @ M.T / (np.trace(M @ M.T) / 2)
        Gp = Gn + np.outer(q, q)
        rcond = 1 / (np.linalg.norm(Gp, 1) * np.linalg.norm(np.linalg.inv(Gp), 1))
        want = "gram" if rcond > 1e3 * K * eps else "eigen"
        assert f.fuzz_route[2] == want, (s, rcond / (K * eps))
        assert fz == pytest.approx(0.3 * (1 + 1 / s**2), rel=1e-3)
        routes.add(want)
    assert routes == {"gram", "eigen"}


@pytest.mark.parametrize("K, p", [(3, 2), (3, 5)])  # the eigenpair route (K > p) and the Gram route (K ≤ p)
def test_fuzziness_overflow_is_an_error_not_inf(K, p):
    """Tr[Σ_B†Σ_W] with Σ_B ~1e−300 (resolved: its eigenvalues differ by 2×) against Σ_W ~1e10 is ~1e310, outside
    float64: a ValueError that says so, on both routes, never inf."""
    from theory.collapse.linalg import Frame
    q, Q = _centred_basis(K)
    r = min(K - 1, p)
    W = np.linalg.qr(np.random.default_rng(1).standard_normal((p, r)))[0]
    M = 1e-150 * Q[:, :r] @ np.diag(np.linspace(1.0, 2.0, r)) @ W.T
    f = Frame(M, 1e10 * np.eye(p), np.full(K, 1 / K))
    with pytest.raises(ValueError, match=r"Tr\[Σ_B†Σ_W\] overflows float64"):
        f.fuzz_vb(r)
    g = Frame(M * 1e10, 1e10 * np.eye(p), np.full(K, 1 / K)).fuzz_vb(r)[0]  # 1e20 smaller: finite
    assert np.isfinite(g) and g > 1e280


def test_fuzz_vb_of_coinciding_class_means_is_an_error():
    """Σ_B = 0 (all class means coincide) has no V_B: fuzz_vb at the paper's rank K − 1 raises the unresolved-
    eigenvalue error on the Gram route's input too (no 0/0 scaling of M, no NaN result)."""
    from theory.collapse.linalg import Frame
    f = Frame(np.zeros((3, 5)), np.eye(5), np.full(3, 1 / 3))
    with pytest.raises(ValueError, match=r"eigenvalue 2 of Σ_B is nan·λ_max"):
        f.fuzz_vb(2)


# ---- which eigenvalues of Σ_B are resolved (check_kept), and the rank argument

def test_check_kept_is_relative_to_the_largest_eigenvalue():
    """A resolved λ_r is judged against λ_max (λ_r > 100·max(p, K)·ε·λ_max), so the verdict does not depend on the
    frame's unit: Σ_B = diag(1, 1e−8)·c and diag(1, 1e−13)·c keep rank 2 for every power-of-two c (K = 3, p = 2:
    the level is 100·3ε = 6.7e−14); diag(1, 5e−14) and diag(1, 1e−15) never do."""
    from theory.collapse.linalg import Frame
    for c in (2.0 ** -40, 1.0, 2.0 ** 40):
        lvl = 100 * 3 * np.finfo(float).eps  # 6.66e−14
        for small, ok in ((1e-8, True), (1e-13, True), (1.003 * lvl, True), (0.997 * lvl, False), (5e-14, False),
                          (1e-15, False)):
            M = np.array([[1.0, 0.0], [0.0, np.sqrt(small)], [0.0, 0.0]]) * np.sqrt(c)
            f = Frame(M, np.eye(2), np.full(3, 1 / 3))
            if ok:
                np.testing.assert_allclose(f.check_kept(2), [c, small * c], rtol=1e-12)
                with pytest.raises(ValueError, match=r"eigenvalue 1 of Σ_B is nan·λ_max"):  # Σ_B = 0: nothing resolved
                    Frame(0 * M, np.eye(2), np.full(3, 1 / 3)).check_kept(1)
            else:
                with pytest.raises(ValueError, match=rf"eigenvalue 2 of Σ_B is {small:.3g}·λ_max"):
                    f.check_kept(2)


def test_check_kept_message_gives_the_ratio_with_a_null_direction_present():
    """The error's λ_r/λ_max is reported whenever λ_max > 0, also when Σ_B has exact null directions (rank < p, the
    usual case K − 1 < p): Σ_B = diag(1, 1e−15, 0)."""
    from theory.collapse.linalg import Frame
    M = np.zeros((4, 3))
    M[0, 0], M[1, 1] = 1.0, np.sqrt(1e-15)
    with pytest.raises(ValueError, match=r"eigenvalue 2 of Σ_B is 1e-15·λ_max"):
        Frame(M, np.eye(3), np.full(4, 0.25)).check_kept(2)
    M[1, 1] = 0.0  # Σ_B = diag(1, 0, 0): λ_2 = 0 exactly, the ratio is 0
    with pytest.raises(ValueError, match=r"eigenvalue 2 of Σ_B is 0·λ_max"):
        Frame(M, np.eye(3), np.full(4, 0.25)).check_kept(2)


def test_rank_arg_exact_uses_the_matrix_rank_tolerance():
    """rank='exact': eigenvalues of Σ_B above max(p, K)·ε·λ_max (numpy's matrix_rank convention, the rounding level
    of an eigh of a max(p, K)-sized matrix) count; one between ε·λ_max and that level does not."""
    from theory.collapse.linalg import rank_arg
    eps = np.finfo(float).eps
    K, p = 4, 3
    assert rank_arg("exact", K, p, np.array([1.0, 2.0 * eps, 0.0])) == 1        # 2ε < 4ε: rounding level
    assert rank_arg("exact", K, p, np.array([1.0, 8.0 * eps, 0.0])) == 2        # 8ε > 4ε: resolved
    assert rank_arg("exact", K, p, np.array([1.0, 3.5 * eps, 0.0])) == 1        # max(p, K) = 4, not min = 3
    for c in (2.0 ** -30, 2.0 ** 30):  # relative to λ_max at any scale, also below 1
        assert rank_arg("exact", K, p, c * np.array([1.0, 8.0 * eps, 0.0])) == 2
        assert rank_arg("exact", K, p, c * np.array([1.0, 2.0 * eps, 0.0])) == 1
    assert rank_arg("exact", K, p, np.array([8.0, 16.0 * eps, 0.0])) == 1       # relative to λ_max = 8
    assert rank_arg("exact", K, p, np.array([1.0, 2.0 * eps, 0.0]), rtol=eps) == 2  # an explicit rtol replaces it


def test_rank_arg_int_is_at_most_k_minus_one():
    """Σ_B = Σ_k π_k(μ_k − μ_G)(μ_k − μ_G)ᵀ has rank ≤ K − 1 (the centred means sum to 0): an int rank of K is
    refused even when p ≥ K, and K − 1 is accepted."""
    from theory.collapse.linalg import rank_arg
    assert rank_arg(2, 3, 5) == 2
    with pytest.raises(ValueError, match=r"must lie in \[1, min\(p, K-1\)\] = \[1, 2\], got 3"):
        rank_arg(3, 3, 5)


def test_rank_arg_names_the_accepted_strings():
    from theory.collapse.linalg import rank_arg
    with pytest.raises(ValueError, match=r"rank: must be 'paper', 'exact' or a positive int, got 'full'"):
        rank_arg("full", 3, 5)


# ---- sums of power-of-two-scaled terms

def test_sum_pow2_ignores_zero_terms_whatever_their_exponent():
    """Σ_j a_j·2^e_j: a zero a_j contributes nothing, even with a huge e_j (a constant column of features stored
    at a large scale); it must not set the common exponent and flush the real terms to 0."""
    from theory.collapse.linalg import sum_pow2
    m, E = sum_pow2(np.array([1.5, 0.0, 0.25]), np.array([3, 2000, 1]))
    assert np.ldexp(m, E) == 1.5 * 8 + 0.25 * 2
    assert sum_pow2(np.zeros(3), np.array([5, 6, 7])) == (0.0, 0)
    # exponents 1100 apart (columns at 1e−170 and 1e+160): scaled to the largest, the small term is negligible
    m, E = sum_pow2(np.array([1.0, 1.0]), np.array([0, 1100]))
    assert (m, E) == (0.5, 1101)  # 0.5·2^1101 = 2^1100; the 2^0 term is below its rounding
