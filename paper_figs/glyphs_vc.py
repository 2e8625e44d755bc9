"""VC Sec 6.2 (Fig 3–6, 8) and Sec 6.3 (Fig 7) on the glyph LeNets trained here (sims.glyphs.vc_experiments)."""
from __future__ import annotations

import numpy as np

from paper_figs._layout import finish, legend_below
from paper_figs.registry import figure
from sims.glyphs import vc_experiments as ve

LABELS = {"vci": "VCI", "fuzziness": "fuzziness", "squared_distance": "squared distance",
          "cosine_similarity": "cosine similarity"}
SEEDS = {True: (0,), False: (0, 1, 2)}
SPLIT_NAMES = {"train": "training images", "aug_test": "held-out images, training fonts",
               "face_test": "unseen fonts (DejaVu Serif)"}


@figure("vc.glyph_collapse_curves", answers="VC Fig 3–6, App B Fig 8",
        caption="The four variability-collapse metrics of the final features of the glyph LeNet (105 classes, τ = 1, "
                "λ = 0) at its checkpoints (epoch 0 = initialisation; judged: epochs 1, 2, 4, 8), one line per seed. "
                "Rows: training images, held-out aug_test images (judged), held-out faces (face_test, reported). "
                "Grey band: epoch 0, the initialisation, not judged. VC Sec 6.2: VCI and fuzziness decrease; squared "
                "distance and cosine similarity need not. Circled "
                "fuzziness points: the paper's rank min(p, K − 1) is not resolved there (dead ReLU units), so the "
                "value sums fewer directions and is not comparable with the others.",
        checks=("vc.training_collapse",))
def draw_collapse(quick: bool):
    import matplotlib.pyplot as plt

    runs = [ve.collapse_curves(quick, s) for s in SEEDS[bool(quick)]]
    fig, axes = plt.subplots(len(ve.SPLITS), len(ve.METRICS), figsize=(14, 9), squeeze=False)
    for i, sp in enumerate(ve.SPLITS):
        for j, m in enumerate(ve.METRICS):
            a = axes[i, j]
            a.axvspan(-0.3, 0.5, color="0.9", zorder=0, label="epoch 0: initialisation (not judged)")
            for s, r in zip(SEEDS[bool(quick)], runs):
                line, = a.plot(r["epochs"], r[f"{sp}/metrics"][:, j], "o-", ms=3, label=f"seed {s}")
                fb = np.asarray(r[f"{sp}/fuzziness_fallback"], bool)
                if m == "fuzziness" and fb.any():  # fallback rank (dead units): not comparable with the others
                    a.plot(r["epochs"][fb], r[f"{sp}/metrics"][fb, j], "o", ms=9, mfc="none", color=line.get_color(),
                           label="circled: fuzziness at a smaller rank (dead units), not comparable")
            a.set_title(f"{LABELS[m]}\n{SPLIT_NAMES[sp]}", fontsize=9)
            a.set_xlabel("epoch")
            a.set_ylabel(LABELS[m] + " (dimensionless)")
            a.grid(True, alpha=0.3)
            if m in ("fuzziness", "squared_distance"):
                a.set_yscale("log")
    legend_below(fig)
    return finish(fig)


@figure("vc.glyph_transfer_correlation", answers="VC Fig 7",
        caption="Each metric (on the training images of the pretraining classes) against the mean log-odds gain of "
                "linear-probe transfer to four tasks of unseen code points (Eq 6), one point per network. Top: softmax "
                "temperature τ ∈ {0.1 … 1} at λ = 0. Bottom: within-class cosine regulariser λ (paper's grid / 10) at "
                "τ = 1. Titles: Pearson r. VC Sec 6.3: VCI correlates positively in both rows; the older metrics "
                "change sign.",
        checks=("vc.transfer_correlation",))
def draw_transfer(quick: bool):
    import matplotlib.pyplot as plt

    from theory.collapse import mlog

    pts = ve.transfer_grid(quick)
    grids = {"tau": ve.TAU_GRID[bool(quick)], "lambda": ve.LAMBDA_GRID[bool(quick)]}
    fig, axes = plt.subplots(2, len(ve.METRICS), figsize=(14, 6.5), squeeze=False)
    for i, g in enumerate(("tau", "lambda")):
        M = np.asarray([p["metrics"] for p in pts[g]])
        y = np.asarray([mlog(p["p_downstream"], p["p_pretrain"]) for p in pts[g]])
        for j, m in enumerate(ve.METRICS):
            a = axes[i, j]
            r = np.corrcoef(M[:, j], y)[0, 1] if np.std(M[:, j]) > 0 and np.std(y) > 0 else 0.0
            sc = a.scatter(M[:, j], y, c=np.asarray(grids[g]), cmap="viridis")
            a.set_xlabel(f"{LABELS[m]} (training images)")
            a.set_ylabel("MLOG (Eq 6)")
            a.set_title(f"{'τ' if g == 'tau' else 'λ'} group, MLOG vs {LABELS[m]}: Pearson r = {r:+.2f}", fontsize=8)
            a.grid(True, alpha=0.3)
        fig.colorbar(sc, ax=axes[i, -1],
                     label="softmax temperature τ" if g == "tau" else "within-class cosine regulariser λ")
    return finish(fig)
