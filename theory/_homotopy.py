"""The numba kernels of the CovLasso homotopy (ND Eq 6–8): the LARS-lasso path on one covariance.

Split out of :mod:`theory.covlasso` (which validates, scales and documents the method; read its module
docstring first). Each kernel works on a validated, power-of-four-scaled covariance:

* :func:`_homotopy` follows one category's path from μ_max = ‖b̂‖_∞ down to ``mu_stop`` (μ = λ/2),
  extending the active block's Cholesky factor by one row when a category joins and downdating it
  with Givens rotations when one leaves; it can record every breakpoint (the exact path of Eq 5);
* :func:`_homotopy_all` runs every category in parallel (``prange``).

All kernels are ``cache=True``; ``python -m sims.warmup`` compiles them at install.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

_PIVOT_RTOL = 1e-12  # squared Cholesky pivot below this × Cov_jj: category j is in the span of the active ones
_TINY = np.finfo(float).tiny
_REFRESH = 16  # recompute θ̂_A and the correlations from scratch every so many breakpoints

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
def _largest_free(c, state):
    """(j, |c_j|) for the largest |c_j| over the inactive categories (state 0); (−1, 0.0) if all are 0."""
    jm = -1
    best = 0.0
    for j in range(c.shape[0]):
        if state[j] == 0 and abs(c[j]) > best:
            best = abs(c[j])
            jm = j
    return jm, best


@njit(cache=True)
def _enter_first(cov, c, j, L, act, sgn, state):
    """Start the active set with category j alone: L = [√Cov_jj], its sign that of its correlation c_j."""
    L[0, 0] = np.sqrt(cov[j, j])
    act[0] = j
    sgn[0] = 1.0 if c[j] > 0 else -1.0
    state[j] = 1


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
    jmax, mu = _largest_free(c, state)
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
        _enter_first(cov, c, jmax, L, act, sgn, state)
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
                jm, best = _largest_free(c, state)  # the same start as at μ_max
                if jm < 0 or best <= mu_stop:
                    mu = mu_stop
                    break
                mu = best
                _enter_first(cov, c, jm, L, act, sgn, state)
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
