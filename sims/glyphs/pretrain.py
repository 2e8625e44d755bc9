"""The pretraining regime shared by the VC and FG glyph experiments (vc.training_collapse, vc.transfer_correlation,
fg.label_granularity): one task, one class set, one training configuration, so that identical networks are
trained once (the trainer's cache) and read by all three checks.

**Fixed before any verdict was looked at** (docs/glyph_checks.md says why):

* task: ``GlyphTaskConfig(n_classes=1000, size=32, seed=0)`` (the task of the shared 1000-class suite, so its
  build is shared); classes in a homoglyph group (``homoglyph_groups(0.5)``: identical drawings under different
  code points, e.g. Latin A / Greek Α) are never used: their labels cannot be told apart from the pixels;
* pretraining classes P: ``quota`` classes of each of the seven scripts (105 in full; in quick 3 of each script
  present in QUICK_TASK), drawn with ``default_rng(CLASS_SEED)`` from the eligible ones — balanced scripts, so FG's coarse task (the
  script) has no dominant class; downstream classes (VC Sec 6.3's transfer): :data:`N_TASKS` disjoint tasks of
  ``task_classes`` further classes each, never used in pretraining (classes not seen in pretraining play the
  downstream data sets);
* network: LeNet (sims.glyphs.nets, with batch norm; feature dimension 128), AdamW + warm-up/cosine
  (sims.glyphs.train), batch 256, ``per_class`` = 24 training images per class, 8 epochs, checkpoints at epochs (0, 1, 2, 4, 8); quick: 8 images,
  3 epochs, checkpoints (0, 1, 2, 3) (docs/glyph_checks.md says why these sizes train; the checks test it:
  :data:`MIN_ACC`);
* held-out images: ``images(split, HELD, seed=1)`` for ``aug_test`` and ``face_test`` (DejaVu Serif, never seen).

The task's ``images`` draws every class of the 1000; :func:`shared_images` memoises it for the duration of an
experiment (the same bytes: ``images`` is deterministic), so a run of many networks draws each image set once.
"""
from __future__ import annotations

import contextlib
import functools

import numpy as np

from sims.glyphs import GlyphTaskConfig, glyph_task
from sims.glyphs.features import features
from sims.glyphs.train import resolve_device, train_glyph_net

TASK = GlyphTaskConfig(n_classes=1000, size=32, seed=0)
QUICK_TASK = GlyphTaskConfig(n_classes=200, size=32, seed=0)  # quick: draws 200 classes' images, not 1000
CLASS_SEED = 20240607
MIN_ACC = 0.5  # precondition: a network whose held-out accuracy at its own level is below this is not trained
HELD = 16      # held-out images per class (aug_test, face_test), seed 1
N_TASKS = 4
SIZES = {
    False: {"quota": 15, "task_classes": 20, "per_class": 24, "epochs": 8, "checkpoints": (0, 1, 2, 4, 8),
            "held": HELD},
    True: {"quota": 3, "task_classes": 5, "per_class": 8, "epochs": 3, "checkpoints": (0, 1, 2, 3), "held": 8},
}
ARCH = "lenet"


def sizes(quick: bool) -> dict:
    return dict(SIZES[bool(quick)])


def task_config(quick: bool):
    """TASK in a full run; QUICK_TASK (200 classes: Latin letters, numbers, punctuation, symbols) in quick."""
    return QUICK_TASK if quick else TASK


def device_type(device) -> str:
    """'cpu' or 'cuda' (None → what the trainer would use): the part of a device that changes results."""
    return resolve_device(device).type


@functools.lru_cache(maxsize=2)
def class_sets(quick: bool) -> dict:
    """{'pretrain': sorted P, 'downstream': [sorted Q_t] × N_TASKS} (module doc); fine-class indices of TASK."""
    task = glyph_task(task_config(quick))
    s = sizes(quick)
    bad = {k for g in task.homoglyph_groups(0.5) for k in g}
    ok = np.array([k for k in range(task.n_classes) if k not in bad])
    script = task.labels("script")[ok]
    rng = np.random.default_rng(CLASS_SEED)
    chosen = []
    for v in np.unique(script):
        pool = ok[script == v]
        chosen.append(rng.choice(pool, min(s["quota"], len(pool)), replace=False))
    P = np.sort(np.concatenate(chosen))
    rest = rng.permutation(np.setdiff1d(ok, P))
    n = s["task_classes"]
    Q = [np.sort(rest[t * n:(t + 1) * n]) for t in range(N_TASKS)]
    return {"pretrain": P, "downstream": Q}


