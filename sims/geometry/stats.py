"""Streaming, mergeable float64 statistics of several layers (and their pairs) for representation geometry.

Per layer ℓ, with the features h ∈ R^p used as x̃ = (h − o)·2^−e — o the first batch's mean (two passes), e a
power of two fixed at the first batch (exact) — one pass accumulates

    n, s = Σx̃, C = Σx̃x̃ᵀ, u = Σ‖x̃‖²x̃, w = Σ‖x̃‖⁴                        (covariance, spectrum, CKA normalisers)
    per class k (labels given): n_k, S_k = Σ_k x̃, T_k = Σ_k ‖x̃‖², U_k = Σ_k h/‖h‖   (NC1, VCI, NC2, CDNV, cosines)

and per pair of layers (a, b): C_ab = Σx̃_a x̃_bᵀ, u_ab = Σ‖x̃_b‖²x̃_a, u_ba = Σ‖x̃_a‖²x̃_b, w_ab = Σ‖x̃_a‖²‖x̃_b‖²
(the cross-moments of :class:`theory.geometry.CrossMoments`: one-pass linear CKA, biased or debiased).

Accuracy: the sums are *shifted* (about an origin inside the data), so features far from zero (an offset of
1e6 spreads) lose nothing to the E[X²] − E[X]² cancellation; centring at the end uses the exact shift
identities of :func:`theory.geometry.moments.shift`. Memory: O(Σp² + Σ_pairs p_a p_b + K·Σp), independent of
the number of samples.

Two objects: :class:`Accumulator` (torch tensors on the capture's device, updated per batch) and
:class:`GeometryState` (numpy, picklable, what merges). ``GeometryState.merge`` re-expresses the other side's
sums about this side's origins and powers of two (exact identities), so shards merged in any order equal one
pass to rounding (~1e-13 relative).
"""
from __future__ import annotations

import numpy as np

from theory.geometry.moments import shift

LOW = -100_000  # the exponent of a layer with no spread yet
DENSE_CLASSES = 256  # up to this many classes the CPU's class sums use a dense one-hot GEMM, above it scipy.sparse
SELF = ("s", "C", "u", "w")
ORDER = {"s": 1, "C": 2, "u": 3, "w": 4}
CROSS_ORDER = {"C": (1, 1), "ua": (1, 2), "ub": (2, 1), "w": (2, 2)}  # ua = Σ‖x̃_b‖²x̃_a, ub = Σ‖x̃_a‖²x̃_b


def _ldexp(a, k: int):
    return np.ldexp(a, int(np.clip(k, -5000, 5000)))


def pow2(v: float) -> int:
    """e with v·2^−e in [½, 1); 0 for v = 0."""
    return int(np.frexp(float(v))[1]) if v > 0 else 0


