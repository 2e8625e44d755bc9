"""Which faces really draw which characters: every candidate (code point, face) is rendered and judged.

A candidate (:func:`sims.glyphs.fonts.candidates`) is **excluded** when its render at the survey canvas
(:data:`CANVAS` pixels, layout of :mod:`sims.glyphs.render`) is

* **empty**: less than one pixel's worth of ink in total (``U+2800 BRAILLE PATTERN BLANK`` and kin), or
* **the .notdef box**: within :data:`NOTDEF_TOL` grey levels, at every pixel, of the face's own glyph 0
  (its .notdef, drawn by glyph index), i.e. the face draws its placeholder. Two faces' .notdef glyphs
  are empty (the STIX and cm* ones), so there only the emptiness test can apply.

Entries mapped to glyph 0 never become candidates. The survey is cached on disk keyed by the fonts'
fingerprint (matplotlib's version and the font files' bytes) and this code.
"""
from __future__ import annotations

import numpy as np

from sims import cache
from sims.glyphs import fonts
from sims.glyphs.render import render_canonical
from sims.progress import bar as tqdm  # a bar on a terminal only (tqdm's rule): no redraws in logs

CANVAS = 64
NOTDEF_TOL = 8            # grey levels (of 255)
MIN_INK = 255             # total ink of a real glyph: at least one full pixel


def notdef_render(font, canvas: int = CANVAS) -> np.ndarray:
    """The face's glyph 0 (.notdef) drawn with the canonical layout."""
    return render_canonical(font, 0, canvas)


def judge(img: np.ndarray, notdef: np.ndarray) -> str:
    """'empty', 'notdef' or 'ok' for a canonical render, given the face's .notdef render (module doc)."""
    img = np.asarray(img)
    if int(img.sum(dtype=np.int64)) < MIN_INK:
        return "empty"
    notdef = np.asarray(notdef)
    if int(notdef.sum(dtype=np.int64)) >= MIN_INK and \
            np.abs(img.astype(np.int16) - notdef.astype(np.int16)).max() <= NOTDEF_TOL:
        return "notdef"
    return "ok"


def _compute() -> dict:
    faces = fonts.faces()
    cands = [fonts.candidates(f) for f in faces]
    cps = np.array(sorted(set().union(*cands)), np.int64)
    col = {int(cp): i for i, cp in enumerate(cps)}
    valid = np.zeros((len(cps), len(faces)), bool)
    n_empty = np.zeros(len(faces), np.int64)
    n_notdef = np.zeros(len(faces), np.int64)
    total = sum(len(c) for c in cands)
    with tqdm(total=total, desc="glyphs: surveying faces", unit="glyph", leave=False,
              disable=None) as bar:
        for j, (face, cand) in enumerate(zip(faces, cands)):
            font = fonts.load_font(face.path)
            notdef = notdef_render(font)
            for cp, gid in cand.items():
                verdict = judge(render_canonical(font, gid, CANVAS), notdef)
                n_empty[j] += verdict == "empty"
                n_notdef[j] += verdict == "notdef"
                valid[col[cp], j] = verdict == "ok"
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
