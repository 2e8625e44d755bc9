"""Labels of a researcher's own image folder: class sub-folders (torchvision ``ImageFolder``) or a CSV mapping file.

* **class sub-folders** (``root/<class>/<image>``, the layout of ``torchvision.datasets.ImageFolder``): the
  classes are the sub-folder names in sorted order and class k is label k, as ``ImageFolder.class_to_idx``
  numbers them (so a model trained with ``ImageFolder`` has logit k for sub-folder k). Images below a class
  folder count at any depth; images directly in ``root`` are not labelled by this rule.
* **a CSV mapping file** (``filename,label`` per line, an optional header ``filename,label``): ``filename`` is the
  image's path relative to the folder (or its bare name when that is unique); ``label`` is an integer (used as
  the logit index) or a class name (names are numbered in sorted order, as ``ImageFolder`` would). Images the
  file does not mention are unlabelled (label −1, left out of labelled metrics); a name in the file that
  matches no image is an error, so a mistyped file is not read as "no labels".

Both return labels aligned with a list of relative file paths, the class names (index → name, or None for
integer labels) and a one-line description of the labelling for reports.
"""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np


def class_folders(root, suffixes) -> list | None:
    """The sorted class sub-folders of ``root`` that contain at least one image (at any depth), or None when
    ``root`` has images directly in it or fewer than two such sub-folders (then it is not the class layout)."""
    p = Path(root)
    if any(f.is_file() and f.suffix.lower() in suffixes for f in p.iterdir()):
        return None
    subs = sorted(d.name for d in p.iterdir() if d.is_dir() and not d.name.startswith(".")
                  and any(f.is_file() and f.suffix.lower() in suffixes for f in d.rglob("*")))
    return subs if len(subs) >= 2 else None


def folder_labels(root, classes: list, suffixes) -> tuple[list, np.ndarray]:
    """(relative files, labels) of the class layout: label k for every image below ``root/classes[k]``."""
    p = Path(root)
    files, labels = [], []
    for k, c in enumerate(classes):
        for f in sorted((p / c).rglob("*")):
            if f.is_file() and f.suffix.lower() in suffixes:
                files.append(str(f.relative_to(p)))
                labels.append(k)
    return files, np.asarray(labels, dtype=np.int64)


def read_label_file(path, files: list) -> tuple[np.ndarray, list | None, str]:
    """Labels of ``files`` (relative paths) from the CSV ``path`` (module doc): (labels, class names, description)."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"--labels {p}: no such file (expected a CSV 'filename,label' or 'auto' / 'none')")
    try:
        lines = p.read_text(encoding="utf-8-sig").splitlines()
        rows = [r for r in csv.reader(lines) if r and any(c.strip() for c in r)]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise ValueError(f"--labels {p}: cannot read it as CSV ({exc})") from None
    if rows and [c.strip().lower() for c in rows[0][:2]] == ["filename", "label"]:
        rows = rows[1:]
    if not rows:
        raise ValueError(f"--labels {p}: has no 'filename,label' row")
    bad = [k for k, r in enumerate(rows) if len(r) != 2 or not r[0].strip() or not r[1].strip()]
    if bad:
        raise ValueError(f"--labels {p}: line {bad[0] + 1} is not 'filename,label': {','.join(rows[bad[0]])!r}")
    names = [r[0].strip() for r in rows]
    raw = [r[1].strip() for r in rows]
    if all(_is_int(v) for v in raw):
        vals = [int(v) for v in raw]
        if min(vals) < 0:
            raise ValueError(f"--labels {p}: integer labels must be >= 0, got {min(vals)}")
        classes, how = None, "integer labels (logit indices)"
    else:
        classes = sorted(set(raw))
        index = {c: k for k, c in enumerate(classes)}
        vals = [index[v] for v in raw]
        how = f"{len(classes)} class names numbered in sorted order"
    by_path = {f: k for k, f in enumerate(files)}
    by_name: dict = {}
    for k, f in enumerate(files):
        by_name.setdefault(Path(f).name, []).append(k)
    labels = np.full(len(files), -1, dtype=np.int64)
    missing = []
    for n, v in zip(names, vals):
        k = by_path.get(n.replace("\\", "/"))
        if k is None:
            hits = by_name.get(Path(n).name, [])
            k = hits[0] if len(hits) == 1 else None
        if k is None:
            missing.append(n)
            continue
        labels[k] = v
    if missing:
        raise ValueError(f"--labels {p}: {len(missing)} file name(s) match no image in the folder (or several "
                         f"by bare name), e.g. {missing[:3]}; give paths relative to the folder")
    n_lab = int(np.sum(labels >= 0))
    return labels, classes, (f"labels from the mapping file {p} ({how}; {n_lab} of {len(files)} images labelled)")


def _is_int(s: str) -> bool:
    try:
        int(s)
        return True
    except ValueError:
        return False
