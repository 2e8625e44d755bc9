"""The RD checks in quick mode: statuses as measured (two refuted: findings) and negative controls that fail."""
import pytest

from tests.helpers import run_quick

EXPECTED = {
    "rd.numerical_rank_stable": "pass",
    "rd.partial_rank": "pass",
    "rd.monotone_depth": "pass",
    "rd.structural_impetus": "refuted",  # BatchNorm keeps full rank and PCA dimension
    "rd.lyapunov_law": "pass",
    "rd.gradient_explosion": "pass",
    "rd.general_centralization": "pass",
    "rd.mlp50_decay": "refuted",  # not exponential for both curves
    "rd.marchenko_pastur": "pass",
}


@pytest.mark.parametrize("cid", sorted(EXPECTED))
def test_rd_check(cid, tmp_path):
    out = run_quick(cid, tmp_path=tmp_path)
    assert out.status == EXPECTED[cid], (out.error, out.details)
    assert out.negative_control_result == "failed as it should"
    if out.status == "refuted":
        assert out.finding and any(ch.isdigit() for ch in out.finding)


def test_structural_finding_names_batchnorm(tmp_path):
    out = run_quick("rd.structural_impetus", tmp_path=tmp_path)
    assert out.measured["bn"] is False and "bn" in out.finding


@pytest.mark.parametrize("fid", ["rd.fig1_mlp50", "rd.fig3_structural", "rd.lyapunov_spectrum", "rd.marchenko_pastur"])
def test_rd_figures_draw(fid, tmp_path):
    from paper_figs import registry as figreg

    out = figreg.render(figreg.discover()[fid], tmp_path, quick=True)
    assert out["png"].stat().st_size > 10_000 and out["pdf"].exists()
