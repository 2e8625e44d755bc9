"""The named glyph networks the verify run shares: fixed configurations, their costs and required accuracies.

``net(name, quick)`` trains (or loads from the disk cache, :func:`sims.glyphs.train.train_glyph_net`) the network
of that name; ``accuracy(name, quick)`` is its held-out accuracy (:func:`sims.glyphs.features.heldout_accuracy`
on the shared evaluation images); ``precondition(name, quick)`` says whether it reached the accuracies required
of it (a check built on an untrained network must end ``reported``/fail, never with a verdict). Networks with the
same configuration are trained once (the cache key is the configuration and the code), so every check that names
``'lenet-s0'`` uses the same weights. Names are the same in quick and full mode; quick mode maps each name to a
small configuration of a few seconds (100 classes) that is judged the same way.

The configurations were fixed before any verdict was looked at, from the cost and accuracy of one probe training
(LeNet, 24 images per class, 8 epochs, 1000 classes; measured below). All use the trainer's optimiser and loss
defaults (AdamW 2·10⁻³, warm-up + cosine, τ = 1, λ = 0) and the task's default configuration :data:`TASK`
(1000 code points, 32×32, the DejaVu Serif family held out as test faces).

Class sets (fine-class indices of the task, ordered by coverage): ``all`` = every class; ``base`` = the classes k
with k mod 10 ≠ 9 (ND Sec 3.2's f_base; the new classes are k mod 10 = 9): 1000 / 900 / 100 in full mode, and 100 /
90 / 10 in quick mode, whose task is :data:`TASK_QUICK` (the 100 code points of highest coverage; its images are
drawn for those classes only, ten times cheaper than drawing the 1000-class task's and keeping 100).

Configurations (level 'fine', lr 2·10⁻³, τ = 1, λ = 0, data_seed 0; the LeNet with batch norm of sims/glyphs/nets.py
at commit ce3c71f; costs measured on the shared 2-core machine at load 10–13, one torch thread (a quiet machine is
≈ 3–5× faster); accuracies from ``accuracy(name)``: 8 images per class and split, ``EVAL_SEED``):

=================  ======  =====  ======  =====  =====  ================  ================  =============  =========
name               arch    class  per cl  epoch  batch  required (face,   measured (face,   training       final
                           set                          aug)              aug)              (s, img/s)     train acc
=================  ======  =====  ======  =====  =====  ================  ================  =============  =========
lenet-s0           lenet   1000   24      8      256    ≥ 0.30, ≥ 0.35    0.666, 0.730      459, 418       0.873
lenet-s1           lenet   1000   24      8      256    ≥ 0.30, ≥ 0.35    0.639, 0.703      332, 578       0.861
lenet-base-s0      lenet   900    24      8      256    ≥ 0.30, ≥ 0.35    0.670, 0.733      199, 866       0.878
resnet-s0 (*)      resnet  1000   24      8      256    ≥ 0.30, ≥ 0.35    0.511, 0.560      1715, 112      0.679
lenet-s0 (quick)   lenet   100    16      6      128    ≥ 0.40, ≥ 0.40    0.517, 0.483      30, 325        0.657
lenet-s1 (quick)   lenet   100    16      6      128    ≥ 0.40, ≥ 0.40    0.531, 0.494      22, 441        0.675
lenet-base-s0 (q)  lenet   90     16      6      128    ≥ 0.40, ≥ 0.40    0.517, 0.494      19, 451        0.682
=================  ======  =====  ======  =====  =====  ================  ================  =============  =========

(*) not used by ``make verify``: trained once for the sensitivity rows of docs/real.md (at low priority).

Full mode: three 1000-class trainings (lenet-s0, lenet-s1: two seeds of ND/RD's real-model checks and the two
independent networks of ND Sec 2.4; lenet-base-s0: ND Sec 3.2's f_base), 192 000 + 192 000 + 172 800 ≈ 557 000
images, ≈ 170 CPU-seconds at a quiet machine's ≈ 3 300 LeNet images/s. Quick mode: ≈ 28 000 images (≈ 70 s at
load 10) plus the 100-class task's build. The required accuracies were set from a first probe of the full
configuration (LeNet without batch norm: 0.404 / 0.443) before any check ran; the precondition is what makes a
check reported instead of judged. The quick configurations use batch 128: at batch 256 the 100-class quick net
(42 steps) reached only 0.075 / 0.063 (train accuracy 0.55, measured once, before batch norm); 8 images per class,
6 epochs, batch 64 reached 0.29 / 0.28 (below the requirement). Names ``<arch>[-base]-s<seed>`` beyond the table
take the table's configuration with that architecture and seed.
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
