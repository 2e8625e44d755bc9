"""One-pass, mergeable float64 cross-moments of two representations X (n, p) and Y (n, q) of the same samples.

:class:`CrossMoments` keeps, in one pass over batches and with an exact merge, every sum that linear CKA
needs, biased or debiased (Kornblith et al. 2019; Song et al. 2012's unbiased HSIC; :mod:`theory.geometry.cka`):

    n, s_x = Σ x̃, s_y = Σ ỹ, C_xx = Σ x̃x̃ᵀ, C_yy = Σ ỹỹᵀ, C_xy = Σ x̃ỹᵀ,
    u_xx = Σ‖x̃‖²x̃, u_yy = Σ‖ỹ‖²ỹ, u_xy = Σ‖ỹ‖²x̃, u_yx = Σ‖x̃‖²ỹ,
    w_xx = Σ‖x̃‖⁴, w_yy = Σ‖ỹ‖⁴, w_xy = Σ‖x̃‖²‖ỹ‖²,

with x̃ = (x − o_x)·2^−e_x, ỹ = (y − o_y)·2^−e_y: the features relative to an origin o inside the data and
divided by a power of two. (The cross terms u_xy, u_yx, w_xy are the issue's Σ‖y‖²x, Σ‖x‖²y, Σ‖x‖²‖y‖²;
the self terms are needed for the normalisers HSIC(X, X) and HSIC(Y, Y).)

Accuracy. Raw sums of features far from zero (an offset c times their spread) lose ~c²…c⁴·ε to cancellation
when they are centred afterwards. Here each batch is first reduced to its own moments about its own mean
(two passes over the batch, in float64: float32 input is converted, never accumulated in float32), and a
merge re-expresses one side's sums about the other side's origin with the exact polynomial identities of
:func:`shift` (the binomial expansion of (a − c)(b − c)ᵀ, ‖a − c‖²(b − c) and ‖a − c‖²‖b − c‖²). The shift c
is the difference of two origins inside the data — of the order of the spread, not of the offset — so a
merge costs a few ε of the centred moments: streaming, or merging shards in any order, agrees with the
two-pass computation to ~1e-13 relative at an offset of 1e6 (``tests/test_geometry_moments.py``).

:func:`stream_moments` (:func:`stream_moments_one`) builds the moments of whole arrays (of one array against a
constant column) row block by row block, each block converted to float64 on its own (:mod:`theory.geometry._blocks`).

Scale. e_x (e_y) is chosen so that the stored entries lie within [−2, 2]: fourth-power sums of features of
size 1e±150 neither overflow nor underflow. On a merge both sides move to the larger exponent (exact
powers of two; contributions 2^−1000 below the largest may underflow, as rounding would lose them anyway).
"""
from __future__ import annotations

import numpy as np

from theory.geometry._blocks import float_block, lazy_features, rows_per_block
from theory.geometry._hsic import _check_debiased, _cka, _hsic_parts, _min_rows, _terms_from_moments
from theory.geometry._inputs import centre_scale_mean, features, same_rows, scaled_difference

_LOW = -100_000  # the exponent of a side with no spread yet (all its stored values are zero)
NO_SPREAD = _LOW  # public name of that sentinel, for code that assembles a CrossMoments with from_state
_NAMES = ("sx", "sy", "cxx", "cyy", "cxy", "uxx", "uyy", "uxy", "uyx", "wxx", "wyy", "wxy")
_ORDERS = {"sx": (1, 0), "sy": (0, 1), "cxx": (2, 0), "cyy": (0, 2), "cxy": (1, 1), "uxx": (3, 0),
           "uyy": (0, 3), "uxy": (1, 2), "uyx": (2, 1), "wxx": (4, 0), "wyy": (0, 4), "wxy": (2, 2)}


