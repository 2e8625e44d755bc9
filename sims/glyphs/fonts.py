"""The faces matplotlib ships and which Unicode characters each one really maps (the glyph task's alphabet).

matplotlib installs TrueType faces under ``matplotlib.get_data_path()/fonts/ttf``: DejaVu Sans / Serif /
Mono (regular, bold, oblique/italic and the two tiny *Display* cuts), STIX General (four cuts), STIX
non-Unicode (four cuts), the STIX size variants, the Computer Modern faces ``cm*`` and *Last Resort*.

What a face's character map means is decided here, per face, from its glyph names:

* **Last Resort** is excluded outright: it maps every code point to a placeholder box.
* A face is a **Unicode face** when no glyph name that identifies a character (``uniXXXX``, ``uXXXXX`` or
  a name the reference face DejaVu Sans gives a character) contradicts the code point mapping it and at
  least 90 % of its candidate entries carry such an agreeing name. DejaVu,
  STIX General and the STIX size faces are Unicode faces; every entry they map is a candidate.
* A face whose names contradict its map (the ``cm*`` faces map TeX font positions: ``cmr10`` puts
  ``quotedblright`` at ``"``, ``cmmi10`` puts ``omega`` at ``!``) is a **non-Unicode face**: only the
  entries whose glyph name identifies exactly that code point are candidates (``A`` named ``A``); the rest
  (and every entry with an unknown name) are dropped. ``cmex10`` names no entry agreeably (its glyphs
  are TeX's large delimiters, ``parenrightBigg``): it contributes nothing.
* Only code points of the letter (L*), number (N*), punctuation (P*) and symbol (S*) categories count;
  private-use (Co) and unassigned (Cn) code points are never candidates, so the STIX non-Unicode faces
  (which map the private-use area) contribute nothing. Entries mapped to glyph 0 are not candidates.

Whether a candidate really draws something (not empty, not the ``.notdef`` box) is decided by rendering
it: see :mod:`sims.glyphs.survey`.
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
import unicodedata
from dataclasses import dataclass

import matplotlib
from matplotlib.ft2font import FT2Font

EXCLUDED = {"LastResortHE-Regular": "maps every code point to a placeholder box (Last Resort)"}
REFERENCE_FACE = "DejaVuSans"          # its glyph names (Adobe Glyph List style) identify characters
CATEGORIES = ("L", "N", "P", "S")      # letter, number, punctuation, symbol
UNICODE_AGREE = 0.9                    # a Unicode face: no contradicting name, ≥ 90 % of names agree
_UNI_NAME = re.compile(r"uni([0-9A-F]{4})|u([0-9A-F]{4,6})")


@dataclass(frozen=True)
class Face:
    """One font file: ``name`` is the file stem (``DejaVuSans-Bold``), ``unicode`` whether its map is trusted."""
    name: str
    path: str
    family: str
    style: str
    unicode: bool


def font_dir() -> str:
    return os.path.join(matplotlib.get_data_path(), "fonts", "ttf")


@functools.lru_cache(maxsize=None)
def load_font(path: str) -> FT2Font:
    """One FT2Font per file and process (FT2Font holds the rendering state: use from one thread)."""
    return FT2Font(path)


def is_candidate_codepoint(cp: int) -> bool:
    """A letter, number, punctuation or symbol code point (never private-use, unassigned or a surrogate)."""
    if not 0 <= cp <= 0x10FFFF:
        return False
    return unicodedata.category(chr(cp))[0] in CATEGORIES


@functools.lru_cache(maxsize=None)
def _reference_names() -> dict:
    ref = load_font(os.path.join(font_dir(), REFERENCE_FACE + ".ttf"))
    names: dict[str, int] = {}
    for cp, gid in sorted(ref.get_charmap().items()):
        names.setdefault(ref.get_glyph_name(gid), cp)
    return names


def glyph_name_codepoint(name: str) -> int | None:
    """The code point a glyph name identifies (``uni00E9``, ``u1D400``, or a reference-face name), else None."""
    m = _UNI_NAME.fullmatch(name)
    if m:
        return int(m.group(1) or m.group(2), 16)
    return _reference_names().get(name)


def _font_files() -> list[str]:
    return sorted(f for f in os.listdir(font_dir()) if f.lower().endswith(".ttf"))


def face_map(font: FT2Font) -> tuple[dict, int, int]:
    """({cp: glyph index} over candidate code points, #entries whose names agree, #that contradict)."""
    out, agree, contra = {}, 0, 0
    for cp, gid in font.get_charmap().items():
        if gid == 0 or not is_candidate_codepoint(cp):
            continue
        named = glyph_name_codepoint(font.get_glyph_name(gid))
        agree += named == cp
        contra += named is not None and named != cp
        out[cp] = (gid, named)
    return out, agree, contra


@functools.lru_cache(maxsize=None)
def faces() -> tuple[Face, ...]:
    """Every usable face (Last Resort excluded), sorted by file name."""
    out = []
    for fn in _font_files():
        stem = fn[:-4]
        if stem in EXCLUDED:
            continue
        path = os.path.join(font_dir(), fn)
        font = load_font(path)
        mapping, agree, contra = face_map(font)
        unicode_face = contra == 0 and agree >= UNICODE_AGREE * len(mapping)
        out.append(Face(stem, path, font.family_name, font.style_name, unicode=unicode_face))
    return tuple(out)


def candidates(face: Face) -> dict:
    """{code point: glyph index} that this face is taken to mean as that Unicode character (module doc)."""
    mapping, _, _ = face_map(load_font(face.path))
    if face.unicode:
        return {cp: gid for cp, (gid, _) in sorted(mapping.items())}
    return {cp: gid for cp, (gid, named) in sorted(mapping.items()) if named == cp}


def fonts_fingerprint() -> str:
    """Hash of matplotlib's version and every font file's bytes: cache entries go stale with the fonts."""
    h = hashlib.sha256(matplotlib.__version__.encode())
    for fn in _font_files():
        h.update(fn.encode())
        with open(os.path.join(font_dir(), fn), "rb") as fh:
            h.update(hashlib.sha256(fh.read()).digest())
    h.update(unicodedata.unidata_version.encode())
    return h.hexdigest()[:16]
