"""ND Sec 3.2 (new categories through neural dependencies) and Sec 3.3 (the dependency regulariser) on a small
MLP trained here on a generated ≥ 100-class Gaussian mixture (sims.dependency_training).

Both checks share one task and one all-class model f_baseline per (sizes, --seed), trained once and cached.
"""
from __future__ import annotations

import numpy as np

from sims.dependency_training import (REG_RHO, REG_WEIGHT, new_categories_result, regularizer_result,
                                     standard_sizes as sizes)
from verify.registry import Result, check

MARGIN_PP = 1.0  # allowed accuracy loss in percentage points, before the sampling allowance
SE_UNITS = 2.0  # sampling allowance: this many standard errors of the accuracy difference
COEF_RATIO = 0.1  # the penalised coefficient must fall to ≤ 10% of its starting value


def _new_categories_verdicts(r: dict, arm: str, ref: str = "baseline") -> dict:
    """Tab 2 (all classes: comparable, loss ≤ 1 pp + 2 SE) and Tab 4 (within the new classes: ``arm`` at least as
    accurate as ``ref``) for one arm, in percentage points, with misses in tolerance units."""
    tag = "" if arm == "dependency" else f"_{arm}"
    se_all, se_new = r[f"se_diff_all{tag}"], r[f"se_diff_new_within{tag}"]
    diff_all = 100 * (r[f"acc_all_{arm}"] - r[f"acc_all_{ref}"])
    diff_new = 100 * (r[f"acc_new_within_{arm}"] - r[f"acc_new_within_{ref}"])
    tol_all = MARGIN_PP + SE_UNITS * 100 * se_all
    tol_new = MARGIN_PP + SE_UNITS * 100 * se_new
    miss_tab2 = max(0.0, -diff_all) / tol_all
    miss_tab4 = r[f"acc_new_within_{ref}"] / max(r[f"acc_new_within_{arm}"], 1e-12)  # t/x: x ≥ t
    return {"diff_all": diff_all, "diff_new": diff_new, "se_new": 100 * se_new, "tol_all": tol_all, "tol_new": tol_new,
            "miss_tab2": miss_tab2, "miss_tab4": miss_tab4, "weak_new_holds": diff_new >= -tol_new}