def _ldexp(a, k: int):
    """a·2^k for a possibly huge |k| (numpy's exponent is a C int): clipped where the result is 0 or ±inf anyway."""
    return np.ldexp(a, int(np.clip(k, -5000, 5000)))


def batch_sums(Xs: np.ndarray, Ys: np.ndarray) -> dict:
    """The moment sums of one batch of already shifted and scaled rows x̃, ỹ (see the module doc)."""
    kd = np.einsum("ij,ij->i", Xs, Xs)
    ld = np.einsum("ij,ij->i", Ys, Ys)
    return {"sx": Xs.sum(axis=0), "sy": Ys.sum(axis=0), "cxx": Xs.T @ Xs, "cyy": Ys.T @ Ys, "cxy": Xs.T @ Ys,
            "uxx": Xs.T @ kd, "uyy": Ys.T @ ld, "uxy": Xs.T @ ld, "uyx": Ys.T @ kd,
            "wxx": float(kd @ kd), "wyy": float(ld @ ld), "wxy": float(kd @ ld)}


def shift(m: dict, n: int, cx: np.ndarray, cy: np.ndarray) -> dict:
    """The sums of ``m`` (over n rows a, b) re-expressed for the rows a − cx, b − cy (exact identities).

    With t_b = Σ‖b‖² = tr C_bb (and primes for the shifted sums):
    s' = s − n c;  C_ab' = C_ab − s_a c_bᵀ − c_a s_bᵀ + n c_a c_bᵀ;
    u_ab' = Σ‖b'‖²a' = u_ab − 2 C_ab c_b + ‖c_b‖² s_a − c_a t_b';
    w_ab' = w_ab − 2 c_bᵀu_ba − 2 c_aᵀu_ab + ‖c_b‖² t_a + ‖c_a‖² t_b + 4 c_aᵀC_ab c_b
            − 2‖c_b‖² c_aᵀs_a − 2‖c_a‖² c_bᵀs_b + n‖c_a‖²‖c_b‖²   (u_ab = Σ‖b‖²a, u_ba = Σ‖a‖²b).
    """
    sx, sy, cxx, cyy, cxy = m["sx"], m["sy"], m["cxx"], m["cyy"], m["cxy"]
    nx, ny = float(cx @ cx), float(cy @ cy)
    tx, ty = float(np.trace(cxx)), float(np.trace(cyy))
    out = {"sx": sx - n * cx, "sy": sy - n * cy}
    out["cxx"] = cxx - np.outer(sx, cx) - np.outer(cx, sx) + n * np.outer(cx, cx)
    out["cyy"] = cyy - np.outer(sy, cy) - np.outer(cy, sy) + n * np.outer(cy, cy)
    out["cxy"] = cxy - np.outer(sx, cy) - np.outer(cx, sy) + n * np.outer(cx, cy)
    tx2, ty2 = float(np.trace(out["cxx"])), float(np.trace(out["cyy"]))
    out["uxx"] = m["uxx"] - 2 * (cxx @ cx) + nx * sx - cx * tx2
    out["uyy"] = m["uyy"] - 2 * (cyy @ cy) + ny * sy - cy * ty2
    out["uxy"] = m["uxy"] - 2 * (cxy @ cy) + ny * sx - cx * ty2
    out["uyx"] = m["uyx"] - 2 * (cxy.T @ cx) + nx * sy - cy * tx2
    out["wxx"] = _w(m["wxx"], m["uxx"], m["uxx"], cxx, sx, sx, cx, cx, tx, tx, n)
    out["wyy"] = _w(m["wyy"], m["uyy"], m["uyy"], cyy, sy, sy, cy, cy, ty, ty, n)
    out["wxy"] = _w(m["wxy"], m["uyx"], m["uxy"], cxy, sx, sy, cx, cy, tx, ty, n)
    return out


