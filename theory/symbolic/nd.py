"""Sympy statements of the neural-dependency closed forms (ND A15, A23–A30, A31), for generic symmetric Cov.

Each function builds a generic symmetric n×n matrix of independent symbols and returns the residual
expressions that must vanish identically; :func:`vanishes` decides that exactly (rational-function
arithmetic, no floating point). ``planted=True`` plants the negative control of ``nd.floor_closed_form`` /
``nd.relative_floor``: the floor (and θ*(0), R) computed from the *centred* covariance Cov − μμᵀ (``np.cov``,
``np.corrcoef``; μ a vector of mean symbols) while the conditions are those of the uncentred Cov = E[f fᵀ] of
ND Remark 1, so the same statements must then fail. The numeric side of both checks plants the same formula.

The Lagrange conditions A23–A27 are written in the eigen-coordinates α = Uᵀθ; as U is orthogonal
they are equivalent to the θ-coordinate conditions checked here: ∂H/∂θ = 2Cov θ + η e_i = 0 (A24–A25),
∂H/∂η = θ_i + 1 = 0 (A26), with η = 2/(Cov⁻¹)_ii (A27).
"""
from __future__ import annotations

import sympy as sp


def _check_size(n, i: int) -> tuple[int, int]:
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise ValueError(f"n: must be an integer >= 2, got {n!r}")
    if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n:
        raise ValueError(f"i = {i!r} is out of range for n = {n}")
    return n, i


def generic_symmetric(n: int) -> sp.Matrix:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n: must be a positive integer, got {n!r}")
    syms = {}
    for a in range(n):
        for b in range(a, n):
            syms[a, b] = syms[b, a] = sp.Symbol(f"c{a}{b}")
    return sp.Matrix(n, n, lambda a, b: syms[a, b])


def centred(C: sp.Matrix) -> sp.Matrix:
    """C − μμᵀ with mean symbols μ_0…μ_{n−1}: the centred covariance of logits with second moment C."""
    mu = sp.Matrix(C.shape[0], 1, lambda a, _: sp.Symbol(f"mu{a}"))
    return C - mu * mu.T


def vanishes(expr) -> bool:
    """True iff the rational expression is identically zero.

    Exact either way: a nonzero value at one rational point proves it is not identically zero (the fast
    exit, e.g. for a planted formula); otherwise the numerator is expanded to 0.
    """
    e = sp.sympify(expr)
    syms = sorted(e.free_symbols, key=lambda x: x.name)
    for k in range(3):
        point = {x: sp.Rational(7 + (31 * (j + 1) * (k + 3)) % 17, 5 + ((j + 2) * (k + 1)) % 11)
                 + (4 if x.name.startswith("c") and x.name[1] == x.name[2:] else 0)
                 for j, x in enumerate(syms)}  # diagonal symbols c_aa get +4 (keeps the matrices regular)
        v = e.xreplace(point)
        if v.is_finite:
            if v != 0:
                return False
            break
    return sp.expand(sp.numer(sp.together(e))) == 0


def floor_residuals(n: int, i: int = 0, planted: bool = False) -> dict:
    """Residuals of ND A15/A30 and of the Lagrange conditions A23–A27 at θ*(0) = −Cov⁻¹e_i/(Cov⁻¹)_ii.

    Returns {name: expression}; every expression vanishes identically for the true closed form.
    (Cov⁻¹)_ii is taken from the adjugate, adj(C)_ii/det C, so no symbolic inversion is needed.
    """
    n, i = _check_size(n, i)
    C = generic_symmetric(n)
    det = C.det(method="berkowitz")
    minor = C.copy()
    minor.row_del(i)
    minor.col_del(i)
    det_minor = minor.det(method="berkowitz")
    Cf = centred(C) if planted else C  # the matrix the floor and θ*(0) are computed from
    adj_col = Cf.adjugate(method="berkowitz")[:, i]
    inv_ii = adj_col[i] / Cf.det(method="berkowitz")
    floor = 1 / inv_ii
    theta = -adj_col / adj_col[i]  # = −Cov⁻¹e_i/(Cov⁻¹)_ii (det cancels)
    eta = 2 * floor
    e = sp.zeros(n, 1)
    e[i] = 1
    grad = 2 * C * theta + eta * e
    res = {"A15: det C/det C_-i-i - floor": det / det_minor - floor,
           "A26: theta_i + 1": theta[i] + 1,
           "A29-A30: theta^T C theta - floor": (theta.T * C * theta)[0, 0] - floor}
    for k in range(n):
        res[f"A24-A25: (2 C theta + eta e_i)_{k}"] = grad[k]
    return res


def relative_floor_residual(n: int, i: int = 0, planted: bool = False) -> dict:
    """ND A31: det C/(C_ii det C_-i-i) − 1/(C_ii (C⁻¹)_ii); planted: the right side from the centred C − μμᵀ."""
    n, i = _check_size(n, i)
    C = generic_symmetric(n)
    det = C.det(method="berkowitz")
    minor = C.copy()
    minor.row_del(i)
    minor.col_del(i)
    det_minor = minor.det(method="berkowitz")
    Cf = centred(C) if planted else C
    inv_ii = Cf.adjugate(method="berkowitz")[i, i] / Cf.det(method="berkowitz")
    claim = 1 / (Cf[i, i] * inv_ii)
    return {"A31: det C/(C_ii det C_-i-i) - 1/(C_ii (C^-1)_ii)": det / (C[i, i] * det_minor) - claim}
