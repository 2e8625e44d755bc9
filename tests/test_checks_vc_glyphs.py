"""vc.training_collapse and vc.transfer_correlation (verify/checks/vc/sec6_glyphs.py): the judges on made-up curves and
correlations, the positive controls through theory.collapse, and planted library bugs that must turn them to fail."""
import importlib

import numpy as np
import pytest

from tests.helpers import run_quick
from theory import collapse as vc
from verify import registry
from verify.checks.vc import sec6_glyphs as G

M = importlib.import_module("theory.collapse.metrics")


def test_trend_reads_a_decrease_with_one_inversion_and_rejects_flat_or_rising_curves():
    assert G.trend([1.0, 0.8, 0.6, 0.5])["holds"]
    assert G.trend([1.0, 0.7, 0.75, 0.5])["holds"]          # one adjacent inversion: ρ = −0.8
    assert not G.trend([1.0, 0.99, 0.985, 0.98])["holds"]   # monotone but a 2 % drop
    assert not G.trend([0.5, 0.6, 0.8, 1.0])["holds"]
    assert not G.trend([0.9, 1.0, 0.5, 0.6])["holds"]        # ρ = −0.6: two inversions


def _null(start, rel_drop, rng, n=20, sd=0.02, ep=4):
    """n curves over ep checkpoints falling by rel_drop from start, each point × (1 + sd·noise)."""
    base = start * (1 - rel_drop * np.arange(ep) / (ep - 1))
    return base[None, :] * (1 + sd * rng.normal(size=(n, ep)))


def test_fuzziness_decrease_must_beat_never_learned_labellings():
    """Fuzziness is judged raw (the paper's quantity: its trend) and its drop must reach the 95th percentile of the
    drops of the same features under random labellings: a fall that those labellings show too (the features'
    geometry) fails; a fall against a flat null passes; a raw rise fails even when the null rises faster (a ratio
    to the null would have passed it)."""
    rng = np.random.default_rng(0)
    fall = np.array([10.0, 8.0, 6.0, 4.0])
    curves = {sp: np.column_stack([fall, fall, fall, fall]) for sp in G.JUDGED_SPLITS}
    geometry = {"train": _null(30.0, 0.6, rng)}
    flat = {"train": _null(30.0, 0.0, rng)}
    assert G.judge_collapse(curves, slice(None))["fuzziness on train"]["holds"]  # raw alone: a pass
    fg = G.judge_collapse(curves, slice(None), null=geometry)["fuzziness on train"]
    assert not fg["holds"] and fg["null_quantile"] > 0.55
    ff = G.judge_collapse(curves, slice(None), null=flat)
    assert ff["fuzziness on train"]["holds"] and "null_quantile" not in ff["vci on train"]
    rise = {sp: np.column_stack([fall, fall[::-1] * 1.5, fall, fall]) for sp in G.JUDGED_SPLITS}
    assert not G.judge_collapse(rise, slice(None), null={"train": _null(30.0, -4.0, rng)})["fuzziness on train"][
        "holds"]


def test_the_null_is_read_at_the_readable_checkpoints_only():
    """With checkpoints masked as unreadable (the real-data path), the null is still applied, at the same
    checkpoints as the curve: a null that falls only between the readable checkpoints still blocks the pass."""
    rng = np.random.default_rng(1)
    fall = np.array([12.0, 10.0, 8.0, 6.0, 4.0])
    curves = {sp: np.column_stack([fall] * 4) for sp in G.JUDGED_SPLITS}
    readable = {sp: np.array([False, True, True, True, True]) for sp in G.JUDGED_SPLITS}
    null = {"train": np.column_stack([np.full(20, 99.0), _null(30.0, 0.6, rng)])}  # unreadable first column
    v = G.judge_collapse(curves, slice(None), readable, null)["fuzziness on train"]
    assert "null_quantile" in v and not v["holds"] and v["null_quantile"] > 0.55


