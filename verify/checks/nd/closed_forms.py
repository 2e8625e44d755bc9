"""ND closed-form checks: error floor, λ_max, relative floor, and Remark 2 (the determinant ratio).

Each ``compare(ctx, planted)`` runs the same comparison against the paper's formula or, with
``planted=True``, against a planted wrong one (the negative control, a mistake a researcher could make).
``Result.miss`` is the compared figure in tolerance units (≤ 1: within tolerance).
"""
from __future__ import annotations

import numpy as np

from sims.nd_models import kkt_floor, remark2_regimes
from sims.spd import lowrank_logits, second_moment_of_model, singular_logit_model, spd_with_condition
from sims.threads import single_threaded
from theory import dependency as dep
from theory.covlasso import covlasso, covlasso_all, covlasso_cd, kkt_violation
from theory.symbolic import nd as sym
from verify.checks.nd._floor_families import _correlation_kappa, _heterogeneous_cases
from verify.registry import Result, check

EPS = np.finfo(float).eps
KAPPA_UNITS = 100.0  # forward-error budget, in units of κ·ε
CENTRED = ("a centred covariance Cov − μμᵀ (np.cov / np.corrcoef on the logits) in place of the uncentred "
           "E[f fᵀ] of ND Remark 1, on logits with per-category means (a classifier's logits have offsets)")

_one_blas_thread = single_threaded(torch_threads=None, user_api="blas")


def _lstsq_floor(F: np.ndarray, i: int) -> float:
    """The floor as a regression residual on the logits themselves: ‖f_i − F₋ᵢβ‖²/N (ND Eq 2 at λ = 0)."""
    rest = np.delete(np.arange(F.shape[1]), i)
    beta, *_ = np.linalg.lstsq(F[:, rest], F[:, i], rcond=None)
    r = F[:, i] - F[:, rest] @ beta
    return float(r @ r / F.shape[0])


def _random_problems(rng, count: int, nmax: int, kmax: float):
    """Yield (Cov, logits or None, μ): a prescribed-spectrum uncentred Cov with a mean μ inside it; and the Gram matrix
    of low-rank-plus-noise logits with per-category offsets. μ is the logits' mean (for the centred control)."""
    for t in range(count):
        n = int(np.exp(rng.uniform(np.log(5), np.log(nmax))))
        scale = 10 ** rng.uniform(-2, 2)
        if t % 2 == 0:
            # prescribed spectrum (κ ≤ kmax) for the uncentred Cov; its mean μ = t·Cov^{1/2}u (‖u‖ = 1, t ∈ [0.3, 0.9])
            # carries t² of the energy along u, and the centred Σ = Cov − μμᵀ = Cov^{1/2}(I − t²uuᵀ)Cov^{1/2} is PSD
            cond = 10 ** rng.uniform(0, np.log10(kmax))
            c = spd_with_condition(n, cond, rng, scale=scale)
            w, Q = np.linalg.eigh(c)
            u = rng.standard_normal(n)
            mu = rng.uniform(0.3, 0.9) * (Q * np.sqrt(np.maximum(w, 0))) @ (Q.T @ (u / np.linalg.norm(u)))
            yield c, None, mu
        else:
            rank = max(1, int(n * rng.uniform(0.2, 0.9)))
            noise = 10 ** rng.uniform(-5, -1)
            F = np.sqrt(scale) * (lowrank_logits(max(2 * n, 40), n, rank, noise, rng) + rng.standard_normal(n))
            yield dep.second_moment(F), F, F.mean(axis=0)


