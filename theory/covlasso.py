"""CovLasso (ND Eq 2, Eq 6) on a covariance matrix: an exact homotopy solver and a reference CD.

    min_{θ: θ_i = −1} θᵀ Cov θ + λ‖θ‖₁   ⇔   min_θ̂ θ̂ᵀĈovθ̂ − 2b̂ᵀθ̂ + λ‖θ̂‖₁   (Eq 6)

with Ĉov = Cov₋ᵢ₋ᵢ, b̂ = Cov₋ᵢ,ᵢ. KKT (Eq 7, A35–A37): with the correlations c(θ̂) = b̂ − Ĉovθ̂,
|c_j| ≤ λ/2 for every j, and c_j = (λ/2)·sign(θ̂_j) on the support.

Solvers
-------
* :func:`covlasso` / :func:`covlasso_all` / :func:`covlasso_path`: the LARS-lasso homotopy
  (Efron et al. 2004; the "lasso modification": a coefficient that reaches 0 leaves the active set)
  run on the covariance from μ_max = ‖b̂‖_∞ = λ_max/2 down to μ = λ/2. On each segment the active
  block solves Ĉov_AA θ̂_A = b̂_A − μ s_A, so θ̂ is linear in λ between breakpoints (the path of Eq 5
  is piecewise linear). The active block's Cholesky factor is updated by one bordered row when a
  category joins (O(k²)) and downdated with Givens rotations when one leaves (O(k²)); the correlations
  of all categories move by γ·Ĉov_{:,A}d per step (O(nk)). The final θ̂_A is a fresh solve with the
  factor at the requested λ, so the answer is exact to the conditioning of Ĉov_AA: exact zeros off
  the support, KKT residual at rounding level. numba kernels, ``cache=True``; ``covlasso_all`` runs
  the categories in parallel (``prange``).
* :func:`covlasso_cd`: a plain reference cyclic coordinate descent, kept as an independent solver
  for the checks.

Degenerate cases: λ ≥ λ_max(i) gives θ = −e_i (A47); a category that joins while (numerically) in
the span of the active ones (a squared Cholesky pivot ≤ 1e-12·Cov_jj, singular Cov of ND Sec 2.2) is
set aside for the rest of the path, as ``sklearn.linear_model.lars_path`` does.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from theory._homotopy import _PIVOT_RTOL, _TINY, _homotopy, _homotopy_all  # noqa: F401  (numba kernels)
from theory.validate import as_covariance, as_float_array, check_index, check_int



def covlasso_cd(cov, i: int, lam: float, tol: float = 1e-13, max_sweeps: int = 100_000) -> np.ndarray:
    """Reference cyclic coordinate descent for ND Eq 6 (small n; exact zeros by soft-thresholding).

    Stops when a full sweep changes no coordinate by more than ``tol`` (relative to max|θ̂|+1).
    Returns θ with θ_i = −1.
    """
    c, e = _prepare(cov)
    n = c.shape[0]
    i = check_index(i, n)
    lam = float(np.ldexp(_check_lam(lam), -e))
    tol = _check_lam(tol, "tol")
    max_sweeps = check_int(max_sweeps, "max_sweeps", 1)
    rest = np.delete(np.arange(n), i)
    C = c[np.ix_(rest, rest)]
    b = c[rest, i]
    diag = np.diag(C).copy()
    if np.any(diag <= 0):
        j = int(rest[np.argmin(diag)])
        raise ValueError(f"cov: Cov[{j},{j}] = 0: category {j} has no energy; drop it before CovLasso")
    t = np.zeros(n - 1)
    grad = -b.copy()  # Ĉ t − b
    for _ in range(max_sweeps):
        delta = 0.0
        for j in range(n - 1):
            z = t[j] * diag[j] - grad[j]  # b_j − Σ_{k≠j} C_jk t_k
            new = np.sign(z) * max(abs(z) - lam / 2, 0.0) / diag[j]
            d = new - t[j]
            if d != 0.0:
                grad += d * C[:, j]
                t[j] = new
                delta = max(delta, abs(d))
        if delta <= tol * (1.0 + np.abs(t).max()):
            break
    else:
        raise RuntimeError(f"covlasso_cd: no convergence in {max_sweeps} sweeps (i={i}, lam={lam:g})")
    theta = np.empty(n)
    theta[rest] = t
    theta[i] = -1.0
    return theta

# ----------------------------------------------------------------------------------------------
# public API
# ----------------------------------------------------------------------------------------------
def _prepare(cov, name: str = "cov") -> tuple[np.ndarray, int]:
    """(Cov·4⁻ᵏ, 2k): the validated covariance scaled by a power of four so that max Cov_jj ∈ [1/2, 2).

    θ*(λ; s·Cov) = θ*(λ/s; Cov), and a power-of-four scaling is exact (so are the square roots of the
    Cholesky pivots), so the path is computed bit for bit as at unit scale, away from under/overflow;
    λ is scaled by the same power. A nonzero Cov_jj below the smallest normal float64 (subnormal: precision
    lost) is an error.
    """
    c = np.ascontiguousarray(as_covariance(cov, name))
    if c.shape[0] < 2:
        raise ValueError(f"{name}: need at least 2 categories (n = {c.shape[0]} has no other logit to predict from)")
    d = np.diag(c)
    sub = (d > 0) & (d < _TINY)
    if sub.any():
        j = int(np.flatnonzero(sub)[0])
        raise ValueError(f"{name}: Cov[{j},{j}] = {d[j]:.3g} is subnormal in float64 (precision lost); rescale the logits")
    dmax = float(d.max())
    if dmax <= 0:
        return c, 0
    e = 2 * int(np.round(np.log2(dmax) / 2))
    return np.ascontiguousarray(np.ldexp(c, -e)), e


def _unscale(x, e: int, what: str):
    with np.errstate(over="ignore"):
        y = np.ldexp(x, e)
    if not np.all(np.isfinite(y)):
        raise ValueError(f"{what} overflows float64 at this scale of Cov; rescale the logits")
    return y


def _max_steps(n: int) -> int:
    return 50 * n + 1000


def _check_lam(lam, name: str = "lam") -> float:
    if isinstance(lam, (bool, np.bool_)) or not isinstance(lam, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: must be a real number, got {lam!r}")
    lam = float(lam)
    if not np.isfinite(lam) or lam < 0:
        raise ValueError(f"{name}: must be finite and >= 0, got {lam}")
    return lam


def resolve_lambda(cov: np.ndarray, i: int, lam: float | None, rho: float | None) -> float:
    """λ from an absolute ``lam`` or a relative ``rho`` (λ = ρ·λ_max(i), ND Thm 1); exactly one is given."""
    if (lam is None) == (rho is None):
        raise ValueError("give exactly one of lam= (absolute λ) or rho= (λ = rho·λ_max(i))")
    c = np.asarray(cov)
    if c.ndim != 2 or c.shape[0] != c.shape[1] or c.shape[0] < 2:
        raise ValueError(f"cov: expected a square matrix with n >= 2, got shape {c.shape}")
    i = check_index(i, c.shape[0])
    if rho is not None:
        rho = _check_lam(rho, "rho")
        rest = np.delete(np.arange(c.shape[0]), i)
        with np.errstate(over="ignore"):
            out = rho * 2.0 * float(np.abs(c[rest, i]).max())
        if not np.isfinite(out):
            raise ValueError("rho: ρ·λ_max(i) overflows float64; rescale the logits")
        return out
    return _check_lam(lam)


def _solve(c: np.ndarray, i: int, lam: float) -> np.ndarray:
    theta, status, _, _, _ = _homotopy(c, i, lam / 2.0, False, _max_steps(c.shape[0]))
    if status != 0:
        raise RuntimeError(f"covlasso: homotopy did not reach λ = {lam:g} in {_max_steps(c.shape[0])} breakpoints (i={i})")
    return theta


def _scaled_lambda(c: np.ndarray, e: int, i: int, lam, rho) -> float:
    """λ on the scaled Cov (λ·4⁻ᵏ) from an absolute ``lam`` (original units) or a relative ``rho``."""
    if (lam is None) == (rho is None):
        raise ValueError("give exactly one of lam= (absolute λ) or rho= (λ = rho·λ_max(i))")
    if rho is not None:
        return resolve_lambda(c, i, None, rho)
    return float(np.ldexp(_check_lam(lam), -e))


def covlasso(cov, i: int, lam: float | None = None, *, rho: float | None = None) -> np.ndarray:
    """θ*(λ) of ND Eq 2 / Eq 6 for category ``i`` (θ_i = −1 exactly); λ absolute or ``rho=`` relative.

    Exact: the LARS-lasso homotopy from λ_max(i) down to λ (module doc). λ ≥ λ_max(i) gives −e_i.
    """
    c, e = _prepare(cov)
    i = check_index(i, c.shape[0])
    return _solve(c, i, _scaled_lambda(c, e, i, lam, rho))


def covlasso_all(cov, lam: float | None = None, *, rho=None) -> np.ndarray:
    """Rows θ*(λ) for every category at once, (n, n) with Θ_ii = −1; parallel over i (numba prange).

    ``lam`` is one absolute λ for all categories; ``rho`` a relative one, λ_i = ρ·λ_max(i). ``rho`` may also be a
    1-D sequence of relative λs: then an array (len(rho), n, n), entry k equal to ``covlasso_all(cov, rho=rho[k])``
    (Cov is validated and scaled once).
    """
    c, e = _prepare(cov)
    n = c.shape[0]
    if (lam is None) == (rho is None):
        raise ValueError("give exactly one of lam= (absolute λ) or rho= (λ = rho·λ_max(i))")
    if rho is not None and not isinstance(rho, (bool, np.bool_)) and np.ndim(rho) == 1:
        rhos = [_check_lam(r, "rho") for r in (rho.tolist() if isinstance(rho, np.ndarray) else rho)]
        out = np.empty((len(rhos), n, n))
        for k, r in enumerate(rhos):
            out[k] = _homotopy_rows(c, e, None, r)
        return out
    return _homotopy_rows(c, e, lam, rho)


def _homotopy_rows(c: np.ndarray, e: int, lam, rho) -> np.ndarray:
    """covlasso_all's rows on the validated, scaled Cov ``c`` (scale exponent ``e``)."""
    n = c.shape[0]
    if rho is not None:
        rho = _check_lam(rho, "rho")
        off = np.abs(c)
        np.fill_diagonal(off, 0.0)
        mu = rho * off.max(axis=0)
    else:
        mu = np.full(n, np.ldexp(_check_lam(lam), -e) / 2.0)
    out, status = _homotopy_all(c, mu, _max_steps(n))
    if status.any():
        raise RuntimeError(f"covlasso_all: homotopy did not finish for categories {np.flatnonzero(status)[:10].tolist()}")
    return out