@check(
    "nd.new_categories", equation="Sec 3.2, Tab 2, Tab 4", kind="sim",
    tolerance=f"Tab 4: f_all's accuracy within the new classes ≥ f_baseline's; Tab 2: all-class loss ≤ {MARGIN_PP:g} pp "
              f"+ {SE_UNITS:g}·SE",
    tolerance_reason="the paper's claims: f_all and f_baseline are comparable over all classes (worst loss 0.44 ± 0.89 "
                     "pp, Tab 2) and f_all outperforms within the new classes (+1.7 to +2.2 pp, Tab 4, 'significantly'). "
                     "Tab 4 is judged as stated (point estimate ahead), Tab 2 with 1 pp plus two standard errors of the "
                     "paired per-sample difference on our finite test set (SE ≈ 0.5–1.6 pp). The weaker 'f_all loses "
                     "little within the new classes' (≥ −(1 pp + 2 SE)) is a separate reported line",
    negative_control="Θ fit by the paper's literal wording, 'on the training set of the new categories': cross-entropy "
                     "over the new classes alone on the new-class samples (nothing keeps the new logits below the base "
                     "ones on base samples)",
    positive_control="the same comparison against a reference that knows nothing of the new classes (f_base with Θ fit "
                     "on labels permuted among the new-class samples, at chance within them): f_all must be ahead",
    figures=("nd.new_categories_accuracy",),
)
def new_categories(ctx, planted, positive=False):
    """ND Sec 3.2: f_all = [f_base, f_base Θ] (Θ learned on frozen base logits) vs f_baseline on all classes."""
    r = new_categories_result(ctx.quick, ctx.seed, ctx.device)
    arm = "literal" if planted else "dependency"
    ref = "shuffled" if positive else "baseline"
    v = _new_categories_verdicts(r, arm, ref)
    miss = max(v["miss_tab2"], v["miss_tab4"])
    n1, n2 = int(r["n_base"]), int(r["n_new"])
    yes = lambda ok: "holds" if ok else "does not hold"  # noqa: E731
    others = {a: _new_categories_verdicts(r, a) for a in ("probe", "random", "literal", "shuffled")}
    details = {
        "setting": f"{n1} → {n2} (base → new classes), MLP, Gaussian mixture (see docs/nd_training.md)",
        "Tab 4 verdict (f_all ahead within the new classes)":
            f"{yes(v['miss_tab4'] <= 1)} at this size: Δ_new = {v['diff_new']:+.2f} ± {v['se_new']:.2f} pp (SE); the "
            "paper: +1.7 to +2.2 pp",
        "Tab 2 verdict (comparable over all classes)":
            f"{yes(v['miss_tab2'] <= 1)}: Δ_all = {v['diff_all']:+.2f} pp (allowed −{v['tol_all']:.2f})",
        "weaker reading, reported (f_all loses little within the new classes)":
            f"{yes(v['weak_new_holds'])}: Δ_new = {v['diff_new']:+.2f} pp (allowed −{v['tol_new']:.2f})",
        "accuracy all classes (Tab 2) %": {a: 100 * r[f"acc_all_{a}"] for a in
                                            ("baseline", "dependency", "literal", "probe", "random", "shuffled")},
        "accuracy within new classes (Tab 4) %": {**{a: 100 * r[f"acc_new_within_{a}"] for a in
                                                     ("baseline", "dependency", "literal", "probe", "random", "shuffled")},
                                                  "chance": 100 / n2},
        "accuracy within base classes (Tab 4) %": {"f_baseline": 100 * r["acc_base_within_baseline"],
                                                   "f_base": 100 * r["acc_base_within_dependency"]},
        "arms": {"dependency": "f_all = [f_base, f_base Θ], Θ by CE over all classes (f_base frozen)",
                 "literal": "Θ by CE over the new classes on new-class samples only (negative control)",
                 "probe": "[f_base, h Θ_h], h = f_base's penultimate features (not through the logits)",
                 "random": "Θ a random matrix of the learned Θ's norm (never learned)",
                 "shuffled": "Θ fit on permuted new-class labels (positive control's reference)"},
        "other arms vs f_baseline, Δ_all / Δ_new (pp)": {a: [round(o["diff_all"], 2), round(o["diff_new"], 2)]
                                                        for a, o in others.items()},
        "compared": f"{arm} vs {ref}",
        "relative CovLasso floor R of f_baseline's new logits on f_base's logits (median, max)":
            [float(np.median(r["relative_floor_new_on_base"])), float(np.max(r["relative_floor_new_on_base"]))],
        "Θ": f"{n1}×{n2}, fit by full-batch L-BFGS on CE([f_base, f_base Θ]) over the whole training set",
    }
    if "acc_new_within_covlasso" in r:
        sup = np.asarray(r["covlasso_support"])
        details["sparse reading: f_baseline's new logits as CovLasso combinations of f_base's (ρ = "
                f"{sizes(ctx.quick)['sparse_rho']:g})"] = {
            "support per new class (median, min, max)": [float(np.median(sup)), int(sup.min()), int(sup.max())],
            "accuracy within new classes of f_base Θ_CovLasso %": 100 * r["acc_new_within_covlasso"]}
    finding = None
    if miss > 1 and not planted and not positive:
        finding = (f"At {n1} → {n2}, f_all is {'not ahead of' if v['miss_tab4'] > 1 else 'ahead of'} f_baseline within "
                   f"the new classes (Δ_new = {v['diff_new']:+.2f} ± {v['se_new']:.2f} pp; Tab 4: +1.7 to +2.2 pp) and "
                   f"{'comparable' if v['miss_tab2'] <= 1 else 'not comparable'} over all classes (Δ_all = "
                   f"{v['diff_all']:+.2f} pp). The weaker reading, f_all loses little within the new classes, "
                   f"{yes(v['weak_new_holds'])}.")
    return Result(measured=f"Δacc new {v['diff_new']:+.2f} pp, all {v['diff_all']:+.2f} pp",
                  expected=f"new ≥ 0 pp (Tab 4), all ≥ −{v['tol_all']:.2f} pp (Tab 2)", holds=bool(miss <= 1),
                  miss=float(miss), details=details, finding=finding)


