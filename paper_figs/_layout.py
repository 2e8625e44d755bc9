"""Layout of the paper figures: what a figure fit for a paper passes, and the helpers that make it pass.

* :func:`layout_faults` names every fault of a drawn figure: an axes with data and an empty x or y label (a twin
  axis included; a label on an axes sharing that axis counts, a colorbar needs its own), a legend whose box covers
  plotted data (line vertices and the segments between them, scatter points, bars, histogram outlines, texts
  inside the axes, of any axes under the box) or another legend, a text artist that reaches outside the
  figure canvas, and two texts (titles, labels, tick labels, notes) on top of each other. The comparisons are
  in display (pixel) coordinates, after a draw.
* :func:`finish` is every figure's last step: log axes get tidy labels (10^k at decades, plain decimals when the
  range holds fewer than two powers of ten, never "2.6×10¹"), ``tight_layout``, and every legend that covers
  data moves to the first free corner of its axes, else outside, to the right of the axes and its twin's labels.
* :func:`separate_coincident` makes series that are exactly equal visible (hollow concentric markers) and returns
  a note saying so, for the legend's title.

Only presentation: nothing here changes a plotted number. The module name starts with ``_``, so
:func:`paper_figs.registry.discover` does not import it as a figure module.
"""
from __future__ import annotations

import numpy as np

TOL = 1.0  # pixels: a point on a legend's frame or a text touching the canvas edge is not a fault
INSIDE = ("upper right", "upper left", "lower left", "lower right", "center right", "center left",
          "upper center", "lower center")


# ---------------------------------------------------------------------------------------------- geometry


def _renderer(fig):
    fig.draw_without_rendering()
    return fig.canvas.get_renderer()


def _polyline(xy: np.ndarray, step: float = 2.0) -> np.ndarray:
    """Points every ``step`` pixels along the segments of a display-space polyline (non-finite points cut it)."""
    xy = np.asarray(xy, float).reshape(-1, 2)
    out = [xy]
    for p0, p1 in zip(xy[:-1], xy[1:]):
        if not (np.isfinite(p0).all() and np.isfinite(p1).all()):
            continue
        n = min(int(np.hypot(*(p1 - p0)) / step), 5000)
        if n > 1:
            out.append(p0 + np.linspace(0, 1, n + 1)[1:-1, None] * (p1 - p0))
    pts = np.concatenate(out)
    return pts[np.isfinite(pts).all(1)]


def _inside(pts: np.ndarray, bb, tol: float = TOL) -> np.ndarray:
    return ((pts[:, 0] > bb.x0 + tol) & (pts[:, 0] < bb.x1 - tol)
            & (pts[:, 1] > bb.y0 + tol) & (pts[:, 1] < bb.y1 - tol))


def _boxes_meet(a, b, tol: float = TOL) -> bool:
    return a.x0 < b.x1 - tol and b.x0 < a.x1 - tol and a.y0 < b.y1 - tol and b.y0 < a.y1 - tol


def _is_colorbar(ax) -> bool:
    return hasattr(ax, "_colorbar")


def _data_shapes(ax, renderer):
    """(name, points, boxes) of what ``ax`` plots, in display coordinates, clipped to the axes: lines (vertices and
    segments, step draw styles applied), collections (scatter offsets, line and polygon outlines), bars and other
    data patches (bars as boxes, other outlines as points) and texts. Spans (axvspan/axhspan) are background."""
    from matplotlib.cbook import STEP_LOOKUP_MAP
    from matplotlib.collections import PathCollection
    from matplotlib.patches import Rectangle

    clip = ax.bbox
    shapes = []
    for ln in ax.get_lines():
        if not ln.get_visible():
            continue
        xy = np.asarray(ln.get_xydata(), float)
        if len(xy) == 0:
            continue
        if ln.get_linestyle() not in ("None", "", " ", "none"):
            xs, ys = STEP_LOOKUP_MAP[ln.get_drawstyle()](xy[:, 0], xy[:, 1])
            pts = _polyline(ln.get_transform().transform(np.column_stack([xs, ys])))
        elif ln.get_marker() not in (None, "None", "", " ", "none"):
            pts = ln.get_transform().transform(xy)
            pts = pts[np.isfinite(pts).all(1)]
        else:
            continue
        shapes.append((f"line {ln.get_label()!r}", pts[_inside(pts, clip, 0)], []))
    for co in ax.collections:
        if not co.get_visible():
            continue
        if isinstance(co, PathCollection) and len(co.get_offsets()):
            pts = co.get_offset_transform().transform(np.asarray(co.get_offsets(), float))
            pts = pts[np.isfinite(pts).all(1)]
        else:
            tr = co.get_transform()
            parts = [_polyline(tr.transform(p.vertices)) for p in co.get_paths() if len(p.vertices)]
            pts = np.concatenate(parts) if parts else np.empty((0, 2))
        shapes.append((f"{type(co).__name__} {co.get_label()!r}", pts[_inside(pts, clip, 0)], []))
    for p in ax.patches:
        if not p.get_visible() or p.get_data_transform() is not ax.transData:
            continue  # spans: background shading in axes coordinates on one side
        if isinstance(p, Rectangle):
            bb = p.get_window_extent(renderer)
            shapes.append((f"bar {p.get_label()!r}", np.empty((0, 2)), [bb]))
        else:
            pts = _polyline(p.get_transform().transform(p.get_path().vertices))
            shapes.append((f"{type(p).__name__} {p.get_label()!r}", pts[_inside(pts, clip, 0)], []))
    for t in ax.texts:
        if t.get_visible() and t.get_text().strip():
            shapes.append((f"text {t.get_text()!r}", np.empty((0, 2)), [t.get_window_extent(renderer)]))
    return shapes


