"""Figures of ND / RD on the glyph networks trained here (sims/glyphs/networks.py; docs/real.md, "The glyph networks").

* ``nd.glyph_support_vs_error`` (ND Tab 1 / Sec 2.1): held-out relative error and positive accuracy of the replaced
  logit against the support, along the exact CovLasso path, for the target categories of ``lenet-s0``;
* ``nd.glyph_between_networks`` (ND Fig 2e–f, Sec 2.4): logit i of ``lenet-s1`` against its prediction from the
  other logits of ``lenet-s0`` on the held-out faces, next to the within-network prediction;
* ``rd.glyph_layer_ranks`` (RD Sec 4 / Fig 1–2): the PCA dimension of every stage of ``lenet-s0`` (input → logits)
  with RD's float32 rule, and RD Fig 2's accuracy of the final features projected on their top-k principal
  directions.

Fits on the training faces' ``aug_test`` images, metrics on the held-out DejaVu Serif faces, true labels (as the
checks). ``quick``: the 100-class quick networks.
"""
from __future__ import annotations

import numpy as np

from paper_figs._layout import finish
from paper_figs.registry import figure
from sims.glyphs import dependencies as GD
from sims.real import analysis as A

RHO = 0.02


def _cats(K: int, quick: bool, k: int) -> list:
    return [int(c) for c in np.random.default_rng([20260611, 0, int(quick)]).choice(K, k, replace=False)]


def support_curves(quick: bool, k: int = 6, name: str = "lenet-s0") -> dict:
    """For ``k`` target categories: (support, held-out |f|-relative error, pos acc, original pos acc, λ/λ_max,
    error relative to the logit's spread) at every breakpoint of the exact path down to 0.002·λ_max
    (theory.covlasso via sims.real.analysis)."""
    from theory.covlasso import covlasso_path

    fit, test = GD.outputs(name, quick, GD.FIT_SPLIT), GD.outputs(name, quick, GD.TEST_SPLIT)
    C = A.second_moment(fit["logits"])
    out = {}
    for i in _cats(C.shape[0], quick, k):
        lm = A.lambda_max_i(C, i)
        path = covlasso_path(C, i, [0.002 * lm])
        rows = []
        step = max(1, (len(path.breakpoints) - 1) // 40)  # at most ≈ 40 evaluations on the held-out logits per path
        for lam, th in list(zip(path.breakpoints[1:], path.coefs[1:]))[::step]:
            m = A.dependency_metrics(test["logits"], th, i, labels=test["labels"])
            rows.append((m["support"], m["rel_err"], m["pos_acc"], m["ori_pos_acc"], lam / lm, m["spread_rel_err"]))
        out[fit["names"][i]] = np.array(rows, dtype=float)
    return out


def draw_support_vs_error(curves: dict, title: str = ""):
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4.2))
    for j, (name, r) in enumerate(curves.items()):
        a1.semilogx(r[:, 0], r[:, 5], "-", color=f"C{j}", lw=1.2, label=f"category {name!r}")
        a1.semilogx(r[:, 0], r[:, 1], ":", color=f"C{j}", lw=1.0)
        rho = np.argmin(np.abs(r[:, 4] - RHO))
        a1.plot(r[rho, 0], r[rho, 5], "o", color=f"C{j}", ms=5)
        a2.semilogx(r[:, 0], r[:, 2] / np.maximum(r[:, 3], 1e-9), "-", color=f"C{j}", lw=1.2,
                    label=f"category {name!r}")
    a1.plot([], [], "o", color="0.4", ms=5, label=f"λ = {RHO}·λ_max")
    a1.axhline(0.30, ls="--", color="k", lw=1, label="Tab 1's worst rel err (0.30)")
    a1.axvspan(3, 4, color="0.85", label="paper: 3–4 categories")
    a1.set_xlabel("support (other categories in the dependency)")
    a1.set_ylabel("held-out error of the predicted logit (relative)")
    a1.set_title("error / logit's spread (solid, judged); error / |f| (dotted)", fontsize=9)
    a1.legend(fontsize=7)
    a2.axhline(0.85, ls="--", color="k", lw=1, label="0.85 (Tab 1's worst ratio)")
    a2.set_xlabel("support (other categories in the dependency)")
    a2.set_ylabel("positive accuracy / original (ratio)")
    a2.set_title("positive accuracy of the replaced logit", fontsize=10)
    a2.legend(fontsize=7)
    for a in (a1, a2):
        a.grid(alpha=0.3)
    fig.suptitle(title or "lenet-s0, exact CovLasso path, held-out faces", fontsize=10)
    return finish(fig)


def between_pairs(quick: bool, k: int = 4) -> dict:
    """Held-out g_i (lenet-s1) against its prediction from lenet-s0's other logits (Cov of f̃ on aug_test) and
    against lenet-s1's own other logits (within network), at λ = RHO·λ_max."""
    from theory.neural_dependency import mixed_logits

    f_fit, g_fit = GD.outputs("lenet-s0", quick, GD.FIT_SPLIT), GD.outputs("lenet-s1", quick, GD.FIT_SPLIT)
    f_te, g_te = GD.outputs("lenet-s0", quick, GD.TEST_SPLIT), GD.outputs("lenet-s1", quick, GD.TEST_SPLIT)
    Cg = A.second_moment(g_fit["logits"])
    out = {}
    for i in _cats(f_fit["logits"].shape[1], quick, k):
        C = A.second_moment(mixed_logits(f_fit["logits"], g_fit["logits"], i))
        th = A.covlasso_path(C, i, [RHO * A.lambda_max_i(C, i)])[0]
        tw = A.covlasso_path(Cg, i, [RHO * A.lambda_max_i(Cg, i)])[0]
        out[g_te["names"][i]] = {"g": g_te["logits"][:, i], "between": A.predict_logit(f_te["logits"], th, i),
                                 "within": A.predict_logit(g_te["logits"], tw, i), "pos": g_te["labels"] == i,
                                 "support": (int(np.count_nonzero(np.delete(th, i))),
                                             int(np.count_nonzero(np.delete(tw, i))))}
    return out


