"""Captured logits and final features of a real model on the photographs, cached on disk.

:func:`real_outputs` is what checks and figures call: it runs the model once per parameter set (model, image
set, augmentation, number of crops, seed) through :func:`sims.real.capture.capture` and stores the logits,
the final features F(x) (the classifier's input), the source-photograph labels and the classifier (W, b) in
``sims.cache`` (atomic ``.npz``). Later calls read the file.
"""
from __future__ import annotations

import numpy as np

from sims.cache import cached
from sims.real.capture import capture
from sims.real.images import Augmentation, crop_batches, crop_plan, photographs
from sims.real.models import default_model

VERSION = 1
QUICK_CROPS = 256
FULL_CROPS = 2048


def n_crops(quick: bool) -> int:
    return QUICK_CROPS if quick else FULL_CROPS


def outputs_of(spec, imageset, n: int, seed: int = 0, aug: Augmentation | None = None, batch_size: int = 32,
               device: str = "cpu", progress: bool | None = None, keep_features: bool = True,
               limit: int | None = None) -> dict:
    """Capture logits (and features) of ``spec`` on ``n`` seeded crops of ``imageset`` (no caching).

    Returns float32 ``logits`` (n, classes), ``features`` (n, d), int ``source`` (n,), float64 ``W``, ``b``
    and the float64 second moment ``cov`` = E[f fᵀ] of the logits from the streaming accumulator.
    """
    aug = aug or Augmentation(size=spec.input_size)
    plan = crop_plan(imageset, n, aug, seed)[:limit]
    n = len(plan)
    layers = {"logits": "output", "features": f"{spec.classifier}:input"}
    keep = ("logits", "features") if keep_features else ("logits",)
    batches = crop_batches(imageset, plan, aug, batch_size=batch_size, normalize=spec.normalize,
                           size=spec.input_size)
    res = capture(spec.module, batches, layers, device=device, keep=keep, progress=progress,
                  total=n, desc=f"capture {spec.name}")
    W, b = spec.linear()
    out = {"logits": res.kept["logits"], "source": res.labels.astype(np.int64), "W": W, "b": b,
           "cov": res.moments["logits"].second_moment, "plan": plan}
    if keep_features:
        out["features"] = res.kept["features"]
    return out


def real_outputs(model: str = "lite0", n: int = FULL_CROPS, seed: int = 0, device: str = "cpu",
                 progress: bool | None = None, limit: int | None = None) -> dict:
    """Cached :func:`outputs_of` for a default model (``lite0`` / ``lite1``) on the 17 photographs.

    Keyed by model + weights + normalisation, the image set's content hash, the augmentation, ``n``, ``seed``.
    The crops of Lite1 are the same regions as Lite0's (same plan), resized to 240 instead of 224.
    ``limit``: only the first ``limit`` crops of the n-crop plan (row k is the same crop as row k of the full run).
    """
    spec = None
    ims = photographs()
    aug = Augmentation(size=224)
    from sims.real.models import DEFAULT_MODELS

    if model not in DEFAULT_MODELS:
        raise ValueError(f"model: {model!r} is not one of {sorted(DEFAULT_MODELS)}")
    params = {"version": VERSION, "model": model, "normalize": "imagenet", "images": ims.key, "aug": aug.key,
              "n": int(n), "seed": int(seed)}
    if limit is not None:
        params["limit"] = int(limit)

    def compute():
        nonlocal spec
        spec = default_model(model, device=device)
        out = outputs_of(spec, ims, n, seed, aug, device=device, progress=progress, limit=limit)
        out["names"] = np.array(ims.names)
        return out

    return cached(f"real_{model}", params, compute)
