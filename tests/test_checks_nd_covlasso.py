"""The CovLasso-based ND checks in quick mode: status and negative controls; the figures draw."""
import json

import pytest

from tests.helpers import run_quick

PASSING = ["nd.markov_bound", "nd.error_path_monotone", "nd.kkt_sparsity", "nd.slope_bound", "nd.screening_rule",
           "nd.massive_categories", "nd.between_networks"]


@pytest.mark.parametrize("cid", PASSING)
def test_nd_covlasso_checks_pass(cid, tmp_path):
    out = run_quick(cid, tmp_path=tmp_path)
    assert out.status == "pass", (out.error, out.details)
    assert out.negative_control_result == "failed as it should"


def test_conjecture1_is_reported_with_a_saved_counterexample(tmp_path):
    out = run_quick("nd.conjecture1", tmp_path=tmp_path)
    assert out.status == "reported", (out.error, out.details)
    assert out.negative_control_result == "failed as it should"
    assert 0 < out.measured < 0.2  # seldom wrong, but wrong
    rec = json.loads((tmp_path / out.artifacts[0]).read_text())
    assert rec["|Cov_ij|"] < rec["lambda/2"] and rec["theta"][rec["j"]] != 0
    assert rec["kkt violation"] <= 1e-9


def test_markov_erratum_is_recorded():
    from verify import registry

    chk = registry.discover()["nd.markov_bound"]
    assert chk.erratum and "ε²" in chk.erratum


@pytest.mark.parametrize("fid", ["nd.error_path", "nd.fig3_cov_vs_theta", "nd.fig4_graph", "nd.massive_floors"])
def test_nd_covlasso_figures_draw(fid, tmp_path):
    from paper_figs import registry as figreg

    out = figreg.render(figreg.discover()[fid], tmp_path, quick=True)
    assert out["png"].stat().st_size > 10_000 and out["pdf"].exists()