def test_the_negative_control_fails_only_when_every_item_fails(monkeypatch):
    """The control reads the checkpoints newest first. Its Result holds when any judged item holds: here every
    metric falls over training except held-out VCI, which rises, so read backwards that item falls and the control
    "holds"; when every item falls, every item read backwards rises and the control fails, on data where the claim
    itself holds."""
    rng = np.random.default_rng(2)
    ep = np.array([0, 1, 2, 4, 8])
    fall = np.array([1.0, 0.9, 0.7, 0.5, 0.3])
    train = np.column_stack([fall, 50.0 * fall, fall, fall])  # vci, fuzziness, squared distance, cosine
    held = train.copy()
    held[:, 0] = fall[::-1]  # held-out VCI rises
    r = {"epochs": ep, "seconds": 1.0, "images_per_s": 1.0, "train/fuzziness_null": _null(50.0, 0.0, rng, ep=5),
         "train/fuzziness_null_fallback": np.zeros((20, 5), bool)}
    for sp, m in (("train", train), ("aug_test", held), ("face_test", held)):
        r.update({f"{sp}/metrics": m, f"{sp}/permuted": np.column_stack([fall * 0 + 1 + 0.01 * ep] * 4),
                  f"{sp}/accuracy": np.full(5, 0.9), f"{sp}/fuzziness_fallback": np.zeros(5, bool)})
    monkeypatch.setattr(G.ve, "collapse_curves", lambda *a, **k: r)
    ctl = G.training_collapse(_ctx("vc.training_collapse"), True)
    assert ctl.holds and ctl.miss <= 1
    held[:, 0] = fall  # every item falls: read newest first, every item rises and the control fails
    assert G.training_collapse(_ctx("vc.training_collapse"), False).holds
    assert not G.training_collapse(_ctx("vc.training_collapse"), True).holds


def test_glyph_fuzziness_is_tr_pinv_sigma_b_sigma_w():
    """ve.fuzziness (what the check reads) against a plain numpy Tr[Σ_B⁺Σ_W] (VC Eq 1–2, balanced classes), and
    against the squared distance it must not be confused with."""
    rng = np.random.default_rng(3)
    K, n, p = 6, 40, 8
    y = np.repeat(np.arange(K), n)
    H = 3.0 * rng.normal(size=(K, p))[y] + rng.normal(size=(K * n, p)) * rng.uniform(0.5, 2.0, p)
    mu = np.stack([H[y == k].mean(0) for k in range(K)])
    g = H.mean(0)
    Sb = (mu - g).T @ (mu - g) / K
    Sw = sum((H[y == k] - mu[k]).T @ (H[y == k] - mu[k]) for k in range(K)) / len(y)
    ref = float(np.trace(np.linalg.pinv(Sb) @ Sw))  # rank K − 1 = 5 < p: pinv keeps the top K − 1
    st = vc.ClassStats.from_features(H, y)
    got = G.ve.fuzziness(st)
    assert got == pytest.approx(ref, rel=1e-9)
    assert G.ve.collapse_metrics(H, y)["fuzziness"] == got != pytest.approx(vc.squared_distance(st), rel=0.1)


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
def test_the_controls_run_on_data_where_the_claim_holds(slope, monkeypatch):
    """Both controls replace the measured accuracies by ones built so that MLOG rises with VCI (the claim holds by
    construction, whatever the measured sign): the positive control holds there, and the negative control — the
    same data with one group's accuracies recorded as error rates — fails there, so it says something about the
    check rather than about the measured data."""
    vci = np.linspace(0.6, 0.7, 6)
    pts = {"tau": _points(vci, slope), "lambda": _points(vci, slope)}
    honest = {g: (np.asarray([p["metrics"] for p in pts[g]]), G.group_mlog(pts[g])) for g in pts}
    assert G.judge_transfer(honest)["holds"] == (slope > 0)
    built = G._constructed_groups(np.random.default_rng(0), honest)
    assert G.judge_transfer(built)["holds"]
    assert not G.judge_transfer(G._constructed_groups(np.random.default_rng(0), honest, "lambda"))["holds"]
    for g in pts:
        for p in pts[g]:
            p["seconds"] = 1.0
    monkeypatch.setattr(G.ve, "transfer_grid", lambda quick, seed, device: pts)
    monkeypatch.setattr(G, "p_pretrain_cross_check", lambda *a: {})  # made-up points: no network to read again
    ctx = _ctx("vc.transfer_correlation")
    assert not G.transfer_correlation(ctx, True).holds
    assert G.transfer_correlation(ctx, False, positive=True).holds