def _singular_cases(rng, count: int, planted: bool, worst: dict) -> dict:
    """Exactly singular Cov with logit scales over 6 decades (where the earlier √ε null-weight rule and pivot-only
    Cholesky test gave exact combinations nonzero floors): R against the planted floors, a least-squares fit on
    sampled logits (κ_r·ε units) and Eq 5's exact solver at small λ (rounding units)."""
    zeros = nonzeros = 0
    for s in range(count):
        W, m, truth = singular_logit_model(rng, spread=3.0, mean=1.0)
        C = second_moment_of_model(W, m)
        n = C.shape[0]
        d = np.diag(C)
        if planted:
            mu = W @ m
            R = dep.error_floor(C - np.outer(mu, mu)) / d
        else:
            R = dep.relative_floor(C)
        unit = _correlation_kappa(C) * EPS
        zeros += int((truth == 0).sum())
        nonzeros += int((truth > 0).sum())
        worst["singular: planted floors"] = max(worst["singular: planted floors"],
                                                float(np.max(np.abs(R - truth / d))) / unit)
        F = (m + rng.standard_normal((4 * n + 20, W.shape[1]))) @ W.T
        G = dep.second_moment(F)
        Rs = dep.error_floor(G - np.outer(F.mean(0), F.mean(0))) / np.diag(G) if planted else dep.relative_floor(G)
        unit_s = _correlation_kappa(G) * EPS
        for i in rng.choice(n, size=min(n, 3), replace=False):
            i = int(i)
            ls = _lstsq_floor(F, i) / (F[:, i] @ F[:, i] / F.shape[0])
            worst["singular: lstsq on sampled logits"] = max(worst["singular: lstsq on sampled logits"],
                                                             abs(Rs[i] - ls) / unit_s)
            th = covlasso(C, i, rho=1e-12)
            psi = th * np.sqrt(d / d[i])
            rounding = 10 * n * EPS * float(np.abs(psi) @ np.abs(C / np.sqrt(np.outer(d, d))) @ np.abs(psi))
            excess = (R[i] - dep.prediction_error(C, th) / d[i]) / rounding
            worst["singular: floor − err_i(θ*(1e-12·λ_max)) (rounding units)"] = max(
                worst["singular: floor − err_i(θ*(1e-12·λ_max)) (rounding units)"], excess)
    return {"singular covariances": count, "categories with floor 0 / > 0": [zeros, nonzeros]}


def _symbolic(sizes, planted, fn) -> dict:
    out = {}
    for n in sizes:
        for i in sorted({0, n - 1}):
            for name, expr in fn(n, i, planted=planted).items():
                out[f"n={n} i={i} {name}"] = sym.vanishes(expr)
    return out