@dataclasses.dataclass
class CovLassoPath:
    """The exact piecewise-linear CovLasso path of category ``i`` (ND Eq 5, Eq 6).

    ``breakpoints``: λ_0 = λ_max(i) > λ_1 > ... > λ_K (the last is the smallest λ asked for);
    ``coefs[k]``: θ*(λ_k) with θ_i = −1. Between breakpoints θ* is linear in λ, so :meth:`at`
    reads any λ in [λ_K, ∞) off exactly. ``lams``/``thetas``: the λs asked for and θ* there.
    """

    i: int
    breakpoints: np.ndarray
    coefs: np.ndarray
    lams: np.ndarray | None = None
    thetas: np.ndarray | None = None

    def at(self, lams) -> np.ndarray:
        """θ*(λ) for each λ in ``lams`` (shape (m, n), or (n,) for a scalar), by exact interpolation."""
        lam = as_float_array(lams, "lams")
        scalar = lam.ndim == 0
        if lam.ndim > 1:
            raise ValueError(f"lams: expected a scalar or a 1-D array, got shape {lam.shape}")
        lam = np.atleast_1d(lam)
        if np.any(lam < 0):
            raise ValueError("lams: must be finite and >= 0")
        lo = self.breakpoints[-1]
        if np.any(lam < lo * (1 - 1e-15) - 1e-300):
            raise ValueError(f"lams: the path was computed down to λ = {lo:g} only; ask covlasso_path for smaller λ")
        x = self.breakpoints[::-1]  # increasing
        y = self.coefs[::-1]
        out = np.empty((lam.size, self.coefs.shape[1]))
        for m, l in enumerate(lam):
            if l >= x[-1]:
                out[m] = y[-1]
                continue
            k = int(np.searchsorted(x, l, side="right")) - 1
            k = min(max(k, 0), len(x) - 2)
            if x[k + 1] == x[k]:
                out[m] = y[k]
                continue
            w = (l - x[k]) / (x[k + 1] - x[k])
            out[m] = (1 - w) * y[k] + w * y[k + 1]  # exact: θ* is linear in λ on [λ_{k+1}, λ_k]
        out[:, self.i] = -1.0
        return out[0] if scalar else out

    @property
    def supports(self) -> list:
        return [np.flatnonzero((th != 0) & (np.arange(th.size) != self.i)) for th in self.coefs]


