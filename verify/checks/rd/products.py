"""RD checks (2/2): products of many layers — the Lyapunov ψ-law (Thm 5 / Eq 10), gradient explosion (Cor 1),
spectrum centralization (Thm 4, with its erratum) and MLP-50 (Fig 1 d–f).

Conventions as in :mod:`verify.checks.rd.rank`: a negative control standing for a realistic bug, a positive control
on data where the claim holds by construction, ``miss`` in tolerance units on every result, sizes from
``sims.rank_nets.rd_settings``. "For all L" claims are read at several depths and sizes.
"""
from __future__ import annotations

import numpy as np
from scipy import special

from sims import random_matrix as rm
from sims import rank_nets as nets
from theory import rank as R
from verify.checks.rd import _controls as C
from verify.checks.rd.rank import _fmt
from verify.registry import Result, check


# ----------------------------------------------------------------------------- Thm 5 / Eq 10, Cor 1

def _law_z(sums, cp, law, sd, trials):
    """max_k |mean_t S_k(L)/L − law_k| / (sd_k/√(L T)) at each depth L."""
    return [float(np.max(np.abs(sums[:, i, :].mean(0) / L - law) / (sd / np.sqrt(L * trials))))
            for i, L in enumerate(cp)]


@check(
    "rd.lyapunov_law", equation="Thm 5, Eq 10", kind="sim", tolerance="max_k z ≤ 5 for every n and every depth L",
    figures=("rd.lyapunov_spectrum",),
    tolerance_reason="after L Gaussian layers the Benettin estimate of λ_k has standard deviation ½√ψ'((n−k+1)/2)/√L "
                     "(per layer log R_kk = ½ log χ²_{n−k+1}); averaged over T trials, |mean − law| / (sd/√(LT)) ≤ 5 "
                     "for all k, at three depths (the limit is read at several L, not one) and several n",
    negative_control="bug: an off-by-one in k (k counted from 0), ½(log 2 + ψ((n−k+2)/2))",
    positive_control="the library's Benettin estimator (benettin_given: the same numba/LAPACK kernel as the claim's "
                     "benettin_sums) on layers O_l R_l O_{l−1}ᵀ, R_l the Bartlett factor of a Gaussian matrix "
                     "(R_kk = √χ²_{n−k+1}): its exponents are Σ_l log R_l,kk exactly, so the same z-test against "
                     "theory.rank.lyapunov_law must hold; and the library's law and sd must equal the closed form "
                     "½(log 2 + ψ((n−k+1)/2)), ½√ψ'((n−k+1)/2) written out in the check (|diff| ≤ 1e−12) and the "
                     "estimator's sums must equal the exact Σ log R_kk (≤ 1e−8 per layer); the ψ-law rank "
                     "(theory.rank.psi_law_rank, Eq 10 read at finite L) must equal #{k : L(m_k − m_1) ≥ log ε} "
                     "counted from that closed form at L = 1 … 500 and ε = 0.1, 1e−3, 1e−6 (0 mismatches: integer "
                     "counts of gaps at least 1e−6 from every threshold). A Benettin bug (e.g. "
                     "log R_kk² accumulated) or a wrong law fails the control: the check ends 'fail', never 'refuted'", cost=7,
)
def lyapunov_law(ctx, planted, positive=False):
    st = nets.rd_settings(ctx.quick)["lyap"]
    cp, T = np.asarray(st["checkpoints"]), st["trials"]
    exact_dev = law_dev = 0.0
    rank_dev = 0
    if positive:
        d, exact_dev = C.rotated_benettin_sums(st["ns"], cp, T, ctx.rng("bartlett"))
        for n in st["ns"]:
            m, s = C.lyap_closed_form(n)
            law_dev = max(law_dev, float(np.max(np.abs(R.lyapunov_law(n) - m))),
                          float(np.max(np.abs(R.lyapunov_law_sd(n) - s))))
            rank_dev += C.psi_rank_mismatches(n, m)
    else:
        guard = C.gaussian_layers_guard(st["ns"], "rd.lyapunov_law")
        d = rm.lyapunov_data(st["ns"], cp, T, seed=ctx.seed)
    worst, per = 0.0, {}
    for n in st["ns"]:
        sums = d[f"sums_{n}"]
        k = np.arange(1, n + 1)
        law = 0.5 * (np.log(2) + special.digamma((n - k + 2) / 2)) if planted else R.lyapunov_law(n)
        zs = _law_z(sums, cp, law, R.lyapunov_law_sd(n), T)
        worst = max(worst, max(zs))
        spec = sums[:, -1, :] / cp[-1]
        per[f"n={n}"] = {"max z at L = " + ", ".join(map(str, cp)): [_fmt(z, 2) for z in zs],
                         "λ_1 measured/law": [_fmt(spec.mean(0)[0], 4), _fmt(law[0], 4)],
                         "λ_n measured/law": [_fmt(spec.mean(0)[-1], 4), _fmt(law[-1], 4)],
                         "Eq 10 ratio k=n measured/law": [_fmt(np.exp(spec.mean(0)[-1] - spec.mean(0)[0]), 4),
                                                          _fmt(R.ratio_law(n)[-1], 4)],
                         "sd across trials × √L / predicted (k=1, k=n)":
                             [_fmt(spec[:, 0].std(ddof=1) * np.sqrt(cp[-1]) / R.lyapunov_law_sd(n)[0], 2),
                              _fmt(spec[:, -1].std(ddof=1) * np.sqrt(cp[-1]) / R.lyapunov_law_sd(n)[-1], 2)]}
    miss = worst / 5.0
    details = {"per n": per, "depths": cp.tolist(), "trials": T,
               "estimator": "Benettin QR recursion (numba + LAPACK), random initial frame, exponents in QR order"}
    if not positive:
        details["the library's Gaussian layers (first layers, pooled): N(0, 1) within 6 SE"] = guard
    if positive:
        miss = max(miss, law_dev / 1e-12, exact_dev / 1e-8, 2.0 * rank_dev)
        details["estimator"] = ("the library's Benettin kernel (benettin_given, Q_0 = I) on Bartlett layers "
                                "O_l R_l O_{l−1}ᵀ (positive control)")
        details["positive control: max |Benettin sum − Σ log R_kk| per layer (tol 1e-8)"] = exact_dev
        details["positive control: max |theory.rank law/sd − closed form| (tol 1e-12)"] = law_dev
        details["positive control: ψ-law ranks ≠ closed-form count (tol 0)"] = rank_dev
    finding = None
    if not (planted or positive) and miss > 1:
        w = max(per, key=lambda key: max(per[key]["max z at L = " + ", ".join(map(str, cp))]))
        finding = (f"The Benettin exponents of products of n×n N(0, 1) layers do not follow Thm 5's law "
                   f"½(log 2 + ψ((n−k+1)/2)): max z = {worst:.3g} (tolerance 5) over n = "
                   f"{', '.join(map(str, st['ns']))} and L = {', '.join(map(str, cp))}; worst at {w}: λ_1 measured/law "
                   f"{per[w]['λ_1 measured/law']}, λ_n measured/law {per[w]['λ_n measured/law']} ({T} trials).")
    return Result(measured=_fmt(worst, 2), expected="≤ 5", holds=bool(miss <= 1), miss=float(miss),
                  finding=finding, details=details)


