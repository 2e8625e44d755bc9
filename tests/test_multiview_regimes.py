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


def test_headline_uses_exact_counts_and_small_s_is_the_binomial_regime():
    assert regime_config("paper", 100)["counts"] == "exact"
    assert regime_config("small_s", 100)["counts"] == "binomial"
    rows = mv.regime_table(100, 16, 3.0, 8, 800, 100, 8.0, 0.5, 0.01, 0.02, **regime_config("paper", 100))
    assert _inside(rows, "patch-count law") is True and _inside(rows, "easy samples with no common patch") is True
    rows = mv.regime_table(100, 16, 3.0, 8, 800, 100, 8.0, 0.5, 0.01, 0.02, **regime_config("small_s", 100))
    share = next(r["value"] for r in rows if r["parameter"] == "easy samples with no common patch")
    assert share == f"{(13 / 16) ** 16:.3%}" and _inside(rows, "patch-count law") is False
    # the regime rows that say how far the run is from the paper's assumptions: lucky neurons (8 vs ≈ 0.11), big noise per coordinate (0.46 vs 0.22), α′·k
    lucky = next(r for r in rows if r["parameter"] == "lucky neurons per feature (coarse)")
    assert lucky["value"] == pytest.approx(8.0, rel=1e-3) and lucky["paper value at this d"] == "0.11"
    assert lucky["inside"] is False
    big = next(r for r in rows if r["parameter"] == "big noise per coordinate σ_ζ*")
    assert big["value"] == pytest.approx(0.4605, abs=1e-4) and big["inside"] is False
    assert any(r["parameter"].startswith("α′·k") for r in rows)
    k_row = next(r for r in rows if r["parameter"] == "k")
    assert "k ≥ s·log⁵ d" in k_row["paper condition (B.3)"] and k_row["inside"] is False


def test_settle_rule():
    from sims.multiview.regimes import settle

    flat = {1600: 0.38, 1700: 0.39, 1800: 0.38, 1900: 0.37, 2000: 0.38}
    assert settle(flat, 2000, 0.05)["settled"] is True
    falling = {1600: 0.20, 1700: 0.18, 1800: 0.16, 1900: 0.14, 2000: 0.12}
    r = settle(falling, 2000, 0.05)
    assert r["settled"] is False and r["drift"] == pytest.approx(0.08)
    with pytest.raises(ValueError, match="settling"):
        settle({2000: 0.1}, 2000, 0.05)


def test_exact_counts_place_exactly_s_patches():
    import torch

    from sims.multiview.data import BIG_NOISE, COMMON, FEATURE_NOISE, SUBCLASS, HierarchicalMultiView

    dm = HierarchicalMultiView(50, 16, 3, 4, counts="exact")
    g = torch.Generator().manual_seed(0)
    e = dm.sample(64, generator=g).kinds
    h = dm.sample(64, hard=True, generator=g).kinds
    assert ((e == COMMON).sum(1) == 3).all() and ((e == SUBCLASS).sum(1) == 3).all()
    assert ((h == SUBCLASS).sum(1) == 3).all() and ((h == FEATURE_NOISE).sum(1) == 3).all()
    assert ((h == BIG_NOISE).sum(1) == 1).all() and ((h == COMMON).sum(1) == 0).all()
    # the placement is uniform over the P slots: every slot is common for ≈ s/P of the samples
    e = dm.sample(16 * 512, generator=g).kinds
    frac = (e == COMMON).double().mean(0)
    assert float((frac - 3 / 16).abs().max()) < 5 * (3 / 16 * 13 / 16 / (16 * 512)) ** 0.5
    with pytest.raises(ValueError, match="integer"):
        HierarchicalMultiView(50, 16, 2.5, 4, counts="exact")
    with pytest.raises(ValueError, match="2s"):
        HierarchicalMultiView(50, 6, 3, 4, counts="exact")
    with pytest.raises(ValueError, match="counts"):
        HierarchicalMultiView(50, 16, 3, 4, counts="poisson")
    with pytest.raises(ValueError, match="counts"):
        validate_config({"counts": "poisson"})


def test_horizons_span_20x_and_the_settings_validate():
    for quick in (True, False):
        hz = HORIZONS[quick]
        assert len(hz) >= 3 and hz[-1] / hz[0] >= 20
        for r in REGIMES:
            st = sweep_settings(quick, r)
            cfg = validate_config({**st["base_config"], "k": max(st["ks"])})
            assert cfg["steps"] == hz[-1] and all(t % cfg["eval_every"] == 0 for t in hz)
        for c in scaling_configs(quick):  # one T for every d: d and the training length are not mixed
            assert validate_config(c)["steps"] == hz[-1]
        # the settled window (last 20 %) holds ≥ 2 evaluation steps ending at T
        from sims.multiview.regimes import EVAL_EVERY, settle_steps
        win = settle_steps(hz[-1], EVAL_EVERY[quick])
        assert len(win) >= 3 and win[-1] == hz[-1] and win[0] >= 0.8 * hz[-1]


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
    assert cfg["counts"] == p["counts"] == "exact"


def test_bias_threshold_is_the_learners_bias():
    import torch

    from sims.multiview.learner import TwoLayerReLU

    net = TwoLayerReLU(2, 3, 50, sigma0=0.02, c_b=1.3, generator=torch.Generator().manual_seed(0))
    assert float(net.b[0, 0]) == pytest.approx(-0.02 * mv.bias_threshold(1.3, 50), rel=1e-6)


def test_shared_sweep_uses_the_cache_root_and_the_seed(monkeypatch, tmp_path):
    from verify.checks.fg import training as fg

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
