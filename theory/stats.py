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

from theory.validate import as_float_array


def mean_se(d, groups=None) -> tuple[float, float]:
    """(mean of ``d``, its standard error): per item, or clustered by ``groups`` (module doc). ``d``: a non-empty
    1-D array of finite numbers; ``groups``: one integer label per item. One item (or one cluster) gives SE = inf.
    Bad input is a ValueError / TypeError naming the argument."""
    d = as_float_array(d, "d", ndim=1)
    n = d.size
    if groups is None:
        return float(d.mean()), (float(d.std(ddof=1) / math.sqrt(n)) if n > 1 else math.inf)
    try:
        g = np.asarray(groups)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"groups: cannot be read as an array ({exc})") from None
    if g.ndim != 1 or g.size != n:
        raise ValueError(f"groups: need one label per item of d ({n}), got shape {g.shape}")
    if not (np.issubdtype(g.dtype, np.integer) or np.issubdtype(g.dtype, np.bool_)):
        raise ValueError(f"groups: need integer labels, got dtype {g.dtype}")
    _, k = np.unique(g, return_inverse=True)
    G = int(k.max()) + 1
    if G < 2:
        return float(d.mean()), math.inf
    sums = np.bincount(k, weights=d - d.mean(), minlength=G)
    return float(d.mean()), float(math.sqrt(G / (G - 1) * float(np.sum(sums**2))) / n)


__all__ = ["mean_se"]
