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
    monkeypatch.setattr(pt, "split_images", lambda quick, split, classes: real(quick, "train", classes))
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
