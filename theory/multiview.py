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


def paper_regime(d: int, s: float) -> dict:
    """The data parameters the paper's assumptions fix at this d (FG B.3, constants set to 1): the feature-noise
    coefficient α′ ∈ [ι_lower, ι_upper] with ι_lower = 1/log⁴ d (item 8's lower edge) and s·ι_upper = 1/log d
    (item 8's upper edge), and the hard sample's big-noise norm ‖ζ*‖ = σ_ζ*√d = log d: the smallest polylog that
    exceeds the initial threshold √(c_b log d) for c_b ≤ log d, so that untrained neurons fire on ζ* (Lemma E.8,
    Eq 117: ⟨w⁽⁰⁾, ζ*⟩ ≥ Ω(σ₀ σ_ζ* √d) ≥ Ω(σ₀ polylog d) ≥ Ω(σ₀ √log d)).

    Item 12 (garbled: "σ_ζ* ∈ [ω(polylog d), O(1/polylog d)]") read as σ_ζ*√d ∈ [ω(polylog d), O(√d/polylog d)];
    that window is empty at d ≤ 10⁴ (log d > √d / log d), so only its lower edge, the one Lemma E.8 uses, is kept.
    """
    d = check_int(d, "d", 3)
    check_positive(s, "s")
    L = math.log(d)
    return {"iota_lower": 1.0 / L ** 4, "iota_upper": 1.0 / (s * L), "hard_noise_norm": L}


def _sig(x: float, digits: int = 4) -> float:
    """x rounded to significant digits (σ0-sized values would round to 0 at a fixed number of decimals)."""
    return float(f"{x:.{digits}g}")


def _row(name, value, condition, bound, inside):
    return {"parameter": name, "value": value, "paper condition (B.3)": condition, "paper value at this d": bound,
            "inside": inside}


