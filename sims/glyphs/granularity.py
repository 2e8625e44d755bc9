"""FG Sec 1 / Fig 2 / App A replicated on glyph CNNs: coarse-task accuracy against pretraining label granularity.

FG's experiment (Sec 1, Fig 2; App A.2): pretrain a backbone at some label granularity, then train the *coarse*
(target) task on the pretrained backbone and measure the target accuracy; FG App A.2 reads it with linear probing
(a new linear classifier on the frozen features), which we use. The baseline is pretraining on the target labels
themselves. Ours (regime of :mod:`sims.glyphs.pretrain`, fixed before any verdict):

* coarse (target) task: the **script** (7 labels: Latin, Greek, Cyrillic, other letter, number, punctuation,
  symbol) of the pretraining classes P, balanced over scripts;
* pretraining granularities, a ladder of four (FG App A.1.3's construction: k-means sub-labels within each coarse
  class): script (7 labels = the baseline), k = 3 and k = 7 clusters of the code points within each script (21 and
  49 labels; k-means of the classes' pixel appearances, seeded), code point (fine, 105) — the same images, the same
  training (τ = 1, λ = 0), only the labels differ; the fine network is the τ = 1, λ = 0 network of the VC checks;
* transfer: the linear probe of :mod:`sims.glyphs.probe` on the frozen final features, trained on the training
  images of P with script labels, tested on held-out aug_test images (FG assumes no distribution shift: primary)
  and on face_test images (faces never seen: reported).

**Hard samples** (FG Def 4.x / Sec 3.2: samples in which the coarse class's *common* feature is weak or absent,
so only fine-grained features can classify them). Fixed before running, from the pixels alone (no network): the
*appearance* of fine class k is its canonical renders averaged over its training faces (unit-normalised); the
common feature of a coarse class is the mean appearance of its members (for k's own class, without k). Class k is
**hard** when its appearance is closer (cosine) to another coarse class's common feature than to its own — its
shape does not carry its script's common feature. Every held-out image of a hard class is a hard sample; the rest
are easy.
"""
from __future__ import annotations

import numpy as np

from sims.cache import cached
from sims.glyphs import glyph_task
from sims.glyphs import pretrain as pt
from sims.glyphs.probe import linear_probe

LEVELS = ("script", "k3", "k7", "fine")  # coarse → fine pretraining granularity (k: k-means clusters per script)
KMEANS = {"k3": 3, "k7": 7}
KMEANS_SEED = 20260601
COARSE = "script"
EVAL_SPLITS = ("aug_test", "face_test")


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


def hard_classes(quick: bool) -> dict:
    """{'classes': P, 'hard': bool [len(P)], 'own': cos to own class's common feature, 'other': best cos to
    another's, 'coarse': coarse labels} (module doc)."""
    task = glyph_task(pt.task_config(quick))
    P = pt.class_sets(quick)["pretrain"]
    A = appearances(task, P)
    c = np.asarray(task.labels(COARSE))[P]
    labels = np.unique(c)
    sums = {v: A[c == v].sum(0) for v in labels}
    counts = {v: int((c == v).sum()) for v in labels}
    own, other = np.zeros(len(P)), np.zeros(len(P))
    for i in range(len(P)):
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
    return {"classes": P, "hard": other > own, "own": own, "other": other, "coarse": c}


def kmeans_groups(quick: bool, k: int) -> np.ndarray:
    """((fine class, label), …) for the pretraining classes: k-means (k-means++ init, seeded) of the classes' pixel
    appearances within each script, k clusters each (fewer where a script has fewer classes); labels numbered across
    scripts. FG App A.1.3 builds its sub-labels by k-means within each coarse class."""
    from scipy.cluster.vq import kmeans2

    h = hard_classes(quick)
    A = appearances(glyph_task(pt.task_config(quick)), h["classes"])
    out, nxt = [], 0
    for v in np.unique(h["coarse"]):
        idx = np.flatnonzero(h["coarse"] == v)
        kk = min(int(k), len(idx))
        _, lab = kmeans2(A[idx], kk, minit="++", seed=np.random.default_rng([KMEANS_SEED, int(v), kk]))
        _, lab = np.unique(lab, return_inverse=True)  # empty clusters dropped, labels 0..m−1
        out += [(int(h["classes"][j]), nxt + int(c)) for j, c in zip(idx, lab)]
        nxt += int(lab.max()) + 1
    return np.asarray(sorted(out), dtype=np.int64)


