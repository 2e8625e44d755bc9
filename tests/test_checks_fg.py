"""The fg checks run through the registry in quick mode: status as found, negative controls fail, positive
controls hold, and the training checks say which verdict comes from which regime and horizon."""
import pytest

from tests.helpers import run_quick

PASS = ["fg.data_model", "fg.sgd_update", "fg.init_geometry"]  # the training checks and fg.linear_fails: reported
# (FG B.3's conditions cannot be met at these d: outside them a run is a finding, tests below)
TRAINING = ["fg.coarse_training", "fg.fine_training", "fg.growth_ratio", "fg.granularity_sweep"]


@pytest.mark.parametrize("cid", PASS)
def test_fg_checks_pass(cid, tmp_path):
    out = run_quick(cid, tmp_path=tmp_path)
    assert out.status == "pass", (out.error, out.measured, out.details)
    assert out.negative_control_result == "failed as it should"


def test_linear_fails_holds_outside_b3_and_is_reported(tmp_path):
    """FG's remark (a linear classifier errs Ω(1)) is made under App B.3's data assumptions; at d = 100, s = 3, k = 8
    they cannot hold (s ≥ log¹⁵ d): the run holds there and is reported as a finding in that regime, as the
    training checks on the same data model."""
    out = run_quick("fg.linear_fails", tmp_path=tmp_path)
    assert out.status == "reported" and out.miss <= 1, (out.status, out.error, out.measured)
    (cond,) = out.regime.values()
    assert not cond["holds"] and "s" in cond["measured"].split(": ", 1)[1].split(", ")
    assert "holds, but outside the paper's stated conditions" in out.finding
    assert out.negative_control_result == "failed as it should"


@pytest.mark.parametrize("cid", TRAINING)
def test_fg_training_checks_judge_every_horizon_and_name_the_regime(cid, tmp_path):
    out = run_quick(cid, tmp_path=tmp_path)
    assert out.status == "reported", (out.error, out.measured)  # outside B.3: neither a pass nor a refutation
    assert out.negative_control_result == "failed as it should"
    assert out.positive_control_result == "held as it should"
    (cond,) = out.regime.values()  # FG B.3's conditions, measured: several parameters outside at this d
    assert not cond["holds"] and "s" in cond["measured"].split(": ", 1)[1].split(", ")
    assert "outside the paper's stated conditions" in out.finding
    assert set(out.measured) == {"paper"} and len(out.measured["paper"]) == 3  # quick: the headline regime only
    verdict = out.details["verdict per regime"]
    assert any(k.startswith("paper (headline") for k in verdict)
    table = out.details["regime paper (headline)"]
    rows = {r["parameter"]: r["inside?"] for r in table}
    assert rows["α′ upper: s·ι_upper"] == "inside" and rows["big noise σ_ζ*√d"] == "inside"
    assert rows["patch-count law"] == "inside"
    if out.status == "reported":
        assert "outside the paper's stated conditions" in out.finding or "not settled" in out.finding


def test_fg_activation_scale_reads_every_d_at_one_t(tmp_path):
    out = run_quick("fg.activation_scale", tmp_path=tmp_path)
    assert out.status == "reported", (out.error, out.measured)  # outside B.3: neither a pass nor a refutation
    assert not next(iter(out.regime.values()))["holds"]
    assert out.negative_control_result == "failed as it should"
    assert out.positive_control_result == "held as it should"
    steps, ds, T_d = out.details["steps run"], out.details["d"], out.details["T(d)"]
    assert len(set(steps)) == 1 and len(ds) >= 3  # every d trained the same T: the fixed-T reading
    assert [t / d for t, d in zip(T_d, ds)] == [T_d[-1] / ds[-1]] * len(ds) and T_d[-1] == steps[-1]  # T(d) ∝ d
    assert "gamma SE" in out.measured and "common response (lucky) at the fixed T" in out.details
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


def test_a_sampler_bug_fails_the_training_checks_instead_of_becoming_a_finding(monkeypatch, tmp_path):
    """The big-noise patch's σ_ζ* divided by √d once more (σ_ζ* = ‖ζ*‖/d: a wrong normaliser in the sampler): every
    check reading the training runs fails, naming fg.data_model's comparison, before any run is read."""
    import math

    from sims.multiview.data import HierarchicalMultiView
    from verify.checks.fg import training as fg

    init = HierarchicalMultiView.__init__

    def planted(self, *a, **k):
        init(self, *a, **k)
        self.sigma_zeta_hard = self.sigma_zeta_hard / math.sqrt(self.d)

    monkeypatch.setattr(HierarchicalMultiView, "__init__", planted)
    monkeypatch.setattr(fg, "shared_sweep", lambda *a, **k: pytest.fail("the runs were read despite the sampler bug"))
    for cid in ("fg.coarse_training", "fg.activation_scale"):
        out = run_quick(cid, tmp_path=tmp_path)
        assert out.status == "fail" and "fg.data_model" in out.error, (cid, out.status, out.error)


def test_a_run_that_holds_outside_the_stated_conditions_says_so():
    """verify.verdicts.outside_regime, symmetric: outside a stated condition a run that holds becomes undecided (a
    finding that it held there, never a pass) and one that does not hold too (never a refutation); both name the
    condition. A second review found the old rule (a pass kept outside, a failure reported) could confirm a paper
    where it could never contradict it."""
    from verify.registry import Result
    from verify.verdicts import outside_regime

    reg = {"B.3": {"measured": "s = 3", "holds": False}}
    r = outside_regime(Result(measured=1, expected=1, holds=True, miss=0.5, regime=reg, finding="x"))
    assert r.undecided.startswith("holds, but outside the paper's stated conditions") and "s = 3" in r.undecided
    assert r.finding.startswith("Holds in a regime outside") and "s = 3" in r.finding
    assert r.finding.endswith(" x")
    r = outside_regime(Result(measured=1, expected=1, holds=False, miss=2.0, regime=reg))
    assert r.undecided.startswith("outside the paper's stated conditions") and "s = 3" in r.undecided
    inside = {"B.3": {"measured": "ok", "holds": True}}
    assert outside_regime(Result(measured=1, expected=1, holds=True, miss=0.5, regime=inside)).finding is None