def test_a_negative_correlation_on_one_seed_is_reported_not_refuted(monkeypatch):
    """One seed cannot refute the transfer correlation (MLOG's seed-to-seed spread is as large as a group's range):
    trained networks whose VCI falls as MLOG rises in both groups give an ``undecided`` Result (reported), never a
    refutation, until the experiment has REFUTE_MIN_SEEDS seeds (a quick run has one; a full run has TRANSFER_SEEDS)."""
    assert G.TRANSFER_SEEDS >= G.REFUTE_MIN_SEEDS   # a full run can give a verdict
    vcis = np.linspace(0.3, 0.8, 6)
    pts = {g: [{"metrics": [v, 1.0, 1.0, 0.5], "p_pretrain": 0.9, "p_downstream": [0.9 - 0.1 * v] * 4,
                "seconds": 1.0} for v in vcis] for g in ("tau", "lambda")}
    monkeypatch.setattr(G.ve, "transfer_grid", lambda quick, seed, device: pts)
    monkeypatch.setattr(G, "p_pretrain_cross_check", lambda *a: {})  # made-up points: no network to read again
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
    monkeypatch.setattr(G, "p_pretrain_cross_check", lambda *a: {})  # made-up points: no network to read again
    monkeypatch.setattr(G, "group_mlog", lambda ps, flip=False: np.asarray([p["metrics"][0] for p in ps]))
    r = G.transfer_correlation(_ctx("vc.transfer_correlation"), False)
    assert r.holds and r.undecided and "needs ≥ 3 seeds" in r.undecided and r.finding is None



def test_intervention_reads_table2_cos_sim_as_a_similarity():
    """VC's λ group lowers the within-class cosine *similarity* (Table 2's "Cos Sim" = 1 − d̄_within falls ÷3.35):
    realised when 1 − d̄_within at least halves at unchanged accuracy; a group whose d̄_within falls instead (the
    similarity rises: the column read as Sec 3.2's distance) does not realise it, nor one whose accuracy drops."""
    def pts(d_first, d_last, acc_last=0.80):
        j = G.ve.METRICS.index("cosine_similarity")
        out = []
        for d, a in ((d_first, 0.80), (d_last, acc_last)):
            m = [0.5, 1.0, 1.0, 0.0]
            m[j] = d
            out.append({"metrics": m, "p_pretrain": a})
        return out

    (ok,) = G.intervention(pts(0.42, 0.83)).values()          # similarity 0.58 → 0.17, VC's Table 2
    assert ok["holds"], ok
    (wrong_way,) = G.intervention(pts(0.83, 0.42)).values()   # similarity rises
    assert not wrong_way["holds"]
    (untrained,) = G.intervention(pts(0.42, 0.83, acc_last=0.70)).values()
    assert not untrained["holds"]
    (weak,) = G.intervention(pts(0.066, 0.084)).values()      # similarity 0.934 → 0.916: ×0.98
    assert not weak["holds"] and "×0.98" in weak["measured"]


def test_a_refutation_outside_the_intervention_trains_no_sensitivity_grids(monkeypatch):
    """A negative r in both groups on every seed of a full run, with a λ group that does not realise VC's intervention
    (similarity ×0.98): a finding in that regime (the registry names the condition), and the regime-moved re-runs a
    refutation needs are not trained."""
    vcis = np.linspace(0.3, 0.8, 6)
    pts = {g: [{"metrics": [v, 1.0, 1.0, 0.066 + 0.0036 * i], "p_pretrain": 0.9, "p_downstream": [0.9 - 0.1 * v] * 4,
                "seconds": 1.0} for i, v in enumerate(vcis)] for g in ("tau", "lambda")}
    monkeypatch.setattr(G.ve, "transfer_grid", lambda quick, seed, device: pts)
    monkeypatch.setattr(G, "p_pretrain_cross_check", lambda *a: {})  # made-up points: no network to read again
    monkeypatch.setattr(G, "group_mlog", lambda ps, flip=False: -np.asarray([p["metrics"][0] for p in ps]))
    monkeypatch.setattr(G, "sensitivity", lambda *a, **k: pytest.fail("no sensitivity runs outside the regime"))
    r = G.transfer_correlation(registry.Context(check_id="vc.transfer_correlation", quick=False, seed=0), False)
    assert not r.holds and not all(c["holds"] for c in r.regime.values()) and "regime" in r.finding
    assert registry.outside_regime(r).undecided.startswith("outside the paper's stated conditions")


def test_the_glyph_setting_is_outside_vcs_stated_runs():
    """VC's Fig 7 claim is about its ResNet50 / ImageNet-1K runs (readings.toml: 'there exists'): the glyph LeNets
    are another setting, so even a realised intervention and a negative r on every seed give a finding, not a
    refutation; the condition is read from the configuration (a ResNet50 on ImageNet-1K would meet it)."""
    (cond,) = G.vc_setting(True).values()
    assert not cond["holds"] and "lenet" in cond["measured"]
    assert next(iter(G.vc_setting(True, "resnet50", "ImageNet-1K").values()))["holds"]
