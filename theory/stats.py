"""Standard errors of a mean difference, per item or clustered: the uncertainty a paired comparison of two
classifiers on the same held-out images reports.

``mean_se(d, groups=None)`` returns (mean(d), SE). Per item: sd(d, ddof 1)/√n. Clustered (``groups``: one label
per item, e.g. the image's class): the cluster-robust (CR1) variance of the mean,
Var = G/(G−1) · Σ_g (Σ_{i∈g} (d_i − d̄))² / n², because items of one cluster (the held-out images of one class share
its drawing and its difficulty) are not independent; with equal clusters it is the SE of the G cluster means.
"""
from __future__ import annotations

import math

import numpy as np


def mean_se(d, groups=None) -> tuple[float, float]:
    """(mean of ``d``, its standard error): per item, or clustered by ``groups`` (module doc). Fewer than two items
    (or clusters) give SE = inf; an empty ``d`` a NaN mean."""
    d = np.asarray(d, dtype=np.float64).ravel()
    n = d.size
    if n == 0:
        return math.nan, math.inf
    if groups is None:
        return float(d.mean()), (float(d.std(ddof=1) / math.sqrt(n)) if n > 1 else math.inf)
    g = np.asarray(groups).ravel()
    if g.size != n:
        raise ValueError(f"groups: need one label per item ({n}), got {g.size}")
    _, k = np.unique(g, return_inverse=True)
    G = int(k.max()) + 1
    if G < 2:
        return float(d.mean()), math.inf
    sums = np.bincount(k, weights=d - d.mean(), minlength=G)
    return float(d.mean()), float(math.sqrt(G / (G - 1) * float(np.sum(sums**2))) / n)


__all__ = ["mean_se"]
