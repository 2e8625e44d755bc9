"""The canonical render of one (code point, face): a centred, baseline-aligned grayscale bitmap.

Layout of a canvas of ``C × C`` pixels (``C = 2 × size`` for the task, so augmentation samples a 2×
oversampled image): one em is ``E = C / 1.4`` pixels; the baseline lies ``1.1 E`` below the top, so the
canvas spans 1.0 em above the baseline to 0.3 em below it with 0.1 em to spare above. Vertical placement
is kept (a comma sits low, an apostrophe high, ``o`` is smaller than ``O``); the ink is centred
horizontally. A glyph whose ink would not fit (wide arrows, the STIX size variants' tall delimiters) is
rendered smaller so that its larger side spans ``0.95 C`` and is centred on the canvas; one that fits but
would cross an edge is shifted just inside.

Rendering draws the glyph by its index (``FT2Font.load_glyph`` + ``draw_glyph_to_bitmap``: no text
shaping, no font fallback) through FreeType without hinting, antialiased; output is ``uint8``
(0 = paper, 255 = full ink). :func:`prefilter` smooths a canonical render with the binomial kernel
``[1, 2, 1] / 4`` in each direction (so that bilinear sampling at half resolution does not alias) and pads
it with a one-pixel zero border, the form :mod:`sims.glyphs.augment` samples from.
"""
from __future__ import annotations


import numpy as np
from matplotlib.ft2font import FT2Font, LoadFlags

EM_SPAN = 1.4        # canvas height in em
BASELINE = 1.1       # baseline below the top, in em
FIT = 0.95           # an oversized glyph's larger side, as a fraction of the canvas
_FLAGS = LoadFlags.NO_HINTING


def _draw(font: FT2Font, gid: int, em_px: float) -> tuple[np.ndarray, float]:
    """(uint8 bitmap of glyph ``gid``, the baseline's row in it) at ``em_px`` pixels per em."""
    font.set_size(em_px, 72)
    glyph = font.load_glyph(gid, flags=_FLAGS)
    x0, y0, x1, y1 = glyph.bbox  # 26.6 fixed point
    top = -(-y1 // 64)           # FreeType's bitmap starts ceil(yMax) above the baseline
    h = top - y0 // 64 + 3
    w = -(-x1 // 64) - x0 // 64 + 3
    img = np.zeros((max(h, 1), max(w, 1)), np.uint8)
    font.draw_glyph_to_bitmap(img, 1 - x0 // 64, 1, glyph, antialiased=True)
    return img, float(top + 1)


def render_canonical(font: FT2Font, gid: int, canvas: int) -> np.ndarray:
    """The ``canvas × canvas`` uint8 render of glyph index ``gid`` of ``font`` (module doc for the layout).

    The caller decides that the face really means the character by this glyph (:mod:`sims.glyphs.fonts`);
    glyph 0 is the face's .notdef; an empty glyph comes back as zeros.
    """
    if canvas < 8:
        raise ValueError(f"canvas must be at least 8 pixels, got {canvas}")
    if not 0 <= gid < font.num_glyphs:
        raise ValueError(f"gid must be a glyph index of {font.fname} (0..{font.num_glyphs - 1}), got {gid}")
    em = canvas / EM_SPAN
    img, base = _draw(font, gid, em)
    out = np.zeros((canvas, canvas), np.uint8)
    rows = np.flatnonzero(img.max(axis=1))
    cols = np.flatnonzero(img.max(axis=0))
    if rows.size == 0:
        return out
    r0, r1, c0, c1 = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
    h, w = r1 - r0, c1 - c0
    limit = FIT * canvas
    if h > limit or w > limit:  # too big: shrink to fit, centre both ways
        img, base = _draw(font, gid, em * limit / max(h, w))
        rows = np.flatnonzero(img.max(axis=1))
        cols = np.flatnonzero(img.max(axis=0))
        r0, r1, c0, c1 = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
        h, w = min(r1 - r0, canvas), min(c1 - c0, canvas)
        y = (canvas - h) // 2
    else:  # baseline-aligned: ink row r0 lies (base - r0) pixels above the baseline
        y = int(round(BASELINE * em - (base - r0)))
        y = min(max(y, 0), canvas - h)
    x = (canvas - w) // 2
    out[y:y + h, x:x + w] = img[r0:r0 + h, c0:c0 + w]
    return out


def prefilter(images: np.ndarray) -> np.ndarray:
    """[N, C, C] uint8 → [N, C + 2, C + 2] uint8: binomial smoothing ``[1,2,1]/4`` per axis, zero border.

    Integer arithmetic throughout (exact on every machine): each output is ``round(Σ w·x / 16)``.
    """
    images = np.asarray(images, np.uint8)
    n, c = images.shape[0], images.shape[-1]
    x = np.zeros((n, c + 2, c + 2), np.uint16)
    x[:, 1:-1, 1:-1] = images
    h = x[:, :, :-2] + x[:, :, 2:]
    h += x[:, :, 1:-1] << 1                                     # [N, C+2, C]
    v = h[:, :-2, :] + h[:, 2:, :]
    v += h[:, 1:-1, :] << 1                                     # [N, C, C], weights sum to 16
    v += 8
    v >>= 4
    out = np.zeros((n, c + 2, c + 2), np.uint8)
    out[:, 1:-1, 1:-1] = v
    return out