@check(
    "rd.gradient_explosion", equation="Cor 1", kind="sim", tolerance="|log σ_1/L − rate| ≤ 5·sd/√(LT) + (log n + 3)/L",
    tolerance_reason="log σ_1 = Σ log R_11 + O(1): the sum has sd ½√ψ'(n/2)·√L, the gap to log‖J‖₂ is a finite "
                     "random variable of order log n (the overlap of the start vector with the top singular vector), "
                     "hence the (log n + 3)/L term; read at three depths and three sizes",
    negative_control="bug: an off-by-one in the Gamma argument, ½(log 2 + ψ((n+1)/2)) for ½(log 2 + ψ(n/2))",
    positive_control="n = 1: J_L⋯J_1 is a product of N(0,1) scalars, log σ_1 = Σ log|g_l| exactly, whose mean per "
                     "layer is the n = 1 rate ½(log 2 + ψ(½))",
)
def gradient_explosion(ctx, planted, positive=False):
    st = nets.rd_settings(ctx.quick)["top"]
    ns = [1] if positive else st["ns"]
    guard = C.gaussian_layers_guard(ns, "rd.gradient_explosion")
    d = rm.top_singular_data(ns, st["depths"], st["trials"], seed=ctx.seed)
    miss, per = 0.0, {}
    for n in ns:
        rate = 0.5 * (np.log(2) + special.digamma((n + 1) / 2)) if planted else R.gradient_explosion_rate(n)
        lt = d[f"log_top_{n}"]
        rows = []
        for j, L in enumerate(st["depths"]):
            meas = lt[:, j].mean() / L
            tol = 5 * R.lyapunov_law_sd(n)[0] / np.sqrt(L * st["trials"]) + (np.log(n) + 3) / L
            miss = max(miss, abs(meas - rate) / tol)
            rows.append({"L": L, "log σ_1 / L": _fmt(meas, 4), "rate": _fmt(rate, 4), "tol": _fmt(tol, 4),
                         "miss": _fmt(abs(meas - rate) / tol, 2)})
        per[f"n={n}"] = rows
    last = per[f"n={ns[-1]}"][-1]
    worst = max((row for rows in per.values() for row in rows), key=lambda row: row["miss"])
    finding = None
    if not (planted or positive) and miss > 1:
        where = next(k for k, rows in per.items() if worst in rows)
        finding = (f"Cor 1: log ‖J_L⋯J_1‖₂ / L does not approach ½(log 2 + ψ(n/2)): worst at {where}, L = {worst['L']}: "
                   f"{worst['log σ_1 / L']} vs rate {worst['rate']} (tolerance {worst['tol']}, miss {worst['miss']}; "
                   f"{st['trials']} trials).")
    return Result(measured=last["log σ_1 / L"], expected=last["rate"], holds=bool(miss <= 1), miss=float(miss),
                  finding=finding,
                  details={"per n": per, "trials": st["trials"],
                           "how": "exact log‖J_L⋯J_1‖₂ via a renormalised product (numba), the same layers as the "
                                  "Benettin recursion",
                           "the library's Gaussian layers (first layers, pooled): N(0, 1) within 6 SE": guard})


