"""ND Sec 3.3 (the dependency regulariser) on the small MLP of sims.dependency_training: nd.regularizer judges what
Sec 3.3 / Tab 3 claim (the chosen coefficient is cut; the accuracy after the fine-tuning is not lost); the path and
the penalty's scale against the cross-entropy are reported. It shares nd.new_categories' task and f_baseline
(verify/checks/nd/sec3_training.py) and its allowances (MARGIN_PP, SE_UNITS) and massive-category threshold."""
from __future__ import annotations

import numpy as np

from sims.dependency_training import REG_RHO, REG_WEIGHT, regularizer_result, standard_sizes as sizes
from verify.checks.nd import sec3_training as new_cat
from verify.checks.nd.sec3_training import MARGIN_PP, SE_UNITS, TAB4_BASE_CLASSES
from verify.registry import Result, check

COEF_RATIO = 0.1  # the penalised coefficient must fall to ≤ 10% of its starting value

#: ND's setting for Sec 3.3 (the same condition as Tab 4's, applied alike: nd.new_categories and nd.regularizer read
#: the same generated mixture): networks of massive categories.
TAB3_REGIME = (f"massive categories: ≥ {TAB4_BASE_CLASSES} classes of a large-scale classification task (ND title, "
               "abstract; Sec 3.3 Tab 3 fine-tunes ImageNet-1k networks)")
SPECIFIC = 0.5  # reported, not judged: an untargeted pair "keeps" its coefficient if ≥ half of it (vs no penalty)
TAB3_GAIN_PP = 0.29  # Tab 3's ImageNet accuracy gain of ResNet-18 and ResNet-50 (+0.02 Swin-T … +0.85 ViT-S)


def _loss_scale(quick: bool, seed: int, device: str, i: int, j: int) -> dict:
    """The two terms of the fine-tuning loss at its start (f_baseline on the training set): the cross-entropy and
    REG_WEIGHT·|E[f_i f_j]|, and their ratio: how the penalty's weight compares with the cross-entropy here."""
    import torch
    import torch.nn.functional as F

    from sims.dependency_training import baseline_model

    model, task = baseline_model(sizes(quick)["task"], seed, device)
    with torch.no_grad():
        out = model(torch.as_tensor(task["x_train"], device=device))
        ce = float(F.cross_entropy(out, torch.as_tensor(task["y_train"], device=device)))
        moment = float((out[:, i] * out[:, j]).mean())
    pen = REG_WEIGHT * abs(moment)
    return {"cross-entropy": ce, "E[f_i f_j]": moment, "penalty = weight·|E[f_i f_j]|": pen, "penalty / CE": pen / ce}


def _penalty_pin(ctx) -> dict:
    """The library's penalty (``sims.dependency_training.dependency_penalty``, what the fine-tuning adds to its
    loss) against ND Sec 3.3's weight·|E[f_i f_j]| written out here, value and gradient (d/df_i = weight·sign(m)·f_j/N,
    m = E[f_i f_j]), on random float64 logits with a positive and a negative moment."""
    import torch

    from sims.dependency_training import dependency_penalty

    rng = ctx.rng("penalty pin")
    worst = 0.0
    for sign in (1.0, -1.0):
        f = rng.standard_normal((64, 6))
        f[:, 4] = sign * (f[:, 1] + 0.1 * rng.standard_normal(64))  # moment of (1, 4) with the chosen sign
        m = float(np.mean(f[:, 1] * f[:, 4]))
        out = torch.tensor(f, dtype=torch.float64, requires_grad=True)
        pen = dependency_penalty(out, (1, 4), REG_WEIGHT)
        pen.backward()
        g = np.zeros_like(f)
        g[:, 1] = REG_WEIGHT * np.sign(m) * f[:, 4] / len(f)
        g[:, 4] = REG_WEIGHT * np.sign(m) * f[:, 1] / len(f)
        ref = REG_WEIGHT * abs(m)
        grad_err = float(np.abs(out.grad.numpy() - g).max() / np.abs(g).max())
        worst = max(worst, abs(float(pen.detach()) - ref) / ref, grad_err)
    return {"worst relative error": worst}