def covlasso_path(cov, i: int, lams=None) -> CovLassoPath:
    """The exact CovLasso path of category ``i`` from λ_max(i) down to min(lams) (0 by default).

    Returns a :class:`CovLassoPath` (breakpoints, coefficients at each; ``.at(λ)`` for any λ in between;
    with ``lams`` given, ``.lams``/``.thetas`` hold θ* at those λ).
    """
    c, e = _prepare(cov)
    n = c.shape[0]
    i = check_index(i, n)
    lam_arr = None
    lam_stop = 0.0
    if lams is not None:
        lam_arr = np.atleast_1d(as_float_array(lams, "lams"))
        if lam_arr.ndim != 1 or np.any(lam_arr < 0):
            raise ValueError("lams: must be a non-empty 1-D array of finite values >= 0")
        lam_stop = float(np.ldexp(lam_arr.min(), -e))
    theta, status, nrec, mus, ths = _homotopy(c, i, lam_stop / 2.0, True, _max_steps(n))
    if status != 0:
        raise RuntimeError(f"covlasso_path: homotopy did not finish in {_max_steps(n)} breakpoints (i={i})")
    bps = _unscale(2.0 * np.asarray(mus), e, "λ_max(i)")
    path = CovLassoPath(i=i, breakpoints=bps, coefs=np.asarray(ths))
    if lam_arr is not None:
        path.lams = lam_arr
        path.thetas = path.at(lam_arr)
    return path


