"""sims.glyphs.fonts and .survey: which faces are used and which (code point, face) pairs really draw."""
from __future__ import annotations

import unicodedata

import numpy as np
import pytest

from sims.glyphs import fonts, survey
from sims.glyphs.render import render_canonical


def _face(name):
    return next(f for f in fonts.faces() if f.name == name)


def test_last_resort_is_never_a_face():
    names = [f.name for f in fonts.faces()]
    assert not any(n.startswith("LastResort") for n in names)
    assert "DejaVuSans" in names and "cmr10" in names
    assert not any(str(n).startswith("LastResort") for n in survey.survey()["faces"])


def test_cm_faces_keep_only_entries_whose_glyph_name_is_the_character():
    cmr = _face("cmr10")
    assert not cmr.unicode
    cand = fonts.candidates(cmr)
    assert ord("A") in cand and ord("7") in cand
    assert ord('"') not in cand       # cmr10 draws quotedblright there (TeX layout)
    assert ord("<") not in cand       # exclamdown
    assert ord("!") not in fonts.candidates(_face("cmmi10"))  # omega
    assert fonts.candidates(_face("cmex10")) == {}             # big delimiters, no agreeing name
    font = fonts.load_font(cmr.path)
    for cp, gid in cand.items():
        assert fonts.glyph_name_codepoint(font.get_glyph_name(gid)) == cp


def test_unicode_faces_keep_their_whole_map():
    dv = _face("DejaVuSans")
    assert dv.unicode and _face("STIXGeneral").unicode
    assert len(fonts.candidates(dv)) > 5000


def test_candidates_are_letters_numbers_punctuation_symbols_never_private_use():
    for face in fonts.faces():
        for cp in fonts.candidates(face):
            cat = unicodedata.category(chr(cp))
            assert cat[0] in "LNPS", (face.name, hex(cp), cat)
    assert fonts.candidates(_face("STIXNonUni")) == {}  # it maps only the private-use area (and spaces)


@pytest.mark.parametrize("cp,ok", [(ord("a"), True), (ord("€"), True), (0xE000, False), (0x0378, False),
                                   (ord(" "), False), (0x0301, False), (0x110000, False), (-1, False)])
def test_candidate_code_points(cp, ok):
    assert fonts.is_candidate_codepoint(cp) is ok


@pytest.mark.parametrize("name,cp", [("uni00E9", 0xE9), ("u1D400", 0x1D400), ("A", 65), ("eacute", 0xE9),
                                     ("parenrightBigg", None), ("uni00e9", None)])
def test_glyph_names_identify_code_points(name, cp):
    assert fonts.glyph_name_codepoint(name) == cp


def test_judge_finds_empty_and_notdef_renders():
    font = fonts.load_font(_face("DejaVuSans").path)
    notdef = survey.notdef_render(font)
    assert notdef.sum() > 0
    assert survey.judge(notdef, notdef) == "notdef"
    nudged = np.clip(notdef.astype(int) + 5, 0, 255).astype(np.uint8)
    assert survey.judge(nudged, notdef) == "notdef"
    a = render_canonical(font, font.get_char_index(ord("A")), survey.CANVAS)
    assert survey.judge(a, notdef) == "ok"
    assert survey.judge(np.zeros_like(a), notdef) == "empty"
    blank = render_canonical(font, font.get_char_index(0x2800), survey.CANVAS)  # BRAILLE PATTERN BLANK
    assert survey.judge(blank, notdef) == "empty"


def test_survey_marks_only_mapped_drawn_pairs():
    s = survey.survey()
    cps = list(s["codepoints"])
    faces = [_face(str(n)) for n in s["faces"]]
    for j, face in enumerate(faces):
        cmap = fonts.load_font(face.path).get_charmap()
        drawn = {int(cps[i]) for i in np.flatnonzero(s["valid"][:, j])}
        assert all(cmap.get(cp, 0) != 0 for cp in drawn), face.name    # never a code point it lacks
    dv = [f.name for f in faces].index("DejaVuSans")
    assert 0x2800 in fonts.load_font(faces[dv].path).get_charmap()   # mapped, yet blank: excluded
    assert 0x2800 not in {int(cps[i]) for i in np.flatnonzero(s["valid"][:, dv])}
    counts = survey.coverage_counts(s["valid"])
    assert counts[6] >= counts[8] >= counts[10] > 2000
