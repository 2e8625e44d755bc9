"""The named glyph networks the verify run shares: fixed configurations, their costs and required accuracies.

``net(name, quick)`` trains (or loads from the disk cache, :func:`sims.glyphs.train.train_glyph_net`) the network
of that name; ``accuracy(name, quick)`` is its held-out accuracy (:func:`sims.glyphs.features.heldout_accuracy`
on the shared evaluation images); ``precondition(name, quick)`` says whether it reached the accuracies required
of it (a check built on an untrained network must end ``reported``/fail, never with a verdict). Networks with the
same configuration are trained once (the cache key is the configuration and the code), so every check that names
``'lenet-s0'`` uses the same weights. Names are the same in quick and full mode; quick mode maps each name to a
small configuration of a few seconds (100 classes) that is judged the same way.

Configurations (fixed before any verdict was looked at; their costs, measured accuracies and the probe trainings
that set them are in docs/glyph_nets.md, "The suite networks"): level 'fine', AdamW 2·10⁻³ with warm-up + cosine,
τ = 1, λ = 0, data_seed 0, the task :data:`TASK` (1000 code points, 32×32, DejaVu Serif held out as test faces):

=================  ======  =========  ========  ======  =====  ===================================
name               arch    class set  per cl.   epochs  batch  required held-out accuracy (face, aug)
=================  ======  =========  ========  ======  =====  ===================================
lenet-s0, -s1      lenet   all        24        8       256    ≥ 0.30, ≥ 0.35
lenet-base-s0      lenet   base       24        8       256    ≥ 0.30, ≥ 0.35
(quick) the same   lenet   100 / 90   16        6       128    ≥ 0.40, ≥ 0.40
=================  ======  =========  ========  ======  =====  ===================================

Class sets (fine-class indices of the task, ordered by coverage): ``all`` = every class; ``base`` = the classes k
with k mod 10 ≠ 9 (ND Sec 3.2's f_base; the new classes are k mod 10 = 9): 1000 / 900 / 100 in full mode, and 100 /
90 / 10 in quick mode, whose task is :data:`TASK_QUICK` (the 100 code points of highest coverage). Names
``<arch>[-base]-s<seed>`` beyond the table take its configuration with that architecture and seed.
"""
from __future__ import annotations

import dataclasses
import re
import threading

import numpy as np

from sims.glyphs.task import GlyphTaskConfig, glyph_task

TASK = GlyphTaskConfig()
#: Quick mode's task: the first 100 code points by coverage (its own cached task: images are drawn only for them).
TASK_QUICK = GlyphTaskConfig(n_classes=100)


def task_config(quick: bool = False) -> GlyphTaskConfig:
    return TASK_QUICK if quick else TASK
EVAL_SEED = 1              # the held-out images: task.images(split, per_class, EVAL_SEED) (training uses seed 0)
EVAL_PER_CLASS = {False: 8, True: 8}   # per class and split for the accuracies and the checks' held-out sets


@dataclasses.dataclass(frozen=True)
class NetSpec:
    """One named network: training configuration and the held-out accuracies it must reach (precondition)."""

    arch: str
    seed: int
    classes: str = "all"          # 'all' or 'base' (module doc)
    epochs: int = 8
    per_class: int = 24
    batch_size: int = 256
    checkpoints: tuple = (4,)
    min_face: float = 0.30        # accuracy over every held-out face (face_test_all) at the net's level
    min_aug: float = 0.35         # accuracy on the augmentation split of the training faces (aug_test)


def _full(arch: str, seed: int, classes: str = "all", **kw) -> NetSpec:
    return NetSpec(arch, seed, classes, **kw)


#: Full mode (``make verify``): 1000-class networks.
FULL = {
    "lenet-s0": _full("lenet", 0),
    "lenet-s1": _full("lenet", 1),
    "lenet-base-s0": _full("lenet", 0, "base"),
}
#: Quick mode (``--quick``): 100 classes, a few seconds each; same names.
QUICK = {name: dataclasses.replace(s, epochs=6, per_class=16, batch_size=128, checkpoints=(), min_face=0.40,
                                   min_aug=0.40)
         for name, s in FULL.items()}
_PATTERN = re.compile(r"(lenet|resnet)(-base)?-s(\d+)$")


def names(quick: bool = False) -> list[str]:
    return sorted(QUICK if quick else FULL)


def spec(name: str, quick: bool = False) -> NetSpec:
    """The configuration of ``name``. Names of the form ``<arch>[-base]-s<seed>`` beyond the table (another seed,
    or the ResNet) get the table's configuration of the same kind with that architecture and seed."""
    table = QUICK if quick else FULL
    if name in table:
        return table[name]
    m = _PATTERN.match(name) if isinstance(name, str) else None
    if m is None:
        raise ValueError(f"name: {name!r} is not a suite network; choose from {sorted(table)} or "
                         "'<lenet|resnet>[-base]-s<seed>'")
    ref = table["lenet-base-s0" if m.group(2) else "lenet-s0"]
    return dataclasses.replace(ref, arch=m.group(1), seed=int(m.group(3)))


