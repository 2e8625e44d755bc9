"""Input images for the real-model hooks: the photographs shipped with scikit-image and scikit-learn.

These are **not ImageNet**: 17 photographs (a cat, coffee, an astronaut, a rocket, a clock, coins, the moon, a
retina, the Hubble deep field, a temple in China, a flower, ...) turned into many seeded random-resized crops
with horizontal flips. The source photograph is the "class" for collapse statistics (VCI); the model's own
prediction is the label for accuracies (there is no ImageNet ground truth for these images).

Crops are produced batch by batch (never all at once: 4096 crops at 224×224 would be 2.4 GB of float32).
"""
from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Iterator

import numpy as np

# skimage.data names of the photographs used (all ship inside the scikit-image wheel, no download)
SKIMAGE_PHOTOS = ("astronaut", "brick", "camera", "chelsea", "clock", "coffee", "coins", "grass", "gravel",
                  "hubble_deep_field", "immunohistochemistry", "moon", "retina", "rocket", "motorcycle")
SKLEARN_PHOTOS = ("china", "flower")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm", ".pgm")

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def _to_rgb_uint8(im: np.ndarray, name: str) -> np.ndarray:
    a = np.asarray(im)
    if a.dtype == bool:
        a = a.astype(np.uint8) * 255
    elif a.dtype != np.uint8:
        a = np.asarray(a, dtype=np.float64)
        if not np.isfinite(a).all():
            raise ValueError(f"image {name}: contains NaN/Inf")
        lo, hi = float(a.min()), float(a.max())
        a = np.zeros(a.shape, np.uint8) if hi <= lo else np.round(255 * (a - lo) / (hi - lo)).astype(np.uint8)
    if a.ndim == 2:
        a = np.repeat(a[:, :, None], 3, axis=2)
    if a.ndim != 3 or a.shape[2] not in (1, 3, 4):
        raise ValueError(f"image {name}: expected H×W, H×W×3 or H×W×4 pixels, got shape {a.shape}")
    if a.shape[2] == 1:
        a = np.repeat(a, 3, axis=2)
    if a.shape[2] == 4:
        a = a[:, :, :3]
    if min(a.shape[:2]) < 8:
        raise ValueError(f"image {name}: too small ({a.shape[0]}×{a.shape[1]} pixels)")
    return np.ascontiguousarray(a)


@dataclasses.dataclass
class ImageSet:
    """Named RGB uint8 photographs; ``key`` identifies the set for caching (names + content hash)."""

    names: list
    images: list
    source: str

    @property
    def key(self) -> str:
        h = hashlib.sha256()
        for n, im in zip(self.names, self.images):
            h.update(n.encode())
            h.update(str(im.shape).encode())
            h.update(np.ascontiguousarray(im[::7, ::7]).tobytes())
        return f"{self.source}:{len(self.names)}:{h.hexdigest()[:12]}"

    def __len__(self) -> int:
        return len(self.images)


def photographs() -> ImageSet:
    """The 17 photographs of scikit-image (``skimage.data``) and scikit-learn (``load_sample_images``).

    Loaded once per process (the arrays are shared: do not modify them in place)."""
    global _PHOTOS
    if _PHOTOS is None:
        _PHOTOS = _load_photographs()
    return _PHOTOS


_PHOTOS: ImageSet | None = None


def _load_photographs() -> ImageSet:
    import skimage.data as skd
    from sklearn.datasets import load_sample_images

    names, images = [], []
    for n in SKIMAGE_PHOTOS:
        im = skd.stereo_motorcycle()[0] if n == "motorcycle" else getattr(skd, n)()
        names.append(n)
        images.append(_to_rgb_uint8(im, n))
    sk = load_sample_images()
    for fname, im in zip(sk.filenames, sk.images):
        n = Path(fname).stem
        names.append(n)
        images.append(_to_rgb_uint8(im, n))
    return ImageSet(names=names, images=images, source="skimage+sklearn")


