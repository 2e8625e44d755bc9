"""Planted library bugs that an FG check must turn into status `fail`, not into a finding about the paper: each test
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


def test_gradient_ascent_step_fails_sgd_update(monkeypatch, tmp_path):
    """The step must apply +ΔW of Eq 17: a sign slip in `step` (W −= ΔW) is a library bug, not a finding."""
    import torch

    import sims.multiview.learner as learner

    def ascent(self, X, y, eta):
        dW, F = self.eq17_delta(X, y, eta)
        self.W -= dW
        self.b -= torch.linalg.vector_norm(dW, dim=2) / self.log5
        return float(torch.nn.functional.cross_entropy(F, y))

    monkeypatch.setattr(learner.TwoLayerReLU, "step", ascent)
    out = run_quick("fg.sgd_update", tmp_path=tmp_path)
    assert out.status == "fail"
    assert max(c["applied step error"] for c in out.details["cases"]) == pytest.approx(2.0, rel=1e-9)


def test_hard_test_set_drawn_as_easy_is_refused_by_the_trainer():
    """A trainer that draws its hard test set with hard=False raises (B.1 item 6), so every training check
    that runs it is `fail`, not a refutation of Thm 5.1."""
    import torch

    from sims.multiview.data import HierarchicalMultiView
    from sims.multiview.train import train

    class EasyAsHard(HierarchicalMultiView):
        def sample(self, n, *, hard=False, **kw):
            return super().sample(n, hard=False, **kw)

    dm = EasyAsHard(16, 8, 2, 2, counts="exact")
    with pytest.raises(ValueError, match="item 6"):
        train(dm, labels="coarse", m=8, c_b=0.5, sigma0=0.01, eta=0.02, steps=2, batch=8, eval_every=1, n_test=8,
              generator=torch.Generator().manual_seed(0))


def test_mean_read_out_fails_sgd_update(monkeypatch, tmp_path):
    """Thm G.3 reads the fine network out by F̂_y = max_c F_{y,c}; a mean over the subclasses is a library bug."""
    import torch

    import sims.multiview.learner as learner
    import verify.checks.fg.model as fm

    def mean_readout(F, coarse_of_fine, n_coarse=2):
        return torch.stack([F[:, coarse_of_fine == y].mean(1) for y in range(n_coarse)], 1)

    monkeypatch.setattr(learner, "coarse_scores", mean_readout)
    monkeypatch.setattr(fm, "coarse_scores", mean_readout)
    out = run_quick("fg.sgd_update", tmp_path=tmp_path)
    assert out.status == "fail"


def test_ties_not_counted_fails_sgd_update(monkeypatch, tmp_path):
    import verify.checks.fg.model as fm

    monkeypatch.setattr(fm, "mistakes", lambda s, y: s.gather(1, y[:, None])[:, 0] < s.gather(1, (1 - y)[:, None])[:, 0])
    out = run_quick("fg.sgd_update", tmp_path=tmp_path)
    assert out.status == "fail"


def test_noise_norm_of_u_counted_once_per_class_fails_linear_fails(monkeypatch, tmp_path):
    """A reviewer's plant (P8): ‖u‖² = 2 + k in the closed form of the linear model's error (each class's k subclass
    features counted once for both classes), i.e. a noise variance 44 % low. At 512 samples per P the check could
    not see it (miss 0.89); with 4 096 at P = 256 (quick) the closed form misses the simulation."""
    import numpy as np

    from theory import multiview as mv

    def wrong(P, s, k, sigma_zeta, iota=0.0, planted=False):
        _, total = mv.patch_count_pmf(P, s)
        n = np.arange(P + 1, dtype=float)
        var = (1 if planted else P) * sigma_zeta ** 2 * (2 + k) + n * iota ** 2 / 3.0
        return float(total @ np.where(n > 0, mv.gaussian_tail(n / np.sqrt(var)), 0.5))

    monkeypatch.setattr(mv, "linear_error", wrong)
    out = run_quick("fg.linear_fails", tmp_path=tmp_path)
    assert out.status == "fail", (out.status, out.miss, out.measured, out.expected)
    assert "P = 256" in out.error and "is not the closed form" in out.error, out.error
