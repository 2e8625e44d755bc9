"""RBF CKA streamed in one pass: random Fourier features (Rahimi & Recht 2007) and linear-kernel moments.

For k(x, x') = exp(−‖x − x'‖²/(2σ²)) and ω ~ N(0, σ⁻²I), β ~ U[0, 2π): E[2cos(ωᵀx + β)cos(ωᵀx' + β)] = k(x, x')
(Rahimi & Recht 2007, Sec 3). With D draws, φ(x) = √(2/D)·cos(Ωᵀ(x − o)/σ + β) (Ω a p×D standard normal
matrix, o a fixed origin: a translation only shifts the phases, so the kernel estimate K̂ = ΦΦᵀ is unbiased
for any o, and o near the data keeps the cosines' arguments small) gives E K̂ = K entry by entry.

Estimator. Each side gets two independent maps (φ₁, φ₂ for X; ψ₁, ψ₂ for Y). Both HSIC estimators ("biased",
Gretton et al. 2005; "debiased", Song et al. 2012) are bilinear in (K, L), so with independent maps

    E HSIC(Φ₁Φ₁ᵀ, Ψ₁Ψ₁ᵀ) = HSIC(K, L),  E HSIC(Φ₁Φ₁ᵀ, Φ₂Φ₂ᵀ) = HSIC(K, K),  E HSIC(Ψ₁Ψ₁ᵀ, Ψ₂Ψ₂ᵀ) = HSIC(L, L)

exactly; CKA is their ratio. (Normalising with HSIC(Φ₁Φ₁ᵀ, Φ₁Φ₁ᵀ) instead would add the map's variance,
an upward bias of order 1/D.) Each HSIC is a linear-kernel HSIC of feature maps, hence read from a
:class:`~theory.geometry.moments.CrossMoments` of the maps — one pass, O(D²) memory, exact merges of shards
built with the same seed and origins.

Error. The three HSICs are unbiased, with standard deviations of order 1/√D (each is an average over D
independent features of each map); the ratio adds a bias of order 1/D. The error of the CKA therefore falls
like 1/√D (docs/geometry.md states the measured constant; ``tests/test_geometry_kernel.py`` checks the 1/√D
law and the absence of a detectable bias against :func:`~theory.geometry.kernel.kernel_cka`).
Cost per sample: 9 products of D-vectors (three CrossMoments of two D-wide sides), O(D(p + q)) for the maps.
"""
from __future__ import annotations

import numpy as np

from theory.geometry._blocks import float_block, lazy_features, rows_per_block
from theory.geometry._inputs import features, same_rows
from theory.geometry.moments import CrossMoments

MAX_COMPONENTS = 8192

def _count(v, name: str, lo: int = 1) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) or v < lo:
        raise ValueError(f"{name}: must be an integer >= {lo}, got {v!r}")
    return int(v)


def _sigma(v, name: str) -> float:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)) \
            or not np.isfinite(v) or v <= 0:
        raise ValueError(f"{name}: must be a finite number > 0 (the RBF bandwidth in the features' units), got {v!r}")
    return float(v)


