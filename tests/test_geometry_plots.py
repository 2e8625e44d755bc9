"""Figures from the Python API (sims.geometry.plots): the CKA heat map and the per-layer curves, the same drawing
functions the ``theorylab geometry`` command uses (paper_figs.geometry re-exports them)."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

import paper_figs.geometry as cli_figs  # noqa: E402
from sims.geometry import all_metrics, capture, cka_heatmap, cka_matrix, layer_curves  # noqa: E402
from sims.geometry import plots  # noqa: E402


@pytest.fixture(scope="module")
def state():
    g = torch.Generator().manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 8), torch.nn.ReLU(),
                            torch.nn.Linear(8, 3))
    X = torch.randn(200, 6, generator=g)
    y = torch.randint(0, 3, (200,), generator=g)
    return capture(m, [(X[i:i + 50], y[i:i + 50]) for i in range(0, 200, 50)], ["0", "2", "4"], n_classes=3,
                   progress=False)


def image(fig):
    return fig.axes[0].get_images()[0].get_array()


def test_the_command_and_the_api_draw_with_the_same_functions():
    assert cli_figs.draw_cka is plots.draw_cka and cli_figs.draw_curves is plots.draw_curves


def test_cka_heatmap_from_a_state_a_dict_and_an_array(state, tmp_path):
    c = cka_matrix(state, debiased=True)
    fig = cka_heatmap(state, tmp_path / "cka.png")
    M = np.array([[np.nan if v is None else v for v in r] for r in c["matrix"]])
    assert np.allclose(np.ma.filled(image(fig), np.nan), M, equal_nan=True)  # the pixels are the CKA values
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["0", "2", "4"]
    assert (tmp_path / "cka.png").stat().st_size > 1000
    plt.close(fig)
    fig = cka_heatmap(c)
    assert np.allclose(np.ma.filled(image(fig), np.nan), M, equal_nan=True)
    plt.close(fig)
    A = np.array([[1.0, 0.5], [0.5, np.nan]])
    fig = cka_heatmap(A, layers=["a", "b"], debiased=False, title="t")
    assert image(fig).mask[1, 1] and image(fig)[0, 1] == 0.5  # NaN shown as undefined (grey)
    plt.close(fig)
    with pytest.raises(ValueError, match="layers"):
        cka_heatmap(A, layers=["a"])
    with pytest.raises(ValueError, match="source"):
        cka_heatmap(np.ones(3))
    with pytest.raises(ValueError, match="debiased"):
        cka_heatmap(A, debiased="yes")


def test_layer_curves_from_a_state(state, tmp_path):
    fig = layer_curves(state, tmp_path / "curves.pdf", title="net")
    metrics = all_metrics(state)
    line = next(ln for ln in fig.axes[0].get_lines() if ln.get_label().startswith("effective rank"))
    assert np.allclose(line.get_ydata(), [metrics[k]["effective_rank"] for k in ("0", "2", "4")])
    assert len(fig.axes) == 2  # with labels: the collapse panel too
    assert (tmp_path / "curves.pdf").stat().st_size > 1000
    plt.close(fig)
    with pytest.raises(ValueError, match="source"):
        layer_curves([1, 2])
