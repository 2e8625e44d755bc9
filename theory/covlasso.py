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
from numba import njit, prange

from theory.validate import as_covariance, check_index

_PIVOT_RTOL = 1e-12  # squared Cholesky pivot below this × Cov_jj: category j is in the span of the active ones
_REFRESH = 16  # recompute θ̂_A and the correlations from scratch every so many breakpoints


def covlasso_cd(cov, i: int, lam: float, tol: float = 1e-13, max_sweeps: int = 100_000) -> np.ndarray:
    """Reference cyclic coordinate descent for ND Eq 6 (small n; exact zeros by soft-thresholding).

    Stops when a full sweep changes no coordinate by more than ``tol`` (relative to max|θ̂|+1).
    Returns θ with θ_i = −1.
    """
    c = as_covariance(cov)
    n = c.shape[0]
    i = check_index(i, n)
    if n < 2:
        raise ValueError("cov: need at least 2 categories")
    lam = float(lam)
    if not np.isfinite(lam) or lam < 0:
        raise ValueError(f"lam: must be finite and >= 0, got {lam}")
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
# numba kernels
# ----------------------------------------------------------------------------------------------
@njit(cache=True)
def _chol_solve(L, k, rhs, out):
    """out[:k] = (L Lᵀ)⁻¹ rhs[:k] for the leading k×k lower factor L."""
    for r in range(k):
        s = rhs[r]
        for q in range(r):
            s -= L[r, q] * out[q]
        out[r] = s / L[r, r]
    for r in range(k - 1, -1, -1):  # Lᵀx = y by columns of Lᵀ = rows of L (contiguous)
        x = out[r] / L[r, r]
        out[r] = x
        for q in range(r):
            out[q] -= L[r, q] * x


@njit(cache=True)
def _gemv_rows(cov, act, k, coef, out):
    """out = Σ_p coef[p]·cov[act[p], :] (= Ĉov_{:,A}·coef by symmetry), four rows per pass over ``out``."""
    n = cov.shape[1]
    for j in range(n):
        out[j] = 0.0
    p = 0
    while p + 4 <= k:
        d0, d1, d2, d3 = coef[p], coef[p + 1], coef[p + 2], coef[p + 3]
        r0, r1, r2, r3 = cov[act[p]], cov[act[p + 1]], cov[act[p + 2]], cov[act[p + 3]]
        for j in range(n):
            out[j] += d0 * r0[j] + d1 * r1[j] + d2 * r2[j] + d3 * r3[j]
        p += 4
    while p < k:
        dp = coef[p]
        r0 = cov[act[p]]
        for j in range(n):
            out[j] += dp * r0[j]
        p += 1


@njit(cache=True)
def _refresh(cov, i, mu, act, sgn, k, L, t, c, work, rhs):
    """θ̂_A = Ĉov_AA⁻¹(b̂_A − μ s_A) with the factor, and c = b̂ − Ĉov_{:,A} θ̂_A, from scratch."""
    n = cov.shape[0]
    for p in range(k):
        rhs[p] = cov[act[p], i] - mu * sgn[p]
    _chol_solve(L, k, rhs, work)
    for p in range(k):
        t[act[p]] = work[p]
    _gemv_rows(cov, act, k, work, c)
    for j in range(n):
        c[j] = cov[j, i] - c[j]
    for p in range(k):
        c[act[p]] = mu * sgn[p]
    c[i] = 0.0


