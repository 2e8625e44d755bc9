"""theory.symbolic: the exact (sympy) statements behind the VC and ND checks — VC Eq 7's decomposition and
Thm 5.2's trace identity with their planted normaliser slips, Obs 4.2's claimed pseudo-inverse identity and the
Penrose conditions, the symbolic size caps, and ND's floor residuals."""
from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from theory.symbolic import vc as svc


# ---- VC Eq 7 (Σ_T = Σ_B + Σ_W): the planted residual is the normaliser slip and nothing else

def test_planted_decomposition_residual_is_minus_sigma_w_over_n_minus_1():
    """The planted Σ_W uses 1/(K(N−1)) instead of 1/(KN): the residual is Σ_W(1/(KN)) − Σ_W(1/(K(N−1)))
    = −Σ_W/(N−1), Σ_W computed here in floating point from the same numbers (defaults K = N = p = 2)."""
    K = N = p = 2
    rng = np.random.default_rng(3)
    h = rng.integers(-9, 10, size=(K, N, p))
    subs = {sp.Symbol(f"h{k}_{i}_{j}"): int(h[k, i, j]) for k in range(K) for i in range(N) for j in range(p)}
    mu = h.mean(axis=1, keepdims=True)
    d = (h - mu).reshape(-1, p)
    sw = d.T @ d / (K * N)
    res = np.array(svc.decomposition_residual(planted=True).subs(subs), dtype=float)
    np.testing.assert_allclose(res, -sw / (N - 1), rtol=1e-12, atol=1e-12)
    assert all(e == 0 for e in svc.decomposition_residual())


def test_planted_decomposition_residual_is_exactly_the_scatter_normaliser_slip():
    """VC Eq 7's negative control (Σ_W with np.cov's unbiased 1/(K(N−1))): the residual Σ_T − Σ_B − Σ_W' is
    exactly Σ_W − Σ_W' = −scatter/(KN(N−1)), the normaliser slip and nothing else (K = 2, N = 3, p = 1)."""
    import sympy as sp
    from theory.symbolic import vc as svc
    K, N = 2, 3
    h = [[sp.Symbol(f"h{k}_{i}_0") for i in range(N)] for k in range(K)]
    mu = [sum(h[k]) / N for k in range(K)]
    scatter = sum((h[k][i] - mu[k]) ** 2 for k in range(K) for i in range(N))
    got = svc.decomposition_residual(K, N, 1, planted=True)
    assert got.shape == (1, 1) and sp.expand(got[0, 0] + scatter / (K * N * (N - 1))) == 0


# ---- VC Thm 5.2's trace identity

def test_planted_trace_identity_residual_is_the_normaliser_error():
    """VC Thm 5.2's planted bug, Σ_T with n/(n−1): the residual is p·det(Σ_B+Σ_W)·c^(p−1)·(1 − c), c = n/(n−1),
    cleared of denominators — i.e. −p·det·n^(p−1)·(n−1)^(p−1) — not merely some nonzero polynomial."""
    n = sp.Symbol("n")
    for p in (1, 2, 3):
        r = svc.trace_identity_residual(p, planted=True)
        det = (svc.generic_symmetric(p, "b") + svc.generic_symmetric(p, "w")).det(method="berkowitz")
        assert sp.factor(r / (p * det * n ** (p - 1))) == -(n - 1) ** (p - 1)
        assert svc.trace_identity_residual(p) == 0


def test_trace_identity_residual_default_is_the_2x2_statement():
    """VC Thm 5.2's identity at its default size p = 2 (the planted residual's degree shows the size)."""
    from theory.symbolic import vc as svc
    assert svc.trace_identity_residual(planted=True) == svc.trace_identity_residual(2, planted=True) != 0


def test_rank_additive_planted_residual_is_minus_one_over_n():
    """VC Thm 5.2 with rank-additive Σ_B = bbᵀ, Σ_W = wwᵀ: Tr[Σ_T⁻¹Σ_B] = 1 exactly; with Σ_T·n/(n−1) (np.cov's
    ddof=1) it is (n−1)/n, so the planted residual is exactly −1/n."""
    assert svc.rank_additive_equality() == 0
    assert sp.simplify(svc.rank_additive_equality(planted=True) + 1 / sp.Symbol("n")) == 0


# ---- VC Obs 4.2: the claimed pseudo-inverse identity and the Moore–Penrose conditions

