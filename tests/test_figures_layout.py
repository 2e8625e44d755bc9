"""Figures fit for a paper (issue 37 §4): every registered figure, drawn in quick mode, has x and y labels on every
axes with data (a twin axis and a colorbar included), no legend over plotted data or over another legend, no text
outside the canvas and no two texts on top of each other (paper_figs._layout.layout_faults). Planted figures show
that the checker flags each fault and passes a clean figure, and that the helpers every figure ends with
(``finish``, ``separate_coincident``) give figures it passes."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from paper_figs import registry as figreg  # noqa: E402
from paper_figs._layout import finish, layout_faults, legend_below, separate_coincident  # noqa: E402

FIGURES = figreg.discover()


@pytest.fixture
def fig_factory():
    made = []

    def make(*a, **k):
        fig, ax = plt.subplots(*a, **k)
        made.append(fig)
        return fig, ax

    yield make
    for f in made:
        plt.close(f)


@pytest.mark.parametrize("fid", sorted(FIGURES))
def test_every_figure_is_laid_out_for_a_paper(fid):
    try:
        fig = FIGURES[fid].draw(True)
    except ImportError as e:  # an optional extra that is not installed: `verify` skips the figure the same way
        pytest.skip(f"{fid} needs {e.name or e}")
    try:
        faults = layout_faults(fig)
    finally:
        plt.close(fig)
    assert not faults, f"{fid}:\n" + "\n".join(faults)


# ------------------------------------------------------------------ the checker flags each planted fault


def _clean(make):
    fig, ax = make(figsize=(5, 3.5))
    x = np.linspace(0, 1, 50)
    ax.plot(x, x ** 2, label="x²")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m²)")
    ax.set_title("a clean figure")
    ax.legend(loc="upper left")
    fig.tight_layout()
    return fig, ax


def test_a_clean_figure_has_no_fault(fig_factory):
    fig, _ = _clean(fig_factory)
    assert layout_faults(fig) == []


def test_flags_an_empty_axis_label(fig_factory):
    fig, ax = _clean(fig_factory)
    ax.set_xlabel("")
    assert any("empty x label" in f for f in layout_faults(fig))
    ax.set_xlabel("x (m)")
    ax.set_ylabel("   ")
    assert any("empty y label" in f for f in layout_faults(fig))


def test_a_shared_axis_label_counts_but_a_twin_needs_its_own_y_label(fig_factory):
    fig, (a, b) = fig_factory(2, 1, sharex=True, figsize=(5, 5))
    for ax in (a, b):
        ax.plot([0, 1], [0, 1])
        ax.set_ylabel("y (s)")
    b.set_xlabel("x (m)")  # the upper axes shares it
    fig.tight_layout()
    assert layout_faults(fig) == []
    t = b.twinx()
    t.plot([0, 1], [1, 0], color="C1")
    fig.tight_layout()
    faults = layout_faults(fig)
    assert len(faults) == 1 and "empty y label" in faults[0]


def test_flags_a_colorbar_without_a_label(fig_factory):
    fig, ax = fig_factory(figsize=(5, 3.5))
    sc = ax.scatter([0, 1, 2], [0, 1, 0], c=[0, 1, 2])
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    cb = fig.colorbar(sc, ax=ax)
    fig.tight_layout()
    assert any("colorbar without a label" in f for f in layout_faults(fig))
    cb.set_label("z (K)")
    assert layout_faults(fig) == []


@pytest.mark.parametrize("kind", ["vertices", "segment only", "scatter", "bar", "step histogram", "text"])
def test_flags_a_legend_over_data(fig_factory, kind):
    fig, ax = fig_factory(figsize=(5, 3.5))
    if kind == "vertices":
        ax.plot(np.linspace(0, 1, 40), np.full(40, 0.5), label="flat")
    elif kind == "segment only":  # two vertices at the far ends: only the segment between them is under the legend
        ax.plot([0, 1], [0.5, 0.5], label="flat")
    elif kind == "scatter":
        ax.scatter([0.0, 0.5, 1.0], [0.0, 0.5, 1.0], label="points")
    elif kind == "bar":
        ax.bar([0, 1, 2], [1, 2, 1], label="bars")
    elif kind == "step histogram":
        ax.hist(np.random.default_rng(0).normal(size=500), bins=15, histtype="step", label="hist")
    else:
        ax.plot([0, 1], [0, 0.02], label="low line")
        ax.set_ylim(0, 1)
        ax.text(0.5, 0.5, "a note in the middle", ha="center", va="center")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.legend(loc="upper center" if kind == "step histogram" else "center")  # the histogram's peak / the middle
    fig.tight_layout()
    faults = layout_faults(fig)
    assert any("legend" in f and "covers" in f for f in faults), faults


def test_flags_a_legend_over_the_data_of_a_twin_axis_and_over_another_legend(fig_factory):
    fig, ax = fig_factory(figsize=(5, 3.5))
    ax.plot([0, 1], [0, 0.1], label="low")
    ax.set_ylim(0, 1)
    t = ax.twinx()
    t.plot([0, 1], [0.5, 0.5], color="C1", label="twin")
    t.set_ylim(0, 1)
    ax.set_xlabel("x (m)")
    ax.set_ylabel("left (m)")
    t.set_ylabel("right (s)")
    ax.legend(loc="center")
    fig.tight_layout()
    assert any("covers line 'twin'" in f for f in layout_faults(fig))
    t.legend(loc="center")
    assert any("another legend" in f for f in layout_faults(fig))


def test_spans_are_background_not_data(fig_factory):
    fig, ax = _clean(fig_factory)
    ax.axvspan(0, 0.45, color="0.9", zorder=0, label="a band")
    ax.legend(loc="upper left")
    assert layout_faults(fig) == []


@pytest.mark.parametrize("where", ["figure text right", "figure text below", "long title", "axes text"])
def test_flags_text_outside_the_canvas(fig_factory, where):
    fig, ax = _clean(fig_factory)
    if where == "figure text right":
        fig.text(0.98, 0.5, "sticks out to the right")
    elif where == "figure text below":
        fig.text(0.5, -0.02, "below the canvas", va="top")
    elif where == "long title":
        ax.set_title("a title far too long for this small figure, which runs over both edges of the canvas")
    else:
        ax.text(1.3, 0.5, "beside the axes", transform=ax.transAxes)
    faults = layout_faults(fig)
    assert any("outside the canvas" in f for f in faults), faults


def test_flags_two_texts_on_top_of_each_other_but_not_rotated_neighbours(fig_factory):
    fig, ax = _clean(fig_factory)
    ax.text(0.3, 0.8, "first note", transform=ax.transAxes)
    ax.text(0.32, 0.81, "second note", transform=ax.transAxes)
    assert any("overlaps" in f for f in layout_faults(fig))
    fig2, ax2 = fig_factory(figsize=(5, 3.5))
    ax2.plot(range(20), range(20))
    ax2.set_xticks(range(20), [f"block{i}" for i in range(20)], rotation=60, fontsize=7)
    ax2.set_xlabel("block")
    ax2.set_ylabel("value (1)")
    fig2.tight_layout()
    assert layout_faults(fig2) == []  # their upright boxes overlap, the rotated texts do not
    ax2.set_xticks(range(20), [f"block{i}" for i in range(20)], rotation=0, fontsize=9)
    assert any("overlaps" in f for f in layout_faults(fig2))


# ------------------------------------------------------------------ the helpers give figures the checker passes


def test_finish_moves_a_legend_off_the_data(fig_factory):
    fig, ax = fig_factory(figsize=(5, 3.5))
    x = np.linspace(0, 1, 60)
    ax.plot(x, 1 - x, label="falling")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.legend(loc="upper left")  # on the line
    fig.tight_layout()
    assert layout_faults(fig)
    finish(fig)
    assert layout_faults(fig) == []


def test_finish_puts_a_legend_outside_when_no_corner_is_free(fig_factory):
    fig, (a, b) = fig_factory(1, 2, figsize=(8, 3.5))
    rng = np.random.default_rng(1)
    for ax in (a, b):
        ax.scatter(rng.uniform(size=3000), rng.uniform(size=3000), s=2, label="everywhere")
        ax.set_xlabel("x (m)")
        ax.set_ylabel("y (m)")
        ax.legend(loc="upper right")
    finish(fig)
    assert layout_faults(fig) == []
    r = fig.canvas.get_renderer()
    for ax in (a, b):
        lb, ab = ax.get_legend().get_window_extent(r), ax.bbox
        assert lb.x0 >= ab.x1 or lb.y1 <= ab.y0  # right of the axes or under it


def test_finish_labels_log_axes_with_powers_of_ten_or_plain_decimals(fig_factory):
    fig, (a, b) = fig_factory(1, 2, figsize=(8, 3.5))
    a.semilogy([0, 1, 2, 3], [25.9, 16.5, 16.4, 21.8])  # less than a decade: was "2.6×10¹"-style minor labels
    b.semilogy([0, 1, 2], [1e-6, 1e-3, 1.0])
    for ax in (a, b):
        ax.set_xlabel("epoch")
        ax.set_ylabel("value (1)")
    finish(fig)
    fig.canvas.draw()
    narrow = [t.get_text() for t in a.get_yticklabels(minor=False) + a.get_yticklabels(minor=True) if t.get_text()]
    assert narrow and all(s.replace(".", "").isdigit() for s in narrow), narrow
    wide = [t.get_text() for t in b.get_yticklabels(minor=False) if t.get_text()]
    assert wide and all("10^" in s for s in wide), wide
    assert not [t.get_text() for t in b.get_yticklabels(minor=True) if t.get_text()]


def test_separate_coincident_rings_equal_series_and_names_them(fig_factory):
    fig, ax = fig_factory()
    x = np.arange(10.0)
    lines = ax.plot(x, 0 * x, "-", label="a") + ax.plot(x, 0 * x, "--", label="b") + ax.plot(x, x, label="c")
    note = separate_coincident(lines)
    assert note == "a and b coincide"
    assert lines[0].get_markersize() > lines[1].get_markersize()
    assert lines[0].get_markerfacecolor() == "none" and lines[2].get_marker() in ("None", None, "")
    ax.set_xscale("log")  # x = 0 cannot show on a log axis: not compared
    other = ax.plot(np.r_[-1.0, x[1:]], 0 * x, label="d")
    assert "d" in separate_coincident([lines[0], other[0]])


def test_legend_below_makes_room_under_the_axes(fig_factory):
    fig, axes = fig_factory(2, 2, figsize=(7, 5))
    for i, ax in enumerate(axes.flat):
        ax.plot([0, 1], [0, 1], label="rising")
        ax.plot([0, 1], [1, 0], "--", label="falling")
        ax.set_xlabel("x (m)")
        ax.set_ylabel("y (m)")
    legend_below(fig)
    finish(fig)
    assert layout_faults(fig) == []



def test_the_analyze_figures_are_laid_out_for_a_paper():
    """The figures `theorylab analyze` draws (paper_figs.real; not registered: drawn here from made-up numbers of
    the shapes analyze passes)."""
    from paper_figs import real as R

    rng = np.random.default_rng(0)
    th = rng.normal(size=(4, 30)) * (rng.uniform(size=(4, 30)) < 0.2)
    sol = {"cats": np.array([1, 5, 9, 12]), "thetas": th, "lams": np.full(4, 0.2),
           "cov_rows": rng.uniform(0.01, 1, size=(4, 30))}
    ks = np.array([1, 2, 4, 8, 16, 32, 64])
    cls = {"k": ks, "in_sample": np.linspace(0.1, 1, 7), "held_out": np.linspace(0.05, 0.9, 7), "cls_dim": 16,
           "d": 64, "n": 128, "threshold": 0.95, "labelled": False, "full_acc": 1.0}
    rows = [{"category": i, "within": {"rel_err": 0.1 + 0.05 * i, "support": 3},
             "between": {"rel_err": 0.2 + 0.03 * i, "support": 4},
             "true": rng.normal(size=50), "pred": rng.normal(size=50)} for i in range(4)]
    drawn = {"cov_vs_coef": lambda: R.draw_cov_vs_coef(sol), "dependency_graph": lambda: R.draw_dependency_graph(sol),
             "cls_dim": lambda: R.draw_cls_dim(cls), "between": lambda: R.draw_between({"rows": rows})}
    faults = {}
    for name, draw in drawn.items():
        fig = draw()
        try:
            faults[name] = layout_faults(fig)
        finally:
            plt.close(fig)
    assert not any(faults.values()), faults
