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
    assert out.status in ("pass", "refuted", "reported"), (out.error, out.measured)
    assert out.negative_control_result == "failed as it should"
    assert out.positive_control_result == "held as it should"
    assert set(out.measured) == {"paper"} and len(out.measured["paper"]) == 3  # quick: the headline regime only
    verdict = out.details["verdict per regime"]
    assert any(k.startswith("paper (headline") for k in verdict)
    table = out.details["regime paper (headline)"]
    rows = {r["parameter"]: r["inside?"] for r in table}
    assert rows["α′ upper: s·ι_upper"] == "inside" and rows["big noise σ_ζ*√d"] == "inside"
    assert rows["patch-count law"] == "inside"
    if out.status == "refuted":
        assert "paper" in out.finding and "t =" in out.finding


def test_fg_activation_scale_reads_every_d_at_one_t(tmp_path):
    out = run_quick("fg.activation_scale", tmp_path=tmp_path)
    assert out.status in ("pass", "refuted", "reported"), (out.error, out.measured)
    assert out.negative_control_result == "failed as it should"
    assert out.positive_control_result == "held as it should"
    steps, ds, T_d = out.details["steps run"], out.details["d"], out.details["T(d)"]
    assert len(set(steps)) == 1 and len(ds) >= 3  # every d trained the same T: the fixed-T reading
    assert [t / d for t, d in zip(T_d, ds)] == [T_d[-1] / ds[-1]] * len(ds) and T_d[-1] == steps[-1]  # T(d) ∝ d
    assert "gamma SE" in out.measured and "common response (lucky) at the fixed T" in out.details
    if out.status == "refuted":
        assert "log d" in out.finding and "ratio" in out.finding
    if out.status == "reported":
        assert "No verdict" in out.finding or "held for" in out.finding


def test_fg_training_checks_state_settling_and_t0(tmp_path):
    out = run_quick("fg.fine_training", tmp_path=tmp_path)
    se = out.details["settling (headline, last 20 % of the run)"]
    assert se["window"][1] == 1000 and se["window"][0] >= 800 and "drift" in se
    t0 = out.details["T₀ per regime (first reading with fine train loss ≤ 0.05)"]["paper"]
    judged = out.details["miss per regime and horizon"]["paper"]
    assert t0 is not None and all(t >= t0 for t in judged)  # no horizon before T₀ is judged
    assert out.details["sensitivity"] == "full mode only"


def test_undecided_result_is_reported_not_a_verdict(monkeypatch, tmp_path):
    """A judged quantity that has not settled gives no verdict: the registry turns it into `reported`."""
    from verify.checks.fg import training as fg

    monkeypatch.setitem(fg.SETTLE_TOL, "error", -1.0)  # nothing can settle within a negative tolerance
    out = run_quick("fg.coarse_training", tmp_path=tmp_path)
    assert out.status == "reported" and "not settled" in out.finding, (out.status, out.finding)


def test_regime_table_renders_as_a_markdown_table():
    from verify.report import _md_details

    lines = _md_details({"regime x": [{"parameter": "d", "ours": 100, "inside?": "n/a"},
                                      {"parameter": "k", "ours": 8, "inside?": "OUTSIDE"}],
                         "rows": [{"a": 1}]})
    assert "  | parameter | ours | inside? |" in lines and "  | k | 8 | OUTSIDE |" in lines
    assert any(line.startswith("- rows: [") for line in lines)  # other lists of dicts keep their one-line form