def regime_table(d: int, P: int, s: float, k: int, m_coarse: int, m_fine: int, lucky: float,
                 noise_norm: float, sigma0: float, eta: float, c0: float = 0.05, *, c_b_coarse: float | None = None,
                 c_b_fine: float | None = None, iota: float = 0.1, iota_lower: float | None = None,
                 iota_upper: float | None = None, hard_noise_norm: float | None = None, steps: int | None = None,
                 batch: int | None = None, counts: str | None = None) -> list[dict]:
    """The paper's conditions (FG B.3) next to our values, one row per parameter, and whether each value is inside
    the paper's assumption (``inside``: True / False; 'n/a' where the paper fixes no number at finite d).

    Constants hidden in O(·)/Θ(·) are set to 1 and polylog(d) read as log d; c_b given (or from m·Q = lucky)."""
    d, P, k = check_int(d, "d", 2), check_int(P, "P", 1), check_int(k, "k", 1)
    s, lucky, eta = check_positive(s, "s"), check_real(lucky, "lucky"), check_real(eta, "eta")
    noise_norm, sigma0 = check_tolerance(noise_norm, "noise_norm"), check_positive(sigma0, "sigma0")
    L = math.log(d)
    cbc = c_b_coarse if c_b_coarse is not None else c_b_for_lucky(m_coarse, lucky, d)
    cbf = c_b_fine if c_b_fine is not None else c_b_for_lucky(m_fine, lucky, d)
    wc, wf = paper_width(d, c0), paper_width(d, c0, True)
    rows = [
        _row("d", d, "sufficiently large (item 1)", "—", "n/a"),
        _row("P", P, "P σ_ζ ≥ ω(polylog d), P ≤ poly(d) (item 13)", f"P σ_ζ = {P * noise_norm / math.sqrt(d):.2g} vs "
             f"log d = {L:.2f}", P * noise_norm / math.sqrt(d) >= L),
        _row("s", s, "s ≥ polylog(d), degree > 15 (item 10)", f"log^15 d = {L ** 15:.1e}", s >= L ** 15),
        _row("k", k, "polylog(d) ≤ k ≤ d^0.4 and k ≥ s·log⁵ d (item 4: k bounded below by a polylog of high "
             "degree)", f"[max({L:.2f}, s·log⁵ d = {s * L ** 5:.0f}), {d ** 0.4:.2f}]",
             L <= k <= d ** 0.4 and k >= s * L ** 5),
        _row("m_coarse", m_coarse, "Θ(d^{2+2c0}) (Prop 1; Θ read as one decade each way)", f"{wc:.0f}",
             0.1 * wc <= m_coarse <= 10 * wc),
        _row("m_fine", m_fine, "Θ(d^{1+2c0}) per subclass (Prop 2; one decade each way)", f"{wf:.0f}",
             0.1 * wf <= m_fine <= 10 * wf),
        _row("c_b_coarse", round(cbc, 3), "4 + 2c0 (item 6); bias b⁽⁰⁾ = −σ0 √(c_b log d)",
             f"{paper_c_b(c0):.2f}", abs(cbc - paper_c_b(c0)) < 1e-9),
        _row("c_b_fine", round(cbf, 3), "2 + 2c0 (item 6)", f"{paper_c_b(c0, True):.2f}",
             abs(cbf - paper_c_b(c0, True)) < 1e-9),
        _row("bias b⁽⁰⁾ (coarse)", _sig(-sigma0 * bias_threshold(cbc, d)), "−σ0 √(c_b log d)",
             f"{-sigma0 * bias_threshold(paper_c_b(c0), d):.4g}", abs(cbc - paper_c_b(c0)) < 1e-9),
        _row("sigma0", sigma0, "σ0 ≤ O(1/(d³ s log d)) (item 14)", f"{1 / (d ** 3 * s * L):.1e}",
             sigma0 <= 1 / (d ** 3 * s * L)),
        _row("eta", eta, "η = Θ(σ0) (item 14)", f"η/σ0 = {eta / sigma0:.2g}", 0.1 <= eta / sigma0 <= 10),
        _row("iota", iota, "0 ≤ ι ≤ 1/polylog(d) (item 7)", f"{1 / L:.3f}", iota <= 1 / L),
        _row("noise norm σ_ζ√d", noise_norm, "σ_ζ = 1/(log^10 d √d) (item 11)", f"{L ** -10:.1e}",
             noise_norm <= 1.5 * L ** -10),
    ]
    # lucky neurons per feature: ours from (m, c_b), the paper's from its own pair m = d^{2+2c0}, c_b = 4 + 2c0
    ours_lucky = m_coarse * float(gaussian_tail(bias_threshold(cbc, d)))
    paper_lucky = wc * float(gaussian_tail(bias_threshold(paper_c_b(c0), d)))
    rows.append(_row("lucky neurons per feature (coarse)", round(ours_lucky, 2),
                     "m·Q(√(c_b log d)) at the paper's pair m = d^{2+2c0}, c_b = 4 + 2c0 (Prop 1; one decade each way)",
                     f"{paper_lucky:.2g}", 0.1 * paper_lucky <= ours_lucky <= 10 * paper_lucky))
    if counts is not None:
        share = (1 - s / P) ** P if counts == "binomial" else 0.0
        rows.append(_row("patch-count law", counts, "s ≥ polylog(d) (item 10): counts concentrate, |P(X; v)| = "
                         "(1 ± s^{-1/3}) s w.p. 1 − e^{−Ω(log² d)} (Eq 213)", "concentrated (exact at this s)",
                         counts == "exact"))
        rows.append(_row("easy samples with no common patch", f"{share:.3%}", "e^{−Ω(log² d)} (Eq 213)",
                         f"e^(−log² d) = {math.exp(-L * L):.1e}", share <= math.exp(-L * L)))
    if iota_lower is not None and iota_upper is not None:
        rows.append(_row("α′ lower ι_lower", iota_lower, "ι_lower ≥ 1/log⁴ d (item 8)", f"{L ** -4:.4f}",
                         iota_lower >= L ** -4 * (1 - 1e-9)))
        rows.append(_row("α′ upper: s·ι_upper", round(s * iota_upper, 4), "s·ι_upper ≤ O(1/log d) (item 8)",
                         f"{1 / L:.3f}", s * iota_upper <= (1 + 1e-9) / L))
        rows.append(_row("α′·k (mean α′ times k)", round((iota_lower + iota_upper) / 2 * k, 3),
                         "of order log d (Lemma E.8's argument; one decade each way)", f"log d = {L:.2f}",
                         0.1 * L <= (iota_lower + iota_upper) / 2 * k <= 10 * L))
    if hard_noise_norm is not None:
        rows.append(_row("big noise σ_ζ*√d", hard_noise_norm, "σ_ζ*√d ≥ ω(polylog d) (item 12, Eq 117)",
                         f"log d = {L:.2f}", hard_noise_norm >= L * (1 - 1e-9)))
        rows.append(_row("big noise per coordinate σ_ζ*", round(hard_noise_norm / math.sqrt(d), 4),
                         "σ_ζ* ≤ O(1/polylog d) (item 12's upper edge)", f"1/log d = {1 / L:.3f}",
                         hard_noise_norm / math.sqrt(d) <= 1 / L))
    if steps is not None:
        rows.append(_row("steps", steps, "T ≤ poly(d) (Thm 5.1, 5.2)", "—", "n/a"))
    if batch is not None:
        rows.append(_row("batch N", batch, "N ∈ (Ω(polylog(d) k d), poly(d)) (item 15)", f"k d log d = {k * d * L:.0f}",
                         batch >= k * d * L))
    return rows
