"""The glyph task: classes, faces, splits by face and by augmentation, label hierarchies, images.

``glyph_task(GlyphTaskConfig(n_classes=1000, size=32, seed=0))`` gives a :class:`GlyphTask`. Its faces
are the usable faces (:mod:`sims.glyphs.fonts`) that draw at least one class; the **test faces** are
:data:`TEST_FACES` (the whole DejaVu Serif family, five files, by default), never used by the training
splits. ``images(split, per_class, seed)`` draws ``per_class`` augmented images of every class:

* ``'train'`` and ``'aug_test'``: from the class's training faces, with independent augmentation streams;
* ``'face_test'``: from the class's test faces only.

Sample ``j`` of class ``k`` uses face ``F[(o + j) mod |F|]`` of the class's faces ``F`` in that split
(sorted, ``o`` a random offset per class), so the samples spread evenly over the faces. All randomness of
class ``k`` comes from ``numpy`` PCG64 streams seeded by ``SeedSequence([cfg.seed, split, seed, k, stream])``,
so the images do not depend on batch order, thread count or machine, and the first ``m`` samples of a
class are the same for every ``per_class ≥ m``. Output is class-major: class 0's samples, then class 1's.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np
import torch

from sims import cache
from sims.progress import bar as tqdm  # a bar on a terminal only (tqdm's rule): no redraws in logs
from sims.glyphs import augment as aug
from sims.glyphs import classes, fonts, render, survey

TEST_FACES = ("DejaVuSerif", "DejaVuSerif-Bold", "DejaVuSerif-BoldItalic", "DejaVuSerif-Italic",
              "DejaVuSerifDisplay")
SPLITS = {"train": 1, "aug_test": 2, "face_test": 3}
HOMOGLYPH_TOL = 32       # grey levels of 255, at every pixel of the canonical renders, in every shared face
_CHUNK = 2048            # images whose random draws are made together (any size gives the same bytes)
_AUG_CHUNK = 32          # images per numpy augmentation call: small arrays stay in the CPU cache (fastest)
_MAX_PER_CLASS = 100_000


@dataclass(frozen=True)
class GlyphTaskConfig:
    """n_classes code points (≥ 2), images ``size × size`` (8 ≤ size ≤ 128), ``seed`` for augmentation
    streams, ``test_faces`` the held-out face names."""
    n_classes: int = 1000
    size: int = 32
    seed: int = 0
    test_faces: tuple = TEST_FACES

    def __post_init__(self):
        for name in ("n_classes", "size", "seed"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise ValueError(f"{name} must be an int, got {v!r}")
        if self.n_classes < 2:
            raise ValueError(f"n_classes must be at least 2, got {self.n_classes}")
        if not 8 <= self.size <= 128:
            raise ValueError(f"size must be in [8, 128], got {self.size}")
        if self.seed < 0:
            raise ValueError(f"seed must be non-negative, got {self.seed}")
        tf = self.test_faces
        if isinstance(tf, str) or not tf or len(set(tf)) != len(tf):
            raise ValueError(f"test_faces must be a non-empty tuple of distinct face names, got {tf!r}")
        known = {f.name for f in fonts.faces()}
        unknown = sorted(set(tf) - known)
        if unknown:
            raise ValueError(f"test_faces names unknown faces {unknown}; known: {sorted(known)}")
        object.__setattr__(self, "test_faces", tuple(sorted(tf)))


def _build(n_classes: int, size: int, test_faces: tuple) -> dict:
    s = survey.survey()
    names = list(s["faces"])
    test = np.array([n in test_faces for n in names])
    rows = classes.choose(s["codepoints"], s["valid"], test, n_classes)
    valid = s["valid"][rows]
    used = np.flatnonzero(valid.any(axis=0))  # faces drawing at least one class
    valid = valid[:, used]
    pair_class, pair_face = np.nonzero(valid)
    all_faces = fonts.faces()
    canon = np.zeros((len(pair_class), 2 * size, 2 * size), np.uint8)
    cps = s["codepoints"][rows]
    gids = {}
    for i in tqdm(range(len(pair_class)), desc="glyphs: canonical renders", unit="glyph", leave=False, disable=None):
        face = all_faces[used[pair_face[i]]]
        if face.name not in gids:
            gids[face.name] = fonts.candidates(face)
        gid = gids[face.name][int(cps[pair_class[i]])]
        canon[i] = render.render_canonical(fonts.load_font(face.path), gid, 2 * size)
    stats = classes.homoglyph_stats(canon, pair_class, pair_face, n_classes, HOMOGLYPH_TOL)
    return {"codepoints": cps, "faces": np.array([names[u] for u in used]), "coverage": valid,
            "test": test[used], "pair_class": pair_class.astype(np.int64), "pair_face": pair_face.astype(np.int64),
            "padded": render.prefilter(canon), "homoglyph_stats": stats}


class GlyphTask:
    """The glyph task of one :class:`GlyphTaskConfig` (module doc); build it with :func:`glyph_task`."""

    def __repr__(self) -> str:
        return (f"GlyphTask({self.n_classes} classes, {self.config.size}x{self.config.size}, "
                f"{len(self.train_faces)} training faces, {len(self.test_faces)} test faces)")

    def __init__(self, cfg: GlyphTaskConfig, data: dict):
        self.config = cfg
        self.codepoints = np.asarray(data["codepoints"], np.int64)
        self.faces = [str(f) for f in data["faces"]]
        test = np.asarray(data["test"], bool)
        self.train_faces = [int(i) for i in np.flatnonzero(~test)]
        self.test_faces = [int(i) for i in np.flatnonzero(test)]
        self.coverage = np.asarray(data["coverage"], bool)
        self._pair_index = -np.ones(self.coverage.shape, np.int64)
        self._pair_index[data["pair_class"], data["pair_face"]] = np.arange(len(data["pair_class"]))
        self._padded = np.asarray(data["padded"], np.uint8)
        self._homoglyph_stats = np.asarray(data["homoglyph_stats"], np.int64).reshape(-1, 5)
        self._is_test = test

    @property
    def n_classes(self) -> int:
        return len(self.codepoints)

    def canonical(self, k: int, face: int) -> np.ndarray:
        """uint8 [2S, 2S]: the prefiltered canonical render of class ``k`` in face ``face`` (the image the
        augmentation samples; ValueError if the face does not draw the class)."""
        if not (0 <= k < self.n_classes and 0 <= face < len(self.faces)) or self._pair_index[k, face] < 0:
            raise ValueError(f"face {face} does not draw class {k} (or either is out of range)")
        return self._padded[self._pair_index[k, face], 1:-1, 1:-1]

    def labels(self, level: str) -> np.ndarray:
        """int64 [K]: the label of each fine class at ``level`` ('fine', 'base', 'script'; see classes)."""
        return classes.hierarchy(self.codepoints, level)[0]

    def label_names(self, level: str) -> list[str]:
        return classes.hierarchy(self.codepoints, level)[1]

    def homoglyph_groups(self, min_fraction: float = 1.0) -> list[list[int]]:
        """Groups (connected, each sorted) of classes whose canonical renders differ by ≤ HOMOGLYPH_TOL grey
        levels at every pixel in every face that draws both (``min_fraction`` < 1: in at least that
        fraction of those faces), e.g. Latin H and Greek Η. DejaVu draws many Latin/Greek/Cyrillic twins
        with one outline; STIX draws them apart, so Latin B/Cyrillic В are twins only at ``min_fraction``
        ≤ 0.75."""
        return classes.groups_from_pairs(self.homoglyph_pairs(min_fraction), self.n_classes)

    def homoglyph_pairs(self, min_fraction: float = 1.0) -> list[tuple[int, int, int]]:
        """(k1, k2, worst max-pixel difference in grey levels over the close faces) of every homoglyph pair."""
        return classes.homoglyph_pairs(self._homoglyph_stats, min_fraction)

    def split_faces(self, split: str) -> list[int]:
        if split not in SPLITS:
            raise ValueError(f"split must be one of {sorted(SPLITS)}, got {split!r}")
        return self.test_faces if split == "face_test" else self.train_faces

    def _class_draws(self, split: str, per_class: int, seed: int, k: int, augment: bool):
        faces = np.flatnonzero(self.coverage[k] & (self._is_test if split == "face_test" else ~self._is_test))
        root = [self.config.seed, SPLITS[split], seed, k]
        offset = int(np.random.Generator(np.random.PCG64(np.random.SeedSequence(root + [0]))).integers(len(faces)))
        face = faces[(offset + np.arange(per_class)) % len(faces)]
        if not augment:
            return face, None, None
        u = np.random.Generator(np.random.PCG64(np.random.SeedSequence(root + [1]))).random((per_class, aug.N_PARAMS))
        s = self.config.size
        noise = np.random.Generator(np.random.PCG64(np.random.SeedSequence(root + [2]))).random(
            (per_class, s, s), dtype=np.float32)
        return face, u, noise

    def images(self, split: str, per_class: int, seed: int, augment: bool = True, classes=None):
        """(X float32 [N, 1, S, S] in [0, 1], y int64 [N] fine labels, face int64 [N] indices into faces),
        ``N = n_classes × per_class``, class-major; same arguments → bit-identical tensors (module doc).
        ``augment=False`` gives the canonical renders resampled to S × S (no jitter, stroke, blur, noise).
        ``classes``: only these fine classes (sorted, distinct), N = len(classes) × per_class; each class's images
        are drawn from its own streams, so they are the bytes the whole task's draw gives for that class."""
        self.split_faces(split)
        if isinstance(per_class, bool) or not isinstance(per_class, (int, np.integer)) \
                or not 1 <= per_class <= _MAX_PER_CLASS:
            raise ValueError(f"per_class must be an int in [1, {_MAX_PER_CLASS}], got {per_class!r}")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {seed!r}")
        if classes is None:
            ids = np.arange(self.n_classes, dtype=np.int64)
        else:
            ids = np.asarray(classes)
            if ids.ndim != 1 or ids.size == 0 or not np.issubdtype(ids.dtype, np.integer) \
                    or np.any(np.diff(ids) <= 0) or ids[0] < 0 or ids[-1] >= self.n_classes:
                raise ValueError(f"classes: need sorted distinct fine-class indices in [0, {self.n_classes}), "
                                 f"got {classes!r}")
            ids = ids.astype(np.int64)
        K, S = len(ids), self.config.size
        N = K * per_class
        from sims.resources import require

        require(N * (4 * S * S + 16), f"glyph images: {K} classes × {per_class} per class at {S} × {S}",
                hint="use fewer classes or images per class")
        X = np.empty((N, S, S), np.float32)
        face = np.empty(N, np.int64)
        y = np.repeat(ids, per_class)
        per_chunk = max(1, _CHUNK // per_class)
        with tqdm(total=N, desc=f"glyphs: {split} images", unit="img", leave=False,
                  disable=True if N < 20_000 else None) as bar:
            for k0 in range(0, K, per_chunk):
                ks = ids[k0:min(K, k0 + per_chunk)]
                draws = [self._class_draws(split, per_class, seed, k, augment) for k in ks]
                f = np.concatenate([d[0] for d in draws])
                which = self._pair_index[np.repeat(np.asarray(ks), per_class), f]
                if augment:
                    params = aug.params_from_uniform(np.concatenate([d[1] for d in draws]))
                    noise = np.concatenate([d[2] for d in draws])
                else:
                    params, noise = aug.identity_params(len(f)), None
                start = k0 * per_class
                for i in range(0, len(f), _AUG_CHUNK):
                    sl = slice(i, i + _AUG_CHUNK)
                    X[start + i:start + i + len(which[sl])] = aug.augment(
                        self._padded, which[sl], {name: v[sl] for name, v in params.items()}, S,
                        None if noise is None else noise[sl])
                face[start:start + len(f)] = f
                bar.update(len(f))
        return torch.from_numpy(X).unsqueeze(1), torch.from_numpy(y), torch.from_numpy(face)


_TASKS: dict = {}
_LOCK = threading.Lock()


def glyph_task(cfg: GlyphTaskConfig | None = None) -> GlyphTask:
    """The task of ``cfg`` (default config if None): from memory, else the disk cache, else built."""
    cfg = GlyphTaskConfig() if cfg is None else cfg
    if not isinstance(cfg, GlyphTaskConfig):
        raise ValueError(f"cfg must be a GlyphTaskConfig, got {type(cfg).__name__}")
    with _LOCK:
        if cfg not in _TASKS:
            params = {"n_classes": cfg.n_classes, "size": cfg.size, "test_faces": list(cfg.test_faces),
                      "fonts": fonts.fonts_fingerprint(), "tol": HOMOGLYPH_TOL}
            data = cache.cached("glyph_task", params,
                                lambda: _build(cfg.n_classes, cfg.size, cfg.test_faces), depends=(_build,))
            _TASKS[cfg] = GlyphTask(cfg, data)
        return _TASKS[cfg]


__all__ = ["GlyphTaskConfig", "GlyphTask", "glyph_task", "TEST_FACES", "SPLITS"]
