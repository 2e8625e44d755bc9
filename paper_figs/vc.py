"""VC figures: Σ_B / Σ_T spectra (Fig 2), collapse metrics over training (Fig 1, 3, 6 analogues), and
each metric against MLOG from the paper's tables (Fig 7)."""
from __future__ import annotations

import numpy as np

from paper_figs._layout import finish, legend_below
from paper_figs.registry import figure
from sims.collapse_training import TASKS, load_tables, training_runs

TITLES = {"digits": "digits (K = 10, p = 64)", "manyclass": "synthetic (K = 100, p = 128)"}
TITLES_QUICK = {"digits": "digits (K = 10, p = 64)", "manyclass": "synthetic (K = 50, p = 64)"}


@figure("vc.fig2_spectra", answers="VC Fig 2",
        caption="Eigenvalues of Σ_B and Σ_T (descending) of the penultimate-layer training features of the two small "
                "MLPs, at initialisation (dashed) and after training (solid). The dotted line marks index "
                "min(p, K−1), the rank the paper keeps; Σ_B's trailing retained eigenvalues are orders of magnitude "
                "below its leading ones, while Σ_T's spectrum is larger and flatter.",
        checks=("vc.numerical_stability",))
def fig2(quick: bool):
    import matplotlib.pyplot as plt

    runs = training_runs(quick=quick)
    fig, axes = plt.subplots(1, len(TASKS), figsize=(11, 4))
    for ax, task in zip(axes, TASKS):
        r = runs[task]
        K, p = int(r["K"]), int(r["p"])
        for key, color, label in (("b", "C3", "Σ_B"), ("t", "C0", "Σ_T")):
            for stage, ls in (("init", "--"), ("final", "-")):
                w = np.clip(r[f"spec_{key}_{stage}"], 1e-18, None)
                ax.semilogy(np.arange(1, len(w) + 1), w, ls, color=color, lw=1.2,
                            label=f"{label} ({'init' if stage == 'init' else 'trained'})")
        ax.axvline(min(p, K - 1), color="k", ls=":", lw=1, label=f"index min(p, K−1) = {min(p, K - 1)}")
        ax.set_xlabel("eigenvalue index (descending)")
        ax.set_ylabel("eigenvalue (clipped at 1e-18)")
        ax.set_title(f"spectra of Σ_B and Σ_T, {(TITLES_QUICK if quick else TITLES)[task]}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    return finish(fig)


METRICS = (("fuzziness", "Fuzziness Tr[Σ_B†Σ_W]", True), ("squared_distance", "Squared Distance (Eq 4)", True),
           ("cosine_similarity", "Cosine 'Similarity' d̄_within", False), ("vci", "VCI (Def 5.3)", False))
YLABELS = {"fuzziness": "fuzziness", "squared_distance": "squared distance",
           "cosine_similarity": "cosine 'similarity'", "vci": "VCI"}


@figure("vc.training_metrics", answers="VC Fig 1, Fig 3, Fig 6",
        caption="Collapse metrics of the penultimate-layer features over training (cross-entropy, SGD, cosine "
                "schedule), on the training set (solid) and the test set (dashed); top: digits MLP, bottom: "
                "synthetic many-class task. Last column (Fig 1 analogue): Squared Distance split into its V_B and "
                "V_B⊥ parts, (1/N)Σ‖Proj(h − μ_k)‖²/Tr Σ_B, on the training set.",
        checks=("vc.vb_projection",))
def training_metrics(quick: bool):
    import matplotlib.pyplot as plt

    runs = training_runs(quick=quick)
    fig, axes = plt.subplots(len(TASKS), 5, figsize=(17, 6.5))
    for row, task in zip(axes, TASKS):
        r = runs[task]
        ep = r["epoch"]
        for ax, (key, title, logy) in zip(row, METRICS):
            for split, ls in (("train", "-"), ("test", "--")):
                ax.plot(ep, r[f"{split}__{key}"], ls, color="C0" if split == "train" else "C1",
                        label=f"{split} set")
            if logy:
                ax.set_yscale("log")
            ax.set_title(f"{(TITLES_QUICK if quick else TITLES)[task]}:\n{title}", fontsize=9)
            ax.set_xlabel("epoch")
            ax.set_ylabel(f"{YLABELS[key]} (dimensionless)", fontsize=9)
            ax.grid(True, alpha=0.3)
        ax = row[4]
        trw = r["train__within_vb"] + r["train__within_vb_perp"]
        trb = trw / r["train__squared_distance"]
        ax.semilogy(ep, r["train__within_vb"] / trb, color="C2", label="V_B part (training set)")
        ax.semilogy(ep, np.clip(r["train__within_vb_perp"] / trb, 1e-12, None), color="C4",
                    label="V_B⊥ part (training set)")
        ax.set_title(f"{(TITLES_QUICK if quick else TITLES)[task]}:\nSquared Distance split (Fig 1), training set",
                     fontsize=9)
        ax.set_xlabel("epoch")
        ax.set_ylabel("part of Squared Distance (dimensionless)", fontsize=9)
        ax.grid(True, alpha=0.3)
    legend_below(fig, ncols=4)
    return finish(fig)


@figure("vc.fig7_tables", answers="VC Fig 7",
        caption="Each metric of App C Table 2 against MLOG recomputed from the Table 1 and Table 2 accuracies "
                "(Eq 6), with the Pearson r of each group (τ: softmax temperature, λ: cosine regulariser) in the "
                "legend. Only VCI keeps the same (positive) sign in both groups.",
        checks=("vc.paper_tables",))
def fig7(quick: bool):
    import matplotlib.pyplot as plt

    from theory.collapse import mlog

    t = load_tables()
    names = ("pets", "flowers", "aircraft", "cars", "dtd", "cifar10", "food101", "cifar100", "caltech", "sun397")
    ml = mlog(np.stack([t[n] for n in names], axis=1), t["accuracy"], percent=True)
    fig, axes = plt.subplots(1, 4, figsize=(15, 3.8))
    for ax, (col, title) in zip(axes, (("fuzziness", "Fuzziness"), ("sqr_dist", "Squared Distance"),
                                       ("cos_sim", "Cos Sim"), ("vci", "VCI"))):
        for g, color, marker, label in (("tau", "C0", "o", "τ group"), ("lambda", "C3", "s", "λ group")):
            s = t["group"] == g
            r = np.corrcoef(t[col][s], ml[s])[0, 1]
            ax.plot(t[col][s], ml[s], marker, color=color, label=f"{label}: r = {r:+.2f}")
        ax.set_xlabel(f"{title} (App C Table 2)")
        ax.set_ylabel("MLOG (Eq 6)")
        ax.set_title(f"MLOG vs {title}", fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    return finish(fig)
