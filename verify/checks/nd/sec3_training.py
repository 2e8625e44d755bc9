"""ND Sec 3.2 (new categories through neural dependencies) on a small MLP trained here on a generated ≥ 100-class
Gaussian mixture (sims.dependency_training); Sec 3.3's regulariser on the same task and f_baseline (trained once per
(sizes, seed), cached) is verify/checks/nd/sec3_regularizer.py.

nd.new_categories judges Tab 4's gain (+1.7 to +2.2 pp within the new classes) by a one-sided t-test of H0: Δ ≥ 1.7 pp
over the mean of five independent runs (the paper's count) and its power (TAB4_RULE). A second line runs on trained
CNNs (glyph suite: f_base ``lenet-base-s<seed>`` on 900 code points, f_baseline ``lenet-s<seed>`` on 1000; one pair,
so it reports rather than refutes). One status from the two lines (:func:`_combine`); the synthetic line's refutation
counts only inside ND's stated setting (TAB4_REGIME: ≥ 900 base classes of a large-scale task), measured.
"""
from __future__ import annotations

import math

import numpy as np

from sims.dependency_training import new_categories_result, standard_sizes as sizes
from verify.checks._shared import glyph_preps as gp
from verify.checks._shared.library_pins import clustered_se_pinned
from verify.registry import Result, check

MARGIN_PP = 1.0  # allowed accuracy loss in percentage points, before the sampling allowance
SE_UNITS = 2.0  # sampling allowance: this many standard errors of the accuracy difference

# ---- Tab 4, fixed from the paper and convention before the runs were looked at (see docs/nd_training.md) ----
TAB4_GAIN_PP = 1.7  # H0 boundary: Tab 4's smaller gain within the new classes (Swin-T 72.47 − 70.73 = +1.74 pp)
TAB4_PLANTED_PP = 2.19  # the positive control's planted gain: Tab 4's ResNet-50 (71.06 − 68.87)
ALPHA = 0.05  # one-sided level of the test of H0: Δ_new ≥ TAB4_GAIN_PP
POWER_MIN = 0.80  # below this power to tell +1.7 pp from 0 the sample "cannot tell": reported, not judged
#: Tab 4's decision rule, once: the tolerance text is written from it and gain_test applies it (tests hold them together)
TAB4_RULE = (("H0 rejected at α", "refuted"), (f"H0 not rejected, power ≥ {POWER_MIN:g}", "holds"),
             (f"H0 not rejected, power < {POWER_MIN:g}", "cannot tell"))
TAB4_RULE_TEXT = "; ".join(f"{case} → {verdict}" for case, verdict in TAB4_RULE) + \
    " (a rejection at level α stands whatever the power; the power decides only what a non-rejection means)"
#: Independent runs per replication (each: a new task draw, f_base, Θ and f_baseline from its own seed): full, the
#: paper's five; quick, eight smaller runs, so that the test-set noise alone leaves a power ≥ 0.95 in both modes.
RUNS = {True: 8, False: 5}


def pooled_gap(deltas, ses) -> dict:
    """The mean of per-run differences ``deltas`` (equal weights: the paper's "mean of five runs") and its SE.

    SE² = max(s², mean SE_r²)/R: the runs' own spread s (which holds the training variance), floored by what
    their test sets alone explain (mean SE_r², SE_r the paired per-sample SE of run r), so that R runs that happen
    to agree cannot claim more precision than their test sets allow. ``df`` = R − 1 for the t-test.
    """
    d = np.asarray(deltas, dtype=float)
    s = np.asarray(ses, dtype=float)
    if d.shape != s.shape or d.ndim != 1 or len(d) < 2:
        raise ValueError(f"pooled_gap: need ≥ 2 runs with one SE each, got {d.shape} and {s.shape}")
    if not (np.all(np.isfinite(d)) and np.all(np.isfinite(s)) and np.all(s > 0)):
        raise ValueError("pooled_gap: differences must be finite and standard errors finite and > 0")
    n = len(d)
    sd = float(d.std(ddof=1))
    within = float(np.sqrt(np.mean(s**2)))
    return {"mean": float(d.mean()), "se": max(sd, within) / math.sqrt(n), "sd": sd, "within": within, "runs": n,
            "df": n - 1, "spread": "between-run SD" if sd > within else "test-set SE"}