@check(
    "nd.floor_closed_form", equation="A15, A28–A30, A33", kind="symbolic+numeric",
    tolerance=f"{KAPPA_UNITS:g}·κ·ε (singular Cov: κ_r·ε of the correlation matrix; Eq 5: rounding of θᵀCovθ); "
              "issue-25 families: R_i ≤ err_i(θ)/Cov_ii + rounding of θᵀCovθ for θ from least squares (logits, √Cov) "
              "and CovLasso at ρ = 1e-12, and 0 resolvable exact combinations with R ≠ 0 (a count: tolerance 0.5)",
    figures=("nd.remark2_det_ratio",),
    tolerance_reason="the floor's relative condition number is O(κ(Cov)); backward-stable solvers agree to "
                     "O(κ·ε): measured worst ≈ 6·κε for the LU/eigen/lstsq routes and ≈ 40·κε for the det ratio in "
                     "its stable range (n ≤ 40, κ ≤ 1e8); 100·κε covers n ≤ 300 without hiding an O(1) error. On "
                     "exactly singular Cov the floors are 0 or have condition number κ_r (correlation matrix, "
                     "nonzero spectrum); the solver's err is compared up to its own rounding 10nε·|ψ|ᵀ|K||ψ|. The floor "
                     "is a minimum over θ (A28–A30), so no θ may beat it beyond that rounding; a logit that is an exact "
                     "combination of the others (ND Sec 2.2) has floor 0 wherever float64 can resolve it (null "
                     "component from an SVD of the factor above 10× the eigen route's documented rounding level)",
    negative_control=f"the floor (symbolic: det, θ*(0); numeric: error_floor) from {CENTRED}", cost=7,
)
@_one_blas_thread
def floor_closed_form(ctx, planted):
    sizes = (2, 3) if ctx.quick else (2, 3, 4)
    symbolic = _symbolic(sizes, planted, sym.floor_residuals)
    rng = ctx.rng("matrices")
    count, nmax, n_sing = (40, 80, 40) if ctx.quick else (200, 300, 120)
    worst = {"kkt_lu": 0.0, "eigen_A33": 0.0, "lstsq_on_logits": 0.0, "det_ratio_stable_range": 0.0,
             "theta_vs_kkt": 0.0, "singular: planted floors": 0.0, "singular: lstsq on sampled logits": 0.0,
             "singular: floor − err_i(θ*(1e-12·λ_max)) (rounding units)": 0.0}
    conds, sizes_seen, rel_gaps = [], [], []
    for c, F, mu in _random_problems(rng, count, nmax, 1e12):
        n = c.shape[0]
        w = np.linalg.eigvalsh(c)
        kappa = w[-1] / max(w[0], w[-1] * EPS)
        conds.append(kappa)
        sizes_seen.append(n)
        unit = kappa * EPS
        floor = dep.error_floor(c - np.outer(mu, mu)) if planted else dep.error_floor(c)
        # error of each independent route in units of κε (relative error / (κ ε))
        for i in rng.choice(n, size=min(3, n), replace=False):
            i = int(i)
            ref = kkt_floor(c, i)
            rel_gaps.append(abs(floor[i] - ref) / ref)
            worst["kkt_lu"] = max(worst["kkt_lu"], abs(floor[i] - ref) / ref / unit)
            if not planted:
                th = dep.theta_floor(c, i)
                k = np.zeros((n + 1, n + 1))
                k[:n, :n], k[i, n], k[n, i] = 2 * c, 1.0, 1.0
                theta_ref = np.linalg.solve(k, np.eye(n + 1)[n] * -1.0)[:n]
                worst["theta_vs_kkt"] = max(worst["theta_vs_kkt"],
                                            np.linalg.norm(th - theta_ref) / np.linalg.norm(theta_ref) / unit)
            if F is not None:
                ls = _lstsq_floor(F, i)
                worst["lstsq_on_logits"] = max(worst["lstsq_on_logits"], abs(floor[i] - ls) / ls / unit)
            if n <= 40 and kappa <= 1e8:
                dr = dep.det_ratio(c, i, method="det")
                worst["det_ratio_stable_range"] = max(worst["det_ratio_stable_range"], abs(floor[i] - dr) / dr / unit)
        eig = dep.error_floor_eigen(c)
        worst["eigen_A33"] = max(worst["eigen_A33"], float(np.max(np.abs(floor - eig) / eig)) / unit)
    sing = _singular_cases(rng, n_sing, planted, worst)
    het = _heterogeneous_cases(ctx.rng("heterogeneous"), 20 if ctx.quick else 200, planted)
    worst["heterogeneous: floor − err_i(θ) (rounding units)"] = het["excess"]
    worst["heterogeneous full rank: vs mpmath"] = het["mp"]
    route = max(v for k, v in worst.items() if not k.startswith(("singular: floor −", "heterogeneous: floor −")))
    eq5 = max(worst["singular: floor − err_i(θ*(1e-12·λ_max)) (rounding units)"], het["excess"],
              het["zero_violations"] / 0.5)  # a count must be 0: tolerance 0.5
    sym_ok = all(symbolic.values())
    miss = max(route / KAPPA_UNITS, eq5, 0.0 if sym_ok else np.inf)
    return Result(
        measured=route, expected=f"<= {KAPPA_UNITS:g} (κε units)", holds=bool(miss <= 1), miss=float(miss),
        details={"symbolic identities vanishing": f"{sum(symbolic.values())}/{len(symbolic)} (sizes {sizes})",
                 "matrices (SPD with a mean, low-rank+noise logits with offsets)": count,
                 "n range": [min(sizes_seen), max(sizes_seen)],
                 "condition number range": [float(min(conds)), float(max(conds))],
                 "worst error per route (κε units; singular: κ_r·ε)": worst,
                 "relative gap to the LU-KKT floor (median, max)": [float(np.median(rel_gaps)), float(max(rel_gaps))],
                 "numeric part alone, in tolerance units": max(route / KAPPA_UNITS, eq5), **sing, **het["info"],
                 "formula compared": "floor of the centred covariance" if planted else "1/(Cov⁻¹)_ii (error_floor)"},
    )