class RBFFeatureCKA:
    """One-pass, mergeable approximation of RBF CKA by random Fourier features (module doc).

    ``RBFFeatureCKA(p, q, sigma_x, sigma_y, n_components=1024, seed=0, origin_x=None, origin_y=None)``;
    ``update(X, Y)`` with batches of the same samples; ``merge(other)`` (same p, q, bandwidths, D, seed and
    origins); ``cka(debiased=False)``, ``hsic(debiased=False)``. An origin left None is the first batch's mean;
    shards that are to be merged need the same origins, so give them explicitly there.
    """

    def __init__(self, n_x_features: int, n_y_features: int, sigma_x: float, sigma_y: float,
                 n_components: int = 1024, seed: int = 0, origin_x=None, origin_y=None):
        self.p, self.q = _count(n_x_features, "n_x_features"), _count(n_y_features, "n_y_features")
        self.sigma_x, self.sigma_y = _sigma(sigma_x, "sigma_x"), _sigma(sigma_y, "sigma_y")
        self.D = _count(n_components, "n_components")
        if self.D > MAX_COMPONENTS:
            raise ValueError(f"n_components: at most {MAX_COMPONENTS} (the state holds 27·D² float64 numbers), got "
                             f"{self.D}")
        for d, name in ((self.p, "n_x_features"), (self.q, "n_y_features")):
            if 2 * d * self.D > 2**31:
                raise ValueError(f"{name}: {d} features × {self.D} components is too many frequencies to hold "
                                 "(2·p·D ≤ 2^31 float64 numbers)")
        self.seed = _count(seed, "seed", 0)
        self.origin_x = None if origin_x is None else self._origin(origin_x, self.p, "origin_x")
        self.origin_y = None if origin_y is None else self._origin(origin_y, self.q, "origin_y")
        rng = np.random.default_rng(self.seed)
        # two independent maps per side: frequencies (standard normal; divided by σ when applied) and phases
        self.omega = [rng.standard_normal((d, self.D)) for d in (self.p, self.p, self.q, self.q)]
        self.phase = [rng.uniform(0.0, 2.0 * np.pi, self.D) for _ in range(4)]
        self.pairs = [CrossMoments(self.D, self.D) for _ in range(3)]  # (φ₁, ψ₁), (φ₁, φ₂), (ψ₁, ψ₂)

    @staticmethod
    def _origin(o, d: int, name: str) -> np.ndarray:
        a = features(np.asarray(o, dtype=float).reshape(1, -1), name)[0]
        if a.size != d:
            raise ValueError(f"{name}: has {a.size} entries, expected {d}")
        return a.copy()

    @property
    def n(self) -> int:
        return self.pairs[0].n

    def _maps(self, A: np.ndarray, o: np.ndarray, sigma: float, k: int, name: str) -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore"):
            Z = (A - o) / sigma
        if not np.all(np.isfinite(Z)):
            raise ValueError(f"{name}: (x − origin)/sigma leaves float64 (features or bandwidth out of range)")
        U = Z @ self.omega[k]
        U += self.phase[k]
        np.cos(U, out=U)
        U *= np.sqrt(2.0 / self.D)
        return U

    def update(self, X, Y) -> "RBFFeatureCKA":
        """Add a batch: X (b, p), Y (b, q), the same b samples. Returns self."""
        X, Y = features(X, "X"), features(Y, "Y")
        same_rows(X, Y)
        if X.shape[1] != self.p or Y.shape[1] != self.q:
            raise ValueError(f"X, Y: have {X.shape[1]} and {Y.shape[1]} feature columns; this accumulator has "
                             f"p = {self.p}, q = {self.q}")
        self._add(X, Y)
        return self

    def _add(self, X: np.ndarray, Y: np.ndarray) -> None:
        if self.origin_x is None:
            self.origin_x = X.mean(axis=0)
        if self.origin_y is None:
            self.origin_y = Y.mean(axis=0)
        f1 = self._maps(X, self.origin_x, self.sigma_x, 0, "X")
        f2 = self._maps(X, self.origin_x, self.sigma_x, 1, "X")
        g1 = self._maps(Y, self.origin_y, self.sigma_y, 2, "Y")
        g2 = self._maps(Y, self.origin_y, self.sigma_y, 3, "Y")
        for m, (a, b) in zip(self.pairs, ((f1, g1), (f1, f2), (g1, g2))):
            m._absorb(CrossMoments.from_batch(a, b))

    def _key(self):
        return (self.p, self.q, self.sigma_x, self.sigma_y, self.D, self.seed)

    def merge(self, other: "RBFFeatureCKA") -> "RBFFeatureCKA":
        """A new accumulator of both data sets (same maps required: p, q, bandwidths, D, seed, origins)."""
        if not isinstance(other, RBFFeatureCKA):
            raise TypeError(f"other: expected an RBFFeatureCKA, got {type(other).__name__}")
        if self._key() != other._key():
            raise ValueError(f"other: built with different maps {other._key()} vs {self._key()} "
                             "(p, q, sigma_x, sigma_y, n_components, seed)")
        for a, b, name in ((self.origin_x, other.origin_x, "origin_x"), (self.origin_y, other.origin_y, "origin_y")):
            if a is not None and b is not None and not np.array_equal(a, b):
                raise ValueError(f"other: a different {name}: shards to be merged need the same origins (pass them "
                                 "to the constructor)")
        out = RBFFeatureCKA.__new__(RBFFeatureCKA)
        out.__dict__.update(self.__dict__)
        out.origin_x = self.origin_x if self.origin_x is not None else other.origin_x
        out.origin_y = self.origin_y if self.origin_y is not None else other.origin_y
        out.pairs = [a.merge(b) for a, b in zip(self.pairs, other.pairs)]
        return out

    def hsics(self, debiased: bool = False) -> tuple[float, float, float]:
        """(HSIC(X, Y), HSIC(X, X), HSIC(Y, Y)) estimated from the maps (dimensionless)."""
        if not isinstance(debiased, (bool, np.bool_)):
            raise ValueError(f"debiased: must be True or False, got {debiased!r}")
        if self.n < (4 if debiased else 2):
            raise ValueError(f"RBFFeatureCKA: needs at least {4 if debiased else 2} samples, got n = {self.n}")
        return tuple(float(m.hsic(bool(debiased))) for m in self.pairs)

    def hsic(self, debiased: bool = False) -> float:
        """The estimate of HSIC(X, Y) with the RBF kernels (biased, or Song et al.'s unbiased)."""
        return self.hsics(debiased)[0]

    def cka(self, debiased: bool = False) -> float:
        """HSIC(X, Y)/√(HSIC(X, X)·HSIC(Y, Y)) from the three independent estimates (module doc)."""
        hxy, hxx, hyy = self.hsics(debiased)
        for h, name in ((hxx, "X"), (hyy, "Y")):
            if not h > 0:
                raise ValueError(f"{name}: the estimated HSIC({name}, {name}) is {h:.3g} <= 0 (constant features, too "
                                 "few samples, or too few random features); CKA is undefined here")
        return float(hxy / np.sqrt(hxx) / np.sqrt(hyy))

    def __repr__(self) -> str:
        return f"RBFFeatureCKA(p={self.p}, q={self.q}, n_components={self.D}, seed={self.seed}, n={self.n})"


def rbf_cka_rff(X, Y, sigma_x: float, sigma_y: float, n_components: int = 1024, seed: int = 0,
                debiased: bool = False) -> float:
    """RBF CKA of two arrays approximated by random Fourier features (module doc), read in row blocks.

    ``sigma_x``, ``sigma_y``: the bandwidths in the features' units (e.g. :func:`~theory.geometry.kernel.
    median_bandwidth` of a subsample). The origins are the first block's means."""
    A, B = lazy_features(X, "X", 2), lazy_features(Y, "Y", 1)
    same_rows(A, B)
    acc = RBFFeatureCKA(A.shape[1], B.shape[1], sigma_x, sigma_y, n_components, seed)
    rows = rows_per_block(max(A.shape[1], B.shape[1], acc.D))
    full = slice(None)
    for s in range(0, A.shape[0], rows):
        r = slice(s, min(s + rows, A.shape[0]))
        acc._add(float_block(A, r, full, "X"), float_block(B, r, full, "Y"))
    return acc.cka(debiased)
