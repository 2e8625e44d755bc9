"""ND checks that need the CovLasso solution: Thm 1 (Markov), Eq 5 path, Eq 7–8 KKT, Thm 2, Thm 3,
Sec 2.2 massive categories and Sec 2.4 between networks (Conj 1 is in :mod:`verify.checks.nd.conjecture1`).

Every θ*(λ) comes from the exact homotopy (:mod:`theory.covlasso`); the reference coordinate descent
and closed forms (:mod:`theory.dependency`) are the independent sides of the comparisons. Each
``compare(ctx, planted)`` runs the same comparison against the paper's statement or, with
``planted=True``, against a planted wrong one (the negative control).
"""
from __future__ import annotations

import numpy as np

from sims.threads import single_threaded
from sims.nd_models import massive_category_logits, two_networks
from sims.spd import gram, lowrank_logits, spd_with_condition
from theory import dependency as dep
from theory.covlasso import covlasso, covlasso_cd, covlasso_path, kkt_violation
from theory.neural_dependency import dependencies, mixed_cov, mixed_logits
from verify.checks._shared import glyph_preps as gp
from verify.registry import Result, check

KKT_TOL = 1e-9  # KKT residual in units of λ_max(i): the exact solver reaches rounding level (~1e-15)


# Run a comparison with single-threaded BLAS: its matrices are small (n ≤ 200), where BLAS threads only
# add synchronisation (tens of ms per call on a loaded 2-core machine).
_one_blas_thread = single_threaded(torch_threads=None, user_api="blas")


def _split(c: np.ndarray, i: int):
    """(rest, Ĉov, b̂) of ND Eq 6."""
    rest = np.delete(np.arange(c.shape[0]), i)
    return rest, c[np.ix_(rest, rest)], c[rest, i]


def _thm2_constants(C: np.ndarray, b: np.ndarray):
    """‖A_j‖₂ and ‖A⁻ᵀb̂‖₂ of ND Thm 2 with A = QΣ^{1/2}Qᵀ (A40–A41), from the eigendecomposition of Ĉov.

    Also returns the same two numbers by the identities ‖A_j‖² = Ĉov_jj, ‖A⁻ᵀb̂‖² = b̂ᵀĈov⁻¹b̂ (a cross-check).
    """
    w, Q = np.linalg.eigh(C)
    if w[0] <= 0:
        raise ValueError("Thm 2 needs an SPD Ĉov")
    A = (Q * np.sqrt(w)) @ Q.T
    Aj = np.linalg.norm(A, axis=1)
    nb = float(np.linalg.norm(Q @ ((Q.T @ b) / np.sqrt(w))))
    alt_Aj = np.sqrt(np.diag(C))
    alt_nb = float(np.sqrt(b @ np.linalg.solve(C, b)))
    return Aj, nb, alt_Aj, alt_nb


