"""The fg checks run through the registry in quick mode: status as found, negative controls fail, positive
controls hold, and the training checks say which verdict comes from which regime and horizon."""
import pytest

from tests.helpers import run_quick

PASS = ["fg.data_model", "fg.sgd_update", "fg.init_geometry", "fg.linear_fails", "fg.growth_ratio",
        "fg.granularity_sweep", "fg.coarse_training"]
TRAINING = ["fg.coarse_training", "fg.fine_training", "fg.growth_ratio", "fg.granularity_sweep"]


@pytest.mark.parametrize("cid", PASS)
def test_fg_checks_pass(cid, tmp_path):
    out = run_quick(cid, tmp_path=tmp_path)
    assert out.status == "pass", (out.error, out.measured, out.details)
    assert out.negative_control_result == "failed as it should"


@pytest.mark.parametrize("cid", TRAINING)
def test_fg_training_checks_judge_every_horizon_and_name_the_regime(cid, tmp_path):
    out = run_quick(cid, tmp_path=tmp_path)
    assert out.status in ("pass", "refuted"), (out.error, out.measured)
    assert out.negative_control_result == "failed as it should"
    assert out.positive_control_result == "held as it should"
    assert set(out.measured) == {"paper"} and len(out.measured["paper"]) == 3  # quick: the headline regime only
    verdict = out.details["verdict per regime"]
    assert any(k.startswith("paper (headline") for k in verdict)
    table = out.details["regime paper (headline)"]
    rows = {r["parameter"]: r["inside?"] for r in table}
    assert rows["α′ upper: s·ι_upper"] == "inside" and rows["big noise σ_ζ*√d"] == "inside"
    if out.status == "refuted":
        assert "paper" in out.finding and "t =" in out.finding


def test_fg_activation_scale_reads_t_proportional_to_d(tmp_path):
    out = run_quick("fg.activation_scale", tmp_path=tmp_path)
    assert out.status in ("pass", "refuted"), (out.error, out.measured)
    assert out.negative_control_result == "failed as it should"
    assert out.positive_control_result == "held as it should"
    steps, ds = out.details["steps T(d)"], out.details["d"]
    assert [round(1.5 * d) for d in ds] == steps and len(ds) >= 3
    if out.status == "refuted":
        assert "log d" in out.finding and "ratio" in out.finding


def test_regime_table_renders_as_a_markdown_table():
    from verify.report import _md_details

    lines = _md_details({"regime x": [{"parameter": "d", "ours": 100, "inside?": "n/a"},
                                      {"parameter": "k", "ours": 8, "inside?": "OUTSIDE"}],
                         "rows": [{"a": 1}]})
    assert "  | parameter | ours | inside? |" in lines and "  | k | 8 | OUTSIDE |" in lines
    assert any(line.startswith("- rows: [") for line in lines)  # other lists of dicts keep their one-line form