# ----------------------------------------------------------------------------- Thm 4

def _decay_fit(sums, cp):
    """Per k ≥ 2: rate μ_k of log(σ_k/σ_1) ≈ a − μ_k L, its z (spread of per-trial slopes), and the miss of
    'exponential decay' = max(4/z, 1/(μ_k L_max), SSE_linear/SSE_{a+b log L}), fitted over the depths where
    σ_k > 0 in every trial. Directions with σ_k = 0 at most depths count as decayed (exact collapse: ReLU masks,
    singular sparse or Rademacher layers); a trial whose whole product is 0 (σ_1 = 0, e.g. an all-zero ReLU
    mask) has every σ_k = 0 from then on. ``sums``: (trials, len(cp), n) log σ_k + O(1)."""
    s = -np.sort(-sums, axis=2)
    n, L = s.shape[2], cp.astype(float)
    dead = ~np.isfinite(s[:, :, 0])  # product annihilated
    rates, zs, misses, collapsed = {}, {}, {}, 0
    for k in range(1, n):
        with np.errstate(invalid="ignore"):
            lr = np.where(dead, -np.inf, s[:, :, k] - s[:, :, 0])
        fin = np.all(np.isfinite(lr), axis=0)
        if fin.sum() < 4:
            collapsed += 1
            continue
        x, y = L[fin], lr[:, fin].mean(0)
        A = np.vstack([np.ones_like(x), x]).T
        coef = np.linalg.lstsq(A, y, rcond=None)[0]
        slopes = np.array([np.polyfit(x, lr[t, fin], 1)[0] for t in range(lr.shape[0])])
        mu, se = -coef[1], slopes.std(ddof=1) / np.sqrt(len(slopes)) + 1e-300
        B = np.vstack([np.ones_like(x), np.log(x)]).T
        sse_lin = float(np.sum((A @ coef - y) ** 2))
        sse_pow = float(np.sum((B @ np.linalg.lstsq(B, y, rcond=None)[0] - y) ** 2)) + 1e-300
        rates[k + 1], zs[k + 1] = float(mu), float(mu / se)
        misses[k + 1] = max(4 / zs[k + 1] if zs[k + 1] > 0 else np.inf,
                            1 / (mu * x[-1]) if mu > 0 else np.inf, sse_lin / sse_pow)
    return {"annihilated trials": int(dead[:, -1].sum()), "rates": rates, "z": zs, "collapsed": collapsed,
            "miss": max(misses.values()) if misses else 0.0}


def _diagonal_products(n, cp, trials, rng):
    """Synthetic Benettin sums of products of diagonal layers with log|d_k| = −0.05(k−1) + 0.1·N(0, 1): exactly
    exponential separation with rates 0.05(k−1) (as sums, (trials, len(cp), n)); test data for :func:`_decay_fit`
    (the positive control runs the library's estimator on such layers: :func:`verify.checks.rd._controls.diagonal_layers`)."""
    steps = 0.1 * rng.standard_normal((trials, cp[-1], n)) - 0.05 * np.arange(n)
    return np.cumsum(steps, axis=1)[:, cp - 1, :]


THM4_ERRATUM = (
    "Thm 4 as stated (any law μ of the layer Jacobian with E log⁺‖J‖ < ∞) is false: Haar-orthogonal layers satisfy "
    "its hypotheses, yet every Lyapunov exponent is 0 and σ_k/‖J_F‖₂ = 1 at every depth (measured in each run, see "
    "details). The theorem needs a non-degeneracy condition giving a gap λ_1 > λ_2 (and λ_r > λ_{r+1} for its r): "
    "e.g. that the closed semigroup generated by the support of μ is strongly irreducible and contracting "
    "(Guivarc'h–Raugi 1985; Goldsheid–Margulis 1989 give a simple spectrum when it is Zariski-dense in GL(n)), which "
    "excludes laws supported on a compact group (O(n), c·O(n)) and holds for iid entries with a density. This check "
    "verifies the corrected form on laws that satisfy it.")


