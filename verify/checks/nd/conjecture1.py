"""ND Conjecture 1 (Eq 14): |E[f_i f_j]| < λ/2 ⇒ θ_j = 0 — measured violation rates, a counterexample search, and
a positive control on covariances where it holds by construction. Split from :mod:`verify.checks.nd.covlasso`.
"""
from __future__ import annotations

import json

import numpy as np

from sims.cache import atomic_write_text
from sims.nd_models import massive_category_logits
from sims.spd import gram, lowrank_logits, spd_with_condition
from theory.covlasso import covlasso, covlasso_all, kkt_violation, kkt_violation_all
from verify.checks.nd.covlasso import _one_blas_thread, _split
from verify.registry import Result, check


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


def _orthogonal_predictors(rng, quick: bool) -> dict:
    """Covariances [[a, b̂ᵀ], [b̂, diag(d)]]: target 0 with arbitrary correlations b̂, predictors mutually uncorrelated,
    a = b̂ᵀdiag(d)⁻¹b̂ + ν (PSD): Conj 1 holds for target 0 by construction (the positive control)."""
    n = 20 if quick else 50
    mats = []
    for _ in range(4 if quick else 12):
        d = 10 ** rng.uniform(-1, 1, n - 1)
        b = rng.standard_normal(n - 1) * np.sqrt(d) * rng.uniform(0.05, 0.3)
        c = np.zeros((n, n))
        c[1:, 1:] = np.diag(d)
        c[0, 1:] = c[1:, 0] = b
        c[0, 0] = float(b @ (b / d)) + rng.uniform(0.1, 1.0)
        mats.append(c)
    return {"orthogonal predictors (Ĉov diagonal)": mats}


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
    tolerance_reason="a conjecture (ND Sec 2.3 derives it from Thm 3 assuming A_j nearly orthogonal to A⁻ᵀb̂, and "
                     "says 'in practice we find that this conjecture is seldom wrong'): we measure how often "
                     "|E[f_i f_j]| < λ/2 coexists with θ_j ≠ 0 and search for the worst counterexample; two readings "
                     "are shown, as written (for all: a counterexample refutes it) and the paper's own 'seldom "
                     "wrong' (typical: ≤ 5 % of screened categories nonzero); the status stays reported, as "
                     "catalogued for a conjecture",
    negative_control="bug: the bar at λ instead of λ/2 (the lasso's ½-scaling slip), on the positive control's "
                     "covariances, where Conj 1 holds: the categories with λ/2 ≤ |b̂_j| < λ are screened yet nonzero, so "
                     "violations appear where there are none",
    positive_control="the same comparison for target 0 of covariances whose other logits are mutually uncorrelated "
                     "(Ĉov diagonal, b̂ arbitrary): θ̂_j = soft(b̂_j, λ/2)/Ĉov_jj, so |b̂_j| < λ/2 ⇒ θ_j = 0 by "
                     "construction; and the library's θ̂ must equal that closed form (max |θ̂ − closed form| ≤ 1e−9·"
                     "max(1, |θ|): a solver with the wrong λ scaling or a wrong update fails even where the zero "
                     "pattern survives)",
)
@_one_blas_thread
def conjecture1(ctx, planted, positive=False):
    rng = ctx.rng("families")
    rhos = (0.1, 0.3, 0.5, 0.7, 0.9)
    rates = {}
    tot_prob = tot_prob_viol = tot_screen = tot_screen_viol = 0
    constructed = positive or planted  # the control's covariances, where Conj 1 holds for target 0
    families = _orthogonal_predictors(rng, ctx.quick) if constructed else _family_matrices(rng, ctx.quick)
    closed_dev = 0.0
    for name, mats in families.items():
        prob = prob_viol = screen = screen_viol = 0
        for c in mats:
            n = c.shape[0]
            for i in ([0] if constructed else range(0, n, 2)):
                rest, _, b = _split(c, i)
                lm = 2 * np.abs(b).max()
                for rho in rhos:
                    th = covlasso(c, i, rho * lm)[rest]
                    if positive:  # diagonal Ĉov: θ̂_j = soft(b̂_j, λ/2)/Ĉov_jj exactly
                        d = np.diag(c)[rest]
                        closed = np.sign(b) * np.maximum(np.abs(b) - rho * lm / 2, 0.0) / d
                        closed_dev = max(closed_dev, float(np.max(np.abs(th - closed)) / max(1.0, np.abs(closed).max())))
                    below = np.abs(b) < (rho * lm if planted else rho * lm / 2)  # planted: the bar at λ
                    sel = below
                    bad = sel & (th != 0)
                    prob += 1
                    prob_viol += int(bad.any())
                    screen += int(sel.sum())
                    screen_viol += int(bad.sum())
        rates[name] = {"problems (i, λ) with a violation": f"{prob_viol}/{prob}",
                       "screened j that are nonzero": f"{screen_viol}/{screen} = {screen_viol / max(screen, 1):.2%}"}
        tot_prob += prob
        tot_prob_viol += prob_viol
        tot_screen += screen
        tot_screen_viol += screen_viol
    details = {"per family": rates, "λ": "ρ·λ_max(i), ρ ∈ {0.1, 0.3, 0.5, 0.7, 0.9}"}
    fam_screen, fam_viol = tot_screen, tot_screen_viol
    if positive:
        details["max |θ̂ − soft(b̂, λ/2)/Ĉov_jj| / max(1, |θ|) (tol 1e-9)"] = closed_dev
    if not ctx.quick and not constructed:
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
            sel = below
            bad = sel & nz
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
    if not planted and not positive:
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
    miss = max(float(tot_screen_viol / 0.5), closed_dev / 1e-9)
    readings = None
    if not (planted or positive):
        readings = {
            "as written (Eq 14: for every covariance and 0 < λ < λ_max, below the bar ⇒ θ_j = 0)": {
                "quantifier": "for all", "holds": bool(tot_screen_viol == 0),
                "measured": f"{tot_screen_viol} screened categories nonzero; a 3-category suppressor and a searched "
                            "counterexample inside 0 < λ < λ_max"},
            f"the paper's own reading ('In practice we find that this conjecture is seldom wrong'; seldom: ≤ "
            f"{SELDOM:.0%} of screened categories nonzero)": {
                "quantifier": "typical", "holds": bool(rate <= SELDOM),
                "measured": f"{rate:.2%} of {tot_screen} screened categories nonzero"}}
    return Result(
        measured=rate, expected="0 if the conjecture held (fraction of screened categories with θ_j ≠ 0)",
        holds=bool(miss <= 1), miss=miss, details=details, finding=finding, readings=readings,
        artifacts=artifacts,
    )


#: "seldom wrong" (ND Sec 2.3, after Conj 1) read as at most one screened category in twenty nonzero
SELDOM = 0.05
