"""The fg checks run through the registry in quick mode: status as found, negative controls fail."""
import pytest

from tests.helpers import run_quick

PASS = ["fg.data_model", "fg.sgd_update", "fg.init_geometry", "fg.coarse_training", "fg.fine_training",
        "fg.growth_ratio", "fg.linear_fails", "fg.granularity_sweep"]


@pytest.mark.parametrize("cid", PASS)
def test_fg_checks_pass(cid, tmp_path):
    out = run_quick(cid, tmp_path=tmp_path)
    assert out.status == "pass", (out.error, out.measured, out.details)
    assert out.negative_control_result == "failed as it should"


def test_fg_activation_scale_is_refuted_with_a_finding(tmp_path):
    out = run_quick("fg.activation_scale", tmp_path=tmp_path)
    assert out.status == "refuted", (out.error, out.measured)
    assert out.negative_control_result == "failed as it should"
    assert "log d" in out.finding and "ratio" in out.finding
