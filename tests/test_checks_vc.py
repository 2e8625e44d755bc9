"""Every VC check passes in quick mode and its negative control fails."""
import pytest

from tests.helpers import run_quick

VC_CHECKS = ["vc.decomposition", "vc.probe_loss", "vc.trace_bound", "vc.vci_invariance",
             "vc.fuzziness_counterexample", "vc.metric_invariances", "vc.collapse_not_needed",
             "vc.numerical_stability", "vc.vb_projection", "vc.paper_tables"]


@pytest.mark.parametrize("cid", VC_CHECKS)
def test_vc_check(cid, tmp_path):
    out = run_quick(cid, tmp_path=tmp_path)
    assert out.status == "pass", (out.error, out.details)
    assert out.negative_control_result == "failed as it should"


def test_trace_bound_reports_rank_additivity(tmp_path):
    out = run_quick("vc.trace_bound", tmp_path=tmp_path)
    assert out.details["draws where 'equality ⇔ rank Σ_B + rank Σ_W = rank Σ_T' fails"] == 0
    assert out.details["draws with Σ_W ≠ 0 attaining equality"] > 0


def test_symbolic_statements():
    from theory.symbolic import vc as sym

    assert all(e == 0 for e in sym.decomposition_residual(2, 2, 2))
    assert not all(e == 0 for e in sym.decomposition_residual(2, 2, 2, planted=True))
    assert sym.trace_identity_residual(2) == 0 and sym.trace_identity_residual(2, planted=True) != 0
    assert sym.rank_additive_equality() == 0 and sym.rank_additive_equality(planted=True) != 0
    ex = sym.fuzziness_counterexample()
    assert (ex["before"], ex["after"], ex["after_via_claimed_identity"]) == (1, 2, 1)
    assert ex["claimed_pinv"].tolist() == [[1, -1], [-1, 1]] and ex["true_pinv"].tolist() == [[1, 0], [0, 0]]


def test_vc_figures_render(tmp_path):
    from paper_figs import registry as figreg

    figs = figreg.discover()
    for fid in ("vc.fig7_tables", "vc.fig2_spectra", "vc.training_metrics"):
        assert fid in figs
    out = figreg.render(figs["vc.fig7_tables"], tmp_path, quick=True)
    assert out["png"].stat().st_size > 10_000 and out["pdf"].exists()


def test_training_sim_smoke():
    import numpy as np

    from sims.collapse_training import train_run

    r = train_run("digits", epochs=2, record_every=1, quick=True)
    assert list(r["epoch"]) == [0, 1, 2]
    for k in ("train__vci", "test__vci", "train__fuzziness", "test__cosine_similarity", "train__within_vb_perp"):
        assert np.all(np.isfinite(r[k]))
    assert np.all((r["train__vci"] >= -1e-12) & (r["train__vci"] <= 1 + 1e-12))
    assert r["train__accuracy"][-1] > 0.5
