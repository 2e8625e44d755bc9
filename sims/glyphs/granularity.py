"""FG Sec 1 / Fig 2 / App A replicated on glyph CNNs: coarse-task accuracy against pretraining label granularity.

FG's experiment (Sec 1, Fig 2; App A.2): pretrain a backbone at some label granularity, then train the *coarse*
(target) task on the pretrained backbone and measure the target accuracy; FG App A.2 reads it with linear probing
(a new linear classifier on the frozen features), which we use. The baseline is pretraining on the target labels
themselves. Ours (the pretraining regime of the registry :mod:`sims.glyphs.networks`, fixed before any verdict):

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
from sims.glyphs import networks as nw
from sims.glyphs import pretrain as pt
from sims.glyphs.label_sets import COARSE, appearances, script_margins
from sims.glyphs.probe import linear_probe

LEVELS = nw.GRANULARITY_LEVELS  # coarse → fine pretraining granularity (k: k-means clusters per script)
EVAL_SPLITS = ("aug_test", "face_test")
#: Sensitivity (FG leaves these open; each moved toward the paper's trained, larger networks): (name, arch, epochs
#: (None: the regime's), how it moves toward the paper). Seed 0, the two ends of the ladder only (script, fine).
SENSITIVITY = nw.FG_SENSITIVITY


def hard_classes(quick: bool, regime: str = "main") -> dict:
    """{'classes': P, 'hard': bool [len(P)], 'own': cos to own class's common feature, 'other': best cos to
    another's, 'coarse': coarse labels} (module doc) for the class set of ``regime``: 'main' P; 'a1' FG App A.1's
    subset of P, each class keeping its row of P's (hardness is a property of the class against its script's
    common appearance, estimated over all of P's members of the script, not over the few the subset keeps)."""
    task = glyph_task(pt.task_config(quick))
    P = nw.pretrain_classes(quick)
    m = script_margins(task, P)
    out = {"classes": P, "hard": m["other"] > m["own"], "own": m["own"], "other": m["other"], "coarse": m["coarse"]}
    if regime == "main":
        return out
    keep = np.isin(P, nw.pretrain_classes(quick, regime))
    return {k: v[keep] for k, v in out.items()}


def level_net(quick: bool, level: str, seed: int, device, arch: str, epochs, regime: str = "main"):
    """The network pretrained at a granularity of the regime's ladder (the registry's ``pretrain-…`` network)."""
    return pt.pretrain_net(quick, level=level, seed=seed, device=device, arch=arch, epochs=epochs, regime=regime)


def granularity_point(quick: bool, level: str, seed: int = 0, device=None, arch: str = nw.ARCH,
                      epochs: int | None = None, regime: str = "main") -> dict:
    """Coarse-task probe results of the network pretrained at ``level`` (module doc), cached. ``regime`` 'a1':
    FG App A.1's regime (sims.glyphs.networks.A1: its class subset, images per class and ladder).

    Returns per eval split: ``{split}/correct`` (bool per held-out image), ``{split}/pred`` (the probe's coarse label),
    ``{split}/fine`` (the image's fine class), the
    net's own accuracy at its level on aug_test (the training precondition), the probe's penalty, timings.
    """
    if regime not in nw.REGIMES:
        raise ValueError(f"regime: {regime!r} is not one of {nw.REGIMES}")
    if level not in nw.levels(regime, quick):
        raise ValueError(f"level: {level!r} is not one of {nw.levels(regime, quick)}")
    s = pt.sizes(quick)
    P = nw.pretrain_classes(quick, regime)
    params = {"quick": bool(quick), "level": level, "seed": int(seed), "device": pt.device_type(device), "sizes": s,
              "classes": P.tolist(), "arch": arch, "epochs": epochs}
    if regime != "main":
        params["regime"] = {"name": regime, **nw.A1[bool(quick)]}

    def compute():
        net = level_net(quick, level, seed, device, arch, epochs, regime)
        coarse = np.asarray(glyph_task(pt.task_config(quick)).labels(COARSE))
        X, yf = pt.split_images(quick, "train", P, regime)
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


def granularity_runs(quick: bool, seed: int = 0, device=None, arch: str = nw.ARCH, epochs: int | None = None,
                     levels=None, regime: str = "main") -> dict:
    """{level: granularity_point(...)} for ``levels`` (default the regime's whole ladder) of one seed."""
    with pt.shared_images(quick):
        return {lv: granularity_point(quick, lv, seed, device, arch, epochs, regime)
                for lv in (nw.levels(regime, quick) if levels is None else levels)}