def draw_between(pairs: dict, title: str = ""):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(pairs), figsize=(3.6 * len(pairs), 3.8), squeeze=False)
    for ax, (name, p) in zip(axes[0], pairs.items()):
        ax.plot(p["g"], p["within"], ".", ms=2, color="0.6",
                label=f"from lenet-s1's own logits (support {p['support'][1]})")
        ax.plot(p["g"], p["between"], ".", ms=2, color="C0",
                label=f"from lenet-s0's logits (support {p['support'][0]})")
        ax.plot(p["g"][p["pos"]], p["between"][p["pos"]], "o", ms=4, mfc="none", color="C3",
                label="images of the category (from lenet-s0)")
        lo, hi = float(np.min(p["g"])), float(np.max(p["g"]))
        ax.plot([lo, hi], [lo, hi], "k-", lw=0.8, label="prediction = g_i")
        ax.set_title(f"category {name!r}", fontsize=9)
        ax.set_xlabel("g_i (lenet-s1 logit)")
        ax.set_ylabel("sparse prediction of g_i (logit)")
        ax.legend(fontsize=6)
    fig.suptitle(title or f"lenet-s1 logit i vs its sparse prediction, held-out faces, λ = {RHO}·λ_max", fontsize=10)
    return finish(fig)


def rank_and_cls_curves(quick: bool, name: str = "lenet-s0") -> dict:
    ranks = GD.layer_ranks(name, quick)
    fit, test = GD.outputs(name, quick, GD.FIT_SPLIT), GD.outputs(name, quick, GD.TEST_SPLIT)
    pc = A.ProjectedClassifier(fit["features"], test["features"], fit["W"], fit["b"])
    ks = np.unique(np.geomspace(1, pc.d, 20).astype(int))
    full = float(np.mean(pc.y_full == test["labels"]))
    return {"ranks": ranks, "k": ks, "acc": np.array([pc.agreement(k, test["labels"]) for k in ks]), "full": full,
            "d": pc.d}


def draw_rank_and_cls(c: dict, title: str = ""):
    import matplotlib.pyplot as plt

    r = c["ranks"]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    x = np.arange(len(r["layers"]))
    a1.semilogy(x, r["pca_dim"], "o-", label="PCA dimension (RD's float32 rule)")
    a1.semilogy(x, r["ambient"], "s--", color="0.6", label="ambient dimension")
    a1.axhline(r["sample_bound"], ls=":", color="C3", label=f"sample bound N − 1 = {r['sample_bound']}")
    a1.set_xticks(x)
    a1.set_xticklabels(r["layers"], rotation=30, fontsize=8)
    a1.set_xlabel("stage of the network (input → logits)")
    a1.set_ylabel("dimension (number of directions)")
    a1.set_title("PCA dimension per stage", fontsize=10)
    a1.legend(fontsize=7)
    a2.semilogx(c["k"], 100 * c["acc"], "o-", ms=3, label="held-out faces, PCA on aug_test")
    a2.axhline(95 * c["full"], ls="--", color="k", lw=1, label="0.95 × full accuracy")
    a2.set_xlabel(f"k (top principal directions of the final features, d = {c['d']})")
    a2.set_ylabel("accuracy vs true code points (%)")
    a2.set_title("accuracy of the features projected on k directions", fontsize=10)
    a2.legend(fontsize=7)
    for a in (a1, a2):
        a.grid(alpha=0.3)
    fig.suptitle(title or "lenet-s0: rank through the network (RD Sec 4) and ClsDim curve (RD Fig 2)", fontsize=10)
    return finish(fig)


@figure("nd.glyph_support_vs_error", answers="ND Tab 1 / Sec 2.1",
        caption="lenet-s0 on the glyph task (1000 code points; 100 in quick): held-out relative error and positive "
                "accuracy of the replaced logit against the support along the exact CovLasso path, for a seeded draw "
                "of target categories; the paper's 3–4 categories and Table 1's worst error marked.",
        checks=("nd.table1_metrics", "rd.independence_deficit"))
def fig_support_vs_error(quick: bool):
    return draw_support_vs_error(support_curves(quick, 4))


@figure("nd.glyph_between_networks", answers="ND Fig 2 e–f, Sec 2.4",
        caption="Two independently trained glyph LeNets: logit i of lenet-s1 on the held-out faces against its "
                "sparse prediction from lenet-s0's other logits (blue; positives circled) and from lenet-s1's own "
                "(grey).",
        checks=("nd.between_networks",))
def fig_between(quick: bool):
    return draw_between(between_pairs(quick, 3 if quick else 4))


@figure("rd.glyph_layer_ranks", answers="RD Sec 4 (Fig 1 analogue), RD Fig 2",
        caption="lenet-s0: PCA dimension of the input, every stage, the final features and the logits (RD Sec 4.3's "
                "ε = 1.19e−7 × N) on aug_test images; accuracy of the final features projected on their top-k "
                "principal directions (RD Eq 6 / Fig 2) on the held-out faces.",
        checks=("rd.cls_dim",))
def fig_layer_ranks(quick: bool):
    return draw_rank_and_cls(rank_and_cls_curves(quick))
