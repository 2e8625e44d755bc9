"""Per-block figures on the real model: RD/VC curves through EfficientNet-Lite0, RD Fig 1 a–c.

Inputs: crops of the 17 scikit-image/scikit-learn photographs (a demonstration, not ImageNet); the class of the
VC metrics is the source photograph. Numbers come from :mod:`sims.real.blocks` (cached).
"""
from __future__ import annotations

import numpy as np

from paper_figs._layout import finish, separate_coincident
from paper_figs.registry import figure
from sims.real.blocks import real_block_curves, real_block_jacobian


@figure("rd.real_block_curves", answers="RD Fig 3 / VC Fig 2 analogue",
        caption="Through EfficientNet-Lite0 block by block (spatially pooled outputs, one capture pass; 17 "
                "photographs, not ImageNet): PCA dimension and ClsDim of a linear probe to the logits (RD), VCI and "
                "the older trace-ratio collapse metric (VC) with the source photograph as the class. ClsDim is missing "
                "where the probe never reaches 95 % agreement with the full model (every block before the head).",
        checks=())  # drawn by `theorylab figs` only: its capture (~1–2 min) is outside the checks' budget
def fig_block_curves(quick: bool):
    import matplotlib.pyplot as plt

    c = real_block_curves(quick)
    names = [str(v) for v in c["names"]]
    x = np.arange(len(names))
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.4))
    a.plot(x, c["width"], "k:", label="width (channels)")
    a.plot(x, c["pca_dim"], "o-", ms=3, label="PCA dimension (RD Sec 4.3)")
    a.plot(x, c["cls_dim"], "s-", ms=3, label="ClsDim of a linear probe (RD Eq 6)")
    a.set_yscale("log")
    a.set_ylabel("dimension (number of directions)")
    a.set_title(f"RD: dimensions per block (N = {int(c['n'])} crops)", fontsize=9)
    b.plot(x, c["vci"], "o-", ms=3, color="C0", label="VCI (VC Eq 3), left axis")
    b.set_ylabel("VCI (dimensionless)", color="C0")
    b2 = b.twinx()
    b2.plot(x, c["trace_ratio"], "s-", ms=3, color="C1", label="trace ratio (older metric), right axis")
    b2.set_ylabel("trace ratio Tr[Σ_T†Σ_B] (dimensionless)", color="C1")
    b.set_title("VC: collapse per block (class = source photograph)", fontsize=9)
    for ax in (a, b):
        ax.set_xticks(x, names, rotation=60, fontsize=7)
        ax.set_xlabel("EfficientNet-Lite0 block (output, spatially pooled)")
        ax.grid(alpha=0.3)
    a.legend(fontsize=7)
    lines = b.get_lines() + b2.get_lines()  # one legend for both axes of the right panel
    b.legend(lines, [ln.get_label() for ln in lines], fontsize=7)
    return finish(fig)


@figure("rd.real_block_jacobian", answers="RD Fig 1 a–c",
        caption="Numerical rank (RD Eq 4, float32 rule) of the partial Jacobian (RD Eq 5) of every sub-network "
                "F_k of EfficientNet-Lite0 on the central p×p×3 patch of the cat photograph, by batched JVPs "
                "(torch.func). p = 16 (the paper's) where the budget allows (CUDA), else the largest p that fits "
                "(stated in the title). The rank cannot exceed K = 3p² nor the block's output size (dotted); where the "
                "rank reaches that bound the two series coincide and are drawn as concentric rings.",
        checks=())  # drawn by `theorylab figs` only (cached; minutes on CPU the first time)
def fig_block_jacobian(quick: bool):
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    r = real_block_jacobian(quick)
    names = [str(v) for v in r["names"]]
    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(8, 4.2))
    rank = ax.plot(x, r["ranks"], "o-", ms=4, label="rank of the partial Jacobian of F_k")
    bound = ax.plot(x, np.minimum(r["dims"], r["K"]), "k:", label="min(output size, K)")
    note = separate_coincident(rank + bound)  # the rank reaches the bound at every block: the lines coincide
    ax.set_xticks(x, names, rotation=60, fontsize=7)
    ax.set_xlabel("EfficientNet-Lite0 sub-network F_k (input → output of the block)")
    ax.set_ylabel("numerical rank (directions)")
    small = "" if int(r["patch"]) == 16 else (f"\nsmaller than the paper's 16×16×3: the budget ({r['device']}, "
                                               f"{float(r['seconds']):.0f} s)")
    ax.set_title(f"partial-Jacobian rank per block, {int(r['patch'])}×{int(r['patch'])}×3 patch (K = {int(r['K'])})"
                 + small, fontsize=9)
    ax.set_ylim(0, 1.25 * float(np.nanmax(np.r_[r["ranks"], np.minimum(r["dims"], r["K"])])))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(fontsize=8, title="the rank equals the bound at every block (rings)" if note else None,
              title_fontsize=7)
    ax.grid(alpha=0.3)
    return finish(fig)
