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


@check(
    "nd.new_categories", equation="Sec 3.2, Tab 2, Tab 4", kind="sim",
    tolerance=f"accuracy loss ≤ {MARGIN_PP:g} pp + {SE_UNITS:g}·SE (all classes and within the new classes)",
    tolerance_reason="the paper's worst loss of f_all vs f_baseline is 0.44 ± 0.89 pp (Tab 2) and f_all is ahead "
                     "within the new classes (Tab 4); 1 pp plus two standard errors of the paired per-sample "
                     "difference on our finite test set (SE ≈ 0.5–1.6 pp at our sizes) separates 'comparable' "
                     "from a real loss",
    negative_control="Θ fit by the same protocol on labels permuted among the new-class training samples",
    figures=("nd.new_categories_accuracy",),
)
def new_categories(ctx, planted):
    """ND Sec 3.2: f_all = [f_base, f_base Θ] (Θ learned on frozen base logits) vs f_baseline on all classes."""
    r = new_categories_result(ctx.quick, ctx.seed, ctx.device)
    arm = "shuffled" if planted else "dependency"
    diff_all = 100 * (r[f"acc_all_{arm}"] - r["acc_all_baseline"])
    diff_new = 100 * (r[f"acc_new_within_{arm}"] - r["acc_new_within_baseline"])
    tol_all = MARGIN_PP + SE_UNITS * 100 * r["se_diff_all"]
    tol_new = MARGIN_PP + SE_UNITS * 100 * r["se_diff_new_within"]
    holds = bool(diff_all >= -tol_all and diff_new >= -tol_new)
    n1, n2 = int(r["n_base"]), int(r["n_new"])
    details = {
        "setting": f"{n1} → {n2} (base → new classes), MLP, Gaussian mixture (see docs/nd_training.md)",
        "accuracy all classes (Tab 2) %": {"f_baseline": 100 * r["acc_all_baseline"],
                                            "f_all (dependency)": 100 * r["acc_all_dependency"],
                                            "f_all (shuffled-label Θ)": 100 * r["acc_all_shuffled"]},
        "accuracy within new classes (Tab 4) %": {"f_baseline": 100 * r["acc_new_within_baseline"],
                                                  "f_all (dependency)": 100 * r["acc_new_within_dependency"],
                                                  "f_all (shuffled-label Θ)": 100 * r["acc_new_within_shuffled"],
                                                  "chance": 100 / n2},
        "accuracy within base classes (Tab 4) %": {"f_baseline": 100 * r["acc_base_within_baseline"],
                                                   "f_base": 100 * r["acc_base_within_dependency"]},
        "compared arm": arm,
        "difference vs f_baseline (pp)": {"all": diff_all, "new": diff_new},
        "Tab 4's stronger claim, f_all ahead within the new classes (not judged)":
            f"{'yes' if diff_new > 0 else 'no'} ({diff_new:+.2f} pp; the paper: +1.7 to +2.2 pp)",
        "allowed loss (pp)": {"all": tol_all, "new": tol_new},
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
    if not holds and not planted:
        finding = (f"f_all loses {-diff_all:.2f} pp on all classes (allowed {tol_all:.2f}) and {-diff_new:.2f} pp "
                   f"within the new classes (allowed {tol_new:.2f}) against f_baseline at {n1} → {n2}.")
    return Result(measured=f"Δacc all {diff_all:+.2f} pp, new {diff_new:+.2f} pp",
                  expected=f"≥ −{tol_all:.2f} pp, ≥ −{tol_new:.2f} pp", holds=holds, details=details, finding=finding)


@check(
    "nd.regularizer", equation="Sec 3.3, Tab 3", kind="sim",
    tolerance=f"|θ_j| after ≤ {COEF_RATIO:g}·|θ_j| before; accuracy loss vs the unpenalised arm ≤ {MARGIN_PP:g} pp + "
              f"{SE_UNITS:g}·SE",
    tolerance_reason="Tab 3's coefficients fall by ≥ 96% (0.70→0.02, 1.10→4.5e-4, 0.1→3.1e-3, 0.39→0.01) while "
                     "accuracy rises; a fall to ≤ 10% is a clear cut-off, and the accuracy allowance is that of "
                     "nd.new_categories (equal total epochs in both arms, as the paper's 90 vs 60+30)",
    negative_control="the same fine-tuning without the penalty: its θ_j must not fall to 10%",
    figures=("nd.regularizer_trajectory",),
)
def regularizer(ctx, planted):
    """ND Sec 3.3: fine-tune f_baseline with 0.2·|E[f_i f_j]| and follow the CovLasso coefficient θ_j (ND Eq 2)."""
    r = regularizer_result(ctx.quick, ctx.seed, ctx.device)
    arm = "unpenalised" if planted else "penalised"
    coef = np.asarray(r[f"{arm}_coef"])
    acc = np.asarray(r[f"{arm}_acc"])
    acc_ref = np.asarray(r["unpenalised_acc"])
    before, after = float(coef[0, 0]), float(coef[-1, 0])
    ratio = abs(after) / abs(before)
    p = sizes(ctx.quick)["task"]
    n = p.n_classes * p.n_test
    a, b = acc[-1], acc_ref[-1]
    se = float(np.sqrt((a * (1 - a) + b * (1 - b)) / n))  # unpaired bound (paired SE is smaller)
    diff = 100 * (a - b)
    tol = MARGIN_PP + SE_UNITS * 100 * se
    holds = bool(ratio <= COEF_RATIO and diff >= -tol)
    i, j = int(r["i"]), int(r["j"])
    i2, j2 = int(r["i_other"]), int(r["j_other"])
    details = {
        "pair (i, j)": [i, j], "λ": f"{REG_RHO:g}·λ_max(i)", "weight": REG_WEIGHT,
        "fine-tuning epochs": len(coef) - 1,
        "θ_j before → after": {"penalised": [float(r["penalised_coef"][0, 0]), float(r["penalised_coef"][-1, 0])],
                               "unpenalised": [float(r["unpenalised_coef"][0, 0]), float(r["unpenalised_coef"][-1, 0])]},
        "E[f_i f_j] before → after": {"penalised": [float(r["penalised_moment"][0, 0]),
                                                    float(r["penalised_moment"][-1, 0])],
                                      "unpenalised": [float(r["unpenalised_moment"][0, 0]),
                                                      float(r["unpenalised_moment"][-1, 0])]},
        "accuracy before → after %": {"penalised": [100 * float(r["penalised_acc"][0]), 100 * float(r["penalised_acc"][-1])],
                                      "unpenalised": [100 * float(r["unpenalised_acc"][0]),
                                                      100 * float(r["unpenalised_acc"][-1])]},
        f"unpenalised other pair ({i2}, {j2}) θ before → after": {
            "penalised run": [float(r["penalised_coef"][0, 1]), float(r["penalised_coef"][-1, 1])],
            "unpenalised run": [float(r["unpenalised_coef"][0, 1]), float(r["unpenalised_coef"][-1, 1])]},
        "lowest accuracy along the penalised run % (epoch)": [100 * float(np.min(r["penalised_acc"])),
                                                              int(np.argmin(r["penalised_acc"]))],
        "other pair's smallest |θ| along the penalised run": float(np.min(np.abs(r["penalised_coef"][:, 1]))),
        "compared arm": arm, "coefficient ratio": ratio, "accuracy difference vs unpenalised (pp)": diff,
        "allowed accuracy loss (pp)": tol,
    }
    finding = None
    if not holds and not planted:
        parts = []
        if ratio > COEF_RATIO:
            parts.append(f"θ_j only fell from {before:.3g} to {after:.3g} (ratio {ratio:.3g} > {COEF_RATIO:g})")
        if diff < -tol:
            parts.append(f"accuracy fell {-diff:.2f} pp below the unpenalised arm (allowed {tol:.2f})")
        finding = "Sec 3.3 not reproduced at our sizes: " + "; ".join(parts) + "."
    return Result(measured=f"θ_j {before:.3g} → {after:.3g} (ratio {ratio:.3g}); Δacc {diff:+.2f} pp",
                  expected=f"ratio ≤ {COEF_RATIO:g}; Δacc ≥ −{tol:.2f} pp", holds=holds, details=details,
                  finding=finding)
