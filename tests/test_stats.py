"""theory.stats.mean_se: per-item and class-clustered standard errors of a mean difference."""
import math

import numpy as np
import pytest

from theory.stats import mean_se


def test_per_item_se_is_sd_over_root_n():
    d = np.array([1.0, 0.0, 0.0, 1.0, 1.0])
    assert mean_se(d) == pytest.approx((0.6, np.std(d, ddof=1) / math.sqrt(5)), rel=1e-15)


def test_clustered_se_is_the_se_of_cluster_means_for_equal_clusters():
    rng = np.random.default_rng(2)
    g = np.repeat(np.arange(12), 7)
    d = rng.normal(size=12)[g] + 0.3 * rng.normal(size=84)
    means = np.array([d[g == k].mean() for k in range(12)])
    m, se = mean_se(d, g)
    assert m == pytest.approx(d.mean(), abs=1e-15)
    assert se == pytest.approx(means.std(ddof=1) / math.sqrt(12), rel=1e-12)
    assert se > mean_se(d)[1]                         # correlated within clusters: the per-item SE is too small


def test_edge_cases_are_explicit():
    with pytest.raises(ValueError, match="d: is empty"):
        mean_se([])
    with pytest.raises(ValueError, match="d"):
        mean_se([1.0, float("nan")])
    with pytest.raises(ValueError, match="groups: need integer"):
        mean_se([1.0, 0.0], groups=[0.5, 1.5])
    assert mean_se([1.0])[1] == math.inf
    assert mean_se([1.0, 0.0], groups=[3, 3])[1] == math.inf   # one cluster: no SE
    with pytest.raises(ValueError, match="one label per item"):
        mean_se([1.0, 0.0], groups=[1])