@njit(cache=True)
def _homotopy(cov, i, mu_stop, record, max_steps):
    """LARS-lasso homotopy for Eq 6 from μ = ‖b̂‖_∞ down to μ_stop = λ/2.

    Returns (theta, status, n_breakpoints, mus, thetas): theta with θ_i = −1; status 0 = ok,
    1 = max_steps reached; when ``record``, mus[:K] and thetas[:K] hold every breakpoint μ_k
    (decreasing, first = μ_max, last = μ_stop) and θ there.
    """
    n = cov.shape[0]
    state = np.zeros(n, np.int8)  # 0 inactive, 1 active, 2 excluded (i itself, or set aside)
    state[i] = 2
    c = np.empty(n)
    for j in range(n):
        c[j] = cov[j, i]
    c[i] = 0.0
    t = np.zeros(n)
    cap = 64 if record else 1
    mus = np.empty(cap)
    ths = np.empty((cap, n if record else 1))
    nrec = 0
    mu = 0.0
    jmax = -1
    for j in range(n):
        if j != i and abs(c[j]) > mu:
            mu = abs(c[j])
            jmax = j
    if record:
        mus[0] = mu
        for j in range(n):
            ths[0, j] = 0.0
        ths[0, i] = -1.0
        nrec = 1
    status = 0
    if jmax >= 0 and mu > mu_stop:
        capL = 32
        L = np.zeros((capL, capL))
        act = np.empty(n, np.int64)
        sgn = np.empty(n)
        d = np.empty(n)
        a = np.empty(n)
        rhs = np.empty(n)
        w = np.empty(n)
        L[0, 0] = np.sqrt(cov[jmax, jmax])
        act[0] = jmax
        sgn[0] = 1.0 if c[jmax] > 0 else -1.0
        state[jmax] = 1
        k = 1
        last_dropped = -1
        steps = 0
        while True:
            steps += 1
            if steps > max_steps:
                status = 1
                break
            _chol_solve(L, k, sgn, d)
            _gemv_rows(cov, act, k, d, a)  # a = Ĉov_{:,A} d: the correlations move by −γ·a
            gamma = mu - mu_stop
            event = 0
            who = -1
            for j in range(n):
                if state[j] != 0:
                    continue
                aj = a[j]
                cj = c[j]
                den = 1.0 - aj
                if den > 1e-15:
                    g = (mu - cj) / den
                    if g < gamma and (g > 0.0 or (g >= 0.0 and j != last_dropped)):
                        gamma = g
                        event = 1
                        who = j
                den = 1.0 + aj
                if den > 1e-15:
                    g = (mu + cj) / den
                    if g < gamma and (g > 0.0 or (g >= 0.0 and j != last_dropped)):
                        gamma = g
                        event = 1
                        who = j
            for p in range(k):
                # lasso modification: a coefficient moving toward 0 (d_p opposite to its sign) leaves
                # when it reaches 0; a fresh joiner moves away from 0 (its sign is its correlation's)
                if sgn[p] * d[p] < 0.0:
                    g = -t[act[p]] / d[p]
                    if g < 0.0:
                        g = 0.0
                    if g < gamma:
                        gamma = g
                        event = 2
                        who = p
            if gamma < 0.0:
                gamma = 0.0
            for p in range(k):
                t[act[p]] += gamma * d[p]
            for j in range(n):
                c[j] -= gamma * a[j]
            mu -= gamma
            if event == 0:
                mu = mu_stop
            for p in range(k):
                c[act[p]] = mu * sgn[p]
            c[i] = 0.0
            if event == 0:
                break
            if event == 1:
                j = who
                # bordered Cholesky: L w = Ĉov_{A,j}, pivot² = Ĉov_jj − ‖w‖²
                for p in range(k):
                    s = cov[act[p], j]
                    for q in range(p):
                        s -= L[p, q] * w[q]
                    w[p] = s / L[p, p]
                piv2 = cov[j, j]
                for p in range(k):
                    piv2 -= w[p] * w[p]
                if piv2 <= _PIVOT_RTOL * cov[j, j]:
                    state[j] = 2  # in the span of the active set: set aside
                else:
                    if k + 1 > capL:
                        L2 = np.zeros((2 * capL, 2 * capL))
                        L2[:capL, :capL] = L
                        L = L2
                        capL *= 2
                    for p in range(k):
                        L[k, p] = w[p]
                    L[k, k] = np.sqrt(piv2)
                    act[k] = j
                    sgn[k] = 1.0 if c[j] > 0 else -1.0
                    c[j] = mu * sgn[k]
                    state[j] = 1
                    k += 1
                last_dropped = -1
            else:
                p0 = who
                j = act[p0]
                t[j] = 0.0
                state[j] = 0
                last_dropped = j
                # delete row p0, then Givens on columns (r, r+1) to restore lower-triangular form
                for r in range(p0, k - 1):
                    for q in range(r + 2):
                        L[r, q] = L[r + 1, q]
                    act[r] = act[r + 1]
                    sgn[r] = sgn[r + 1]
                k -= 1
                for r in range(p0, k):
                    x = L[r, r]
                    y = L[r, r + 1]
                    h = np.hypot(x, y)
                    cs = x / h
                    sn = y / h
                    for q in range(r, k):
                        u = L[q, r]
                        v = L[q, r + 1]
                        L[q, r] = cs * u + sn * v
                        L[q, r + 1] = -sn * u + cs * v
                    L[r, r + 1] = 0.0
                for q in range(k + 1):
                    L[k, q] = 0.0
                    L[q, k] = 0.0
            if k > 0 and steps % _REFRESH == 0:
                _refresh(cov, i, mu, act, sgn, k, L, t, c, w, rhs)
            if record:
                if nrec == cap:
                    mus2 = np.empty(2 * cap)
                    mus2[:cap] = mus
                    ths2 = np.empty((2 * cap, n))
                    ths2[:cap] = ths
                    mus = mus2
                    ths = ths2
                    cap *= 2
                mus[nrec] = mu
                for q in range(n):
                    ths[nrec, q] = t[q]
                # the same rule as for the final θ: an active coefficient on the wrong side of 0 is 0. A
                # periodic refresh right at a join gives the joiner a rounding-level value (~1e-16) of either
                # sign; recorded as is, it broke exact zeros and KKT (residual ~λ) at ~2.5% of breakpoints
                for p in range(k):
                    if t[act[p]] * sgn[p] < 0.0:
                        ths[nrec, act[p]] = 0.0
                if event == 1 and state[who] == 1:
                    ths[nrec, who] = 0.0  # a joiner is exactly 0 at the breakpoint where it joins
                ths[nrec, i] = -1.0
                nrec += 1
            if k == 0:
                # every coefficient left: restart from the largest correlation (cannot happen for μ < μ_max
                # in exact arithmetic; kept so the loop never solves with an empty factor)
                jm = -1
                best = 0.0
                for j in range(n):
                    if state[j] == 0 and abs(c[j]) > best:
                        best = abs(c[j])
                        jm = j
                if jm < 0 or best <= mu_stop:
                    mu = mu_stop
                    break
                mu = best
                L[0, 0] = np.sqrt(cov[jm, jm])
                act[0] = jm
                sgn[0] = 1.0 if c[jm] > 0 else -1.0
                state[jm] = 1
                k = 1
        if k > 0:
            _refresh(cov, i, mu, act, sgn, k, L, t, c, w, rhs)  # exact θ̂_A at the final μ
            for p in range(k):  # a coefficient that the fresh solve puts on the wrong side of 0 is 0
                if t[act[p]] * sgn[p] < 0.0:
                    t[act[p]] = 0.0
        if record:
            if nrec > 0 and mus[nrec - 1] == mu:
                nrec -= 1
            if nrec == cap:
                mus2 = np.empty(cap + 1)
                mus2[:cap] = mus
                ths2 = np.empty((cap + 1, n))
                ths2[:cap] = ths
                mus = mus2
                ths = ths2
            mus[nrec] = mu
            for q in range(n):
                ths[nrec, q] = t[q]
            ths[nrec, i] = -1.0
            nrec += 1
    t[i] = -1.0
    return t, status, nrec, mus[:nrec], ths[:nrec]