@contextlib.contextmanager
def shared_images(quick: bool = False):
    """Memoise ``glyph_task(task_config(quick)).images`` within the block (same arguments → same arrays)."""
    task = glyph_task(task_config(quick))
    if "images" in vars(task):  # already inside a block
        yield task
        return
    orig = task.images
    memo = {}

    def images(split, per_class, seed, augment=True):
        key = (split, int(per_class), int(seed), bool(augment))
        if key not in memo:
            memo[key] = orig(split, per_class, seed, augment)
        return memo[key]

    task.images = images
    try:
        yield task
    finally:
        del task.images


def pretrain_net(quick: bool, level: str = "fine", tau: float = 1.0, cos_reg: float = 0.0, seed: int = 0,
                 device=None, arch: str = ARCH, epochs: int | None = None, groups=None):
    """The GlyphNet pretrained on P at ``level`` with temperature τ and regulariser λ (cached by the trainer).
    ``arch`` and ``epochs`` (default: the regime's) move the regime for sensitivity tables; ``groups``: an explicit
    labelling of P instead of ``level`` (sims.glyphs.train.TrainConfig.groups)."""
    s = sizes(quick)
    if epochs is not None:
        doubling = [0] + [2 ** i for i in range(int(epochs).bit_length()) if 2 ** i <= epochs] + [int(epochs)]
        s["epochs"], s["checkpoints"] = int(epochs), tuple(sorted(set(doubling)))
    with shared_images(quick):
        return train_glyph_net(task_config(quick), arch=arch, level=level, classes=class_sets(quick)["pretrain"], tau=float(tau),
                               cos_reg=float(cos_reg), epochs=s["epochs"], per_class=s["per_class"], seed=int(seed),
                               device=device, checkpoints=s["checkpoints"], progress=False, groups=groups)


def split_images(quick: bool, split: str, classes) -> tuple:
    """(X, y_fine) of ``split`` restricted to ``classes``: the training images (per_class, data seed 0) for
    'train', else HELD images per class with seed 1."""
    s = sizes(quick)
    per, seed = (s["per_class"], 0) if split == "train" else (s["held"], 1)
    with shared_images(quick) as task:
        X, y, _ = task.images(split, per, seed)
    keep = np.isin(y.numpy(), np.asarray(classes))
    return X[torch_index(keep)], y.numpy()[keep]


def torch_index(mask):
    import torch

    return torch.from_numpy(np.flatnonzero(mask))


def net_features(model, X) -> dict:
    """Final features F(x) and logits (float64) of ``model`` on ``X`` (sims.glyphs.features)."""
    out = features(model, X)
    return {"features": out["features"], "logits": out["logits"]}


def final_logits(net, X) -> np.ndarray:
    """Logits of the net's *recorded* final weights (its last checkpoint, saved by the trainer at the last epoch) on X."""
    last = int(net.config.epochs)
    if last not in net.checkpoints:
        raise ValueError(f"the net kept no checkpoint at its last epoch {last}: its final weights cannot be checked")
    return net_features(net.at_checkpoint(last), X)["logits"]


def check_final(net, logits, X, what: str) -> None:
    """A read-out's ``logits`` on X must be the final network's (same function, same images: bit for bit), else
    it read other weights (a checkpoint, another net): ValueError naming ``what``."""
    ref = final_logits(net, X)
    if np.shape(logits) != ref.shape or not np.array_equal(np.asarray(logits), ref):
        raise ValueError(f"{what}: the read-out's logits are not the final network's on the same images (a "
                         "non-final checkpoint or another network was read)")


def check_held_out(X_fit, X_eval, what: str) -> None:
    """No image of ``X_eval`` may be an image of ``X_fit`` (a read-out scored on the images it was fitted on):
    ValueError naming ``what`` and how many coincide (sims.heldout)."""
    from sims.heldout import check_held_out as check

    check(X_fit, X_eval, what)


def own_accuracy(net, logits, y_fine) -> float:
    """Accuracy of the net's own classifier at its level on images of fine classes ``y_fine``."""
    level_of = net.config.label_of(glyph_task(net.task_cfg))
    return float(np.mean(np.asarray(net.label_values)[logits.argmax(1)] == level_of[y_fine]))
