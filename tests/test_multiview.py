"""FG library: data model (App B.1), learner (Eq 14–18), trainer, experiment API, closed forms, sim command."""
import itertools
import json
import math

import numpy as np
import pytest
import torch

from sims.multiview import (DEFAULTS, HierarchicalMultiView, TwoLayerReLU, coarse_scores, granularity_sweep,
                            mistakes, run_experiment, validate_config)
from sims.multiview.data import BIG_NOISE, COMMON, FEATURE_NOISE, SUBCLASS
from theory import multiview as mv

TINY = {"d": 32, "P": 8, "k": 2, "m_coarse": 40, "m_fine": 20, "lucky": 2.0, "steps": 20, "batch": 8,
        "n_test": 16, "eval_every": 10}


def test_sample_shapes_labels_and_balance():
    dm = HierarchicalMultiView(40, 12, 3.0, 4)
    g = torch.Generator().manual_seed(0)
    b = dm.sample(64, generator=g)
    assert b.X.shape == (64, 12, 40) and b.X.dtype == torch.float32
    assert torch.equal(torch.bincount(b.y_fine, minlength=8), torch.full((8,), 8))
    assert torch.equal(b.y_coarse, b.y_fine // 4)
    h = dm.sample(64, hard=True, generator=g, dtype=torch.float64)
    assert not (h.kinds == COMMON).any() and (h.kinds == FEATURE_NOISE).any()
    assert ((h.kinds == BIG_NOISE).sum(1) <= 1).all()
    # the distractor is the opposite superclass's common feature
    n, p = torch.nonzero(h.kinds == FEATURE_NOISE, as_tuple=True)
    other = 1 - h.y_coarse[n]
    assert h.X[n, p, other].mean() > 0.3 and h.X[n, p, 1 - other].abs().mean() < 0.15
    assert (b.kinds == SUBCLASS).any()


def _sample_by_formula(dm, n, hard, train, gen, dtype):
    """FG B.1 written out: x_p = α_p v_{feat(p)} + ζ_p for every patch (α = 0 on noise patches), in the draw order
    of ``sample``: the reference that ``sample`` (features added on feature patches only) must equal bit for bit."""
    y_fine = dm._fine_labels(n, torch.device("cpu"))
    kinds, feat = dm._feature_layout(n, y_fine, hard, gen, torch.device("cpu"))
    X = dm.sigma_zeta * torch.randn(n, dm.P, dm.d, generator=gen, dtype=dtype)
    big = kinds == BIG_NOISE
    if big.any():
        X[big] *= dm.sigma_zeta_hard / dm.sigma_zeta
    coef = dm._coefficients(kinds, gen, torch.device("cpu"), dtype)
    X = X + coef[..., None] * dm.dictionary("cpu", dtype)[feat.clamp(min=0)]
    return X, kinds, dm._labels(y_fine, train, gen)


@pytest.mark.parametrize("model", ["hierarchical", "shared_subclass", "three_level", "label_noise"])
def test_sample_equals_the_patch_formula_bit_for_bit(model):
    from sims.multiview.experiment import make_data_model, validate_config

    for counts, dictionary, hard, dtype in itertools.product(("exact", "binomial"), ("identity", "random"),
                                                             (False, True), (torch.float32, torch.float64)):
        cfg = validate_config({"model": model, "counts": counts, "dictionary": dictionary, "d": 64, "k": 4,
                               "batch": 32, "n_test": 64, "m_coarse": 200, "m_fine": 50})
        dm = make_data_model(cfg)
        b = dm.sample(64, hard=hard, train=True, generator=torch.Generator().manual_seed(5), dtype=dtype)
        X, kinds, (yc, yf) = _sample_by_formula(dm, 64, hard, True, torch.Generator().manual_seed(5), dtype)
        assert torch.equal(b.kinds, kinds) and torch.equal(b.y_coarse, yc) and torch.equal(b.y_fine, yf)
        assert torch.equal(b.X, X), (counts, dictionary, hard, dtype, float((b.X - X).abs().max()))


def test_a_noise_patch_with_a_coefficient_is_an_error(monkeypatch):
    dm = HierarchicalMultiView(32, 8, 2.0, 2)
    monkeypatch.setattr(dm, "_coefficients", lambda kinds, *a: torch.ones(kinds.shape))
    with pytest.raises(ValueError, match="noise patches"):
        dm.sample(8, generator=torch.Generator().manual_seed(0))


def test_sampling_is_seeded_and_device_aware():
    dm = HierarchicalMultiView(20, 6, 2.0, 2, dictionary="random")
    a = dm.sample(8, generator=torch.Generator().manual_seed(5), device="cpu")
    b = dm.sample(8, generator=torch.Generator().manual_seed(5), device=torch.device("cpu"))
    assert torch.equal(a.X, b.X)
    V = dm.dictionary(dtype=torch.float64)
    assert torch.allclose(V @ V.T, torch.eye(20, dtype=torch.float64), atol=1e-12)


def test_data_model_bad_input():
    with pytest.raises(ValueError, match="s <= P"):
        HierarchicalMultiView(20, 4, 6.0, 2)
    with pytest.raises(ValueError, match="needs"):
        HierarchicalMultiView(10, 8, 3.0, 8)
    with pytest.raises(ValueError, match="multiple"):
        HierarchicalMultiView(20, 8, 3.0, 2).sample(6, generator=torch.Generator())


def test_eq17_equals_autograd_and_bias_rule():
    g = torch.Generator().manual_seed(1)
    dm = HierarchicalMultiView(24, 8, 3.0, 2)
    net = TwoLayerReLU(4, 16, 24, sigma0=0.3, c_b=0.05, generator=g, dtype=torch.float64)
    b = dm.sample(16, generator=g, dtype=torch.float64)
    dW, F = net.eq17_delta(b.X, b.y_fine, 0.1)
    ref = net.autograd_delta(b.X, b.y_fine, 0.1)
    assert (dW - ref).abs().max() <= 1e-13 * ref.abs().max()
    b0 = net.b.clone()
    net.step(b.X, b.y_fine, 0.1)
    assert torch.allclose(net.b, b0 - torch.linalg.vector_norm(dW, dim=2) / math.log(24) ** 5, atol=1e-15)
    with pytest.raises(ValueError, match="shape"):
        net(torch.zeros(2, 8, 23, dtype=torch.float64))


def test_readout_and_mistakes():
    F = torch.tensor([[1.0, 3.0, 0.5, 0.2], [0.0, 0.1, 2.0, 0.3]])
    sc = coarse_scores(F, torch.tensor([0, 0, 1, 1]))
    assert torch.equal(sc, torch.tensor([[3.0, 0.5], [0.1, 2.0]]))
    assert mistakes(torch.tensor([[1.0, 1.0], [2.0, 1.0]]), torch.tensor([0, 0])).tolist() == [True, False]


def test_config_validation_errors():
    with pytest.raises(ValueError, match="unknown config key"):
        validate_config({"dd": 3})
    with pytest.raises(ValueError, match="impossible sizes"):
        validate_config({"s": 20.0, "P": 16})
    with pytest.raises(ValueError, match="multiple"):
        validate_config({"batch": 30})
    with pytest.raises(ValueError, match="integer"):
        validate_config({"d": 10.5})
    with pytest.raises(ValueError, match="model"):
        validate_config({"model": "nope"})
    with pytest.raises(ValueError, match="orthonormal features"):
        validate_config({"d": 10, "k": 8})
    assert validate_config({})["d"] == DEFAULTS["d"]


def test_run_experiment_is_plain_json_and_seeded():
    r = run_experiment(TINY)
    json.loads(json.dumps(r, allow_nan=False))  # strict JSON: not-applicable values are None, never NaN
    assert r["coarse"]["final"]["fine_easy_err"] is None
    s = r["summary"]
    for key in ("coarse_easy_err", "coarse_hard_err", "fine_easy_err", "fine_hard_err", "hard_gap"):
        assert 0 <= s[key] + (1 if key == "hard_gap" else 0) <= 2
    assert len(r["coarse"]["curves"]["step"]) == 3
    assert run_experiment(TINY)["summary"] == s


def test_granularity_sweep_with_runner():
    calls = []

    def runner(points):
        calls.append(len(points))
        return [run_experiment({**p, "trainings": ["coarse", "fine"]}) for p in points]

    sw = granularity_sweep(TINY, ks=(1, 2), ds=(32, 40), seeds=(0,), runner=runner)
    assert calls == [3] and set(sw["by_k"]) == {1, 2} and set(sw["by_d"]) == {32, 40}
    json.dumps(sw)


def test_theory_closed_forms():
    assert abs(mv.c_b_for_lucky(800, 8, 100) - 1.1752) < 1e-3
    pred = mv.lucky_set_sizes(800, 100, mv.c_b_for_lucky(800, 8, 100))
    assert abs(pred["S"] - 8) < 0.01 and pred["S_star"] < pred["S"]
    assert mv.lucky_set_sizes_planted(800, 100, 1.2)["S_star"] > mv.lucky_set_sizes(800, 100, 1.2)["S_star"]
    pc, tot = mv.patch_count_pmf(16, 3.0)
    assert abs(pc.sum() - 1) < 1e-12 and abs(tot.sum() - 1) < 1e-12
    e = mv.expected_counts(16, 3.0)
    assert abs(e["common"] - 3) < 1e-12 and abs(e["subclass"] - 3) < 1e-6
    errs = [mv.linear_error(P, 3.0, 8, 0.05, 0.1) for P in (16, 256, 4096)]
    assert errs[0] < errs[1] < errs[2] < 0.5
    assert mv.linear_error(4096, 3.0, 8, 0.05, planted=True) < 0.01
    rows = mv.regime_table(100, 16, 3.0, 8, 800, 100, 8.0, 0.5, 0.01, 0.02)
    assert {r["parameter"] for r in rows} >= {"d", "k", "c_b_coarse", "sigma0"}
    with pytest.raises(ValueError):
        mv.c_b_for_lucky(10, 8, 100)
    with pytest.raises(ValueError):
        mv.patch_count_pmf(4, 5.0)
    with pytest.raises(ValueError):
        mv.paper_c_b(0.5)


def test_sim_command_writes_curves_and_figures(tmp_path):
    from verify.cli import main

    cfg = tmp_path / "c.toml"
    cfg.write_text("\n".join(f"{k} = {v!r}" if not isinstance(v, str) else f'{k} = "{v}"' for k, v in TINY.items()))
    out = tmp_path / "out"
    assert main(["sim", "multiview", "--config", str(cfg), "--out", str(out)]) == 0
    r = json.loads((out / "curves.json").read_text())
    assert "coarse" in r and "fine" in r
    z = np.load(out / "curves.npz")
    assert z["coarse/hard_err"].shape == (3,)
    assert (out / "test_error.png").stat().st_size > 5000 and (out / "detector_growth.png").exists()
    bad = tmp_path / "bad.toml"
    bad.write_text("d = 32\nwhat = 1\n")
    assert main(["sim", "multiview", "--config", str(bad), "--out", str(out)]) == 2
    bad.write_text("P = 4\ns = 6.0\n")
    assert main(["sim", "multiview", "--config", str(bad), "--out", str(out)]) == 2


def test_granularity_sweep_needs_both_trainings():
    with pytest.raises(ValueError, match="coarse and fine"):
        granularity_sweep({**TINY, "trainings": ["coarse"]}, ks=(2,), ds=(), seeds=(0,))