@njit(cache=True, parallel=True)
def _homotopy_all(cov, mu_stops, max_steps):
    n = cov.shape[0]
    out = np.empty((n, n))
    status = np.zeros(n, np.int64)
    for i in prange(n):
        th, st, _, _, _ = _homotopy(cov, i, mu_stops[i], False, max_steps)
        out[i, :] = th
        status[i] = st
    return out, status


# ----------------------------------------------------------------------------------------------
# public API
# ----------------------------------------------------------------------------------------------
def _prepare(cov) -> np.ndarray:
    c = np.ascontiguousarray(as_covariance(cov))
    if c.shape[0] < 2:
        raise ValueError(f"cov: need at least 2 categories (n = {c.shape[0]} has no other logit to predict from)")
    return c


def _max_steps(n: int) -> int:
    return 50 * n + 1000


def resolve_lambda(cov: np.ndarray, i: int, lam: float | None, rho: float | None) -> float:
    """λ from an absolute ``lam`` or a relative ``rho`` (λ = ρ·λ_max(i), ND Thm 1); exactly one is given."""
    if (lam is None) == (rho is None):
        raise ValueError("give exactly one of lam= (absolute λ) or rho= (λ = rho·λ_max(i))")
    if rho is not None:
        rho = float(rho)
        if not np.isfinite(rho) or rho < 0:
            raise ValueError(f"rho: must be finite and >= 0, got {rho}")
        rest = np.delete(np.arange(cov.shape[0]), i)
        return rho * 2.0 * float(np.abs(cov[rest, i]).max())
    lam = float(lam)
    if not np.isfinite(lam) or lam < 0:
        raise ValueError(f"lam: must be finite and >= 0, got {lam}")
    return lam


def _solve(c: np.ndarray, i: int, lam: float) -> np.ndarray:
    theta, status, _, _, _ = _homotopy(c, i, lam / 2.0, False, _max_steps(c.shape[0]))
    if status != 0:
        raise RuntimeError(f"covlasso: homotopy did not reach λ = {lam:g} in {_max_steps(c.shape[0])} breakpoints (i={i})")
    return theta


def covlasso(cov, i: int, lam: float | None = None, *, rho: float | None = None) -> np.ndarray:
    """θ*(λ) of ND Eq 2 / Eq 6 for category ``i`` (θ_i = −1 exactly); λ absolute or ``rho=`` relative.

    Exact: the LARS-lasso homotopy from λ_max(i) down to λ (module doc). λ ≥ λ_max(i) gives −e_i.
    """
    c = _prepare(cov)
    i = check_index(i, c.shape[0])
    return _solve(c, i, resolve_lambda(c, i, lam, rho))


