"""The CCA family — canonical correlations, mean CCA, SVCCA, PWCCA — from streamed centred cross-moments.

With the centred sums C_xx = X_cᵀX_c, C_yy = Y_cᵀY_c, C_xy = X_cᵀY_c (a :class:`~theory.geometry.moments.
CrossMoments`, one pass, any number of samples):

* canonical correlations (Hotelling 1936): ρ_1 ≥ ρ_2 ≥ … the singular values of W_xᵀC_xyW_y, W_x = V_xΛ_x^−½ on
  the r_x eigenvectors of C_xx = V_xΛ_xV_xᵀ with λ > tol·λ_1 (the directions X resolves; likewise Y); there are
  min(r_x, r_y) of them, in [0, 1] (rounding above 1 is clipped). ``tol`` defaults to max(n, p, q)·ε: C_xx is a
  sum of squares, its eigenvalues are resolved to ~p·ε·λ_1, so directions whose singular value is below
  ~√tol·σ_1 of X_c count as absent (a QR of the data would resolve them, at the cost of holding the data);
* mean CCA: mean ρ ("pillai"; Pillai's trace over min(r_x, r_y), repsim's ``cca(summary_type="pillai")``) or
  mean ρ² ("yanai"; Yanai's GCD, the R²_CCA of Kornblith et al. 2019, repsim's default);
* SVCCA (Raghu et al. 2017, Sec 2): each side reduced first to its top-k principal directions that explain a
  fraction ``keep`` (0.99) of its variance — the smallest k with Σ_{i≤k}λ_i ≥ keep·Σλ — then CCA of the reduced
  data; the value is the mean ρ. From moments: C'_xy = V_kᵀC_xyU_k, C'_xx = Λ_k;
* PWCCA (Morcos et al. 2018, Sec 3.2): Σ α_iρ_i/Σα_i with α_i = Σ_j |⟨h_i, x_j⟩|, h_i = X_c a_i the unit-norm
  canonical variates of X and x_j the centred neurons (columns of X_c). ⟨h_i, x_j⟩ = (C_xx a_i)_j, and
  a_i = W_x u_i (u_i the i-th left singular vector), so α_i = ‖V_xΛ_x^½ u_i‖₁ — no sample-space vector needed.
  ``side="x"`` weights by X's neurons (the paper: the representation whose similarity is asked), "y" by Y's,
  "both" averages the two (repsim's ``pwcca``).

Every function takes (X, Y) arrays (read in row blocks into a CrossMoments) or a CrossMoments (Y = None). All are
invariant to translations and to a positive scale of either side; the canonical correlations and mean CCA to any
invertible linear map, SVCCA to orthogonal maps, PWCCA (whose weights are L1 norms over neurons) only to
permutations and sign flips of the neurons.
"""
from __future__ import annotations

import numpy as np

from theory.geometry.moments import CrossMoments


def _moments(X, Y) -> CrossMoments:
    if isinstance(X, CrossMoments):
        if Y is not None:
            raise ValueError("Y: give either a CrossMoments (and Y=None) or two arrays X, Y")
        m = X
    else:
        if Y is None:
            raise ValueError("Y: required with an array X (or pass a CrossMoments as X)")
        m = CrossMoments.from_data(X, Y)
    if m.n < 2:
        raise ValueError(f"X: CCA needs at least 2 samples, got n = {m.n}")
    return m


def _tol(tol, m: CrossMoments) -> float:
    if tol is None:
        return max(m.n, m.p, m.q) * float(np.finfo(np.float64).eps)
    if isinstance(tol, (bool, np.bool_)) or not isinstance(tol, (int, float, np.integer, np.floating)) \
            or not 0 < tol < 1:
        raise ValueError(f"tol: a number in (0, 1) (relative to the largest eigenvalue), got {tol!r}")
    return float(tol)


