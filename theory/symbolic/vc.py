"""Sympy statements of the VC paper's exact identities (VC Eq 7, Thm 5.2 for invertible Σ_T, Obs 4.2).

Everything is exact rational / polynomial arithmetic; :func:`vanishes` decides identically-zero.
``planted=True`` swaps in a wrong formula so that the same statement must fail (negative controls).
"""
from __future__ import annotations

import sympy as sp


def vanishes(expr) -> bool:
    """True iff the rational expression is identically zero."""
    return sp.expand(sp.numer(sp.together(sp.sympify(expr)))) == 0


def generic_symmetric(p: int, name: str) -> sp.Matrix:
    syms = {}
    for a in range(p):
        for b in range(a, p):
            syms[a, b] = syms[b, a] = sp.Symbol(f"{name}{a}{b}")
    return sp.Matrix(p, p, lambda a, b: syms[a, b])


def decomposition_residual(K: int = 2, N: int = 2, p: int = 2, planted: bool = False) -> sp.Matrix:
    """Σ_T − Σ_B − Σ_W (VC Eq 1–3, Eq 7) for K·N symbolic feature vectors h_{k,i} ∈ R^p: the zero matrix.

    Planted: Σ_W with the unbiased normaliser 1/(K(N−1)) in place of 1/(KN).
    """
    h = [[sp.Matrix([sp.Symbol(f"h{k}_{i}_{j}") for j in range(p)]) for i in range(N)] for k in range(K)]
    mu = [sum(h[k], sp.zeros(p, 1)) / N for k in range(K)]
    mg = sum(mu, sp.zeros(p, 1)) / K
    scatter = sum(((h[k][i] - mu[k]) * (h[k][i] - mu[k]).T for k in range(K) for i in range(N)), sp.zeros(p, p))
    Sw = scatter / (K * (N - 1)) if planted else scatter / (K * N)
    Sb = sum(((mu[k] - mg) * (mu[k] - mg).T for k in range(K)), sp.zeros(p, p)) / K
    St = sum(((h[k][i] - mg) * (h[k][i] - mg).T for k in range(K) for i in range(N)), sp.zeros(p, p)) / (K * N)
    return (St - Sb - Sw).applyfunc(sp.expand)


def trace_identity_residual(p: int = 2, planted: bool = False):
    """For invertible Σ_T = Σ_B + Σ_W (generic symmetric Σ_B, Σ_W): Tr[Σ_T⁻¹Σ_B] − (p − Tr[Σ_T⁻¹Σ_W]) ≡ 0.

    Written with the adjugate (Σ_T⁻¹ = adj Σ_T / det Σ_T), so the residual is a polynomial: Tr[adj·Σ_B] +
    Tr[adj·Σ_W] − p·det. Hence Tr[Σ_T⁻¹Σ_B] = p = rank Σ_B (equality in VC Thm 5.2 with full-rank Σ_B) iff
    Tr[Σ_T⁻¹Σ_W] = 0 iff Σ_W = 0 (Σ_T⁻¹ ≻ 0). Planted: the bound claimed with equality for every Σ_W
    (residual Tr[adj·Σ_B] − p·det, which is −Tr[adj·Σ_W] ≢ 0).
    """
    Sb, Sw = generic_symmetric(p, "b"), generic_symmetric(p, "w")
    St = Sb + Sw
    adj = St.adjugate(method="berkowitz")
    det = St.det(method="berkowitz")
    if planted:
        return sp.expand((adj * Sb).trace() - p * det)
    return sp.expand((adj * Sb).trace() + (adj * Sw).trace() - p * det)


def rank_additive_equality(planted: bool = False):
    """p = 2, Σ_B = bbᵀ, Σ_W = wwᵀ (generic b, w): Tr[Σ_T⁻¹Σ_B] − rank Σ_B as a rational function.

    It vanishes identically: VC Thm 5.2's bound is attained although Σ_W ≠ 0 — equality holds whenever
    rank Σ_B + rank Σ_W = rank Σ_T, not only at full collapse. Planted: rank Σ_B taken as 2 (= p).
    """
    b = sp.Matrix(sp.symbols("b0 b1"))
    w = sp.Matrix(sp.symbols("w0 w1"))
    St = b * b.T + w * w.T
    val = (St.adjugate() * b * b.T).trace() / St.det()
    return sp.simplify(val - (2 if planted else 1))


def fuzziness_counterexample() -> dict:
    """VC Obs 4.2 exactly: Σ_B = diag(1, 0), Σ_W = I, U = [[1, 1], [0, 1]].

    Returns the exact values Tr[Σ_B†Σ_W] (1) and Tr[(UΣ_BUᵀ)†UΣ_WUᵀ] (2), the true pseudo-inverse
    (UΣ_BUᵀ)† and the paper's claimed identity U⁻ᵀΣ_B†U⁻¹ (which differ: the identity in Obs 4.2's display
    holds for invertible Σ_B, not for a pseudo-inverse), and the value the claimed identity would give (1).
    """
    Sb = sp.Matrix([[1, 0], [0, 0]])
    Sw = sp.eye(2)
    U = sp.Matrix([[1, 1], [0, 1]])
    Ui = U.inv()
    before = (Sb.pinv() * Sw).trace()
    true_pinv = (U * Sb * U.T).pinv()
    claimed_pinv = Ui.T * Sb.pinv() * Ui
    after = (true_pinv * U * Sw * U.T).trace()
    via_claim = (claimed_pinv * U * Sw * U.T).trace()
    return {"before": sp.nsimplify(before), "after": sp.nsimplify(after), "true_pinv": true_pinv,
            "claimed_pinv": claimed_pinv, "after_via_claimed_identity": sp.nsimplify(via_claim)}
