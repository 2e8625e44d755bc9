"""Which faces really draw which characters: every candidate (code point, face) is rendered and judged.

A candidate (:func:`sims.glyphs.fonts.candidates`) is **excluded** when its render at the survey canvas
(:data:`CANVAS` pixels, layout of :mod:`sims.glyphs.render`) is

* **empty**: less than one pixel's worth of ink in total (``U+2800 BRAILLE PATTERN BLANK`` and kin), or
* **the .notdef box**: within :data:`NOTDEF_TOL` grey levels, at every pixel, of the face's own glyph 0
  (drawn by asking for a code point no face maps), i.e. the face draws its placeholder.

Entries mapped to glyph 0 never become candidates. The survey is cached on disk keyed by the fonts'
fingerprint (matplotlib's version and the font files' bytes) and this code.
"""
from __future__ import annotations

import numpy as np
from tqdm.auto import tqdm

from sims import cache
from sims.glyphs import fonts
from sims.glyphs.render import render_canonical

CANVAS = 64
NOTDEF_TOL = 8            # grey levels (of 255)
MIN_INK = 255             # total ink of a real glyph: at least one full pixel
_ABSENT = 0x10FFFD        # mapped by no usable face: its render is the face's glyph 0


def _compute() -> dict:
    faces = fonts.faces()
    cands = [fonts.candidates(f) for f in faces]
    cps = np.array(sorted(set().union(*cands)), np.int64)
    col = {int(cp): i for i, cp in enumerate(cps)}
    valid = np.zeros((len(cps), len(faces)), bool)
    n_empty = np.zeros(len(faces), np.int64)
    n_notdef = np.zeros(len(faces), np.int64)
    total = sum(len(c) for c in cands)
    with tqdm(total=total, desc="glyphs: surveying faces", unit="glyph", leave=False) as bar:
        for j, (face, cand) in enumerate(zip(faces, cands)):
            font = fonts.load_font(face.path)
            if _ABSENT in font.get_charmap():
                raise RuntimeError(f"face {face.name} maps U+{_ABSENT:X}; pick another absent code point")
            notdef = render_canonical(font, _ABSENT, CANVAS).astype(np.int16)
            has_box = notdef.sum() >= MIN_INK
            for cp in cand:
                img = render_canonical(font, cp, CANVAS)
                if int(img.sum(dtype=np.int64)) < MIN_INK:
                    n_empty[j] += 1
                elif has_box and np.abs(img.astype(np.int16) - notdef).max() <= NOTDEF_TOL:
                    n_notdef[j] += 1
                else:
                    valid[col[cp], j] = True
            bar.update(len(cand))
    keep = valid.any(axis=1)
    return {"codepoints": cps[keep], "valid": valid[keep], "n_candidates": np.array([len(c) for c in cands]),
            "n_empty": n_empty, "n_notdef": n_notdef,
            "faces": np.array([f.name for f in faces]), "unicode": np.array([f.unicode for f in faces])}


def survey() -> dict:
    """{'codepoints' [M], 'valid' bool [M, F], 'faces' [F], 'unicode' [F], per-face 'n_candidates',
    'n_empty', 'n_notdef'} over every usable face (:func:`sims.glyphs.fonts.faces`); cached."""
    out = cache.cached("glyph_survey", {"fonts": fonts.fonts_fingerprint(), "canvas": CANVAS,
                                        "tol": NOTDEF_TOL, "min_ink": MIN_INK}, _compute)
    names = [f.name for f in fonts.faces()]
    if list(out["faces"]) != names:
        raise RuntimeError("glyph survey: cached faces differ from the installed ones")
    return out


def coverage_counts(valid: np.ndarray, thresholds=(6, 8, 10)) -> dict:
    """{t: number of code points drawn by at least t faces}."""
    n = np.asarray(valid).sum(axis=1)
    return {int(t): int((n >= t).sum()) for t in thresholds}