def _legends(fig):
    out = [(ax, ax.get_legend()) for ax in fig.axes if ax.get_legend() is not None]
    return [(ax, lg) for ax, lg in out if lg.get_visible()] + [(None, lg) for lg in fig.legends if lg.get_visible()]


def legend_overlaps(fig, legend, renderer=None) -> list[str]:
    """What ``legend``'s box covers: data of any axes under it (see :func:`_data_shapes`), or another legend."""
    renderer = renderer or _renderer(fig)
    box = legend.get_window_extent(renderer)
    hits = []
    for ax in fig.axes:
        if not ax.get_visible() or _is_colorbar(ax) or not _boxes_meet(ax.bbox, box, 0):
            continue
        for name, pts, boxes in _data_shapes(ax, renderer):
            n = int(_inside(pts, box).sum()) + sum(_boxes_meet(b, box) for b in boxes)
            if n:
                hits.append(f"{name} ({n} point{'s' if n > 1 else ''})")
    for _, other in _legends(fig):
        if other is not legend and _boxes_meet(other.get_window_extent(renderer), box):
            hits.append("another legend")
    return hits


# ---------------------------------------------------------------------------------------------- the checks


def _drawn_texts(fig, renderer):
    """(where, Text) of every non-empty text the figure draws: figure texts, titles, axis labels, drawn tick
    labels, offset texts, texts inside axes, legend entries and titles."""
    found = [("figure", t) for t in fig.texts]
    for attr in ("_suptitle", "_supxlabel", "_supylabel"):
        if getattr(fig, attr, None) is not None:
            found.append(("figure", getattr(fig, attr)))
    for i, ax in enumerate(fig.axes):
        if not ax.get_visible():
            continue
        where = f"axes {i} ({ax.get_title() or ax.get_label() or 'untitled'})"
        found += [(where, t) for t in (ax.title, ax._left_title, ax._right_title)]
        found += [(where, t) for t in ax.texts]
        if ax.axison:
            for axis in (ax.xaxis, ax.yaxis):
                if not axis.get_visible():
                    continue
                found += [(where, axis.label), (where, axis.get_offset_text())]
                for tk in axis._update_ticks():
                    found += [(where, t) for t in (tk.label1, tk.label2)]
    for ax, lg in _legends(fig):
        found += [("legend", t) for t in lg.get_texts()] + [("legend", lg.get_title())]
    seen = set()  # the suptitle is also one of fig.texts
    return [(w, t) for w, t in found if t.get_visible() and t.get_text().strip()
            and not (id(t) in seen or seen.add(id(t)))]


def layout_faults(fig) -> list[str]:
    """Every layout fault of ``fig`` (an empty list: none). See the module docstring."""
    renderer = _renderer(fig)
    faults = []
    for i, ax in enumerate(fig.axes):
        if not ax.get_visible() or not ax.axison:
            continue
        where = f"axes {i} ({ax.get_title() or ax.get_label() or 'untitled'})"
        if _is_colorbar(ax):
            long = ax.yaxis if ax._colorbar.orientation == "vertical" else ax.xaxis
            if not long.label.get_text().strip():
                faults.append(f"{where}: colorbar without a label")
            continue
        if not (ax.get_lines() or ax.collections or ax.patches or ax.images):
            continue
        for name, axis_of, shared in (("x", lambda a: a.xaxis, ax.get_shared_x_axes()),
                                      ("y", lambda a: a.yaxis, ax.get_shared_y_axes())):
            sib = shared.get_siblings(ax)
            if not any(s.axison and axis_of(s).label.get_visible() and axis_of(s).label.get_text().strip()
                       for s in sib):
                faults.append(f"{where}: empty {name} label")
    for ax, lg in _legends(fig):
        hits = legend_overlaps(fig, lg, renderer)
        if hits:
            owner = "figure legend" if ax is None else f"legend of axes {fig.axes.index(ax)} ({ax.get_title()})"
            faults.append(f"{owner} covers " + ", ".join(hits))
    canvas = fig.bbox
    texts = [(w, t, t.get_window_extent(renderer)) for w, t in _drawn_texts(fig, renderer)]
    for where, t, bb in texts:
        if bb.x0 < canvas.x0 - TOL or bb.y0 < canvas.y0 - TOL or bb.x1 > canvas.x1 + TOL or bb.y1 > canvas.y1 + TOL:
            faults.append(f"{where}: text {t.get_text()!r} outside the canvas")
    free = [(w, t, bb) for w, t, bb in texts if w != "legend"]  # a legend's own texts sit inside its box
    quads = {}
    for k, (w1, t1, b1) in enumerate(free):
        for w2, t2, b2 in free[k + 1:]:
            if _boxes_meet(b1, b2):
                q1 = quads.setdefault(id(t1), _text_quad(t1, b1, renderer))
                q2 = quads.setdefault(id(t2), _text_quad(t2, b2, renderer))
                if _quads_meet(q1, q2):
                    faults.append(f"{w1}: text {t1.get_text()!r} overlaps {w2}'s {t2.get_text()!r}")
    return faults


