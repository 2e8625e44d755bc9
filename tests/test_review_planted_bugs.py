"""Library bugs planted in ND and VC that used to publish a wrong `refuted` (a positive control
that never ran the library said 'holds', the claim failed): a refutation without a finding is now a `fail`."""
import numpy as np

from tests.helpers import run_quick


def test_null_space_cutoff_raised_is_a_fail_not_a_refutation_of_sec_2_2(monkeypatch, tmp_path):
    import theory.dependency as dep

    monkeypatch.setattr(dep, "NULL_NOISE", 1e6)  # singular floors read as nonzero
    out = run_quick("nd.massive_categories", tmp_path=tmp_path)
    assert out.status == "fail", (out.status, out.finding)


def test_unbiased_within_class_scatter_is_a_fail_not_a_refutation_of_thm_5_1(monkeypatch, tmp_path):
    from theory.collapse import stats

    orig = stats.ClassStats.scaled

    def scaled(self):  # Σ_W divided by N − K instead of N
        M, Sw, e = orig(self)
        return M, Sw * self.n / (self.n - self.K), e

    monkeypatch.setattr(stats.ClassStats, "scaled", scaled)
    out = run_quick("vc.probe_loss", tmp_path=tmp_path)
    assert out.status == "fail", (out.status, out.finding)


def test_loose_pseudo_inverse_cutoff_is_a_fail_not_a_refutation_of_cor_5_4(monkeypatch, tmp_path):
    from theory.collapse import linalg

    init = linalg.Spectra.__init__

    def loose(self, st, rtol_t=None):  # Σ_T† cut at √ε instead of p·ε
        init(self, st, rtol_t=np.sqrt(np.finfo(float).eps) if rtol_t is None else rtol_t)

    monkeypatch.setattr(linalg.Spectra, "__init__", loose)
    out = run_quick("vc.vci_invariance", tmp_path=tmp_path)
    assert out.status == "fail", (out.status, out.finding)


def test_wrong_penalty_is_a_fail_of_the_regularizer_check(monkeypatch, tmp_path):
    """A regulariser on f_i² instead of f_i·f_j also drives θ_j to 0; the check pins the
    library's penalty against ND Sec 3.3's weight·|E[f_i f_j]| and fails on it."""
    import sims.dependency_training as dt

    monkeypatch.setattr(dt, "dependency_penalty", lambda out, pair, w: w * (out[:, pair[0]] ** 2).mean())
    monkeypatch.setenv("THEORYLAB_CACHE", str(tmp_path / "cache"))
    out = run_quick("nd.regularizer", tmp_path=tmp_path)
    assert out.status == "fail", (out.status, out.details.get(
        "the library's penalty against weight·|E[f_i f_j]| and its gradient (float64, ≤ 1e-12)"))


def test_sign_flipped_replaced_logit_is_a_fail_of_between_networks(monkeypatch, tmp_path):
    """Tab 1's metrics with the replaced logit's sign flipped: they used to be printed but never judged."""
    import theory.neural_dependency as nd

    orig = nd.replaced_logit_metrics

    def flipped(F, labels, i, theta, evaluated=None):
        return orig(F, labels, i, -np.asarray(theta, float), evaluated=evaluated)

    monkeypatch.setattr(nd, "replaced_logit_metrics", flipped)
    out = run_quick("nd.between_networks", tmp_path=tmp_path)
    assert out.status == "fail", (out.status, out.miss)
