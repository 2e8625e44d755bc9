"""sims.glyphs.classes: class choice, label hierarchies, homoglyph detection."""
from __future__ import annotations

import numpy as np
import pytest

from sims.glyphs import classes


@pytest.mark.parametrize("ch,base", [("é", "e"), ("è", "e"), ("ê", "e"), ("ë", "e"), ("É", "E"), ("Ǻ", "A"),
                                     ("ά", "α"), ("й", "и"), ("e", "e"), ("ﬁ", "ﬁ"), ("²", "²")])
def test_base_is_the_first_character_of_the_canonical_decomposition(ch, base):
    assert classes.base_char(ord(ch)) == base


def test_case_is_kept_at_the_base_level():
    labels, names = classes.hierarchy([ord(c) for c in "eéEÉ"], "base")
    assert labels[0] == labels[1] != labels[2] == labels[3]
    assert [names[i] for i in labels] == ["e", "e", "E", "E"]


@pytest.mark.parametrize("ch,script", [("a", "Latin"), ("Ø", "Latin"), ("α", "Greek"), ("Ω", "Greek"),
                                       ("я", "Cyrillic"), ("ª", "other letter"), ("5", "number"),
                                       ("½", "number"), ("!", "punctuation"), ("«", "punctuation"),
                                       ("+", "symbol"), ("→", "symbol"), ("€", "symbol")])
def test_script_labels(ch, script):
    labels, names = classes.hierarchy([ord(ch)], "script")
    assert names[labels[0]] == script
    assert names == list(classes.SCRIPTS)


def test_fine_level_is_the_identity_and_unknown_levels_are_refused():
    labels, names = classes.hierarchy([65, 66], "fine")
    assert list(labels) == [0, 1] and names == ["A", "B"]
    with pytest.raises(ValueError, match="level"):
        classes.hierarchy([65], "coarse")


def test_choice_needs_two_training_faces_and_one_test_face_and_ranks_by_coverage():
    cps = np.array([10, 11, 12, 13, 14])
    valid = np.array([[1, 1, 1, 1],    # 4 faces
                      [1, 1, 0, 1],    # 3 faces
                      [1, 1, 1, 0],    # no test face → ineligible
                      [1, 0, 0, 1],    # one training face → ineligible
                      [0, 1, 1, 1]],   # 3 faces, larger code point than 11
                     bool)
    test = np.array([0, 0, 0, 1], bool)
    assert list(classes.eligible(valid, test)) == [True, True, False, False, True]
    assert list(classes.choose(cps, valid, test, 2)) == [0, 1]
    assert list(classes.choose(cps, valid, test, 3)) == [0, 1, 4]
    with pytest.raises(ValueError, match="n_classes=4"):
        classes.choose(cps, valid, test, 4)


def test_homoglyph_stats_compare_every_shared_face():
    rng = np.random.default_rng(0)
    a, b, c = (rng.integers(0, 256, (16, 16)).astype(np.uint8) for _ in range(3))
    near = np.clip(a.astype(int) + 3, 0, 255).astype(np.uint8)
    # classes 0, 1, 2 in faces 0, 1: class 1 is class 0 in both faces; class 2 is class 1 in face 0 only
    canon = np.stack([a, near, a, b, b, c])
    pair_class = np.array([0, 1, 2, 0, 1, 2])
    pair_face = np.array([0, 0, 0, 1, 1, 1])
    stats = classes.homoglyph_stats(canon, pair_class, pair_face, 3, tol=8)
    rows = {(r[0], r[1]): tuple(r[2:]) for r in stats.tolist()}
    assert rows[(0, 1)] == (2, 2, 3) and rows[(0, 2)] == (1, 2, 0) and rows[(1, 2)] == (1, 2, 3)
    assert classes.homoglyph_pairs(stats) == [(0, 1, 3)]
    assert len(classes.homoglyph_pairs(stats, 0.5)) == 3
    assert classes.groups_from_pairs(classes.homoglyph_pairs(stats), 3) == [[0, 1]]
    strict = classes.homoglyph_stats(canon, pair_class, pair_face, 3, tol=2)
    assert strict.tolist() == [[0, 1, 1, 2, 0], [0, 2, 1, 2, 0]]  # 0~1 only in face 1, 0~2 only in face 0
    assert classes.homoglyph_pairs(strict) == []
    with pytest.raises(ValueError, match="min_fraction"):
        classes.homoglyph_pairs(stats, 0)


def test_groups_are_connected_components():
    assert classes.groups_from_pairs([(0, 3), (3, 5), (1, 2)], 6) == [[0, 3, 5], [1, 2]]
    assert classes.groups_from_pairs([], 4) == []
