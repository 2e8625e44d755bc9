"""Sympy statements of the VC paper's exact identities (VC Eq 7, Thm 5.2 for invertible Σ_T, Obs 4.2).

Everything is exact rational / polynomial arithmetic; :func:`vanishes` decides identically-zero.
``planted=True`` swaps in a wrong formula so that the same statement must fail (negative controls).
Sizes are capped (sympy's cost grows steeply with them): a larger size is a ValueError, never a hang.
"""
from __future__ import annotations

import sympy as sp


def _size(v, name: str, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise ValueError(f"{name}: must be an integer in [{lo}, {hi}] (symbolic cost grows steeply), got {v!r}")
    return v


def vanishes(expr) -> bool:
    """True iff the rational expression is identically zero."""
    return sp.expand(sp.numer(sp.together(sp.sympify(expr)))) == 0


def generic_symmetric(p: int, name: str) -> sp.Matrix:
    """A p×p symmetric matrix of independent symbols name{a}{b}."""
    p = _size(p, "p", 1, 6)
    syms = {}
    for a in range(p):
        for b in range(a, p):
            syms[a, b] = syms[b, a] = sp.Symbol(f"{name}{a}{b}")
    return sp.Matrix(p, p, lambda a, b: syms[a, b])


def decomposition_residual(K: int = 2, N: int = 2, p: int = 2, planted: bool = False,
                           raw_moments: bool = False) -> sp.Matrix:
    """Σ_T − Σ_B − Σ_W (VC Eq 1–3, Eq 7) for K·N symbolic feature vectors h_{k,i} ∈ R^p: the zero matrix.

    Planted: Σ_W with the unbiased normaliser 1/(K(N−1)) in place of 1/(KN). ``raw_moments``: Σ_T' and Σ_W' from
    raw second moments, (1/KN)Σhhᵀ − μ_Gμ_Gᵀ and (1/KN)Σhhᵀ − (1/K)Σμ_kμ_kᵀ (the textbook one-pass formulas),
    returned as the 3p×p stack [Σ_T' − Σ_B − Σ_W'; Σ_T' − Σ_T; Σ_W' − Σ_W], all ≡ 0: those formulas are exact in
    algebra, their defect is cancellation in floating point. (The first block alone could not see a wrong raw
    moment: it cancels between Σ_T' and Σ_W'.)
    """
    K, N, p = _size(K, "K", 1, 4), _size(N, "N", 1, 4), _size(p, "p", 1, 3)
    h = [[sp.Matrix([sp.Symbol(f"h{k}_{i}_{j}") for j in range(p)]) for i in range(N)] for k in range(K)]
    mu = [sum(h[k], sp.zeros(p, 1)) / N for k in range(K)]
    mg = sum(mu, sp.zeros(p, 1)) / K
    scatter = sum(((h[k][i] - mu[k]) * (h[k][i] - mu[k]).T for k in range(K) for i in range(N)), sp.zeros(p, p))
    Sw = scatter / (K * (N - 1)) if planted else scatter / (K * N)
    Sb = sum(((mu[k] - mg) * (mu[k] - mg).T for k in range(K)), sp.zeros(p, p)) / K
    St = sum(((h[k][i] - mg) * (h[k][i] - mg).T for k in range(K) for i in range(N)), sp.zeros(p, p)) / (K * N)
    if raw_moments:  # the raw second moment cancels in Σ_T − Σ_B − Σ_W: compare each formula with its definition too
        raw = sum((h[k][i] * h[k][i].T for k in range(K) for i in range(N)), sp.zeros(p, p)) / (K * N)
        St_raw = raw - mg * mg.T
        Sw_raw = raw - sum((mu[k] * mu[k].T for k in range(K)), sp.zeros(p, p)) / K
        return sp.Matrix.vstack(St_raw - Sb - Sw_raw, St_raw - St, Sw_raw - Sw).applyfunc(sp.expand)
    return (St - Sb - Sw).applyfunc(sp.expand)


def trace_identity_residual(p: int = 2, planted: bool = False):
    """For invertible Σ_T = Σ_B + Σ_W (generic symmetric Σ_B, Σ_W): Tr[Σ_T⁻¹Σ_B] − (p − Tr[Σ_T⁻¹Σ_W]) ≡ 0.

    Written with the adjugate (Σ_T⁻¹ = adj Σ_T / det Σ_T), so the residual is a polynomial: Tr[adj·Σ_B] +
    Tr[adj·Σ_W] − p·det. Hence Tr[Σ_T⁻¹Σ_B] = p = rank Σ_B (equality in VC Thm 5.2 with full-rank Σ_B) iff
    Tr[Σ_T⁻¹Σ_W] = 0 iff Σ_W = 0 (Σ_T⁻¹ ≻ 0). Planted: Σ_T with the unbiased normaliser, n/(n−1)·(Σ_B + Σ_W)
    (np.cov's default ddof=1) against Σ_B, Σ_W with 1/n: the residual is then (n/(n−1) − 1)·p·det ≢ 0.
    """
    p = _size(p, "p", 1, 4)
    Sb, Sw = generic_symmetric(p, "b"), generic_symmetric(p, "w")
    c = sp.Symbol("n") / (sp.Symbol("n") - 1) if planted else sp.Integer(1)
    St = (Sb + Sw) * c
    adj = St.adjugate(method="berkowitz")
    det = St.det(method="berkowitz")
    return sp.expand(sp.numer(sp.together((adj * Sb).trace() + (adj * Sw).trace() - p * det)))


def rank_additive_equality(planted: bool = False):
    """p = 2, Σ_B = bbᵀ, Σ_W = wwᵀ (generic b, w): Tr[Σ_T⁻¹Σ_B] − rank Σ_B as a rational function.

    It vanishes identically: VC Thm 5.2's bound is attained although Σ_W ≠ 0 — equality holds whenever
    rank Σ_B + rank Σ_W = rank Σ_T, not only at full collapse. Planted: Σ_T with the unbiased normaliser
    n/(n−1) (np.cov's default), which gives (n−1)/n instead of 1.
    """
    b = sp.Matrix(sp.symbols("b0 b1"))
    w = sp.Matrix(sp.symbols("w0 w1"))
    n = sp.Symbol("n")
    St = (b * b.T + w * w.T) * (n / (n - 1) if planted else 1)
    val = (St.adjugate() * b * b.T).trace() / St.det()
    return sp.cancel(sp.together(val - 1))


def fuzziness_counterexample(U=None) -> dict:
    """VC Obs 4.2's example exactly: Σ_B = diag(1, 0), Σ_W = I, U = [[1, 1], [0, 1]] (or the given U).

    Returns the exact values Tr[Σ_B†Σ_W] ("before", 1) and Tr[(UΣ_BUᵀ)†UΣ_WUᵀ] ("after", 2 for the paper's U),
    the true pseudo-inverse (UΣ_BUᵀ)† and U⁻ᵀΣ_B†U⁻¹, and the value the identity U⁻ᵀΣ_B†U⁻¹ would give (1).
    The paper's U keeps V_B = span(e₁) (U e₁ = e₁) but maps e₂ ∈ V_B⊥ to e₁ + e₂: it is not of the block form
    Obs 4.2 assumes, so the identity is not claimed for it (see :func:`obs42_identity`).
    """
    Sb = sp.Matrix([[1, 0], [0, 0]])
    Sw = sp.eye(2)
    try:
        U = sp.Matrix([[1, 1], [0, 1]]) if U is None else sp.Matrix(U)
    except (TypeError, ValueError, NotImplementedError, AttributeError, IndexError) as exc:
        raise ValueError(f"U: must be an invertible 2×2 matrix, got {U!r} ({type(exc).__name__}: {exc})") from None
    if U.shape != (2, 2) or U.det() == 0:
        raise ValueError(f"U: must be an invertible 2×2 matrix, got {U.tolist()}")
    Ui = U.inv()
    before = (Sb.pinv() * Sw).trace()
    true_pinv = (U * Sb * U.T).pinv()
    claimed_pinv = Ui.T * Sb.pinv() * Ui
    after = (true_pinv * U * Sw * U.T).trace()
    via_claim = (claimed_pinv * U * Sw * U.T).trace()
    return {"before": sp.nsimplify(before), "after": sp.nsimplify(after), "true_pinv": true_pinv,
            "claimed_pinv": claimed_pinv, "after_via_claimed_identity": sp.nsimplify(via_claim)}


def penrose_residuals(Y: sp.Matrix, X: sp.Matrix) -> dict:
    """The four Moore–Penrose conditions for X = Y†: YXY − Y, XYX − X, (YX)ᵀ − YX, (XY)ᵀ − XY (all ≡ 0 iff X = Y†)."""
    Y, X = sp.Matrix(Y), sp.Matrix(X)
    if not (Y.is_square and Y.shape == X.shape):
        raise ValueError(f"Y, X: must be square matrices of one shape, got {Y.shape} and {X.shape}")
    YX, XY = Y * X, X * Y
    return {"YXY = Y": Y * X * Y - Y, "XYX = X": X * Y * X - X, "(YX)ᵀ = YX": YX.T - YX, "(XY)ᵀ = XY": XY.T - XY}


def _generic(rows: int, cols: int, name: str) -> sp.Matrix:
    return sp.Matrix(rows, cols, lambda a, b: sp.Symbol(f"{name}{a}{b}"))


def obs42_identity(r: int = 1, p: int = 2, coupling: str = "none") -> dict:
    """VC Obs 4.2's identity (UΣ_BUᵀ)† = U⁻ᵀΣ_B†U⁻¹, as the Penrose conditions for X = U⁻ᵀΣ_B†U⁻¹, Y = UΣ_BUᵀ.

    Coordinates adapted to V_B ⊕ V_B⊥ (V_B = span(e₁..e_r); an orthogonal change of basis commutes with †, so
    this is no loss of generality): Σ_B = [[S, 0], [0, 0]] with S a generic symmetric r×r block (invertible),
    Σ_B† = [[S⁻¹, 0], [0, 0]], and U = [[A, C], [D, B]] with generic A (r×r) and B ((p−r)×(p−r)).
    ``coupling``: "none" (C = D = 0: U maps V_B and V_B⊥ into themselves, the observation's hypothesis),
    "upper" (generic C: U keeps V_B but mixes V_B⊥ into it, like the paper's counterexample U), or "lower"
    (generic D: U keeps V_B⊥ only). Returns {condition: residual matrix}; :func:`vanishes` on every entry decides.
    """
    r, p = _size(r, "r", 1, 3), _size(p, "p", 2, 4)
    if r >= p:
        raise ValueError(f"r: V_B must be a proper subspace (r < p), got r = {r}, p = {p}")
    if coupling not in ("none", "upper", "lower"):
        raise ValueError(f"coupling: must be 'none', 'upper' or 'lower', got {coupling!r}")
    q = p - r
    S = generic_symmetric(r, "s")
    A, B = _generic(r, r, "a"), _generic(q, q, "d")
    C = _generic(r, q, "c") if coupling == "upper" else sp.zeros(r, q)
    D = _generic(q, r, "l") if coupling == "lower" else sp.zeros(q, r)
    U = sp.BlockMatrix([[A, C], [D, B]]).as_explicit()
    Sb = sp.diag(S, sp.zeros(q, q))
    Sb_pinv = sp.diag(S.adjugate() / S.det(), sp.zeros(q, q))
    Ui = U.adjugate() / U.det()
    X = Ui.T * Sb_pinv * Ui
    Y = U * Sb * U.T
    return penrose_residuals(Y, X)


def obs42_identity_holds(r: int = 1, p: int = 2, coupling: str = "none") -> bool:
    """True iff every Penrose residual of :func:`obs42_identity` vanishes identically."""
    return all(vanishes(e) for R in obs42_identity(r, p, coupling).values() for e in R)
