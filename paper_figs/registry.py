"""The figure registry: one record per figure, like the checks'.

A figure is ``draw(quick: bool) -> matplotlib.figure.Figure`` drawing from ``sims``/``theory`` results
(cached on disk where they are long), plus the paper figure it answers and the claim ids it illustrates.
Modules in ``paper_figs`` register figures with :func:`figure`; :func:`discover` imports them all.

A figure imports an optional package (scikit-image, scikit-learn, the EfficientNet wheels: the ``real`` extra)
where it uses it, inside ``draw`` or the code it calls, never at module level: when the package is missing, the
ImportError then reaches the caller, and ``verify`` records the figure as skipped with the command that installs
the package (``verify.api.draw_figures``), instead of failing to load every figure.
"""
from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import time
from pathlib import Path
from typing import Callable


@dataclasses.dataclass
class Figure:
    id: str
    answers: str
    caption: str
    checks: tuple
    draw: Callable


_FIGURES: dict[str, Figure] = {}


def figure(id: str, *, answers: str, caption: str, checks: tuple | list = ()):
    """Register ``draw(quick) -> matplotlib Figure`` as figure ``id`` (answers e.g. 'ND Remark 2')."""

    def deco(fn):
        if id in _FIGURES and _FIGURES[id].draw.__qualname__ != fn.__qualname__:
            raise ValueError(f"figure {id!r} is registered twice")
        _FIGURES[id] = Figure(id=id, answers=answers, caption=caption, checks=tuple(checks), draw=fn)
        return fn

    return deco


def discover() -> dict[str, Figure]:
    import paper_figs as pkg

    for mod in pkgutil.iter_modules(pkg.__path__):
        if mod.name not in ("registry",) and not mod.name.startswith("_"):
            importlib.import_module(f"paper_figs.{mod.name}")
    return dict(_FIGURES)


def render(fig: Figure, out_dir: Path, quick: bool = False) -> dict:
    """Draw one figure and write ``<id>.png`` and ``<id>.pdf`` into ``out_dir``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    f = fig.draw(quick)
    png, pdf = out_dir / f"{fig.id}.png", out_dir / f"{fig.id}.pdf"
    f.savefig(png, dpi=130, bbox_inches="tight")
    f.savefig(pdf, bbox_inches="tight")
    plt.close(f)
    return {"id": fig.id, "png": png, "pdf": pdf, "seconds": time.perf_counter() - t0}
