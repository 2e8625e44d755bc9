"""Read-outs of trained networks check, from the data they were given, that they read the final weights and the
held-out images they claim (issue 36 §2): each planted mistake below raises, so the check that calls the read-out
is a ``fail``, never a published verdict. Quick networks (cached after the first training); each read-out runs
uncached here (``cached`` replaced by a direct call) so the planted mistake is executed, and nothing is stored."""
from __future__ import annotations

import builtins
import dataclasses

import numpy as np
import pytest

from sims import dependency_training as dt
from sims.glyphs import granularity as gr
from sims.glyphs import pretrain as pt
from sims.glyphs import vc_experiments as vce


def _uncached(monkeypatch, module):
    monkeypatch.setattr(module, "cached", lambda name, params, compute: compute())


def test_probe_scored_on_its_training_images_fails(monkeypatch):
    """fg.label_granularity's probe with its evaluation split pointing at the training images (a split typo)."""
    _uncached(monkeypatch, gr)
    real = pt.split_images
    monkeypatch.setattr(pt, "split_images", lambda quick, split, classes, *a: real(quick, "train", classes, *a))
    with pytest.raises(ValueError, match="fitted on"):
        gr.granularity_point(True, "fine", seed=0)


def test_features_of_a_non_final_checkpoint_fail(monkeypatch):
    """fg.label_granularity reading the network at its first saved checkpoint instead of its final weights."""
    _uncached(monkeypatch, gr)
    real = gr.level_net

    def early(*a, **k):
        net = real(*a, **k)
        first = min(e for e in net.checkpoints if e > 0) if len(net.checkpoints) > 1 else min(net.checkpoints)
        assert first < net.config.epochs
        return dataclasses.replace(net, model=net.at_checkpoint(first))

    monkeypatch.setattr(gr, "level_net", early)
    with pytest.raises(ValueError, match="non-final checkpoint"):
        gr.granularity_point(True, "fine", seed=0)


def test_checkpoints_read_last_to_first_fail(monkeypatch):
    """vc.training_collapse's curve with the checkpoints in reverse order (the curve would read as a rise)."""
    _uncached(monkeypatch, vce)
    monkeypatch.setattr(vce, "sorted", lambda it, **k: builtins.sorted(it, reverse=True), raising=False)
    with pytest.raises(ValueError, match="non-final checkpoint"):
        vce.collapse_curves(True, seed=0)


def test_the_unplanted_read_outs_run():
    """The same read-outs without a plant (cached: the quick checks' own entries)."""
    g = gr.granularity_point(True, "fine", seed=0)
    assert 0.0 <= float(np.mean(g["aug_test/correct"])) <= 1.0
    c = vce.collapse_curves(True, seed=0)
    assert list(c["epochs"]) == sorted(c["epochs"])


def test_theta_stopped_after_three_iterations_is_an_error():
    """Θ of ND Sec 3.2 fitted with 3 L-BFGS iterations is not the minimiser: fit_theta refuses it (its gradient is
    still 0.7 of its value at Θ = 0 on this problem), and the default (100 iterations) is accepted. Both call sites
    (sims.dependency_training, sims.glyphs.dependencies) keep the check on."""
    rng = np.random.default_rng(0)
    f = rng.standard_normal((2000, 40)) * 3
    planted = rng.standard_normal((40, 5))
    y = np.concatenate([f, f @ planted], 1).argmax(1)
    with pytest.raises(ValueError, match="raise max_iter"):
        dt.fit_theta(f, y, 5, max_iter=3)
    dt.fit_theta(f, y, 5)


def test_fit_theta_check_is_not_switched_off_at_the_call_sites():
    import inspect

    from sims.glyphs import dependencies

    for mod in (dt, dependencies):
        assert "check=False" not in inspect.getsource(mod), mod.__name__


