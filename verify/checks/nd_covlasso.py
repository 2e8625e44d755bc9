"""ND checks that need the CovLasso solution: Thm 1 (Markov), Eq 5 path, Eq 7–8 KKT, Thm 2, Thm 3, Conj 1,
Sec 2.2 massive categories and Sec 2.4 between networks.

Every θ*(λ) comes from the exact homotopy (:mod:`theory.covlasso`); the reference coordinate descent
and closed forms (:mod:`theory.dependency`) are the independent sides of the comparisons. Each
``compare(ctx, planted)`` runs the same comparison against the paper's statement or, with
``planted=True``, against a planted wrong one (the negative control).
"""
from __future__ import annotations

import json

import numpy as np

from sims.cache import atomic_write_text
from sims.threads import single_threaded
from sims.nd_models import massive_category_logits, two_networks
from sims.spd import gram, lowrank_logits, spd_with_condition
from theory import dependency as dep
from theory.covlasso import covlasso, covlasso_all, covlasso_cd, covlasso_path, kkt_violation, kkt_violation_all
from theory.neural_dependency import dependencies, mixed_cov, mixed_logits
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
        out.append(("low-rank+noise logits", gram(lowrank_logits(6 * n, n, n // 4, 0.1, rng))))
        out.append(("massive-category model", gram(massive_category_logits(20 * n, n, (2 * n) // 3, rng, noise=0.05)[0])))
    return out


# ---------------------------------------------------------------------------------------------- Thm 1
@check(
    "nd.markov_bound", equation="Thm 1 / Eq 3", kind="numeric", tolerance="P·ε²/E ≤ 1 + 1e-12",
    erratum="Eq 3 bounds P(|θᵀf| ≥ ε) by E[(θᵀf)²]/ε; Markov's inequality applied to (θᵀf)² gives E[(θᵀf)²]/ε² "
            "(so Thm 1 needs E ≤ ε²δ, not εδ). The /ε form is not scale-invariant and fails for ε below the "
            "logit scale (negative control).",
    tolerance_reason="Markov's inequality holds exactly for the empirical distribution whose second moment defines "
                     "Cov; 1e-12 absorbs rounding of E and of the frequencies",
    negative_control="the paper's printed form P ≤ E/ε (Eq 3), on the same samples and ε grid",
    figures=("nd.error_path",),
)
@_one_blas_thread
def markov_bound(ctx, planted):
    rng = ctx.rng("logits")
    n, p, N = (60, 30, 4000) if ctx.quick else (200, 100, 20000)
    F, y, _ = massive_category_logits(N, n, p, rng, noise=0.05)
    test, _, _ = massive_category_logits(N, n, p, np.random.default_rng(rng.integers(2**63)), noise=0.05)
    c = gram(F)
    worst, worst_test, viol, total, rows = -np.inf, -np.inf, 0, 0, []
    for i in rng.choice(n, size=5, replace=False):
        i = int(i)
        for rho in (0.01, 0.1, 0.3):
            th = covlasso(c, i, rho=rho)
            for data, is_test in ((F, False), (test, True)):
                z = data @ th  # θᵀf = −(f_i − Σ_j θ_j f_j) per sample
                E = float(np.mean(z * z))
                eps = np.sqrt(E) * np.geomspace(0.2, 20, 25)
                P = (np.abs(z)[:, None] >= eps[None, :]).mean(0)
                bound = E / eps if planted else E / eps**2
                gap = P / bound  # ≤ 1 where the bound holds
                if is_test:
                    worst_test = max(worst_test, float(gap.max()))
                else:
                    worst = max(worst, float(gap.max()))
                viol += int((gap > 1 + 1e-12).sum())
                total += gap.size
                if not is_test and rho == 0.1 and len(rows) < 3:
                    k = int(np.argmax(P * eps / E))
                    rows.append({"i": i, "E": E, "rel_err": float(E / c[i, i]), "eps": float(eps[k]), "P": float(P[k]),
                                 "E/eps^2": float(E / eps[k] ** 2), "E/eps (Eq 3)": float(E / eps[k])})
    worst_all = max(worst, worst_test)
    return Result(
        measured=worst_all, expected="<= 1 (max over ε of P(|θᵀf| ≥ ε) / bound)", holds=bool(worst_all <= 1 + 1e-12),
        details={"bound": "E/ε (Eq 3 as printed)" if planted else "E/ε² (Markov)",
                 "violations / (ε, category, λ, sample set) cases": f"{viol}/{total}",
                 "max P/bound, fitting samples": worst, "max P/bound, fresh samples (E measured on them)": worst_test,
                 "examples at the ε where P/(E/ε) is largest": rows,
                 "model": f"massive-category logits n={n}, p={p}, N={N}, noise 0.05; λ = ρ·λ_max, ρ ∈ {{0.01, 0.1, 0.3}}"},
    )


# ---------------------------------------------------------------------------------------------- Eq 5
@check(
    "nd.error_path_monotone", equation="Eq 5, A16, A30", kind="numeric",
    tolerance="drops ≤ 1e-10·Cov_ii; err(0) = floor within 1e-8·Cov_ii; err(λ_max) = Cov_ii within 1e-12",
    tolerance_reason="the path is exact (fresh Cholesky solves): err is computed to rounding × κ(active block); "
                     "the floor comes from an independent Cholesky of the whole Cov",
    negative_control="Eq 5's upper end with the main text's garbled λ_max = ‖Cov₋ᵢ,ᵢ‖_∞ (A47's factor 2 dropped): "
                     "err_i(θ*(λ_max/2)) = Cov_ii must then fail",
    figures=("nd.error_path",),
)
@_one_blas_thread
def error_path_monotone(ctx, planted):
    rng = ctx.rng("cov")
    n, p = (50, 30) if ctx.quick else (200, 120)
    F, _, _ = massive_category_logits(20 * n, n, p, rng, noise=0.05)
    c = gram(F)
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
    holds = worst_drop <= 1e-10 and worst_floor <= 1e-8 and worst_top <= 1e-12 and worst_cont <= 1e-5
    return Result(
        measured=max(worst_drop, worst_top), expected="0 (largest decrease of err along increasing λ; |err(top) − Cov_ii|)",
        holds=bool(holds),
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
    negative_control="θ solved on a perturbed covariance (Cov + 1e-3·‖Cov‖·PSD noise), checked against the original KKT",
)
@_one_blas_thread
def kkt_sparsity(ctx, planted):
    rng = ctx.rng("cov")
    count = 8 if ctx.quick else 30
    worst = worst_active = 0.0
    eq8_viol = eq8_cases = cd_mismatch = cd_cases = 0
    for t in range(count + 3):
        n = int(rng.integers(5, 40 if ctx.quick else 120)) if t < count else int(rng.integers(4, 12))
        if t >= count:  # small, well-conditioned: also solved by the reference coordinate descent
            c = spd_with_condition(n, 10 ** rng.uniform(0, 2), rng)
        elif t % 2:
            c = spd_with_condition(n, 10 ** rng.uniform(0, 6), rng, scale=10 ** rng.uniform(-2, 2))
        else:
            c = gram(lowrank_logits(2 * n + 5, n, max(1, n // 5), 10 ** rng.uniform(-4, -1), rng))
        solve_on = c
        if planted:
            E = rng.standard_normal((n, n))
            solve_on = c + 1e-3 * np.abs(c).max() * (E @ E.T) / n
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
                if n <= 15 and not planted and np.linalg.cond(C) < 1e4:
                    cd = covlasso_cd(c, i, lam)
                    cd_cases += 1
                    cd_mismatch += int(not np.array_equal(cd != 0, th != 0))
    holds = worst <= KKT_TOL and eq8_viol == 0 and cd_mismatch == 0
    return Result(
        measured=worst, expected=f"<= {KKT_TOL:g} (KKT residual / λ_max(i)); Eq 8 never violated; CD support equal", holds=bool(holds),
        details={"worst KKT residual on the support (units λ_max)": worst_active,
                 "Eq 8: categories with |Ĉov_jθ̂ − b̂_j| < λ/2 that have θ_j ≠ 0": f"{eq8_viol}/{eq8_cases}",
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
        details={"categories screened out by the rule": f"{fired} of {zeros} true zeros ({cases} (j, λ) cases)",
                 "screened but nonzero": viol,
                 "per family [screened, screened but nonzero]": per_family,
                 "λ grid": "ρ·λ_max, 25 values of ρ in [0.02, 0.98]"},
    )


# ---------------------------------------------------------------------------------------------- Conj 1
def _conj1_depth(c: np.ndarray, i: int, rho: float) -> tuple[float, int, np.ndarray]:
    """How far below Conj 1's bar a nonzero coefficient sits: max_j (λ/2 − |b̂_j|)/(λ_max/2) over θ_j ≠ 0 (≤ 0: none)."""
    rest, _, b = _split(c, i)
    B = np.abs(b).max()
    th = covlasso(c, i, rho * 2 * B)
    nz = th[rest] != 0
    depth = np.where(nz, (rho * B - np.abs(b)) / B, -np.inf)
    k = int(np.argmax(depth))
    return float(depth[k]), int(rest[k]), th


def _suppressor(a: float = 0.6, r: float = 0.7) -> np.ndarray:
    """A 3-category counterexample: f_2 is uncorrelated with the target f_0 (b̂ = (a, 0)) but correlated with f_1."""
    return np.array([[1.0, a, 0.0], [a, 1.0, r], [0.0, r, 1.0]])


def _family_matrices(rng, quick: bool):
    n = 20 if quick else 50
    reps = 2 if quick else 6
    fam = {"low-rank+noise logits": [], "massive-category model": [], "equicorrelated": [], "AR(1) Toeplitz": [],
           "block": [], "Wishart": [], "random spectrum κ≤1e4": []}
    for _ in range(reps):
        fam["low-rank+noise logits"].append(gram(lowrank_logits(5 * n, n, n // 4, 0.1, rng)))
        fam["massive-category model"].append(gram(massive_category_logits(20 * n, n, n // 2, rng, noise=0.05)[0]))
        r = rng.uniform(0.1, 0.9)
        fam["equicorrelated"].append((1 - r) * np.eye(n) + r * np.ones((n, n)))
        phi = rng.uniform(0.3, 0.95)
        idx = np.arange(n)
        fam["AR(1) Toeplitz"].append(phi ** np.abs(idx[:, None] - idx[None, :]))
        blocks = rng.integers(0, 4, size=n)
        fam["block"].append(np.where(blocks[:, None] == blocks[None, :], rng.uniform(0.3, 0.8), 0.0) * 1.0
                            + np.diag(np.ones(n)) * 0.5)
        X = rng.standard_normal((2 * n, n))
        fam["Wishart"].append(X.T @ X / (2 * n))
        fam["random spectrum κ≤1e4"].append(spd_with_condition(n, 10 ** rng.uniform(1, 4), rng))
    for k in fam:
        fam[k] = [0.5 * (m + m.T) for m in fam[k]]
    return fam


@check(
    "nd.conjecture1", equation="Conj 1 / Eq 14", kind="sim", tolerance="reported (violation rates, no verdict)",
    reports=True, figures=("nd.fig3_cov_vs_theta",),
    tolerance_reason="a conjecture: we measure how often |E[f_i f_j]| < λ/2 coexists with θ_j ≠ 0 and search for "
                     "the worst counterexample",
    negative_control="the converse claim 'θ_j ≠ 0 whenever |E[f_i f_j]| ≥ λ/2' on the same problems, which must fail",
)
@_one_blas_thread
def conjecture1(ctx, planted):
    rng = ctx.rng("families")
    rhos = (0.1, 0.3, 0.5, 0.7, 0.9)
    rates = {}
    tot_prob = tot_prob_viol = tot_screen = tot_screen_viol = 0
    for name, mats in _family_matrices(rng, ctx.quick).items():
        prob = prob_viol = screen = screen_viol = 0
        for c in mats:
            n = c.shape[0]
            for i in range(0, n, 2):
                rest, _, b = _split(c, i)
                lm = 2 * np.abs(b).max()
                for rho in rhos:
                    th = covlasso(c, i, rho * lm)[rest]
                    below = np.abs(b) < rho * lm / 2
                    sel = ~below if planted else below  # planted: the converse, |b̂_j| ≥ λ/2 ⇒ θ_j ≠ 0
                    bad = sel & ((th == 0) if planted else (th != 0))
                    prob += 1
                    prob_viol += int(bad.any())
                    screen += int(sel.sum())
                    screen_viol += int(bad.sum())
        rates[name] = {"problems (i, λ) with a violation": f"{prob_viol}/{prob}",
                       "screened j that are nonzero" if not planted else "j above the bar that are zero":
                           f"{screen_viol}/{screen} = {screen_viol / max(screen, 1):.2%}"}
        tot_prob += prob
        tot_prob_viol += prob_viol
        tot_screen += screen
        tot_screen_viol += screen_viol
    details = {"per family": rates, "λ": "ρ·λ_max(i), ρ ∈ {0.1, 0.3, 0.5, 0.7, 0.9}"}
    fam_screen, fam_viol = tot_screen, tot_screen_viol
    if not ctx.quick:
        # at a classifier-like scale: every category of a 500-class massive-category model at once
        F, _, _ = massive_category_logits(5000, 500, 300, ctx.rng("large"), noise=0.05)
        c = gram(F)
        off = np.abs(c)
        np.fill_diagonal(off, 0.0)
        big = {}
        for rho in (0.2, 0.5):
            Theta = covlasso_all(c, rho=rho)
            below = off < (rho * off.max(axis=0))[:, None]  # |Cov_ij| < λ_i/2, row i
            np.fill_diagonal(below, False)
            nz = Theta != 0
            np.fill_diagonal(nz, False)
            sel = ~below if planted else below
            bad = sel & (~nz if planted else nz)
            np.fill_diagonal(bad, False)
            tot_screen += int(sel.sum())
            tot_screen_viol += int(bad.sum())
            zeros = int((~nz).sum() - c.shape[0])
            big[f"ρ = {rho:g}"] = {"categories with a violation": f"{int(bad.any(axis=1).sum())}/{c.shape[0]}",
                                   "screened j that are nonzero": f"{int(bad.sum())}/{int(sel.sum())}",
                                   "share of true zeros the bar screens out": f"{int((below & ~nz).sum()) / max(zeros, 1):.1%}",
                                   "median support": int(np.median(nz.sum(axis=1))),
                                   "max KKT violation": float(kkt_violation_all(c, Theta, rho=rho).max())}
        details["massive-category model, n = 500, p = 300, all categories"] = big
    artifacts = []
    finding = None
    if not planted:
        # counterexample search: random 3–6 category covariances, then a (1+1) evolution strategy on depth
        srng = ctx.rng("search")
        best = (-np.inf, None, None, None, None)
        budget = 300 if ctx.quick else 3000
        for t in range(budget):
            if t < budget // 2 or best[1] is None:
                n = int(srng.integers(3, 7))
                Lf = srng.standard_normal((n, n))
                rho = float(srng.uniform(0.05, 0.95))
            else:
                Lf = best[1] + 0.1 * srng.standard_normal(best[1].shape)
                rho = float(np.clip(best[2] + 0.05 * srng.standard_normal(), 0.01, 0.99))
            c = Lf @ Lf.T + 1e-6 * np.eye(Lf.shape[0])
            dpt, j, th = _conj1_depth(c, 0, rho)
            if dpt > best[0]:
                best = (dpt, Lf, rho, j, th)
        dpt, Lf, rho, j, th = best
        c = Lf @ Lf.T + 1e-6 * np.eye(Lf.shape[0])
        rest, _, b = _split(c, 0)
        sup_depth, sup_j, sup_th = _conj1_depth(_suppressor(), 0, 0.3)
        record = {"cov": c.tolist(), "i": 0, "lambda": rho * 2 * float(np.abs(b).max()), "rho": rho, "j": j,
                  "|Cov_ij|": float(abs(c[j, 0])), "lambda/2": rho * float(np.abs(b).max()), "theta": th.tolist(),
                  "depth (λ/2 − |Cov_ij|)/(λ_max/2)": dpt,
                  "kkt violation": kkt_violation(c, 0, rho * 2 * float(np.abs(b).max()), th)}
        path = ctx.artifact_dir / "worst_counterexample.json"
        atomic_write_text(path, json.dumps(record, indent=1))
        artifacts.append(f"artifacts/{ctx.check_id}/worst_counterexample.json")
        details["worst counterexample found"] = {k: v for k, v in record.items() if k not in ("cov", "theta")}
        details["analytic suppressor example"] = {
            "cov": _suppressor().tolist(), "i": 0, "rho": 0.3, "θ": sup_th.tolist(),
            "note": f"f_2 has E[f_0 f_2] = 0 < λ/2 yet θ_2 = {sup_th[2]:.4f} ≠ 0 (depth {sup_depth:.2f})"}
        finding = (f"Conj 1 is false in general but seldom wrong: over {tot_prob} (i, λ) problems in 7 families, "
                   f"{tot_prob_viol} ({tot_prob_viol / tot_prob:.1%}) have a category below the λ/2 bar with θ_j ≠ 0, "
                   f"i.e. {fam_viol}/{fam_screen} = {fam_viol / max(fam_screen, 1):.2%} of screened "
                   f"categories. A 3-category suppressor (E[f_0 f_2] = 0, f_2 correlated with f_1) violates it for "
                   f"every small λ; the search found a nonzero θ_j whose |Cov_ij| sits {dpt:.2f}·λ_max/2 below the bar. "
                   "Thm 3 (nd.screening_rule) is the safe version.")
        if "massive-category model, n = 500, p = 300, all categories" in details:
            big = details["massive-category model, n = 500, p = 300, all categories"]
            finding += (" At classifier scale (500-class massive-category model, all categories): "
                        + "; ".join(f"{k}: {v['categories with a violation']} categories have a violation, "
                                    f"{v['screened j that are nonzero']} screened j are nonzero, the bar screens out "
                                    f"{v['share of true zeros the bar screens out']} of the true zeros"
                                    for k, v in big.items()) + ".")
    rate = tot_screen_viol / max(tot_screen, 1)
    return Result(
        measured=rate, expected="0 if the conjecture held (fraction of screened categories with θ_j ≠ 0)",
        holds=bool(tot_screen_viol == 0), details=details, finding=finding, artifacts=artifacts,
    )


# ---------------------------------------------------------------------------------------------- Sec 2.2
@check(
    "nd.massive_categories", equation="Sec 2.2, A30–A33", kind="sim",
    tolerance="n > p: R ≤ 1e-12; n ≤ p: mean R = (p−n+1)/p within 4 standard errors",
    tolerance_reason="for n > p the floor is 0 exactly (Cov has rank p) and numerically a rounding residual; for "
                     "n ≤ p with Gaussian W, R_i = ‖P⊥w_i‖²/‖w_i‖² ~ Beta((p−n+1)/2, (n−1)/2), mean (p−n+1)/p",
    negative_control="the claim that floors vanish already for n > p/2 (tested at n/p ∈ (1/2, 1])",
    figures=("nd.massive_floors",),
)
@_one_blas_thread
def massive_categories(ctx, planted):
    rng = ctx.rng("W")
    p = 40 if ctx.quick else 120
    reps = 6 if ctx.quick else 12
    ratios = (0.25, 0.5, 0.75, 1.1, 2.0, 4.0) if ctx.quick else (0.25, 0.5, 0.75, 0.9, 1.1, 1.5, 2.0, 4.0)
    rows = {}
    worst_vanish = 0.0
    law_z = 0.0
    solver_rel = 0.0
    for r in ratios:
        n = max(2, int(round(r * p)))
        means, res, maxR = [], [], 0.0
        for rep in range(reps):
            W = rng.standard_normal((n, p))
            R_pop = dep.relative_floor(W @ W.T)  # population Cov of f = W h, h ~ N(0, I_p)
            means.append(float(R_pop.mean()))
            maxR = max(maxR, float(R_pop.max()))
            if rep == 0:
                # independent route on sampled logits: least-squares residual of f_i on the others (Eq 2, λ = 0)
                F = rng.standard_normal((2 * max(n, p), p)) @ W.T
                for i in rng.choice(n, size=min(n, 3), replace=False):
                    rest = np.delete(np.arange(n), i)
                    beta, *_ = np.linalg.lstsq(F[:, rest], F[:, i], rcond=None)
                    e = F[:, i] - F[:, rest] @ beta
                    res.append(float(e @ e / (F[:, i] @ F[:, i])))
                if n > p:
                    c = gram(F)
                    th = covlasso(c, 0, rho=1e-6)
                    solver_rel = max(solver_rel, dep.prediction_error(c, th) / c[0, 0])
        if n > (p / 2 if planted else p):
            worst_vanish = max(worst_vanish, max(res), maxR)
        key = f"n/p={r:g} (n={n})"
        if n <= p:
            law = (p - n + 1) / p
            se = float(np.std(means, ddof=1) / np.sqrt(reps))
            law_z = max(law_z, abs(np.mean(means) - law) / max(se, 1e-300))
            rows[key] = {"mean R": float(np.mean(means)), "± se": se, "law (p−n+1)/p": law,
                         "median lstsq residual": float(np.median(res))}
        else:
            rows[key] = {"max R": maxR, "max lstsq residual": max(res)}
    holds = worst_vanish <= 1e-12 and law_z <= 4
    return Result(
        measured=worst_vanish, expected=f"<= 1e-12 (largest relative floor where n > {'p/2' if planted else 'p'})",
        holds=bool(holds),
        details={"per n/p": rows, "largest |mean R − law| / se (n ≤ p)": law_z,
                 "CovLasso at ρ = 1e-6, n > p: err/Cov_ii": solver_rel, "p": p, "W draws per n/p": reps,
                 "model": "f = W h, h ~ N(0, I_p), W Gaussian n×p; R from the population Cov W Wᵀ, the least-squares "
                          "residual from N = 2·max(n, p) sampled logits"},
    )


# ---------------------------------------------------------------------------------------------- Sec 2.4
@check(
    "nd.between_networks", equation="Sec 2.4 (Eq 2, 5, 7 for f̃)", kind="numeric",
    tolerance=f"identities within 1e-9 relative; KKT ≤ {KKT_TOL:g}·λ_max",
    tolerance_reason="all identities are exact for the second moment of f̃; the tolerances are rounding of n×n solves",
    negative_control="solve with the within-network Cov of f (target f_i instead of g_i) and check it against f̃'s "
                     "KKT conditions, λ_max and floor",
)
@_one_blas_thread
def between_networks(ctx, planted):
    rng = ctx.rng("nets")
    n, p, N = (40, 25, 4000) if ctx.quick else (120, 80, 20000)
    F, G, y = two_networks(N, n, p, rng)
    cov_f = gram(F)
    cross = F.T @ G / N
    worst_build = worst_kkt = worst_floor = worst_lmax = 0.0
    rel_floors, metrics = [], []
    for i in rng.choice(n, size=4 if ctx.quick else 10, replace=False):
        i = int(i)
        Ft = mixed_logits(F, G, i)
        ct = gram(Ft)
        cm = mixed_cov(cov_f, cross, float(G[:, i] @ G[:, i] / N), i)
        worst_build = max(worst_build, float(np.abs(cm - ct).max() / np.abs(ct).max()))
        solve_on = cov_f if planted else ct
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
    holds = worst_build <= 1e-9 and worst_kkt <= KKT_TOL and worst_floor <= 1e-8 and worst_lmax <= 1e-12
    return Result(
        measured=worst_kkt, expected=f"<= {KKT_TOL:g} (KKT residual of f̃'s CovLasso / λ_max)", holds=bool(holds),
        details={"mixed_cov from cross moments vs Gram of f̃ (relative)": worst_build,
                 "|λ_max used − 2 max_j |E[f_j g_i]|| / λ_max": worst_lmax,
                 "|err(θ*(0)) − 1/(Coṽ⁻¹)_ii| / E[g_i²]": worst_floor,
                 "relative floors of g_i on f (median, max)": [float(np.median(rel_floors)), float(np.max(rel_floors))],
                 "Table 1 metrics, g_i replaced by Σθ_j f_j (ρ = 0.05)": metrics,
                 "model": f"f = W_f h, g = W_g(h + 0.1ξ), noise 0.01, n={n}, p={p}, N={N}"},
    )
