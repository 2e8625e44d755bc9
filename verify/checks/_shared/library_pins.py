"""Known-answer pins of library functions that a check's reported numbers go through but its own comparison does
not: each is called by the checks that read the function's output, computes it on a constructed input whose answer
is known in closed form, and raises ValueError (the check fails) when the library disagrees. A library slip in one
of them (a PCA without centring, a clustered SE that ignores its clusters) would otherwise change a published
number under an unchanged status."""
from __future__ import annotations

import math

import numpy as np


def pca_dim_pinned() -> None:
    """theory.rank.pca_dim on 200 samples of rank-3 features in 12 dimensions, offset by 100 along every axis: the
    PCA dimension is 3 (the offset is the mean, which PCA removes; an uncentred count gives 4), by both routes."""
    from theory.rank import pca_dim

    rng = np.random.default_rng(20261130)
    X = 100.0 + rng.normal(size=(200, 3)) @ rng.normal(size=(3, 12))
    got = {m: pca_dim(X, method=m) for m in ("svd", "cov")}
    if got != {"svd": 3, "cov": 3}:
        raise ValueError(f"theory.rank.pca_dim: rank-3 features offset by 100 give {got}, not 3 (PCA must centre)")


def clustered_se_pinned() -> None:
    """theory.stats.mean_se clustered: 4 clusters of 5 equal items (values 0, 1, 3, 7): with equal clusters the
    cluster-robust SE is the SE of the 4 cluster means, sd(ddof 1)/√4 = 1.5275…; the per-item SE (clusters ignored)
    is 0.6780…"""
    from theory.stats import mean_se

    c = np.array([0.0, 1.0, 3.0, 7.0])
    d, g = np.repeat(c, 5), np.repeat(np.arange(4), 5)
    want = float(np.std(c, ddof=1) / math.sqrt(4))
    _, se = mean_se(d, g)
    if not abs(se - want) <= 1e-12 * want:
        raise ValueError(f"theory.stats.mean_se: clustered SE {se:.6g} on 4 equal clusters, not the SE of the cluster "
                         f"means {want:.6g}")


def probe_pinned() -> None:
    """sims.glyphs.probe.linear_probe on two classes at x = ∓1 (+ small noise) in 2-D, scored on test samples of
    class 1 only, at x ∈ [0.6, 1.4]: standardised with the training statistics every one lies on class 1's side
    (accuracy 1). A probe that standardises the test features with their own statistics centres them on 0 and
    calls about half of them class 0."""
    from sims.glyphs.probe import linear_probe

    rng = np.random.default_rng(20261130)
    y = np.repeat([0, 1], 40)
    X = np.column_stack([np.where(y == 1, 1.0, -1.0) + 0.1 * rng.normal(size=80), rng.normal(size=80)])
    Xt = np.column_stack([np.linspace(0.6, 1.4, 20), rng.normal(size=20)])
    acc = linear_probe(X, y, Xt, np.ones(20, np.int64))["acc"]
    if acc != 1.0:
        raise ValueError(f"sims.glyphs.probe.linear_probe: accuracy {acc:.3f} on test samples that lie on class 1's "
                         "side of the training data, not 1 (are the test features standardised with the training "
                         "statistics?)")


def probe_bias_pinned() -> None:
    """sims.glyphs.probe.linear_probe on three classes along one axis (x near 0, 1, 4; a second, noise axis), scored on
    test samples of the middle class at its training location: the middle class wins only through the probe's biases
    (logits without them are lines through the standardised origin, where one of the outer classes always leads), so
    the accuracy must be ≥ 0.9; a probe that drops its bias at prediction scores 0."""
    from sims.glyphs.probe import linear_probe

    rng = np.random.default_rng(20261201)
    y = np.repeat([0, 1, 2], 40)
    centre = np.array([0.0, 1.0, 4.0])
    X = np.column_stack([centre[y] + 0.1 * rng.normal(size=120), rng.normal(size=120)])
    Xt = np.column_stack([1.0 + 0.1 * rng.normal(size=20), rng.normal(size=20)])
    acc = linear_probe(X, y, Xt, np.ones(20, np.int64))["acc"]
    if acc < 0.9:
        raise ValueError(f"sims.glyphs.probe.linear_probe: accuracy {acc:.3f} on the middle of three classes on a line "
                         "(it wins only through the biases), not ≥ 0.9: does the probe predict with its bias?")