def folder(path, files=None) -> ImageSet:
    """Every image file in ``path`` (recursively; sub-folder names are not used as labels here), or only
    ``files`` (paths relative to ``path``, e.g. :func:`sims.real.imagenet.scan`'s list, whose labels it knows).
    Names are the paths relative to ``path``; every image is decoded into memory (meant for small folders: the
    pixels' size, read from the files' headers, is checked first by :func:`sims.resources.require`).

    Raises ValueError for a missing or empty folder, or one without any readable image.
    """
    from PIL import Image, UnidentifiedImageError

    p = Path(path)
    if not p.is_dir():
        raise ValueError(f"images: {p} is not a folder")
    files = sorted(f for f in p.rglob("*") if f.is_file()) if files is None else [p / f for f in files]
    if not files:
        raise ValueError(f"images: folder {p} is empty")
    from sims.real.sizing import decoded_bytes
    from sims.resources import require

    pixels = [f for f in files if f.suffix.lower() in IMAGE_SUFFIXES]
    require(2 * decoded_bytes(pixels), f"decoding the {len(pixels)} image(s) of {p} into memory",
            hint="use fewer or smaller images, or leave out --crops (one centre crop per image streams the folder)")
    names, images, skipped = [], [], []
    for f in files:
        if f.suffix.lower() not in IMAGE_SUFFIXES:
            skipped.append(f.name)
            continue
        try:
            with Image.open(f) as im:
                im = im.convert("RGB")
                images.append(_to_rgb_uint8(np.array(im), f.name))  # a writable copy (torch needs one)
                names.append(str(f.relative_to(p)))
        except (UnidentifiedImageError, OSError) as exc:
            skipped.append(f"{f.name} ({type(exc).__name__})")
    if not images:
        raise ValueError(f"images: no readable image in {p} ({len(files)} file(s), e.g. {skipped[:3]}); "
                         f"supported suffixes: {', '.join(IMAGE_SUFFIXES)}")
    return ImageSet(names=names, images=images, source=f"folder:{p.resolve()}")


@dataclasses.dataclass(frozen=True)
class Augmentation:
    """Random-resized crop (area share ``scale``, aspect ``ratio``, log-uniform) + horizontal flip p=0.5."""

    size: int = 224
    scale: tuple = (0.25, 1.0)
    ratio: tuple = (3 / 4, 4 / 3)
    flip: bool = True

    @property
    def key(self) -> str:
        return f"rrc{self.size}-s{self.scale[0]:g},{self.scale[1]:g}-r{self.ratio[0]:.3f},{self.ratio[1]:.3f}-f{int(self.flip)}"


def crop_plan(imageset: ImageSet, n: int, aug: Augmentation, seed: int) -> np.ndarray:
    """(n, 6) int array: source, top, left, height, width, flip; sources cycle so the classes stay balanced."""
    if n < 1:
        raise ValueError(f"n_crops: must be >= 1, got {n}")
    rng = np.random.default_rng(seed)
    src = rng.permutation(np.arange(n) % len(imageset))
    plan = np.zeros((n, 6), dtype=np.int64)
    for t, s in enumerate(src):
        h, w = imageset.images[s].shape[:2]
        area = h * w
        for _ in range(10):
            a = area * rng.uniform(*aug.scale)
            r = np.exp(rng.uniform(np.log(aug.ratio[0]), np.log(aug.ratio[1])))
            cw, ch = int(round(np.sqrt(a * r))), int(round(np.sqrt(a / r)))
            if 0 < cw <= w and 0 < ch <= h:
                break
        else:  # fall back to the central square
            ch = cw = min(h, w)
        top = int(rng.integers(0, h - ch + 1))
        left = int(rng.integers(0, w - cw + 1))
        flip = int(aug.flip and rng.uniform() < 0.5)
        plan[t] = (s, top, left, ch, cw, flip)
    return plan


def normalizer(kind: str):
    """(mean, std) on the 0–1 scale: ``imagenet`` (torchvision's) or ``lite`` ((x·255 − 127)/128, TF EfficientNet-Lite)."""
    if kind == "imagenet":
        return IMAGENET_MEAN, IMAGENET_STD
    if kind == "lite":
        return (127 / 255,) * 3, (128 / 255,) * 3
    raise ValueError(f"normalize: must be 'imagenet' or 'lite', got {kind!r}")


def crop_batches(imageset: ImageSet, plan: np.ndarray, aug: Augmentation, batch_size: int = 32,
                 normalize: str = "imagenet", size: int | None = None) -> Iterator[tuple]:
    """Yield (x, source) batches: x float32 (B, 3, S, S) normalised, source int64 (B,). S = ``size`` or aug.size."""
    import torch
    import torch.nn.functional as F

    if batch_size < 1:
        raise ValueError(f"batch_size: must be >= 1, got {batch_size}")
    S = int(size or aug.size)
    mean, std = normalizer(normalize)
    mean_t = torch.tensor(mean, dtype=torch.float32).view(1, 3, 1, 1)
    std_t = torch.tensor(std, dtype=torch.float32).view(1, 3, 1, 1)
    for b0 in range(0, len(plan), batch_size):
        rows = plan[b0:b0 + batch_size]
        out = torch.empty((len(rows), 3, S, S), dtype=torch.float32)
        for k, (s, top, left, ch, cw, flip) in enumerate(rows):
            patch = imageset.images[s][top:top + ch, left:left + cw]
            # an own, writable copy: the photographs may be read-only arrays, which torch.from_numpy warns about
            t = torch.from_numpy(np.array(patch, order="C")).permute(2, 0, 1)[None].float() / 255.0
            t = F.interpolate(t, size=(S, S), mode="bilinear", antialias=True, align_corners=False)
            out[k] = t[0].flip(-1) if flip else t[0]
        yield (out - mean_t) / std_t, torch.from_numpy(rows[:, 0].copy())
