"""Every VC check passes in quick mode, its negative control fails, its positive control holds, and every result
carries a miss in tolerance units."""
import math

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
    assert out.positive_control_result == "held as it should"
    assert out.miss is not None and out.miss <= 1
    assert out.positive_miss is not None and out.positive_miss <= 1
    assert out.control_miss is not None and out.control_miss > 1


def test_controls_stand_for_subtle_bugs(tmp_path):
    """The numeric controls that replaced strawmen miss by a modest factor (the bug is subtle, not gross)."""
    for cid, hi in (("vc.decomposition", 1e5), ("vc.collapse_not_needed", 1e6), ("vc.numerical_stability", 1e6),
                    ("vc.paper_tables", 100)):
        out = run_quick(cid, tmp_path=tmp_path)
        assert 1 < out.control_miss < hi, (cid, out.control_miss)


def test_trace_bound_control_needs_the_equality_case(tmp_path):
    """N−1 in Σ_T only shrinks the trace: the inequality half passes, the equality half catches it."""
    from verify import registry
    from verify.checks.vc import sec5_probe as checks

    ctx = registry.Context(check_id="vc.trace_bound", quick=True)
    planted = checks.trace_bound(ctx, True)
    assert planted.details["inequality half: max (Tr − rank)/rank (tolerance units)"] <= 1
    assert planted.details["equality half: worst |Tr − rank|/rank at equality cases (tolerance units)"] > 1e6
    assert math.isinf(planted.miss)  # the sympy identity with n/(n−1) fails exactly


def test_trace_bound_reports_rank_additivity(tmp_path):
    out = run_quick("vc.trace_bound", tmp_path=tmp_path)
    assert out.details["draws where 'equality ⇔ rank Σ_B + rank Σ_W = rank Σ_T' fails"] == 0
    assert out.details["draws with Σ_W ≠ 0 attaining equality"] > 0


def test_paper_tables_sign_half_is_exercised(tmp_path):
    """The planted misalignment leaves the MLOG recomputation intact: the control fails on the correlations."""
    from verify import registry
    from verify.checks.vc import appc_tables as vc_tables

    ctx = registry.Context(check_id="vc.paper_tables", quick=True)
    planted = vc_tables.paper_tables(ctx, True)
    ok = vc_tables.paper_tables(ctx, False)
    assert planted.details["MLOG max |error|"] == ok.details["MLOG max |error|"]
    assert max(planted.details["VCI misses (1 − r)/(1 − r_c)"].values()) > 1
    assert ok.finding and "not significant" in ok.finding


def test_obs42_no_erratum_and_identity(tmp_path):
    from verify import registry

    chk = registry.discover()["vc.fuzziness_counterexample"]
    assert chk.erratum is None  # the identity is only used inside the observation's hypothesis
    out = run_quick("vc.fuzziness_counterexample", tmp_path=tmp_path)
    assert all(out.details["identity (UΣ_BUᵀ)† = U⁻ᵀΣ_B†U⁻¹ as Penrose conditions (sympy)"].values())
    assert out.details["identity for U keeping V_B but mixing V_B⊥ into it (sympy, r=1 p=2)"] == "fails"


def test_symbolic_statements():
    from theory.symbolic import vc as sym

    assert all(e == 0 for e in sym.decomposition_residual(2, 2, 2))
    assert not all(e == 0 for e in sym.decomposition_residual(2, 2, 2, planted=True))
    assert all(e == 0 for e in sym.decomposition_residual(2, 2, 2, raw_moments=True))  # exact in algebra
    assert sym.trace_identity_residual(2) == 0 and sym.trace_identity_residual(2, planted=True) != 0
    assert sym.rank_additive_equality() == 0 and sym.rank_additive_equality(planted=True) != 0
    ex = sym.fuzziness_counterexample()
    assert (ex["before"], ex["after"], ex["after_via_claimed_identity"]) == (1, 2, 1)
    assert ex["claimed_pinv"].tolist() == [[1, -1], [-1, 1]] and ex["true_pinv"].tolist() == [[1, 0], [0, 0]]
    assert sym.obs42_identity_holds(1, 2, "none") and sym.obs42_identity_holds(1, 3, "none")
    assert not sym.obs42_identity_holds(1, 2, "upper") and not sym.obs42_identity_holds(1, 3, "lower")


@pytest.mark.parametrize("call, match", [
    (lambda s: s.decomposition_residual(2, 2, 9), "p: must be an integer"),
    (lambda s: s.decomposition_residual(2.5, 2, 2), "K: must be an integer"),
    (lambda s: s.trace_identity_residual(7), "p: must be an integer"),
    (lambda s: s.obs42_identity(2, 2), "proper subspace"),
    (lambda s: s.obs42_identity(1, 2, "sideways"), "coupling"),
    (lambda s: s.fuzziness_counterexample([[1, 1], [1, 1]]), "invertible"),
])
def test_symbolic_bad_sizes(call, match):
    from theory.symbolic import vc as sym

    with pytest.raises(ValueError, match=match):
        call(sym)


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


def test_symbolic_helpers_validate():
    import sympy as sp

    from theory.symbolic import vc as sym

    with pytest.raises(ValueError, match="p: must be an integer"):
        sym.generic_symmetric(0, "a")
    with pytest.raises(ValueError, match="square matrices"):
        sym.penrose_residuals(sp.eye(2), sp.eye(3))
    assert all(sym.vanishes(e) for R in sym.penrose_residuals(sp.eye(2), sp.eye(2)).values() for e in R)
