"""sims.glyphs.task: the public glyph task (config, splits by face, images, hierarchies, homoglyphs)."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from sims.glyphs import TEST_FACES, GlyphTaskConfig, glyph_task
from sims.glyphs import task as task_mod

SMALL = GlyphTaskConfig(n_classes=40, size=16, seed=3)


@pytest.fixture(scope="module")
def small():
    return glyph_task(SMALL)


@pytest.fixture(scope="module")
def default():
    return glyph_task(GlyphTaskConfig())


def _digest(*tensors):
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.numpy().tobytes())
    return h.hexdigest()


@pytest.mark.parametrize("kwargs,field", [({"n_classes": 1}, "n_classes"), ({"n_classes": 2.5}, "n_classes"),
                                          ({"n_classes": True}, "n_classes"), ({"size": 4}, "size"),
                                          ({"size": 256}, "size"), ({"seed": -1}, "seed"), ({"seed": "0"}, "seed"),
                                          ({"test_faces": ("Nope",)}, "test_faces"), ({"test_faces": ()}, "test_faces"),
                                          ({"test_faces": "DejaVuSerif"}, "test_faces")])
def test_config_validates_its_fields(kwargs, field):
    with pytest.raises(ValueError, match=field):
        GlyphTaskConfig(**kwargs)


def test_too_many_classes_is_a_clear_error():
    with pytest.raises(ValueError, match="n_classes=100000 exceeds"):
        glyph_task(GlyphTaskConfig(n_classes=100_000))
    with pytest.raises(ValueError, match="cfg"):
        glyph_task({"n_classes": 10})


def test_glyph_task_is_cached_in_memory(small):
    assert glyph_task(GlyphTaskConfig(n_classes=40, size=16, seed=3)) is small


def test_faces_split_disjointly_and_every_class_has_two_training_and_one_test_face(default):
    tr, te = set(default.train_faces), set(default.test_faces)
    assert not tr & te and tr | te == set(range(len(default.faces)))
    assert sorted(default.faces[i] for i in te) == sorted(TEST_FACES)
    assert not any(f.startswith("LastResort") for f in default.faces)
    cov = default.coverage
    assert cov.shape == (1000, len(default.faces)) and cov.dtype == bool
    assert (cov[:, sorted(tr)].sum(axis=1) >= 2).all() and (cov[:, sorted(te)].sum(axis=1) >= 1).all()
    assert len(set(default.codepoints.tolist())) == 1000 and (np.diff(default.codepoints) > 0).all()


def test_hierarchies_on_the_default_task(default):
    cps = default.codepoints.tolist()
    base, bnames = default.labels("base"), default.label_names("base")
    e = cps.index(ord("e"))
    assert base[cps.index(ord("é"))] == base[cps.index(ord("è"))] == base[e] and bnames[base[e]] == "e"
    assert base[cps.index(ord("E"))] != base[e]
    script, snames = default.labels("script"), default.label_names("script")
    assert snames[script[cps.index(ord("α"))]] == "Greek" and snames[script[cps.index(ord("A"))]] == "Latin"
    assert script.dtype == np.int64 and script.shape == (1000,) and len(snames) == 7
    assert (default.labels("fine") == np.arange(1000)).all()


def test_homoglyph_groups_are_measured(default):
    cps = default.codepoints
    groups = [{chr(cps[k]) for k in g} for g in default.homoglyph_groups()]
    assert {"H", "Η"} in groups and {"X", "Χ"} in groups       # Latin H, Greek Eta: one outline
    assert not any({"O", "0"} <= g or {"l", "1"} <= g for g in groups)
    assert len(default.homoglyph_groups(0.5)) > len(default.homoglyph_groups())
    for k1, k2, worst in default.homoglyph_pairs():
        shared = np.flatnonzero(default.coverage[k1] & default.coverage[k2])
        d = max(int(np.abs(default.canonical(k1, f).astype(int) - default.canonical(k2, f).astype(int)).max())
                for f in shared)
        assert d <= task_mod.HOMOGLYPH_TOL + 2  # prefiltered renders differ no more than the raw ones (±rounding)


def test_same_arguments_give_the_same_bytes_and_other_seeds_differ(small):
    a = small.images("train", 3, 7)
    b = small.images("train", 3, 7)
    assert _digest(*a) == _digest(*b)
    assert not torch.equal(a[0], small.images("train", 3, 8)[0])
    assert not torch.equal(a[0], small.images("aug_test", 3, 7)[0])
    other = glyph_task(GlyphTaskConfig(n_classes=40, size=16, seed=4))
    assert not torch.equal(a[0], other.images("train", 3, 7)[0])


def test_images_do_not_depend_on_batching_and_grow_by_prefix(small, monkeypatch):
    X, y, f = small.images("train", 5, 1)
    monkeypatch.setattr(task_mod, "_CHUNK", 7)
    monkeypatch.setattr(task_mod, "_AUG_CHUNK", 5)
    X2, y2, f2 = small.images("train", 5, 1)
    assert _digest(X, y, f) == _digest(X2, y2, f2)
    X3, _, f3 = small.images("train", 2, 1)
    keep = (np.arange(len(y)) % 5) < 2
    assert X3.numpy().tobytes() == X.numpy()[keep].tobytes() and torch.equal(f3, f[torch.from_numpy(keep)])


def test_images_are_the_same_in_another_process_with_other_thread_counts(small):
    X, y, f = small.images("face_test", 2, 5)
    code = ("import hashlib, torch; from sims.glyphs import GlyphTaskConfig, glyph_task\n"
            "torch.set_num_threads(1)\n"
            "X, y, f = glyph_task(GlyphTaskConfig(n_classes=40, size=16, seed=3)).images('face_test', 2, 5)\n"
            "h = hashlib.sha256()\n"
            "[h.update(t.numpy().tobytes()) for t in (X, y, f)]\n"
            "print(h.hexdigest())\n")
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert out.stdout.strip() == _digest(X, y, f)


def test_splits_use_their_own_faces_and_only_faces_that_draw_the_class(small):
    for split, allowed in (("train", small.train_faces), ("aug_test", small.train_faces),
                           ("face_test", small.test_faces)):
        X, y, f = small.images(split, 6, 0)
        assert set(f.tolist()) <= set(allowed)
        assert small.coverage[y.numpy(), f.numpy()].all()
        assert y.tolist() == np.repeat(np.arange(40), 6).tolist()
    X, y, f = small.images("train", 12, 0)
    for k in range(40):  # samples spread evenly over the class's training faces
        faces = np.flatnonzero(small.coverage[k][small.train_faces])
        counts = np.bincount(f[y == k].numpy(), minlength=len(small.faces))[np.array(small.train_faces)[faces]]
        assert counts.max() - counts.min() <= 1


def test_images_are_in_unit_range_with_real_ink(small, default):
    for augment in (True, False):
        X, y, f = small.images("face_test", 4, 2, augment=augment)
        assert X.dtype == torch.float32 and X.shape == (160, 1, 16, 16) and y.dtype == f.dtype == torch.int64
        assert X.min() >= 0 and X.max() <= 1
        ink = X.flatten(1)  # at 16 px an underscore is a faint hairline
        assert (ink.max(dim=1).values > 0.2).all() and (ink.sum(dim=1) > 2).all()
    X, _, _ = default.images("train", 2, 0)
    ink = X.flatten(1)
    assert X.shape == (2000, 1, 32, 32) and (ink.max(dim=1).values > 0.3).all() and (ink.sum(dim=1) > 5).all()


def test_clean_images_are_deterministic_renders(small):
    X1 = small.images("train", 3, 0, augment=False)[0]
    X2 = small.images("train", 3, 9, augment=False)[0]  # the seed only picks the face order
    assert X1.shape == X2.shape
    k = 0
    f = small.train_faces[int(np.flatnonzero(small.coverage[k][small.train_faces])[0])]
    canon = small.canonical(k, f).astype(np.float64) / 255
    blocks = canon.reshape(16, 2, 16, 2).mean(axis=(1, 3))
    Xs, ys, fs = small.images("train", 30, 0, augment=False)
    i = int(np.flatnonzero((ys == k).numpy() & (fs == f).numpy())[0])
    np.testing.assert_allclose(Xs[i, 0].numpy(), blocks, atol=1e-6)


@pytest.mark.parametrize("args,name", [(("val", 2, 0), "split"), (("train", 0, 0), "per_class"),
                                       (("train", 2.0, 0), "per_class"), (("train", 2, -1), "seed")])
def test_images_reject_bad_arguments(small, args, name):
    with pytest.raises(ValueError, match=name):
        small.images(*args)


def test_canonical_refuses_a_face_that_does_not_draw_the_class(small):
    k, f = np.argwhere(~small.coverage)[0]
    with pytest.raises(ValueError, match="does not draw"):
        small.canonical(int(k), int(f))