def level_net(quick: bool, level: str, seed: int, device, arch: str, epochs):
    """The network pretrained at a LEVELS granularity (k-means levels through explicit groups)."""
    if level in KMEANS:
        return pt.pretrain_net(quick, level="fine", seed=seed, device=device, arch=arch, epochs=epochs,
                               groups=kmeans_groups(quick, KMEANS[level]))
    return pt.pretrain_net(quick, level=level, seed=seed, device=device, arch=arch, epochs=epochs)


def granularity_point(quick: bool, level: str, seed: int = 0, device=None, arch: str = pt.ARCH,
                      epochs: int | None = None) -> dict:
    """Coarse-task probe results of the network pretrained at ``level`` (module doc), cached.

    Returns per eval split: ``{split}/correct`` (bool per held-out image), ``{split}/pred`` (the probe's coarse label),
    ``{split}/fine`` (the image's fine class), the
    net's own accuracy at its level on aug_test (the training precondition), the probe's penalty, timings.
    """
    if level not in LEVELS:
        raise ValueError(f"level: {level!r} is not one of {LEVELS}")
    s = pt.sizes(quick)
    P = pt.class_sets(quick)["pretrain"]
    params = {"quick": bool(quick), "level": level, "seed": int(seed), "device": pt.device_type(device), "sizes": s,
              "classes": P.tolist(), "arch": arch, "epochs": epochs}

    def compute():
        net = level_net(quick, level, seed, device, arch, epochs)
        coarse = np.asarray(glyph_task(pt.task_config(quick)).labels(COARSE))
        X, yf = pt.split_images(quick, "train", P)
        Ftr = pt.net_features(net.model, X)["features"]
        out = {"seconds": net.seconds, "images_per_s": net.images_per_s, "n_labels": len(net.label_values)}
        for sp in EVAL_SPLITS:
            Xs, ys = pt.split_images(quick, sp, P)
            f = pt.net_features(net.model, Xs)
            # the read-out reads the final weights and scores the probe on images it was not trained on
            pt.check_final(net, f["logits"], Xs, f"fg.label_granularity, {level} network, {sp}")
            pt.check_held_out(X, Xs, f"fg.label_granularity, {level} network, {sp} probe")
            r = linear_probe(Ftr, coarse[yf], f["features"], coarse[ys])
            out[f"{sp}/correct"] = r["correct"]
            out[f"{sp}/pred"] = r["pred"]
            out[f"{sp}/fine"] = ys
            out[f"{sp}/l2"] = r["l2"]
            out[f"{sp}/own_accuracy"] = pt.own_accuracy(net, f["logits"], ys)
        return out

    with pt.shared_images(quick):
        return cached("glyph_fg_granularity", params, compute)


def granularity_runs(quick: bool, seed: int = 0, device=None, arch: str = pt.ARCH, epochs: int | None = None,
                     levels=LEVELS) -> dict:
    """{level: granularity_point(...)} for ``levels`` (default the three LEVELS) of one seed."""
    with pt.shared_images(quick):
        return {lv: granularity_point(quick, lv, seed, device, arch, epochs) for lv in levels}


#: Sensitivity (FG leaves these open; each moved toward the paper's trained, larger networks): (name, arch, epochs
#: (None: the regime's), how it moves toward the paper). Seed 0, the two ends of the ladder only (script, fine).
SENSITIVITY = {False: (("2× epochs (16)", pt.ARCH, 16, "longer training: FG's networks are trained to a margin"),
                       ("ResNet (8 epochs)", "resnet", None, "the other architecture: a deeper BN network")),
               True: (("2× epochs (6)", pt.ARCH, 6, "longer training"),)}
