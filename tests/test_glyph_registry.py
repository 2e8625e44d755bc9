"""The registry of trained glyph networks (sims.glyphs.networks): every network a run trains is named there, with
exactly the trainer arguments the checks used before the registry (so the trainer's cache keys, and the trained
weights, are the same), and the checks' preparations name exactly the registry's networks.

The expected arguments are written out here from the configurations fixed before the registry (the suite's table,
the pretraining regime's sizes); the class sets and k-means labellings, computed from the task, are pinned by the
digests of the arrays the earlier code passed."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import re

import numpy as np
import pytest

from sims.glyphs import networks as nw
from sims.glyphs.task import GlyphTaskConfig

# ---- the configurations the earlier code passed to train_glyph_net (sims/glyphs/suite.py, sims/glyphs/pretrain.py)
SUITE_OLD = {False: {"epochs": 8, "per_class": 24, "batch_size": 256, "checkpoints": (4,)},
             True: {"epochs": 6, "per_class": 16, "batch_size": 128, "checkpoints": ()}}
SUITE_TASK_OLD = {False: GlyphTaskConfig(), True: GlyphTaskConfig(n_classes=100)}
PRETRAIN_OLD = {False: {"per_class": 24, "epochs": 8, "checkpoints": (0, 1, 2, 4, 8)},
                True: {"per_class": 8, "epochs": 3, "checkpoints": (0, 1, 2, 3)}}
PRETRAIN_TASK_OLD = {False: GlyphTaskConfig(n_classes=1000, size=32, seed=0),
                     True: GlyphTaskConfig(n_classes=200, size=32, seed=0)}
MOVED_CHECKPOINTS = {6: (0, 1, 2, 4, 6), 8: (0, 1, 2, 4, 8), 16: (0, 1, 2, 4, 8, 16)}  # epochs= given
# sha256 (first 16 hex) of json.dumps(array.tolist()) of the int64 arrays the earlier code passed
P_DIGEST = {False: (105, "bd88cdef5b92b33b"), True: (15, "3c4bb399ae762366")}
GROUPS_DIGEST = {(False, 21): "967bc262c4832ac1", (False, 49): "e5df0a0af50883f7", (True, 15): "65aaa9319df7e3d0"}
# FG App A.1's regime (fg.label_granularity's judged run, new with the registry: written out here, not "old"):
# images per class, the digest of its class subset of P, its k-means labellings
A1_PER_CLASS = 100
A1_DIGEST = {False: (35, "381f2abbc6c52783"), True: (15, "3c4bb399ae762366")}
A1_GROUPS_DIGEST = {(False, 14): "5e5632903ad0b43b", (False, 21): "8bc95339054dbdba", (True, 10): "2c878cfbe842583e"}
# networks a run of seed 0 prepares, and those only a branch of a check trains (vc.transfer_correlation's and
# fg.label_granularity's sensitivity rows)
COUNTS = {False: (62, 12), True: (15, 4)}

SUITE_NAME = re.compile(r"(lenet|resnet)(-base)?-s(\d+)$")
PRETRAIN_NAME = re.compile(r"pretrain-(a1-)?(fine|script|kmeans(\d+))-tau([\d.]+)-lam([\d.]+)-s(\d+)"
                           r"(?:-(lenet|resnet)-e(\d+))?$")


def _digest(a) -> str:
    return hashlib.sha256(json.dumps(np.asarray(a).tolist()).encode()).hexdigest()[:16]


def old_kwargs(name: str, quick: bool) -> tuple:
    """(task config, {kwarg: (type, value or digest)}) the earlier code passed for the network ``name``."""
    m = SUITE_NAME.match(name)
    if m:
        n = SUITE_TASK_OLD[quick].n_classes
        classes = tuple(k for k in range(n) if k % 10 != 9) if m.group(2) else None
        kw = {"arch": m.group(1), "level": "fine", "classes": classes, "seed": int(m.group(3)), **SUITE_OLD[quick]}
        return SUITE_TASK_OLD[quick], {k: (type(v), v) for k, v in kw.items()}
    m = PRETRAIN_NAME.match(name)
    assert m, name
    a1, labels, n_groups, tau, lam, seed, arch, epochs = m.groups()
    s = dict(PRETRAIN_OLD[quick], **({"per_class": A1_PER_CLASS} if a1 else {}))
    if epochs is not None:
        s["epochs"], s["checkpoints"] = int(epochs), MOVED_CHECKPOINTS[int(epochs)]
    groups = A1_GROUPS_DIGEST if a1 else GROUPS_DIGEST
    kw = {"arch": (str, arch or "lenet"), "level": (str, "fine" if n_groups else labels),
          "classes": (np.ndarray, (A1_DIGEST if a1 else P_DIGEST)[quick]), "tau": (float, float(tau)),
          "cos_reg": (float, float(lam)), "epochs": (int, s["epochs"]), "per_class": (int, s["per_class"]),
          "seed": (int, int(seed)), "checkpoints": (tuple, s["checkpoints"]),
          "groups": (np.ndarray, (int(n_groups), groups[(quick, int(n_groups))])) if n_groups
          else (type(None), None)}
    return PRETRAIN_TASK_OLD[quick], kw


def _seen(v):
    """A kwarg as old_kwargs writes it: arrays by (length or label count, digest)."""
    if isinstance(v, np.ndarray):
        assert v.dtype == np.int64
        n = len(np.unique(v[:, 1])) if v.ndim == 2 else len(v)
        return np.ndarray, (n, _digest(v))
    return type(v), v


@pytest.mark.parametrize("quick", [True, False])
def test_every_network_gets_the_trainer_arguments_it_had(quick):
    recs = nw.listing(quick, conditional=True)
    assert (sum(not r.conditional for r in recs), sum(r.conditional for r in recs)) == COUNTS[quick]
    for r in recs:
        task, want = old_kwargs(r.name, quick)
        got = {k: _seen(v) for k, v in r.train_kwargs().items()}
        assert r.task == task and dataclasses.asdict(r.task) == dataclasses.asdict(task), r.name
        assert got == want, r.name


@pytest.mark.parametrize("quick", [True, False])
def test_names_are_one_to_one_with_trainings(quick):
    """A name reads back as its record; two names never train the same configuration (the trainer's key view)."""
    from sims.glyphs.train import TrainConfig

    keys = {}
    for r in nw.listing(quick, conditional=True):
        again = nw.record(r.name, quick)
        assert dataclasses.replace(again, checks=r.checks, conditional=r.conditional) == r
        kw = r.train_kwargs()
        cfg = TrainConfig(**{k: (tuple(np.asarray(v).tolist()) if k == "classes" and v is not None else
                                 (tuple(map(tuple, np.asarray(v).tolist())) if k == "groups" and v is not None else v))
                             for k, v in kw.items()})
        key = json.dumps([dataclasses.asdict(r.task), cfg.key()], sort_keys=True)
        assert key not in keys, (r.name, keys.get(key))
        keys[key] = r.name
    regime = f"pretrain-fine-tau1-lam0-s0-lenet-e{3 if quick else 8}"  # the regime's epochs: no suffix
    for bad in ("vgg-s0", "lenet-s", "pretrain-fine-tau1.0-lam0-s0", regime, "pretrain-kmeans5-tau1-lam0-s0",
                "pretrain-coarse-tau1-lam0-s0"):
        with pytest.raises(ValueError, match="not a suite network"):
            nw.record(bad, quick)


def _prepared(quick: bool) -> tuple:
    """({network name: {check ids}} of the registry-network preparations of every check, [read-out preparations])."""
    from sims.glyphs import dependencies as GD
    from sims.glyphs import granularity as gr
    from sims.glyphs import vc_experiments as ve
    from verify.registry import Context, discover

    nets, readouts = {}, []
    for cid, chk in sorted(discover().items()):
        if chk.prepare is None:
            continue
        for p in chk.preparations(Context(check_id=cid, quick=quick, seed=0, device="cpu")):
            if p.fn is nw.net:
                assert p.args[1:] == (quick, "cpu") and p.label == f"glyph net {p.args[0]}{' (quick)' * quick}"
                nets.setdefault(p.args[0], set()).add(cid)
            elif p.fn in (ve.collapse_curves, ve.transfer_point, gr.granularity_point, GD.cached_features,
                          GD.layer_ranks, GD.new_categories):
                readouts.append(p)
            else:
                assert not p.fn.__module__.startswith("sims.glyphs"), p.label
    return nets, readouts


def _read_by(p, quick: bool) -> list:
    """The names of the networks a read-out preparation reads (the read-out's own arguments)."""
    from sims.glyphs import dependencies as GD
    from sims.glyphs import granularity as gr
    from sims.glyphs import vc_experiments as ve

    a = list(p.args) + [v for _, v in p.kwargs]
    if p.fn is ve.collapse_curves:  # (quick, seed, device[, arch, epochs])
        return [nw.pretrain(quick, "fine", 1.0, 0.0, a[1], *a[3:5]).name]
    if p.fn is ve.transfer_point:   # (quick, tau, cos_reg, seed, device[, arch, epochs])
        return [nw.pretrain(quick, "fine", a[1], a[2], a[3], *a[5:7]).name]
    if p.fn is gr.granularity_point:  # (quick, level, seed, device[, arch, epochs[, regime]])
        return [nw.pretrain(quick, a[1], 1.0, 0.0, a[2], *a[4:7]).name]
    if p.fn is GD.new_categories:   # (seed, quick, device)
        return [f"lenet-base-s{a[0]}", f"lenet-s{a[0]}"]
    return [a[0]]                   # cached_features, layer_ranks: (name, quick, ...)


@pytest.mark.parametrize("quick", [True, False])
def test_the_preparations_name_exactly_the_registry_networks(quick, monkeypatch):
    """Every network a run's preparations train is in listing() with the checks that prepare it, and vice versa;
    each read-out waits for the preparation of the network it reads."""
    monkeypatch.delenv("THEORYLAB_IMAGENET_VAL", raising=False)
    nets, readouts = _prepared(quick)
    assert nets == {r.name: set(r.checks) for r in nw.listing(quick)}
    q = " (quick)" if quick else ""
    for p in readouts:
        for name in _read_by(p, quick):
            assert f"glyph net {name}{q}" in p.after, (p.label, name)


def test_the_suite_precondition_reads_its_table():
    """The suite's required accuracies are the table's; a record states its held-out sets."""
    r = nw.record("lenet-base-s0")
    assert r.required == (("face_test_all", 0.30), ("aug_test", 0.35)) and r.classes == "base"
    assert nw.record("lenet-s1", True).required == (("face_test_all", 0.40), ("aug_test", 0.40))
    assert {(h.split, h.per_class, h.seed) for h in r.heldout} == {("aug_test", 8, 1), ("face_test", 8, 1)}
    p = nw.record("pretrain-script-tau1-lam0-s2", True)
    assert p.required == (("aug_test", 0.5),) and {h.per_class for h in p.heldout} == {8}
    assert {h.per_class for h in nw.record("pretrain-fine-tau1-lam0-s0").heldout} == {16}


def test_a_pretraining_networks_precondition_is_its_read_outs_accuracy():
    """networks.precondition of a quick pretraining network: its aug_test accuracy at its own level is the one the
    VC read-out reports (p_pretrain: the same images, the same classifier; ≤ 1 image may differ by float rounding)."""
    from sims.glyphs import vc_experiments as ve

    pre = nw.precondition("pretrain-fine-tau0.4-lam0-s0", True)
    pt = ve.transfer_point(True, 0.4, 0.0, 0)
    n = len(nw.class_sets(True)["pretrain"]) * nw.SIZES[True]["held"]
    assert abs(pre["aug_test"] - float(pt["p_pretrain"])) <= 1 / n + 1e-12
    assert pre["trained"] == (pre["aug_test"] >= nw.MIN_ACC) and "aug_test (required ≥ 0.5)" in pre["reason"]


def test_the_table_lists_every_network():
    text = nw.table(True)
    assert all(r.name in text for r in nw.listing(True, conditional=True))
    assert "pretrain-fine-tau1-lam1-s0-lenet-e6*" in text  # conditional: marked