def kkt_violation(cov, i: int, lam: float, theta) -> float:
    """max_j of the KKT residual of Eq 6 (A35) at θ, in units of λ_max(i) (0 at the exact optimum).

    Evaluated on Cov scaled by a power of four (exact), so it is scale-free; bad θ or λ (NaN, wrong shape,
    θ_i ≠ −1 is allowed: only j ≠ i enter) raise ValueError.
    """
    c, e = _prepare(cov)
    n = c.shape[0]
    i = check_index(i, n)
    lam_s = float(np.ldexp(_check_lam(lam), -e))
    th = as_float_array(theta, "theta", ndim=1)
    if th.shape != (n,):
        raise ValueError(f"theta: expected shape ({n},), got {th.shape}")
    rest = np.delete(np.arange(n), i)
    t = th[rest]
    with np.errstate(over="ignore", invalid="ignore"):
        g = c[np.ix_(rest, rest)] @ t - c[rest, i]  # ½ gradient of the smooth part
    if not np.all(np.isfinite(g)):
        raise ValueError("theta: Ĉov θ̂ overflows float64 (θ far too large for this Cov)")
    half = lam_s / 2.0
    on = t != 0
    r = np.where(on, np.abs(g + half * np.sign(t)), np.maximum(np.abs(g) - half, 0.0))
    lmax = 2.0 * np.abs(c[rest, i]).max()
    if lmax == 0.0:
        return float(0.0 if r.max() == 0 else np.inf)  # f_i uncorrelated with all: θ̂ = 0 is the only optimum
    return float(r.max() / lmax)


def kkt_violation_all(cov, Theta, lam=None, *, rho=None) -> np.ndarray:
    """:func:`kkt_violation` for every row of ``Theta`` (as returned by :func:`covlasso_all`) with one GEMM.

    Row i of Θ·Cov is Ĉovθ̂ − b̂ on j ≠ i because θ_i = −1. ``lam``: one λ for all rows; ``rho``: λ_i = ρ·λ_max(i).
    Returns the residuals in units of λ_max(i).
    """
    c, e = _prepare(cov)
    n = c.shape[0]
    T = as_float_array(Theta, "Theta", ndim=2)
    if T.shape != (n, n):
        raise ValueError(f"Theta: expected shape ({n}, {n}), got {T.shape}")
    if not np.all(np.diag(T) == -1.0):
        raise ValueError("Theta: row i must have θ_i = −1 (rows of covlasso_all)")
    off = np.abs(c)
    np.fill_diagonal(off, 0.0)
    lmax = 2.0 * off.max(axis=0)
    if (lam is None) == (rho is None):
        raise ValueError("give exactly one of lam= (absolute λ) or rho= (λ = rho·λ_max(i))")
    if rho is None:
        half = np.full(n, np.ldexp(_check_lam(lam), -e)) / 2.0
    else:
        half = _check_lam(rho, "rho") * lmax / 2.0
    with np.errstate(over="ignore", invalid="ignore"):
        G = T @ c
    if not np.all(np.isfinite(G)):
        raise ValueError("Theta: Θ·Cov overflows float64 (Θ far too large for this Cov)")
    on = T != 0
    r = np.where(on, np.abs(G + half[:, None] * np.sign(T)), np.maximum(np.abs(G) - half[:, None], 0.0))
    np.fill_diagonal(r, 0.0)
    rm = r.max(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(lmax > 0, rm / np.where(lmax > 0, lmax, 1.0), np.where(rm == 0, 0.0, np.inf))
