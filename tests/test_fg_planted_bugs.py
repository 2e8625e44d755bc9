"""Planted library bugs that an FG check must turn into status `fail` (issue 24 §5), not into a finding: each test
applies one realistic bug to the library and runs the check through the registry in quick mode."""
import math

import pytest

from tests.helpers import run_quick


def test_alpha_prime_upper_edge_s_times_too_large_fails_data_model(monkeypatch, tmp_path):
    import sims.multiview.regimes as regimes
    from theory import multiview as mv

    def wrong(d, s):  # 1/log d instead of 1/(s log d): the s forgotten in B.3 item 8
        out = mv.paper_regime(d, s)
        out["iota_upper"] = 1.0 / math.log(d)
        return out

    monkeypatch.setattr(regimes, "paper_regime", wrong)
    out = run_quick("fg.data_model", tmp_path=tmp_path)
    assert out.status == "fail", (out.status, out.details.get("exact properties"))
    assert out.details["exact properties"]["headline: s·ι_upper ≤ 1/log d (item 8)"] is False


def test_big_noise_below_log_d_fails_data_model(monkeypatch, tmp_path):
    import sims.multiview.regimes as regimes
    from theory import multiview as mv

    def wrong(d, s):  # ‖ζ*‖ = √(log d): below the initial threshold, Eq 117 no longer applies
        out = mv.paper_regime(d, s)
        out["hard_noise_norm"] = math.sqrt(math.log(d))
        return out

    monkeypatch.setattr(regimes, "paper_regime", wrong)
    out = run_quick("fg.data_model", tmp_path=tmp_path)
    assert out.status == "fail"


def test_binomial_counts_in_the_headline_fail_data_model(monkeypatch, tmp_path):
    import sims.multiview.regimes as regimes

    orig = regimes.regime_config

    def wrong(regime, d, s=3.0):
        out = orig(regime, d, s)
        if regime == "paper":
            out["counts"] = "binomial"
        return out

    monkeypatch.setattr(regimes, "regime_config", wrong)
    out = run_quick("fg.data_model", tmp_path=tmp_path)
    assert out.status == "fail"


def test_initial_bias_with_the_wrong_sign_fails_sgd_update(monkeypatch, tmp_path):
    import sims.multiview.learner as learner

    monkeypatch.setattr(learner, "bias_threshold", lambda c_b, d: -math.sqrt(c_b * math.log(d)))  # b⁽⁰⁾ = +σ₀τ
    out = run_quick("fg.sgd_update", tmp_path=tmp_path)
    assert out.status == "fail", (out.status, out.measured)
    assert max(c["initial bias error"] for c in out.details["cases"]) == pytest.approx(2.0, rel=1e-6)
