"""The miss arithmetic of the FG checks (tolerance units: ≤ 1 exactly when a condition holds) and their one-thread
wrapper, shared by :mod:`verify.checks.fg.model`, :mod:`~verify.checks.fg.training` and :mod:`~verify.checks.fg.scaling`."""
from __future__ import annotations

import math

import numpy as np

from sims.multiview.train import torch_threads


def _one_thread(fn):
    """Run a check with one torch thread: its tensors are small, and two threads on a shared 2-core machine
    spend most of their time waiting for each other (measured 10× slower)."""
    import functools

    @functools.wraps(fn)
    def wrapper(ctx, planted, **kw):
        with torch_threads(1 if str(ctx.device) == "cpu" else None):
            return fn(ctx, planted, **kw)

    return wrapper


def _le(x: float, bound: float) -> float:
    """Miss of ``x ≤ bound`` (x ≥ 0) in tolerance units: x / bound (≤ 1 exactly when it holds)."""
    return float(x) / bound


def _ge(x: float, bound: float) -> float:
    """Miss of ``x ≥ bound`` (bound > 0): 2 − x/bound, floored at 0; ≤ 1 exactly when it holds, and one unit
    per ``bound`` short of it."""
    return max(0.0, 2.0 - float(x) / bound)


def _within(x: float, lo: float, hi: float) -> float:
    """Miss of ``lo ≤ x ≤ hi``: distance from the centre in half-widths (≤ 1 exactly inside)."""
    return abs(float(x) - (lo + hi) / 2) / ((hi - lo) / 2)


def _increasing(seq) -> float:
    """Miss of 'strictly increasing': 0 when it is; else 1 + the largest drop relative to the mean level."""
    seq = np.asarray(seq, float)
    drops = -np.diff(seq)
    if np.all(drops < 0):
        return 0.0
    return 1.0 + float(max(drops.max(), 0.0) / max(np.abs(seq).mean(), 1e-300))


def _finite(m: float) -> float:
    return float(m) if math.isfinite(m) else float("inf")


def _loglog_slope(x, y) -> float:
    x, y = np.log(np.asarray(x, float)), np.log(np.maximum(np.asarray(y, float), 1e-12))
    return float(np.polyfit(x, y, 1)[0])
