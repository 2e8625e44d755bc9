"""Representation geometry of any torch model, layer by layer, in one streaming pass (docs/geometry.md).

* :mod:`~sims.geometry.stats`     — float64 shifted accumulators (torch, on the device) and the mergeable numpy
  :class:`GeometryState` (merge in any order = one pass to rounding)
* :mod:`~sims.geometry.capture`   — hooks on named modules of one or several models → a GeometryState
* :mod:`~sims.geometry.metrics`   — the per-layer metric set (theory.geometry / theory.collapse) from a state
* :mod:`~sims.geometry.cka_pairs` — layer-pair CKA matrices; two models compared on the same samples
* :mod:`~sims.geometry.distributed` — torch.distributed all-reduce of a state; Dask per-shard capture and merge
* :mod:`~sims.geometry.plots`     — per-layer curves and the CKA heat map from Python (matplotlib)
"""
from sims.geometry.capture import capture, capture_models
from sims.geometry.cka_pairs import cka_block, cka_matrix, compare_models
from sims.geometry.metrics import all_metrics, layer_metrics
from sims.geometry.plots import cka_heatmap, layer_curves
from sims.geometry.stats import GeometryState, merge_all

__all__ = ["capture", "capture_models", "cka_matrix", "cka_block", "compare_models", "all_metrics",
           "layer_metrics", "GeometryState", "merge_all", "cka_heatmap", "layer_curves"]