def _text_quad(t, bb, renderer) -> np.ndarray:
    """The 4 corners of a text's (possibly rotated) box: its unrotated size, turned about the centre of ``bb``."""
    theta = np.deg2rad(t.get_rotation())
    if np.isclose(np.sin(2 * theta), 0):
        return np.array([[bb.x0, bb.y0], [bb.x1, bb.y0], [bb.x1, bb.y1], [bb.x0, bb.y1]])
    rot = t.get_rotation()
    t.set_rotation(0)
    b0 = t.get_window_extent(renderer)
    t.set_rotation(rot)
    half = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]]) * [b0.width / 2, b0.height / 2]
    R = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
    return half @ R.T + [(bb.x0 + bb.x1) / 2, (bb.y0 + bb.y1) / 2]


def _quads_meet(a: np.ndarray, b: np.ndarray, tol: float = TOL) -> bool:
    """Separating-axis test of two convex quadrilaterals, overlapping by more than ``tol`` pixels."""
    for q in (a, b):
        for e in np.diff(np.vstack([q, q[:1]]), axis=0):
            n = np.array([-e[1], e[0]]) / (np.hypot(*e) or 1.0)
            pa, pb = a @ n, b @ n
            if pa.max() <= pb.min() + tol or pb.max() <= pa.min() + tol:
                return False
    return True


# ---------------------------------------------------------------------------------------------- the helpers


def _plain(v, _pos=None) -> str:
    return np.format_float_positional(float(v), precision=3, fractional=False, trim="-")


def tidy_log_axis(ax, which: str) -> None:
    """10^k labels at the decades when the axis holds at least two powers of ten, else plain decimals at 1-2-5
    (or evenly spaced) values; minor ticks never labelled. Fixed ticks set by the figure are kept."""
    from matplotlib import ticker

    axis = ax.xaxis if which == "x" else ax.yaxis
    if axis.get_scale() != "log":
        return
    axis.set_minor_formatter(ticker.NullFormatter())
    if isinstance(axis.get_major_locator(), ticker.FixedLocator):
        return
    lo, hi = sorted(ax.get_xlim() if which == "x" else ax.get_ylim())
    if not lo > 0:
        return
    if np.floor(np.log10(hi)) - np.ceil(np.log10(lo)) + 1 >= 2:
        axis.set_major_locator(ticker.LogLocator(base=10))
        axis.set_major_formatter(ticker.LogFormatterSciNotation())
        return
    k = np.arange(np.floor(np.log10(lo)), np.ceil(np.log10(hi)) + 1)
    ones_twos_fives = [v for v in np.outer(10.0 ** k, (1, 2, 5)).ravel() if lo <= v <= hi]
    axis.set_major_locator(ticker.FixedLocator(ones_twos_fives) if len(ones_twos_fives) >= 3
                           else ticker.MaxNLocator(nbins=5))
    axis.set_major_formatter(ticker.FuncFormatter(_plain))


def _twins(ax) -> list:
    return [s for s in ax.get_shared_x_axes().get_siblings(ax) if s.bbox.bounds == ax.bbox.bounds]