def _w(w, u_ba, u_ab, c_ab, s_a, s_b, ca, cb, ta, tb, n) -> float:
    na, nb = float(ca @ ca), float(cb @ cb)
    return float(w - 2 * (cb @ u_ba) - 2 * (ca @ u_ab) + nb * ta + na * tb + 4 * (ca @ c_ab @ cb)
                 - 2 * nb * (ca @ s_a) - 2 * na * (cb @ s_b) + n * na * nb)


class CrossMoments:
    """One-pass, mergeable cross-moments of two representations (see the module doc).

    ``CrossMoments(n_x_features=p, n_y_features=q)``; ``update(X, Y)`` with X (b, p), Y (b, q) the same b
    samples (any real dtype, used in float64); ``merge(other)`` returns the accumulator of both data sets
    (neither operand changes); ``cka(debiased=False)`` and ``hsic(debiased=False)`` (:mod:`theory.geometry.cka`);
    ``centred()`` the sums about the sample means.

    State (what :meth:`from_state` takes): ``n``; origins ``ox`` (p,), ``oy`` (q,) in the features' units;
    exponents ``ex``, ``ey`` (``NO_SPREAD`` for a side whose stored values are all zero); ``sums``, the dict of
    the module doc (keys sx, sy, cxx, cyy, cxy, uxx, uyy, uxy, uyx, wxx, wyy, wxy) of x̃ = (x − ox)·2^−ex,
    ỹ = (y − oy)·2^−ey.
    """

    def __init__(self, n_x_features: int, n_y_features: int):
        for v, name in ((n_x_features, "n_x_features"), (n_y_features, "n_y_features")):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name}: must be an integer >= 1, got {v!r}")
        self.p, self.q = int(n_x_features), int(n_y_features)
        self.n = 0
        self.ox, self.oy = np.zeros(self.p), np.zeros(self.q)  # origins, in the features' units
        self.ex, self.ey = _LOW, _LOW
        self.sums = batch_sums(np.zeros((0, self.p)), np.zeros((0, self.q)))

    # -- accumulation ------------------------------------------------------------------------------------
    def update(self, X, Y) -> "CrossMoments":
        """Add a batch of b samples: X (b, p), Y (b, q). Returns self."""
        X = features(X, "X")
        Y = features(Y, "Y")
        same_rows(X, Y)
        if X.shape[1] != self.p or Y.shape[1] != self.q:
            raise ValueError(f"X, Y: have {X.shape[1]} and {Y.shape[1]} feature columns; this CrossMoments has "
                             f"n_x_features = {self.p}, n_y_features = {self.q}")
        self._absorb(self.from_batch(X, Y))
        return self

    @classmethod
    def from_batch(cls, X: np.ndarray, Y: np.ndarray) -> "CrossMoments":
        """The moments of one validated float64 batch, about the batch's own means (two passes)."""
        out = cls(X.shape[1], Y.shape[1])
        out.n = X.shape[0]
        sides = []
        for A in (X, Y):
            R, e, o = centre_scale_mean(A)
            sides.append((o, R, e if np.any(R) else _LOW))
        (out.ox, Xs, out.ex), (out.oy, Ys, out.ey) = sides
        out.sums = batch_sums(Xs, Ys)
        return out

    def merge(self, other: "CrossMoments") -> "CrossMoments":
        """A new accumulator of both data sets: exact up to rounding, for any split and any order."""
        if not isinstance(other, CrossMoments):
            raise TypeError(f"other: expected a CrossMoments, got {type(other).__name__}")
        if (other.p, other.q) != (self.p, self.q):
            raise ValueError(f"other: shapes differ: (p, q) = {(self.p, self.q)} vs {(other.p, other.q)}")
        out = self.copy()
        out._absorb(other)
        return out

    def _absorb(self, b: "CrossMoments") -> None:
        if b.n == 0:
            return
        if self.n == 0:
            self.__dict__.update(b.copy().__dict__)
            return
        (dx, edx), (dy, edy) = scaled_difference(b.ox, self.ox), scaled_difference(b.oy, self.oy)  # o_b − o_a
        ex = max(self.ex, b.ex, edx if np.any(dx) else _LOW)
        ey = max(self.ey, b.ey, edy if np.any(dy) else _LOW)
        a_s = _rescale(self.sums, self.ex - ex, self.ey - ey)
        b_s = _rescale(b.sums, b.ex - ex, b.ey - ey)
        # b's rows about o_a: (x − o_a)2^−e = x̃_b − c with c = (o_a − o_b)2^−e, of the order of the spread
        b_s = shift(b_s, b.n, _ldexp(-dx, edx - ex), _ldexp(-dy, edy - ey))
        self.sums = {k: a_s[k] + b_s[k] for k in _NAMES}
        self.n += b.n
        self.ex, self.ey = ex, ey

    @classmethod
    def from_state(cls, n: int, ox, oy, ex: int, ey: int, sums: dict) -> "CrossMoments":
        """A CrossMoments from sums accumulated elsewhere (e.g. on a device, or for many layer pairs at once),
        in the layout of the class doc; shapes and keys are checked, the arrays copied."""
        ox, oy = np.array(ox, dtype=np.float64).ravel(), np.array(oy, dtype=np.float64).ravel()
        out = cls(ox.size, oy.size)
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"n: must be an integer >= 0, got {n!r}")
        missing = set(_NAMES) - set(sums)
        if missing:
            raise ValueError(f"sums: missing {sorted(missing)}")
        p, q = out.p, out.q
        shapes = {"sx": (p,), "sy": (q,), "cxx": (p, p), "cyy": (q, q), "cxy": (p, q), "uxx": (p,), "uyy": (q,),
                  "uxy": (p,), "uyx": (q,), "wxx": (), "wyy": (), "wxy": ()}
        new = {}
        for k, shp in shapes.items():
            v = np.array(sums[k], dtype=np.float64)
            if v.shape != shp:
                raise ValueError(f"sums: {k} has shape {v.shape}, expected {shp} (p = {p}, q = {q})")
            new[k] = v if shp else float(v)
        out.n, out.ox, out.oy, out.ex, out.ey, out.sums = int(n), ox, oy, int(ex), int(ey), new
        return out

    def copy(self) -> "CrossMoments":
        out = CrossMoments(self.p, self.q)
        out.n, out.ex, out.ey = self.n, self.ex, self.ey
        out.ox, out.oy = self.ox.copy(), self.oy.copy()
        out.sums = {k: np.copy(v) if isinstance(v, np.ndarray) else v for k, v in self.sums.items()}
        return out

    @classmethod
    def from_data(cls, X, Y, batch: int | None = None) -> "CrossMoments":
        """The moments of whole (n, p) and (n, q) arrays, streamed in batches of ``batch`` rows (default: blocks
        of about 4 MiB of float64); each batch is converted to float64 on its own, never the whole array."""
        X, Y = lazy_features(X, "X"), lazy_features(Y, "Y")
        same_rows(X, Y)
        if batch is not None and (isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1):
            raise ValueError(f"batch: must be an integer >= 1, got {batch!r}")
        return stream_moments(X, Y, batch)

    # -- read-out ------------------------------------------------------------------------------------------
    def centred(self) -> dict:
        """The sums about the sample means (s_x = s_y = 0), in the stored units; keys as the module doc, plus
        ``n``, ``ex``, ``ey`` (the stored values are the features' centred values divided by 2^ex, 2^ey)."""
        if self.n == 0:
            raise ValueError("CrossMoments: no samples yet")
        out = shift(self.sums, self.n, self.sums["sx"] / self.n, self.sums["sy"] / self.n)
        out["sx"], out["sy"] = np.zeros(self.p), np.zeros(self.q)  # zero up to rounding: exactly, by definition
        out.update(n=self.n, ex=0 if self.ex == _LOW else self.ex, ey=0 if self.ey == _LOW else self.ey)
        return out

    @property
    def mean_x(self) -> np.ndarray:
        return self.ox + (_ldexp(self.sums["sx"] / self.n, self.ex) if self.n else 0.0)

    @property
    def mean_y(self) -> np.ndarray:
        return self.oy + (_ldexp(self.sums["sy"] / self.n, self.ey) if self.n else 0.0)

    def covariance(self, side: str = "x") -> np.ndarray:
        """The sample covariance (1/(n − 1)) Σ (x − x̄)(x − x̄)ᵀ of X ("x") or Y ("y"), in the features' units."""
        from theory.collapse.stats import unscale
        if side not in ("x", "y"):
            raise ValueError(f"side: 'x' or 'y', got {side!r}")
        if self.n < 2:
            raise ValueError(f"CrossMoments: a covariance needs n >= 2 samples, got {self.n}")
        c = self.centred()
        return unscale(c["c" + side * 2] / (self.n - 1), 2 * c["e" + side], f"covariance of {side.upper()}")

    def cka(self, debiased: bool = False) -> float:
        """Linear CKA of X and Y from these moments (biased or debiased, as :func:`theory.geometry.cka.linear_cka`):
        exact, O(pq + p² + q²)."""
        debiased = _check_debiased(debiased)
        return _cka(self._hsic_terms(debiased)[0], debiased)

    def hsic(self, debiased: bool = False) -> float:
        """HSIC₀ or HSIC₁ of X and Y with linear kernels, in the features' units."""
        from theory.collapse.stats import unscale
        debiased = _check_debiased(debiased)
        t, c = self._hsic_terms(debiased)
        return unscale(_hsic_parts(t, debiased)[0], 2 * (c["ex"] + c["ey"]), "hsic")

    def _hsic_terms(self, debiased: bool) -> tuple[dict, dict]:
        k, why = _min_rows(debiased)
        if self.n < k:
            raise ValueError(f"moments: needs at least {k} samples{why}, got n = {self.n}")
        c = self.centred()
        return _terms_from_moments(c), c

    def __repr__(self) -> str:
        return f"CrossMoments(n_x_features={self.p}, n_y_features={self.q}, n={self.n})"