def test_every_checkpoint_read_as_the_final_weights_fails(monkeypatch):
    """vc.training_collapse's curve with every horizon read from the final weights (a flat curve)."""
    _uncached(monkeypatch, vce)
    real = pt.pretrain_net

    def net_with_one_checkpoint(*a, **k):
        net = real(*a, **k)
        last = max(net.checkpoints)
        return dataclasses.replace(net, checkpoints={e: net.checkpoints[last] for e in net.checkpoints})

    monkeypatch.setattr(pt, "pretrain_net", net_with_one_checkpoint)
    with pytest.raises(ValueError, match="earlier one"):
        vce.collapse_curves(True, seed=0)


def test_another_seeds_network_fails(monkeypatch):
    """vc.training_collapse's seed 1 reading the seed-0 network (the seeds would carry no variance)."""
    _uncached(monkeypatch, vce)
    real = pt.pretrain_net
    monkeypatch.setattr(pt, "pretrain_net", lambda quick, seed=0, **k: real(quick, seed=0, **k))
    with pytest.raises(ValueError, match="trained with seed 0"):
        vce.collapse_curves(True, seed=1)


def test_a_constant_curve_is_no_trend():
    from verify.checks.vc import sec6_glyphs as vc_glyphs

    with pytest.raises(ValueError, match="constant"):
        vc_glyphs.trend([0.5, 0.5, 0.5])
    assert vc_glyphs.trend([0.5, 0.4, 0.3])["holds"]


def test_the_regularizers_read_out_on_its_fine_tuning_samples_fails():
    """nd.regularizer's θ_j and accuracy read on the samples it fine-tunes on (a task dict with x_test = x_train)."""
    import torch

    p = dt.TaskParams(n_classes=12, dim=8, latent_dim=4, n_train=20, n_test=10, noise=0.5, hidden=16, epochs=2,
                      batch=32)
    task = dt.make_mixture(p, np.random.default_rng(0))
    model = dt.build_mlp(p.dim, p.hidden, p.n_classes, torch.Generator().manual_seed(0))
    leaked = {**task, "x_test": task["x_train"][: len(task["x_test"])]}
    with pytest.raises(ValueError, match="not held out"):
        dt.finetune(model, leaked, p, (0, 1), 0.2, 1, 0.1, torch.Generator().manual_seed(1))
    dt.finetune(model, task, p, (0, 1), 0.2, 1, 0.1, torch.Generator().manual_seed(1))  # the held-out read-out runs


def test_held_out_guard_compares_rows_byte_for_byte():
    from sims.heldout import check_held_out

    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    check_held_out(a[:2], a[2:], "x")
    with pytest.raises(ValueError, match="1 of the held-out images"):
        check_held_out(a[:2], a[1:3], "x")


def test_p_pretrain_that_is_not_the_held_out_accuracy_fails():
    """A referee's plant: vc.transfer_correlation's p_pretrain read on the training split (the training logits
    scored; the held-out guard saw the right images go by) changed no status. The check now reads every p_pretrain
    again through the registry's held-out accuracy (sims.glyphs.networks.accuracy) and fails beyond 2 images. In
    full mode the training accuracy is far from the held-out one; the quick networks are barely trained (train 0.100
    vs held-out 0.092 on 120 images), so this test gives the cross-check points 3 images off."""
    from sims.glyphs import networks as nw
    from verify.checks.vc import sec6_glyphs as vg

    pts = vce.transfer_grid(True, 0)
    assert vg.p_pretrain_cross_check(pts, True, 0, None)["largest |p_pretrain − registry's aug_test accuracy| in "
                                                          "images (≤ 2)"] <= 2
    n = nw.accuracy(nw.pretrain(True, "fine", 1.0, 0.0, 0), True)["n"]["aug_test"]
    bad = {g: [dict(p) for p in v] for g, v in pts.items()}
    bad["lambda"][0]["p_pretrain"] = float(bad["lambda"][0]["p_pretrain"]) + 3.0 / n
    with pytest.raises(ValueError, match="p_pretrain of the"):
        vg.p_pretrain_cross_check(bad, True, 0, None)
