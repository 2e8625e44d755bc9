"""FG Sec 1 / Fig 2 on the glyph LeNets trained here: script-probe accuracy against pretraining granularity."""
from __future__ import annotations

import numpy as np

from paper_figs._layout import finish
from paper_figs.glyphs_vc import SPLIT_NAMES
from paper_figs.registry import figure
from sims.glyphs import glyph_task
from sims.glyphs import granularity as gr
from sims.glyphs import pretrain as pt

SEEDS = {True: (0,), False: (0, 1, 2)}


@figure("fg.glyph_granularity", answers="FG Fig 2, App A",
        caption="Coarse task (the script, 7 classes) learned by a linear probe on frozen LeNet features pretrained "
                "at three label granularities (script = the baseline, base letter, code point) on the same images; "
                "held-out aug_test (left) and unseen faces (face_test, right); all images, easy and hard ones (hard: "
                "classes whose appearance is closer to another script's mean appearance than to their own). One line "
                "per seed. FG: accuracy grows with granularity, most on hard samples.",
        checks=("fg.label_granularity",))
def draw_granularity(quick: bool):
    import matplotlib.pyplot as plt

    h = gr.hard_classes(quick)
    coarse = np.asarray(glyph_task(pt.task_config(quick)).labels(gr.COARSE))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), squeeze=False)
    x = np.arange(len(gr.LEVELS))
    for a, sp in zip(axes[0], gr.EVAL_SPLITS):
        for s in SEEDS[bool(quick)]:
            runs = gr.granularity_runs(quick, s)
            fine = runs[gr.LEVELS[0]][f"{sp}/fine"]
            hard = h["hard"][np.searchsorted(h["classes"], fine)]
            for part, mask, style in (("all", np.ones_like(hard), "o-"), ("easy", ~hard, "s--"), ("hard", hard, "^:")):
                acc = [np.mean((np.asarray(runs[lv][f"{sp}/pred"]) == coarse[fine])[mask]) for lv in gr.LEVELS]
                a.plot(x, acc, style, color={"all": "C0", "easy": "C2", "hard": "C3"}[part],
                       label=part if s == 0 else None, alpha=0.8)
        a.set_xticks(x, [f"{lv}\n({int(runs[lv]['n_labels'])} labels)" for lv in gr.LEVELS])
        a.set_xlabel("label granularity of the pretraining")
        a.set_ylabel("script accuracy of the linear probe (fraction)")
        a.set_title(f"script probe on {SPLIT_NAMES[sp]}")
        a.grid(True, alpha=0.3)
        a.legend(fontsize=8, title="images", title_fontsize=8)
    return finish(fig)
