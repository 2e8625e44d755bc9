"""Closed forms of the neural-dependency paper (ND: Neural Dependencies Emerging from Learning Massive Categories): error floors, θ*(0), λ_max, R(Cov, i).

Notation (ND Eq 2): f ∈ R^n are the logits, Cov = E[f fᵀ] (uncentred). For a target category i,
CovLasso solves  min_{θ: θ_i = −1} θᵀ Cov θ + λ‖θ‖₁,  and err_i(θ) = θᵀ Cov θ = E[(θᵀf)²].

* ND A15/A30/A33: err_i(θ*(0)) = det Cov / det Cov₋ᵢ₋ᵢ = 1/(Cov⁻¹)_ii = (Σ_j α_j²/σ_j²)⁻¹, with
  (σ_j², q_j) the eigenpairs of Cov and α_j = ⟨e_i, q_j⟩; θ*(0) = −Cov⁻¹e_i/(Cov⁻¹)_ii (A28 with
  η = 2/(Cov⁻¹)_ii of A27).
* ND A16/A47: λ_max(i) = 2‖Cov₋ᵢ,ᵢ‖_∞ (the i-th column without its diagonal entry; the main text's
  "Cov_{[n]∖i}^{[n]∖i}" below Eq 5 is an extraction garble of A47's 2‖b̂‖_∞ with b̂ = Cov_{[n]∖i}^i).
* ND A31–A32: R(Cov, i) = det Cov/(Cov_ii det Cov₋ᵢ₋ᵢ) = 1/(Σα²/σ² · Σα²σ²), the smallest relative
  error err_i/Cov_ii along the path (Σ_j α_j²σ_j² = Cov_ii).

Every floor, R and θ*(0) is computed on the correlation matrix K = S·Cov·S (S = diag Cov_ii^{-1/2}) and
scaled back, so heterogeneous logit scales and any overall scale give the same R; exactly singular Cov (ND
Sec 2.2) gives floor 0 exactly for the categories whose logit is a linear combination of the others, decided
by a rank-revealing eigendecomposition at the rounding level of its null space (see :func:`relative_floor`).
:func:`second_moment` forms Cov = E[f fᵀ] from logits (one dsyrk, scale-safe).

The determinant ratio is never used to compute anything here (ND Remark 2: det under/overflows as n grows);
:func:`det_ratio` exists only to show that.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from theory.validate import as_covariance, as_float_array, check_finite, check_index, check_tolerance

EPS = np.finfo(float).eps
TINY = np.finfo(float).tiny
NULL_NOISE = 10.0
"""A category's row of the numerical null space counts as nonzero (floor 0) when its norm exceeds
NULL_NOISE·m·ε·λ_max·‖(U_ij/λ_j)_j‖ over the kept eigenpairs (λ_j, u_j): to first order a backward error E
(‖E‖ ≲ m·ε·λ_max for eigh on the m×m correlation matrix) moves the null basis by δN = Σ_j u_j(u_jᵀEN)/λ_j
(Davis–Kahan, one kept eigenvalue at a time), whose row i has norm ≤ ‖E‖·‖(U_ij/λ_j)_j‖; a smaller row is
rounding of an exact zero. The bound is per category: a category with little weight on the small kept
eigenvalues has a small rounding level (the old global level m·ε·κ_r, its maximum over i, came to 1e-4–1e-2 on
heterogeneous singular Cov where the real null components were 5e-5, and reported floors up to R = 0.45 that
a least-squares fit beat by 1e4 rounding units)."""


def second_moment(F) -> np.ndarray:
    """Cov = FᵀF/N, the uncentred second moment E[f fᵀ] of an (N, n) logit matrix (ND Eq 2, Remark 1).

    One symmetric rank-N update, BLAS dsyrk, on a view of F that needs no copy: for a C-ordered F its transpose
    is Fortran-ordered, so ``dsyrk(1/N, F.T, trans=0)`` forms FᵀF/N in place (``dsyrk(…, F, trans=1)`` on the
    C-ordered array copies F first; numpy's ``F.T @ F`` runs a full GEMM, twice the flops); the upper
    triangle is mirrored.
    Scale-safe: if the product is not finite, or a column's energy is where squares lose precision
    (Cov_jj < 2⁻⁹⁷⁰), it is recomputed with the columns scaled by powers of two (exact) first; an answer
    beyond float64 (overflow, or a nonzero column whose E[f_j²] underflows) is a ValueError.
    """
    try:
        is_complex = np.iscomplexobj(F)
    except (TypeError, ValueError):
        is_complex = False
    if is_complex:
        raise TypeError("logits: complex input is not supported (casting would drop the imaginary part)")
    try:
        f = np.asarray(F, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"logits: cannot be read as a float64 array ({exc})") from None
    if f.ndim != 2:
        raise ValueError(f"logits: expected a 2-D array (N samples × n categories), got shape {f.shape}")
    if f.size == 0:
        raise ValueError(f"logits: is empty (shape {f.shape})")
    N = f.shape[0]
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        c = _syrk(f, 1.0 / N)
    d = np.diag(c)
    finite = bool(np.isfinite(d).all()) and bool(np.isfinite(c).all())
    if not finite:
        check_finite(f, "logits")  # NaN/Inf in the input: say where (the product carries them to the diagonal)
    small = d < 2.0**-970
    if not finite or (small.any() and np.any(f[:, small] != 0)):
        amax = np.abs(f).max(axis=0)
        e = np.where(amax > 0, -np.round(np.log2(np.where(amax > 0, amax, 1.0))), 0.0)
        g = f * np.exp2(e)[None, :]  # exact: powers of two
        with np.errstate(over="ignore", under="ignore"):
            c = _syrk(g, 1.0 / N)
            c = (c * np.exp2(-e)[:, None]) * np.exp2(-e)[None, :]
        if not np.all(np.isfinite(c)):
            raise ValueError("logits: E[f fᵀ] overflows float64 (|logits| near 1e154 or beyond); rescale the logits")
        lost = (np.diag(c) < TINY) & (amax > 0)
        if lost.any():
            j = int(np.flatnonzero(lost)[0])
            raise ValueError(f"logits: E[f_{j}²] = {c[j, j]:.3g} underflows float64 (|logits| near 1e-154 or below); "
                             "rescale the logits")
    return c


def _syrk(f: np.ndarray, alpha: float) -> np.ndarray:
    """alpha·fᵀf (symmetric, both triangles) with one BLAS dsyrk and no copy of a C- or Fortran-ordered f."""
    from scipy.linalg.blas import dsyrk

    if f.flags.c_contiguous:
        c = dsyrk(alpha, f.T, trans=0, lower=0)  # f.T is Fortran-ordered: (fᵀ)(fᵀ)ᵀ = fᵀf
    elif f.flags.f_contiguous:
        c = dsyrk(alpha, f, trans=1, lower=0)
    else:
        c = dsyrk(alpha, np.ascontiguousarray(f).T, trans=0, lower=0)
    iu = np.triu_indices_from(c, 1)
    c.T[iu] = c[iu]  # mirror the upper triangle into the lower one
    return c


def _equilibrated(cov, name: str = "cov"):
    """(K, d, pos): the correlation matrix K = S Cov S (S = diag(Cov_ii^{-1/2}) on the categories with energy,
    unit diagonal), the diagonal d and the mask of categories with d > 0.

    Every floor and R is computed on K and scaled back (ND A31: R is invariant under f → D f; err_i(θ*(0))
    scales by d_i): invariant under diagonal scaling and overall scale of Cov. A nonzero Cov_ii below the
    smallest normal float64 (subnormal: its last digits are gone) is an error.
    """
    c = as_covariance(cov, name)
    d = np.maximum(np.diag(c).copy(), 0.0)
    sub = (d > 0) & (d < TINY)
    if sub.any():
        i = int(np.flatnonzero(sub)[0])
        raise ValueError(f"{name}: Cov[{i},{i}] = {d[i]:.3g} is subnormal in float64 (precision lost); rescale the "
                         "logits (floors and R are scale-invariant)")
    pos = d > 0
    s = np.zeros_like(d)
    s[pos] = 1.0 / np.sqrt(d[pos])
    K = (c * s[:, None]) * s[None, :]
    idx = np.flatnonzero(pos)
    K[idx, idx] = 1.0
    return K, d, pos


def _cholesky(K: np.ndarray):
    """(L, diag K⁻¹) for a unit-diagonal K, or None when K is singular to working precision.

    Singular to working precision: Cholesky fails, or trace(K⁻¹) ≥ 1/(m²ε), i.e. λ_min(K) may be below
    m·ε·λ_max(K) (λ_min ≥ 1/trace K⁻¹ and λ_max ≤ trace K = m), where the eigen route's null space starts.
    A pivot test alone is not enough: a singular K can factor with every squared pivot ≫ m·ε and give
    floors of 1e-9 for categories whose true floor is 0.
    """
    m = K.shape[0]
    try:
        L = np.linalg.cholesky(K)
    except np.linalg.LinAlgError:
        return None
    Linv = sla.solve_triangular(L, np.eye(m), lower=True, check_finite=False)
    inv_diag = np.einsum("ki,ki->i", Linv, Linv)
    if not np.all(np.isfinite(inv_diag)) or inv_diag.sum() * m * m * EPS >= 1.0:
        return None
    return L, inv_diag


def _null_split(K: np.ndarray, null_tol: float | None):
    """Eigen route for a singular unit-diagonal K: (w_kept, U_kept, N, null_row, noise) with N an orthonormal
    basis of the numerical null space (eigenvalues ≤ null_tol·λ_max, default m·ε), null_row[i] = ‖N_i‖ the
    norm of e_i's component in it and ``noise[i]`` the level below which that norm is rounding of a zero:
    NULL_NOISE·m·ε·λ_max·‖(U_ij/λ_j)_j‖ over the kept eigenpairs (first-order Davis–Kahan, row by row)."""
    m = K.shape[0]
    w, U = np.linalg.eigh(K)
    rel = m * EPS if null_tol is None else null_tol
    keep = w > rel * w[-1]
    N = U[:, ~keep]
    null_row = np.sqrt((N**2).sum(axis=1))
    wk, Uk = w[keep], U[:, keep]
    noise = NULL_NOISE * m * EPS * w[-1] * np.sqrt(((Uk / wk) ** 2).sum(axis=1))
    return wk, Uk, N, null_row, noise


CAP_LEVELS = 3
"""How many of the smallest kept eigenvalues the certified cap (:func:`_certified_cap`) also treats as null
(0: the numerical null space only; −1: no cap, the rounding-level rule alone)."""


def _certified_cap(K: np.ndarray, w: np.ndarray, U: np.ndarray, N: np.ndarray, R: np.ndarray):
    """(R, level): the floors capped by candidates the eigendecomposition offers, so that no floor is above the error
    of a θ we can exhibit (a floor is a minimum over θ, ND A28–A30).

    Candidate j for category i: ψ = −V e_i/V_ii with V the projector on the null basis N and the j smallest kept
    eigenvectors (j = 0 … CAP_LEVELS): the minimum-norm ψ with ψ_i = −1 in that span, err = ψᵀKψ evaluated on K
    itself. It replaces R_i only when it beats R_i by more than its own rounding 10·m·ε·|ψ|ᵀ|K||ψ| (so a garbage
    err of a ψ with huge entries never caps anything), and then R_i = max(err, 0) and level[i] = j (−1: not capped).
    """
    m = K.shape[0]
    level = np.full(m, -1)
    idx = np.flatnonzero(R > 0)
    if idx.size == 0:
        return R, level
    R = R.copy()
    absK = np.abs(K)
    for j in range(0 if N.shape[1] else 1, min(CAP_LEVELS, w.size - 1) + 1):
        S = np.column_stack([N, U[:, :j]])
        V = S @ S[idx].T  # column t: V e_i for i = idx[t]
        vii = V[idx, np.arange(idx.size)]
        ok = vii > 0
        if not ok.any():
            continue
        Psi = V[:, ok] / vii[ok]
        err = np.einsum("jt,jt->t", Psi, K @ Psi)
        rnd = 10 * m * EPS * np.einsum("jt,jt->t", np.abs(Psi), absK @ np.abs(Psi))
        cols = idx[ok]
        better = err + rnd < R[cols]
        R[cols[better]] = np.maximum(err[better], 0.0)
        level[cols[better]] = j
    return R, level


def _eigen_floors(K: np.ndarray, null_tol: float | None):
    """(R, level, split) on the eigen route: 0 where e_i's null-space row is above its rounding level, else
    1/(K⁺)_ii over the kept eigenvalues, then :func:`_certified_cap` (level[i] ≥ 0: R_i is a capped candidate's)."""
    split = _null_split(K, null_tol)
    w, U, N, null_row, noise = split
    R = np.minimum(1.0 / (U**2 / w).sum(axis=1), 1.0)
    R = np.where(null_row > noise, 0.0, R)
    R, level = _certified_cap(K, w, U, N, R)
    return R, level, split


def _check_null_tol(null_tol) -> float | None:
    """None, or a fraction of λ_max in [0, 1): at 1 or above even λ_max would count as null."""
    if null_tol is None:
        return None
    t = check_tolerance(null_tol, "null_tol")
    if t >= 1.0:
        raise ValueError(f"null_tol: a fraction of λ_max(K) must be < 1 (every eigenvalue would count as null), "
                         f"got {null_tol!r}")
    return t


def _relative_floors(K: np.ndarray, null_tol: float | None) -> np.ndarray:
    """R_i = err_i(θ*(0)) of a unit-diagonal K (= the relative floor, ND A31) for every i."""
    m = K.shape[0]
    if m == 1:
        return np.ones(1)  # nothing to predict from: θ = −e_i, err = Cov_ii
    chol = _cholesky(K) if null_tol is None else None
    if chol is not None:
        return np.minimum(1.0 / chol[1], 1.0)
    return _eigen_floors(K, null_tol)[0]


def inverse_diagonal(cov) -> np.ndarray:
    """diag(Cov⁻¹) for an SPD Cov via Cholesky of the correlation matrix K: (Cov⁻¹)_ii = (K⁻¹)_ii / Cov_ii.

    Raises ValueError if Cov is singular to working precision (or a category has Cov_ii = 0).
    """
    K, d, pos = _equilibrated(cov)
    if not pos.all():
        raise ValueError(f"cov: Cov[{int(np.argmin(pos))},{int(np.argmin(pos))}] = 0: singular, Cov^-1 does not exist")
    chol = _cholesky(K)
    if chol is None:
        raise ValueError("cov: singular to working precision (κ of the correlation matrix beyond ~1/(n²ε)); "
                         "diag(Cov^-1) does not exist")
    return chol[1] / d


def _check_n(K: np.ndarray) -> None:
    if K.shape[0] < 2:
        raise ValueError("cov: need at least 2 categories (n = 1 has no other logit to predict from)")


def relative_floor(cov, null_tol: float | None = None) -> np.ndarray:
    """R(Cov, i) = err_i(θ*(0))/Cov_ii for every i (ND A31–A32): the smallest relative error on the path.

    Computed on the correlation matrix K (R is invariant under f → D f, D diagonal). SPD K: Cholesky,
    R_i = 1/‖L⁻¹e_i‖². Singular K to working precision (Cholesky fails or trace K⁻¹ ≥ 1/(m²ε)): R_i = 0 exactly when f_i is a
    linear combination of the others, i.e. e_i has a component in the null space of K (its norm above the
    per-category rounding level NULL_NOISE·m·ε·λ_max·‖(U_ij/λ_j)_j‖ of eigh's null space, see NULL_NOISE), else 1/(K⁺)_ii over the eigenvalues above
    ``null_tol``·λ_max(K) (default m·ε; an explicit ``null_tol`` always takes the eigen route).
    """
    null_tol = _check_null_tol(null_tol)
    K, d, pos = _equilibrated(cov)
    _check_n(K)
    if not pos.all():
        i = int(np.argmin(pos))
        raise ValueError(f"cov: Cov[{i},{i}] = 0; R(Cov, {i}) is undefined for a logit with no energy")
    return _relative_floors(K, null_tol)


def error_floor(cov, null_tol: float | None = None) -> np.ndarray:
    """err_i(θ*(0)) = 1/(Cov⁻¹)_ii for every category i at once (ND A15, A30, A33).

    = Cov_ii·R(Cov, i) with R from :func:`relative_floor` (on the correlation matrix, so every scale and
    heterogeneous logit scales give the same relative answer). SPD: forward relative error O(κ(K)·ε).
    Singular Cov: 0 exactly for the categories whose logit is a linear combination of the others (ND Sec
    2.2, massive categories), 1/(Cov⁺)_ii-type values for the others. A category with Cov_ii = 0 has floor 0.
    """
    null_tol = _check_null_tol(null_tol)
    K, d, pos = _equilibrated(cov)
    _check_n(K)
    out = np.zeros(K.shape[0])
    idx = np.flatnonzero(pos)
    if idx.size:
        out[idx] = d[idx] * _relative_floors(K[np.ix_(idx, idx)], null_tol)
    return out


def error_floor_eigen(cov) -> np.ndarray:
    """The eigen form of ND A33, (Σ_j α_j²/σ_j²)⁻¹, for comparison (SPD Cov only)."""
    c = as_covariance(cov)
    w, U = np.linalg.eigh(c)
    if w[0] <= 0:
        raise ValueError(f"cov: smallest eigenvalue {w[0]:.3g} <= 0; the eigen form needs SPD")
    return 1.0 / (U**2 / w).sum(axis=1)


def theta_floor(cov, i: int, null_tol: float | None = None) -> np.ndarray:
    """θ*(0) = −Cov⁻¹e_i/(Cov⁻¹)_ii (ND A28 with η of A27); θ_i = −1. It attains :func:`error_floor`.

    Solved on the correlation matrix K and scaled back (θ_j = ψ_j·√(Cov_ii/Cov_jj) for the K-solution ψ).
    Singular Cov: the minimiser is not unique. If f_i is a linear combination of the others (floor 0), ψ is
    the minimum-norm null vector of K with ψ_i = −1 (−P_N e_i/(P_N)_ii); otherwise ψ = −K⁺e_i/(K⁺)_ii on the
    eigenvalues kept by :func:`relative_floor`. Categories with no energy get θ_j = 0.
    """
    null_tol = _check_null_tol(null_tol)
    K0, d, pos = _equilibrated(cov)
    _check_n(K0)
    n = K0.shape[0]
    i = check_index(i, n)
    theta = np.zeros(n)
    theta[i] = -1.0
    if not pos[i]:
        return theta  # f_i = 0: err = 0 with θ = −e_i
    idx = np.flatnonzero(pos)
    K = K0[np.ix_(idx, idx)]
    k = int(np.flatnonzero(idx == i)[0])
    m = K.shape[0]
    if m == 1:
        return theta
    chol = _cholesky(K) if null_tol is None else None
    if chol is not None:
        e = np.zeros(m)
        e[k] = 1.0
        x = sla.cho_solve((chol[0], True), e)
        psi = -x / x[k]
    else:
        _, level, (w, U, N, null_row, noise) = _eigen_floors(K, null_tol)
        if level[k] >= 0:  # the candidate that capped the floor (see _certified_cap)
            S = np.column_stack([N, U[:, :level[k]]])
            v = S @ S[k]
            psi = -v / v[k]
        elif null_row[k] > noise[k]:
            v = N @ N[k]
            psi = -v / v[k]
        else:
            x = U @ (U[k] / w)
            psi = -x / x[k]
    with np.errstate(over="ignore"):
        theta[idx] = psi * (np.sqrt(d[i]) / np.sqrt(d[idx]))
    if not np.all(np.isfinite(theta)):
        raise ValueError("cov: θ*(0) overflows float64 (logit scales too far apart for this dependency)")
    theta[i] = -1.0
    return theta


def prediction_error(cov, theta) -> float:
    """err_i(θ) = θᵀ Cov θ = E[(θᵀf)²] (ND Sec 2.2).

    Evaluated as (Sθ)ᵀK(Sθ) on the correlation matrix (S = diag √Cov_jj), so it neither overflows nor
    underflows in between; raises ValueError if the answer itself is beyond float64.
    """
    K, d, pos = _equilibrated(cov)
    n = K.shape[0]
    t = as_float_array(theta, "theta", ndim=1)
    if t.shape != (n,):
        raise ValueError(f"theta: expected shape ({n},), got {t.shape}")
    with np.errstate(over="ignore"):
        u = t * np.sqrt(d)
        big = np.abs(u).max()
        if not np.isfinite(big):
            raise ValueError("theta: θ_j·√Cov_jj overflows float64")
        if big == 0.0:
            return 0.0
        v = u / big
        err = max(float(v @ K @ v), 0.0) * big * big
    if not np.isfinite(err):
        raise ValueError(f"err_i(θ) = θᵀCovθ overflows float64 (max |θ_j|·√Cov_jj = {big:.3g})")
    return err


def lambda_max(cov) -> np.ndarray:
    """λ_max(i) = 2‖Cov₋ᵢ,ᵢ‖_∞ for every i (ND A47): θ*(λ) = −e_i iff λ ≥ λ_max(i)."""
    c = as_covariance(cov)
    if c.shape[0] < 2:
        raise ValueError("cov: need at least 2 categories")
    off = np.abs(c)
    np.fill_diagonal(off, 0.0)
    with np.errstate(over="ignore"):
        out = 2.0 * off.max(axis=0)
    if not np.all(np.isfinite(out)):
        raise ValueError("cov: λ_max = 2·max|Cov_ij| overflows float64; rescale the logits")
    return out


def relative_floor_eigen(cov) -> np.ndarray:
    """A31's eigen form 1/(Σ_j α_j²/σ_j² · Σ_j α_j²σ_j²) on Cov as given, for comparison (SPD Cov only)."""
    c = as_covariance(cov)
    w, U = np.linalg.eigh(c)
    if w[0] <= 0:
        raise ValueError(f"cov: smallest eigenvalue {w[0]:.3g} <= 0; the eigen form needs SPD")
    a2 = U**2
    return 1.0 / ((a2 / w).sum(axis=1) * (a2 * w).sum(axis=1))


def det_ratio(cov, i: int, method: str = "det", raw: bool = False) -> float:
    """det Cov / det Cov₋ᵢ₋ᵢ as the paper writes it (ND Eq 5, A15): numerically fragile (Remark 2).

    ``method="det"`` uses ``numpy.linalg.det`` (LU) on Cov as given, which under/overflows once the
    eigenvalues' product leaves float64 (large n, or any scale far from 1): the ratio can be 0/0, inf/inf,
    0 or inf. ``method="slogdet"`` takes exp of the log-det difference. Kept only to demonstrate Remark 2;
    use :func:`error_floor`. With ``raw=False`` a non-finite or non-positive ratio raises ValueError (never
    a silent NaN); ``raw=True`` returns the IEEE value as computed (what the Remark 2 check counts).
    """
    if method not in ("det", "slogdet"):
        raise ValueError(f"method must be 'det' or 'slogdet', got {method!r}")
    c = as_covariance(cov)
    if c.shape[0] < 2:
        raise ValueError("cov: need at least 2 categories")
    i = check_index(i, c.shape[0])
    minor = np.delete(np.delete(c, i, 0), i, 1)
    with np.errstate(all="ignore"):
        if method == "det":
            r = float(np.float64(np.linalg.det(c)) / np.float64(np.linalg.det(minor)))
        else:
            s1, l1 = np.linalg.slogdet(c)
            s2, l2 = np.linalg.slogdet(minor)
            r = float(s1 * s2 * np.exp(l1 - l2))
    if not raw and not (np.isfinite(r) and r > 0):
        raise ValueError(f"cov: det Cov / det Cov_-i-i = {r} for i = {i} ({method}): the determinants under/overflow "
                         "or Cov is singular (ND Remark 2); use error_floor")
    return r
