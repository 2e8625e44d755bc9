"""vc.training_collapse and vc.transfer_correlation (verify/checks/vc_glyphs.py): the judges on made-up curves and
correlations, the positive controls through theory.collapse, and planted library bugs that must turn them to fail."""
import importlib

import numpy as np
import pytest

from tests.helpers import run_quick
from theory import collapse as vc
from verify import registry
from verify.checks import vc_glyphs as G

M = importlib.import_module("theory.collapse.metrics")


def test_trend_reads_a_decrease_with_one_inversion_and_rejects_flat_or_rising_curves():
    assert G.trend([1.0, 0.8, 0.6, 0.5])["holds"]
    assert G.trend([1.0, 0.7, 0.75, 0.5])["holds"]          # one adjacent inversion: ρ = −0.8
    assert not G.trend([1.0, 0.99, 0.985, 0.98])["holds"]   # monotone but a 2 % drop
    assert not G.trend([0.5, 0.6, 0.8, 1.0])["holds"]
    assert not G.trend([0.9, 1.0, 0.5, 0.6])["holds"]        # ρ = −0.6: two inversions


def test_fuzziness_is_judged_as_the_labels_share_over_a_never_learned_labelling():
    """A raw fuzziness curve that falls exactly as fast as the same features' fuzziness under a random labelling (the
    features' geometry, not collapse) does not pass; one that falls against a flat baseline does. VCI stays raw."""
    ep = 4
    fall = np.array([10.0, 8.0, 6.0, 4.0])
    noise = np.array([1.0, 1.01, 0.99, 1.02])
    curves = {sp: np.column_stack([fall, fall, fall, fall]) for sp in G.JUDGED_SPLITS}
    geometry = {sp: np.column_stack([fall, fall * noise * 3, fall, fall]) for sp in G.JUDGED_SPLITS}
    flat = {sp: np.column_stack([fall, np.full(ep, 30.0) * noise, fall, fall]) for sp in G.JUDGED_SPLITS}
    raw = G.judge_collapse(curves, slice(None))
    assert raw["fuzziness on train"]["holds"]  # the raw reading passes whatever the baseline does
    assert not G.judge_collapse(curves, slice(None), baseline=geometry)["fuzziness on train"]["holds"]
    share = G.judge_collapse(curves, slice(None), baseline=flat)
    assert share["fuzziness on train"]["holds"] and share["vci on train"] == raw["vci on train"]


def test_r_crit_is_the_one_sided_five_percent_value():
    assert G.r_crit(6) == pytest.approx(0.729, abs=1e-3)
    assert G.r_crit(3) == pytest.approx(0.988, abs=1e-3)


def test_judge_transfer_needs_significant_positive_vci_r_in_both_groups():
    x = np.linspace(0.1, 0.6, 6)
    Mx = np.column_stack([x, -x, x ** 2, np.sin(x)])
    ok = G.judge_transfer({"tau": (Mx, 2 * x), "lambda": (Mx, 3 * x)})
    assert ok["holds"] and not ok["refuted"] and ok["miss"] <= 1
    neg = G.judge_transfer({"tau": (Mx, 2 * x), "lambda": (Mx, -3 * x)})
    assert not neg["holds"] and neg["refuted"]
    flat = G.judge_transfer({"tau": (Mx, 2 * x), "lambda": (Mx, np.array([0, 1, 0, 1, 0, 1.0]))})
    assert not flat["holds"] and not flat["refuted"]


def test_paper_table_gives_the_papers_signs():
    r = G.paper_correlations()
    assert r["tau"]["vci"] > 0.9 and r["lambda"]["vci"] > 0.9
    for m in ("fuzziness", "squared_distance", "cosine_similarity"):
        assert np.sign(r["tau"][m]) != np.sign(r["lambda"][m])


def _ctx(check_id):
    return registry.Context(check_id=check_id, quick=True, seed=0)


def test_collapse_positive_control_holds():
    r = G.training_collapse(_ctx("vc.training_collapse"), False, positive=True)
    assert r.holds and r.miss <= 1


def test_planted_vci_complement_breaks_the_collapse_positive_control(monkeypatch):
    orig = M.vci
    bad = lambda *a, **k: 1.0 - orig(*a, **k)  # noqa: E731
    monkeypatch.setattr(M, "vci", bad)
    monkeypatch.setattr(vc, "vci", bad)
    assert not G.training_collapse(_ctx("vc.training_collapse"), False, positive=True).holds