def gain_test(mean: float, se: float, df: int, claim: float = TAB4_GAIN_PP) -> dict:
    """One-sided t-test (``df`` degrees of freedom) of H0: Δ ≥ ``claim`` (pp) against H1: Δ < claim, and its power.

    ``power``: the probability that the test rejects H0 when f_all is level (Δ = 0), i.e. the power to tell a gain
    of ``claim`` from none with this SE (noncentral t, noncentrality claim/SE). Verdict: ``refuted`` (rejected at
    ALPHA, whatever the power), ``cannot tell`` (not rejected, power < POWER_MIN), ``holds`` (not rejected with
    adequate power). Misses in tolerance units: ``miss_reject`` = (claim − Δ)/(t_α·SE) (> 1: rejected) and
    ``miss_power`` = (1 − power)/(1 − POWER_MIN) (> 1: power below POWER_MIN). ``mde``: the smallest gain the test
    detects with power POWER_MIN.
    """
    from scipy import optimize, stats

    if not (np.isfinite(mean) and np.isfinite(se) and se > 0 and df >= 1):
        raise ValueError(f"gain_test: need a finite mean, SE > 0 and df ≥ 1, got {mean}, {se}, {df}")
    tc = float(stats.t.ppf(1 - ALPHA, df))
    t = (mean - claim) / se
    # P(T < −t_α) when the true gap is `g` below the claim: −T is noncentral t with noncentrality g/SE
    pw = lambda g: float(stats.nct.sf(tc, df, g / se))  # noqa: E731
    power = pw(claim)
    rejected = t < -tc
    mde = float(optimize.brentq(lambda g: pw(g) - POWER_MIN, 1e-9 * se, 100 * se))
    # TAB4_RULE: power matters only when H0 is NOT rejected (a rejection at level ALPHA stands whatever the power)
    verdict = dict(TAB4_RULE)[TAB4_RULE[0][0] if rejected else TAB4_RULE[1 if power >= POWER_MIN else 2][0]]
    t0 = mean / se
    return {"t": t, "df": df, "t_crit": tc, "p": float(stats.t.cdf(t, df)), "power": power, "rejected": bool(rejected),
            "verdict": verdict, "miss_reject": max(0.0, (claim - mean) / (tc * se)),
            "miss_power": (1 - power) / (1 - POWER_MIN), "t_vs_0": t0, "p_vs_0": float(stats.t.sf(t0, df)), "mde": mde}


def _run_seeds(quick: bool, seed: int) -> list:
    """Replication ``seed`` uses the runs R·seed … R·seed + R − 1 (disjoint blocks: replications are independent)."""
    r = RUNS[bool(quick)]
    return [r * seed + k for k in range(r)]


def fitted_on_training(runs, seeds) -> None:
    """Θ must be fitted on the training samples and read on the test samples: f_all's cross-entropy on its fit
    samples below its test cross-entropy in every run (a fitted model reads lower on the data it was fitted on). A
    Θ fitted on the test samples, or accuracies read on the fit samples, reverses the order: ValueError (fail)."""
    bad = [(s, r["theta_ce_train_test"]) for s, r in zip(seeds, runs)
           if not r["theta_ce_train_test"][0] < r["theta_ce_train_test"][1]]
    if bad:
        raise ValueError("nd.new_categories: f_all's cross-entropy on Θ's fit samples is not below its test "
                         f"cross-entropy in run(s) {[s for s, _ in bad]} ({bad[0][1][0]:.4g} vs {bad[0][1][1]:.4g}): "
                         "Θ was not fitted on the training samples, or the test samples are not held out")


def _gaps(r: dict, arm: str) -> dict:
    """One run's paired differences arm − f_baseline in pp (all classes; argmax within the new classes), their SEs."""
    tag = "" if arm == "dependency" else f"_{arm}"
    return {"all": 100 * (r[f"acc_all_{arm}"] - r["acc_all_baseline"]), "se_all": 100 * r[f"se_diff_all{tag}"],
            "new": 100 * (r[f"acc_new_within_{arm}"] - r["acc_new_within_baseline"]),
            "se_new": 100 * r[f"se_diff_new_within{tag}"]}


