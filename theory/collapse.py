"""VC: one-pass class statistics, Σ_W / Σ_B / Σ_T, VCI and the older variability-collapse metrics.

Paper: Xu & Liu, "Quantifying the Variability Collapse of Neural Networks" (VC). Notation as in VC Sec 3.1:
features h ∈ R^p, K classes, class means μ_k, global mean μ_G, and

* Σ_W = (1/N) Σ_k Σ_i (h_{k,i} − μ_k)(h_{k,i} − μ_k)ᵀ          (VC Eq 1; 1/(KN) for a balanced set)
* Σ_B = Σ_k (n_k/N) (μ_k − μ_G)(μ_k − μ_G)ᵀ                   (VC Eq 2; (1/K) Σ_k for a balanced set)
* Σ_T = (1/N) Σ_k Σ_i (h_{k,i} − μ_G)(h_{k,i} − μ_G)ᵀ = Σ_B + Σ_W  (VC Eq 3, Eq 7)

The paper assumes a balanced set (n_k = N/K); the weights n_k/N are the extension it mentions ("readily
extended to imbalanced datasets") and keep Σ_T = Σ_B + Σ_W exact. Every metric reduces to the paper's
formula when the classes are balanced.

:class:`ClassStats` accumulates, in float64 and in one pass over batches, the class counts, the class
means and the *pooled centred within-class scatter* Σ_k Σ_i (h − μ_k)(h − μ_k)ᵀ with Chan et al.'s pairwise
update (a batch is centred on its own class means, then merged with the rank-m correction
Σ_c n_a n_b/(n_a+n_b) δ_c δ_cᵀ) — never raw sums of squares, so a large common offset in the features does
not cancel catastrophically. It also keeps the per-class sums of the normalised features h/‖h‖, from which
the cosine metric (Kornblith et al., VC Sec 3.2) follows without the O(N²) pairs. Two accumulators merge
exactly (:meth:`ClassStats.merge`), so partial statistics of a distributed run can be combined.

A class with a single sample contributes its mean to Σ_B and nothing to the within-class scatter; Σ_W is
still normalised by the total N (Eq 1), i.e. it is the pooled within-class covariance in which that class
counts as perfectly collapsed.

Metrics (each accepts a :class:`ClassStats` or ``(features, labels)``):

* :func:`vci`               VC Def 5.3: 1 − Tr[Σ_T†Σ_B]/rank Σ_B, rank "paper" = min(p, K−1) (Sec 6.1) or "exact"
* :func:`fuzziness`         Tr[Σ_B†Σ_W] (Papyan et al.; VC Sec 3.2), Σ_B† from the top rank Σ_B eigenpairs
* :func:`squared_distance`  VC Eq 4 = Tr Σ_W / Tr Σ_B for a balanced set
* :func:`cosine_similarity` d̄_within of VC Sec 3.2 (what the paper calls "Cosine Similarity");
  :func:`class_separation` is 1 − d̄_within/d̄_total
* :func:`probe_loss`        VC Thm 5.1 closed form; :func:`probe_loss_lstsq` an independent least-squares probe
* :func:`vb_split`          VC Fig 1: within-class variation in V_B and V_B⊥, summing to Tr Σ_W
* :func:`mlog`              VC Eq 6, the mean log odds gain
* :func:`metrics`           all of the above from one set of factorisations (what the benchmark times)
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sps

from theory.validate import as_float_array, check_finite

EPS = np.finfo(np.float64).eps


# --------------------------------------------------------------------------------------------------------
# the accumulator
# --------------------------------------------------------------------------------------------------------
def _check_labels(y, n: int, K: int, name: str = "labels") -> np.ndarray:
    a = np.asarray(y)
    if a.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array of class indices, got shape {a.shape}")
    if a.shape[0] != n:
        raise ValueError(f"{name}: length {a.shape[0]} does not match the {n} feature rows")
    if a.dtype == bool or not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"{name}: must be integers in [0, K), got dtype {a.dtype}")
    a = a.astype(np.int64, copy=False)
    if n and (a.min() < 0 or a.max() >= K):
        bad = a[(a < 0) | (a >= K)][0]
        raise ValueError(f"{name}: label {int(bad)} is outside [0, {K}) (K = n_classes = {K})")
    return a


class ClassStats:
    """One-pass, mergeable float64 class statistics of features (VC Eq 1–3).

    ``ClassStats(n_features=p, n_classes=K)``; ``update(H, y)`` with H of shape (b, p) and integer labels
    y ∈ [0, K) of shape (b,); ``merge(other)`` returns the accumulator of the union of both data sets.

    Attributes: ``counts`` (K,), ``means`` (K, p) class means (zero rows for classes not seen yet),
    ``scatter_within`` (p, p) = N·Σ_W, ``unit_sums`` (K, p) class sums of h/‖h‖ (a zero vector counts as
    0, the convention of ``torch.cosine_similarity``), ``n`` the number of samples.
    """

    def __init__(self, n_features: int, n_classes: int):
        for v, nm in ((n_features, "n_features"), (n_classes, "n_classes")):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise ValueError(f"{nm}: must be an integer, got {v!r}")
        if n_features < 1:
            raise ValueError(f"n_features: must be >= 1, got {n_features}")
        if n_classes < 2:
            raise ValueError(f"n_classes: must be >= 2 (K = 1 has no between-class variation), got {n_classes}")
        self.p, self.K = int(n_features), int(n_classes)
        self.counts = np.zeros(self.K, dtype=np.int64)
        self.means = np.zeros((self.K, self.p))
        self.scatter_within = np.zeros((self.p, self.p))
        self.unit_sums = np.zeros((self.K, self.p))

    # -- accumulation ------------------------------------------------------------------------------------
    @property
    def n(self) -> int:
        return int(self.counts.sum())

    def update(self, H, y) -> "ClassStats":
        """Add a batch: H (b, p) features (any float dtype; used in float64), y (b,) integer labels."""
        H = np.asarray(H)
        if H.ndim != 2:
            raise ValueError(f"H: expected a 2-D (batch, features) array, got shape {H.shape}")
        if H.shape[1] != self.p:
            raise ValueError(f"H: has {H.shape[1]} feature columns, this ClassStats has n_features = {self.p}")
        y = _check_labels(y, H.shape[0], self.K, "y")
        if H.shape[0] == 0:
            return self
        if not np.issubdtype(H.dtype, np.number) or np.iscomplexobj(H):
            raise ValueError(f"H: must be a real numeric array, got dtype {H.dtype}")
        b = H.shape[0]
        if H.dtype != np.float64:
            conv = self._buffer("_conv", b)
            np.copyto(conv, H)  # float32 (or int) features are used in float64
            H = conv
        classes, yl, cnt = np.unique(y, return_inverse=True, return_counts=True)
        m = classes.size
        # one pass over H for both class sums and class sums of h/‖h‖: a sparse (2m × b) indicator product
        norms = np.sqrt(np.einsum("ij,ij->i", H, H))
        inv = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
        ind = sps.csr_matrix((np.concatenate([np.ones(b), inv]),
                              (np.concatenate([yl, yl + m]), np.concatenate([np.arange(b), np.arange(b)]))),
                             shape=(2 * m, b))
        both = ind @ H
        if not np.isfinite(both).all() or not np.isfinite(norms).all():
            check_finite(H, "H")  # NaN/Inf propagate into the sums: name the first bad entry
        sums, unit_b = both[:m], both[m:]
        mean_b = sums / cnt[:, None]
        # Chan et al.: the rank-m merge correction Σ_c n_a n_b/(n_a+n_b) δ_c δ_cᵀ rides in the same SYRK as
        # extra rows √w_c δ_c appended below the centred batch
        n_a = self.counts[classes].astype(np.float64)
        old = np.flatnonzero(n_a > 0)
        X = self._buffer("_work", b + old.size)
        np.take(mean_b, yl, axis=0, out=X[:b], mode="clip")  # yl is in range: clip only skips the check
        np.subtract(H, X[:b], out=X[:b])  # centred on the batch's own class means
        if old.size:
            w = np.sqrt(n_a[old] * cnt[old] / (n_a[old] + cnt[old]))
            np.subtract(mean_b[old], self.means[classes[old]], out=X[b:])
            X[b:] *= w[:, None]
        m2 = X.T @ X  # SYRK
        self._absorb(classes, cnt, mean_b, m2, unit_b, corrected=True)
        return self

    def __getstate__(self) -> dict:
        """Pickle (e.g. to ship partial statistics between workers) without the scratch buffers."""
        return {k: v for k, v in self.__dict__.items() if k not in ("_work", "_conv")}

    def _buffer(self, name: str, b: int) -> np.ndarray:
        """A (b, p) float64 scratch view of a buffer kept across updates: fresh b×p allocations cost more
        in page faults than the arithmetic on them. Its size is the largest batch seen, never N."""
        buf = getattr(self, name, None)
        if buf is None or buf.shape[0] < b:
            buf = np.empty((max(b, int(1.1 * b) if buf is not None else b), self.p))
            setattr(self, name, buf)
        return buf[:b]

    def _absorb(self, classes, cnt_b, mean_b, m2_b, unit_b, corrected: bool = False) -> None:
        """Chan et al. pairwise merge of (counts, means, pooled centred scatter) for the listed classes."""
        n_a = self.counts[classes].astype(np.float64)
        n_b = cnt_b.astype(np.float64)
        n = n_a + n_b
        delta = mean_b - self.means[classes]
        old = n_a > 0
        if old.any() and not corrected:
            w = np.sqrt(n_a[old] * n_b[old] / n[old])
            D = delta[old] * w[:, None]
            m2_b = m2_b + D.T @ D
        self.means[classes] += delta * (n_b / n)[:, None]
        self.scatter_within += m2_b
        self.counts[classes] += cnt_b.astype(np.int64)
        self.unit_sums[classes] += unit_b

    def merge(self, other: "ClassStats") -> "ClassStats":
        """A new accumulator holding the statistics of both (exact up to rounding, any split of the data)."""
        if not isinstance(other, ClassStats):
            raise ValueError(f"merge: expected a ClassStats, got {type(other).__name__}")
        if (other.p, other.K) != (self.p, self.K):
            raise ValueError(f"merge: shapes differ: (p, K) = {(self.p, self.K)} vs {(other.p, other.K)}")
        out = self.copy()
        seen = np.flatnonzero(other.counts > 0)
        if seen.size:
            out._absorb(seen, other.counts[seen], other.means[seen], other.scatter_within.copy(),
                        other.unit_sums[seen])
        return out

    def copy(self) -> "ClassStats":
        out = ClassStats(self.p, self.K)
        out.counts, out.means = self.counts.copy(), self.means.copy()
        out.scatter_within, out.unit_sums = self.scatter_within.copy(), self.unit_sums.copy()
        return out

    @classmethod
    def from_features(cls, H, y, n_classes: int | None = None, batch: int = 8192) -> "ClassStats":
        """Statistics of a whole (N, p) feature matrix; K = n_classes or max(label) + 1."""
        H = np.asarray(H)
        if H.ndim != 2:
            raise ValueError(f"features: expected a 2-D (samples, features) array, got shape {H.shape}")
        ya = np.asarray(y)
        if ya.ndim != 1 or ya.size == 0:
            raise ValueError(f"labels: expected a non-empty 1-D array, got shape {ya.shape}")
        if ya.dtype == bool or not np.issubdtype(ya.dtype, np.integer):
            raise ValueError(f"labels: must be integers in [0, K), got dtype {ya.dtype}")
        if n_classes is None:
            n_classes = int(ya.max()) + 1
            if n_classes < 2:
                raise ValueError("labels: every sample is in class 0: K = 1 has no between-class variation")
        st = cls(H.shape[1], n_classes)
        _check_labels(ya, H.shape[0], st.K)
        for s in range(0, H.shape[0], batch):
            st.update(H[s:s + batch], ya[s:s + batch])
        return st

    # -- covariances ---------------------------------------------------------------------------------------
    def _require_complete(self) -> None:
        if self.n == 0:
            raise ValueError("ClassStats: no samples yet")
        empty = np.flatnonzero(self.counts == 0)
        if empty.size:
            raise ValueError(f"ClassStats: class {int(empty[0])} has no samples "
                             f"({empty.size} of K = {self.K} classes are empty); every class needs ≥ 1 sample")

    @property
    def priors(self) -> np.ndarray:
        """n_k / N (1/K for a balanced set)."""
        self._require_complete()
        return self.counts / self.n

    @property
    def global_mean(self) -> np.ndarray:
        """μ_G = Σ_k (n_k/N) μ_k."""
        return self.priors @ self.means

    def centred_means(self) -> np.ndarray:
        """M (K, p) with rows sqrt(n_k/N)(μ_k − μ_G), so that Σ_B = MᵀM."""
        pi = self.priors
        return (self.means - pi @ self.means) * np.sqrt(pi)[:, None]

    def sigma_w(self) -> np.ndarray:
        """Σ_W (VC Eq 1), pooled within-class covariance normalised by N."""
        self._require_complete()
        return self.scatter_within / self.n

    def sigma_b(self) -> np.ndarray:
        """Σ_B (VC Eq 2)."""
        M = self.centred_means()
        return M.T @ M

    def sigma_t(self) -> np.ndarray:
        """Σ_T = Σ_B + Σ_W (VC Eq 3 and Eq 7; assembled from the centred parts, no raw second moments)."""
        return self.sigma_b() + self.sigma_w()

    def __repr__(self) -> str:
        return f"ClassStats(n_features={self.p}, n_classes={self.K}, n={self.n})"


def _as_stats(x, labels=None) -> ClassStats:
    if isinstance(x, ClassStats):
        if labels is not None:
            raise ValueError("labels: give labels only with a feature array, not with a ClassStats")
        x._require_complete()
        return x
    if labels is None:
        raise ValueError("labels: required when the first argument is a feature array (or pass a ClassStats)")
    H = np.asarray(x)
    if H.ndim != 2:
        raise ValueError(f"features: expected a 2-D (samples, features) array, got shape {H.shape}")
    st = ClassStats.from_features(H, labels)
    st._require_complete()
    return st


# --------------------------------------------------------------------------------------------------------
# shared factorisations
# --------------------------------------------------------------------------------------------------------
def _rank_arg(rank, st: ClassStats, eig_b: np.ndarray | None, rtol: float | None) -> int:
    """rank Σ_B as requested: "paper" min(p, K−1) (VC Sec 6.1), "exact" (tolerance rank), or an int."""
    if isinstance(rank, str):
        if rank == "paper":
            return min(st.p, st.K - 1)
        if rank == "exact":
            w = eig_b if eig_b is not None else _Spectra(st).eig_b()[0]
            tol = (max(st.p, st.K) * EPS if rtol is None else rtol) * max(w[0], 0.0)
            return int(np.sum(w > tol))
        raise ValueError(f"rank: must be 'paper', 'exact' or a positive int, got {rank!r}")
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or not 1 <= rank <= min(st.p, st.K - 1):
        raise ValueError(f"rank: an int must lie in [1, min(p, K-1)] = [1, {min(st.p, st.K - 1)}], got {rank!r}")
    return int(rank)


class _Spectra:
    """Lazily computed factorisations shared by the metrics of one ClassStats.

    Σ_B = MᵀM with M (K, p) of rank ≤ K − 1: its nonzero eigenpairs come from the smaller of the K×K Gram
    matrix MMᵀ and the p×p Σ_B. Σ_T†: a Cholesky factor when LAPACK's condition estimate puts λ_min(Σ_T)
    safely above the pseudo-inverse cutoff (then Σ_T† = Σ_T⁻¹ exactly), otherwise one eigh of Σ_T.
    """

    def __init__(self, st: ClassStats, rtol_t: float | None = None):
        self.st = st
        self.M = st.centred_means()
        self.Sw = st.sigma_w()
        self.rtol_t = st.p * EPS if rtol_t is None else rtol_t
        self._eig_b = self._trace_tb = None

    def eig_b(self):
        """Eigenvalues (descending) of Σ_B and its eigenvectors as columns V (p, m), m = min(K, p)."""
        if self._eig_b is None:
            M = self.M
            if self.st.K <= self.st.p:
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

    def within_on_vb(self, r: int) -> np.ndarray:
        """v_jᵀ Σ_W v_j for the top r eigenvectors v_j of Σ_B (via the K×K route when K ≤ p)."""
        g, V, U = self.eig_b()
        if U is not None:
            Ur = U[:, :r]
            A = self.M @ (self.Sw @ self.M.T)  # K×K
            q = np.einsum("ij,ij->j", A @ Ur, Ur)
            return q / g[:r]
        Vr = V[:, :r]
        return np.einsum("ij,ij->j", self.Sw @ Vr, Vr)

    def fuzz_vb(self, r: int) -> tuple[float, float]:
        """(Tr[Σ_B,r†Σ_W], Tr[P_r Σ_W]) with Σ_B,r† and P_r from the top r eigenpairs of Σ_B.

        For r = K − 1 ≤ p (the paper's rank) no eigendecomposition is needed: the K×K Gram G = MMᵀ has the
        known null vector q = (√π_k) (Σ_k π_k(μ_k − μ_G) = 0), so G⁺ = (G + qqᵀ)⁻¹ − qqᵀ from one Cholesky,
        and with A = MΣ_WMᵀ: Tr[Σ_B†Σ_W] = Tr[G⁺AG⁺], Tr[P Σ_W] = Tr[G⁺A] (v_j = Mᵀu_j/s_j). Used when
        LAPACK's condition estimate of G + qqᵀ is above 1e3·K·ε; otherwise (and for any other r) the
        eigenpairs are used. Raises if the r-th eigenvalue of Σ_B is not positive.
        """
        st = self.st
        if r == st.K - 1 and st.K <= st.p:
            q = np.sqrt(st.priors)
            G = self.M @ self.M.T
            Gp = G + np.outer(q, q)
            L, info = sla.lapack.dpotrf(Gp, lower=1, clean=1)
            if info == 0:
                rcond, info2 = sla.lapack.dpocon(L, float(np.max(np.sum(np.abs(Gp), axis=0))), uplo="L")
                if info2 == 0 and rcond > 1e3 * st.K * EPS:
                    A = self.M @ (self.Sw @ self.M.T)
                    qAq = float(q @ A @ q)  # zero up to rounding: Mᵀq = 0
                    Y = sla.cho_solve((L, True), A, check_finite=False)  # Gp⁻¹A
                    Z = sla.cho_solve((L, True), Y.T, check_finite=False)  # Gp⁻¹AGp⁻¹ (A symmetric)
                    return float(np.trace(Z)) - qAq, float(np.trace(Y)) - qAq
        g = self.eig_b()[0]
        if g[r - 1] <= 0:
            raise ValueError(f"eigenvalue {r} of Σ_B is {g[r - 1]:.3g} <= 0: Σ_B has rank < {r}; "
                             "use rank='exact' or a smaller int")
        w = self.within_on_vb(r)
        return float(np.sum(w / g[:r])), float(np.sum(w))

    def trace_tb(self) -> float:
        """Tr[Σ_T†Σ_B] (VC Thm 5.1, Def 5.3)."""
        if self._trace_tb is None:
            self._trace_tb, self.route = _trace_pinv(self.Sw + self.M.T @ self.M, self.M, self.rtol_t)
        return self._trace_tb


def _trace_pinv(St: np.ndarray, M: np.ndarray, rtol: float) -> tuple[float, str]:
    """Tr[M St† Mᵀ] for PSD St whose range contains the rows of M; St† drops eigenvalues < rtol·λ_max.

    Cholesky route (‖L⁻¹Mᵀ‖_F²) when LAPACK's 1-norm condition estimate puts λ_min 1000× above the cutoff
    (then St† = St⁻¹ and both routes agree to rounding); otherwise one eigh: Σ_{λ_j > tol} ‖q_jᵀMᵀ‖²/λ_j.
    """
    anorm = float(np.max(np.sum(np.abs(St), axis=0)))
    if anorm > 0:
        L, info = sla.lapack.dpotrf(St, lower=1, clean=1)
        if info == 0:
            rcond, info2 = sla.lapack.dpocon(L, anorm, uplo="L")
            if info2 == 0 and rcond > 1e3 * rtol:
                Z = sla.solve_triangular(L, M.T, lower=True, check_finite=False)
                return float(np.sum(Z * Z)), "cholesky"
    w, Q = np.linalg.eigh(St)
    keep = w > rtol * max(w[-1], 0.0)
    Z = Q[:, keep].T @ M.T
    return float(np.sum(Z * Z / w[keep][:, None])), "eigh"


# --------------------------------------------------------------------------------------------------------
# metrics
# --------------------------------------------------------------------------------------------------------
def trace_ratio(stats_or_features, labels=None, rtol: float | None = None) -> float:
    """Tr[Σ_T†Σ_B] (VC Thm 5.1/5.2); Σ_T† drops eigenvalues below rtol·λ_max (default p·ε)."""
    return _Spectra(_as_stats(stats_or_features, labels), rtol).trace_tb()


def vci(stats_or_features, labels=None, rank="paper", rtol: float | None = None) -> float:
    """Variability Collapse Index, VC Def 5.3: 1 − Tr[Σ_T†Σ_B]/rank Σ_B.

    rank="paper": min(p, K−1) as in VC Sec 6.1 (the maximal rank of Σ_B); "exact": the numerical rank of
    Σ_B (eigenvalues above max(p, K)·ε·λ_max, or ``rtol``·λ_max); or an explicit int. With "paper" and class
    means spanning fewer than min(p, K−1) dimensions, VCI stays above 0 even at full collapse (bias
    (r_paper − r_exact)/r_paper); "exact" removes it.
    """
    st = _as_stats(stats_or_features, labels)
    sp = _Spectra(st)
    r = _rank_arg(rank, st, sp.eig_b()[0] if rank == "exact" else None, rtol)
    if r == 0:
        raise ValueError("vci: Σ_B is numerically zero (all class means coincide); VCI is undefined")
    return 1.0 - sp.trace_tb() / r


def fuzziness(stats_or_features, labels=None, rank="paper", rtol: float | None = None) -> float:
    """Fuzziness Tr[Σ_B†Σ_W] (VC Sec 3.2), with Σ_B† built from the top ``rank`` eigenpairs of Σ_B.

    rank="paper": the top min(p, K−1) eigenvalues (VC Sec 4.3's remedy for the unknown rank); "exact": those
    above max(p, K)·ε·λ_max (a pinv threshold); or an int. Raises if a kept eigenvalue is not positive.
    """
    st = _as_stats(stats_or_features, labels)
    sp = _Spectra(st)
    r = _rank_arg(rank, st, sp.eig_b()[0] if rank == "exact" else None, rtol)
    if r == 0:
        raise ValueError("fuzziness: Σ_B is numerically zero (all class means coincide)")
    try:
        return sp.fuzz_vb(r)[0]
    except ValueError as exc:
        raise ValueError(f"fuzziness: {exc}") from None


def squared_distance(stats_or_features, labels=None) -> float:
    """Squared Distance, VC Eq 4 (Hui et al.): Σ‖h − μ_k‖² / (N_class Σ_k ‖μ_k − μ_G‖²) = Tr Σ_W / Tr Σ_B.

    For a balanced set Eq 4 equals Tr Σ_W/Tr Σ_B exactly; for an imbalanced one this ratio (with Σ_B
    weighted by n_k/N) is the definition used here.
    """
    st = _as_stats(stats_or_features, labels)
    tb = float(np.sum(st.centred_means() ** 2))
    if tb <= 0:
        raise ValueError("squared_distance: Tr Σ_B = 0 (all class means coincide)")
    return float(np.trace(st.scatter_within) / st.n / tb)


def cosine_distances(stats_or_features, labels=None) -> dict:
    """d̄_within and d̄_total of VC Sec 3.2 (Kornblith et al. 2021) from class sums of h/‖h‖, O(Kp), no pairs.

    d̄_within = (1/K) Σ_k (1 − ‖s_k‖²/n_k²), d̄_total = 1 − ‖Σ_k s_k‖²/N², s_k = Σ_i h_{k,i}/‖h_{k,i}‖
    (the paper's double sums over pairs, i = j included; for a balanced set they are its formulas exactly).
    """
    st = _as_stats(stats_or_features, labels)
    within = float(np.mean(1.0 - np.sum(st.unit_sums ** 2, axis=1) / st.counts.astype(float) ** 2))
    tot = st.unit_sums.sum(axis=0)
    total = float(1.0 - tot @ tot / float(st.n) ** 2)
    return {"d_within": within, "d_total": total}


def cosine_similarity(stats_or_features, labels=None) -> float:
    """The paper's "Cosine Similarity" metric: d̄_within of VC Sec 3.2 (a mean within-class cosine *distance*)."""
    return cosine_distances(stats_or_features, labels)["d_within"]


def class_separation(stats_or_features, labels=None) -> float:
    """Kornblith et al.'s class separation 1 − d̄_within/d̄_total (VC Sec 3.2)."""
    d = cosine_distances(stats_or_features, labels)
    if d["d_total"] <= 0:
        raise ValueError("class_separation: d̄_total = 0 (all features point the same way)")
    return 1.0 - d["d_within"] / d["d_total"]


def probe_loss(stats, labels=None, rtol: float | None = None) -> float:
    """Optimal linear-probe MSE loss min_{W,b} (1/2N) Σ ‖W h + b − e_y‖², closed form (VC Thm 5.1).

    Balanced: −Tr[Σ_T†Σ_B]/(2K) + 1/2 − 1/(2K) (Thm 5.1). General priors π_k = n_k/N (same derivation,
    A.2): ½(1 − Σπ_k²) − ½ Σ_k π_k² (μ_k − μ_G)ᵀΣ_T†(μ_k − μ_G), which is Thm 5.1 when π_k = 1/K.
    """
    st = _as_stats(stats, labels)
    pi = st.priors
    if np.all(st.counts == st.counts[0]):
        t = _Spectra(st, rtol).trace_tb()
        return -t / (2 * st.K) + 0.5 - 0.5 / st.K
    Dw = (st.means - st.global_mean) * pi[:, None]  # rows π_k (μ_k − μ_G)
    q, _ = _trace_pinv(st.sigma_t(), Dw, st.p * EPS if rtol is None else rtol)
    return 0.5 * (1.0 - float(pi @ pi)) - 0.5 * q


def probe_loss_lstsq(features, labels, n_classes: int | None = None) -> float:
    """The same optimum by an explicit least-squares solve of [H, 1]·B ≈ one-hot (scipy gelsd, minimum norm).

    Independent of Σ_T†: no covariance is formed. Valid also when p > N (then the probe interpolates).
    """
    H = as_float_array(features, "features", ndim=2)
    y = _check_labels(labels, H.shape[0], n_classes or int(np.max(labels)) + 1)
    K = n_classes or int(y.max()) + 1
    X = np.hstack([H, np.ones((H.shape[0], 1))])
    Y = np.eye(K)[y]
    B, *_ = sla.lstsq(X, Y, lapack_driver="gelsd")
    R = X @ B - Y
    return float(np.sum(R * R) / (2 * H.shape[0]))


def vb_split(stats_or_features, labels=None, rank="paper", rtol: float | None = None) -> dict:
    """VC Fig 1: (1/N) Σ ‖Proj_{V_B}(h − μ_k)‖² and the V_B⊥ part; they sum to Tr Σ_W.

    V_B is spanned by the top ``rank`` eigenvectors of Σ_B ("paper": min(p, K−1); "exact": tolerance rank).
    """
    st = _as_stats(stats_or_features, labels)
    sp = _Spectra(st)
    r = _rank_arg(rank, st, sp.eig_b()[0] if rank == "exact" else None, rtol)
    on = sp.fuzz_vb(r)[1]
    total = float(np.trace(sp.Sw))
    return {"within_vb": on, "within_vb_perp": total - on, "trace_sigma_w": total, "rank": r}


def vb_basis(stats_or_features, labels=None, rank="paper") -> np.ndarray:
    """Orthonormal basis (p, r) of V_B: the top r eigenvectors of Σ_B."""
    st = _as_stats(stats_or_features, labels)
    sp = _Spectra(st)
    r = _rank_arg(rank, st, sp.eig_b()[0], None)
    return sp.eig_b()[1][:, :r]


def spectra(stats_or_features, labels=None) -> dict:
    """Eigenvalues (descending) of Σ_B and Σ_T (VC Fig 2)."""
    st = _as_stats(stats_or_features, labels)
    return {"sigma_b": np.linalg.eigvalsh(st.sigma_b())[::-1], "sigma_t": np.linalg.eigvalsh(st.sigma_t())[::-1]}


def metrics(stats_or_features, labels=None, rank="paper") -> dict:
    """Every metric of the paper from one set of factorisations: one Cholesky of Σ_T (with a condition
    estimate) and, for the paper's rank K − 1 ≤ p, one K×K Cholesky of the deflated Gram matrix — no
    eigendecomposition unless a matrix is too ill-conditioned for those (or rank="exact").

    Keys: vci, trace_ratio, probe_loss (Thm 5.1; priors-weighted when imbalanced), fuzziness,
    squared_distance, cosine_similarity (d̄_within), class_separation, within_vb, within_vb_perp, rank,
    sigma_t_route ("cholesky" or "eigh").
    """
    st = _as_stats(stats_or_features, labels)
    sp = _Spectra(st)
    r = _rank_arg(rank, st, sp.eig_b()[0] if rank == "exact" else None, None)
    t = sp.trace_tb()
    try:
        fz, on = sp.fuzz_vb(r)
    except ValueError as exc:
        raise ValueError(f"metrics: {exc}") from None
    cd = cosine_distances(st)
    if cd["d_total"] <= 0:
        raise ValueError("metrics: d̄_total = 0 (all features point the same way): class separation undefined")
    trw = float(np.trace(sp.Sw))
    balanced = bool(np.all(st.counts == st.counts[0]))
    return {
        "vci": 1.0 - t / r,
        "trace_ratio": t,
        "probe_loss": -t / (2 * st.K) + 0.5 - 0.5 / st.K if balanced else probe_loss(st),
        "fuzziness": fz,
        "squared_distance": trw / float(np.sum(sp.M * sp.M)),
        "cosine_similarity": cd["d_within"],
        "class_separation": 1.0 - cd["d_within"] / cd["d_total"],
        "within_vb": on,
        "within_vb_perp": trw - on,
        "rank": r,
        "sigma_t_route": sp.route,
    }


def mlog(downstream, pretrain, percent: bool = False) -> np.ndarray | float:
    """Mean log odds gain, VC Eq 6: (1/n) Σ_i log(p_i/(1 − p_i)) − log(p_pre/(1 − p_pre)) (natural log).

    downstream: (..., n_tasks) accuracies; pretrain: (...) accuracies; fractions in (0, 1), or percent in
    (0, 100) with ``percent=True``.
    """
    d = as_float_array(downstream, "downstream")
    q = as_float_array(pretrain, "pretrain")
    if percent:
        d, q = d / 100.0, q / 100.0
    for a, nm in ((d, "downstream"), (q, "pretrain")):
        if np.any((a <= 0) | (a >= 1)):
            hint = " (pass percent=True for percentages)" if np.all(a < 100) and np.any(a > 1) else ""
            raise ValueError(f"{nm}: accuracies must lie strictly inside (0, 1){hint}")
    lo = np.log(d / (1 - d)).mean(axis=-1) - np.log(q / (1 - q))
    return float(lo) if np.ndim(lo) == 0 else lo
