"""Float64 rounding bounds for tests that compare two computations of the same streamed statistics.

Where two float64 computations of a :class:`~sims.geometry.stats.GeometryState` differ only in the order of their
sums (one pass vs shards merged in another order; one process vs several), the difference is rounding. Its size:

* every stored sum Σ_i a_i b_i over n samples carries an error ≤ γ_n Σ_i |a_i||b_i| (Higham, *Accuracy and
  Stability of Numerical Algorithms*, 2nd ed., Eq 3.5; γ_n = nu/(1 − nu) ≈ n·ε/2), and by Cauchy–Schwarz
  Σ|a_i||b_i| ≤ √(Σa_i² Σb_i²) — so entry C_jk of Σx̃x̃ᵀ is off by at most ≈ n·ε·√(C_jj C_kk), u_j = Σ‖x̃‖²x̃_j by
  n·ε·√(w C_jj), w = Σ‖x̃‖⁴ by n·ε·w, and so on (:func:`magnitudes`). A merge re-expresses one side's sums about
  the other's origin (:func:`theory.geometry.moments.shift`) with shifts of the order of the spread, which adds a
  few ε of the same magnitudes per merge; both are within ``(n + 4·merges)·ε`` of the magnitudes.
* a read-out f (CKA, NC1, an eigenvalue entropy, …) turns errors δ_j of the sums into
  |δf| ≈ |Σ_j ∂f/∂s_j δ_j|. :func:`condition` measures κ = max |f(s + η m ⊙ r) − f(s)| / (η |f(s)|) over random
  r ∈ [−1, 1] with m the magnitudes above and η = 1e-9 (first order: η ≫ ε, η·κ ≪ 1): the relative change of f
  per unit of relative rounding of every sum. For a debiased HSIC it includes the cancellation between its three
  terms; for NC1 the condition of Σ_B† on its range.

The tolerance is then ``SAFETY · (n + 4·merges) · ε · κ`` (:func:`tolerance`). SAFETY = 8 covers a random r
undershooting the worst direction (measured: the max over 8 draws is within a factor 3 of the largest of 200) and
the read-out's own rounding. It is a first-order bound, not a rigorous one; it is tight enough that a merge bug
(a dropped shift term, a wrong power of two) misses it by orders of magnitude.
"""
from __future__ import annotations

import numpy as np

EPS = float(np.finfo(np.float64).eps)
SAFETY = 8.0
ETA = 1e-9


def magnitudes(st) -> dict:
    """{("layer", name, key) or ("pair", ab, key): array}: the Cauchy–Schwarz bound of Σ|terms| of each sum."""
    out = {}
    for k, L in st.layers.items():
        d = np.abs(np.diag(L["C"]))
        w = abs(float(L["w"]))
        cnt = np.asarray(L["counts"], dtype=np.float64)
        out[("layer", k, "s")] = np.sqrt(st.n * d)
        out[("layer", k, "C")] = np.sqrt(np.outer(d, d))
        out[("layer", k, "u")] = np.sqrt(w * d)
        out[("layer", k, "w")] = np.float64(w)
        if cnt.size:
            out[("layer", k, "S")] = np.sqrt(np.outer(cnt, d))
            out[("layer", k, "T")] = np.abs(L["T"])
            out[("layer", k, "U")] = np.repeat(cnt[:, None], L["U"].shape[1], axis=1)
    for (a, b), _ in st.pairs.items():
        da, db = np.abs(np.diag(st.layers[a]["C"])), np.abs(np.diag(st.layers[b]["C"]))
        wa, wb = abs(float(st.layers[a]["w"])), abs(float(st.layers[b]["w"]))
        out[("pair", (a, b), "C")] = np.sqrt(np.outer(da, db))
        out[("pair", (a, b), "ua")] = np.sqrt(wb * da)
        out[("pair", (a, b), "ub")] = np.sqrt(wa * db)
        out[("pair", (a, b), "w")] = np.float64(np.sqrt(wa * wb))
    return out


def perturbed(st, eta: float, rng):
    """A copy of ``st`` whose every sum moved by eta·magnitude·U(−1, 1), entry by entry."""
    out = st.copy()
    for (kind, name, key), m in magnitudes(st).items():
        where = out.layers[name] if kind == "layer" else out.pairs[name]
        r = rng.uniform(-1.0, 1.0, size=np.shape(m))
        if kind == "layer" and key == "C":
            r = 0.5 * (r + r.T)  # Σx̃x̃ᵀ is symmetric however it was summed
        where[key] = where[key] + eta * m * r
    return out


def condition(st, read, draws: int = 8, seed: int = 0) -> dict:
    """{label: κ} for ``read(state) -> {label: float}`` (module doc); κ ≥ 1."""
    rng = np.random.default_rng(seed)
    base = read(st)
    kappa = {k: 1.0 for k in base}
    for _ in range(draws):
        got = read(perturbed(st, ETA, rng))
        for k, v in base.items():
            if v is not None and got.get(k) is not None and v != 0:
                kappa[k] = max(kappa[k], abs(got[k] - v) / (ETA * abs(v)))
    return kappa


def tolerance(kappa: float, n: int, merges: int = 0) -> float:
    """The relative rounding bound SAFETY·(n + 4·merges)·ε·κ of a read-out of sums over n samples."""
    return SAFETY * (n + 4 * merges) * EPS * kappa


def rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-300)