class GeometryState:
    """Numpy statistics of the captured layers (module doc): ``layers`` {name: dict}, ``pairs`` {(a, b): dict},
    ``n`` samples, ``n_classes`` K (None without labels), ``eps`` {name: machine ε of the activations' dtype},
    ``reused`` {name: calls per forward pass when a module ran more than once}."""

    def __init__(self, dims: dict, n_classes: int | None = None, pairs=()):
        self.dims = {k: int(v) for k, v in dims.items()}
        self.n_classes = n_classes
        self.n = 0
        self.layers = {k: empty_layer(p, n_classes) for k, p in self.dims.items()}
        self.pairs = {tuple(ab): empty_pair(self.dims[ab[0]], self.dims[ab[1]]) for ab in pairs}
        self.eps = {k: float(np.finfo(np.float32).eps) for k in self.dims}
        self.reused: dict = {}
        self.meta: dict = {}

    # -- merging -------------------------------------------------------------------------------------------
    def signature(self) -> tuple:
        return (tuple(self.dims.items()), self.n_classes, tuple(sorted(self.pairs)))

    def copy(self) -> "GeometryState":
        out = GeometryState(self.dims, self.n_classes, self.pairs)
        out.n, out.eps, out.reused, out.meta = self.n, dict(self.eps), dict(self.reused), dict(self.meta)
        out.layers = {k: {a: np.copy(v) for a, v in d.items()} for k, d in self.layers.items()}
        out.pairs = {k: {a: np.copy(v) for a, v in d.items()} for k, d in self.pairs.items()}
        return out

    def merge(self, other: "GeometryState") -> "GeometryState":
        """A new state holding both data sets (neither operand changes): exact up to rounding, any order."""
        if not isinstance(other, GeometryState):
            raise TypeError(f"merge: expected a GeometryState, got {type(other).__name__}")
        if other.signature() != self.signature():
            raise ValueError(f"merge: the states capture different layers: {self.describe()} vs {other.describe()}")
        if other.n == 0:
            return self.copy()
        if self.n == 0:
            return other.copy()
        e = {k: max(int(self.layers[k]["e"]), int(other.layers[k]["e"])) for k in self.dims}
        a, b = self.rescaled(e), other.rescaled(e)
        b = b.moved_to({k: a.layers[k]["o"] for k in self.dims})
        out = a
        for k in self.dims:
            for name in ("s", "C", "u", "w", "counts", "S", "T", "U"):
                out.layers[k][name] = out.layers[k][name] + b.layers[k][name]
            out.eps[k] = max(a.eps[k], b.eps[k])
        for ab in self.pairs:
            for name in CROSS_ORDER:
                out.pairs[ab][name] = out.pairs[ab][name] + b.pairs[ab][name]
        out.n = a.n + b.n
        for k, v in other.reused.items():
            out.reused[k] = max(v, out.reused.get(k, 0))
        return out

    def describe(self) -> str:
        return f"layers {self.dims}, n_classes {self.n_classes}, {len(self.pairs)} pairs"

    def rescaled(self, e: dict) -> "GeometryState":
        """A copy whose layer k is stored in units 2^e[k] (e[k] ≥ its own; exact powers of two)."""
        out = self.copy()
        d = {}
        for k, L in out.layers.items():
            old = int(L["e"])
            d[k] = 0 if old == LOW or not np.any(L["C"]) else old - e[k]
            for name, r in ORDER.items():
                L[name] = _ldexp(L[name], r * d[k])
            L["S"], L["T"] = _ldexp(L["S"], d[k]), _ldexp(L["T"], 2 * d[k])
            L["e"] = np.int64(e[k])
        for (a, b), P in out.pairs.items():
            for name, (i, j) in CROSS_ORDER.items():
                P[name] = _ldexp(P[name], i * d[a] + j * d[b])
        return out

    def moved_to(self, origins: dict) -> "GeometryState":
        """A copy with every layer's sums about ``origins`` (same units), by the exact shift identities."""
        out = self.copy()
        c = {}
        for k, L in out.layers.items():
            # rows about the new origin: (h − o')2^−e = x̃ − c, c = (o' − o)2^−e (Sterbenz-exact for close origins)
            c[k] = _ldexp(np.asarray(origins[k], dtype=np.float64) - L["o"], -int(L["e"]))
            m = shift(self_dict(L), self.n, c[k], c[k])
            L["s"], L["C"], L["u"], L["w"] = m["sx"], m["cxx"], m["uxx"], m["wxx"]
            cnt = L["counts"].astype(np.float64)
            L["T"] = L["T"] - 2.0 * (L["S"] @ c[k]) + cnt * float(c[k] @ c[k])
            L["S"] = L["S"] - cnt[:, None] * c[k][None, :]
            L["o"] = np.asarray(origins[k], dtype=np.float64).copy()
        for (a, b), P in out.pairs.items():
            La, Lb = self.layers[a], self.layers[b]
            m = shift(pair_dict(La, Lb, P), self.n, c[a], c[b])
            P["C"], P["ua"], P["ub"], P["w"] = m["cxy"], m["uxy"], m["uyx"], m["wxy"]
        return out

    # -- read-out ------------------------------------------------------------------------------------------
    def cross_moments(self, a: str, b: str | None = None):
        """The :class:`theory.geometry.CrossMoments` of layers a and b (b = a: the layer with itself)."""
        from theory.geometry import CrossMoments
        from theory.geometry.moments import NO_SPREAD

        b = a if b is None else b
        for k in (a, b):
            if k not in self.dims:
                raise ValueError(f"layer {k!r}: not captured; captured: {list(self.dims)}")
        La, Lb = self.layers[a], self.layers[b]
        if a == b:
            sums = pair_dict(La, Lb, {"C": La["C"], "ua": La["u"], "ub": La["u"], "w": La["w"]})
        elif (a, b) in self.pairs:
            sums = pair_dict(La, Lb, self.pairs[(a, b)])
        elif (b, a) in self.pairs:
            P = self.pairs[(b, a)]
            sums = pair_dict(La, Lb, {"C": P["C"].T, "ua": P["ub"], "ub": P["ua"], "w": P["w"]})
        else:
            raise ValueError(f"layers {a!r} and {b!r}: their cross-moments were not captured (pairs: "
                             f"{sorted(self.pairs)[:6]}...); capture with pairs='all'")
        ex = int(La["e"]) if self.n and np.any(La["C"]) else NO_SPREAD
        ey = int(Lb["e"]) if self.n and np.any(Lb["C"]) else NO_SPREAD
        return CrossMoments.from_state(int(self.n), La["o"], Lb["o"], ex, ey, sums)

    def class_stats(self, name: str):
        """VC's :class:`theory.collapse.ClassStats` of layer ``name`` from the streamed class sums.

        Pooled within-class scatter W = C_c − Σ_k n_k(μ_k − μ)(μ_k − μ)ᵀ from the shifted sums (about the data:
        its rounding is ε·tr Σ_T, relative error ε·tr Σ_T/tr Σ_W in Σ_W)."""
        from theory.collapse import ClassStats

        if self.n_classes is None:
            raise ValueError("class statistics: no labels were captured (pass labelled batches and n_classes)")
        L, p, K = self.layers[name], self.dims[name], int(self.n_classes)
        cnt = L["counts"]
        seen = cnt > 0
        means = np.zeros((K, p))
        means[seen] = L["S"][seen] / cnt[seen, None]
        W = L["C"] - (L["S"][seen].T / cnt[seen]) @ L["S"][seen]
        st = ClassStats(p, K)
        e = int(L["e"]) if int(L["e"]) != LOW else 0
        st.counts = cnt.astype(np.int64).copy()
        st.input_eps = max(st.input_eps, float(self.eps[name]))  # the activations' precision (noise floor of Σ_T)
        st.unit_sums = L["U"].copy()
        st._mean, st._m2 = means, 0.5 * (W + W.T)
        st._exp = np.full(p, e, dtype=np.int64)
        st._origin = _ldexp(L["o"], -e)
        st._cmax = np.max(np.abs(means + st._origin), axis=0)
        return st

    def class_variances(self, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(counts, class means in the stored units, Var_k = mean ‖h − μ_k‖² in the stored units²)."""
        L = self.layers[name]
        cnt = L["counts"].astype(np.float64)
        if np.any(cnt == 0):
            raise ValueError(f"layer {name!r}: class {int(np.flatnonzero(cnt == 0)[0])} has no samples")
        M = L["S"] / cnt[:, None]
        var = np.maximum(L["T"] / cnt - np.einsum("ij,ij->i", M, M), 0.0)
        return cnt, M, var


def empty_layer(p: int, K: int | None) -> dict:
    k = 0 if K is None else int(K)
    return {"o": np.zeros(p), "e": np.int64(LOW), "s": np.zeros(p), "C": np.zeros((p, p)), "u": np.zeros(p),
            "w": np.float64(0.0), "counts": np.zeros(k), "S": np.zeros((k, p)), "T": np.zeros(k),
            "U": np.zeros((k, p))}


def empty_pair(p: int, q: int) -> dict:
    return {"C": np.zeros((p, q)), "ua": np.zeros(p), "ub": np.zeros(q), "w": np.float64(0.0)}


def self_dict(L: dict) -> dict:
    s, C, u, w = L["s"], L["C"], L["u"], float(L["w"])
    return {"sx": s, "sy": s, "cxx": C, "cyy": C, "cxy": C, "uxx": u, "uyy": u, "uxy": u, "uyx": u,
            "wxx": w, "wyy": w, "wxy": w}


def pair_dict(La: dict, Lb: dict, P: dict) -> dict:
    return {"sx": La["s"], "sy": Lb["s"], "cxx": La["C"], "cyy": Lb["C"], "cxy": P["C"], "uxx": La["u"],
            "uyy": Lb["u"], "uxy": P["ua"], "uyx": P["ub"], "wxx": float(La["w"]), "wyy": float(Lb["w"]),
            "wxy": float(P["w"])}


def merge_all(states) -> "GeometryState":
    """Merge a sequence of states pairwise as a balanced tree (any order gives the same result to rounding)."""
    states = list(states)
    if not states:
        raise ValueError("merge_all: no states to merge")
    while len(states) > 1:
        states = [states[i].merge(states[i + 1]) if i + 1 < len(states) else states[i]
                  for i in range(0, len(states), 2)]
    return states[0]


class Accumulator:
    """Torch float64 accumulators of the layers' sums on ``device`` (the module doc's quantities).

    ``update(feats, y)``: feats {name: (b, p) tensor} of the same b samples, y (b,) int64 labels or None (labels
    either always or never). ``state()``: the numpy :class:`GeometryState`.

    Each layer stages R rows of x̃ (R, p), ‖x̃‖² (R,) and, with labels, h/‖h‖ (R, p) (R·(2p + 1) ≤ 2^22 floats,
    32 MiB, and at least one batch: memory independent of N); batches are written there in float64 (x̃ in one
    pass). When the stage is full, one GEMM X̃ᵀX̃ adds C, and matrix–vector products add u = X̃ᵀk, s and
    w = kᵀk; one indicator product (K × R) adds the class sums S, T, counts and U (``index_add_`` on a GPU); a
    pair of layers adds X̃_aᵀX̃_b, X̃_aᵀk_b, X̃_bᵀk_a and k_aᵀk_b. Staging amortises the per-call overhead of small
    batches and narrow layers over R rows."""

    STAGE = 2 ** 22  # floats per layer's staging buffer (at least one batch)

    def __init__(self, dims: dict, n_classes: int | None, pairs, device):
        import torch

        self.torch, self.device = torch, torch.device(device)
        self.dims, self.K, self.pairs = dict(dims), n_classes, [tuple(ab) for ab in pairs]
        f = dict(dtype=torch.float64, device=self.device)
        self.G = {n: torch.zeros(p + 2, p + 2, **f) for n, p in dims.items()}
        self.KC = {n: torch.zeros(int(n_classes), 2 * p + 2, **f) for n, p in dims.items()} if n_classes else {}
        self.P = {ab: torch.zeros(dims[ab[0]] + 1, dims[ab[1]] + 1, **f) for ab in self.pairs}
        self.o: dict = {}
        self.e: dict = {}
        self._scale: dict = {}
        self._neg_os: dict = {}
        self.eps = {n: 0.0 for n in dims}
        self.n = 0
        self.buf: dict = {}
        self.ybuf = None
        self.fill = 0
        self.labelled = None
        self.sparse = self.device.type == "cpu"  # class sums: scipy's indicator product, else index_add_ (GPU)

    def _origin(self, name: str, h) -> None:
        torch = self.torch
        o = h.mean(dim=0)
        o = o + (h - o).mean(dim=0)  # two passes: the origin is the batch mean to rounding
        top = float((h - o).abs().max()) if h.numel() else 0.0
        if not np.isfinite(top):
            raise ValueError(f"layer {name!r}: non-finite activations (NaN or Inf) in the first batch")
        if top == 0:  # one row, or constant so far: the features' own size sets the unit
            top = float(h.abs().max()) if h.numel() else 0.0
        self.o[name], self.e[name] = o, pow2(top)
        self._scale[name] = torch.ldexp(torch.ones((), dtype=torch.float64, device=self.device),
                                        torch.tensor(-self.e[name], device=self.device))
        self._neg_os[name] = -(o * self._scale[name])

    def _stage(self, b: int) -> None:
        """Room for b more rows: flush a full buffer; (re)allocate buffers that are too small for one batch."""
        torch = self.torch
        rows = max(self.buf[n].shape[0] for n in self.buf) if self.buf else 0
        if self.fill + b <= rows:
            return
        self.flush()
        if b <= rows:
            return
        wide = max((2 if self.labelled else 1) * p + 1 for p in self.dims.values())
        R = max(b, min(8192, self.STAGE // wide))
        f = dict(dtype=torch.float64, device=self.device)
        self.buf = {n: torch.empty(R, p, **f) for n, p in self.dims.items()}  # x̃ rows
        self.kbuf = {n: torch.empty(R, **f) for n in self.dims}  # ‖x̃‖²
        self.ubuf = {n: torch.empty(R, p, **f) for n, p in self.dims.items()} if self.labelled else {}  # h/‖h‖
        self.ybuf = torch.empty(R, dtype=torch.long, device=self.device)

    def update(self, feats: dict, y=None) -> None:
        torch = self.torch
        if set(feats) != set(self.dims):
            raise ValueError(f"update: expected the layers {list(self.dims)}, got {list(feats)}")
        b = next(iter(feats.values())).shape[0] if feats else 0
        if self.labelled is None:
            self.labelled = y is not None and bool(self.K)
        elif self.labelled != (y is not None):
            raise ValueError(f"labels: a batch at sample {self.n} " + ("has none" if self.labelled else "has labels")
                             + " while the earlier ones " + ("had" if self.labelled else "had none"))
        if b == 0:
            return
        self._stage(b)
        r0, r1 = self.fill, self.fill + b
        for name, h in feats.items():
            p = self.dims[name]
            if h.shape[1:] != (p,):
                raise ValueError(f"layer {name!r}: {tuple(h.shape[1:])} features in this batch, {p} in the first")
            if h.is_floating_point():
                self.eps[name] = max(self.eps[name], float(torch.finfo(h.dtype).eps))
            h = h.to(device=self.device, dtype=torch.float64)
            if name not in self.o:
                self._origin(name, h)
            x = self.buf[name][r0:r1]
            # x̃ = h·2^−e − o·2^−e in one pass: the same bits as (h − o)·2^−e (powers of two are exact)
            torch.addcmul(self._neg_os[name], h, self._scale[name], out=x)
            torch.linalg.vector_norm(x, dim=1, out=self.kbuf[name][r0:r1]).square_()
            if self.labelled:
                nrm = torch.linalg.vector_norm(h, dim=1, keepdim=True)
                torch.div(h, nrm.clamp_min_(1e-300), out=self.ubuf[name][r0:r1])  # a zero row stays 0 (cosine)
        if self.labelled:
            self.ybuf[r0:r1] = y.to(self.device)
        self.fill = r1
        self.n += b

    def flush(self) -> None:
        """Add the staged rows to the sums: G[:p, :p] += XᵀX, G[:p, p] += Xᵀk, G[:p, p + 1] += Σx̃, G[p, p] += kᵀk;
        class sums through one indicator product; pairs X_aᵀX_b, X_aᵀk_b, X_bᵀk_a, k_aᵀk_b."""
        m = self.fill
        if m == 0:
            return
        torch, K = self.torch, int(self.K or 0)
        dense = self.labelled and self.sparse and K <= DENSE_CLASSES
        if self.labelled and self.sparse:
            yn = self.ybuf[:m].numpy()
            if dense:  # a (K, m) one-hot matrix: a BLAS GEMM beats scipy's sparse product for few classes
                ind = torch.zeros(K, m, dtype=torch.float64)
                ind[self.ybuf[:m], torch.arange(m)] = 1.0
            else:
                import scipy.sparse as sps

                ind = sps.csr_matrix((np.ones(m), (yn, np.arange(m))), shape=(K, m))
        for name, p in self.dims.items():
            X, k, G = self.buf[name][:m], self.kbuf[name][:m], self.G[name]
            G[:p, :p].addmm_(X.T, X)
            self._ones = self._ones if getattr(self, "_ones", None) is not None and len(self._ones) >= m else \
                torch.ones(max(m, len(self.buf[name])), dtype=torch.float64, device=self.device)
            G[:p, p].addmv_(X.T, k)
            G[:p, p + 1].addmv_(X.T, self._ones[:m])
            G[p, p] += k @ k
            G[p + 1, p + 1] += m
            if self.labelled:
                KC = self.KC[name]
                if dense:
                    KC[:, :p].addmm_(ind, X)
                    KC[:, p].addmv_(ind, k)
                    KC[:, p + 1] += ind.sum(dim=1)
                    KC[:, p + 2:].addmm_(ind, self.ubuf[name][:m])
                elif self.sparse:
                    KCn = KC.numpy()
                    KCn[:, :p] += ind @ X.numpy()
                    KCn[:, p] += np.bincount(yn, weights=k.numpy(), minlength=K)
                    KCn[:, p + 1] += np.bincount(yn, minlength=K)
                    KCn[:, p + 2:] += ind @ self.ubuf[name][:m].numpy()
                else:  # atomics on the GPU
                    y = self.ybuf[:m]
                    KC[:, :p].index_add_(0, y, X)
                    KC[:, p].index_add_(0, y, k)
                    KC[:, p + 1].index_add_(0, y, self.torch.ones_like(k))
                    KC[:, p + 2:].index_add_(0, y, self.ubuf[name][:m])
        for a, c in self.pairs:
            Xa, Xc, ka, kc = self.buf[a][:m], self.buf[c][:m], self.kbuf[a][:m], self.kbuf[c][:m]
            P, p, q = self.P[(a, c)], self.dims[a], self.dims[c]
            P[:p, :q].addmm_(Xa.T, Xc)
            P[:p, q].addmv_(Xa.T, kc)
            P[p, :q].addmv_(Xc.T, ka)
            P[p, q] += ka @ kc
        self.fill = 0

    def state(self) -> GeometryState:
        with self.torch.inference_mode():  # the buffers may be inference tensors (a capture's)
            self.flush()
        st = GeometryState(self.dims, self.K if self.labelled else None, self.pairs)
        st.n = self.n
        for name, p in self.dims.items():
            G = self.G[name].detach().cpu().numpy()
            if not np.all(np.isfinite(G)):
                raise ValueError(f"layer {name!r}: non-finite activations (NaN or Inf), or values so large that their "
                                 "fourth powers overflow; check the model and its input")
            L = {"s": G[:p, p + 1].copy(), "C": G[:p, :p].copy(), "u": G[:p, p].copy(), "w": np.float64(G[p, p])}
            if self.K and self.labelled:
                KC = self.KC[name].detach().cpu().numpy()
                L.update(counts=np.rint(KC[:, p + 1]), S=KC[:, :p].copy(), T=KC[:, p].copy(), U=KC[:, p + 2:].copy())
            else:
                L.update(counts=np.zeros(0), S=np.zeros((0, p)), T=np.zeros(0), U=np.zeros((0, p)))
            L["o"] = self.o[name].cpu().numpy() if name in self.o else np.zeros(p)
            L["e"] = np.int64(self.e.get(name, LOW)) if self.n else np.int64(LOW)
            st.layers[name] = L
            st.eps[name] = self.eps[name] or float(np.finfo(np.float32).eps)
        for (a, c) in self.pairs:
            P = self.P[(a, c)].detach().cpu().numpy()
            p, q = self.dims[a], self.dims[c]
            if not np.all(np.isfinite(P)):
                raise ValueError(f"layers {a!r}, {c!r}: non-finite cross-moments (NaN/Inf activations or overflow)")
            st.pairs[(a, c)] = {"C": P[:p, :q].copy(), "ua": P[:p, q].copy(), "ub": P[p, :q].copy(),
                                "w": np.float64(P[p, q])}
        return st
