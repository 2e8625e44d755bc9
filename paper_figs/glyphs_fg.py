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
        caption="Coarse task (the script) learned by a linear probe on frozen LeNet features pretrained along a "
                "ladder of label granularities (script = the baseline, k-means sub-labels of the code points within "
                "each script, code point) on the same images. Top: the judged run in FG App A.1's regime (per "
                "script 3 well-aligned and 2 poorly aligned code points, 100 training images each); bottom: the "
                "main run (105 code points, 24 images each: outside A.1). Held-out aug_test (left) and unseen faces "
                "(face_test, right); all images, easy and hard ones (hard: classes whose appearance is closer to "
                "another script's mean appearance than to their own). One line per seed. FG: accuracy grows with "
                "granularity, most on hard samples.",
        checks=("fg.label_granularity",))
def draw_granularity(quick: bool):
    import matplotlib.pyplot as plt

    from sims.glyphs import networks as nw

    coarse = np.asarray(glyph_task(pt.task_config(quick)).labels(gr.COARSE))
    fig, axes = plt.subplots(2, 2, figsize=(11, 8.4), squeeze=False)
    for row, (regime, name) in zip(axes, (("a1", "FG App A.1's regime"), ("main", "main run, outside A.1"))):
        h = gr.hard_classes(quick, regime)
        levels = nw.levels(regime, quick)
        x = np.arange(len(levels))
        for a, sp in zip(row, gr.EVAL_SPLITS):
            for s in SEEDS[bool(quick)]:
                runs = gr.granularity_runs(quick, s, regime=regime)
                fine = runs[levels[0]][f"{sp}/fine"]
                hard = h["hard"][np.searchsorted(h["classes"], fine)]
                for part, mask, style in (("all", np.ones_like(hard), "o-"), ("easy", ~hard, "s--"),
                                          ("hard", hard, "^:")):
                    acc = [np.mean((np.asarray(runs[lv][f"{sp}/pred"]) == coarse[fine])[mask]) for lv in levels]
                    a.plot(x, acc, style, color={"all": "C0", "easy": "C2", "hard": "C3"}[part],
                           label=part if s == SEEDS[bool(quick)][0] else None, alpha=0.8)
            a.set_xticks(x, [f"{lv}\n({int(runs[lv]['n_labels'])} labels)" for lv in levels])
            a.set_xlabel("label granularity of the pretraining")
            a.set_ylabel("script accuracy of the linear probe")
            a.set_title(f"{name}: script probe on {SPLIT_NAMES[sp]}", fontsize=10)
            a.grid(True, alpha=0.3)
            a.legend(fontsize=8, title="images", title_fontsize=8)
    return finish(fig)
