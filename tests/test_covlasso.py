"""The exact CovLasso homotopy (ND Eq 2, Eq 6): KKT, reference CD, scikit-learn cross-check, bad input.

Mapping to scikit-learn (stated once, used below). sklearn's ``Lasso`` minimises
(1/2N)‖y − Xβ‖² + α‖β‖₁; its optimality condition (gradient plus subgradient) is

    (1/N)Xᵀ(y − Xβ) = α s,  s ∈ ∂‖β‖₁,   i.e.   c − Gβ = α s  with  c = Xᵀy/N, G = XᵀX/N.

CovLasso Eq 6, min θ̂ᵀĈovθ̂ − 2b̂ᵀθ̂ + λ‖θ̂‖₁, has 2Ĉovθ̂ − 2b̂ + λs = 0 (Eq 7), i.e. b̂ − Ĉovθ̂ = (λ/2)s.
With the raw logits F (N × n), y = F[:, i], X = F[:, −i] and the uncentred second moment Cov = FᵀF/N
(ND Eq 2's Cov = E[f fᵀ]), G = Ĉov and c = b̂, so the two problems coincide for λ = 2α, with
θ̂ = β (θ_i = −1: θᵀf = −f_i + Σ_j θ_j f_j). ``lars_path_gram(Xy=b̂, Gram=Ĉov, n_samples=1)`` then
returns the breakpoints α_k = λ_k/2 of the same path.
"""
import warnings

import numpy as np
import pytest

from sims.spd import gram, lowrank_logits, spd_with_condition
from theory import covlasso as cl
from theory import dependency as dep
from theory._homotopy import _homotopy
from theory.covlasso import covlasso, covlasso_all, covlasso_cd, covlasso_path, kkt_violation


def _lmax(c, i):
    return 2 * np.abs(np.delete(c[:, i], i)).max()


