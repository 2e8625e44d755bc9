"""Progress bars that suit their stream: a tqdm bar on a terminal, one line per phase anywhere else.

``bar(...)`` takes tqdm's arguments. ``disable=None`` keeps tqdm's rule (drawn on a terminal only); ``True`` draws
nothing; ``False`` (progress asked for) draws a tqdm bar on a terminal and, on a stream that is not one (a file, a
pipe, a CI log), a :class:`LineBar`: no ``\\r`` redraws, one line when the phase ends
(``capture lite0: 512/512 img in 12.3 s, 41.6 img/s``).
"""
from __future__ import annotations

import sys
import time


def is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


class LineBar:
    """The parts of tqdm's interface the package uses; writes one line at :meth:`close` (or :meth:`line`)."""

    def __init__(self, iterable=None, desc: str = "", total=None, unit: str = "it", file=None, initial: int = 0,
                 **_ignored):
        self.iterable, self.desc, self.unit = iterable, desc or "", unit
        self.total = total if total is not None else (len(iterable) if hasattr(iterable, "__len__") else None)
        self.file = sys.stderr if file is None else file
        self.n, self.initial, self.postfix = int(initial), int(initial), ""
        self.t0 = time.perf_counter()
        self.closed = False

    def __iter__(self):
        for x in self.iterable:
            yield x
            self.update(1)
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def update(self, n: int = 1) -> None:
        self.n += int(n)

    def set_postfix(self, ordered_dict=None, refresh: bool = True, **kw) -> None:
        items = dict(ordered_dict or {}, **kw)
        self.postfix = ", ".join(f"{k}={v}" for k, v in items.items())

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        self.postfix = str(s)

    def set_description(self, desc: str = "", refresh: bool = True) -> None:
        self.desc = desc or ""

    set_description_str = set_description

    def refresh(self) -> None:
        pass

    def line(self, text: str) -> None:
        """Write one line now (a phase that ended inside a longer bar)."""
        print(text, file=self.file, flush=True)

    def summary(self) -> str:
        dt = time.perf_counter() - self.t0
        done = self.n - self.initial
        of = f"/{self.total}" if self.total is not None else ""
        rate = f", {done / dt:.3g} {self.unit}/s" if dt > 0 and done > 0 else ""
        return (f"{self.desc}: {self.n}{of} {self.unit} in {dt:.1f} s{rate}"
                + (f" ({self.postfix})" if self.postfix else ""))

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.n or self.total == 0:
            self.line(self.summary())


def bar(iterable=None, *, file=None, disable=None, **kw):
    """A tqdm bar, or a :class:`LineBar` where progress was asked for (``disable=False``) on a stream that is not
    a terminal (module doc)."""
    stream = sys.stderr if file is None else file
    if disable is False and not is_terminal(stream):
        return LineBar(iterable, file=stream, **kw)
    from tqdm import tqdm

    return tqdm(iterable, file=stream, disable=disable, **kw)