@check(
    "rd.general_centralization", equation="Thm 4, Eq 9", kind="sim",
    tolerance="Thm 4 as stated (every law μ meeting its hypotheses): each law, Haar orthogonal included, and size has "
              "k ≥ 2 with μ_k > 0 at z ≥ 4, μ_k·L_max ≥ 1 and log(σ_k/σ_1) linear in L (beats a+b log L); the "
              "corrected form (laws with a spectral gap) is its own verdict line",
    erratum=THM4_ERRATUM,
    tolerance_reason="Thm 4's quantifier is 'for every law μ' of the layer Jacobians (iid layers, equal widths, "
                     "E log⁺‖J‖ < ∞): one law meeting those conditions without decay refutes it as stated; the "
                     "Haar-orthogonal law meets them (measured in the regime block) and its decay is read the same way "
                     "(the e-folds over the run, ≥ 1 needed). Eq 9 says log(σ_k/σ_1) ≈ −μ_k L: we fit the Benettin log-ratios at 20 depths, require the "
                     "slope to be negative beyond 4 standard errors (spread of per-trial slopes), at least an e-fold "
                     "decay over the run (μ_k·L_max ≥ 1, so rounding-level slopes do not count) and the linear-in-L "
                     "model to beat a + b log L; exactly collapsed directions (σ_k = 0: ReLU masks, singular sparse or "
                     "Rademacher layers, or a product annihilated by an all-zero ReLU mask) count as decayed. Six iid entry laws (Gaussian, Rademacher, uniform, "
                     "Student-t₃, Cauchy, sparse Bernoulli(0.2)·Gaussian) and two structured ones (ReLU masks, "
                     "orthogonal × random diagonal), at two sizes n",
    negative_control="bug: σ_k/σ_1 read off the SVD of the (renormalised) explicit product instead of the Benettin "
                     "recursion, on the positive control's rotated diagonal layers (exactly exponential decay): the "
                     "ratios saturate at the float64 floor (~1e−16) and the decay seems to stop",
    positive_control="the library's Benettin kernel (benettin_given, the same kernel as the claim's benettin_sums) on "
                     "rotated diagonal layers O_l D_l O_{l−1}ᵀ with log d_k = −0.05(k−1) + 0.1·N(0, 1) (4 trials): exactly "
                     "exponential separation, rates 0.05(k−1), judged by the same fit; and the estimator's sums must "
                     "equal the exact Σ log d_k (≤ 1e−8 per layer). A Benettin bug fails the control ('fail')", cost=21,
)
def general_centralization(ctx, planted, positive=False):
    st = nets.rd_settings(ctx.quick)["cent"]
    cp = np.asarray(st["checkpoints"])
    laws = list(rm.IID_LAWS) + ["relu", "orthogonal_diag"]
    exact_dev = 0.0
    if positive or planted:
        # 4 trials (quick: min z 16.5, miss 0.24; 16 trials: 0.09 at four times the benettin_given calls, +2 s)
        raw, exact_dev = C.rotated_benettin_sums(st["ns"], cp, 4, ctx.rng("diagonal"), C.diagonal_layers,
                                                 explicit=planted)
        d = {f"{k}_diagonal": v for k, v in raw.items()}
        laws = ["diagonal"]
    else:
        d = rm.centralization_data(st["ns"], cp, laws, st["trials"], seed=ctx.seed, explicit=planted)
    miss, per = 0.0, {}
    for n in st["ns"]:
        for law in laws:
            f = _decay_fit(d[f"sums_{n}_{law}"], cp)
            miss = max(miss, f["miss"])
            ks = sorted(f["rates"])
            show = sorted(set(ks[:1] + ks[len(ks) // 2:len(ks) // 2 + 1] + ks[-1:]))
            per[f"{law}, n={n}"] = {"exponential": bool(f["miss"] <= 1), "miss": _fmt(f["miss"], 3),
                                    "μ_k (k=" + ", ".join(map(str, show)) + ")": [_fmt(f["rates"][k], 5) for k in show],
                                    "min z": _fmt(min(f["z"].values()), 1) if f["z"] else None,
                                    "k collapsed exactly (σ_k = 0)": f["collapsed"],
                                    "trials with σ_1 = 0 at L_max (product annihilated)": f["annihilated trials"]}
    finding, regime, readings, undecided = None, None, None, None
    details = {"per law and size": per, "ns": st["ns"], "depths": f"{cp[0]}..{cp[-1]}",
               "trials": st["trials"], "sparse p": rm.SPARSE_P}
    if positive:
        miss = max(miss, exact_dev / 1e-8)
        details["positive control: max |Benettin sum − Σ log d_k| per layer (tol 1e-8)"] = exact_dev
    if not (planted or positive):  # the counterexample (deterministic: 2 trials suffice)
        o = rm.centralization_data(st["ns"], cp, ["orthogonal"], 2, seed=ctx.seed)
        dev = max(float(np.max(np.abs(o[f"sums_{n}_orthogonal"] - o[f"sums_{n}_orthogonal"][:, :, :1])))
                  for n in st["ns"])
        details["counterexample to Thm 4 as stated: Haar orthogonal, max |log σ_k/σ_1| over k, L, trials"] = dev
        sens, survives = C.thm4_sensitivity(st, cp)
        details["sensitivity"] = sens
        corrected = float(miss)
        # Eq 9 needs at least one e-fold of decay of σ_n/σ_1 over the run; the law gives `dev` of them
        counter_miss = 1.0 / max(dev, 1e-15)
        regime = {"Haar-orthogonal layers meet Thm 4's hypotheses: equal widths n → n, iid layers, "
                  "E log⁺‖J‖₂ = 0 < ∞": {"measured": "‖J‖₂ = 1 for every layer (orthogonal)", "holds": True}}
        readings = {"corrected form: laws with a spectral gap (iid entries with a density, ReLU masks, orthogonal × "
                    "random diagonal; erratum)": {"quantifier": "for every non-degenerate law", "holds": corrected <= 1,
                                                 "measured": f"worst miss {corrected:.3g} over {len(laws)} laws"}}
        miss = max(miss, counter_miss)
        if not survives:
            undecided = "the orthogonal counterexample does not survive every re-run choice (details: sensitivity)"
        finding = (f"Thm 4 as stated is refuted: Haar-orthogonal layers satisfy its hypotheses but max |log σ_k/σ_1| "
                   f"= {dev:.1e} over every k ≥ 2, depth ≤ {cp[-1]} and trial (n = {', '.join(map(str, st['ns']))}): "
                   f"no decay at all (miss {counter_miss:.3g}). The corrected form (a law with a spectral gap, see "
                   f"the erratum) {'holds' if corrected <= 1 else 'does NOT hold'} on the other {len(laws)} laws, "
                   f"worst miss {corrected:.3g}. The counterexample "
                   + ("survives every choice re-run (size, depth, scale, estimator; details: sensitivity): a finding "
                      "about the theorem, not about our choices." if survives else
                      "does NOT survive every choice re-run (details: sensitivity)."))
    measured = {k: v["exponential"] for k, v in per.items()}
    if regime is not None:
        measured["orthogonal (the counterexample)"] = bool(counter_miss <= 1)
    return Result(measured=measured, expected="all True", holds=bool(miss <= 1), miss=float(miss), finding=finding,
                  details=details, regime=regime, readings=readings, undecided=undecided)


# ----------------------------------------------------------------------------- Fig 1 d–f

def _exponential_test(L, m, n, windows=(10, 25, 50)):
    """RD Fig 1's 'exponential law' on a mean rank curve m(L): the local decay rate −Δ log m/ΔL over L a→b
    and over b→c (``windows`` = (a, b, c), default 10→25 vs 25→50; log m interpolated on every integer depth)
    must agree within 25 % and m(c)/n < ½. Returns (ratio, fall, miss, (early, late)) with
    miss = max(|log ratio|/log 1.25, fall/0.5); a flat curve has ratio 1."""
    a0, b0, c0 = windows
    use = m > 0
    grid = np.arange(1.0, L[use].max() + 1)
    y = np.interp(grid, L[use], np.log(m[use]))
    lr = lambda a, b: float((np.interp(a, grid, y) - np.interp(b, grid, y)) / (b - a))  # noqa: E731
    early, late = lr(a0, b0), lr(b0, c0)
    if early == 0 and late == 0:
        ratio = 1.0
    else:
        ratio = late / early if early > 0 and late > 0 else float("nan")
    fall = float(np.exp(np.interp(c0, grid, y)) / n)
    rmiss = abs(np.log(ratio)) / np.log(1.25) if np.isfinite(ratio) else float("inf")
    return ratio, fall, float(max(rmiss, fall / 0.5)), (early, late)


def _fit_forms(L, m):
    """Least-squares fits of log m on every integer depth: exponential a − bL and power a − b log L (SSE each)."""
    use = m > 0
    grid = np.arange(1.0, L[use].max() + 1)
    y = np.interp(grid, L[use], np.log(m[use]))
    A, B = np.vstack([np.ones_like(grid), grid]).T, np.vstack([np.ones_like(grid), np.log(grid)]).T
    ce, cpw = np.linalg.lstsq(A, y, rcond=None)[0], np.linalg.lstsq(B, y, rcond=None)[0]
    return -ce[1], float(np.sum((A @ ce - y) ** 2)), -cpw[1], float(np.sum((B @ cpw - y) ** 2))


def _mlp_curves(d):
    """Mean rank curves over the depths every draw reached (a draw stopped by the stop rule or by float32 overflow
    has −1 after its stop)."""
    L = np.asarray(d["depths"], dtype=float)
    jr, fr = np.asarray(d["jac_rank"], dtype=float), np.asarray(d["feat_dim"], dtype=float)
    keep = np.all(jr >= 0, axis=0) & np.all(fr >= 0, axis=0)
    return L[keep], jr[:, keep].mean(0), fr[:, keep].mean(0)


def _mlp_verdict(d, n, windows=None):
    """Per curve ("jac", "feat"): (exponential?, rate ratio, rank(L_end)/n, shape miss |log ratio|/log 1.25) with
    windows that scale with the deepest depth every draw reached, L_end/5 → L_end/2 → L_end (10 → 25 → 50 for the
    full curve); and the windows. Exponential: shape miss ≤ 1 and rank(L_end) < 0.9 n."""
    L, mj, mf = _mlp_curves(d)
    end = float(L.max())
    w = windows or (end / 5, end / 2, end)
    out = {}
    for k, m in (("jac", mj), ("feat", mf)):
        ratio, fall, _, _ = _exponential_test(L, m, n, w)
        # the shape alone: a truncated curve (stop rule, overflow, short horizon) has not had room to fall below
        # n/2, so the check's fall condition is replaced by "it falls at all" (below 0.9 n)
        shape = abs(np.log(ratio)) / np.log(1.25) if np.isfinite(ratio) and ratio > 0 else float("inf")
        out[k] = (bool(shape <= 1 and fall < 0.9), _fmt(ratio, 3), _fmt(fall, 3), _fmt(shape, 3))
    return out, w


def _mlp_sensitivity(ctx, st, d_main):
    """Move each modelling choice the paper leaves open (or states only as 'Gaussian') towards the paper's side and
    re-run: returns (rows, survives) with survives = {"jac": bool, "feat": bool}: whether 'not exponential' holds in
    every row, per curve. Rows are measured in this run, at the quick size (n = 200, cached) except the width and
    horizon rows, which use the run's own curves where they can."""
    n = st["n"]
    sm = nets.rd_settings(True)["mlp"]
    base = dict(n=sm["n"], depth=sm["depth"], draws=sm["draws"], samples=sm["samples"], depths=sm["depths"],
                seed=ctx.seed)
    rows, ok = {}, {"jac": True, "feat": True}

    def row(label, d, nn, windows=None):
        v, w = _mlp_verdict(d, nn, windows)
        stop = sorted({int(s) for s in d["stop"] if s <= st["depth"]})
        parts = []
        for k, name in (("jac", "Jacobian"), ("feat", "features")):
            exp_, ratio, fall, miss = v[k]
            parts.append(f"{name} {'exponential' if exp_ else 'NOT exponential'} (rate ratio {ratio}, shape miss "
                         f"{miss}, rank/n at the end {fall})")
            ok[k] &= not exp_
        rows[label] = ("; ".join(parts) + f"; windows {w[0]:.3g}→{w[1]:.3g}→{w[2]:.3g}"
                       + (f"; draws stopped at L = {stop}" if stop else ""))

    if n == sm["n"]:
        row(f"width n = 400 (ours {n}; paper 1000)", nets.mlp50_decay(**{**base, "n": 400, "samples": 800}), 400)
    else:
        row(f"width n = {sm['n']} (ours {n} = the paper's)", nets.mlp50_decay(**base), sm["n"])
    row(f"horizon: windows over L ≤ 25 only (5→12.5→25; ours 10→25→50), n = {n}", d_main, n, (5, 12.5, 25))
    nb = base["n"]
    row(f"weights U(±1/√n), PyTorch's nn.Linear default (paper: 'Gaussian'); the stop rule ends the curve; n = {nb}",
        nets.mlp50_decay(**base, init="uniform"), nb)
    row(f"weights N(0, 1), Thm 5's literal 'standard Gaussian': float32 overflow ends the curve; n = {nb}",
        nets.mlp50_decay(**base, init="standard"), nb)
    row(f"inputs uniform ±√3 (paper: Gaussian); n = {nb}", nets.mlp50_decay(**base, input_law="uniform"), nb)
    row(f"samples = n (ours 2n; paper: not stated); n = {nb}", nets.mlp50_decay(**{**base, "samples": nb}), nb)
    for es in (0.1, 10.0):
        row(f"ε = {es:g} × float32 rule (paper: 1 ×); n = {nb}", nets.mlp50_decay(**base, eps_scale=es), nb)
    return rows, ok


#: ranks of the library and of the float64-SVD reference may differ by values within rounding of the threshold
#: (the library's float32 Gram against an SVD: ~1e−7 relative against ε = 1.19e−7·n) — a couple of values at most
MLP_REF_SLACK = 2


@check(
    "rd.mlp50_decay", equation="Fig 1 d–f, Thm 5", kind="sim",
    tolerance="local decay rate per layer constant within 25% (L 10→25 vs 25→50) and rank(50) < n/2",
    figures=("rd.fig1_mlp50",),
    tolerance_reason="an exponential n·C^L has a constant decay rate −Δlog rank/ΔL; we compare the rate over L 10→25 "
                     "with the rate over 25→50 (mean of three weight draws, both curves) and allow 25% (a power L^-b "
                     "gives a ratio of 0.45). We also fit log rank = a − bL and a − b log L over every depth 1..50 "
                     "(interpolated) and report which is closer, but that comparison flips with the seed at n = 200",
    negative_control="bug: orthogonal initialisation (nn.init.orthogonal_) in place of the paper's Gaussian weights: "
                     "a rank-preserving product, which must not be classified as an exponential fall",
    positive_control="synthetic curves with the measured endpoints rank(1), rank(50): n·C^L must be classified "
                     "exponential and a power law a·L^−b must not; and (before any reading) the library's ranks of draw "
                     "0 at L = 1, 10, 50 must equal a recount from float64 SVDs of the same J_L and features within 2 "
                     "(else the check fails)", cost=35,
)
def mlp50_decay(ctx, planted, positive=False):
    st = nets.rd_settings(ctx.quick)["mlp"]
    if planted:  # the control is cheap: the same measurement and comparison at the quick size
        st = nets.rd_settings(True)["mlp"]
    d = nets.mlp50_decay(st["n"], st["depth"], st["draws"], st["samples"], st["depths"], orthogonal=planted,
                         seed=ctx.seed)
    L, n = np.asarray(d["depths"], dtype=float), st["n"]
    if positive:
        m = np.asarray(d["jac_rank"], dtype=float).mean(0)
        m1, mL = m[0], m[-1]
        curves = {"exponential": np.round(m1 * (mL / m1) ** ((L - 1) / (L[-1] - 1))),
                  "power": np.round(m1 * L ** (np.log(mL / m1) / np.log(L[-1])))}
        res = {k: _exponential_test(L, c, n) for k, c in curves.items()}
        miss = max(res["exponential"][2], 1 / res["power"][2])
        return Result(measured={k: _fmt(v[0], 3) for k, v in res.items()},
                      expected="exponential: ratio within 1 ± 25 %; power: outside", holds=bool(miss <= 1), miss=miss,
                      details={k: {"rate ratio": _fmt(v[0], 3), "fall": _fmt(v[1], 3), "exponential-test miss":
                                   _fmt(v[2], 3)} for k, v in res.items()})
    miss, fits = 0.0, {}
    ref_rows, ref_dev = {}, 0
    if not planted:  # the library's ranks of draw 0 against an independent count (SVDs in float64) at three depths
        at = [v for v in (1, 10, 50) if v in list(d["depths"])]
        ref = C.mlp50_reference(n, st["depth"], st["samples"], at, ctx.seed, d["eps"])
        for v in at:
            c = list(d["depths"]).index(v)
            lib = (int(d["jac_rank"][0, c]), int(d["feat_dim"][0, c]))
            ref_dev = max(ref_dev, abs(lib[0] - ref[v][0]), abs(lib[1] - ref[v][1]))
            ref_rows[f"L={v}"] = {"library (Jacobian, features)": list(lib), "reference": list(ref[v])}
        if ref_dev > MLP_REF_SLACK:  # a library slip, not a finding about the paper: the check fails
            raise ValueError(f"rd.mlp50_decay: the library's ranks of draw 0 differ from a float64-SVD recount by "
                             f"{ref_dev} (allowed {MLP_REF_SLACK}): {ref_rows}")
    for key in ("jac_rank", "feat_dim"):
        m = np.asarray(d[key], dtype=float).mean(0)
        ratio, fall, mk, (early, late) = _exponential_test(L, m, n)
        miss = max(miss, mk)
        be, se, bp, sp = _fit_forms(L, m)
        pred = R.psi_law_rank(n, L, d["eps"] if key == "jac_rank" else np.sqrt(d["eps"]))
        fits[key] = {"rank at L=1, 10, 50 (mean of draws)": [_fmt(m[list(L).index(v)], 1) for v in (1, 10, 50) if v in L],
                     "ψ-law prediction at L=1, 10, 50": [int(pred[list(L).index(v)]) for v in (1, 10, 50) if v in L],
                     "max |measured − ψ-law| / ψ-law": _fmt(np.max(np.abs(m - pred) / pred), 3),
                     "exponential fit: rate per layer, SSE(log)": [_fmt(be, 4), _fmt(se, 4)],
                     "power fit: exponent, SSE(log)": [_fmt(bp, 3), _fmt(sp, 4)],
                     "better fit": "exponential" if se < sp else "power law",
                     "local decay rate per layer, L 10→25 vs 25→50": [_fmt(early, 4), _fmt(late, 4)],
                     "late/early rate ratio (exponential 1, L^-b 0.45)": _fmt(ratio, 3),
                     "rank(L_max)/n": _fmt(fall, 3), "miss": _fmt(mk, 3)}
    grid = np.arange(1.0, L.max() + 1)
    psi = R.psi_law_rank(n, grid, d["eps"]).astype(float)
    pr = _exponential_test(grid, psi, n)[0]
    fits["ψ-law Jacobian curve: late/early rate ratio"] = _fmt(pr, 3)
    finding, sens, survives = None, None, None
    if not planted:
        sens, survives = _mlp_sensitivity(ctx, st, d)
    if miss > 1 and not planted:
        fj, ff = fits["jac_rank"], fits["feat_dim"]
        finding = (f"MLP-{st['depth']} of width {n}: the fall is not exponential. The decay rate per layer drops from "
                   f"L 10→25 to 25→50 by a factor {fj['late/early rate ratio (exponential 1, L^-b 0.45)']} (Jacobian "
                   f"rank, {fj['local decay rate per layer, L 10→25 vs 25→50']}) and "
                   f"{ff['late/early rate ratio (exponential 1, L^-b 0.45)']} (feature dimension, "
                   f"{ff['local decay rate per layer, L 10→25 vs 25→50']}), where an exponential keeps it at 1 and a "
                   f"power of L gives 0.45: the curves lie between the two forms (least squares: Jacobian "
                   f"{fj['better fit']}, features {ff['better fit']}). The ψ-law rank curve itself (same ε) has rate "
                   f"ratio {fits['ψ-law Jacobian curve: late/early rate ratio']}: with ε fixed, Rank_ε ≈ "
                   "#{k : ψ((n−k+1)/2) − ψ(n/2) ≥ 2 log ε / L} ≈ n(1 − ε^(2/L)) → 2n|log ε|/L, a power of L once "
                   "L ≫ 2|log ε|: Thm 5's exponential is in σ_k/σ_1, not in the rank at a fixed tolerance. Measured "
                   f"at L = 1, 10, 50: Jacobian {fj['rank at L=1, 10, 50 (mean of draws)']} vs ψ-law "
                   f"{fj['ψ-law prediction at L=1, 10, 50']}; the asymptotic law drops the O(1) offsets of log σ_k "
                   f"(at L = 1 it puts σ_n/σ_1 at {np.exp(R.lyapunov_law(n)[-1] - R.lyapunov_law(n)[0]):.3g}, while a "
                   f"square Gaussian matrix has σ_n/σ_1 ≈ 1/(2n) = {1 / (2 * n):.2g}). The positive control shows the "
                   "test classifies a synthetic exponential with the same endpoints as exponential. "
                   + " ".join(f"{name}: 'not exponential' "
                              + ("survives every modelling choice re-run (details: sensitivity), a finding about the "
                                 "paper's claim." if survives[k] else
                                 "does NOT survive every modelling choice re-run (details: sensitivity), a finding "
                                 "about the choices, not about the paper.")
                              for k, name in (("jac", "Jacobian rank"), ("feat", "Feature dimension"))))
    undecided = None
    failing = [k for k, f in (("jac", "jac_rank"), ("feat", "feat_dim")) if float(fits[f]["miss"]) > 1]
    if failing and survives is not None and not any(survives[k] for k in failing):
        # RD: exponential "for both rank of Jacobian and intrinsic dimensions": a curve refutes only where its
        # 'not exponential' survives every choice the paper leaves open; none does here
        undecided = ("'not exponential' does not survive the modelling choices re-run for any curve that misses ("
                     + ", ".join({"jac": "Jacobian rank", "feat": "feature dimension"}[k] for k in failing)
                     + "; details: sensitivity): a finding about those choices, not a refutation")
    regime = None if planted else {
        "MLP-50: 50 dense layers of 1000 units, Gaussian weights and inputs (RD Fig 1 d–f)":
            {"measured": f"{st['depth']} layers of {n} units, N(0, 1/n) weights, Gaussian inputs",
             "holds": bool(n == 1000 and st["depth"] == 50)}}
    return Result(measured={k: fits[k]["late/early rate ratio (exponential 1, L^-b 0.45)"] for k in ("jac_rank", "feat_dim")},
                  expected="rate ratio 1 ± 25 %, rank(50)/n < ½", holds=bool(miss <= 1), miss=float(miss),
                  finding=finding, regime=regime, undecided=undecided,
                  details={"fits": fits, "n": n, "depths": [int(v) for v in L], "draws": st["draws"],
                           "inputs": st["samples"], "weights": "orthogonal (control)" if planted else "N(0, 1/n), float32",
                           "stop rule (max|J| < 1.19e-7) triggered at": [int(v) if v <= st["depth"] else None for v in d["stop"]],
                           **({"draw 0 recounted (float64 SVDs; ≤ 2 apart)": ref_rows} if ref_rows else {}),
                           **({"sensitivity": sens} if sens is not None else {})})
