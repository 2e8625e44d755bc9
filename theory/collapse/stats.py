"""VC class statistics: one-pass, mergeable Σ_W / Σ_B / Σ_T (VC Eq 1–3, Eq 7), right at any feature scale.

:class:`ClassStats` accumulates, in float64 and in one pass over batches, the class counts, the class
means and the *pooled centred within-class scatter* Σ_k Σ_i (h − μ_k)(h − μ_k)ᵀ with Chan et al.'s pairwise
update (a batch is centred on its own class means, then merged with the rank-m correction
Σ_c n_a n_b/(n_a+n_b) δ_c δ_cᵀ) — never raw sums of squares, so a large common offset in the features does
not cancel catastrophically. It also keeps the per-class sums of the normalised features h/‖h‖, from which
the cosine metric (Kornblith et al., VC Sec 3.2) follows without the O(N²) pairs. Two accumulators merge
exactly (:meth:`ClassStats.merge`).

Offset. Every feature is stored relative to an origin o (one value per column: the column means of the first
batch), i.e. the accumulator sees h − o. Σ_W, Σ_B and Σ_T are invariant to that translation, and h − o is
computed exactly (Sterbenz) or to ε·|h − o|, so the class means and the scatter carry errors of ε times the
features' *spread*, not ε times their distance from zero: without it a common offset c·spread (activations
far from 0, e.g. post-ReLU means) cost ~c·ε in Σ_B and Σ_T (4e-10 at c = 1e6, 4e-8 at c = 1e8); with it the
error stays at the two-pass level (~1e-15) up to c = 1e8 (``vc.decomposition``). ``means`` and
``global_mean`` add o back (their own rounding, ε·|μ|, is that of representing them at all). A merge
re-expresses the other side's means relative to this side's origin: o_b − o_a is of the order of the spread
when both origins come from the same data, so merging costs no more than streaming.

Scale. Every feature column j is stored divided by a power of two 2^e_j (exact: no rounding), chosen so that
the stored values stay within [2^-256, 2^256]; e_j = 0 for ordinary data, so nothing changes there. Features
scaled by 1e±200 (whose squares over- or underflow float64), or columns whose scales differ by 1e300, are
therefore accumulated without loss. The public arrays (``means``, ``scatter_within``, ``sigma_w()`` …) are
returned in the features' own units and raise a ValueError when those values themselves are outside float64
(e.g. Σ_W of features of size 1e200 has entries ~1e400); the metrics work in the scaled frame
(:mod:`theory.collapse.linalg`) and do not need them.

A class with a single sample contributes its mean to Σ_B and nothing to the within-class scatter; Σ_W is
still normalised by the total N (Eq 1), i.e. that class counts as perfectly collapsed in Σ_W.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sps

from theory.validate import check_finite

EPS = np.finfo(np.float64).eps
TINY = np.finfo(np.float64).tiny
BAND = 256  # stored feature columns stay within [2^-BAND, 2^BAND] in magnitude
_BLOCK = 512  # rows per block when a batch is centred in place
_SSQ_LO, _SSQ_HI = 2.0 ** -969, 2.0 ** 1000  # a row's ‖h‖² here is exact to ε: the fast path of the cosine sums


# --------------------------------------------------------------------------------------------------------
# helpers: labels and power-of-two units
# --------------------------------------------------------------------------------------------------------
def check_labels(y, n: int, K: int, name: str = "labels") -> np.ndarray:
    """Integer class indices in [0, K) of length n as int64, or a ValueError naming ``name``."""
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


def check_real_numeric(x, name: str) -> np.ndarray:
    """``x`` as an array, or a TypeError naming ``name`` if it is complex, boolean or not numeric.

    np.asarray(x, dtype=float) silently drops an imaginary part (a ComplexWarning at most): call this first.
    """
    a = np.asarray(x)
    if np.iscomplexobj(a):
        raise TypeError(f"{name}: complex values are not supported (dtype {a.dtype}); pass a real array "
                        "(e.g. the real part or the modulus, whichever is meant)")
    if a.dtype == bool or not np.issubdtype(a.dtype, np.number):
        raise TypeError(f"{name}: must be a real numeric array, got dtype {a.dtype}")
    return a


def pow2_exponent(x) -> np.ndarray:
    """Integer e with |x|·2^-e in [0.5, 1) (0 where x = 0): the power of two that brings x to ~1."""
    return np.frexp(np.asarray(x, dtype=np.float64))[1].astype(np.int64)


def unscale(x, e, name: str):
    """x·2^e (e an int or an int array broadcasting against x) in the features' own units.

    Exact (powers of two) unless the result leaves float64: a ValueError if its largest entry overflows, or
    underflows below the smallest normal number (its entries would lose all precision); entries far below the
    largest may underflow, as rounding at the ε·max level would lose them anyway.
    """
    xa = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore"):
        out = np.ldexp(xa, e)
    big = float(np.max(np.abs(out))) if out.size else 0.0
    if not np.isfinite(big):
        raise ValueError(f"{name}: overflows float64 in the features' units (the features are too large for this "
                         "quantity, e.g. a covariance of features of size 1e160); the metrics rescale internally, "
                         "or rescale the features")
    if out.size and big < TINY and np.any(xa != 0):
        raise ValueError(f"{name}: underflows float64 in the features' units (the features are too small for this "
                         "quantity, e.g. a covariance of features of size 1e-160); the metrics rescale internally, "
                         "or rescale the features")
    return float(out) if np.ndim(out) == 0 else out


def _check_int(v, name: str, lo: int) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise ValueError(f"{name}: must be an integer, got {v!r}")
    if v < lo:
        raise ValueError(f"{name}: must be >= {lo}, got {v}")
    return int(v)


# --------------------------------------------------------------------------------------------------------
# the accumulator
# --------------------------------------------------------------------------------------------------------
class ClassStats:
    """One-pass, mergeable float64 class statistics of features (VC Eq 1–3).

    ``ClassStats(n_features=p, n_classes=K)``; ``update(H, y)`` with H of shape (b, p) and integer labels
    y ∈ [0, K) of shape (b,); ``merge(other)`` returns the accumulator of the union of both data sets.

    Attributes: ``counts`` (K,), ``means`` (K, p) class means (zero rows for classes not seen yet),
    ``scatter_within`` (p, p) = N·Σ_W, ``unit_sums`` (K, p) class sums of h/‖h‖ (a zero vector counts as
    0, the convention of ``torch.cosine_similarity``), ``n`` the number of samples. ``means`` and
    ``scatter_within`` are read-only views computed from the scaled store (see the module doc).
    """

    def __init__(self, n_features: int, n_classes: int):
        p = _check_int(n_features, "n_features", 1)
        if isinstance(n_classes, (int, np.integer)) and not isinstance(n_classes, bool) and n_classes < 2:
            raise ValueError(f"n_classes: must be >= 2 (K = 1 has no between-class variation), got {n_classes}")
        K = _check_int(n_classes, "n_classes", 2)
        self.p, self.K = p, K
        self.counts = np.zeros(K, dtype=np.int64)
        self.unit_sums = np.zeros((K, p))
        self._mean = np.zeros((K, p))  # class means, column j divided by 2^exp[j]
        self._m2 = np.zeros((p, p))  # pooled centred scatter, entry (i, j) divided by 2^(exp[i] + exp[j])
        self._exp = np.zeros(p, dtype=np.int64)
        self._cmax = np.zeros(p)  # largest stored |feature value| per column so far
        self._origin = np.zeros(p)  # o: _mean holds class means of h − o (stored frame); set by the first batch
        self.input_eps = EPS  # unit roundoff of the coarsest features fed in (float32 features: 2^-23)

    # -- accumulation ------------------------------------------------------------------------------------
    @property
    def n(self) -> int:
        return int(self.counts.sum())

    @property
    def means(self) -> np.ndarray:
        """(K, p) class means μ_k in the features' units (zero rows for classes not seen yet)."""
        mu = np.where((self.counts > 0)[:, None], self._mean + self._origin, 0.0)
        return unscale(mu, self._exp[None, :], "means")

    @property
    def scatter_within(self) -> np.ndarray:
        """(p, p) pooled centred scatter Σ_k Σ_i (h − μ_k)(h − μ_k)ᵀ = N·Σ_W in the features' units."""
        return unscale(self._m2, self._exp[:, None] + self._exp[None, :], "scatter_within")

    def update(self, H, y) -> "ClassStats":
        """Add a batch: H (b, p) features (any real dtype; used in float64), y (b,) integer labels."""
        H = check_real_numeric(H, "H")
        if H.ndim != 2:
            raise ValueError(f"H: expected a 2-D (batch, features) array, got shape {H.shape}")
        if H.shape[1] != self.p:
            raise ValueError(f"H: has {H.shape[1]} feature columns, this ClassStats has n_features = {self.p}")
        y = check_labels(y, H.shape[0], self.K, "y")
        b = H.shape[0]
        if b == 0:
            return self
        if np.issubdtype(H.dtype, np.floating):
            self.input_eps = max(self.input_eps, float(np.finfo(H.dtype).eps))
        if H.dtype != np.float64:
            conv = self._buffer("_conv", b)
            np.copyto(conv, H)  # float32 (or int) features are used in float64
            H = conv
        mx = np.maximum(H.max(axis=0), -H.min(axis=0))  # column max |h| (NaN propagates)
        if not np.isfinite(mx).all():
            check_finite(H, "H")  # names the first NaN/Inf entry
        classes, yl, cnt = np.unique(y, return_inverse=True, return_counts=True)
        m = classes.size
        unit_b = self._unit_sums(H, yl, m)
        self._rescale_for(mx)
        if self._exp.any():  # scaled frame: exact powers of two
            Hs = self._buffer("_conv", b)
            np.ldexp(H, -self._exp[None, :], out=Hs)
            H = Hs
        np.maximum(self._cmax, np.ldexp(mx, -self._exp), out=self._cmax)
        if self.n == 0:  # the origin o: this first batch's column means (any value inside the data will do)
            self._origin = H.mean(axis=0)
        # Chan et al.: the rank-m merge correction Σ_c n_a n_b/(n_a+n_b) δ_c δ_cᵀ rides in the same SYRK as
        # extra rows √w_c δ_c appended below the centred batch
        n_a = self.counts[classes].astype(np.float64)
        old = np.flatnonzero(n_a > 0)
        X = self._buffer("_work", b + old.size)
        ind = sps.csr_matrix((np.ones(b), (yl, np.arange(b))), shape=(m, b))
        shifted = bool(self._origin.any())
        if shifted:  # h − o into X (no extra b×p buffer): exact when h, o are within a factor 2 (Sterbenz)
            np.subtract(H, self._origin[None, :], out=X[:b])
            H = X[:b]
        mean_b = (ind @ H) / cnt[:, None]
        if shifted:  # centred in place, in row blocks: the gathered means stay in cache
            for s in range(0, b, _BLOCK):
                H[s:s + _BLOCK] -= mean_b[yl[s:s + _BLOCK]]
        else:
            np.take(mean_b, yl, axis=0, out=X[:b], mode="clip")  # yl is in range: clip only skips the check
            np.subtract(H, X[:b], out=X[:b])  # centred on the batch's own class means
        if old.size:
            w = np.sqrt(n_a[old] * cnt[old] / (n_a[old] + cnt[old]))
            np.subtract(mean_b[old], self._mean[classes[old]], out=X[b:])
            X[b:] *= w[:, None]
        m2 = X.T @ X  # SYRK
        self._absorb(classes, cnt, mean_b, m2, unit_b, corrected=True)
        return self

    def _unit_sums(self, H, yl, m) -> np.ndarray:
        """Class sums of h/‖h‖ for one batch (rows with ‖h‖² outside float64's exact range are rescaled first)."""
        b = H.shape[0]
        ssq = np.einsum("ij,ij->i", H, H)
        safe = (ssq >= _SSQ_LO) & (ssq < _SSQ_HI)
        inv = np.divide(1.0, np.sqrt(ssq), out=np.zeros(b), where=safe)
        ind = sps.csr_matrix((inv, (yl, np.arange(b))), shape=(m, b))
        out = np.asarray(ind @ H)
        odd = np.flatnonzero(~safe)
        if odd.size:  # huge or tiny rows: h/‖h‖ = (h/max|h|)/‖h/max|h|‖; zero rows count as 0
            R = H[odd]
            top = np.max(np.abs(R), axis=1)
            nz = top > 0
            U = R[nz] / top[nz, None]
            U /= np.sqrt(np.einsum("ij,ij->i", U, U))[:, None]
            np.add.at(out, yl[odd[nz]], U)
        return out

    def _rescale_for(self, mx: np.ndarray) -> None:
        """Change the power-of-two unit of the columns whose values would leave [2^-BAND, 2^BAND]."""
        e = self._exp
        with np.errstate(over="ignore"):
            hi = np.maximum(self._cmax, np.ldexp(mx, -e))
        need = (hi > 2.0 ** BAND) | ((hi > 0) & (hi < 2.0 ** -BAND))
        if not need.any():
            return
        j = np.flatnonzero(need)
        raw = np.maximum(np.ldexp(self._cmax[j], e[j]), mx[j])  # the column's largest |value| so far: finite
        new = pow2_exponent(raw)
        self._shift(j, e[j] - new)
        e[j] = new

    def _shift(self, j: np.ndarray, s: np.ndarray) -> None:
        """Multiply the stored columns j by 2^s (s ints): the scatter's rows then columns, never overflowing."""
        self._mean[:, j] = np.ldexp(self._mean[:, j], s[None, :])
        self._m2[j, :] = np.ldexp(self._m2[j, :], s[:, None])
        self._m2[:, j] = np.ldexp(self._m2[:, j], s[None, :])
        self._cmax[j] = np.ldexp(self._cmax[j], s)
        self._origin[j] = np.ldexp(self._origin[j], s)

    def __getstate__(self) -> dict:
        """Pickle (e.g. to ship partial statistics between workers) without the scratch buffers."""
        return {k: v for k, v in self.__dict__.items() if k not in ("_work", "_conv")}

    def __setstate__(self, state: dict) -> None:
        if "means" in state:  # a pickle from before the scaled store: plain means and scatter
            state["_mean"], state["_m2"] = state.pop("means"), state.pop("scatter_within")
            state["_exp"] = np.zeros(state["_mean"].shape[1], dtype=np.int64)
            state["_cmax"] = np.max(np.abs(state["_mean"]), axis=0)
        if "_origin" not in state:  # a pickle from before the origin: means stored relative to 0
            state["_origin"] = np.zeros(state["_mean"].shape[1])
        state.setdefault("input_eps", EPS)  # a pickle from before the features' precision was kept
        self.__dict__.update(state)

    def _buffer(self, name: str, b: int) -> np.ndarray:
        """A (b, p) float64 scratch view of a buffer kept across updates: fresh b×p allocations cost more
        in page faults than the arithmetic on them. Its size is the largest batch seen, never N."""
        buf = getattr(self, name, None)
        if buf is None or buf.shape[0] < b:
            buf = np.empty((max(b, int(1.1 * b) if buf is not None else b), self.p))
            setattr(self, name, buf)
        return buf[:b]

    def _absorb(self, classes, cnt_b, mean_b, m2_b, unit_b, corrected: bool = False) -> None:
        """Chan et al. pairwise merge of (counts, means, pooled centred scatter), all in the stored frame."""
        n_a = self.counts[classes].astype(np.float64)
        n_b = cnt_b.astype(np.float64)
        n = n_a + n_b
        delta = mean_b - self._mean[classes]
        old = n_a > 0
        if old.any() and not corrected:
            w = np.sqrt(n_a[old] * n_b[old] / n[old])
            D = delta[old] * w[:, None]
            m2_b = m2_b + D.T @ D
        self._mean[classes] += delta * (n_b / n)[:, None]
        self._m2 += m2_b
        self.counts[classes] += cnt_b.astype(np.int64)
        self.unit_sums[classes] += unit_b

    def merge(self, other: "ClassStats") -> "ClassStats":
        """A new accumulator holding the statistics of both (exact up to rounding, any split of the data)."""
        if not isinstance(other, ClassStats):
            raise ValueError(f"merge: expected a ClassStats, got {type(other).__name__}")
        if (other.p, other.K) != (self.p, self.K):
            raise ValueError(f"merge: shapes differ: (p, K) = {(self.p, self.K)} vs {(other.p, other.K)}")
        out, oth = self.copy(), other.copy()
        e = np.maximum(out._exp, oth._exp)  # the larger unit: the smaller side's values only shrink
        for acc in (out, oth):
            j = np.flatnonzero(acc._exp != e)
            if j.size:
                acc._shift(j, acc._exp[j] - e[j])
                acc._exp[j] = e[j]
        np.maximum(out._cmax, oth._cmax, out=out._cmax)
        out.input_eps = max(out.input_eps, oth.input_eps)
        seen = np.flatnonzero(oth.counts > 0)
        if seen.size:
            if out.n == 0:  # nothing here yet: adopt the other side's origin
                out._origin = oth._origin.copy()
            # the other side's means relative to this side's origin: μ − o_a = (μ − o_b) + (o_b − o_a)
            mean_b = oth._mean[seen] + (oth._origin - out._origin)[None, :]
            out._absorb(seen, oth.counts[seen], mean_b, oth._m2, oth.unit_sums[seen])
        return out

    def copy(self) -> "ClassStats":
        out = ClassStats(self.p, self.K)
        out.counts, out.unit_sums = self.counts.copy(), self.unit_sums.copy()
        out._mean, out._m2 = self._mean.copy(), self._m2.copy()
        out._exp, out._cmax, out._origin = self._exp.copy(), self._cmax.copy(), self._origin.copy()
        out.input_eps = self.input_eps
        return out

    @classmethod
    def from_features(cls, H, y, n_classes: int | None = None, batch: int = 8192) -> "ClassStats":
        """Statistics of a whole (N, p) feature matrix; K = n_classes or max(label) + 1."""
        H = check_real_numeric(H, "features")
        if H.ndim != 2:
            raise ValueError(f"features: expected a 2-D (samples, features) array, got shape {H.shape}")
        batch = _check_int(batch, "batch", 1)
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
        check_labels(ya, H.shape[0], st.K)
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
        """π_k = n_k / N (1/K for a balanced set)."""
        self._require_complete()
        return self.counts / self.n

    @property
    def balanced(self) -> bool:
        return bool(np.all(self.counts == self.counts[0]))

    def scaled(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(M, Σ_W, e) in the stored frame: rows of M are √π_k(μ_k − μ_G), so Σ_B = MᵀM; column j of the
        features is divided by 2^e_j. What the metrics use (see :mod:`theory.collapse.linalg`)."""
        pi = self.priors
        M = (self._mean - pi @ self._mean) * np.sqrt(pi)[:, None]
        return M, self._m2 / self.n, self._exp

    @property
    def global_mean(self) -> np.ndarray:
        """μ_G = Σ_k (n_k/N) μ_k."""
        return unscale(self.priors @ self._mean + self._origin, self._exp, "global_mean")

    def centred_means(self) -> np.ndarray:
        """M (K, p) with rows sqrt(n_k/N)(μ_k − μ_G), so that Σ_B = MᵀM."""
        M, _, e = self.scaled()
        return unscale(M, e[None, :], "centred_means")

    def sigma_w(self) -> np.ndarray:
        """Σ_W (VC Eq 1), pooled within-class covariance normalised by N."""
        _, Sw, e = self.scaled()
        return unscale(Sw, e[:, None] + e[None, :], "sigma_w")

    def sigma_b(self) -> np.ndarray:
        """Σ_B (VC Eq 2) = Σ_k (n_k/N)(μ_k − μ_G)(μ_k − μ_G)ᵀ."""
        M, _, e = self.scaled()
        return unscale(M.T @ M, e[:, None] + e[None, :], "sigma_b")

    def sigma_t(self) -> np.ndarray:
        """Σ_T = Σ_B + Σ_W (VC Eq 3 and Eq 7; assembled from the centred parts, no raw second moments)."""
        M, Sw, e = self.scaled()
        return unscale(M.T @ M + Sw, e[:, None] + e[None, :], "sigma_t")

    def __repr__(self) -> str:
        return f"ClassStats(n_features={self.p}, n_classes={self.K}, n={self.n})"


def as_stats(x, labels=None) -> ClassStats:
    """A complete ClassStats from a ClassStats or from (features, labels)."""
    if isinstance(x, ClassStats):
        if labels is not None:
            raise ValueError("labels: give labels only with a feature array, not with a ClassStats")
        x._require_complete()
        return x
    if labels is None:
        raise ValueError("labels: required when the first argument is a feature array (or pass a ClassStats)")
    st = ClassStats.from_features(x, labels)
    try:
        st._require_complete()
    except ValueError as exc:  # an empty class: it is the labels that are wrong
        raise ValueError(f"labels: {str(exc).removeprefix('ClassStats: ')}") from None
    return st
