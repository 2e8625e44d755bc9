"""Class sets and labellings of the pretraining networks (:mod:`sims.glyphs.networks` holds the numbers they use).

Pure functions of a task configuration and of the numbers they are given:

* :func:`pretrain_classes`: the pretraining classes P and the downstream tasks Q_t. Classes in a homoglyph group
  (``homoglyph_groups(0.5)``: identical drawings under different code points) are never used; ``quota`` classes of
  each script are drawn with ``default_rng(seed)`` from the others (P, sorted), then a permutation of what is left
  (same generator) is cut into ``n_tasks`` sets of ``task_classes`` classes (each Q_t sorted);
* :func:`appearances`: each class's unit-norm, centred mean canonical render over its training faces (the pixels
  alone, no network);
* :func:`kmeans_groups`: FG App A.1.3's sub-labels: k-means of the classes' appearances within each script.
"""
from __future__ import annotations

import numpy as np

from sims.glyphs.task import glyph_task

COARSE = "script"  # the level whose labels k-means subdivides


def pretrain_classes(task_cfg, quota: int, task_classes: int, n_tasks: int, seed: int) -> dict:
    """{'pretrain': sorted P, 'downstream': [sorted Q_t] × n_tasks}: fine-class indices of the task (module doc)."""
    task = glyph_task(task_cfg)
    bad = {k for g in task.homoglyph_groups(0.5) for k in g}
    ok = np.array([k for k in range(task.n_classes) if k not in bad])
    script = task.labels(COARSE)[ok]
    rng = np.random.default_rng(seed)
    chosen = []
    for v in np.unique(script):
        pool = ok[script == v]
        chosen.append(rng.choice(pool, min(quota, len(pool)), replace=False))
    P = np.sort(np.concatenate(chosen))
    rest = rng.permutation(np.setdiff1d(ok, P))
    n = task_classes
    Q = [np.sort(rest[t * n:(t + 1) * n]) for t in range(n_tasks)]
    return {"pretrain": P, "downstream": Q}


def appearances(task, classes) -> np.ndarray:
    """(len(classes), (2S)²): unit-norm, centred mean canonical render of each class over its training faces."""
    train = np.zeros(len(task.faces), bool)
    train[task.train_faces] = True
    rows = []
    for k in classes:
        faces = np.flatnonzero(task.coverage[k] & train)
        a = np.mean([task.canonical(int(k), int(f)).astype(np.float64) for f in faces], axis=0).ravel()
        a = a - a.mean()
        rows.append(a / max(np.linalg.norm(a), 1e-12))
    return np.asarray(rows)


def script_margins(task, classes) -> dict:
    """{'own', 'other', 'coarse'} per class of ``classes``: the cosine of its appearance to its own script's common
    appearance (the mean of the other members' appearances) and the largest cosine to another script's (the mean of
    all its members'). A class with other > own is *hard* (sims.glyphs.granularity)."""
    classes = np.asarray(classes)
    A = appearances(task, classes)
    c = np.asarray(task.labels(COARSE))[classes]
    labels = np.unique(c)
    sums = {v: A[c == v].sum(0) for v in labels}
    counts = {v: int((c == v).sum()) for v in labels}
    own, other = np.zeros(len(classes)), np.zeros(len(classes))
    for i in range(len(classes)):
        sims = {}
        for v in labels:
            m = sums[v] - (A[i] if v == c[i] else 0.0)
            n = counts[v] - (v == c[i])
            if n == 0:
                continue
            m = m / n
            sims[v] = float(A[i] @ m / max(np.linalg.norm(m), 1e-12))
        own[i] = sims.get(c[i], -np.inf)
        other[i] = max(s for v, s in sims.items() if v != c[i])
    return {"own": own, "other": other, "coarse": c}


def aligned_subset(task_cfg, classes, easy: int, hard: int) -> np.ndarray:
    """Sorted subset of ``classes``: per script, the ``easy`` classes with the largest margin own − other of
    :func:`script_margins` (the best aligned with their script's common appearance) and the ``hard`` with the
    smallest (scripts with fewer classes give what they have, the easy ones first)."""
    classes = np.asarray(classes)
    m = script_margins(glyph_task(task_cfg), classes)
    margin = m["own"] - m["other"]
    out = []
    for v in np.unique(m["coarse"]):
        idx = np.flatnonzero(m["coarse"] == v)
        order = idx[np.argsort(-margin[idx], kind="stable")]
        top = list(order[:easy])
        out += top + [j for j in order[::-1][:hard] if j not in top]
    return np.sort(classes[np.asarray(out, dtype=np.int64)])


def kmeans_groups(task_cfg, classes, k: int, seed: int) -> np.ndarray:
    """((fine class, label), …) for ``classes``: k-means (k-means++ init, generator seeded with (seed, script, k))
    of the classes' appearances within each script, k clusters each (fewer where a script has fewer classes);
    empty clusters dropped, labels numbered across scripts in script order."""
    from scipy.cluster.vq import kmeans2

    task = glyph_task(task_cfg)
    classes = np.asarray(classes)
    A = appearances(task, classes)
    coarse = np.asarray(task.labels(COARSE))[classes]
    out, nxt = [], 0
    for v in np.unique(coarse):
        idx = np.flatnonzero(coarse == v)
        kk = min(int(k), len(idx))
        _, lab = kmeans2(A[idx], kk, minit="++", seed=np.random.default_rng([seed, int(v), kk]))
        _, lab = np.unique(lab, return_inverse=True)  # empty clusters dropped, labels 0..m−1
        out += [(int(classes[j]), nxt + int(c)) for j, c in zip(idx, lab)]
        nxt += int(lab.max()) + 1
    return np.asarray(sorted(out), dtype=np.int64)