def covlasso_all(cov, lam: float | None = None, *, rho: float | None = None) -> np.ndarray:
    """Rows θ*(λ) for every category at once, (n, n) with Θ_ii = −1; parallel over i (numba prange).

    ``lam`` is one absolute λ for all categories; ``rho`` a relative one, λ_i = ρ·λ_max(i).
    """
    c = _prepare(cov)
    n = c.shape[0]
    if (lam is None) == (rho is None):
        raise ValueError("give exactly one of lam= (absolute λ) or rho= (λ = rho·λ_max(i))")
    off = np.abs(c)
    np.fill_diagonal(off, 0.0)
    if rho is not None:
        rho = float(rho)
        if not np.isfinite(rho) or rho < 0:
            raise ValueError(f"rho: must be finite and >= 0, got {rho}")
        mu = rho * off.max(axis=0)
    else:
        lam = float(lam)
        if not np.isfinite(lam) or lam < 0:
            raise ValueError(f"lam: must be finite and >= 0, got {lam}")
        mu = np.full(n, lam / 2.0)
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
        lam = np.asarray(lams, dtype=float)
        scalar = lam.ndim == 0
        lam = np.atleast_1d(lam)
        if not np.all(np.isfinite(lam)) or np.any(lam < 0):
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
    c = _prepare(cov)
    n = c.shape[0]
    i = check_index(i, n)
    lam_arr = None
    lam_stop = 0.0
    if lams is not None:
        lam_arr = np.atleast_1d(np.asarray(lams, dtype=float))
        if lam_arr.size == 0 or not np.all(np.isfinite(lam_arr)) or np.any(lam_arr < 0):
            raise ValueError("lams: must be a non-empty array of finite values >= 0")
        lam_stop = float(lam_arr.min())
    theta, status, nrec, mus, ths = _homotopy(c, i, lam_stop / 2.0, True, _max_steps(n))
    if status != 0:
        raise RuntimeError(f"covlasso_path: homotopy did not finish in {_max_steps(n)} breakpoints (i={i})")
    path = CovLassoPath(i=i, breakpoints=2.0 * np.asarray(mus), coefs=np.asarray(ths))
    if lam_arr is not None:
        path.lams = lam_arr
        path.thetas = path.at(lam_arr)
    return path


def kkt_violation(cov, i: int, lam: float, theta) -> float:
    """max_j of the KKT residual of Eq 6 (A35) at θ, in units of λ_max(i) (0 at the exact optimum)."""
    c = as_covariance(cov)
    n = c.shape[0]
    i = check_index(i, n)
    rest = np.delete(np.arange(n), i)
    t = np.asarray(theta, float)[rest]
    g = c[np.ix_(rest, rest)] @ t - c[rest, i]  # ½ gradient of the smooth part
    half = lam / 2.0
    on = t != 0
    r = np.where(on, np.abs(g + half * np.sign(t)), np.maximum(np.abs(g) - half, 0.0))
    lmax = 2.0 * np.abs(c[rest, i]).max()
    return float(r.max() / max(lmax, np.finfo(float).tiny))


def kkt_violation_all(cov, Theta, lam=None, *, rho=None) -> np.ndarray:
    """:func:`kkt_violation` for every row of ``Theta`` (as returned by :func:`covlasso_all`) with one GEMM.

    Row i of Θ·Cov is Ĉovθ̂ − b̂ on j ≠ i because θ_i = −1. ``lam``: one λ for all rows; ``rho``: λ_i = ρ·λ_max(i).
    Returns the residuals in units of λ_max(i).
    """
    c = as_covariance(cov)
    n = c.shape[0]
    T = np.asarray(Theta, dtype=float)
    if T.shape != (n, n):
        raise ValueError(f"Theta: expected shape ({n}, {n}), got {T.shape}")
    if not np.all(np.diag(T) == -1.0):
        raise ValueError("Theta: row i must have θ_i = −1 (rows of covlasso_all)")
    off = np.abs(c)
    np.fill_diagonal(off, 0.0)
    lmax = 2.0 * off.max(axis=0)
    if (lam is None) == (rho is None):
        raise ValueError("give exactly one of lam= (absolute λ) or rho= (λ = rho·λ_max(i))")
    half = (np.full(n, float(lam)) if rho is None else float(rho) * lmax) / 2.0
    if not np.all(np.isfinite(half)) or np.any(half < 0):
        raise ValueError("lam/rho: must be finite and >= 0")
    G = T @ c
    on = T != 0
    r = np.where(on, np.abs(G + half[:, None] * np.sign(T)), np.maximum(np.abs(G) - half[:, None], 0.0))
    np.fill_diagonal(r, 0.0)
    return r.max(axis=1) / np.maximum(lmax, np.finfo(float).tiny)
