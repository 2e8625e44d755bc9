"""VC factorisations shared by the metrics: Σ_T† traces, Σ_B eigenpairs, rank choice, and the frames they run in.

Two coordinate frames, both reached from :meth:`ClassStats.scaled` by exact power-of-two column scalings:

* the **invariant frame**, equilibrated so that diag Σ_T ≈ 1 (Jacobi scaling). Tr[Σ_T†Σ_B] (VC Thm 5.1/5.2,
  Def 5.3) and the probe loss are invariant to invertible linear maps (VC Cor 5.4, Obs 4.5), in particular to
  per-feature scales, so they are computed here: features whose columns differ in scale by 1e300 give the
  same VCI as standardised ones, and the pseudo-inverse cutoff rtol·λ_max is scale-free.
* the **original frame**: the features' own coordinates up to one global power of two c. Fuzziness and the V_B
  split (VC Sec 3.2, Fig 1) are not invariant to per-feature scales, so they are computed here; quantities with
  units (Tr Σ_W, eigenvalues) are multiplied back by c² and raise if that leaves float64.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from theory.collapse.stats import EPS, ClassStats, pow2_exponent

# --------------------------------------------------------------------------------------------------------
# arguments
# --------------------------------------------------------------------------------------------------------


def check_rtol(rtol, name: str = "rtol") -> float | None:
    """None, or a relative eigenvalue cutoff in [0, 1)."""
    if rtol is None:
        return None
    if isinstance(rtol, bool) or not isinstance(rtol, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name}: must be a number in [0, 1) or None, got {rtol!r}")
    r = float(rtol)
    if not (0.0 <= r < 1.0):
        raise ValueError(f"{name}: must lie in [0, 1) (a cutoff relative to the largest eigenvalue), got {r}")
    return r


def rank_arg(rank, K: int, p: int, eig_b=None, rtol: float | None = None) -> int:
    """rank Σ_B as requested: "paper" min(p, K−1) (VC Sec 6.1), "exact" (tolerance rank of ``eig_b``), or an int."""
    if isinstance(rank, str):
        if rank == "paper":
            return min(p, K - 1)
        if rank == "exact":
            w = eig_b
            tol = (max(p, K) * EPS if rtol is None else rtol) * max(w[0], 0.0)
            return int(np.sum(w > tol))
        raise ValueError(f"rank: must be 'paper', 'exact' or a positive int, got {rank!r}")
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or not 1 <= rank <= min(p, K - 1):
        raise ValueError(f"rank: an int must lie in [1, min(p, K-1)] = [1, {min(p, K - 1)}], got {rank!r}")
    return int(rank)


def sum_pow2(a: np.ndarray, e: np.ndarray) -> tuple[float, int]:
    """Σ_j a_j·2^e_j for a_j ≥ 0 as (m, E) with value m·2^E, no overflow or underflow of the dominant terms."""
    a = np.asarray(a, dtype=np.float64)
    nz = a > 0
    if not nz.any():
        return 0.0, 0
    top = int(np.max(pow2_exponent(a[nz]) + e[nz]))
    return float(np.sum(np.ldexp(a[nz], e[nz] - top))), top


# --------------------------------------------------------------------------------------------------------
# pseudo-inverse traces
# --------------------------------------------------------------------------------------------------------
def trace_pinv(St: np.ndarray, M: np.ndarray, rtol: float, atol: float = 0.0) -> tuple[float, str]:
    """Tr[M St† Mᵀ] for PSD St whose range contains the rows of M; St† drops eigenvalues below
    max(rtol·λ_max, atol).

    Cholesky route (‖L⁻¹Mᵀ‖_F²) when LAPACK's 1-norm condition estimate puts λ_min 1000× above the cutoff
    (then St† = St⁻¹ and both routes agree to rounding); otherwise one eigh: Σ_{λ_j > cut} ‖q_jᵀMᵀ‖²/λ_j.
    """
    anorm = float(np.max(np.sum(np.abs(St), axis=0)))
    if anorm > 0:
        L, info = sla.lapack.dpotrf(St, lower=1, clean=1)
        if info == 0:
            rcond, info2 = sla.lapack.dpocon(L, anorm, uplo="L")
            # rcond ≤ λ_min/‖St‖₁, so rcond·‖St‖₁ > 1000·atol puts λ_min above 1000·atol
            if info2 == 0 and rcond > 1e3 * rtol and rcond * anorm > 1e3 * atol:
                Z = sla.solve_triangular(L, M.T, lower=True, check_finite=False)
                return float(np.sum(Z * Z)), "cholesky"
    w, Q = np.linalg.eigh(St)
    keep = w > max(rtol * max(w[-1], 0.0), atol)
    Z = Q[:, keep].T @ M.T
    return float(np.sum(Z * Z / w[keep][:, None])), "eigh"


NOISE_ULPS = 32  # a feature computed in precision u is trusted to 32 ulps (a length-1024 dot product's √k growth)


def noise_floor(M: np.ndarray, Sw: np.ndarray, mean: np.ndarray, n: int, u: float) -> float:
    """The largest eigenvalue of Σ_T that rounding of the features alone can produce, in the frame of M and Sw.

    Features stored at unit roundoff u (float32: 2^-23) carry an error of about c·u·|h_ij| per entry
    (c = NOISE_ULPS). A noise matrix E (N × p) with entries of size ν_j in column j has ‖E‖₂ ≲ max_j ν_j (√N + √p)
    (the edge of its singular values), so Σ_T = HᵀH/N receives eigenvalues up to
    (c·u)²·(1 + √(p/N))²·max_j (Σ_T,jj + μ_j²): directions of Σ_T below this are the features' rounding, not data.
    0 for float64 features (their own rounding is below the p·ε relative cut of trace_pinv)."""
    if u <= EPS:
        return 0.0
    p = M.shape[1]
    diag_t = np.einsum("ij,ij->j", M, M) + np.diag(Sw)
    return float((NOISE_ULPS * u) ** 2 * (1.0 + np.sqrt(p / max(n, 1))) ** 2 * np.max(diag_t + mean ** 2))


# --------------------------------------------------------------------------------------------------------
# one frame
# --------------------------------------------------------------------------------------------------------
class Frame:
    """Σ_B = MᵀM and Σ_W in one coordinate frame; second moments here are 2^-e2 times the features' units.

    Σ_B's nonzero eigenpairs come from the smaller of the K×K Gram matrix MMᵀ and the p×p Σ_B.
    """

    def __init__(self, M: np.ndarray, Sw: np.ndarray, priors: np.ndarray, e2: int = 0):
        self.M, self.Sw, self.priors, self.e2 = M, Sw, priors, int(e2)
        self.K, self.p = M.shape
        self._eig_b = None
        self._fuzz: dict[int, tuple[float, float]] = {}
        self.fuzz_route: dict[int, str] = {}  # rank r -> "gram" (one Cholesky of G + qqᵀ) or "eigen" (eigenpairs)

    def sigma_t(self) -> np.ndarray:
        return self.Sw + self.M.T @ self.M

    def eig_b(self):
        """Eigenvalues (descending) of Σ_B, its eigenvectors as columns V (p, m), m = min(K, p), and the
        K×K Gram eigenvectors U (None when K > p)."""
        if self._eig_b is None:
            M = self.M
            if self.K <= self.p:
                g, U = np.linalg.eigh(M @ M.T)
                g, U = g[::-1], U[:, ::-1]
                s = np.sqrt(np.clip(g, 0.0, None))
                with np.errstate(divide="ignore", invalid="ignore"):
                    V = (M.T @ U) / np.where(s > 0, s, np.inf)
                self._eig_b = (g, V, U)
            else:
                w, V = np.linalg.eigh(M.T @ M)
                self._eig_b = (w[::-1], V[:, ::-1], None)
        return self._eig_b

    def check_kept(self, r: int) -> np.ndarray:
        """The top r eigenvalues of Σ_B, or a ValueError if the r-th is not resolved to two digits: eigh gives
        eigenvalues to ~max(p, K)·ε·λ_max, so λ_r ≤ 100·max(p, K)·ε·λ_max would make Σ_B† and V_B noise (the
        instability of VC Sec 4.3 taken to its limit). Above that, results are accurate to ~max(p, K)·ε·λ_max/λ_r."""
        g = self.eig_b()[0]
        floor = max(self.p, self.K) * EPS
        if not g[r - 1] > 100 * floor * max(g[0], 0.0):
            rel = g[r - 1] / g[0] if g[0] > 0 else float("nan")
            raise ValueError(f"eigenvalue {r} of Σ_B is {rel:.3g}·λ_max, within 100× the rounding level "
                             f"max(p, K)·ε = {floor:.2g}: Σ_B has no resolved rank-{r} part (class means in fewer "
                             "dimensions, or feature scales too uneven to resolve them); use rank='exact' or a "
                             "smaller int, or VCI (which is invariant to per-feature scales)")
        return g[:r]

    def within_on_vb(self, r: int) -> np.ndarray:
        """v_jᵀ Σ_W v_j for the top r eigenvectors v_j of Σ_B (via the K×K route when K ≤ p)."""
        g = self.check_kept(r)
        _, V, U = self.eig_b()
        if U is not None:
            Ur = U[:, :r]
            A = self.M @ (self.Sw @ self.M.T)  # K×K
            return np.einsum("ij,ij->j", A @ Ur, Ur) / g
        Vr = V[:, :r]
        return np.einsum("ij,ij->j", self.Sw @ Vr, Vr)

    def fuzz_vb(self, r: int) -> tuple[float, float]:
        """(Tr[Σ_B,r†Σ_W], Tr[P_r Σ_W]) with Σ_B,r† and P_r from the top r eigenpairs of Σ_B.

        For r = K − 1 ≤ p (the paper's rank) no eigendecomposition is needed: the K×K Gram G = MMᵀ has the
        known null vector q = (√π_k) (Σ_k π_k(μ_k − μ_G) = 0), so with G scaled to mean eigenvalue 1,
        G⁺ = (G + qqᵀ)⁻¹ − qqᵀ from one Cholesky, and with A = MΣ_WMᵀ: Tr[Σ_B†Σ_W] = Tr[G⁺AG⁺], Tr[P Σ_W] = Tr[G⁺A] (v_j = Mᵀu_j/s_j). Used when
        LAPACK's condition estimate of G + qqᵀ is above 1e3·K·ε; otherwise (and for any other r) the
        eigenpairs are used. Raises if the r-th eigenvalue of Σ_B is at rounding level.
        """
        if r not in self._fuzz:
            self._fuzz[r] = self._fuzz_vb(r)
        return self._fuzz[r]

    def _fuzz_vb(self, r: int) -> tuple[float, float]:
        if r == self.K - 1 and self.K <= self.p:
            q = np.sqrt(self.priors)
            G = self.M @ self.M.T
            s = float(np.trace(G)) / r  # the mean nonzero eigenvalue of G
            if s > 0:
                Mn = self.M / np.sqrt(s)  # Gn = MnMnᵀ has mean eigenvalue 1; Tr[P Σ_W] does not change
                Gp = Mn @ Mn.T + np.outer(q, q)  # Gp q = q, so Gp⁻¹ = Gn⁺ + qqᵀ
                L, info = sla.lapack.dpotrf(Gp, lower=1, clean=1)
                if info == 0:
                    rcond, info2 = sla.lapack.dpocon(L, float(np.max(np.sum(np.abs(Gp), axis=0))), uplo="L")
                    if info2 == 0 and rcond > 1e3 * self.K * EPS:
                        A = Mn @ (self.Sw @ Mn.T)
                        qAq = float(q @ A @ q)  # zero up to rounding: Mᵀq = 0
                        Y = sla.cho_solve((L, True), A, check_finite=False)  # Gp⁻¹A
                        Z = sla.cho_solve((L, True), Y.T, check_finite=False)  # Gp⁻¹AGp⁻¹ (A symmetric)
                        self.fuzz_route[r] = "gram"
                        return _finite((float(np.trace(Z)) - qAq) / s), float(np.trace(Y)) - qAq
        g = self.check_kept(r)
        w = self.within_on_vb(r)
        self.fuzz_route[r] = "eigen"
        with np.errstate(over="ignore"):  # an overflow is reported by _finite
            return _finite(float(np.sum(w / g))), float(np.sum(w))


def _finite(x: float) -> float:
    if not np.isfinite(x):
        raise ValueError("Tr[Σ_B†Σ_W] overflows float64: Σ_B is negligible against Σ_W (fuzziness is ~1e308 or more)")
    return x


def _pow2(g: np.ndarray) -> np.ndarray:
    return np.ldexp(1.0, g)


def invariant_frame(M: np.ndarray, Sw: np.ndarray, priors: np.ndarray) -> Frame:
    """Columns scaled by powers of two so that diag Σ_T ≈ 1 (for the invariant quantities; see module doc).
    ``M``, ``Sw`` in the stored frame (:meth:`ClassStats.scaled`); not modified."""
    dt = np.einsum("ij,ij->j", M, M) + np.diag(Sw)
    g = np.where(dt > 0, pow2_exponent(np.sqrt(dt)), 0)
    if not g.any():
        return Frame(M, Sw, priors)
    s = _pow2(-g)  # exact; row then column scaling never overflows (|Σ_ij| ≤ √(Σ_ii Σ_jj))
    Sw = Sw * s[:, None]
    Sw *= s[None, :]
    return Frame(M * s[None, :], Sw, priors)


def original_frame(M: np.ndarray, Sw: np.ndarray, e: np.ndarray, priors: np.ndarray) -> Frame:
    """The features' own coordinates divided by one power of two c (so that max diag Σ_T ≈ 1): e2 = 2 log2 c.
    Columns far below the largest unit may underflow there, negligibly against it."""
    top = int(e.max())
    if e.any():
        d = e - top
        M = np.ldexp(M, d[None, :])
        Sw = np.ldexp(Sw, d[:, None] + d[None, :])
    tt = float(np.max(np.einsum("ij,ij->j", M, M) + np.diag(Sw)))
    g = int(pow2_exponent(np.sqrt(tt))) if tt > 0 else 0
    if g:
        M, Sw = np.ldexp(M, -g), np.ldexp(Sw, -2 * g)
    return Frame(M, Sw, priors, e2=2 * (top + g))


class Spectra:
    """Lazily built frames of one ClassStats: ``inv`` (invariant) and ``orig`` (original), and Tr[Σ_T†Σ_B].

    ``M``, ``Sw``, ``e``: the stored frame (:meth:`ClassStats.scaled`), computed once.
    """

    def __init__(self, st: ClassStats, rtol_t: float | None = None):
        self.st = st
        self.rtol_t = st.p * EPS if rtol_t is None else check_rtol(rtol_t)
        self.M, self.Sw, self.e = st.scaled()
        self._u = float(getattr(st, "input_eps", EPS))
        self.priors = st.priors
        self._inv = self._orig = self._trace_tb = None
        self.route = None

    @property
    def between_zero(self) -> bool:
        """Σ_B = 0 exactly (all class means coincide)."""
        return not np.any(self.M)

    @property
    def inv(self) -> Frame:
        if self._inv is None:
            self._inv = invariant_frame(self.M, self.Sw, self.priors)
        return self._inv

    @property
    def orig(self) -> Frame:
        if self._orig is None:
            self._orig = original_frame(self.M, self.Sw, self.e, self.priors)
        return self._orig

    def trace_tb(self) -> float:
        """Tr[Σ_T†Σ_B] (VC Thm 5.1, Def 5.3), in the invariant frame."""
        if self._trace_tb is None:
            f = self.inv
            self._trace_tb, self.route = trace_pinv(f.sigma_t(), f.M, self.rtol_t, self.noise_floor_inv())
        return self._trace_tb

    def noise_floor_inv(self) -> float:
        """:func:`noise_floor` of the features' own precision, in the invariant frame (0 for float64 features)."""
        if self._u <= EPS:
            return 0.0
        st, f = self.st, self.inv
        dt = np.einsum("ij,ij->j", self.M, self.M) + np.diag(self.Sw)
        s = _pow2(-np.where(dt > 0, pow2_exponent(np.sqrt(dt)), 0))  # invariant_frame's column scaling
        mean = (st.priors @ st._mean + st._origin) * s  # the global mean, stored frame → invariant frame
        return noise_floor(f.M, f.Sw, mean, st.n, self._u)