def _planted_gaps(quick: bool) -> dict:
    """The positive control's differences, Tab 4's ResNet-50 gain by construction: the reference is f_all with
    k = round(0.0219·n) of its correct new-class test predictions made wrong (n = n_new·n_test new-class samples),
    so the paired difference is k/n within the new classes (k of N over all classes) with the SE of k ones."""
    s = sizes(quick)
    n = s["n_new"] * s["task"].n_test
    n_all = s["task"].n_classes * s["task"].n_test
    k = int(round(TAB4_PLANTED_PP / 100 * n))
    se = lambda m: 100 * math.sqrt((k / m) * (1 - k / m) / (m - 1))  # noqa: E731  SE of the mean of k ones in m
    return {"new": 100 * k / n, "se_new": se(n), "all": 100 * k / n_all, "se_all": se(n_all)}


def _new_categories_verdicts(gaps: list) -> dict:
    """Tab 2 (all classes: pooled Δ_all ≥ −(1 pp + 2 SE)) and Tab 4 (pooled Δ_new: :func:`gain_test`) over runs."""
    p_all = pooled_gap([g["all"] for g in gaps], [g["se_all"] for g in gaps])
    p_new = pooled_gap([g["new"] for g in gaps], [g["se_new"] for g in gaps])
    tol_all = MARGIN_PP + SE_UNITS * p_all["se"]
    tol_new = MARGIN_PP + SE_UNITS * p_new["se"]
    t4 = gain_test(p_new["mean"], p_new["se"], p_new["df"])
    return {"all": p_all, "new": p_new, "tab4": t4, "tol_all": tol_all, "tol_new": tol_new,
            "miss_tab2": max(0.0, -p_all["mean"]) / tol_all, "miss_tab4": max(t4["miss_reject"], t4["miss_power"]),
            "weak_new_holds": p_new["mean"] >= -tol_new}


# ---- the glyph line (ND Sec 3.2 on 1000-class glyph networks; sims.glyphs.dependencies.new_categories) ----
def _glyph_gaps(r: dict, arm: str, positive: bool) -> dict:
    """One glyph run's paired differences (pp) and SEs; ``positive``: Tab 4's ResNet-50 gain planted as in
    :func:`_planted_gaps` (k = round(0.0219·n) of the n new-class test samples), on the glyph run's sizes."""
    if not positive:
        return _gaps(r, arm)
    n = int(r["n_test_new"])
    n_all = int(r["n_test"])
    k = int(round(TAB4_PLANTED_PP / 100 * n))
    se = lambda m: 100 * math.sqrt((k / m) * (1 - k / m) / (m - 1))  # noqa: E731
    return {"new": 100 * k / n, "se_new": se(n), "all": 100 * k / n_all, "se_all": se(n_all)}


