"""Which code points are the task's classes, and the label hierarchies over them.

**Class choice.** A code point is *eligible* when the survey (:mod:`sims.glyphs.survey`) finds it drawn by
at least two training faces and at least one test face. Eligible code points are ranked by the number of
faces that draw them (more first), ties by code point (lower first); the first ``n_classes`` are the
classes, fine class ``k`` being the ``k``-th in code-point order.

**Hierarchies** (``labels(level)`` maps each fine class to a label at that level):

* ``fine``: the code point itself.
* ``base``: the first character of the canonical decomposition, ``unicodedata.normalize('NFD', ch)[0]``
  (é è ê ë → e, Ǻ → A, ά → α). **Case is kept**: ``E`` and ``e`` are different bases (their shapes
  differ), É → E and é → e. Compatibility forms are not folded (``ﬁ``, ``²``, ``ℝ`` are their own bases).
* ``script``: one of :data:`SCRIPTS`: a letter (category L*) is ``Latin``, ``Greek`` or ``Cyrillic`` when
  its Unicode name starts with that script's word (``LATIN``, ``GREEK``/``COPTIC``, ``CYRILLIC``), else
  ``other letter``; every number (N*) is ``number``, punctuation (P*) ``punctuation``, symbol (S*)
  ``symbol``.

Labels are numbered in order of the label's smallest code point (``base``) or of :data:`SCRIPTS`
(``script``, which keeps all seven names even when a class set lacks one).
"""
from __future__ import annotations

import unicodedata

import numpy as np

LEVELS = ("fine", "base", "script")
SCRIPTS = ("Latin", "Greek", "Cyrillic", "other letter", "number", "punctuation", "symbol")
_SCRIPT_WORDS = {"LATIN": "Latin", "GREEK": "Greek", "COPTIC": "Greek", "CYRILLIC": "Cyrillic"}


def eligible(valid: np.ndarray, test: np.ndarray) -> np.ndarray:
    """bool [M]: drawn by ≥ 2 training faces and ≥ 1 test face (``test`` bool [F] marks test faces)."""
    valid = np.asarray(valid, bool)
    test = np.asarray(test, bool)
    return (valid[:, ~test].sum(axis=1) >= 2) & (valid[:, test].sum(axis=1) >= 1)


def choose(codepoints: np.ndarray, valid: np.ndarray, test: np.ndarray, n_classes: int) -> np.ndarray:
    """Row indices (into ``codepoints``) of the ``n_classes`` classes, in code-point order (module doc)."""
    ok = eligible(valid, test)
    if n_classes > int(ok.sum()):
        raise ValueError(f"n_classes={n_classes} exceeds the {int(ok.sum())} code points drawn by ≥ 2 "
                         f"training faces and ≥ 1 test face")
    n = np.asarray(valid, bool).sum(axis=1)
    order = np.lexsort((np.asarray(codepoints), -n))
    chosen = order[ok[order]][:n_classes]
    return np.sort(chosen)  # codepoints are sorted, so row order is code-point order


def base_char(cp: int) -> str:
    return unicodedata.normalize("NFD", chr(cp))[0]


def script_of(cp: int) -> str:
    ch = chr(cp)
    cat = unicodedata.category(ch)[0]
    if cat == "L":
        return _SCRIPT_WORDS.get(unicodedata.name(ch, "").split(" ")[0], "other letter")
    return {"N": "number", "P": "punctuation", "S": "symbol"}.get(cat, "other letter")


def hierarchy(codepoints, level: str) -> tuple[np.ndarray, list[str]]:
    """(int64 [K] label of each fine class, label names) at ``level`` in :data:`LEVELS`."""
    cps = [int(c) for c in codepoints]
    if level == "fine":
        return np.arange(len(cps), dtype=np.int64), [chr(c) for c in cps]
    if level == "base":
        bases = [base_char(c) for c in cps]
        names = sorted(set(bases), key=ord)
        index = {b: i for i, b in enumerate(names)}
        return np.array([index[b] for b in bases], np.int64), names
    if level == "script":
        index = {s: i for i, s in enumerate(SCRIPTS)}
        return np.array([index[script_of(c)] for c in cps], np.int64), list(SCRIPTS)
    raise ValueError(f"level must be one of {LEVELS}, got {level!r}")


def homoglyph_stats(canon: np.ndarray, pair_class: np.ndarray, pair_face: np.ndarray, n_classes: int,
                    tol: int) -> np.ndarray:
    """int64 [P, 5] rows (k1, k2, n_close, n_both, worst) for every class pair k1 < k2 whose canonical
    renders differ by at most ``tol`` grey levels at every pixel in at least one face: ``n_close`` faces
    where they do, ``n_both`` faces that draw both classes, ``worst`` the largest such difference among
    the close faces.

    Candidates come from 8×8 block sums (a pair within ``tol`` per pixel is within ``64 tol`` per block);
    the verdict is the exact pixelwise maximum.
    """
    canon = np.asarray(canon)
    n_faces = int(pair_face.max()) + 1 if len(pair_face) else 0
    index = -np.ones((n_classes, n_faces), np.int64)
    index[pair_class, pair_face] = np.arange(len(pair_class))
    close: dict[tuple[int, int], list[int]] = {}
    b = 8
    c = canon.shape[-1] // b * b
    for f in range(n_faces):
        ks = np.flatnonzero(index[:, f] >= 0)
        if len(ks) < 2:
            continue
        imgs = canon[index[ks, f]][:, :c, :c].astype(np.int32)
        blocks = imgs.reshape(len(ks), c // b, b, c // b, b).sum(axis=(2, 4)).reshape(len(ks), -1)
        for i in range(len(ks) - 1):
            d = np.abs(blocks[i + 1:] - blocks[i]).max(axis=1)
            for j in np.flatnonzero(d <= tol * b * b):
                diff = int(np.abs(imgs[i] - imgs[i + 1 + j]).max())
                if diff <= tol:
                    close.setdefault((int(ks[i]), int(ks[i + 1 + j])), []).append(diff)
    drawn = index >= 0
    rows = [(k1, k2, len(v), int((drawn[k1] & drawn[k2]).sum()), max(v)) for (k1, k2), v in sorted(close.items())]
    return np.array(rows, np.int64).reshape(-1, 5)


def homoglyph_pairs(stats: np.ndarray, min_fraction: float = 1.0) -> list[tuple[int, int, int]]:
    """(k1, k2, worst) of the pairs close in at least ``min_fraction`` of the faces drawing both."""
    if not 0 < min_fraction <= 1:
        raise ValueError(f"min_fraction must be in (0, 1], got {min_fraction!r}")
    stats = np.asarray(stats, np.int64).reshape(-1, 5)
    keep = stats[:, 2] >= min_fraction * stats[:, 3] - 1e-9
    return [(int(a), int(b), int(w)) for a, b, _, _, w in stats[keep]]


def groups_from_pairs(pairs, n_classes: int) -> list[list[int]]:
    """Connected components (size ≥ 2) of the pair graph, each sorted, sorted by first member."""
    parent = list(range(n_classes))

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a
    for k1, k2, *_ in pairs:
        parent[find(k1)] = find(k2)
    comp: dict[int, list[int]] = {}
    for k in range(n_classes):
        comp.setdefault(find(k), []).append(k)
    return sorted((sorted(g) for g in comp.values() if len(g) > 1), key=lambda g: g[0])
