"""ND Sec 3.2 (Tab 2/4) and Sec 3.3 (Tab 3) on the small trained model: new-class accuracy and the regulariser."""
from __future__ import annotations

import numpy as np

from paper_figs._layout import finish
from paper_figs.registry import figure
from sims.dependency_training import REG_RHO, REG_WEIGHT, new_categories_result, regularizer_result


@figure("nd.new_categories_accuracy", answers="ND Tab 2, Tab 4",
        caption="Learning new classes through neural dependencies on the generated Gaussian mixture (MLP). Left: test "
                "accuracy on all classes (Tab 2) and argmax within the new classes (Tab 4) of f_baseline (trained on "
                "all classes), f_all = [f_base, f_base Θ] (Θ learned on frozen base logits), a linear probe on f_base's "
                "penultimate features, and the negative control (Θ by the paper's literal wording: cross-entropy over "
                "the new classes on new-class samples only); dotted: chance within the new classes. Tab 4 says f_all "
                "beats f_baseline within the new classes. Right: per new class, accuracy of f_all and of the control "
                "against f_baseline.",
        checks=("nd.new_categories",))
def draw_new_categories(quick: bool):
    import matplotlib.pyplot as plt

    r = new_categories_result(quick)
    n1, n2 = int(r["n_base"]), int(r["n_new"])
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    arms = [("baseline", "f_baseline (all classes)", "C0"), ("dependency", "f_all = [f_base, f_base Θ]", "C2"),
            ("probe", "probe on penultimate features", "C1"), ("literal", "control: Θ on new classes only", "C3")]
    groups = [("all", "all classes"), ("new_within", "within new classes")]
    w = 0.2
    for k, (arm, label, color) in enumerate(arms):
        vals = [100 * r[f"acc_{g}_{arm}"] for g, _ in groups]
        bars = a.bar(np.arange(len(groups)) + (k - 1.5) * w, vals, w, label=label, color=color)
        a.bar_label(bars, fmt="%.1f", fontsize=6)
    a.axhline(100 / n2, xmin=0.55, xmax=0.95, ls=":", color="k", label=f"chance within new (1/{n2})")
    a.set_xticks(range(len(groups)), [g for _, g in groups])
    a.set_xlabel("evaluation (argmax over)")
    a.set_ylabel("test accuracy (%)")
    a.set_ylim(0, 128)
    a.set_title(f"test accuracy, {n1} base + {n2} new classes")
    a.legend(fontsize=7, loc="upper center", ncol=2)
    base, depc, lit = (100 * r[f"per_class_new_{k}"] for k in ("baseline", "dependency", "literal"))
    b.plot([0, 100], [0, 100], ":", color="k", lw=1, label="equal to f_baseline")
    b.scatter(base, depc, color="C2", label="f_all (dependency)", zorder=3)
    b.scatter(base, lit, color="C3", marker="x", label="control (Θ on new classes only)", zorder=3)
    b.set_xlabel("f_baseline accuracy on the class (%)")
    b.set_ylabel("accuracy on the class (%)")
    lo = max(0.0, float(min(base.min(), depc.min(), lit.min())) - 5)
    b.set_xlim(lo, 101)
    b.set_ylim(lo, 101)
    b.set_title("accuracy per new class (argmax within new classes)")
    b.legend(fontsize=8)
    b.grid(True, alpha=0.3)
    return finish(fig)


@figure("nd.regularizer_trajectory", answers="ND Tab 3",
        caption=f"Fine-tuning f_baseline with {REG_WEIGHT:g}·|E[f_i f_j]| for the pair with the largest CovLasso "
                f"coefficient (λ = {REG_RHO:g}·λ_max(i), Cov = E[f fᵀ] on held-out data) and without it (control "
                "arm), same SGD schedule and minibatch order. Left: |θ_j| of the penalised pair (solid) and of an "
                "unpenalised pair (dashed): the first epoch drives both to 0 (not specific). Right: test accuracy over "
                "all classes, judged at every epoch.",
        checks=("nd.regularizer",))
def draw_regularizer(quick: bool):
    import matplotlib.pyplot as plt

    r = regularizer_result(quick)
    i, j, i2, j2 = (int(r[k]) for k in ("i", "j", "i_other", "j_other"))
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    ep = np.arange(len(r["penalised_acc"]))
    for arm, color in (("penalised", "C3"), ("unpenalised", "C0")):
        c = np.abs(np.asarray(r[f"{arm}_coef"]))
        a.plot(ep, c[:, 0], "o-", color=color, ms=4, label=f"{arm}: θ_{j} in f_{i} (penalised pair)")
        a.plot(ep, c[:, 1], "s--", color=color, ms=3, alpha=0.7, label=f"{arm}: θ_{j2} in f_{i2} (other pair)")
        b.plot(ep, 100 * np.asarray(r[f"{arm}_acc"]), "o-", color=color, ms=4, label=arm)
    a.set_xlabel("fine-tuning epoch")
    a.set_ylabel("|CovLasso coefficient|")
    a.set_title("|θ_j| of two pairs during fine-tuning")
    a.legend(fontsize=7)
    a.grid(True, alpha=0.3)
    b.set_xlabel("fine-tuning epoch")
    b.set_ylabel("test accuracy, all classes (%)")
    b.set_title("test accuracy during fine-tuning")
    b.legend(fontsize=8)
    b.grid(True, alpha=0.3)
    return finish(fig)
