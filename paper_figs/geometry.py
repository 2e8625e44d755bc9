"""Figures of ``theorylab geometry``: per-layer curves of the metric set and the layer-by-layer CKA heat map.

Drawing only (matplotlib figures from the numbers :mod:`verify.geometry_report` computed with
:mod:`sims.geometry`); not registered paper figures. The drawing lives in :mod:`sims.geometry.plots`, shared
with the Python API (``sims.geometry.cka_heatmap``, ``sims.geometry.layer_curves``).
"""
from __future__ import annotations

from sims.geometry.plots import CLASS_CURVES, CURVES, draw_cka, draw_curves

__all__ = ["CURVES", "CLASS_CURVES", "draw_curves", "draw_cka"]
