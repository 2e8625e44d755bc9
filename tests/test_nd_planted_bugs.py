"""Planted library bugs that an ND check must turn into a failure (error floors on singular covariances
with uneven scales, and covariances formed as a user forms them): each test applies one
realistic bug to the library (monkeypatching the function the checks call) and runs the check through the
registry in quick mode. Failure: holds False, i.e. status `fail` (numeric checks) or `refuted` (sim checks)."""
import numpy as np
import pytest
import scipy.linalg as sla

from tests.helpers import run_quick
from theory import dependency as dep

EPS = np.finfo(float).eps
FAILED = ("fail",)  # a refutation without a finding is a fail (registry): no library bug may read as a finding


def _global_cutoff(K, null_tol, factor=1.0):
    """The earlier rounding cut-off: one level 10·m·ε·κ_r for every category's null-space row."""
    w, U, N, null_row, _ = _NULL_SPLIT(K, null_tol)
    m = K.shape[0]
    return w, U, N, null_row, np.full(m, factor * dep.NULL_NOISE * m * EPS * w.max() / w.min())


def _pivot_only(K):
    """The earliest zero-floor test: Cholesky whenever the smallest squared pivot is above m·ε (no trace(K⁻¹) test)."""
    m = K.shape[0]
    try:
        L = np.linalg.cholesky(K)
    except np.linalg.LinAlgError:
        return None
    if np.min(np.diag(L)) ** 2 <= m * EPS:
        return None
    Linv = sla.solve_triangular(L, np.eye(m), lower=True)
    return L, np.einsum("ki,ki->i", Linv, Linv)


_NULL_SPLIT = dep._null_split


@pytest.mark.parametrize("cid, bug", [
    ("nd.floor_closed_form", ("_null_split", _global_cutoff)),  # the earlier one-level cut-off
    ("nd.massive_categories", ("_null_split", _global_cutoff)),
    ("nd.relative_floor", ("NULL_NOISE", dep.NULL_NOISE * 1e4)),  # the rounding cut-off raised 10⁴×
    ("nd.relative_floor", ("_cholesky", _pivot_only)),  # the earliest, pivot-only test
], ids=["global_cutoff-floor", "global_cutoff-massive", "cutoff_x1e4-relative", "pivot_only-relative"])
def test_floor_regressions_fail_the_floor_checks(cid, bug, monkeypatch, tmp_path):
    """On singular Cov whose categories' scales and offsets differ by decades, logits that are exact
    combinations of the others (resolvably so: null component ≫ rounding) get nonzero floors, up to R ≈ 0.4."""
    monkeypatch.setattr(dep, *bug)
    out = run_quick(cid, tmp_path=tmp_path)
    assert out.status in FAILED, (cid, out.status, out.miss)


def test_pivot_only_cholesky_fails_massive_categories(monkeypatch, tmp_path):
    """A singular K (n = p + 1, logit scales over 6 decades) can factor with every squared pivot ≫ m·ε: nonzero
    floors where f_i is an exact combination of the others (the library's R is 0 exactly there). How large they are
    is rounding (1e-10 on one CPU, 8e-13 under other BLAS kernels), so the test asks only that they are not 0."""
    monkeypatch.setattr(dep, "_cholesky", _pivot_only)
    out = run_quick("nd.massive_categories", tmp_path=tmp_path)
    assert out.status in FAILED, (out.status, out.miss)
    assert max(v["max R"] for v in out.details["per n/p"].values() if "max R" in v) > 0.0


def _centred(F):
    """np.cov's normalisation by N and centring: E[(f − μ)(f − μ)ᵀ] instead of ND Remark 1's E[f fᵀ]."""
    f = np.asarray(F, dtype=float)
    g = f - f.mean(axis=0)
    return g.T @ g / f.shape[0]


def test_centred_second_moment_fails_the_floor_check(monkeypatch, tmp_path):
    """The checks form Cov from logits with ``second_moment``, as a user does: a centred one (the mistake the floor
    checks' negative control stands for) must show (measured: floors off by 4e12 tolerance units in quick mode)."""
    monkeypatch.setattr(dep, "second_moment", _centred)
    out = run_quick("nd.floor_closed_form", tmp_path=tmp_path)
    assert out.status in FAILED, (out.status, out.miss)


def _no_dependency(cov, i, lam=None, rho=None, **kw):
    theta = np.zeros(np.asarray(cov).shape[0])
    theta[i] = -1.0
    return theta


def _random_theta(cov, i, lam=None, rho=None, **kw):
    c = np.asarray(cov)
    d = np.sqrt(np.diag(c))
    rng = np.random.default_rng(i)
    theta = rng.standard_normal(c.shape[0]) * d[i] / d / c.shape[0] ** 0.5
    theta[i] = -1.0
    return theta


@pytest.mark.parametrize("theta", [_no_dependency, _random_theta], ids=["minus_e_i", "random"])
def test_thm1_fails_without_covlasso_theta(theta, monkeypatch, tmp_path):
    import theory.covlasso as cl
    from verify.checks.nd import covlasso as nd_covlasso

    monkeypatch.setattr(cl, "covlasso", theta)
    monkeypatch.setattr(nd_covlasso, "covlasso", theta)
    out = run_quick("nd.markov_bound", tmp_path=tmp_path)
    assert out.status in FAILED, (out.status, out.miss)
    assert out.details["Thm 1 claim (judged at N_fit = 100·n): max P(|f_i − Σθ_j f_j| ≥ ε)/δ"] > 1


def test_relative_lambda_without_the_factor_two_fails_lambda_max(monkeypatch, tmp_path):
    """A referee's plant: covlasso's ρ → λ conversion (resolve_lambda) with λ_max(i) = max|Cov₋ᵢ,ᵢ| (the factor 2
    lost). The 16 ND statuses did not move and only a unit test saw it; nd.lambda_max now also requires the
    library's relative-λ paths to leave −e_i at ρ = 1, where its own λ_max formula does."""
    import theory.covlasso as cl

    monkeypatch.setenv("THEORYLAB_CACHE", str(tmp_path / "cache"))
    real = cl.resolve_lambda

    def halved(cov, i, lam, rho):
        return real(cov, i, lam, rho) / 2.0 if rho is not None else real(cov, i, lam, rho)

    monkeypatch.setattr(cl, "resolve_lambda", halved)
    out = run_quick("nd.lambda_max", tmp_path=tmp_path)
    assert out.status == "fail", (out.status, out.miss)
    assert out.details["relative-λ paths (covlasso, covlasso_all with rho=) not leaving −e_i between ρ = 1 ± δ (tol 0)"]