@check(
    "nd.lambda_max", equation="A16, A47", kind="numeric", tolerance="|λ_true/λ_max − 1| ≤ δ = 1e-3",
    tolerance_reason="λ_true, where θ*(λ) leaves −e_i, is located by bisection with the independent coordinate-"
                     "descent solver (exact zeros, KKT ≤ 1e-9·λ_max) to δ/20; any δ > 0 separates a right formula "
                     "from a wrong one, 1e-3 keeps the moved coefficient far above rounding",
    negative_control="λ_max = ‖Cov₋ᵢ,ᵢ‖_∞, i.e. scikit-learn's α_max = max|Xᵀy|/N taken as CovLasso's λ_max (Lasso "
                     "minimises (1/2N)‖y − Xβ‖² + α‖β‖₁, so λ = 2α: the factor 2 lost between conventions)",
)
def lambda_max_check(ctx, planted):
    rng = ctx.rng("covs")
    count = 12 if ctx.quick else 60
    delta = 1e-3
    worst, kkt_worst, err_gap, examples, rel_paths = 0.0, 0.0, 0.0, [], []
    for t in range(count):
        n = int(rng.integers(3, 26))
        c = dep.second_moment(lowrank_logits(3 * n, n, max(1, n // 2), 0.1, rng)) if t % 2 else spd_with_condition(
            n, 10 ** rng.uniform(0, 6), rng)
        i = int(rng.integers(n))
        claim = dep.lambda_max(c)[i] / (2.0 if planted else 1.0)
        e_i = -np.eye(n)[i]

        def at_top(lam):
            return np.array_equal(covlasso_cd(c, i, lam), e_i)

        lo, hi = claim / 2, claim * 2  # bracket: θ(lo) ≠ −e_i, θ(hi) = −e_i
        while at_top(lo):
            lo /= 2
        while not at_top(hi):
            hi *= 2
        while hi / lo > 1 + delta / 20:
            mid = np.sqrt(lo * hi)
            lo, hi = (lo, mid) if at_top(mid) else (mid, hi)
        lam_true = np.sqrt(lo * hi)
        gap = abs(lam_true / claim - 1)
        worst = max(worst, gap)
        # the library's other λ_max code paths, through their public relative-λ arguments (λ = ρ·λ_max(i)): the
        # solution must leave −e_i between ρ = 1 ± δ, as the independent solver's does at λ_true
        for name, solve in (("covlasso(rho=)", lambda r: covlasso(c, i, rho=r)),
                            ("covlasso_all(rho=)", lambda r: covlasso_all(c, rho=r)[i])):
            if not (np.array_equal(solve(1 + delta), e_i) and not np.array_equal(solve(1 - delta), e_i)):
                rel_paths.append({"path": name, "n": n, "i": i})
        above = covlasso_cd(c, i, lam_true * (1 + delta))
        kkt_worst = max(kkt_worst, kkt_violation(c, i, lam_true * (1 + delta), above))
        err_gap = max(err_gap, abs(dep.prediction_error(c, above) - c[i, i]) / c[i, i])
        if gap > delta and len(examples) < 3:
            examples.append({"n": n, "i": i, "λ_true": lam_true, "formula": claim})
    miss = max(worst / delta, err_gap / 1e-12, 2.0 * len(rel_paths))
    return Result(
        measured=worst, expected=f"<= {delta:g} (|λ_true/λ_max − 1|)", holds=bool(miss <= 1), miss=float(miss),
        details={"covariances": count, "largest |λ_true/λ_max − 1|": worst, "examples off by more than δ": examples,
                 "relative-λ paths (covlasso, covlasso_all with rho=) not leaving −e_i between ρ = 1 ± δ (tol 0)":
                     rel_paths[:5] + ([f"… {len(rel_paths)} in all"] if len(rel_paths) > 5 else []),
                 "worst KKT violation of the solver (units of λ_max)": kkt_worst,
                 "max |err(θ*(λ ≥ λ_max)) − Cov_ii|/Cov_ii (must be 0: tolerance 1e-12)": err_gap},
    )


@check(
    "nd.relative_floor", equation="A31–A32", kind="symbolic+numeric",
    tolerance=f"{KAPPA_UNITS:g}·κ·ε (singular Cov: κ_r·ε); path minimum = R within 1e-9; issue-25 families as in "
              "nd.floor_closed_form",
    tolerance_reason="same forward-error budget as the floor itself (R is the floor divided by an exact Cov_ii); "
                     "the path minimum is compared with a 1e-9 relative slack for the iterative solver",
    negative_control=f"R from {CENTRED.replace('np.cov / ', '')}: the squared partial correlation of a regression "
                     "with an intercept instead of ND's uncentred one",
)
@_one_blas_thread
def relative_floor_check(ctx, planted):
    sizes = (2, 3) if ctx.quick else (2, 3, 4)
    symbolic = _symbolic(sizes, planted, sym.relative_floor_residual)
    rng = ctx.rng("matrices")
    count, nmax = (30, 60) if ctx.quick else (120, 200)

    def rel(c, mu):
        if not planted:
            return dep.relative_floor(c)
        cc = c - np.outer(mu, mu)
        return dep.error_floor(cc) / np.diag(cc)

    worst = {"eigen_A31": 0.0, "lstsq_relative_error_A32": 0.0, "scale_invariance D·Cov·D, D over 8 decades": 0.0}
    path_gap, r_range = 0.0, [np.inf, -np.inf]
    for t, (c, F, mu) in enumerate(_random_problems(rng, count, nmax, 1e10)):
        n = c.shape[0]
        w = np.linalg.eigvalsh(c)
        unit = w[-1] / max(w[0], w[-1] * EPS) * EPS
        R = rel(c, mu)
        r_range = [min(r_range[0], R.min()), max(r_range[1], R.max())]
        ref = dep.relative_floor_eigen(c)
        worst["eigen_A31"] = max(worst["eigen_A31"], float(np.max(np.abs(R - ref) / ref)) / unit)
        D = np.logspace(-4, 4, n)[rng.permutation(n)]
        Rd = rel(D[:, None] * c * D[None, :], D * mu)
        worst["scale_invariance D·Cov·D, D over 8 decades"] = max(
            worst["scale_invariance D·Cov·D, D over 8 decades"], float(np.max(np.abs(Rd - ref) / ref)) / unit)
        if F is not None:
            i = int(rng.integers(n))
            r_ls = _lstsq_floor(F, i) / (F[:, i] @ F[:, i] / F.shape[0])
            worst["lstsq_relative_error_A32"] = max(worst["lstsq_relative_error_A32"], abs(R[i] - r_ls) / r_ls / unit)
        if t < 20:  # A32: R is the infimum over λ of the relative error along the path (small, κ ≤ 1e3: CD converges)
            m = int(rng.integers(3, 16))
            sc = 10 ** rng.uniform(-2, 2)
            mu_s = rng.standard_normal(m)
            cs = sc * (spd_with_condition(m, 10 ** rng.uniform(0, 3), rng) + np.outer(mu_s, mu_s))
            cs = 0.5 * (cs + cs.T)
            i = int(rng.integers(m))
            Rs = rel(cs, np.sqrt(sc) * mu_s)[i]
            lm = dep.lambda_max(cs)[i]
            rels = [dep.prediction_error(cs, covlasso_cd(cs, i, f * lm)) / cs[i, i] for f in (0.0, 0.3, 0.7, 1.0)]
            path_gap = max(path_gap, abs(rels[0] - Rs) / Rs, max(0.0, Rs - min(rels)) / Rs, rels[-1] - 1)
    sing = {"singular: planted floors": 0.0, "singular: lstsq on sampled logits": 0.0,
            "singular: floor − err_i(θ*(1e-12·λ_max)) (rounding units)": 0.0}
    sing_info = _singular_cases(rng, 15 if ctx.quick else 40, planted, sing)
    het = _heterogeneous_cases(ctx.rng("heterogeneous"), 30 if ctx.quick else 100, planted)
    sing["heterogeneous: floor − err_i(θ) (rounding units)"] = het["excess"]
    sing["heterogeneous full rank: vs mpmath (κε units)"] = het["mp"]
    route = max(max(worst.values()), sing["singular: planted floors"], sing["singular: lstsq on sampled logits"],
                het["mp"])
    sym_ok = all(symbolic.values())
    miss = max(route / KAPPA_UNITS, path_gap / 1e-9, sing["singular: floor − err_i(θ*(1e-12·λ_max)) (rounding units)"],
               het["excess"], het["zero_violations"] / 0.5,
               r_range[1] - 1 if r_range[1] > 1 + 1e-12 else 0.0, 0.0 if sym_ok else np.inf)
    return Result(
        measured=route, expected=f"<= {KAPPA_UNITS:g} (κε units); path minimum = R", holds=bool(miss <= 1),
        miss=float(miss),
        details={"symbolic identities vanishing": f"{sum(symbolic.values())}/{len(symbolic)} (sizes {sizes})",
                 "matrices": count, "worst error per route (κε units)": worst, "singular cases (κ_r·ε units)": sing,
                 **sing_info, **het["info"], "path minimum vs R (relative, A32)": path_gap,
                 "numeric part alone, in tolerance units": max(route / KAPPA_UNITS, path_gap / 1e-9), "range of R over all categories": r_range},
    )


def _slogdet_at_size(n: int, rng) -> dict:
    """The det ratio by LU det and by exp(slogdet difference) on a block-diagonal Cov (blocks of 10, κ ≤ 10, scale
    0.01) of size n, two categories against 50-digit floors of their blocks: worst relative error of each."""
    from sims.nd_models import block_covariance

    c, ref = block_covariance(n, 10, 10.0, 0.01, rng, ref_for=range(2))
    out = {"det": 0.0, "slogdet": 0.0}
    with np.errstate(all="ignore"):
        for i in np.flatnonzero(np.isfinite(ref)):
            for method in out:
                dr = dep.det_ratio(c, int(i), method, raw=True)
                e = abs(dr - ref[i]) / ref[i] if np.isfinite(dr) else np.inf
                out[method] = max(out[method], float(e))
    return out


@check(
    "nd.det_ratio_unstable", equation="Remark 2", kind="numeric",
    tolerance="under/overflow: ≥ 50 % det-ratio failures for n ≥ 200 at κ ≤ 10, and exp(slogdet difference) within "
              "1e-8 of the 50-digit floor at the largest n; conditioning: at n = 10 the det ratio's error ≤ 10× the "
              "stable floor's (+10ε) for κ ≤ 1e12; both: ≥ 50 % failures on logit-like Cov, stable "
              f"floor within {KAPPA_UNITS:g}·κε of LU-KKT",
    figures=("nd.remark2_det_ratio",),
    erratum="Remark 2 blames tiny singular values of Cov₋ᵢ₋ᵢ (< 1e-3) that make det Cov/det Cov₋ᵢ₋ᵢ 'extremely "
            "sensitive' and often NaN. Against 50-digit references the LU det ratio is as accurate as the stable "
            "floor 1/(Cov⁻¹)_ii at n = 10 for every κ up to 1e12 (singular values down to 1e-12; both O(κε)) and "
            "never NaN there. The NaNs come from the product of eigenvalues det = Πσ_j under/overflowing float64: "
            "0.01·I_n, condition number 1, gives 0/0 for n ≥ 200, and so do block covariances with κ ≤ 10 at scale "
            "0.01 or 100; the same LU through slogdet (a sum of logarithms, no product) is accurate to 1e-13 at "
            "n = 1000. Remark 2's practical advice (never compute the floor as a ratio of determinants) stands; its "
            "mechanism is under/overflow of det, not conditioning.",
    tolerance_reason="Remark 2's 'cannot accurately calculate … often NaN' read as: NaN/inf/0 or more than 1 % off a "
                     "high-precision reference, for at least half the categories; 'as accurate' at small n as within "
                     "one order of magnitude of the Cholesky floor's own error against the same reference",
    negative_control="Remark 2's stated mechanism: at n = 10 with singular values of Cov₋ᵢ₋ᵢ below 1e-3 (κ 1e3 … 1e12) "
                     "the det ratio fails (error > 1 % of the 50-digit reference) — the misdiagnosis that would send a "
                     "researcher to regularise Cov instead of avoiding det",
)
def det_ratio_unstable(ctx, planted):
    r = remark2_regimes(ctx.quick, ctx.seed)
    kap = r["kappas"]
    if planted:
        sel = kap >= 1e3
        worst = float(r["err_det"][sel].max())
        return Result(
            measured=worst, expected="> 0.01 (det ratio fails where σ_min(Cov₋ᵢ₋ᵢ) < 1e-3)", holds=bool(worst > 1e-2),
            miss=float(1e-2 / max(worst, 1e-300)),
            details={"worst det-ratio relative error at n = 10, κ ∈ [1e3, 1e12]": worst,
                     "share of categories failing there": float(r["fail_small"][sel].mean()),
                     "smallest singular value of Cov₋ᵢ₋ᵢ reached": float(r["min_sv"][sel].min())})
    cond_ratio = r["err_det"] / (10 * np.maximum(r["err_cholesky"], 10 * EPS))
    big = r["sizes"] >= 200
    size_fail = min(float(r[f"fail_{t}"][big].min()) for t in ("blocks_0.01", "blocks_100", "identity_0.01"))
    size_ok_small = max(float(r[f"fail_{t}"][~big].max()) for t in ("blocks_0.01", "blocks_100", "identity_0.01"))
    both_fail = float(r["fail_logit"].min())
    stable_kkt = float(r["stable_kkt_logit"].max())
    stable_ref = max(float(r[f"stable_err_{t}"].max()) for t in ("blocks_0.01", "blocks_100", "identity_0.01"))
    n_big = int(r["sizes"].max())
    slog = _slogdet_at_size(n_big, ctx.rng("slogdet"))
    miss = max(0.5 / max(size_fail, 1e-300), float(cond_ratio.max()), 0.5 / max(both_fail, 1e-300),
               stable_kkt / KAPPA_UNITS, float(r["fail_small"].max()) / 0.5, slog["slogdet"] / 1e-8)
    fmt = lambda a: [round(float(v), 3) for v in a]  # noqa: E731
    return Result(
        measured=f"under/overflow {size_fail:.0%} fail (n ≥ 200, κ ≤ 10); conditioning: det error ≤ {cond_ratio.max() * 10:.2g}× "
                 f"the stable one (n = 10, κ ≤ 1e12); both {both_fail:.0%} fail",
        expected="≥ 50 %; ≤ 10×; ≥ 50 %", holds=bool(miss <= 1), miss=float(miss),
        details={
            f"under/overflow at n = {n_big}: worst relative error of LU det ratio, exp(slogdet difference)":
                [slog["det"], slog["slogdet"]],
            "under/overflow axis: n grows at κ ≤ 10 (blocks of 10, mpmath reference per block)": {
                "n": r["sizes"].tolist(), "det ratio failing, scale 0.01": fmt(r["fail_blocks_0.01"]),
                "scale 100": fmt(r["fail_blocks_100"]), "0.01·I_n (κ = 1)": fmt(r["fail_identity_0.01"]),
                "failing for n ≤ 100 (representable det)": size_ok_small,
                "stable floor worst relative error vs reference": stable_ref},
            "conditioning axis (n = 10, 50-digit mpmath reference)": {
                "κ": [f"{k:.0e}" for k in kap], "σ_min(Cov₋ᵢ₋ᵢ)": [f"{v:.1e}" for v in r["min_sv"]],
                "det ratio (LU) worst relative error": [f"{v:.1e}" for v in r["err_det"]],
                "exp(slogdet difference)": [f"{v:.1e}" for v in r["err_slogdet"]],
                "stable floor (Cholesky)": [f"{v:.1e}" for v in r["err_cholesky"]],
                "eigen form A33": [f"{v:.1e}" for v in r["err_eigen"]],
                "det ratio failing (> 1 % or NaN)": fmt(r["fail_small"])},
            "both (logit-like Cov: rank n/5 + noise 1e-3)": {
                "n": r["logit_sizes"].tolist(), "κ": [f"{k:.1e}" for k in r["kappa_logit"]],
                "det ratio failing": fmt(r["fail_logit"]), "stable floor vs LU-KKT (κε units)": fmt(r["stable_kkt_logit"])},
        },
        finding="The det ratio fails because det = Πσ_j under/overflows (0.01·I_200 gives 0/0; exp(slogdet "
                f"difference) is within {slog['slogdet']:.1g} at n = {n_big}), not from conditioning: at n = 10 its "
                f"error stays within {cond_ratio.max() * 10:.2g}× the Cholesky floor's up to κ = 1e12.",
    )
