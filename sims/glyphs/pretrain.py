"""Read-out helpers of the VC/FG pretraining networks (vc.training_collapse, vc.transfer_correlation,
fg.label_granularity). The regime itself — task, class sets, sizes, grids, precondition — is in the registry
:mod:`sims.glyphs.networks` (records ``pretrain-…``); this module trains through it (:func:`pretrain_net`) and reads
the networks out: the images of a split restricted to some classes, features and logits, the read-outs' guards
(final weights, held-out images) and a network's accuracy at its own level.

The task's ``images`` draws every class of the task; :func:`shared_images` memoises it for the duration of an
experiment (the same bytes: ``images`` is deterministic), so a run of many networks draws each image set once.
"""
from __future__ import annotations

import contextlib

import numpy as np

from sims.glyphs import glyph_task
from sims.glyphs import networks as nw
from sims.glyphs.features import features
from sims.glyphs.networks import ARCH
from sims.glyphs.train import resolve_device


def sizes(quick: bool) -> dict:
    return dict(nw.SIZES[bool(quick)])


def task_config(quick: bool):
    """The pretraining regime's task: 1000 code points in a full run, 200 in quick (networks.TASKS)."""
    return nw.task_config("pretrain", quick)


def device_type(device) -> str:
    """'cpu' or 'cuda' (None → what the trainer would use): the part of a device that changes results."""
    return resolve_device(device).type


@contextlib.contextmanager
def shared_images(quick: bool = False):
    """Memoise ``glyph_task(task_config(quick)).images`` within the block (same arguments → same arrays)."""
    task = glyph_task(task_config(quick))
    if "images" in vars(task):  # already inside a block
        yield task
        return
    orig = task.images
    memo = {}

    def images(split, per_class, seed, augment=True, classes=None):
        key = (split, int(per_class), int(seed), bool(augment), None if classes is None else tuple(classes))
        if key not in memo:
            memo[key] = orig(split, per_class, seed, augment, classes)
        return memo[key]

    task.images = images
    try:
        yield task
    finally:
        del task.images


def pretrain_net(quick: bool, level: str = "fine", tau: float = 1.0, cos_reg: float = 0.0, seed: int = 0,
                 device=None, arch: str = ARCH, epochs: int | None = None, regime: str = "main"):
    """The GlyphNet of the registry's pretraining regime (:func:`sims.glyphs.networks.pretrain`) with labels
    ``level`` (fine, script or a k-means level), temperature τ, regulariser λ and ``seed``; ``arch`` and ``epochs``
    (default: the regime's) move the regime for sensitivity tables; ``regime`` 'a1': FG App A.1's class subset and
    images per class. Trained within :func:`shared_images`."""
    with shared_images(quick):
        return nw.net(nw.pretrain(quick, level, tau, cos_reg, seed, arch, epochs, regime), device=device)


def split_images(quick: bool, split: str, classes, regime: str = "main") -> tuple:
    """(X, y_fine) of ``split`` for ``classes`` (the task's images of those classes only): the training images
    (the regime's per_class, data seed 0) for 'train', else the held-out images (``sizes(quick)['held']`` per
    class, seed 1)."""
    s = sizes(quick)
    train_per = nw.A1[bool(quick)]["per_class"] if regime == "a1" else s["per_class"]
    per, seed = (train_per, 0) if split == "train" else (s["held"], 1)
    with shared_images(quick) as task:
        X, y, _ = task.images(split, per, seed, True, np.unique(np.asarray(classes)).tolist())
    return X, y.numpy()


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