def _thm_problems(rng, quick: bool):
    """SPD covariances for Thm 2/3 and Conj 1: prescribed spectrum, low-rank-plus-noise logits, massive-category model."""
    k = 2 if quick else 5
    n = 25 if quick else 60
    out = []
    for _ in range(k):
        out.append(("spd κ≤1e3", spd_with_condition(n, 10 ** rng.uniform(1, 3), rng)))
        out.append(("low-rank+noise logits", dep.second_moment(lowrank_logits(6 * n, n, n // 4, 0.1, rng))))
        out.append(("massive-category model", dep.second_moment(massive_category_logits(20 * n, n, (2 * n) // 3, rng, noise=0.05)[0])))
    return out


# ---------------------------------------------------------------------------------------------- Thm 1
MARKOV_RATIOS = (100, 10, 2)  # N_fit / n: the paper's regime (ImageNet: 1.28M images, n = 1000 → 1280) first
CLAIM_RHO = 0.01  # Thm 1's "appropriate λ": λ = 0.01·λ_max(i), fixed before looking (near the floor, still sparse)
CLAIM_EPS = 0.3  # Definition 1's "small ε", in units of the target logit's RMS √Cov_ii
CLAIM_DELTA = 0.05  # Definition 1's "small δ"


def _markov_cases(ctx, planted: bool, positive: bool) -> dict:
    """max over (category, λ, ε) of P(|θᵀf| ≥ ε) / bound with θ and E from a fitting sample and P on fresh samples
    (in-sample for the positive control), for N_fit = r·n, r ∈ MARKOV_RATIOS; and Thm 1's claim itself: at
    λ = CLAIM_RHO·λ_max(i), P(|f_i − Σ_{j≠i} θ_j f_j| ≥ CLAIM_EPS·√Cov_ii) / CLAIM_DELTA (Definition 1)."""
    rng = ctx.rng("logits")
    n, p, N_test = (40, 20, 8000) if ctx.quick else (200, 100, 20000)
    test, _, W = massive_category_logits(N_test, n, p, np.random.default_rng(rng.integers(2**63)), noise=0.05)
    out = {}
    for r in MARKOV_RATIOS:  # fitting samples of the same model (the same W)
        F, _, _ = massive_category_logits(r * n, n, p, np.random.default_rng(rng.integers(2**63)), noise=0.05, W=W)
        c = dep.second_moment(F)
        worst, held, total, rows, e_ratio, eps_fail = 0.0, 0, 0, [], [], []
        claim, claim_rows, support = 0.0, [], []
        for i in rng.choice(n, size=5, replace=False):
            i = int(i)
            for rho in (0.01, 0.1, 0.3):
                th = covlasso(c, i, rho=rho)
                z_fit = F @ th
                E = float(np.mean(z_fit * z_fit))  # E[(θᵀf)²] on the fitting sample: the E Thm 1 is applied with
                z = z_fit if positive else test @ th
                if rho == CLAIM_RHO:  # Definition 1 for the CovLasso θ: |f_i − Σθ_j f_j| < ε with probability ≥ 1 − δ
                    p_claim = float(np.mean(np.abs(z) >= CLAIM_EPS * np.sqrt(c[i, i])))
                    claim = max(claim, p_claim / CLAIM_DELTA)
                    support.append(int(np.count_nonzero(th)) - 1)
                    if len(claim_rows) < 2:
                        claim_rows.append({"i": i, "P(|θᵀf| ≥ ε)": p_claim, "E_fit/Cov_ii": E / c[i, i],
                                           "nonzero θ_j (j ≠ i)": support[-1]})
                e_ratio.append(float(np.mean(z * z)) / max(E, np.finfo(float).tiny))
                eps = np.sqrt(E) * np.geomspace(0.2, 20, 25)
                P = (np.abs(z)[:, None] >= eps[None, :]).mean(0)
                bound = E / eps if planted else E / eps**2
                gap = P / bound
                worst = max(worst, float(gap.max()))
                held += int((gap <= 1 + 1e-12).sum())
                eps_fail.extend(eps[gap > 1 + 1e-12].tolist())
                total += gap.size
                if rho == 0.1 and len(rows) < 2:
                    k = int(np.argmax(gap))
                    rows.append({"i": i, "E_fit": E, "E_fresh/E_fit": e_ratio[-1], "ε": float(eps[k]), "P": float(P[k]),
                                 "bound": float(bound[k])})
        out[r] = {"max P/bound": worst, "share of (i, λ, ε) where the bound holds": held / total,
                  "ε where it fails (logit units; min, max)": [min(eps_fail), max(eps_fail)] if eps_fail else "none",
                  "E_fresh/E_fit (median, max)": [float(np.median(e_ratio)), float(np.max(e_ratio))],
                  "examples at the worst ε": rows,
                  "Thm 1 claim: max P(|θᵀf| ≥ ε)/δ": claim, "Thm 1 claim examples": claim_rows,
                  "support sizes at the claim's λ": support}
    return out


@check(
    "nd.markov_bound", equation="Thm 1 / Eq 3, Definition 1", kind="numeric",
    tolerance=f"Thm 1: P_fresh(|f_i − Σθ_j f_j| ≥ {CLAIM_EPS:g}·√Cov_ii) ≤ δ = {CLAIM_DELTA:g} for the CovLasso θ at "
              f"λ = {CLAIM_RHO:g}·λ_max(i); Eq 3: P_fresh(|θᵀf| ≥ ε)·ε²/E_fit ≤ 1 + 1e-12 for every ε; at N_fit = 100·n",
    erratum="Eq 3 bounds P(|θᵀf| ≥ ε) by E[(θᵀf)²]/ε; Markov's inequality applied to (θᵀf)² gives E[(θᵀf)²]/ε² "
            "(so Thm 1 needs E ≤ ε²δ, not εδ). The printed /ε form is not scale-invariant (logits × s: the left side "
            "at ε·s is unchanged, E/ε grows by s) and, measured on our logits with θ and E from a fitting sample and "
            "P on fresh samples, it fails for ε below 1 logit unit (negative control).",
    tolerance_reason="Thm 1 claims that the CovLasso θ satisfies Definition 1 (|f_i − Σθ_j f_j| < ε with probability "
                     "> 1 − δ) for some small ε, δ and an appropriate λ: judged with ε = 0.3 of the target logit's RMS, "
                     "δ = 0.05 and λ = 0.01·λ_max(i), all fixed before looking (θ = −e_i, no dependency, exceeds ε on "
                     "~70 % of inputs). It is used out of sample: θ*(λ) and E = E[(θᵀf)²] come from the data that "
                     "define Cov, the probability is that of a fresh input. Eq 3's Markov step must hold for every ε "
                     "(1e-12 absorbs rounding). N_fit = 100·n is the paper's regime (ImageNet: N/n ≈ 1280) fixed before "
                     "looking; N_fit/n = 10 and 2 are reported, not judged",
    negative_control="the paper's printed form P ≤ E/ε (Eq 3), same fitting and fresh samples, same ε grid",
    positive_control="the same comparison in sample (P on the fitting sample that defines E): Markov's inequality for "
                     "the empirical distribution, which holds by construction",
    figures=("nd.error_path",),
)
@_one_blas_thread
def markov_bound(ctx, planted, positive=False):
    cases = _markov_cases(ctx, planted, positive)
    main = cases[MARKOV_RATIOS[0]]
    worst = main["max P/bound"]
    claim = main["Thm 1 claim: max P(|θᵀf| ≥ ε)/δ"]
    bound = "E/ε (Eq 3 as printed)" if planted else "E/ε² (Markov)"
    miss = max(worst / (1 + 1e-12), claim)
    return Result(
        measured=worst, expected="<= 1 (max over ε of P(|θᵀf| ≥ ε) / bound; Thm 1: P(|θᵀf| ≥ ε)/δ)",
        holds=bool(miss <= 1), miss=float(miss),
        details={"bound": bound, "P measured on": "the fitting sample" if positive else "fresh samples",
                 "Thm 1 claim (judged at N_fit = 100·n): max P(|f_i − Σθ_j f_j| ≥ ε)/δ": claim,
                 "Definition 1 as judged": f"ε = {CLAIM_EPS:g}·√Cov_ii, δ = {CLAIM_DELTA:g}, λ = {CLAIM_RHO:g}·λ_max(i)",
                 **{f"N_fit = {r}·n{' (judged)' if r == MARKOV_RATIOS[0] else ' (reported)'}": v for r, v in cases.items()},
                 "model": "massive-category logits, noise 0.05; λ = ρ·λ_max, ρ ∈ {0.01, 0.1, 0.3}; ε ∈ √E_fit·[0.2, 20]"},
    )


# ---------------------------------------------------------------------------------------------- Eq 5
@check(
    "nd.error_path_monotone", equation="Eq 5, A16, A30", kind="numeric",
    tolerance="drops ≤ 1e-10·Cov_ii; err(0) = floor within 1e-8·Cov_ii; err(λ_max) = Cov_ii within 1e-12",
    tolerance_reason="the path is exact (fresh Cholesky solves): err is computed to rounding × κ(active block); "
                     "the floor comes from an independent Cholesky of the whole Cov",
    negative_control="Eq 5's upper end at scikit-learn's α_max = ‖Cov₋ᵢ,ᵢ‖_∞ taken as λ_max (Lasso's (1/2N) "
                     "objective has λ = 2α): err_i(θ*(λ_max/2)) = Cov_ii must then fail",
    figures=("nd.error_path",),
)
@_one_blas_thread
def error_path_monotone(ctx, planted):
    rng = ctx.rng("cov")
    n, p = (50, 30) if ctx.quick else (200, 120)
    F, _, _ = massive_category_logits(20 * n, n, p, rng, noise=0.05)
    c = dep.second_moment(F)
    floors = dep.error_floor(c)
    lmax_all = dep.lambda_max(c)
    worst_drop = worst_floor = worst_top = worst_cont = 0.0
    n_points = n_break = 0
    for i in rng.choice(n, size=4 if ctx.quick else 10, replace=False):
        i = int(i)
        path = covlasso_path(c, i)
        bp = path.breakpoints
        n_break += len(bp)
        grid = [bp]
        for k in range(len(bp) - 1):
            grid.append(bp[k + 1] + (bp[k] - bp[k + 1]) * np.array([0.25, 0.5, 0.75]))
        lams = np.sort(np.concatenate(grid))  # increasing λ
        th = path.at(lams)
        err = np.einsum("mi,ij,mj->m", th, c, th)
        n_points += len(lams)
        cii = c[i, i]
        worst_drop = max(worst_drop, float(np.max(np.maximum(err[:-1] - err[1:], 0.0)) / cii))
        worst_floor = max(worst_floor, abs(err[0] - floors[i]) / cii)
        top = lmax_all[i] / 2 if planted else lmax_all[i]
        th_top = covlasso(c, i, top)
        worst_top = max(worst_top, abs(dep.prediction_error(c, th_top) - cii) / cii)
        # continuity at breakpoints: an independent solve just above and below agrees with the path value there
        for k in range(1, min(len(bp) - 1, 6)):
            e0 = dep.prediction_error(c, path.coefs[k])
            for f in (1 - 1e-7, 1 + 1e-7):
                worst_cont = max(worst_cont, abs(dep.prediction_error(c, covlasso(c, i, bp[k] * f)) - e0) / cii)
    miss = max(worst_drop / 1e-10, worst_floor / 1e-8, worst_top / 1e-12, worst_cont / 1e-5)
    return Result(
        measured=max(worst_drop, worst_top), expected="0 (largest decrease of err along increasing λ; |err(top) − Cov_ii|)",
        holds=bool(miss <= 1), miss=float(miss),
        details={"largest drop of err as λ grows (units Cov_ii)": worst_drop,
                 "|err(θ*(0)) − 1/(Cov⁻¹)_ii| / Cov_ii": worst_floor,
                 f"|err(θ*({'λ_max/2' if planted else 'λ_max'})) − Cov_ii| / Cov_ii": worst_top,
                 "jump of err across a breakpoint (λ_k(1 ± 1e-7), units Cov_ii)": worst_cont,
                 "λ values evaluated": n_points, "breakpoints": n_break,
                 "model": f"massive-category logits n={n}, p={p}, noise 0.05"},
    )


# ---------------------------------------------------------------------------------------------- Eq 7–8
@check(
    "nd.kkt_sparsity", equation="Eq 7–8, A35–A37", kind="numeric", tolerance=f"KKT residual ≤ {KKT_TOL:g}·λ_max(i)",
    tolerance_reason="the homotopy's last step is a fresh Cholesky solve, so the residual is rounding-level even on "
                     "ill-conditioned low-rank-plus-noise Cov; 1e-9 leaves room for κ(active block) up to ~1e6",
    negative_control="θ solved on the covariance of float32 logits (torch's default dtype: Cov rounded to float32), "
                     "checked against the float64 KKT conditions",
)
@_one_blas_thread
def kkt_sparsity(ctx, planted):
    rng = ctx.rng("cov")
    count = 8 if ctx.quick else 30
    worst = worst_active = 0.0
    eq8_viol = eq8_cases = cd_mismatch = cd_cases = 0
    eq8_depth = 0.0
    for t in range(count + 3):
        n = int(rng.integers(5, 40 if ctx.quick else 120)) if t < count else int(rng.integers(4, 12))
        if t >= count:  # small, well-conditioned: also solved by the reference coordinate descent
            c = spd_with_condition(n, 10 ** rng.uniform(0, 2), rng)
        elif t % 2:
            c = spd_with_condition(n, 10 ** rng.uniform(0, 6), rng, scale=10 ** rng.uniform(-2, 2))
        else:
            F = lowrank_logits(2 * n + 5, n, max(1, n // 5), 10 ** rng.uniform(-4, -1), rng)
            c = dep.second_moment(F)
        if t >= count or t % 2:  # logits with this second moment: F = √n·Cov^{1/2} (n samples)
            w, Q = np.linalg.eigh(c)
            F = np.sqrt(n) * (Q * np.sqrt(np.maximum(w, 0))) @ Q.T
        solve_on = dep.second_moment(F.astype(np.float32).astype(np.float64)) if planted else c
        for i in rng.choice(n, size=3, replace=False):
            i = int(i)
            rest, C, b = _split(c, i)
            lm = 2 * np.abs(b).max()
            for rho in (0.01, 0.2, 0.6):
                lam = rho * lm
                th = covlasso(solve_on, i, lam)
                worst = max(worst, kkt_violation(c, i, lam, th))
                g = b - C @ th[rest]  # correlations: |g_j| ≤ λ/2, = (λ/2)·sign(θ_j) on the support
                on = th[rest] != 0
                if on.any():
                    worst_active = max(worst_active, float(np.abs(g[on] - lam / 2 * np.sign(th[rest][on])).max() / lm))
                strict = np.abs(g) < lam / 2 * (1 - 1e-9)
                eq8_cases += int(strict.sum())
                eq8_viol += int((strict & on).sum())
                if on.any():  # Eq 8 graded: how far below the bar λ/2 a nonzero coefficient's correlation sits
                    eq8_depth = max(eq8_depth, float((lam / 2 - np.abs(g[on])).max() / lm))
                if n <= 15 and np.linalg.cond(C) < 1e4:
                    cd = covlasso_cd(c, i, lam)
                    cd_cases += 1
                    cd_mismatch += int(not np.array_equal(cd != 0, th != 0))
    miss = max(worst / KKT_TOL, eq8_depth / KKT_TOL, cd_mismatch / 0.5)  # a count must be 0: tolerance 0.5
    return Result(
        measured=worst, expected=f"<= {KKT_TOL:g} (KKT residual / λ_max(i)); Eq 8 never violated; CD support equal",
        holds=bool(miss <= 1), miss=float(miss),
        details={"worst KKT residual on the support (units λ_max)": worst_active,
                 "Eq 8: categories with |Ĉov_jθ̂ − b̂_j| < λ/2·(1 − 1e-9) that have θ_j ≠ 0": f"{eq8_viol}/{eq8_cases}",
                 "Eq 8 depth: max (λ/2 − |Ĉov_jθ̂ − b̂_j|)/λ_max over θ_j ≠ 0": eq8_depth,
                 "support differs from coordinate descent (n ≤ 15, κ < 1e4)": f"{cd_mismatch}/{cd_cases}",
                 "problems": f"{count} covariances (spd κ ≤ 1e6, low-rank+noise logits) + 3 small ones × 3 categories × 3 λ"},
    )


# ---------------------------------------------------------------------------------------------- Thm 2
@check(
    "nd.slope_bound", equation="Thm 2 / Eq 9, A45–A58", kind="numeric", tolerance="LHS/RHS ≤ 1 + 1e-9",
    tolerance_reason="an inequality between exact quantities; 1e-9 absorbs rounding of the path and of A = Ĉov^{1/2}",
    negative_control="Eq 9 with ‖A_j‖‖A⁻ᵀb̂‖ replaced by |b̂_j| (the 'nearly orthogonal' approximation that leads "
                     "from Thm 3 to Conj 1)",
)
@_one_blas_thread
def slope_bound(ctx, planted):
    rng = ctx.rng("cov")
    worst, tight, pairs, ident = 0.0, 0.0, 0, 0.0
    per_family = {}
    for name, c in _thm_problems(rng, ctx.quick):
        n = c.shape[0]
        for i in rng.choice(n, size=3, replace=False):
            i = int(i)
            rest, C, b = _split(c, i)
            Aj, nb, alt_Aj, alt_nb = _thm2_constants(C, b)
            ident = max(ident, float(np.abs(Aj - alt_Aj).max() / alt_Aj.max()), abs(nb - alt_nb) / alt_nb)
            lm = 2 * np.abs(b).max()
            path = covlasso_path(c, i, lams=[0.02 * lm])
            lams = np.unique(np.concatenate([path.breakpoints[path.breakpoints > 0], lm * rng.uniform(0.02, 1, 12)]))
            th = path.at(lams)[:, rest]
            G = (th @ C - b) / lams[:, None]  # (Ĉov_jθ̂ − b̂_j)/λ, one row per λ
            inv = 1.0 / lams
            lhs = np.abs(G[:, None, :] - G[None, :, :])
            scale = np.abs(b) if planted else Aj * nb
            rhs = scale[None, None, :] * np.abs(inv[:, None] - inv[None, :])[:, :, None]
            mask = rhs > 0
            ratio = np.where(mask, lhs / np.where(mask, rhs, 1.0), np.where(lhs > 1e-12 * lm, np.inf, 0.0))
            off = ~np.eye(len(lams), dtype=bool)
            r = float(ratio[off].max())
            worst = max(worst, r)
            tight = max(tight, float(np.median(ratio[off])))
            pairs += int(off.sum()) * len(rest)
            per_family[name] = max(per_family.get(name, 0.0), r)
    return Result(
        measured=worst, expected="<= 1 (max over λ', λ'', j of LHS/RHS of Eq 9)", holds=bool(worst <= 1 + 1e-9),
        miss=float(worst / (1 + 1e-9)),
        details={"max ratio per family": per_family, "(λ', λ'', j) triples": pairs,
                 "largest median ratio (how tight Eq 9 is)": tight,
                 "‖A_j‖ = √Ĉov_jj and ‖A⁻ᵀb̂‖ = √(b̂ᵀĈov⁻¹b̂): worst relative disagreement": ident},
    )


# ---------------------------------------------------------------------------------------------- Thm 3
@check(
    "nd.screening_rule", equation="Thm 3 / Eq 13 (Eq 10–12)", kind="numeric",
    tolerance="0 screened categories with θ_j ≠ 0",
    tolerance_reason="Thm 3 is a safe rule: a single category it screens out but the exact solution keeps refutes it",
    negative_control="Eq 13 with ‖A_j‖‖A⁻ᵀb̂‖ replaced by |b̂_j| (algebraically Conj 1's rule |b̂_j| < λ/2), which "
                     "is not safe",
)
@_one_blas_thread
def screening_rule(ctx, planted):
    rng = ctx.rng("cov")
    fired = viol = zeros = cases = 0
    per_family = {}
    for name, c in _thm_problems(rng, ctx.quick):
        n = c.shape[0]
        for i in range(0, n, 3 if ctx.quick else 2):
            rest, C, b = _split(c, i)
            Aj, nb, _, _ = _thm2_constants(C, b)
            B = np.abs(b).max()
            lm = 2 * B
            path = covlasso_path(c, i, lams=lm * np.linspace(0.02, 0.98, 25))
            for lam, th in zip(path.lams, path.thetas):
                slope = (np.abs(b) if planted else Aj * nb) * abs(1 / lam - 1 / lm)
                rule = np.abs(b) / B < 1 - 2 * slope
                nz = th[rest] != 0
                fired += int(rule.sum())
                viol += int((rule & nz).sum())
                zeros += int((~nz).sum())
                cases += len(rest)
                f = per_family.setdefault(name, [0, 0])
                f[0] += int(rule.sum())
                f[1] += int((rule & nz).sum())
    return Result(
        measured=viol, expected="0 screened-out categories with θ_j ≠ 0", holds=bool(viol == 0 and fired > 0),
        miss=float(viol / 0.5 if fired > 0 else np.inf),  # a count must be 0 (tolerance 0.5); a rule that never fires says nothing
        details={"categories screened out by the rule": f"{fired} of {zeros} true zeros ({cases} (j, λ) cases)",
                 "screened but nonzero": viol,
                 "per family [screened, screened but nonzero]": per_family,
                 "λ grid": "ρ·λ_max, 25 values of ρ in [0.02, 0.98]"},
    )


# ---------------------------------------------------------------------------------------------- Sec 2.2
def _offset_logits(rng, p: int, quick: bool) -> dict:
    """The massive-category case with per-category offsets: f = S W h + b with p = n − 2 latents, rows of W and
    the offsets b scaled by 10^U(−3, 3), N = 5n logits through ``second_moment`` (rank p + 1 = n − 1: every floor
    is 0 in exact arithmetic). Judged by the floor's definition as a minimum: R_i may not exceed err_i(θ)/Cov_ii
    of least squares on the logits, on a square root of Cov, or CovLasso at ρ = 1e-12 (rounding units of err itself)."""
    from verify.checks.nd._floor_families import floor_excess, zero_pattern_violations

    n = p + 2
    worst, zeros, reps = -np.inf, 0, 6 if quick else 30
    zp = [0, 0]
    for _ in range(reps):
        W = rng.standard_normal((n, p)) * 10 ** rng.uniform(-3, 3, n)[:, None]
        b = 10 ** rng.uniform(-3, 3, n) * rng.choice([-1.0, 1.0], n)
        F = rng.standard_normal((5 * n, p)) @ W.T + b
        C = dep.second_moment(F)
        R = dep.relative_floor(C)
        zeros += int((R == 0).sum())
        worst = max(worst, floor_excess(C, R, range(n), covlasso_idx={int(rng.integers(n))}, root=F / np.sqrt(5 * n)))
        zp = [a + b for a, b in zip(zp, zero_pattern_violations(C, R, F, 1))]
    return {"draws": reps, "n": n, "categories with R = 0": f"{zeros}/{reps * n}",
            "max (R − err_i(θ)/Cov_ii), rounding units": float(worst),
            "resolved exact combinations with R ≠ 0 / judged": zp}


@check(
    "nd.massive_categories", equation="Sec 2.2, A30–A33", kind="sim",
    tolerance="n > p: R ≤ 1e-12; n ≤ p: mean R = (p−n+1)/p within 4 standard errors; f = Wh + b, p = n − 2: R_i ≤ "
              "err_i(θ)/Cov_ii + rounding of θᵀCovθ (least squares, CovLasso) and R = 0 for resolvable exact combinations",
    tolerance_reason="for n > p the floor is 0 exactly (Cov has rank p) and numerically a rounding residual; for "
                     "n ≤ p with Gaussian W, R_i = ‖P⊥w_i‖²/‖w_i‖² ~ Beta((p−n+1)/2, (n−1)/2), mean (p−n+1)/p. Logit "
                     "scales are spread over 6 decades (rows of W × 10^U(−3, 3)): R must not notice",
    negative_control="the residual dimension of w_i against the n − 1 others counted as p − n instead of p − n + 1 "
                     "(an off-by-one in the law: mean R = (p − n)/p)",
    positive_control="the same comparison on relative floors drawn from the law itself (Beta((p−n+1)/2, (n−1)/2) "
                     "for n ≤ p, exact zeros for n > p), where it holds by construction",
    figures=("nd.massive_floors",), cost=10,
)
@_one_blas_thread
def massive_categories(ctx, planted, positive=False):
    rng = ctx.rng("W")
    p = 40 if ctx.quick else 120
    # W draws per n/p ≤ 1: enough for a shift of the law by 1/p (an off-by-one in the residual dimension) to be
    # ≥ 10 se (measured ≈ 0.66·√reps se); n > p: R = 0 exactly whatever the draw, 3 draws
    reps_law = 300 if ctx.quick else 400
    reps_vanish = 10 if ctx.quick else 30  # n > p: R = 0 exactly; a 1e-10 floor from a pivot-only Cholesky shows in ~1/10
    ratios = (0.25, 0.5, 0.75, 1.1, 2.0, 4.0) if ctx.quick else (0.25, 0.5, 0.75, 0.9, 1.1, 1.5, 2.0, 4.0)
    rows = {}
    worst_vanish = law_z = solver_rel = invariance = 0.0
    for r in [*ratios, "p+1"]:
        n = p + 1 if r == "p+1" else max(2, int(round(r * p)))
        means, res, maxR = [], [], 0.0
        reps = reps_law if n <= p else reps_vanish
        for rep in range(reps):
            W = rng.standard_normal((n, p))
            S = 10 ** rng.uniform(-3, 3, n)  # heterogeneous logit scales
            Wh = S[:, None] * W
            if positive:
                R_pop = rng.beta((p - n + 1) / 2, (n - 1) / 2, size=n) if n <= p else np.zeros(n)
            else:
                R_pop = dep.relative_floor(Wh @ Wh.T)  # population Cov of f = S W h, h ~ N(0, I_p)
                if rep == 0:
                    invariance = max(invariance, float(np.max(np.abs(R_pop - dep.relative_floor(W @ W.T)))))
            means.append(float(R_pop.mean()))
            maxR = max(maxR, float(R_pop.max()))
            if rep == 0 and not positive:
                # independent route on sampled logits: least-squares residual of f_i on the others (Eq 2, λ = 0)
                F = rng.standard_normal((2 * max(n, p), p)) @ Wh.T
                for i in rng.choice(n, size=min(n, 3), replace=False):
                    rest = np.delete(np.arange(n), i)
                    beta, *_ = np.linalg.lstsq(F[:, rest], F[:, i], rcond=None)
                    e = F[:, i] - F[:, rest] @ beta
                    res.append(float(e @ e / (F[:, i] @ F[:, i])))
                if n > p:
                    c = dep.second_moment(F)
                    th = covlasso(c, 0, rho=1e-12)
                    solver_rel = max(solver_rel, dep.prediction_error(c, th) / c[0, 0])
        if n > p:
            worst_vanish = max(worst_vanish, max(res, default=0.0), maxR)
        key = f"n = p + 1 (n={n})" if r == "p+1" else f"n/p={r:g} (n={n})"
        if n <= p:
            law = (p - n) / p if planted else (p - n + 1) / p
            se = float(np.std(means, ddof=1) / np.sqrt(reps))
            z = abs(np.mean(means) - law) / max(se, 1e-300)
            law_z = max(law_z, z)
            rows[key] = {"mean R": float(np.mean(means)), "± se": se, "law": law, "|mean − law|/se": float(z),
                         "median lstsq residual": float(np.median(res)) if res else None}
        else:
            rows[key] = {"max R": maxR, "max lstsq residual": max(res, default=None)}
    offsets = {} if positive else _offset_logits(rng, 40, ctx.quick)  # n = 42 in both modes (cost: n lstsq per draw)
    excess = max(offsets.get("max (R − err_i(θ)/Cov_ii), rounding units", 0.0),
                 offsets.get("resolved exact combinations with R ≠ 0 / judged", [0])[0] / 0.5)
    miss = max(worst_vanish / 1e-12, law_z / 4.0, invariance / 1e-12, excess)
    return Result(
        measured=law_z, expected="<= 4 (largest |mean R − law|/se, n ≤ p); R ≤ 1e-12 for n > p", holds=bool(miss <= 1),
        miss=float(miss),
        details={"per n/p": rows, "largest |mean R − law| / se (n ≤ p)": law_z,
                 "largest relative floor where n > p": worst_vanish,
                 "max |R(S W Wᵀ S) − R(W Wᵀ)|, S over 6 decades": invariance,
                 "CovLasso at ρ = 1e-12, n > p: err/Cov_ii": solver_rel, "p": p,
                 "W draws per n/p": f"{reps_law} (n ≤ p), {reps_vanish} (n > p)",
                 "f = W h + b, n = p + 2, N = 5n sampled logits, scales and offsets over 6 decades": offsets,
                 "law": "(p − n)/p (planted off-by-one)" if planted else "(p − n + 1)/p",
                 "model": "f = S W h, h ~ N(0, I_p), W Gaussian n×p, S = diag(10^U(−3,3)); R from the population Cov, "
                          "the least-squares residual from N = 2·max(n, p) sampled logits"},
    )


# ---------------------------------------------------------------------------------------------- Sec 2.4
def _tab1_metric_error(d, F, G, y, i: int) -> float:
    """ND Tab 1's metrics of g_i replaced by f̂ = Σ_{j≠i} θ_j f_j, recomputed plainly from the logits and θ and compared
    with what the library returned: relative error of abs/rel err, and 1 for any accuracy that differs."""
    rest = np.delete(np.arange(F.shape[1]), i)
    pred = F[:, rest] @ d.theta[rest]
    abs_err = float(np.mean(np.abs(G[:, i] - pred)))
    R = G.copy()
    R[:, i] = pred
    hit, pos = R.argmax(1) == y, y == i
    ref = {"abs_err": abs_err, "rel_err": abs_err / float(np.mean(np.abs(G[:, i]))), "acc": float(hit.mean()),
           "pos_acc": float(hit[pos].mean()) if pos.any() else None}
    err = max(abs(d.metrics[k] - ref[k]) / max(abs(ref[k]), 1e-300) for k in ("abs_err", "rel_err"))
    for k in ("acc", "pos_acc"):
        if d.metrics[k] != ref[k]:
            err = max(err, 1.0)
    return float(err)


@check(
    "nd.between_networks", equation="Sec 2.4 (Eq 2, 5, 7 for f̃), Fig 2e–f", kind="numeric",
    tolerance=f"status: identities within 1e-9 relative, KKT ≤ {KKT_TOL:g}·λ_max; reading line (glyph networks): some category of g shows "
              "ND's picture predicted from f's other logits (support ≤ 4, held-out error ≤ 0.3 of the logit's spread, "
              "acc ≥ 0.95·ori, pos acc ≥ 0.85·ori) at some ρ of the grid, chosen on the selection images and "
              "confirmed on the held-out faces",
    tolerance_reason="the claim catalogued is Sec 2.4's: the identities hold for f̃ as for one network; all are exact "
                     "for the second moment of f̃, and the tolerances are rounding of n×n solves. "
                     "The glyph reading line reads Fig 2e–f (chosen cases, 'we can observe clear neural dependencies' "
                     "between networks) as ND's existential claim with Table 1's tolerances (verify/checks/_shared/nd_scan.py, "
                     "glyph_real.py); the typical reading (median over a seeded draw at ρ = 0.02) is reported",
    negative_control="the cross moments E[f g_i] and E[g_i²] normalised by N − 1 (np.cov's default) while E[f fᵀ] "
                     "uses N: mixed_cov then builds a slightly inconsistent Coṽ, solved and checked against f̃'s KKT "
                     "conditions, λ_max and floor; on the glyph networks, f's held-out logits taken from other "
                     "images than g's (rows permuted: the pairing by image is lost)",
    positive_control="the glyph verdict's code on synthetic logits where g's category 0 is an exact combination "
                     "f_0 = 1.064·f_1 + 0.38·f_2 + 0.4·f_3 (f_3 ≡ 2, a bias-only logit) of f's others (f's own "
                     "column 0 replaced by noise)",
    figures=("nd.glyph_between_networks",), prepare=gp.suite_nets("lenet-s{s}", "lenet-s{s1}", outputs=True),
    cost=30,
)
@_one_blas_thread
def between_networks(ctx, planted, positive=False):
    """ND Sec 2.4 in two lines, one status. (1) The identities on synthetic two-network logits (exact: a miss is a
    library bug). (2) The glyph verdict: two independently trained 1000-class glyph LeNets (suite lenet-s<seed>,
    lenet-s<seed+1>; 100 classes in --quick), g's logit i predicted from f's others (verify/checks/_shared/glyph_real.py).
    Status: the identities (CLAIMS.md's claim); broken, no finding: ``fail``. The glyph lines (there exists,
    typical) are readings of Fig 2e–f beside the status, each with its regime and undecided reason.
    The positive control runs the glyph line's code on planted logits (the identities have no positive side)."""
    from verify.checks._shared import nd_scan as S_
    from verify.checks._shared.glyph_real import between_details, between_finding, between_glyph

    if positive:
        gl = between_glyph(ctx, planted, positive=True)
        return Result(measured=S_.summary(gl["existential"]), expected="category 0 confirmed (planted)",
                      holds=gl["holds"], miss=gl["miss"], details={"planted": S_.details(gl["existential"])})
    rng = ctx.rng("nets")
    n, p, N = (40, 25, 4000) if ctx.quick else (120, 80, 20000)
    F, G, y = two_networks(N, n, p, rng)
    cov_f = dep.second_moment(F)
    norm = N - 1 if planted else N
    cross = F.T @ G / norm
    worst_build = worst_kkt = worst_floor = worst_lmax = worst_metrics = 0.0
    rel_floors, metrics = [], []
    for i in rng.choice(n, size=4 if ctx.quick else 10, replace=False):
        i = int(i)
        Ft = mixed_logits(F, G, i)
        ct = gram(Ft)  # the reference: f̃'s Gram by a plain product, independent of second_moment
        cm = mixed_cov(cov_f, cross, float(G[:, i] @ G[:, i] / norm), i)
        worst_build = max(worst_build, float(np.abs(cm - ct).max() / np.abs(ct).max()))
        solve_on = cm  # what a user builds from the second moments alone
        rest, _, b = _split(ct, i)
        lm = 2 * np.abs(b).max()
        lm_solve = 2 * np.abs(np.delete(solve_on[:, i], i)).max()
        worst_lmax = max(worst_lmax, abs(lm_solve - lm) / lm)
        for rho in (0.05, 0.3):
            th = covlasso(solve_on, i, rho * lm)
            worst_kkt = max(worst_kkt, kkt_violation(ct, i, rho * lm, th))
        th0 = covlasso(solve_on, i, 0.0)
        fl = dep.error_floor(ct)[i]
        worst_floor = max(worst_floor, abs(dep.prediction_error(ct, th0) - fl) / ct[i, i])
        rel_floors.append(fl / ct[i, i])
        if not planted and len(metrics) < 2:
            d = dependencies(F, i, rho=0.05, labels=y, g=G)
            metrics.append({"i": i, "support size": int(d.support.size), "rel err": d.rel_err,
                            **{k: round(v, 4) if isinstance(v, float) else v for k, v in d.metrics.items()}})
            worst_metrics = max(worst_metrics, _tab1_metric_error(d, F, G, y, i))
    miss_id = max(worst_build / 1e-9, worst_kkt / KKT_TOL, worst_floor / 1e-8, worst_lmax / 1e-12,
                  worst_metrics / 1e-9)
    gl = between_glyph(ctx, planted)
    finding = between_finding(gl) if miss_id <= 1 and gl["miss"] > 1 and not planted else None
    existential = {"quantifier": "there exists", "holds": bool(gl["miss"] <= 1), "miss": round(float(gl["miss"]), 3),
                   "measured": S_.summary(gl["existential"]), "undecided": gl["undecided"],
                   "regime": gl.get("regime")}
    return Result(
        measured=f"KKT {worst_kkt:.2e}; glyph: {S_.summary(gl['existential'])}",
        expected=f"KKT <= {KKT_TOL:g}·λ_max (the identities); glyph lines: readings",
        holds=bool(miss_id <= 1), miss=float(miss_id), finding=finding,
        readings={"glyph, there exists: some category of g confirmed on the held-out faces (Fig 2e–f)": existential,
                  "glyph, typical: median over a seeded random draw at ρ = 0.02 (Table 1's tolerances)":
                      S_.typical_line(gl)},
        details={"mixed_cov from cross moments vs Gram of f̃ (relative)": worst_build,
                 "|λ_max used − 2 max_j |E[f_j g_i]|| / λ_max": worst_lmax,
                 "|err(θ*(0)) − 1/(Coṽ⁻¹)_ii| / E[g_i²]": worst_floor,
                 "relative floors of g_i on f (median, max)": [float(np.median(rel_floors)), float(np.max(rel_floors))],
                 "Table 1 metrics, g_i replaced by Σθ_j f_j (ρ = 0.05)": metrics,
                 "Table 1 metrics vs a plain recomputation (abs/rel error relative; accuracies exact)": worst_metrics,
                 "model": f"f = W_f h, g = W_g(h + 0.1ξ), noise 0.01, n={n}, p={p}, N={N}",
                 "identities: miss (tolerance units)": float(miss_id), **between_details(gl)},
    )
