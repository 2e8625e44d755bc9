"""Figures of ``theorylab geometry``: per-layer curves of the metric set and the layer-by-layer CKA heat map.

Drawing only (matplotlib figures from the numbers :mod:`verify.geometry_report` computed with
:mod:`sims.geometry`); not registered paper figures.
"""
from __future__ import annotations

import numpy as np

CURVES = (("effective_rank", "effective rank (Roy & Vetterli)"), ("participation_ratio", "participation ratio"),
          ("stable_rank", "stable rank"), ("rankme", "RankMe (Garrido et al., σ)"))
CLASS_CURVES = (("nc1", "NC1 (sample weighting)"), ("vci", "VCI (VC Def 5.3)"), ("cdnv", "CDNV (mean over pairs)"))


def _values(metrics: dict, key: str) -> np.ndarray:
    out = []
    for m in metrics.values():
        v = m.get(key)
        out.append(float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else np.nan)
    return np.array(out)


def draw_curves(metrics: dict, title: str = ""):
    """Per-layer curves: dimension metrics (log scale, with the width p) and, with labels, the collapse metrics.
    Undefined entries (errors) are gaps."""
    import matplotlib.pyplot as plt

    names = list(metrics)
    x = np.arange(len(names))
    has_cls = any(isinstance(m.get("nc1"), (int, float)) for m in metrics.values())
    fig, axes = plt.subplots(1, 2 if has_cls else 1, figsize=(12 if has_cls else 7, 4), squeeze=False)
    a = axes[0][0]
    a.plot(x, _values(metrics, "p"), "k:", label="width p")
    for key, lab in CURVES:
        a.plot(x, _values(metrics, key), "o-", ms=3, label=lab)
    a.set_yscale("log")
    a.set_ylabel("dimension")
    a.legend(fontsize=7)
    if has_cls:
        b = axes[0][1]
        for key, lab in CLASS_CURVES:
            b.plot(x, _values(metrics, key), "o-", ms=3, label=lab)
        b.set_yscale("log")
        b.set_ylabel("collapse (lower: more collapsed)")
        b.legend(fontsize=7)
    for ax in axes[0]:
        ax.set_xticks(x)
        ax.set_xticklabels(names, rotation=60, ha="right", fontsize=6)
        ax.set_xlabel("layer")
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def draw_cka(cka: dict, title: str = ""):
    """Heat map of a CKA matrix ({"rows", "cols", "matrix"} with None for undefined entries, shown grey)."""
    import matplotlib.pyplot as plt

    rows, cols = cka.get("rows", cka["layers"]), cka.get("cols", cka["layers"])
    M = np.array([[np.nan if v is None else v for v in r] for r in cka["matrix"]], dtype=float)
    fig, ax = plt.subplots(figsize=(2 + 0.3 * len(cols), 1.6 + 0.3 * len(rows)))
    cmap = plt.get_cmap("viridis").with_extremes(bad="0.8")
    im = ax.imshow(np.ma.masked_invalid(M), vmin=0, vmax=1, cmap=cmap)
    ax.set_xticks(range(len(cols)))
    ax.set_xticklabels(cols, rotation=60, ha="right", fontsize=6)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(rows, fontsize=6)
    fig.colorbar(im, ax=ax, label=("debiased " if cka.get("debiased") else "") + "linear CKA")
    if title:
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    return fig