def _problem(rng, trial):
    n = int(rng.integers(3, 30))
    N = int(rng.integers(2 * n, 6 * n)) + 10
    if trial % 2:  # low-rank-plus-noise logits, like a real classifier's
        F = lowrank_logits(N, n, max(1, n // 4), 10 ** rng.uniform(-2.5, -0.5), rng)
    else:
        F = rng.standard_normal((N, n)) @ rng.standard_normal((n, n))
    return F, gram(F)


def test_matches_sklearn_lasso_and_lars_path_gram():
    sk = pytest.importorskip("sklearn.linear_model")
    rng = np.random.default_rng(1)
    for trial in range(56):
        F, C = _problem(rng, trial)
        n = C.shape[0]
        i = int(rng.integers(n))
        rest = np.delete(np.arange(n), i)
        lam = _lmax(C, i) * rng.uniform(0.02, 0.8)
        th = covlasso(C, i, lam)
        assert th[i] == -1.0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            beta = sk.Lasso(alpha=lam / 2, fit_intercept=False, tol=1e-10, max_iter=10**6).fit(F[:, rest], F[:, i]).coef_
        scale = np.abs(th[rest]).max()
        assert np.abs(beta - th[rest]).max() <= 1e-7 * scale, trial
        assert np.array_equal(beta != 0, th[rest] != 0), trial
        # the exact path: sklearn's breakpoints α_k = λ_k/2 and coefficients there
        alphas, _, coefs = sk.lars_path_gram(C[rest, i], C[np.ix_(rest, rest)], n_samples=1, method="lasso")
        p = covlasso_path(C, i)
        m = len(alphas)  # sklearn may stop a few breakpoints before λ = 0
        assert len(p.breakpoints) >= m
        np.testing.assert_allclose(p.breakpoints[:m], 2 * alphas, rtol=1e-8, atol=1e-12 * _lmax(C, i))
        assert np.abs(p.coefs[:m][:, rest] - coefs.T).max() <= 1e-7 * max(np.abs(coefs).max(), 1e-300)


def test_kkt_exact_on_ill_conditioned_lowrank_and_minus_e_i():
    rng = np.random.default_rng(2)
    for trial in range(40):
        n = int(rng.integers(2, 40))
        if trial % 3 == 0:
            c = spd_with_condition(n, 10 ** rng.uniform(0, 6), rng)
        else:
            c = gram(lowrank_logits(2 * n + 3, n, max(1, n // 5), 10 ** rng.uniform(-4, -1), rng))
        i = int(rng.integers(n))
        lm = _lmax(c, i)
        for rho in (0.0, 1e-3, 0.1, 0.5, 0.999):
            th = covlasso(c, i, rho=rho)
            assert th[i] == -1.0
            assert kkt_violation(c, i, rho * lm, th) <= 1e-9
        # λ ≥ λ_max: exactly −e_i (A47), and θ_i stays −1 on every early return
        e = np.zeros(n)
        e[i] = -1.0
        assert np.array_equal(covlasso(c, i, lm), e)
        assert np.array_equal(covlasso(c, i, rho=3.0), e)
        assert np.array_equal(covlasso_all(c, rho=1.0), -np.eye(n))


def test_agrees_with_reference_cd_and_floor():
    rng = np.random.default_rng(3)
    for _ in range(15):
        n = int(rng.integers(2, 12))
        c = spd_with_condition(n, 10 ** rng.uniform(0, 2.5), rng)
        i = int(rng.integers(n))
        for rho in (0.05, 0.4):
            lam = rho * _lmax(c, i)
            a, b = covlasso(c, i, lam), covlasso_cd(c, i, lam)
            assert np.abs(a - b).max() <= 1e-8 * (1 + np.abs(b).max())
            assert np.array_equal(a != 0, b != 0)
        # λ = 0: θ*(0) = −Cov⁻¹e_i/(Cov⁻¹)_ii (ND A28)
        np.testing.assert_allclose(covlasso(c, i, 0.0), dep.theta_floor(c, i), rtol=1e-8, atol=1e-10)


def test_all_equals_per_category_and_path_interpolation():
    rng = np.random.default_rng(4)
    c = gram(lowrank_logits(200, 40, 8, 1e-2, rng))
    A = covlasso_all(c, rho=0.2)
    for i in range(0, 40, 7):
        np.testing.assert_array_equal(A[i], covlasso(c, i, rho=0.2))
    # a sequence of ρ: the same rows as one call per ρ, bit for bit (the same homotopy on the same scaled Cov)
    stack = covlasso_all(c, rho=[0.5, 0.2, 0.02])
    assert stack.shape == (3, 40, 40)
    for k, r in enumerate([0.5, 0.2, 0.02]):
        np.testing.assert_array_equal(stack[k], covlasso_all(c, rho=r))
    np.testing.assert_array_equal(covlasso_all(c, rho=np.array([0.2])), A[None])
    with pytest.raises(ValueError, match="rho"):
        covlasso_all(c, rho=[0.2, -1.0])
    lam = 0.3
    Al = covlasso_all(c, lam)
    assert np.all(np.diag(Al) == -1.0)
    i = 5
    p = covlasso_path(c, i, lams=[lam, 0.05])
    assert p.breakpoints[0] == pytest.approx(_lmax(c, i)) and np.all(np.diff(p.breakpoints) <= 0)
    assert np.all(p.coefs[:, i] == -1.0) and np.array_equal(p.coefs[0], -np.eye(40)[i])
    np.testing.assert_allclose(p.thetas[0], Al[i], rtol=1e-9, atol=1e-12)
    # any λ between breakpoints is read off exactly: compare with a direct solve there
    mid = 0.5 * (p.breakpoints[3] + p.breakpoints[4])
    np.testing.assert_allclose(p.at(mid), covlasso(c, i, mid), rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="computed down to"):
        p.at(0.01)


def test_singular_cov_massive_categories():
    rng = np.random.default_rng(5)
    F = lowrank_logits(300, 30, 6, 0.0, rng)  # n = 30 > p = 6: rank-6 Cov (ND Sec 2.2)
    c = gram(F)
    th = covlasso(c, 0, rho=1e-6)
    assert th[0] == -1.0 and np.count_nonzero(th) - 1 <= 6
    assert dep.prediction_error(c, th) <= 1e-8 * c[0, 0]
    assert kkt_violation(c, 0, 1e-6 * _lmax(c, 0), th) <= 1e-9


def test_bad_input():
    c = spd_with_condition(5, 10, np.random.default_rng(0))
    with pytest.raises(ValueError, match="lam"):
        covlasso(c, 0, -1.0)
    with pytest.raises(ValueError, match="rho"):
        covlasso(c, 0, rho=-0.1)
    with pytest.raises(ValueError, match="exactly one"):
        covlasso(c, 0, 1.0, rho=0.5)
    with pytest.raises(ValueError, match="out of range"):
        covlasso(c, 5, 1.0)
    with pytest.raises(ValueError, match="out of range"):
        covlasso_path(c, -1)
    bad = c.copy()
    bad[0, 0] = -1.0
    with pytest.raises(ValueError, match="PSD"):
        covlasso(bad, 1, 0.1)
    with pytest.raises(ValueError, match="PSD"):
        covlasso(np.diag([1.0, -1.0, 1.0]), 0, 0.1)
    with pytest.raises(ValueError, match="at least 2"):
        covlasso(np.ones((1, 1)), 0, 0.1)
    nan = c.copy()
    nan[2, 3] = nan[3, 2] = np.nan
    with pytest.raises(ValueError, match="column 3"):
        covlasso_all(nan, 0.1)
    with pytest.raises(ValueError, match="lams"):
        covlasso_path(c, 0, lams=[-1.0])


# ---------------------------------------------------------------------------------------------- dependencies()
def test_dependencies_cov_and_logits_and_between_networks():
    from sims.nd_models import massive_category_logits, two_networks
    from theory.neural_dependency import dependencies, mixed_cov, mixed_logits

    rng = np.random.default_rng(6)
    F, y, _ = massive_category_logits(3000, 40, 25, rng, noise=0.05)
    c = gram(F)
    d = dependencies(c, 3, rho=0.1)
    d2 = dependencies(F, 3, rho=0.1, labels=y)
    rest = np.delete(np.arange(40), 3)
    assert d.theta[3] == -1.0 and np.array_equal(d.support, rest[d.theta[rest] != 0]) and d.support.size > 0
    np.testing.assert_array_equal(d.coefficients, d.theta[d.support])
    np.testing.assert_allclose(d2.theta, d.theta, rtol=1e-9, atol=1e-12)
    assert d.err == pytest.approx(d.theta @ c @ d.theta) and d.rel_err == pytest.approx(d.err / c[3, 3])
    assert d.floor <= d.err <= c[3, 3] and d.lambda_max == pytest.approx(dep.lambda_max(c)[3])
    m = d2.metrics
    assert set(m) >= {"abs_err", "rel_err", "acc", "orig_acc", "pos_acc", "orig_pos_acc"}
    assert 0 <= m["acc"] <= 1 and abs(m["acc"] - m["orig_acc"]) < 0.05
    # between networks: target g_i, predictors f_j (ND Sec 2.4)
    F, G, y = two_networks(2000, 30, 20, rng)
    db = dependencies(F, 4, rho=0.05, labels=y, g=G)
    ct = gram(mixed_logits(F, G, 4))
    np.testing.assert_allclose(mixed_cov(gram(F), F.T @ G / 2000, G[:, 4] @ G[:, 4] / 2000, 4), ct, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(db.theta, covlasso(ct, 4, rho=0.05), rtol=1e-9, atol=1e-12)
    assert db.cov_ii == pytest.approx(G[:, 4] @ G[:, 4] / 2000)
    dc = dependencies(gram(F), 4, rho=0.05, cross=F.T @ G / 2000, g_sq=G[:, 4] @ G[:, 4] / 2000)
    np.testing.assert_allclose(dc.theta, db.theta, rtol=1e-8, atol=1e-12)
    assert np.array_equal(dc.support, db.support)


def test_dependencies_bad_input():
    from theory.neural_dependency import dependencies, replaced_logit_metrics

    rng = np.random.default_rng(7)
    F = rng.standard_normal((50, 6))
    bad = F.copy()
    bad[10, 4] = np.inf
    with pytest.raises(ValueError, match="column 4"):
        dependencies(bad, 0, rho=0.1, kind="logits")
    with pytest.raises(ValueError, match="out of range"):
        dependencies(F, 6, rho=0.1)
    with pytest.raises(ValueError, match="lam"):
        dependencies(F, 0, -1.0)
    with pytest.raises(ValueError, match="at least 2 categories"):
        dependencies(F[:, :1], 0, rho=0.1, kind="logits")
    with pytest.raises(ValueError, match="labels"):
        dependencies(F, 0, rho=0.1, labels=np.zeros(49, int))
    with pytest.raises(ValueError, match="need the raw logits"):
        dependencies(gram(F), 0, rho=0.1, kind="cov", labels=np.zeros(6, int))
    with pytest.raises(ValueError, match="same samples"):
        dependencies(F, 0, rho=0.1, g=F[:10])
    with pytest.raises(ValueError, match="both cross"):
        dependencies(gram(F), 0, rho=0.1, cross=np.zeros(6))
    with pytest.raises(ValueError, match="labels"):
        replaced_logit_metrics(F, np.full(50, 9), 0, -np.eye(6)[0])


def test_ties_and_duplicate_categories():
    # exact ties: equicorrelated Cov (every category joins at λ_max at once) and an integer Cov
    n = 12
    c = 0.5 * np.eye(n) + 0.5 * np.ones((n, n))
    for rho in (0.0, 0.1, 0.5, 0.9):
        th = covlasso(c, 0, rho=rho)
        assert th[0] == -1.0 and kkt_violation(c, 0, rho * 1.0, th) <= 1e-12
    c = np.array([[4, 2, 2, 1], [2, 4, 1, 2], [2, 1, 4, 2], [1, 2, 2, 4]], float)
    for i in range(4):
        p = covlasso_path(c, i)
        assert all(kkt_violation(c, i, lam, t) <= 1e-12 for lam, t in zip(p.breakpoints, p.coefs))
    # duplicated / linearly dependent categories: singular Cov, the solution is not unique but the KKT holds
    rng = np.random.default_rng(8)
    F = rng.standard_normal((200, 8))
    F = np.c_[F, F[:, 2], F[:, 2] + F[:, 3], -F[:, 5]]
    c = gram(F)
    for i in range(c.shape[0]):
        for rho in (0.0, 1e-3, 0.1, 0.5):
            th = covlasso(c, i, rho=rho)
            assert th[i] == -1.0 and kkt_violation(c, i, rho * _lmax(c, i), th) <= 1e-9


def test_dead_category_and_paths_above_lambda_max():
    c = np.diag([1.0, 2.0, 0.0, 3.0])
    c[0, 1] = c[1, 0] = 0.5
    th = covlasso(c, 0, 0.0)  # f_2 ≡ 0 never joins
    np.testing.assert_allclose(th, [-1.0, 0.25, 0.0, 0.0], rtol=1e-14)
    assert th[0] == -1.0 and th[2] == 0.0 and th[3] == 0.0
    np.testing.assert_array_equal(covlasso(c, 2, 0.0), [0.0, 0.0, -1.0, 0.0])  # nothing predicts a dead logit
    p = covlasso_path(c, 0, lams=[5.0])  # above λ_max = 1: the path is the single point −e_0
    np.testing.assert_array_equal(p.breakpoints, [1.0])
    np.testing.assert_array_equal(p.thetas, [[-1.0, 0.0, 0.0, 0.0]])


def test_kkt_violation_all_matches_per_row():
    from theory.covlasso import kkt_violation_all

    rng = np.random.default_rng(9)
    c = gram(lowrank_logits(150, 25, 6, 1e-2, rng))
    A = covlasso_all(c, rho=0.3)
    v = kkt_violation_all(c, A, rho=0.3)
    ref = [kkt_violation(c, i, 0.3 * _lmax(c, i), A[i]) for i in range(25)]
    np.testing.assert_allclose(v, ref, rtol=1e-6, atol=1e-14)  # both are rounding-level at the optimum
    assert v.max() <= 1e-9
    B = A.copy()
    B[3, 7] += 0.1
    assert kkt_violation_all(c, B, rho=0.3)[3] > 1e-3
    with pytest.raises(ValueError, match="θ_i"):
        kkt_violation_all(c, np.zeros((25, 25)), rho=0.3)


def test_stress_extreme_scales_conditioning_and_rank():
    """κ up to 1e10, scales 1e±8, exactly low-rank and duplicated logits: KKT ≤ 1e-9·λ_max for every category."""
    from theory.covlasso import kkt_violation_all

    rng = np.random.default_rng(123)
    for trial in range(60):
        n = int(rng.integers(2, 60))
        scale = 10 ** rng.uniform(-8, 8)
        kind = trial % 4
        if kind == 0:
            c = spd_with_condition(n, 10 ** rng.uniform(0, 10), rng, scale=scale)
        elif kind == 1:
            r = max(1, int(n * rng.uniform(0.05, 1)))
            c = scale * gram(lowrank_logits(int(rng.integers(2, 3 * n + 3)), n, r, 10 ** rng.uniform(-8, -1), rng))
        elif kind == 2:
            c = scale * gram(lowrank_logits(3 * n, n, max(1, n // 3), 0.0, rng))
        else:
            m = max(1, n // 2)
            F = rng.standard_normal((2 * n + 5, m))
            F = np.c_[F, F[:, rng.integers(0, m, size=n - m)] * rng.choice([-1.0, 1.0, 2.0], size=n - m)]
            c = scale * gram(F)
        if n < 2:
            continue
        rho = float(rng.choice([0.0, 1e-6, 1e-3, 0.05, 0.3, 0.9]))
        A = covlasso_all(c, rho=rho)
        assert np.all(np.diag(A) == -1.0)
        assert kkt_violation_all(c, A, rho=rho).max() <= 1e-9, (trial, kind, n, rho)


def test_every_breakpoint_of_the_path_is_exact():
    """Regression: the coefficients recorded at each breakpoint (and read off between them by ``.at``) satisfy
    the KKT conditions with exact zeros; a refresh at a join once left the joiner at ±1e-16 with the wrong
    sign, a KKT residual of ~λ at 104 of 4098 breakpoints of these problems."""
    rng = np.random.default_rng(0)
    worst, count = 0.0, 0
    for _ in range(20):
        c = gram(lowrank_logits(400, 150, 40, 0.05, rng))
        i = int(rng.integers(150))
        p = covlasso_path(c, i)
        mids = 0.5 * (p.breakpoints[1:] + p.breakpoints[:-1])
        for lam, th in list(zip(p.breakpoints, p.coefs)) + list(zip(mids, p.at(mids))):
            worst = max(worst, kkt_violation(c, i, lam, th))
            count += 1
    assert count > 4000 and worst <= 1e-9, worst


# ---- the scaling to a unit diagonal and the homotopy's step budget

def _spd(n, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((3 * n, n))
    return a.T @ a / (3 * n)


def test_prepare_scales_by_a_power_of_four_to_unit_diagonal():
    """covlasso._prepare's contract: (Cov·4⁻ᵏ, 2k) with max Cov_jj in [1/2, 2), exact (a power of two)."""
    c = _spd(4, 11)
    for k in (-480, -7, 0, 3, 480):
        scaled, e = cl._prepare(np.ldexp(c, k))
        assert e % 2 == 0 and 0.5 <= np.diag(scaled).max() < 2.0
        assert np.array_equal(np.ldexp(scaled, e), np.ldexp(c, k))


def test_homotopy_max_steps_guard():
    """The path of a generic n×n Cov to λ = 0 has at least n − 1 breakpoints: a cap below that must stop
    with status 1 (and covlasso must say so), a cap above it must finish."""
    c = _spd(8, 6)
    th, status, *_ = _homotopy(c, 0, 0.0, False, 3)
    assert status == 1
    th, status, *_ = _homotopy(c, 0, 0.0, False, cl._max_steps(8))
    assert status == 0
    np.testing.assert_allclose(th, dep.theta_floor(c, 0), rtol=1e-8, atol=1e-12)


def test_covlasso_reports_a_spent_step_budget(monkeypatch):
    c = _spd(8, 6)
    monkeypatch.setattr(cl, "_max_steps", lambda n: 2)
    with pytest.raises(RuntimeError, match="did not reach"):
        cl.covlasso(c, 0, 0.0)
    with pytest.raises(RuntimeError, match="did not finish"):
        cl.covlasso_path(c, 0)
    with pytest.raises(RuntimeError, match="did not finish"):
        cl.covlasso_all(c, 0.0)


def _star(m, seed):
    """Cov = I plus a first row/column c (|c| distinct, Σc² < 1 so Cov ≻ 0): categories 1..m are orthonormal and
    correlate with category 0 only. ND Eq 6 for i = 0 then separates: θ_j(λ) = sign(c_j)·max(|c_j| − λ/2, 0)."""
    rng = np.random.default_rng(seed)
    w = rng.permutation(np.arange(1, m + 1)) + rng.uniform(0.1, 0.9, m)  # distinct magnitudes
    c = rng.choice([-1.0, 1.0], m) * 0.99 * np.sqrt(w / w.sum())
    cov = np.eye(m + 1)
    cov[0, 1:] = cov[1:, 0] = c
    return cov, c


def test_homotopy_step_budget_grows_with_n():
    """The separable star with 1100 categories joins all of them one by one (1100 breakpoints), beyond any fixed
    budget of ~1000 steps: the budget is 50n + 1000, and θ is the soft-threshold (ND Eq 6 separates)."""
    from theory.covlasso import covlasso
    cov, c = _star(1100, seed=1)
    np.testing.assert_allclose(covlasso(cov, 0, 1e-9)[1:], np.sign(c) * np.maximum(np.abs(c) - 0.5e-9, 0.0),
                               rtol=1e-12, atol=1e-15)


# ---- exact paths: a separable problem (soft-thresholding) and a nearly collinear join

@pytest.mark.parametrize("m", [1, 2, 31, 32, 33, 62, 63, 64, 65, 66, 130])
def test_path_of_a_separable_problem_is_soft_thresholding(m):
    """The exact path on the separable problem: breakpoints λ_k = 2|c|_(k) (one join each, no drop), then λ = 0,
    and θ at every breakpoint is the soft-threshold. The sizes cross the kernel's buffers (32 active rows of the
    factor; 64 recorded breakpoints, and the final record at exactly 64), where a wrong capacity would write out
    of bounds or lose a breakpoint."""
    from theory.covlasso import covlasso, covlasso_path
    cov, c = _star(m, seed=m)
    p = covlasso_path(cov, 0)
    a = np.sort(np.abs(c))[::-1]
    np.testing.assert_allclose(p.breakpoints, np.r_[2 * a, 0.0], rtol=1e-13, atol=1e-15)
    want = np.sign(c) * np.maximum(np.abs(c)[None, :] - p.breakpoints[:, None] / 2, 0.0)
    np.testing.assert_allclose(p.coefs[:, 1:], want, rtol=1e-12, atol=1e-14)
    assert np.all(p.coefs[:, 0] == -1.0)
    assert [s.size for s in p.supports] == list(range(m)) + [m]
    lam = a[m // 2] + a[min(m // 2 + 1, m - 1)]  # between two breakpoints
    np.testing.assert_allclose(covlasso(cov, 0, lam)[1:], np.sign(c) * np.maximum(np.abs(c) - lam / 2, 0.0),
                               rtol=1e-12, atol=1e-14)


def _nearly_collinear(r):
    """Logits f_0 = (1, −1, 1), f_1 = (1, 0, 0), f_2 = (1, δ, 0): f_1 joins first (b̂ = (1, 1 − δ)), then f_2 with
    a squared Cholesky pivot δ²/(1 + δ²) = r of Cov_22. Cov ≻ 0; f_2 is the only way to reach f_0's second
    coordinate."""
    d = np.sqrt(r / (1 - r))
    V = np.array([[1.0, -1.0, 1.0], [1.0, 0.0, 0.0], [1.0, d, 0.0]]).T
    return V.T @ V


def _lasso_minimum(cov, lam):
    """min of θᵀCovθ + λ‖θ̂‖₁ (θ_0 = −1, n = 3) by enumerating every support and sign pattern of θ̂ (the closed
    form Ĉov_SS⁻¹(b̂_S − λ/2 s_S) on each, kept where its signs agree): independent of the homotopy."""
    import itertools
    C, b = cov[1:, 1:], cov[1:, 0]
    best = cov[0, 0]  # θ̂ = 0
    for S in ([0], [1], [0, 1]):
        for sg in itertools.product([-1.0, 1.0], repeat=len(S)):
            th = np.zeros(2)
            th[S] = np.linalg.solve(C[np.ix_(S, S)], b[S] - lam / 2 * np.array(sg))
            if np.all(np.sign(th[S]) == sg):
                t = np.r_[-1.0, th]
                best = min(best, t @ cov @ t + lam * np.abs(th).sum())
    return best


@pytest.mark.parametrize("lam", [1e-9, 1e-7])
def test_a_category_is_set_aside_only_below_the_documented_pivot_tolerance(lam):
    """Module doc of theory.covlasso: a joining category is set aside when its squared Cholesky pivot is ≤ 1e−12
    of Cov_jj (numerically in the span of the active ones). At 1.5e−12 it must join: the objective then equals
    the enumerated minimum (≈ 1.0; without f_2 it is ≈ 2.0). At 0.5e−12 it is set aside: θ_2 = 0 exactly."""
    from theory.covlasso import covlasso
    cov = _nearly_collinear(1.5e-12)
    th = covlasso(cov, 0, lam)
    assert th[2] != 0.0
    assert th @ cov @ th + lam * np.abs(th[1:]).sum() == pytest.approx(_lasso_minimum(cov, lam), rel=1e-6)
    assert covlasso(_nearly_collinear(0.5e-12), 0, lam)[2] == 0.0
