"""The RD checks in quick mode: statuses as measured, negative controls that fail, positive controls that hold,
misses on every result; the comparisons behind the verdicts on planted data."""
import numpy as np
import pytest

from tests.helpers import run_quick
from verify.checks import rd_products as checks

EXPECTED = {
    "rd.numerical_rank_stable": "pass",
    "rd.partial_rank": "pass",
    "rd.monotone_depth": "pass",
    "rd.structural_impetus": "pass",  # every component the paper says loses rank does; BN (a remission) keeps it
    "rd.lyapunov_law": "pass",
    "rd.gradient_explosion": "pass",
    "rd.general_centralization": "pass",  # the corrected form; Haar orthogonal is the erratum's counterexample
    "rd.mlp50_decay": "refuted",  # the decay rate is not constant in L: not exponential
    "rd.marchenko_pastur": "pass",
}


@pytest.mark.parametrize("cid", sorted(EXPECTED))
def test_rd_check(cid, tmp_path):
    out = run_quick(cid, tmp_path=tmp_path)
    assert out.status == EXPECTED[cid], (out.error, out.details)
    assert out.negative_control_result == "failed as it should"
    assert out.positive_control_result == "held as it should"
    assert out.miss is not None and out.control_miss is not None and out.positive_miss is not None
    assert out.control_miss > 1 >= out.positive_miss
    if out.status == "refuted":
        assert out.finding and any(ch.isdigit() for ch in out.finding)


def test_structural_judges_each_component_and_reports_batchnorm(tmp_path):
    out = run_quick("rd.structural_impetus", tmp_path=tmp_path)
    lines = out.details["per component"]
    assert set(lines) == {"conv3x3", "fc", "bn", "ln", "in", "gn"}
    for k in ("conv3x3", "fc", "ln", "in", "gn"):
        assert "loses rank — as the paper says" in lines[k]
    assert "preserves rank — consistent with the paper" in lines["bn"] and "remission" in lines["bn"]
    assert "bn" in out.finding.lower() or "batchnorm" in out.finding.lower()


def test_centralization_reports_the_orthogonal_counterexample(tmp_path):
    out = run_quick("rd.general_centralization", tmp_path=tmp_path)
    assert "counterexample" in out.finding and "orthogonal" in out.finding.lower()
    key = [k for k in out.details if k.startswith("counterexample")][0]
    assert out.details[key] < 1e-10
    laws = {k.split(",")[0] for k in out.details["per law and size"]}
    assert {"gaussian", "rademacher", "uniform", "heavy_tailed", "cauchy", "sparse"} <= laws


def test_exponential_classifier_says_both_things():
    """The MLP-50 test on exact curves: an exponential is exponential, a power law is not."""
    L = np.array([1, 2, 3, 5, 7, 10, 15, 20, 25, 30, 40, 50], dtype=float)
    exp_curve = 1000 * 0.97 ** (L - 1)
    pow_curve = 1000 * L ** -0.6
    assert checks._exponential_test(L, exp_curve, 1000)[2] <= 1
    ratio, fall, miss, _ = checks._exponential_test(L, pow_curve, 1000)
    assert miss > 1 and ratio == pytest.approx(0.45, abs=0.1)
    assert checks._exponential_test(L, np.full_like(L, 1000.0), 1000)[2] == pytest.approx(2.0)  # flat: no fall


def test_decay_fit_on_planted_data():
    rng = np.random.default_rng(0)
    cp = np.arange(100, 2001, 100)
    assert checks._decay_fit(checks._diagonal_products(8, cp, 8, rng), cp)["miss"] <= 1
    flat = np.zeros((8, cp.size, 8)) + 1e-3 * rng.standard_normal((8, cp.size, 8))
    assert checks._decay_fit(flat, cp)["miss"] > 1
    dead = checks._diagonal_products(8, cp, 8, rng)
    dead[0, 10:, :] = -np.inf  # one trial's product annihilated half-way: the earlier depths still decide
    f = checks._decay_fit(dead, cp)
    assert f["miss"] <= 1 and f["annihilated trials"] == 1


@pytest.mark.parametrize("fid", ["rd.fig1_mlp50", "rd.fig3_structural", "rd.lyapunov_spectrum", "rd.marchenko_pastur"])
def test_rd_figures_draw(fid, tmp_path):
    from paper_figs import registry as figreg

    out = figreg.render(figreg.discover()[fid], tmp_path, quick=True)
    assert out["png"].stat().st_size > 10_000 and out["pdf"].exists()