def class_set(which: str, quick: bool = False) -> tuple:
    """The fine classes of a class set (module doc), sorted."""
    k = np.arange(task_config(quick).n_classes)
    if which == "all":
        keep = np.ones_like(k, bool)
    elif which == "base":
        keep = k % 10 != 9
    elif which == "new":
        keep = k % 10 == 9
    else:
        raise ValueError(f"class set: {which!r} is not one of 'all', 'base', 'new'")
    return tuple(int(v) for v in k[keep])


def train_kwargs(name: str, quick: bool = False) -> dict:
    """The keyword arguments of :func:`sims.glyphs.train.train_glyph_net` for ``name`` (besides the task)."""
    s = spec(name, quick)
    cl = class_set(s.classes, quick)
    return {"arch": s.arch, "level": "fine", "classes": None if len(cl) == task_config(quick).n_classes else cl,
            "epochs": s.epochs, "per_class": s.per_class, "batch_size": s.batch_size, "seed": s.seed,
            "checkpoints": s.checkpoints}


_NETS: dict = {}
_ACC: dict = {}
_IMAGES: dict = {}
_LOCK = threading.RLock()


def net(name: str, quick: bool = False, device=None, progress: bool = False):
    """The trained :class:`sims.glyphs.train.GlyphNet` of ``name`` (trained once, then from the disk cache)."""
    from sims.glyphs.train import train_glyph_net

    key = (name, bool(quick), str(device))
    with _LOCK:
        if key not in _NETS:
            _NETS[key] = train_glyph_net(task_config(quick), device=device, progress=progress,
                                         **train_kwargs(name, quick))
        return _NETS[key]


def task(quick: bool = False):
    return glyph_task(task_config(quick))


def eval_images(split: str, quick: bool = False):
    """The shared held-out images ``(X, y fine, face)`` of a split (numpy), memoised; quick: the quick classes."""
    key = (split, bool(quick))
    with _LOCK:
        if key not in _IMAGES:
            X, y, f = task(quick).images(split, EVAL_PER_CLASS[bool(quick)], EVAL_SEED)
            X, y, f = X.numpy(), y.numpy(), f.numpy()
            _IMAGES[key] = (X, y, f)
        return _IMAGES[key]


class _SharedImages:
    """The task with :meth:`images` answered from :func:`eval_images` (same arguments → same images)."""

    def __init__(self, quick: bool):
        self._quick = quick
        self._task = task(quick)

    def __getattr__(self, item):
        return getattr(self._task, item)

    def images(self, split, per_class, seed, augment=True):
        if per_class == EVAL_PER_CLASS[self._quick] and seed == EVAL_SEED and augment:
            return eval_images(split, self._quick)
        return self._task.images(split, per_class, seed, augment)


def accuracy(name: str, quick: bool = False, device=None) -> dict:
    """:func:`sims.glyphs.features.heldout_accuracy` of the named network on the shared held-out images."""
    from sims.glyphs.features import heldout_accuracy

    key = (name, bool(quick), str(device))
    with _LOCK:
        if key not in _ACC:
            _ACC[key] = heldout_accuracy(net(name, quick, device), task=_SharedImages(bool(quick)),
                                         per_class=EVAL_PER_CLASS[bool(quick)], seed=EVAL_SEED)
        return _ACC[key]


def precondition(name: str, quick: bool = False, device=None) -> dict:
    """Did ``name`` reach its required held-out accuracies? ``{'trained': bool, 'face_test_all', 'aug_test',
    'required': ..., 'reason': str}`` — a check must not give a verdict on a network with ``trained`` False."""
    s = spec(name, quick)
    a = accuracy(name, quick, device)
    ok = a["face_test_all"] >= s.min_face and a["aug_test"] >= s.min_aug
    reason = (f"{name}: held-out accuracy {a['face_test_all']:.3f} on the test faces (required ≥ {s.min_face:g}), "
              f"{a['aug_test']:.3f} on aug_test (required ≥ {s.min_aug:g})")
    return {"trained": bool(ok), "face_test_all": a["face_test_all"], "aug_test": a["aug_test"],
            "face_test": a["face_test"], "required": {"face_test_all": s.min_face, "aug_test": s.min_aug},
            "reason": reason + ("" if ok else ": NOT trained enough for a verdict")}


__all__ = ["TASK", "TASK_QUICK", "task_config", "NetSpec", "FULL", "QUICK", "names", "spec", "class_set", "train_kwargs", "net", "task",
           "eval_images", "accuracy", "precondition", "EVAL_SEED", "EVAL_PER_CLASS"]