def _rescale(m: dict, kx: int, ky: int) -> dict:
    """Sums of (x·2^kx, y·2^ky): each multiplied by 2^(i·kx + j·ky) for its order (i, j) (exact or underflow)."""
    if kx == 0 and ky == 0:
        return m
    return {k: _ldexp(v, _ORDERS[k][0] * kx + _ORDERS[k][1] * ky) for k, v in m.items()}


def stream_moments(X: np.ndarray, Y: np.ndarray, rows: int | None = None, xname: str = "X", yname: str = "Y"):
    """The :class:`~theory.geometry.moments.CrossMoments` of X (n, p) and Y (n, q), read in row blocks."""
    n = X.shape[0]
    rows = rows_per_block(max(X.shape[1], Y.shape[1])) if rows is None else int(rows)
    out = CrossMoments(X.shape[1], Y.shape[1])
    full = slice(None)
    for s in range(0, n, rows):
        r = slice(s, min(s + rows, n))
        out._absorb(CrossMoments.from_batch(float_block(X, r, full, xname), float_block(Y, r, full, yname)))
    return out


def stream_moments_one(X: np.ndarray, rows: int | None = None, name: str = "Z"):
    """The :class:`~theory.geometry.moments.CrossMoments` of X against one constant column (its X side only)."""
    n, p = X.shape
    rows = rows_per_block(p) if rows is None else int(rows)
    out = CrossMoments(p, 1)
    full = slice(None)
    for s in range(0, n, rows):
        r = slice(s, min(s + rows, n))
        Xb = float_block(X, r, full, name)
        out._absorb(CrossMoments.from_batch(Xb, np.zeros((Xb.shape[0], 1))))
    return out