def _eig(C: np.ndarray, tol: float, side: str) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (descending) and eigenvectors of C kept above tol·λ_1; a ValueError if none is."""
    lam, V = np.linalg.eigh(0.5 * (C + C.T))
    lam, V = lam[::-1], V[:, ::-1]
    if not lam[0] > 0:
        raise ValueError(f"{side}: every feature is constant over the samples; CCA is undefined")
    keep = lam > tol * lam[0]
    return lam[keep], V[:, keep]


def _cca_parts(cxx, cyy, cxy, tol: float):
    """(ρ, U, S, Lx, Vx, Ly, Vy): correlations, singular vectors of the whitened C_xy, and the kept eigenpairs."""
    lx, Vx = _eig(cxx, tol, "X")
    ly, Vy = _eig(cyy, tol, "Y")
    M = (Vx / np.sqrt(lx)).T @ cxy @ (Vy / np.sqrt(ly))
    U, s, Wt = np.linalg.svd(M, full_matrices=False)
    return np.clip(s, 0.0, 1.0), U, Wt.T, lx, Vx, ly, Vy


def canonical_correlations(X, Y=None, tol: float | None = None) -> np.ndarray:
    """The canonical correlations ρ_1 ≥ … ≥ ρ_min(r_x, r_y) of X and Y (module doc), in [0, 1]."""
    m = _moments(X, Y)
    c = m.centred()
    return _cca_parts(c["cxx"], c["cyy"], c["cxy"], _tol(tol, m))[0]


def mean_cca(X, Y=None, summary: str = "pillai", tol: float | None = None) -> float:
    """Mean canonical correlation ("pillai": mean ρ) or mean squared ("yanai": mean ρ², R²_CCA) (module doc)."""
    if summary not in ("pillai", "yanai"):
        raise ValueError(f"summary: 'pillai' (mean ρ) or 'yanai' (mean ρ²), got {summary!r}")
    rho = canonical_correlations(X, Y, tol)
    return float(np.mean(rho if summary == "pillai" else rho * rho))


def _top(lam: np.ndarray, V: np.ndarray, keep: float) -> tuple[np.ndarray, np.ndarray]:
    c = np.cumsum(lam)
    k = int(np.searchsorted(c, keep * c[-1] * (1 - 1e-15))) + 1  # the first k with Σ_{≤k} λ ≥ keep·Σλ
    return lam[:k], V[:, :k]


def svcca(X, Y=None, keep: float = 0.99, tol: float | None = None) -> float:
    """SVCCA (Raghu et al. 2017): mean canonical correlation after reducing each side to the principal directions
    that explain a fraction ``keep`` of its variance (module doc)."""
    if isinstance(keep, (bool, np.bool_)) or not isinstance(keep, (int, float, np.integer, np.floating)) \
            or not 0 < keep <= 1:
        raise ValueError(f"keep: the fraction of variance kept, a number in (0, 1], got {keep!r}")
    m = _moments(X, Y)
    c = m.centred()
    t = _tol(tol, m)
    lx, Vx = _top(*_eig(c["cxx"], t, "X"), float(keep))
    ly, Vy = _top(*_eig(c["cyy"], t, "Y"), float(keep))
    M = (Vx / np.sqrt(lx)).T @ c["cxy"] @ (Vy / np.sqrt(ly))
    return float(np.mean(np.clip(np.linalg.svd(M, compute_uv=False), 0.0, 1.0)))


def pwcca(X, Y=None, side: str = "x", tol: float | None = None) -> float:
    """Projection-weighted CCA (Morcos et al. 2018): Σα_iρ_i/Σα_i, α_i the summed |projections| of one side's
    centred neurons on its unit-norm canonical variates; ``side`` "x", "y" or "both" (the mean; module doc)."""
    if side not in ("x", "y", "both"):
        raise ValueError(f"side: 'x', 'y' or 'both', got {side!r}")
    m = _moments(X, Y)
    c = m.centred()
    rho, U, W, lx, Vx, ly, Vy = _cca_parts(c["cxx"], c["cyy"], c["cxy"], _tol(tol, m))

    def weighted(lam, V, S):
        a = np.abs((V * np.sqrt(lam)) @ S[:, :rho.size]).sum(axis=0)  # α_i = ‖VΛ^½u_i‖₁
        if not a.sum() > 0:
            return float(np.mean(rho))
        return float(a @ rho / a.sum())
    vals = {"x": lambda: weighted(lx, Vx, U), "y": lambda: weighted(ly, Vy, W)}
    if side == "both":
        return 0.5 * (vals["x"]() + vals["y"]())
    return vals[side]()