@check(
    "nd.regularizer", equation="Sec 3.3, Tab 3", kind="sim",
    tolerance=f"|θ_j| after ≤ {COEF_RATIO:g}·|θ_j| before (Tab 3); accuracy after the fine-tuning ≥ the unpenalised "
              f"arm's − ({MARGIN_PP:g} pp + {SE_UNITS:g}·SE)",
    tolerance_reason="what Sec 3.3 and Tab 3 claim: after the fine-tuning 'the dependency coefficients are approaching "
                     "zero' (Tab 3: 0.70→0.02, 1.10→4.5e-4, 0.1→3.1e-3, 0.39→0.01, falls of ≥ 96%; a fall to ≤ 10% "
                     "is a clear cut-off) and the accuracy is not lost ('some improvements', +0.02 to +0.85 pp, "
                     "compared after equal epochs: the paper's 90 vs 60 + 30), with the allowance of nd.new_categories "
                     "(1 pp + 2 SE). Tab 3's 'accuracy improves' is a reported line with its test and power. Not "
                     "claimed by Sec 3.3, hence reported, not judged: whether the cut is specific (an unpenalised pair "
                     "keeps its coefficient) and the accuracy along the way (per epoch). ND states it for networks of massive "
                     "categories (TAB3_REGIME, measured): on the generated mixture's 120 classes a run that holds is a "
                     "finding in that regime, as nd.new_categories' on the same mixture",
    negative_control="the penalty never reaches the loss (computed on detached logits, or weight 0): the same "
                     "fine-tuning without it, whose θ_j must not fall to 10%",
    positive_control="planted trajectories of a regulariser that works, built from the unpenalised run: the pair's "
                     "coefficient cut to 0 from the first epoch, the accuracy unchanged",
    figures=("nd.regularizer_trajectory",), cost=15,
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
    miss_coef = ratio / COEF_RATIO
    miss_end = max(0.0, float(gap[-1])) / float(tol[-1])
    pin = _penalty_pin(ctx)
    miss = max(miss_coef, miss_end, pin["worst relative error"] / 1e-12)
    # reported, not judged: the path
    kept = np.abs(coef[1:, 1]) / np.maximum(np.abs(ref_coef[1:, 1]), 1e-12)
    worst_epoch = int(np.argmax(gap))
    end_gain, end_se = -float(gap[-1]), 100 * float(se[-1])
    z_gain = end_gain / end_se
    from scipy import stats

    power_gain = float(stats.norm.sf(stats.norm.ppf(0.95) - TAB3_GAIN_PP / end_se))
    i, j = int(r["i"]), int(r["j"])
    i2, j2 = int(r["i_other"]), int(r["j_other"])
    yes = lambda ok: "holds" if ok else "does not hold"  # noqa: E731
    details = {
        "pair (i, j)": [i, j], "λ": f"{REG_RHO:g}·λ_max(i)", "weight": REG_WEIGHT,
        "fine-tuning epochs": len(coef) - 1, "compared arm": "planted working regulariser" if positive else arm,
        "verdicts (judged: what Sec 3.3 claims)": {
            "coefficient cut (Tab 3)": f"{yes(miss_coef <= 1)}: θ_j {before:.3g} → {after:.3g} (ratio {ratio:.3g}, "
                                       f"allowed {COEF_RATIO:g})",
            "accuracy after the fine-tuning (Tab 3)": f"{yes(miss_end <= 1)}: {end_gain:+.2f} pp against the "
                                                      f"unpenalised arm (allowed −{tol[-1]:.2f})"},
        "Tab 3's 'accuracy improves' (reported)": (
            f"{'yes' if end_gain > 0 else 'no'} ({end_gain:+.2f} ± {end_se:.2f} pp; one-sided z = {z_gain:+.2f}, "
            f"p = {float(stats.norm.sf(z_gain)):.2g}); the sample cannot resolve Tab 3's gains: power "
            f"{power_gain:.2f} to detect +{TAB3_GAIN_PP:g} pp at α = 0.05"),
        "findings (reported, not claimed by Sec 3.3)": {
            "specific (unpenalised pair keeps ≥ 1/2 of its coefficient at every epoch)":
                f"{'yes' if kept.min() >= SPECIFIC else 'no'}: smallest share kept {kept.min():.3g} (epoch "
                f"{int(np.argmin(kept)) + 1})",
            "accuracy along the fine-tuning (≥ unpenalised − allowance at every epoch)":
                f"{'yes' if np.all(gap <= tol) else 'no'}: largest shortfall {gap.max():+.2f} pp at epoch "
                f"{worst_epoch} ({100 * acc[worst_epoch]:.1f} % vs {100 * acc_ref[worst_epoch]:.1f} %; allowed "
                f"{tol[worst_epoch]:.2f})"},
        "θ_j per epoch (this arm)": [round(float(x), 3) for x in coef[:, 0]],
        f"other pair ({i2}, {j2}) θ per epoch, this arm / without the penalty": [
            [round(float(x), 3) for x in coef[:, 1]], [round(float(x), 3) for x in ref_coef[:, 1]]],
        "accuracy per epoch %, this arm / without the penalty": [
            [round(100 * float(x), 2) for x in acc], [round(100 * float(x), 2) for x in acc_ref]],
        "E[f_i f_j] on the test set, before → after": {
            "penalised": [float(r["penalised_moment"][0, 0]), float(r["penalised_moment"][-1, 0])],
            "unpenalised": [float(r["unpenalised_moment"][0, 0]), float(r["unpenalised_moment"][-1, 0])]},
        "other pair's E[f f] after epoch 1 (penalised run)": float(r["penalised_moment"][1, 1]),
        "the library's penalty against weight·|E[f_i f_j]| and its gradient (float64, ≤ 1e-12)": pin,
    }
    finding = None
    if not planted and not positive:
        scale = _loss_scale(ctx.quick, ctx.seed, ctx.device, i, j)
        details["loss terms at the start of the fine-tuning (f_baseline, training set)"] = scale
        head = (f"Tab 3 {'holds' if miss <= 1 else 'does not hold'} at the paper's weight {REG_WEIGHT:g}: θ_j "
                f"{before:.3g} → {after:.3g} (ratio {ratio:.3g}) and the accuracy after the fine-tuning is "
                f"{end_gain:+.2f} ± {end_se:.2f} pp from the unpenalised arm (Tab 3's 'improves' not resolved: power "
                f"{power_gain:.2f} to detect +{TAB3_GAIN_PP:g} pp).")
        m_before, m_after = float(r["penalised_moment"][0, 1]), float(r["penalised_moment"][1, 1])
        path = [f"the cut is {'' if kept.min() >= SPECIFIC else 'not '}specific (the unpenalised pair ({i2}, {j2}) "
                f"keeps {kept.min():.2f} of its coefficient at epoch {int(np.argmin(kept)) + 1}, against the same "
                f"epoch without the penalty)"]
        if gap.max() > tol[worst_epoch]:
            path.append(f"the accuracy falls {gap.max():.1f} pp below the unpenalised arm at epoch {worst_epoch} "
                        f"({100 * acc[worst_epoch]:.1f} % vs {100 * acc_ref[worst_epoch]:.1f} %)"
                        + (" before recovering" if miss_end <= 1 else ""))
        path.append(f"the penalty starts at {scale['penalty / CE']:.0f}× the cross-entropy "
                    f"({scale['penalty = weight·|E[f_i f_j]|']:.1f} vs {scale['cross-entropy']:.2f})")
        if abs(m_after) < 0.1 * abs(m_before):
            path.append(f"after one epoch the other pair's E[f f] has fallen from {m_before:.3g} to {m_after:.3g}: "
                        "the penalty is met by shrinking every logit at once, not by cutting one dependency")
        path = " Found here, not claimed by Sec 3.3: " + "; ".join(path) + "."
        finding = head + path
    return Result(measured=f"θ_j ratio {ratio:.3g}; end Δacc {end_gain:+.2f} pp",
                  expected=f"≤ {COEF_RATIO:g}; ≥ −{tol[-1]:.2f} pp", holds=bool(miss <= 1), miss=float(miss),
                  details=details, finding=finding,
                  regime=None if planted or positive else {
                      TAB3_REGIME: {"measured": f"{p.n_classes} classes of a generated Gaussian mixture",
                                    "holds": p.n_classes >= new_cat.TAB4_BASE_CLASSES}})