SPECIFIC = 0.5  # an untargeted pair must keep ≥ half its coefficient (vs the same epoch without the penalty)


@check(
    "nd.regularizer", equation="Sec 3.3, Tab 3", kind="sim",
    tolerance=f"|θ_j| after ≤ {COEF_RATIO:g}·|θ_j| before; at every epoch an unpenalised pair keeps ≥ {SPECIFIC:g} of "
              f"its coefficient and accuracy stays ≥ the unpenalised arm's − ({MARGIN_PP:g} pp + {SE_UNITS:g}·SE)",
    tolerance_reason="Tab 3's coefficients fall by ≥ 96% (0.70→0.02, 1.10→4.5e-4, 0.1→3.1e-3, 0.39→0.01) while "
                     "accuracy rises; a fall to ≤ 10% is a clear cut-off. Sec 3.3 cuts one chosen dependency, so the "
                     "effect must be specific: a pair that is not penalised must not lose more than half its "
                     "coefficient relative to the same fine-tuning without the penalty; and the accuracy is judged "
                     "along the whole fine-tuning (equal epochs in both arms, as the paper's 90 vs 60 + 30), with the "
                     "allowance of nd.new_categories. Tab 3's 'accuracy improves' is a reported line",
    negative_control="the penalty never reaches the loss (computed on detached logits, or weight 0): the same "
                     "fine-tuning without it, whose θ_j must not fall to 10%",
    positive_control="planted trajectories of a specific regulariser, built from the unpenalised run: the pair's "
                     "coefficient cut to 0 from the first epoch, the other pair and the accuracy unchanged",
    figures=("nd.regularizer_trajectory",),
)
def regularizer(ctx, planted, positive=False):
    """ND Sec 3.3: fine-tune f_baseline with 0.2·|E[f_i f_j]| and follow the CovLasso coefficient θ_j (ND Eq 2)."""
    r = regularizer_result(ctx.quick, ctx.seed, ctx.device)
    arm = "unpenalised" if planted else "penalised"
    coef = np.asarray(r[f"{arm}_coef"], dtype=float).copy()
    acc = np.asarray(r[f"{arm}_acc"], dtype=float)
    ref_coef = np.asarray(r["unpenalised_coef"], dtype=float)
    acc_ref = np.asarray(r["unpenalised_acc"], dtype=float)
    if positive:
        coef = ref_coef.copy()
        coef[1:, 0] = 0.0
        acc = acc_ref.copy()
    before, after = float(coef[0, 0]), float(coef[-1, 0])
    ratio = abs(after) / abs(before)
    p = sizes(ctx.quick)["task"]
    n = p.n_classes * p.n_test
    se = np.sqrt((acc * (1 - acc) + acc_ref * (1 - acc_ref)) / n)  # unpaired bound (paired SE is smaller)
    tol = MARGIN_PP + SE_UNITS * 100 * se
    gap = 100 * (acc_ref - acc)  # > 0: the penalised arm behind
    miss_acc = float(np.max(np.maximum(gap, 0.0) / tol))
    kept = np.abs(coef[1:, 1]) / np.maximum(np.abs(ref_coef[1:, 1]), 1e-12)
    miss_spec = float(np.max(SPECIFIC / np.maximum(kept, 1e-3)))  # a share kept below 1e-3 counts as 1e-3 (miss ≤ 500)
    miss_coef = ratio / COEF_RATIO
    miss = max(miss_coef, miss_spec, miss_acc)
    worst_epoch = int(np.argmax(gap))
    i, j = int(r["i"]), int(r["j"])
    i2, j2 = int(r["i_other"]), int(r["j_other"])
    yes = lambda ok: "holds" if ok else "does not hold"  # noqa: E731
    details = {
        "pair (i, j)": [i, j], "λ": f"{REG_RHO:g}·λ_max(i)", "weight": REG_WEIGHT,
        "fine-tuning epochs": len(coef) - 1, "compared arm": "planted specific regulariser" if positive else arm,
        "verdicts": {
            "coefficient cut (Tab 3)": f"{yes(miss_coef <= 1)}: θ_j {before:.3g} → {after:.3g} (ratio {ratio:.3g})",
            "specific (unpenalised pair keeps ≥ 1/2)": f"{yes(miss_spec <= 1)}: smallest share kept {kept.min():.3g} "
                                                       f"(epoch {int(np.argmin(kept)) + 1})",
            "accuracy along the fine-tuning": f"{yes(miss_acc <= 1)}: largest shortfall {gap.max():+.2f} pp at epoch "
                                              f"{worst_epoch} (allowed {tol[worst_epoch]:.2f})",
            "Tab 3's 'accuracy improves' (reported)": f"{'yes' if acc[-1] > acc_ref[-1] else 'no'}: "
                                                      f"{100 * (acc[-1] - acc_ref[-1]):+.2f} pp at the end"},
        "misses (coefficient, specificity, accuracy)": [miss_coef, miss_spec, miss_acc],
        "θ_j per epoch (this arm)": [round(float(x), 3) for x in coef[:, 0]],
        f"other pair ({i2}, {j2}) θ per epoch, this arm / without the penalty": [
            [round(float(x), 3) for x in coef[:, 1]], [round(float(x), 3) for x in ref_coef[:, 1]]],
        "accuracy per epoch %, this arm / without the penalty": [
            [round(100 * float(x), 2) for x in acc], [round(100 * float(x), 2) for x in acc_ref]],
        "E[f_i f_j] before → after": {"penalised": [float(r["penalised_moment"][0, 0]),
                                                    float(r["penalised_moment"][-1, 0])],
                                      "unpenalised": [float(r["unpenalised_moment"][0, 0]),
                                                      float(r["unpenalised_moment"][-1, 0])]},
        "other pair's E[f f] after epoch 1 (penalised run)": float(r["penalised_moment"][1, 1]),
    }
    finding = None
    if miss > 1 and not planted and not positive:
        parts = []
        if miss_coef > 1:
            parts.append(f"θ_j only fell from {before:.3g} to {after:.3g} (ratio {ratio:.3g} > {COEF_RATIO:g})")
        if miss_spec > 1:
            parts.append(f"the cut is not specific: the unpenalised pair ({i2}, {j2}) keeps only {kept.min():.2f} of its "
                         f"coefficient at epoch {int(np.argmin(kept)) + 1}")
        if miss_acc > 1:
            parts.append(f"accuracy falls {gap.max():.1f} pp below the unpenalised arm at epoch {worst_epoch} "
                         f"({100 * acc[worst_epoch]:.1f} % vs {100 * acc_ref[worst_epoch]:.1f} %) before recovering to "
                         f"{100 * (acc[-1] - acc_ref[-1]):+.2f} pp at the end")
        finding = ("Sec 3.3 at the paper's weight 0.2 on our model: " + "; ".join(parts) + ". The penalty is met by "
                   "shrinking every logit at once (E[f f] of the other pair falls too), not by cutting one dependency.")
    return Result(measured=f"θ_j ratio {ratio:.3g}; other pair kept ≥ {kept.min():.2g}; worst Δacc {-gap.max():+.2f} pp",
                  expected=f"≤ {COEF_RATIO:g}; ≥ {SPECIFIC:g}; ≥ −tol at every epoch", holds=bool(miss <= 1),
                  miss=float(miss), details=details, finding=finding)
