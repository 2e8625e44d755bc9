"""The sandbox: the README example of docs/fg.md runs as written, and the shipped sandbox data models behave."""
import pytest
import re
from pathlib import Path

import torch

from sims.multiview import LabelNoise, SharedSubclass, ThreeLevel, run_experiment
from sims.multiview.data import COMMON, MIDDLE, DataModel

DOC = Path(__file__).resolve().parents[1] / "docs" / "fg.md"


def _example_code() -> str:
    text = DOC.read_text()
    section = text.split("## Sandbox a new data model", 1)[1]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert blocks, "docs/fg.md: no python block under 'Sandbox a new data model'"
    return blocks[0]


def test_readme_sandbox_example_runs(capsys):
    code = _example_code()
    assert 15 <= len(code.strip().splitlines()) <= 30
    ns = {}
    exec(compile(code, str(DOC), "exec"), ns)
    assert isinstance(ns["data"], DataModel)
    s = ns["result"]["summary"]
    assert 0 <= s["coarse_hard_err"] <= 1 and 0 <= s["fine_hard_err"] <= 1
    assert "coarse_easy_err" in capsys.readouterr().out


def test_shared_subclass_features():
    dm = SharedSubclass(30, 8, 3.0, 4, shared=2)
    sub = dm.sub_of_fine()
    assert sub[0] == sub[4] and sub[1] == sub[5] and sub[2] != sub[6]
    assert len(set(sub.tolist())) == 8 - 2 and isinstance(dm, DataModel)


def test_three_level_has_middle_patches_and_leaf_labels():
    dm = ThreeLevel(40, 12, 2.0, 3, k2=2)
    g = torch.Generator().manual_seed(0)
    b = dm.sample(24, generator=g)
    h = dm.sample(24, hard=True, generator=g)
    assert dm.n_fine == 12 and (b.kinds == MIDDLE).any() and (h.kinds == MIDDLE).any()
    assert not (h.kinds == COMMON).any()
    assert torch.equal(b.y_coarse, b.y_fine // 6)


def test_label_noise_flips_only_training_labels():
    dm = LabelNoise(30, 8, 3.0, 2, flip=0.3)
    g = torch.Generator().manual_seed(0)
    clean = dm.sample(400, generator=g)
    assert torch.equal(clean.y_coarse, clean.y_fine // 2)
    noisy = dm.sample(400, train=True, generator=g)
    true = torch.arange(4).repeat_interleave(100) // 2
    rate = float((noisy.y_coarse != true).float().mean())
    assert 0.2 < rate < 0.4
    assert torch.equal(noisy.y_coarse, noisy.y_fine // 2)


def test_sandbox_models_train_through_run_experiment():
    tiny = {"d": 40, "P": 8, "k": 2, "m_coarse": 40, "m_fine": 20, "lucky": 2.0, "steps": 10, "batch": 8,
            "n_test": 16, "eval_every": 10}
    for extra in ({"model": "shared_subclass", "shared": 1}, {"model": "three_level", "k2": 2},
                  {"model": "label_noise", "flip": 0.2}):
        r = run_experiment({**tiny, **extra})
        assert set(r["summary"]) >= {"coarse_hard_err", "fine_hard_err", "hard_gap"}


def test_config_and_data_model_must_agree():
    from sims.multiview import HierarchicalMultiView, run_experiment

    config = {"d": 32, "P": 8, "k": 2, "m_coarse": 40, "m_fine": 20, "lucky": 2.0, "steps": 2, "batch": 8, "n_test": 8,
              "eval_every": 1}
    for key, model in (("d", HierarchicalMultiView(40, 8, 3.0, 2)), ("P", HierarchicalMultiView(32, 12, 3.0, 2)),
                       ("k", HierarchicalMultiView(32, 8, 3.0, 4))):
        with pytest.raises(ValueError, match=rf"config {key} = .* but the data model"):
            run_experiment(config, data_model=model)


def test_a_data_model_returning_nan_is_named_not_eta():
    import math

    import pytest
    import torch

    from sims.multiview import run_experiment
    from sims.multiview.data import HierarchicalMultiView

    class NaNData(HierarchicalMultiView):
        def sample(self, n, **kw):
            b = super().sample(n, **kw)
            b.X[0, 0, 0] = math.nan
            return b

    cfg = {"d": 16, "P": 8, "k": 2, "m_coarse": 20, "m_fine": 10, "lucky": 2.0, "steps": 4, "batch": 8,
           "n_test": 8, "eval_every": 2}
    with pytest.raises(ValueError, match="NaNData.sample returned non-finite"):
        run_experiment(cfg, data_model=NaNData(16, 8, 3.0, 2))
    assert torch.isfinite(HierarchicalMultiView(16, 8, 3.0, 2).sample(8, generator=torch.Generator()).X).all()


def test_a_step_size_that_kills_every_neuron_warns():
    import pytest

    from sims.multiview import run_experiment

    cfg = {"d": 32, "P": 8, "k": 2, "m_coarse": 40, "m_fine": 20, "lucky": 2.0, "steps": 20, "batch": 8,
           "n_test": 32, "eval_every": 10, "eta": 1e30, "trainings": ["coarse"]}
    with pytest.warns(RuntimeWarning, match="neurons are dead"):
        r = run_experiment(cfg)
    assert r["coarse"]["final"]["easy_err"] >= 0.0


def test_progress_callback_counts_every_sgd_step():
    from sims.multiview import run_experiment

    cfg = {"d": 20, "P": 8, "k": 2, "m_coarse": 40, "m_fine": 20, "lucky": 4.0, "steps": 7, "batch": 8,
           "n_test": 16, "eval_every": 7}
    ticks = []
    run_experiment(cfg, progress=ticks.append)
    assert ticks == [1] * 14                                # 7 steps of coarse and 7 of fine training
    ticks.clear()
    run_experiment({**cfg, "trainings": ["fine"]}, progress=ticks.append)
    assert len(ticks) == 7


def test_coefficients_hook_sets_the_feature_strengths():
    from sims.multiview import HierarchicalMultiView
    from sims.multiview.data import FEATURE_NOISE, NOISE

    dm = HierarchicalMultiView(30, 8, 3.0, 2, iota=0.1, iota_lower=0.25, iota_upper=0.5)
    g = torch.Generator().manual_seed(0)
    easy = dm._feature_layout(64, torch.arange(4).repeat_interleave(16), False, g, "cpu")[0]
    hard = dm._feature_layout(64, torch.arange(4).repeat_interleave(16), True, g, "cpu")[0]
    ce, ch = dm._coefficients(easy, g, "cpu", torch.float64), dm._coefficients(hard, g, "cpu", torch.float64)
    feat = (easy == COMMON) | (easy == 2)
    assert ((ce[feat] >= 0.9) & (ce[feat] <= 1.1)).all() and (ce[easy == NOISE] == 0).all()
    fn = hard == FEATURE_NOISE
    assert fn.any() and ((ch[fn] >= 0.25) & (ch[fn] <= 0.5)).all()
