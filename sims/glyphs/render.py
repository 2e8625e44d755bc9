"""The canonical render of one (code point, face): a centred, baseline-aligned grayscale bitmap.

Layout of a canvas of ``C × C`` pixels (``C = 2 × size`` for the task, so augmentation samples a 2×
oversampled image): one em is ``E = C / 1.4`` pixels; the baseline lies ``1.1 E`` below the top, so the
canvas spans 1.0 em above the baseline to 0.3 em below it with 0.1 em to spare above. Vertical placement
is kept (a comma sits low, an apostrophe high, ``o`` is smaller than ``O``); the ink is centred
horizontally. A glyph whose ink would not fit (wide arrows, the STIX size variants' tall delimiters) is
rendered smaller so that its larger side spans ``0.95 C`` and is centred on the canvas; one that fits but
would cross an edge is shifted just inside.

Rendering uses FreeType through ``matplotlib.ft2font`` without hinting, antialiased; output is ``uint8``
(0 = paper, 255 = full ink). :func:`prefilter` smooths a canonical render with the binomial kernel
``[1, 2, 1] / 4`` in each direction (so that bilinear sampling at half resolution does not alias) and pads
it with a one-pixel zero border, the form :mod:`sims.glyphs.augment` samples from.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
from matplotlib.ft2font import FT2Font, LoadFlags

EM_SPAN = 1.4        # canvas height in em
BASELINE = 1.1       # baseline below the top, in em
FIT = 0.95           # an oversized glyph's larger side, as a fraction of the canvas
_FLAGS = LoadFlags.NO_HINTING


def _draw(font: FT2Font, cp: int, em_px: float) -> tuple[np.ndarray, float]:
    """(tight uint8 bitmap, its top row's height above the baseline in pixels) at ``em_px`` pixels per em.

    A code point the face does not map draws the face's glyph 0 (its .notdef), silently.
    """
    font.set_size(em_px, 72)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Glyph .* missing from font")
        font.set_text(chr(cp), 0, flags=_FLAGS)
    font.draw_glyphs_to_bitmap(antialiased=True)
    img = np.asarray(font.get_image())
    glyph = font.load_glyph(font.get_char_index(cp), flags=_FLAGS)
    top = math.ceil(glyph.bbox[3] / 64)  # FreeType's bitmap starts at ceil(yMax)
    return img, float(top)


def render_canonical(font: FT2Font, cp: int, canvas: int) -> np.ndarray:
    """The ``canvas × canvas`` uint8 render of ``chr(cp)`` in ``font`` (module doc for the layout).

    The caller decides that the face really maps ``cp`` (:mod:`sims.glyphs.fonts`); an empty render comes
    back as zeros.
    """
    if canvas < 8:
        raise ValueError(f"canvas must be at least 8 pixels, got {canvas}")
    em = canvas / EM_SPAN
    img, top = _draw(font, cp, em)
    out = np.zeros((canvas, canvas), np.uint8)
    rows = np.flatnonzero(img.max(axis=1))
    cols = np.flatnonzero(img.max(axis=0))
    if rows.size == 0:
        return out
    r0, r1, c0, c1 = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
    h, w = r1 - r0, c1 - c0
    limit = FIT * canvas
    if h > limit or w > limit:  # too big: shrink to fit, centre both ways
        img, top = _draw(font, cp, em * limit / max(h, w))
        rows = np.flatnonzero(img.max(axis=1))
        cols = np.flatnonzero(img.max(axis=0))
        r0, r1, c0, c1 = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
        h, w = min(r1 - r0, canvas), min(c1 - c0, canvas)
        y = (canvas - h) // 2
    else:  # baseline-aligned: ink row r0 lies (top - r0) pixels above the baseline
        y = int(round(BASELINE * em - (top - r0)))
        y = min(max(y, 0), canvas - h)
    x = (canvas - w) // 2
    out[y:y + h, x:x + w] = img[r0:r0 + h, c0:c0 + w]
    return out


def prefilter(images: np.ndarray) -> np.ndarray:
    """[N, C, C] uint8 → [N, C + 2, C + 2] uint8: binomial smoothing ``[1,2,1]/4`` per axis, zero border.

    Integer arithmetic throughout (exact on every machine): each output is ``round(Σ w·x / 16)``.
    """
    x = np.pad(np.asarray(images, np.uint16), ((0, 0), (1, 1), (1, 1)))
    h = x[:, :, :-2] + 2 * x[:, :, 1:-1] + x[:, :, 2:]          # [N, C+2, C]
    v = h[:, :-2, :] + 2 * h[:, 1:-1, :] + h[:, 2:, :]          # [N, C, C], weights sum to 16
    out = np.zeros((x.shape[0], x.shape[1], x.shape[2]), np.uint8)
    out[:, 1:-1, 1:-1] = ((v + 8) // 16).astype(np.uint8)
    return out
