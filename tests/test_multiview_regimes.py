"""FG regimes (sims/multiview/regimes.py), the regime table's inside/outside column, the horizon read-out, the
example config, and the shared sweep's folder and seed."""
import math
from pathlib import Path

import pytest

from sims.multiview import run_experiment
from sims.multiview.experiment import make_data_model, validate_config
from sims.multiview.regimes import (HORIZONS, REGIMES, at_horizon, regime_config, scaling_configs,
                                    sweep_settings)
from theory import multiview as mv

ROOT = Path(__file__).resolve().parents[1]


def _inside(rows, name):
    return next(r["inside"] for r in rows if r["parameter"] == name)


def test_paper_regime_is_inside_the_alpha_prime_and_big_noise_bounds_and_tuned_is_not():
    for d in (64, 100, 256):
        p = regime_config("paper", d)
        assert math.isclose(3.0 * p["iota_upper"], 1 / math.log(d)) and math.isclose(p["iota_lower"], math.log(d) ** -4)
        rows = mv.regime_table(d, 16, 3.0, 8, 800, 100, 8.0, 0.5, 0.01, 0.02, **p)
        assert _inside(rows, "α′ upper: s·ι_upper") is True and _inside(rows, "α′ lower ι_lower") is True
        assert _inside(rows, "big noise σ_ζ*√d") is True
    t = regime_config("tuned", 100)
    rows = mv.regime_table(100, 16, 3.0, 8, 800, 100, 8.0, 0.5, 0.01, 0.02, **t)
    assert _inside(rows, "α′ upper: s·ι_upper") is False and _inside(rows, "big noise σ_ζ*√d") is False
    assert _inside(rows, "noise norm σ_ζ√d") is False and _inside(rows, "eta") is True
    with pytest.raises(ValueError, match="regime"):
        regime_config("nope", 100)


def test_horizons_span_20x_and_the_settings_validate():
    for quick in (True, False):
        hz = HORIZONS[quick]
        assert len(hz) >= 3 and hz[-1] / hz[0] >= 20
        for r in REGIMES:
            st = sweep_settings(quick, r)
            cfg = validate_config({**st["base_config"], "k": max(st["ks"])})
            assert cfg["steps"] == hz[-1] and all(t % cfg["eval_every"] == 0 for t in hz)
        for c in scaling_configs(quick):
            assert validate_config(c)["steps"] == round(1.5 * c["d"])


def test_at_horizon_reads_the_curves():
    cfg = {"d": 32, "P": 8, "k": 2, "m_coarse": 40, "m_fine": 20, "lucky": 2.0, "steps": 20, "batch": 8,
           "n_test": 16, "eval_every": 10}
    r = run_experiment(cfg)
    a = at_horizon(r, 20)
    assert a["coarse"]["hard_err"] == r["coarse"]["final"]["hard_err"]
    assert a["hard_gap"] == pytest.approx(a["coarse"]["hard_err"] - a["fine"]["hard_err"])
    assert a["coarse"]["train_loss"] > 0  # the mean batch loss of steps 10..19
    with pytest.raises(ValueError, match="horizon"):
        at_horizon(r, 15)


def test_example_config_loads_and_agrees_with_the_data_model():
    from verify.commands.sim import load_config

    path = ROOT / "examples" / "multiview_paper.toml"
    cfg = load_config(path)
    dm = make_data_model(cfg)
    assert (dm.d, dm.P, dm.n_fine // 2) == (cfg["d"], cfg["P"], cfg["k"]) == (100, 16, 8)
    p = regime_config("paper", cfg["d"])
    for key in ("iota_lower", "iota_upper", "hard_noise_norm"):
        assert cfg[key] == pytest.approx(p[key], rel=1e-5), key


def test_bias_threshold_is_the_learners_bias():
    import torch

    from sims.multiview.learner import TwoLayerReLU

    net = TwoLayerReLU(2, 3, 50, sigma0=0.02, c_b=1.3, generator=torch.Generator().manual_seed(0))
    assert float(net.b[0, 0]) == pytest.approx(-0.02 * mv.bias_threshold(1.3, 50), rel=1e-6)


def test_shared_sweep_uses_the_cache_root_and_the_seed(monkeypatch, tmp_path):
    from verify.checks import fg

    seen = {}

    def fake_runner(out, **kw):
        seen["out"] = Path(out)

        def run(configs):
            seen["seeds"] = {c["seed"] for c in configs}
            raise RuntimeError("stop")
        return run

    monkeypatch.setenv("THEORYLAB_CACHE", str(tmp_path))
    monkeypatch.setattr("verify.sweep.sweep_runner", fake_runner)
    with pytest.raises(RuntimeError, match="stop"):
        fg.shared_sweep(True, "cpu", seed=7)
    assert seen["out"].parent == tmp_path / "sweeps" and seen["seeds"] == {7}