def test_planted_mlog_sign_breaks_the_transfer_positive_control(monkeypatch):
    rng = np.random.default_rng(0)
    Mx = np.column_stack([np.linspace(0.2, 0.7, 6), rng.random((6, 3))])
    groups = {"tau": (Mx, None), "lambda": (Mx[::-1], None)}
    assert G.judge_transfer(G._constructed_groups(np.random.default_rng(1), groups))["holds"]
    orig = vc.mlog
    monkeypatch.setattr(vc, "mlog", lambda d, p, percent=False: -orig(d, p, percent))
    assert not G.judge_transfer(G._constructed_groups(np.random.default_rng(1), groups))["holds"]


@pytest.mark.slow
@pytest.mark.parametrize("cid", ["vc.training_collapse", "vc.transfer_correlation"])
def test_quick_run_reports_with_its_controls(cid, tmp_path):
    out = run_quick(cid, tmp_path=tmp_path)
    assert out.status in ("pass", "reported", "refuted"), out.error
    assert out.negative_control_result == "failed as it should"
    assert out.positive_control_result == "held as it should"


@pytest.mark.slow
def test_planted_library_bug_turns_the_quick_collapse_verdict_to_fail(monkeypatch, tmp_path):
    orig = M.vci
    bad = lambda *a, **k: 1.0 - orig(*a, **k)  # noqa: E731
    monkeypatch.setattr(M, "vci", bad)
    monkeypatch.setattr(vc, "vci", bad)
    assert run_quick("vc.training_collapse", tmp_path=tmp_path).status == "fail"


def _points(vci, slope):
    """Networks whose MLOG is slope × VCI (p_pretrain 0.8, four equal downstream accuracies)."""
    pts = []
    for v in vci:
        lo = np.log(4) + slope * v
        pts.append({"metrics": np.array([v, 1.0, 1.0, 1.0]), "p_pretrain": 0.8,
                    "p_downstream": np.full(4, 1 / (1 + np.exp(-lo)))})
    return pts


@pytest.mark.parametrize("slope", [2.0, -2.0])
def test_negative_control_fails_whatever_the_true_sign(slope):
    vci = np.linspace(0.6, 0.7, 6)
    pts = {"tau": _points(vci, slope), "lambda": _points(vci, slope)}
    groups = {g: (np.asarray([p["metrics"] for p in pts[g]]), G.group_mlog(pts[g], flip=g == "lambda")) for g in pts}
    assert not G.judge_transfer(groups)["holds"]
    honest = {g: (np.asarray([p["metrics"] for p in pts[g]]), G.group_mlog(pts[g])) for g in pts}
    assert G.judge_transfer(honest)["holds"] == (slope > 0)


def test_a_negative_correlation_on_one_seed_is_reported_not_refuted(monkeypatch):
    """One seed cannot refute the transfer correlation (MLOG's seed-to-seed spread is as large as a group's range):
    trained networks whose VCI falls as MLOG rises in both groups give an ``undecided`` Result (reported), never a
    refutation, until the experiment has REFUTE_MIN_SEEDS seeds."""
    assert G.TRANSFER_SEEDS < G.REFUTE_MIN_SEEDS
    vcis = np.linspace(0.3, 0.8, 6)
    pts = {g: [{"metrics": [v, 1.0, 1.0, 0.5], "p_pretrain": 0.9, "p_downstream": [0.9 - 0.1 * v] * 4,
                "seconds": 1.0} for v in vcis] for g in ("tau", "lambda")}
    monkeypatch.setattr(G.ve, "transfer_grid", lambda quick, seed, device: pts)
    monkeypatch.setattr(G, "group_mlog", lambda ps, flip=False: -np.asarray([p["metrics"][0] for p in ps]))
    monkeypatch.setattr(G, "sensitivity", lambda *a, **k: pytest.fail("no sensitivity runs without a refutation"))
    r = G.transfer_correlation(_ctx("vc.transfer_correlation"), False)
    assert not r.holds and r.undecided and "needs ≥ 3 seeds" in r.undecided and r.finding is None


def test_a_positive_correlation_on_one_seed_is_reported_not_a_pass(monkeypatch):
    """The rule both ways: one seed cannot pass the transfer correlation either — trained networks whose VCI rises
    with MLOG in both groups give an ``undecided`` Result (reported), not a pass."""
    vcis = np.linspace(0.3, 0.8, 6)
    pts = {g: [{"metrics": [v, 1.0, 1.0, 0.5], "p_pretrain": 0.9, "p_downstream": [0.5 + 0.1 * v] * 4,
                "seconds": 1.0} for v in vcis] for g in ("tau", "lambda")}
    monkeypatch.setattr(G.ve, "transfer_grid", lambda quick, seed, device: pts)
    monkeypatch.setattr(G, "group_mlog", lambda ps, flip=False: np.asarray([p["metrics"][0] for p in ps]))
    r = G.transfer_correlation(_ctx("vc.transfer_correlation"), False)
    assert r.holds and r.undecided and "needs ≥ 3 seeds" in r.undecided and r.finding is None

