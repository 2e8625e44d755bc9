"""Figures of the geometry metrics from Python: per-layer curves and the layer-by-layer CKA heat map.

``draw_curves(metrics)`` and ``draw_cka(cka)`` draw from the dicts of :func:`sims.geometry.all_metrics` and
:func:`sims.geometry.cka_matrix` (``theorylab geometry`` draws its two figures with these same functions, through
:mod:`paper_figs.geometry`). :func:`layer_curves` and :func:`cka_heatmap` take a
:class:`~sims.geometry.stats.GeometryState` (or those dicts, or for the heat map a square array of CKA values),
compute what they need and optionally save the figure (format from the file's suffix). matplotlib is imported
when a figure is drawn.
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


def _save(fig, path):
    if path is not None:
        fig.savefig(str(path), dpi=120, bbox_inches="tight")
    return fig


def _cka_dict(source, debiased: bool, layers) -> dict:
    from sims.geometry.cka_pairs import cka_matrix
    from sims.geometry.stats import GeometryState

    if isinstance(source, GeometryState):
        return cka_matrix(source, layers, debiased)
    if isinstance(source, dict):
        if "matrix" not in source:
            raise ValueError("source: a CKA dict needs 'matrix' and 'layers' (or 'rows' and 'cols'), as cka_matrix "
                             "returns")
        return source
    M = np.asarray(source, dtype=float)
    if M.ndim != 2:
        raise ValueError(f"source: a GeometryState, a cka_matrix dict or a 2-D array of CKA values, got shape "
                         f"{M.shape}")
    rows = list(layers) if layers is not None else [str(i) for i in range(M.shape[0])]
    if len(rows) != M.shape[0] or M.shape[0] != M.shape[1]:
        raise ValueError(f"layers: {len(rows)} names for a {M.shape} matrix (square, one name per row)")
    mat = [[None if not np.isfinite(v) else float(v) for v in r] for r in M]
    return {"layers": rows, "matrix": mat, "debiased": bool(debiased)}


def cka_heatmap(source, path=None, debiased: bool = True, layers=None, title: str | None = None):
    """The CKA heat map of a :class:`GeometryState` (``debiased`` or biased linear CKA between ``layers``, default
    all), of a :func:`~sims.geometry.cka_matrix` dict, or of a square array (``layers`` its names; NaN grey).
    Saved to ``path`` if given; returns the matplotlib Figure."""
    if not isinstance(debiased, (bool, np.bool_)):
        raise ValueError(f"debiased: must be True or False, got {debiased!r}")
    c = _cka_dict(source, bool(debiased), layers)
    label = ("debiased " if c.get("debiased") else "") + "linear CKA"
    return _save(draw_cka(c, label if title is None else title), path)


def layer_curves(source, path=None, title: str = "", spikes_level: float = 0.99):
    """Per-layer curves of a :class:`GeometryState` (its :func:`~sims.geometry.all_metrics`) or of that dict.
    Saved to ``path`` if given; returns the matplotlib Figure."""
    from sims.geometry.metrics import all_metrics
    from sims.geometry.stats import GeometryState

    if isinstance(source, GeometryState):
        metrics = all_metrics(source, spikes_level)
    elif isinstance(source, dict) and all(isinstance(v, dict) for v in source.values()) and source:
        metrics = source
    else:
        raise ValueError("source: a GeometryState or the {layer: metrics} dict of all_metrics")
    return _save(draw_curves(metrics, title), path)
