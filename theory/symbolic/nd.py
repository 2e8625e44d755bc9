"""Sympy statements of the neural-dependency closed forms (ND A15, A23–A30, A31), for generic symmetric Cov.

Each function builds a generic symmetric n×n matrix of independent symbols and returns the residual
expressions that must vanish identically; :func:`vanishes` decides that exactly (rational-function
arithmetic, no floating point). ``planted=True`` swaps in the wrong formula 1/Cov_ii for
1/(Cov⁻¹)_ii, so the same statements must then fail.

The Lagrange conditions A23–A27 are written in the eigen-coordinates α = Uᵀθ; as U is orthogonal
they are equivalent to the θ-coordinate conditions checked here: ∂H/∂θ = 2Cov θ + η e_i = 0 (A24–A25),
∂H/∂η = θ_i + 1 = 0 (A26), with η = 2/(Cov⁻¹)_ii (A27).
"""
from __future__ import annotations

import sympy as sp


def generic_symmetric(n: int) -> sp.Matrix:
    syms = {}
    for a in range(n):
        for b in range(a, n):
            syms[a, b] = syms[b, a] = sp.Symbol(f"c{a}{b}")
    return sp.Matrix(n, n, lambda a, b: syms[a, b])


def vanishes(expr) -> bool:
    """True iff the rational expression is identically zero."""
    return sp.expand(sp.numer(sp.together(sp.sympify(expr)))) == 0


def floor_residuals(n: int, i: int = 0, planted: bool = False) -> dict:
    """Residuals of ND A15/A30 and of the Lagrange conditions A23–A27 at θ*(0) = −Cov⁻¹e_i/(Cov⁻¹)_ii.

    Returns {name: expression}; every expression vanishes identically for the true closed form.
    (Cov⁻¹)_ii is taken from the adjugate, adj(C)_ii/det C, so no symbolic inversion is needed.
    """
    C = generic_symmetric(n)
    det = C.det(method="berkowitz")
    adj_col = C.adjugate(method="berkowitz")[:, i]
    inv_ii = adj_col[i] / det
    minor = C.copy()
    minor.row_del(i)
    minor.col_del(i)
    det_minor = minor.det(method="berkowitz")
    floor = 1 / (1 / C[i, i] if planted else inv_ii)  # planted: err = Cov_ii instead of 1/(Cov⁻¹)_ii
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
    """ND A31: det C/(C_ii det C_-i-i) − 1/(C_ii (C⁻¹)_ii); planted drops the 1/C_ii factor."""
    C = generic_symmetric(n)
    det = C.det(method="berkowitz")
    minor = C.copy()
    minor.row_del(i)
    minor.col_del(i)
    det_minor = minor.det(method="berkowitz")
    inv_ii = C.adjugate(method="berkowitz")[i, i] / det
    claim = 1 / (inv_ii if planted else C[i, i] * inv_ii)
    return {"A31: det C/(C_ii det C_-i-i) - 1/(C_ii (C^-1)_ii)": det / (C[i, i] * det_minor) - claim}
