"""Reading a glyph net (:mod:`sims.glyphs.nets`): logits, final features, W, b, per-layer features, accuracies.

``features(net, X, layers=None)`` runs the net in eval mode without gradients, in batches, and returns float64
numpy arrays:

* ``features``: F(x) ∈ R^d, the input of ``net.classifier`` (after its ReLU / global pool; nets.py);
* ``W`` (K × d), ``b`` (K): the classifier's weight and bias;
* ``logits``: W F(x) + b computed in float64 from the float32 features, so ``logits == features @ W.T + b`` holds
  to float64 rounding (the float32 forward pass of the net agrees with them to float32 rounding, ~1e-6
  relative);
* ``layers`` (when asked): ``{name: array}`` of the outputs of the named stages (``nets.LAYERS``; ``'all'`` for
  every one, in depth order). ``reduce='flatten'`` returns each output flattened to ``[N, C·H·W]`` (the per-layer
  feature RD's rank curves use; C·H·W = 4096, 2048 for LeNet's conv stages and 8192, 8192, 4096, 2048 for the
  ResNet's stem and stages at 32×32), ``reduce='avg'`` the channel means over the spatial positions, ``[N, C]``. Dense stages
  are ``[N, units]`` either way.

``heldout_accuracy(result)`` is the accuracy of a trained :class:`sims.glyphs.train.GlyphNet` on the task's
held-out splits: per test face (``face_test``: glyph faces never seen in training) and on ``aug_test`` (the
training faces under the augmentation split), at the net's label level and restricted to the fine classes it
was trained on.
"""
from __future__ import annotations

import numpy as np
import torch

REDUCE = ("flatten", "avg")


def _as_images(X) -> torch.Tensor:
    if isinstance(X, np.ndarray):
        X = torch.from_numpy(np.ascontiguousarray(X))
    if not isinstance(X, torch.Tensor):
        raise ValueError(f"X: need a numpy array or torch tensor of images [N, 1, S, S], got {type(X).__name__}")
    if X.ndim != 4 or X.shape[1] != 1:
        raise ValueError(f"X: need images of shape [N, 1, S, S], got {tuple(X.shape)}")
    if not X.is_floating_point():
        raise ValueError(f"X: need floating-point pixel values in [0, 1], got dtype {X.dtype}")
    return X


def _check_batch(batch_size):
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size: need an int ≥ 1, got {batch_size!r}")


def _device_of(net) -> torch.device:
    return next(net.parameters()).device


def features(net, X, layers=None, reduce: str = "flatten", batch_size: int = 1024) -> dict:
    """Logits, final features, W, b and optionally named per-layer outputs of ``net`` on ``X`` (module doc).

    ``X``: images ``[N, 1, S, S]`` (numpy or torch); they are moved to the net's device batch by batch.
    ``layers``: None, ``'all'``, or a sequence of stage names from ``net.stages``. The net's train/eval mode is
    restored afterwards.
    """
    X = _as_images(X)
    _check_batch(batch_size)
    if reduce not in REDUCE:
        raise ValueError(f"reduce: {reduce!r} is not one of {REDUCE}")
    stages = tuple(getattr(net, "stages", ()))
    if layers is None:
        names = ()
    elif isinstance(layers, str) and layers == "all":
        names = stages
    else:
        names = (layers,) if isinstance(layers, str) else tuple(layers)
        bad = [n for n in names if n not in stages]
        if bad:
            raise ValueError(f"layers: {bad} are not stages of this net; choose from {stages} or 'all'")
    modules = dict(net.named_modules())
    dev = _device_of(net)
    dtype = next(net.parameters()).dtype
    W = net.classifier.weight.detach().double().cpu().numpy()
    b = net.classifier.bias.detach().double().cpu().numpy()
    caught: dict = {}
    outs: dict = {n: [] for n in names}

    def hook_for(name):
        def hook(_m, _inp, out):
            caught[name] = out
        return hook

    hooks = [modules[n].register_forward_hook(hook_for(n)) for n in names]
    feats = []
    was_training = net.training
    net.eval()
    try:
        with torch.no_grad():
            for xb in torch.split(X, batch_size):
                xb = xb.to(dev, dtype=dtype)
                feats.append(net.embed(xb).double().cpu())
                for n in names:
                    o = caught.pop(n)
                    if o.ndim == 4 and reduce == "avg":
                        o = o.mean(dim=(2, 3))
                    outs[n].append(o.reshape(len(xb), -1).double().cpu())
    finally:
        net.train(was_training)
        for h in hooks:
            h.remove()
    d = W.shape[1]
    Fx = torch.cat(feats).numpy() if feats else np.zeros((0, d))
    out = {"features": Fx, "W": W, "b": b, "logits": Fx @ W.T + b}
    if names:
        out["layers"] = {n: torch.cat(outs[n]).numpy() for n in names}
    return out


def predict(net, X, batch_size: int = 1024) -> np.ndarray:
    """The arg-max output index of ``net`` on each image of ``X`` (eval mode, no gradients, batched)."""
    X = _as_images(X)
    _check_batch(batch_size)
    dev = _device_of(net)
    dtype = next(net.parameters()).dtype
    was_training = net.training
    net.eval()
    try:
        with torch.no_grad():
            pred = [net(xb.to(dev, dtype=dtype)).argmax(1).cpu() for xb in torch.split(X, batch_size)]
    finally:
        net.train(was_training)
    return torch.cat(pred).numpy() if pred else np.zeros(0, dtype=np.int64)


def _face_name(task, f: int) -> str:
    face = task.faces[f]
    for attr in ("name", "family", "label"):
        if isinstance(getattr(face, attr, None), str):
            return getattr(face, attr)
    return str(face)


def heldout_accuracy(result, task=None, per_class: int = 4, seed: int = 1, batch_size: int = 1024) -> dict:
    """Held-out accuracy of a trained glyph net (a :class:`sims.glyphs.train.GlyphNet`) at its label level.

    Returns ``{'face_test': {face name: accuracy}, 'face_test_all': accuracy over every test face,
    'aug_test': accuracy, 'n': {split: number of images}}``. The images are ``task.images(split, per_class,
    seed)`` (``task`` defaults to ``glyph_task(result.task_cfg)``), kept to the fine classes the net was trained
    on; a prediction counts as right when the output's label (``result.label_values``) equals the image's label
    at ``result.config.level``.
    """
    if task is None:
        from sims.glyphs import glyph_task

        task = glyph_task(result.task_cfg)
    level_of = result.config.label_of(task)
    values = np.asarray(result.label_values)
    out = {"face_test": {}, "n": {}}
    for split in ("face_test", "aug_test"):
        X, y_fine, face = task.images(split, per_class, seed)
        keep = np.isin(np.asarray(y_fine), result.classes)
        X, y_fine, face = np.asarray(X)[keep], np.asarray(y_fine)[keep], np.asarray(face)[keep]
        if len(y_fine) == 0:
            raise ValueError(f"heldout_accuracy: the {split!r} split has no image of the net's classes")
        right = values[predict(result.model, X, batch_size)] == level_of[y_fine]
        out["n"][split] = int(len(right))
        if split == "aug_test":
            out["aug_test"] = float(right.mean())
        else:
            out["face_test_all"] = float(right.mean())
            for f in np.unique(face):
                out["face_test"][_face_name(task, int(f))] = float(right[face == f].mean())
    return out