def test_fuzziness_counterexample_claimed_identity_keeps_the_trace():
    """VC Obs 4.2: if (UΣ_BUᵀ)† were U⁻ᵀΣ_B†U⁻¹, Tr[(UΣ_BUᵀ)†UΣ_WUᵀ] would be Tr[U⁻ᵀΣ_B†Σ_WUᵀ] = Tr[Σ_B†Σ_W]
    (a similarity): the 'after via the claimed identity' value equals 'before' for every invertible U."""
    for U in (None, [[1, 1], [0, 1]], [[2, 1], [1, 3]], [[0, 1], [1, 0]], [[3, 0], [5, -2]]):
        out = svc.fuzziness_counterexample(U)
        assert out["after_via_claimed_identity"] == out["before"] == 1
    assert svc.fuzziness_counterexample()["after"] == 2


def test_obs42_identity_defaults_are_the_papers_2d_example():
    """VC Obs 4.2's defaults r = 1, p = 2, coupling 'none' (the paper's 2-D setting): 2×2 residuals, all ≡ 0."""
    R2 = svc.obs42_identity()
    assert all(M.shape == (2, 2) for M in R2.values())
    assert all(svc.vanishes(e) for M in R2.values() for e in M)
    assert svc.obs42_identity_holds() and not svc.obs42_identity_holds(coupling="upper")


def test_obs42_penrose_pattern_matches_numpy():
    """VC Obs 4.2: which Moore–Penrose conditions X = U⁻ᵀΣ_B†U⁻¹ satisfies for Y = UΣ_BUᵀ, from sympy, equals the
    pattern numpy finds on random numeric U of each coupling (exact zero residuals vs clearly nonzero)."""
    rng = np.random.default_rng(11)
    for r, p in ((1, 2), (1, 3), (2, 3)):
        for coupling in ("none", "upper", "lower"):
            sym = {k: all(svc.vanishes(e) for e in R) for k, R in svc.obs42_identity(r, p, coupling).items()}
            q = p - r
            S = rng.standard_normal((r, r))
            S = S @ S.T + np.eye(r)
            U = np.block([[rng.standard_normal((r, r)) + 2 * np.eye(r),
                           rng.standard_normal((r, q)) if coupling == "upper" else np.zeros((r, q))],
                          [rng.standard_normal((q, r)) if coupling == "lower" else np.zeros((q, r)),
                           rng.standard_normal((q, q)) + 2 * np.eye(q)]])
            Sb = np.zeros((p, p))
            Sb[:r, :r] = S
            Sbp = np.zeros((p, p))
            Sbp[:r, :r] = np.linalg.inv(S)
            Ui = np.linalg.inv(U)
            X, Y = Ui.T @ Sbp @ Ui, U @ Sb @ U.T
            num = {"YXY = Y": Y @ X @ Y - Y, "XYX = X": X @ Y @ X - X, "(YX)ᵀ = YX": (Y @ X).T - Y @ X,
                   "(XY)ᵀ = XY": (X @ Y).T - X @ Y}
            for k, R in num.items():
                assert sym[k] == (np.abs(R).max() < 1e-9), (r, p, coupling, k, np.abs(R).max())
            assert all(sym.values()) == (coupling == "none")


def test_penrose_residuals_of_a_wrong_inverse():
    """The four Penrose residuals of X = I for Y = diag(1, 0): YXY − Y = 0, XYX − X = diag(0, −1), the two
    symmetry residuals 0 — so a wrong X is seen by condition 2 alone here."""
    R = svc.penrose_residuals(sp.diag(1, 0), sp.eye(2))
    assert list(R) == ["YXY = Y", "XYX = X", "(YX)ᵀ = YX", "(XY)ᵀ = XY"]
    assert R["YXY = Y"] == sp.zeros(2, 2) and R["XYX = X"] == sp.diag(0, -1)
    assert R["(YX)ᵀ = YX"] == sp.zeros(2, 2) and R["(XY)ᵀ = XY"] == sp.zeros(2, 2)
    S = sp.Matrix([[1, 2], [0, 0]])  # non-symmetric YX with X = I: condition 3 and 4 see it
    R = svc.penrose_residuals(S, sp.eye(2))
    assert R["(YX)ᵀ = YX"] == S.T - S and R["(XY)ᵀ = XY"] == S.T - S


def test_penrose_first_condition_sees_a_scaled_inverse():
    """Moore–Penrose condition 1, YXY = Y: X = 2·Y† for Y = diag(1, 0) gives YXY − Y = diag(1, 0) (and condition 2,
    XYX − X = diag(2, 0)); only the symmetric conditions hold."""
    import sympy as sp
    from theory.symbolic import vc as svc
    R = svc.penrose_residuals(sp.diag(1, 0), sp.diag(2, 0))
    assert R["YXY = Y"] == sp.diag(1, 0) and R["XYX = X"] == sp.diag(2, 0)
    assert R["(YX)ᵀ = YX"] == sp.zeros(2, 2) and R["(XY)ᵀ = XY"] == sp.zeros(2, 2)