def _outside(ax, legend, renderer) -> None:
    """Put ``legend`` outside ``ax``: to the right of the axes and of its twins' labels, or, where another axes
    stands to the right, below the axes' x label."""
    from matplotlib.transforms import Bbox, offset_copy

    fig, box = ax.figure, ax.bbox
    tight = Bbox.union([s.get_tightbbox(renderer, bbox_extra_artists=[]) for s in _twins(ax)])
    neighbour = any(o.get_visible() and not _is_colorbar(o) and o not in _twins(ax) and o.bbox.x0 >= box.x1 - 1
                    and o.bbox.y0 < box.y1 and box.y0 < o.bbox.y1 for o in fig.axes)
    if not neighbour:
        pad = (tight.x1 - box.x1) * 72.0 / fig.dpi + 6.0
        legend.set_bbox_to_anchor((1.0, 1.0), transform=offset_copy(ax.transAxes, fig=fig, x=pad, units="points"))
        legend.set_loc("upper left")
        return
    pad = (box.y0 - tight.y0) * 72.0 / fig.dpi + 4.0
    legend.set_bbox_to_anchor((0.5, 0.0), transform=offset_copy(ax.transAxes, fig=fig, y=-pad, units="points"))
    legend.set_loc("upper center")
    if len(legend.get_texts()) > 3:
        legend.set_ncols(2)


def legend_below(fig, axes=None, **kw):
    """One legend for the whole figure, under the axes: every distinct label of ``axes`` (default: all), once.
    :func:`finish` keeps room for it under the axes."""
    seen = {}
    for ax in axes if axes is not None else fig.axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    kw = {"loc": "lower center", "bbox_to_anchor": (0.5, 0.0), "ncols": min(len(seen), 3), "fontsize": 8, **kw}
    return fig.legend(list(seen.values()), list(seen), **kw)


def _figure_legend_room(fig):
    """tight_layout's rect: the figure less the strips that figure legends (under or over the axes) take."""
    if not fig.legends:
        return None
    r = _renderer(fig)
    lo, hi = 0.0, 1.0
    for lg in fig.legends:
        bb = lg.get_window_extent(r).transformed(fig.transFigure.inverted())
        if (bb.y0 + bb.y1) / 2 < 0.5:
            lo = max(lo, bb.y1 + 0.01)
        else:
            hi = min(hi, bb.y0 - 0.01)
    return (0.0, lo, 1.0, hi)


def finish(fig, *, layout: bool = True):
    """The last step of every figure: tidy log axes, lay out, move legends off the data (see the module doc)."""
    for ax in fig.axes:
        if not _is_colorbar(ax):
            tidy_log_axis(ax, "x")
            tidy_log_axis(ax, "y")
    rect = _figure_legend_room(fig)
    if layout:
        fig.tight_layout(rect=rect)
    for _ in range(3):
        renderer = _renderer(fig)
        moved = False
        for ax, lg in _legends(fig):
            if ax is None or not legend_overlaps(fig, lg, renderer):
                continue
            moved = True
            lg.set_bbox_to_anchor(None)
            for loc in INSIDE:
                lg.set_loc(loc)
                if not legend_overlaps(fig, lg, renderer):
                    break
            else:
                _outside(ax, lg, renderer)
        if not moved:
            break
        if layout:
            fig.tight_layout(rect=rect)
    return fig


def _shown(line) -> np.ndarray:
    """The points of ``line`` its axes can show: finite, and positive on a log axis (set the scales first)."""
    xy = np.asarray(line.get_xydata(), float)
    ok = np.isfinite(xy).all(1)
    for k, axis in ((0, line.axes.xaxis), (1, line.axes.yaxis)):
        if axis.get_scale() == "log":
            ok &= xy[:, k] > 0
    return xy[ok]


def separate_coincident(lines, sizes=(11.0, 7.5, 4.5, 2.5), atol: float = 0.0) -> str:
    """Lines whose shown points are equal (within ``atol``) get hollow concentric markers, largest first, so each
    one shows; returns a note naming the groups ("A, B and C coincide"), or "" when no two lines coincide. Set
    the axes' scales before calling: a point a log axis cannot show is not compared."""
    lines = list(lines)
    pts = [_shown(ln) for ln in lines]

    def same(i, j):
        return pts[i].shape == pts[j].shape and np.allclose(pts[i], pts[j], rtol=0, atol=atol)

    groups, seen = [], set()
    for i in range(len(lines)):
        if i in seen:
            continue
        g = [i] + [j for j in range(i + 1, len(lines)) if j not in seen and same(i, j)]
        if len(g) > 1:
            groups.append(g)
            seen.update(g)
    notes = []
    for g in groups:
        n = len(pts[g[0]])
        for k, j in enumerate(g):
            ln = lines[j]
            if ln.get_marker() in (None, "None", "", " ", "none"):
                ln.set_marker("osD^v"[k % 5])
                ln.set_markevery(max(1, n // 12))
            ln.set_markersize(sizes[min(k, len(sizes) - 1)])
            ln.set_markerfacecolor("none")
            ln.set_markeredgewidth(1.3)
            ln.set_zorder(3 + k)
        names = [lines[j].get_label() for j in g]
        within = f" (within {atol:g})" if atol else ""
        notes.append(", ".join(names[:-1]) + " and " + names[-1] + " coincide" + within)
    return "; ".join(notes)