def _glyph_line(ctx, planted: bool, positive: bool) -> dict:
    """ND Sec 3.2 on the glyph networks: f_base = suite lenet-base-s<seed> (900 code points; 90 in --quick), Θ on
    its frozen logits, f_baseline = lenet-s<seed> (all 1000; 100); the synthetic line's Tab 4 test, Tab 2 reported
    only (GLYPH_TAB2_NOTE). One pair of networks can neither refute nor establish Tab 4 (tolerance text): "cannot
    tell". ``undecided`` when a network misses its required held-out accuracy."""
    from sims.glyphs.dependencies import new_categories as glyph_new_categories
    from verify.checks._shared.glyph_real import precondition

    r = glyph_new_categories(ctx.seed, ctx.quick, ctx.device)
    g = _glyph_gaps(r, "literal" if planted else "dependency", positive)
    # df of the class-clustered SE: the number of new classes on the test faces − 1 (the images of a class are
    # not independent); older cache entries without it fall back to the images
    t4 = gain_test(g["new"], g["se_new"], max(int(r.get("n_classes_test_new", r["n_test_new"])) - 1, 1))
    tol_all = MARGIN_PP + SE_UNITS * g["se_all"]
    miss_tab2 = max(0.0, -g["all"]) / tol_all
    pre = precondition(ctx, [f"lenet-base-s{ctx.seed}", f"lenet-s{ctx.seed}"])
    verdict = "cannot tell" if t4["verdict"] in ("refuted", "holds") and not positive else t4["verdict"]
    return {"verdict": verdict, "t4": t4, "gaps": g, "miss": max(t4["miss_reject"], t4["miss_power"]),
            "miss_tab2": miss_tab2, "tol_all": tol_all, "undecided": pre["undecided"], "precondition": pre["lines"],
            "run": {k: float(np.asarray(v)) for k, v in r.items() if np.asarray(v).ndim == 0},
            "line": (f"Δ_new = {g['new']:+.2f} ± {g['se_new']:.2f} pp (one run, paired test-set SE clustered by class), "
                     f"H0: Δ ≥ "
                     f"{TAB4_GAIN_PP:g} pp: t = {t4['t']:+.2f}, p = {t4['p']:.2g}, power {t4['power']:.3f}; Δ_all = "
                     f"{g['all']:+.2f} ± {g['se_all']:.2f} pp (allowed −{tol_all:.2f}; "
                     f"{'within' if miss_tab2 <= 1 else 'outside'}, reported: {GLYPH_TAB2_NOTE}); "
                     f"{int(r['n_base'])} → {int(r['n_new'])} code points"
                     + ("; cannot tell: one pair of networks, its SE leaves out network-to-network variance"
                        if verdict == "cannot tell" and t4["verdict"] in ("refuted", "holds") else ""))}


#: Why the glyph line judges Tab 4 only (measurements in docs/real.md, "nd.new_categories").
GLYPH_TAB2_NOTE = "Tab 2's side moves with Θ's training set: 8 → 24 images per class took Δ_all from ≈ −2.6 to −1.5 pp"


def _combine(lines: dict) -> tuple[bool, float, str | None]:
    """One status from the lines' verdicts (module doc): holds when some line holds and none is refuted; not
    holding (refuted) when some line is refuted and none holds; undecided when one holds and another is refuted
    (the settings disagree) or none can tell."""
    v = {k: x["verdict"] for k, x in lines.items()}
    holds = [k for k, x in v.items() if x == "holds"]
    refuted = [k for k, x in v.items() if x == "refuted"]
    miss = max(x["miss"] for x in lines.values())
    if holds and not refuted:
        return True, min(1.0, max(lines[k]["miss"] for k in holds)), None
    if refuted and holds:
        return False, max(miss, 1.0 + 1e-9), f"the settings disagree: holds on {holds}, refuted on {refuted}"
    if refuted:
        return False, max(miss, 1.0 + 1e-9), None
    return False, max(miss, 1.0 + 1e-9), "no line can tell (power below " + f"{POWER_MIN:g})"


def _fmt_test(v: dict) -> str:
    t, p = v["tab4"], v["new"]
    return (f"Δ_new = {p['mean']:+.2f} ± {p['se']:.2f} pp (mean of {p['runs']} runs ± SE, from the {p['spread']}); "
            f"H0: Δ ≥ {TAB4_GAIN_PP:g} pp, t = {t['t']:+.2f} ({t['df']} df), one-sided p = {t['p']:.2g}; power to tell "
            f"+{TAB4_GAIN_PP:g} pp from 0 = {t['power']:.3f} (smallest gap detectable with power {POWER_MIN:g}: "
            f"{t['mde']:.2f} pp)")


TAB4_BASE_CLASSES = 900  # ND's stated setting for Tab 4 (the synthetic line refutes only there; below: a finding)
TAB4_REGIME = (f"massive categories: ≥ {TAB4_BASE_CLASSES} base classes of a large-scale classification task "
               "(ND abstract, title; Sec 3.2 Tab 4: 900 → 100)")