# ---- size caps of the symbolic statements (their cost grows steeply)

@pytest.mark.parametrize("call, ok, bad", [
    ("decomposition_residual", [dict(K=4, N=1, p=1), dict(K=1, N=4, p=1), dict(K=1, N=1, p=3)],
     [(dict(K=5), "K"), (dict(N=5), "N"), (dict(p=4), "p"), (dict(K=0), "K"), (dict(N=0), "N"), (dict(p=0), "p")]),
    ("trace_identity_residual", [dict(p=1), dict(p=4)], [(dict(p=5), "p"), (dict(p=0), "p")]),
    ("obs42_identity", [dict(r=1, p=2), dict(r=1, p=4), dict(r=3, p=4)], [(dict(r=1, p=1), "p"), (dict(r=1, p=5), "p"),
                                                                          (dict(r=0, p=2), "r")]),
])
def test_symbolic_size_caps_are_exactly_the_documented_ones(call, ok, bad):
    """The symbolic statements accept every size up to their documented caps (decomposition K, N ≤ 4, p ≤ 3; trace
    identity p ≤ 4; Obs 4.2 2 ≤ p ≤ 4, 1 ≤ r ≤ 3) and reject the next one with an error naming the argument."""
    f = getattr(svc, call)
    for kw in ok:
        f(**kw)
    caps = {"decomposition_residual": {"K": (1, 4), "N": (1, 4), "p": (1, 3)},
            "trace_identity_residual": {"p": (1, 4)}, "obs42_identity": {"r": (1, 3), "p": (2, 4)}}[call]
    for kw, name in bad:
        lo, hi = caps[name]
        with pytest.raises(ValueError, match=rf"^{name}: must be an integer in \[{lo}, {hi}\]"):
            f(**kw)


def test_obs42_identity_size_caps():
    """r ≤ 3 and 2 ≤ p ≤ 4 are the symbolic size caps; r = 3 is within them, and r = p = 3 is rejected because V_B
    must be a proper subspace — a different error from the cap."""
    with pytest.raises(ValueError, match="proper subspace"):
        svc.obs42_identity(3, 3)
    with pytest.raises(ValueError, match=r"r: must be an integer in \[1, 3\]"):
        svc.obs42_identity(4, 4)


def test_vc_generic_symmetric_size_cap():
    """symbolic/vc.generic_symmetric: 1 ≤ p ≤ 6 (the symbolic cost cap), p = 7 is an error naming p."""
    assert svc.generic_symmetric(6, "x").shape == (6, 6) and svc.generic_symmetric(1, "x").shape == (1, 1)
    for bad in (0, 7):
        with pytest.raises(ValueError, match=r"^p: must be an integer in \[1, 6\]"):
            svc.generic_symmetric(bad, "x")


def test_nd_generic_symmetric_needs_a_positive_size():
    """symbolic/nd: the generic symmetric n×n Cov needs n ≥ 1 (n = 0 is an error, not an empty matrix)."""
    from theory.symbolic import nd as snd

    assert snd.generic_symmetric(1).shape == (1, 1)
    with pytest.raises(ValueError, match="n: must be a positive integer"):
        snd.generic_symmetric(0)


# ---- ND's symbolic floor residuals (A15, A30, A31)

def test_floor_residuals_default_target_is_category_zero():
    """ND A15/A30 symbolic residuals: the default target i = 0 is valid and gives the same residuals as i=0."""
    from theory.symbolic import nd as snd

    a, b = snd.floor_residuals(2), snd.floor_residuals(2, 0)
    assert a.keys() == b.keys() and all(sp.simplify(a[k] - b[k]) == 0 for k in a)


def test_relative_floor_residual_default_category_is_0():
    """ND A31's symbolic check is stated for category i = 0 by default (the planted residual depends on i)."""
    import theory.symbolic.nd as nd
    assert nd.relative_floor_residual(3, planted=True) == nd.relative_floor_residual(3, 0, planted=True)


def test_centred_is_the_second_moment_minus_the_mean_outer_product():
    """symbolic/nd.centred (the planted 'centred covariance' of the ND checks): C − μμᵀ entry by entry."""
    from theory.symbolic import nd as snd

    C = snd.generic_symmetric(2)
    Cc = snd.centred(C)
    m0, m1 = sp.symbols("mu0 mu1")
    assert sp.expand(Cc[0, 1] - (C[0, 1] - m0 * m1)) == 0 and sp.expand(Cc[1, 1] - (C[1, 1] - m1**2)) == 0
