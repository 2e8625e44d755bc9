"""FG (hierarchical multi-view, two-layer ReLU SGD): parameter scalings, Gaussian-tail predictions of the
lucky-neuron sets, and the closed form of the linear model's error (FG App B.2 remark).

Mathematics only (numpy/scipy). The simulation lives in ``sims/multiview``.

Notation (FG App B): d the patch dimension, P patches per sample, s the expected number of common- and of
subclass-feature patches, k = k₊ = k₋ subclasses per superclass, σ₀ the init scale, c_b the bias constant
with b⁽⁰⁾ = −σ₀ √(c_b log d).

**The bias constant (FG B.2 / B.3 item 6, garbled in the extracted text).** The initialisation reads
``b⁽⁰⁾ = −σ₀ c_b √ ...``; the proofs (Def C.1, Thm D.1, Lemma G.2 base case) use the threshold
σ₀√((4 + 2c₀) log d) for coarse and σ₀√((2 + 2c₀) log d) for fine training, i.e. b⁽⁰⁾ = −σ₀√(c_b log d) with
c_b = 4 + 2c₀ (coarse) or 2 + 2c₀ (fine), together with m = Θ(d^{2+2c₀}) (coarse) neurons so that each
feature has Θ(d^{c₀}) ... "a few" lucky neurons: m·Q(√(c_b log d)) = Θ(polylog). At d in the hundreds
m = d^{2+2c₀} is ~10⁴–10⁵ neurons per class, too many to train here, so we keep the *pair* (m, c_b) tied by
the same condition: choose m, then c_b so that m·Q(√(c_b log d)) equals a target number of lucky neurons
per feature (:func:`c_b_for_lucky`). This is the free m/threshold pair the paper leaves open.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import special, stats

from theory.validate import check_int, check_positive, check_real, check_tolerance

#: largest P for :func:`patch_count_pmf` (an O(P²) sum over binomial pmfs; the paper's P is polylog(d) ~ 16).
MAX_P = 10_000


def gaussian_tail(x):
    """Q(x) = P[g ≥ x] for g ~ N(0, 1) (FG Eq 19 bounds it)."""
    return 0.5 * special.erfc(np.asarray(x, dtype=float) / math.sqrt(2.0))


def _check_c0(c0) -> float:
    c0 = check_real(c0, "c0")
    if not 0 < c0 < 0.1:
        raise ValueError(f"c0 must lie in (0, 0.1) (FG B.3 item 5), got {c0}")
    return c0


def paper_c_b(c0: float = 0.05, fine: bool = False) -> float:
    """FG B.3 item 6: c_b = 4 + 2c₀ for coarse training, 2 + 2c₀ for fine training, c₀ ∈ (0, 0.1)."""
    c0 = _check_c0(c0)
    return (2.0 if fine else 4.0) + 2.0 * c0


def paper_width(d: int, c0: float = 0.05, fine: bool = False) -> float:
    """FG Prop 1 / App C: m = Θ(d^{2+2c₀}) neurons per class (coarse); fine: Prop 2 uses m = Θ(d^{1+2c₀})
    per subclass (so that m·Q(√((2+2c₀) log d)) = Θ(d^{c₀}) as well)."""
    d, c0 = check_int(d, "d", 1), _check_c0(c0)
    return float(d) ** ((1.0 if fine else 2.0) + 2.0 * c0)


def bias_threshold(c_b: float, d: int) -> float:
    """τ = √(c_b log d): the initial bias is b⁽⁰⁾ = −σ₀ τ (FG B.2, rebuilt from Def C.1)."""
    check_positive(c_b, "c_b")
    check_int(d, "d", 2)
    return math.sqrt(c_b * math.log(d))


def c_b_for_lucky(m: int, lucky: float, d: int) -> float:
    """The c_b for which m·Q(√(c_b log d)) = ``lucky`` (expected lucky neurons per feature and class).

    This is our choice of the paper's free pair (m, threshold): e.g. m = 800, lucky = 8, d = 100 gives
    c_b ≈ 1.17; m = 100 gives c_b ≈ 0.43.
    """
    m, lucky, d = check_int(m, "m", 1), check_real(lucky, "lucky"), check_int(d, "d", 2)
    if not 0 < lucky < m / 2:
        raise ValueError(f"lucky must lie in (0, m/2) = (0, {m / 2}), got {lucky}")
    tau = float(stats.norm.isf(lucky / m))
    return tau * tau / math.log(d)


def lucky_set_sizes(m: int, d: int, c_b: float) -> dict:
    """Expected sizes of the lucky-neuron sets of FG Def C.1 / G.1 for one feature v and one class.

    With ε = 1/log⁵ d and τ± = √(c_b (log d ± ε)) (the garbled '√(4 + 2c₀)√(log d ± 1/log⁵ d)'):
    S(v) = {r : ⟨w_r⁽⁰⁾, v⟩ ≥ σ₀ τ₋}, S*(v) = {r : ⟨w_r⁽⁰⁾, v⟩ ≥ σ₀ τ₊ and ⟨w_r⁽⁰⁾, v'⟩ < σ₀ τ₋ for all v' ≠ v}.
    The coordinates ⟨w⁽⁰⁾, v⟩ over an orthonormal V are iid N(0, σ₀²) (Prop 1 proof), so
    E|S(v)| = m Q(τ₋) and E|S*(v)| = m Q(τ₊)(1 − Q(τ₋))^{d−1}  (Prop 1 step 1–2, Prop 2).
    """
    m, d = check_int(m, "m", 1), check_int(d, "d", 2)
    check_positive(c_b, "c_b")
    eps = 1.0 / math.log(d) ** 5
    lo = math.log(d) - eps
    if lo <= 0:
        raise ValueError(f"log d − 1/log⁵ d must be > 0; d = {d} is too small")
    tau_lo = math.sqrt(c_b * lo)
    tau_hi = math.sqrt(c_b * (math.log(d) + eps))
    q_lo = float(gaussian_tail(tau_lo))
    q_hi = float(gaussian_tail(tau_hi))
    return {"S": m * q_lo, "S_star": m * q_hi * (1.0 - q_lo) ** (d - 1), "tau_lo": tau_lo, "tau_hi": tau_hi,
            "q_lo": q_lo, "q_hi": q_hi}


def lucky_set_sizes_planted(m: int, d: int, c_b: float) -> dict:
    """A planted wrong prediction (negative control): E|S*(v)| without the exclusivity factor (1 − Q)^{d−1}."""
    out = lucky_set_sizes(m, d, c_b)
    out["S_star"] = m * out["q_hi"]
    return out


def patch_count_pmf(P: int, s: float) -> tuple[np.ndarray, np.ndarray]:
    """Exact pmfs of the common-feature count C and of the total feature count C + S of an easy sample.

    FG App B.1 item 5: each patch is common with probability s/P (C ~ Bin(P, s/P)); each of the P − C
    remaining patches is a subclass-feature patch with probability s/(P − C) (S | C ~ Bin(P − C, s/(P − C)),
    S = 0 when C = P). Returns (pmf of C over 0..P, pmf of C + S over 0..P).
    """
    P, s = check_int(P, "P", 1, MAX_P), check_real(s, "s")
    if not 0 < s <= P:
        raise ValueError(f"s must lie in (0, P] = (0, {P}], got {s}")
    pc = stats.binom.pmf(np.arange(P + 1), P, s / P)
    total = np.zeros(P + 1)
    for c in range(P + 1):
        rest = P - c
        if rest == 0:
            total[c] += pc[c]
            continue
        q = min(1.0, s / rest)
        ps = stats.binom.pmf(np.arange(rest + 1), rest, q)
        total[c:c + rest + 1] += pc[c] * ps
    return pc, total


def expected_counts(P: int, s: float) -> dict:
    """Expected common and subclass-feature patch counts of an easy sample (FG App B.1 item 5)."""
    pc, total = patch_count_pmf(P, s)
    n = np.arange(P + 1)
    common = float(pc @ n)
    return {"common": common, "subclass": float(total @ n) - common}


def linear_error(P: int, s: float, k: int, sigma_zeta: float, iota: float = 0.0, planted: bool = False) -> float:
    """Error of the ideal linear model of FG App B.2's remark on easy samples (closed form).

    F₊ − F₋ = Σ_p ⟨u, x_p⟩ with u = v₊ + Σ_j v₊,ⱼ − v₋ − Σ_j v₋,ⱼ (all coefficients 1, the 'ideal situation').
    For a sample with n = C + S feature patches (pmf :func:`patch_count_pmf`) the signal is Σ α ≈ n with
    variance n ι²/3 (α ~ U[1−ι, 1+ι]), and the noise Σ_p ⟨u, ζ_p⟩ ~ N(0, P σ_ζ² ‖u‖²), ‖u‖² = 2 + 2k: the
    noise accumulates over all P patches. error = Σ_n pmf(n) Q(n / √(P σ_ζ² (2+2k) + n ι²/3)).
    ``planted``: the wrong claim that only one patch's noise enters (P → 1), the negative control.
    """
    k = check_int(k, "k", 1)
    check_positive(sigma_zeta, "sigma_zeta")
    iota = check_tolerance(iota, "iota")
    _, total = patch_count_pmf(P, s)
    n = np.arange(P + 1, dtype=float)
    var = (1 if planted else P) * sigma_zeta ** 2 * (2 + 2 * k) + n * iota ** 2 / 3.0
    err = np.where(n > 0, gaussian_tail(n / np.sqrt(var)), 0.5)
    return float(total @ err)


def regime_table(d: int, P: int, s: float, k: int, m_coarse: int, m_fine: int, lucky: float,
                 noise_norm: float, sigma0: float, eta: float, c0: float = 0.05) -> list[dict]:
    """The paper's conditions (FG B.3) next to our values, one row per parameter: which condition it follows."""
    d, P, k = check_int(d, "d", 2), check_int(P, "P", 1), check_int(k, "k", 1)
    s, lucky, eta = check_positive(s, "s"), check_real(lucky, "lucky"), check_real(eta, "eta")
    noise_norm, sigma0 = check_tolerance(noise_norm, "noise_norm"), check_positive(sigma0, "sigma0")
    L = math.log(d)
    rows = [
        ("d", d, "sufficiently large (B.3 item 1)", "hundreds: what trains in seconds on 2 cores"),
        ("k", k, "polylog(d) ≤ k ≤ d^0.4 (item 4)", f"d^0.4 = {d ** 0.4:.1f}"),
        ("s", s, "s ≥ polylog(d), degree > 15 (item 10)", "3: polylog(d)^15 is astronomically large here"),
        ("P", P, "P σ_ζ ≥ ω(polylog d), P ≤ poly(d) (item 13)", "16"),
        ("sigma_zeta", noise_norm / math.sqrt(d), "σ_ζ = 1/(log^10 d √d) (item 11)",
         f"noise norm σ_ζ√d = {noise_norm} instead of 1/log^10 d = {L ** -10:.1e}"),
        ("m_coarse", m_coarse, "m = Θ(d^{2+2c0}) (Prop 1)", f"d^(2+2c0) = {paper_width(d, c0):.0f}; m·Q(τ) = lucky"),
        ("m_fine", m_fine, "m = Θ(d^{1+2c0}) per subclass (Prop 2)", f"d^(1+2c0) = {paper_width(d, c0, True):.0f}"),
        ("c_b_coarse", c_b_for_lucky(m_coarse, lucky, d), "4 + 2c0 (item 6)", f"paper {paper_c_b(c0):.2f}; ours from m·Q = {lucky}"),
        ("c_b_fine", c_b_for_lucky(m_fine, lucky, d), "2 + 2c0 (item 6)", f"paper {paper_c_b(c0, True):.2f}"),
        ("sigma0", sigma0, "σ0 ≤ O(1/(d³ s log d)) (item 14)", f"paper bound {1 / (d ** 3 * s * L):.1e}; only σ0 ≪ 1 matters with b ∝ σ0"),
        ("eta", eta, "η = Θ(σ0) (item 14)", f"η/σ0 = {eta / sigma0:.1f}"),
    ]
    return [{"parameter": a, "value": b, "paper condition": c, "note": e} for a, b, c, e in rows]