@check(
    "nd.new_categories", equation="Sec 3.2, Tab 2, Tab 4", kind="sim", seeds=1,
    tolerance=f"Tab 4: one-sided t-test of H0: Δ_new ≥ {TAB4_GAIN_PP:g} pp at α = {ALPHA:g}: {TAB4_RULE_TEXT}; power "
              f"to tell +{TAB4_GAIN_PP:g} pp from 0 (mean over {RUNS[False]} runs, quick "
              f"{RUNS[True]}); Tab 2: pooled all-class loss ≤ {MARGIN_PP:g} pp + {SE_UNITS:g}·SE",
    tolerance_reason=f"the paper's claims: f_all outperforms f_baseline within the new classes ('significantly', "
                     f"Tab 4: +2.19 pp ResNet-50, +1.74 pp Swin-T, means of five runs) and is comparable over all "
                     f"classes (Tab 2: worst −0.44 ± 0.89 pp). Tab 4 is tested at its smaller gain, {TAB4_GAIN_PP:g} "
                     f"pp: rejecting H0: Δ ≥ {TAB4_GAIN_PP:g} at α = {ALPHA:g} refutes it at that level, whatever "
                     f"the power; not rejecting it reads as 'holds' only when the sample could have told "
                     f"+{TAB4_GAIN_PP:g} pp from a level f_all (power ≥ {POWER_MIN:g}), otherwise "
                     "the check reports 'the sample cannot tell'. Each run's difference is paired per test sample "
                     "(its SE from the test set); the SE of the mean of the runs comes from their own spread (which "
                     "holds the training variance), floored by their test sets' SE, with R − 1 degrees of freedom. "
                     "One replication is already "
                     f"{RUNS[False]} independent trainings (the paper's count), so a full run uses one seed, not "
                     "three. The weaker 'f_all loses little within the new classes' (≥ −(1 pp + 2 SE)) and the "
                     "paper's 'significantly' (Δ_new > 0 at α) are reported lines. The glyph line (1000 code points, "
                     "900 → 100) uses the same test with one run's paired SE, which leaves out network-to-network "
                     "variance: one pair of networks can neither refute nor establish Tab 4's claim about networks, "
                     "so a rejection or a pass there is reported as 'cannot tell (one pair of networks)', whatever "
                     "its p or power; the status combines both lines (module doc)",
    negative_control="Θ fit by the paper's literal wording, 'on the training set of the new categories': cross-entropy "
                     "over the new classes alone on the new-class samples (nothing keeps the new logits below the base "
                     "ones on base samples)",
    positive_control=f"the same test where Tab 4's gain is present by construction: f_all against itself with "
                     f"{TAB4_PLANTED_PP:g} % of its new-class test predictions made wrong (from its correct ones; "
                     f"Tab 4's ResNet-50 gain, +{TAB4_PLANTED_PP:g} pp), in every run: H0 must stand, with adequate "
                     "power",
    figures=("nd.new_categories_accuracy",), prepare=gp.new_categories_and_runs(_run_seeds), cost=3,
)
def new_categories(ctx, planted, positive=False):
    """ND Sec 3.2: f_all = [f_base, f_base Θ] (Θ learned on frozen base logits) vs f_baseline, over R runs."""
    seeds = _run_seeds(ctx.quick, ctx.seed)
    runs = [new_categories_result(ctx.quick, s, ctx.device) for s in seeds]
    fitted_on_training(runs, seeds)
    arm = "literal" if planted else "dependency"
    gaps = [_gaps(r, arm) for r in runs]
    if positive:
        gaps = [_planted_gaps(ctx.quick) for _ in runs]
    v = _new_categories_verdicts(gaps)
    t4, pn, pa = v["tab4"], v["new"], v["all"]
    tab2_holds = v["miss_tab2"] <= 1
    undecided = None  # the sample cannot tell (and Tab 2 holds): the registry reports the check, never judges it
    if t4["verdict"] == "cannot tell" and tab2_holds and not planted and not positive:
        undecided = (f"the sample cannot tell Tab 4's +{TAB4_GAIN_PP:g} pp from no gain: power {t4['power']:.2f} < "
                     f"{POWER_MIN:g} (Δ_new = {pn['mean']:+.2f} ± {pn['se']:.2f} pp over {pn['runs']} runs)")
    miss_synth = max(v["miss_tab2"], v["miss_tab4"])
    synth = {"miss": miss_synth, "verdict": "holds" if miss_synth <= 1 else
             ("cannot tell" if t4["verdict"] == "cannot tell" and tab2_holds else "refuted")}
    clustered_se_pinned()  # the glyph line's SEs are clustered by class (theory.stats.mean_se)
    glyph = _glyph_line(ctx, planted, positive)
    holds, miss, disagree = _combine({"synthetic": synth, "glyph": glyph})
    if not planted and not positive:  # the synthetic line's reason first (when it cannot tell), then the combination's
        undecided = glyph["undecided"] or (None if disagree is None else "; ".join(
            x for x in (undecided if synth["verdict"] == "cannot tell" else None, disagree) if x))
    r0 = runs[0]
    n1, n2 = int(r0["n_base"]), int(r0["n_new"])
    yes = lambda ok: "holds" if ok else "does not hold"  # noqa: E731
    t4_line = {"holds": "holds", "refuted": "refuted (H0 rejected at α, whatever the power)",
               "cannot tell": "the sample cannot tell (power below " + f"{POWER_MIN:g})"}[t4["verdict"]]
    details = {
        "status from two lines": "pass when some line holds and none is refuted, refuted when some line is refuted "
                                 "and none holds, reported when they disagree or neither can tell",
        "line 1, synthetic (MLP, Gaussian mixture)": f"{synth['verdict']} (miss {miss_synth:.3g})",
        "line 2, glyph networks (ND Sec 3.2 on trained CNNs)": f"{glyph['verdict']} (miss {glyph['miss']:.3g}): "
                                                              f"{glyph['line']}",
        "glyph: run": glyph["run"],
        "glyph: precondition (held-out accuracy)": glyph["precondition"],
        "setting": f"{n1} → {n2} (base → new classes), MLP, Gaussian mixture (see docs/nd_training.md); runs (seeds) "
                   f"{seeds[0]}–{seeds[-1]}",
        "Tab 4 verdict (f_all ahead within the new classes by ≥ 1.7 pp)": f"{t4_line}: {_fmt_test(v)}; the paper: "
                                                                         "+1.74 to +2.19 pp",
        "Tab 4's 'significantly' (Δ_new > 0 at α, reported)":
            f"{'yes' if t4['p_vs_0'] < ALPHA else 'no'}: t = {t4['t_vs_0']:+.2f}, one-sided p = {t4['p_vs_0']:.2g}",
        "Tab 2 verdict (comparable over all classes)":
            f"{yes(tab2_holds)}: Δ_all = {pa['mean']:+.2f} ± {pa['se']:.2f} pp (allowed −{v['tol_all']:.2f})",
        "weaker reading, reported (f_all loses little within the new classes)":
            f"{yes(v['weak_new_holds'])}: Δ_new = {pn['mean']:+.2f} pp (allowed −{v['tol_new']:.2f})",
        "spread of Δ_new over the runs (pp)": {"SD between runs": pn["sd"],
                                               "test-set SE of one run (root mean square)": pn["within"],
                                               "SE of the mean from": pn["spread"]},
        "per run: seed, Δ_new ± SE, Δ_all ± SE (pp)": [
            [s, round(g["new"], 2), round(g["se_new"], 2), round(g["all"], 2), round(g["se_all"], 2)]
            for s, g in zip(seeds, gaps)],
        "compared": (f"f_all vs f_all with +{TAB4_PLANTED_PP:g} pp planted (positive control)" if positive else
                     f"{arm} vs baseline"),
        f"run {seeds[0]}: accuracy all classes (Tab 2) %": {a: 100 * r0[f"acc_all_{a}"] for a in
                                                            ("baseline", "dependency", "literal", "probe", "random",
                                                             "shuffled")},
        f"run {seeds[0]}: accuracy within new classes (Tab 4) %": {
            **{a: 100 * r0[f"acc_new_within_{a}"] for a in ("baseline", "dependency", "literal", "probe", "random",
                                                            "shuffled")}, "chance": 100 / n2},
        f"run {seeds[0]}: accuracy within base classes (Tab 4) %": {"f_baseline": 100 * r0["acc_base_within_baseline"],
                                                                    "f_base": 100 * r0["acc_base_within_dependency"]},
        "arms": {"dependency": "f_all = [f_base, f_base Θ], Θ by CE over all classes (f_base frozen)",
                 "literal": "Θ by CE over the new classes on new-class samples only (negative control)",
                 "probe": "[f_base, h Θ_h], h = f_base's penultimate features (not through the logits)",
                 "random": "Θ a random matrix of the learned Θ's norm (never learned)",
                 "shuffled": "Θ fit on permuted new-class labels (knows nothing of the new classes)"},
        "other arms vs f_baseline, pooled Δ_all / Δ_new (pp)": {
            a: [round(o["all"]["mean"], 2), round(o["new"]["mean"], 2)]
            for a in ("probe", "random", "literal", "shuffled")
            for o in [_new_categories_verdicts([_gaps(r, a) for r in runs])]},
        "relative CovLasso floor R of f_baseline's new logits on f_base's logits (median, max; run "
        f"{seeds[0]})": [float(np.median(r0["relative_floor_new_on_base"])),
                         float(np.max(r0["relative_floor_new_on_base"]))],
        "Θ": f"{n1}×{n2}, fit by full-batch L-BFGS on CE([f_base, f_base Θ]) over the whole training set",
    }
    if "acc_new_within_covlasso" in r0:
        sup = np.asarray(r0["covlasso_support"])
        details[f"sparse reading (run {seeds[0]}): f_baseline's new logits as CovLasso combinations of f_base's (ρ = "
                f"{sizes(ctx.quick)['sparse_rho']:g})"] = {
            "support per new class (median, min, max)": [float(np.median(sup)), int(sup.min()), int(sup.max())],
            "accuracy within new classes of f_base Θ_CovLasso %": 100 * r0["acc_new_within_covlasso"]}
    finding = None
    if not planted and not positive and not holds:
        finding = (f"Glyph networks: {glyph['verdict']}: {glyph['line']}. Synthetic mixture: {synth['verdict']}. "
                   if glyph["verdict"] != "holds" else "")
        tab2 = (f"Tab 2's 'comparable' {yes(tab2_holds)} (Δ_all = {pa['mean']:+.2f} ± {pa['se']:.2f} pp); the weaker "
                f"'loses little within the new classes' {yes(v['weak_new_holds'])}.")
        if t4["verdict"] == "refuted":
            finding += (f"Tab 4's gain is rejected at {n1} → {n2}: {_fmt_test(v)}. Within the new classes f_all is "
                       f"level with f_baseline or behind it, not +1.7 to +2.2 pp ahead. " + tab2)
        elif t4["verdict"] == "cannot tell":
            finding += (f"The sample cannot tell whether Tab 4's gain holds at {n1} → {n2}: {_fmt_test(v)}; a power "
                       f"below {POWER_MIN:g} leaves the comparison undecided (reported, not judged). " + tab2)
        elif miss_synth > 1:
            finding += f"Tab 4's gain is not rejected ({_fmt_test(v)}) but Tab 2 fails. " + tab2
    return Result(measured=f"Δacc new {pn['mean']:+.2f} ± {pn['se']:.2f} pp (p = {t4['p']:.2g}, power "
                           f"{t4['power']:.2f}), all {pa['mean']:+.2f} pp",
                  expected=f"H0: new ≥ +{TAB4_GAIN_PP:g} pp not rejected at α = {ALPHA:g} with power ≥ {POWER_MIN:g} "
                           f"(Tab 4), all ≥ −{v['tol_all']:.2f} pp (Tab 2)",
                  holds=bool(holds), miss=float(miss), details=details, finding=finding or None, undecided=undecided,
                  regime=None if planted or positive or glyph["verdict"] != "cannot tell" else {  # the synthetic line's
                      TAB4_REGIME: {"measured": f"{n1} base classes of a generated Gaussian mixture (MLP width "
                                                f"{sizes(ctx.quick)['task'].hidden})",
                                    "holds": n1 >= TAB4_BASE_CLASSES}})
