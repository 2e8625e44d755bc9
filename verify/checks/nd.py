"""ND closed-form checks: error floor, λ_max, relative floor, and Remark 2 (the determinant ratio).

Each ``compare(ctx, planted)`` runs the same comparison against the paper's formula or, with
``planted=True``, against a planted wrong one (the negative control).
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from sims.spd import gram, lowrank_logits, spd_with_condition
from theory import dependency as dep
from theory.covlasso import covlasso_cd, kkt_violation
from theory.symbolic import nd as sym
from verify.registry import Result, check

EPS = np.finfo(float).eps
KAPPA_UNITS = 100.0  # forward-error budget, in units of κ(Cov)·ε


def _kkt_floor(c: np.ndarray, i: int) -> tuple[float, np.ndarray]:
    """Constrained least squares min θᵀCθ s.t. θ_i = −1, solved as its bordered KKT system by LU.

    [[2C, e_i], [e_iᵀ, 0]] [θ; η] = [0; −1]; the minimum is η/2 (ND A27). Independent of Cholesky.
    """
    n = c.shape[0]
    k = np.zeros((n + 1, n + 1))
    k[:n, :n] = 2 * c
    k[i, n] = k[n, i] = 1.0
    rhs = np.zeros(n + 1)
    rhs[n] = -1.0
    sol = sla.solve(k, rhs, assume_a="gen")
    return sol[n] / 2.0, sol[:n]


def _lstsq_floor(F: np.ndarray, i: int) -> float:
    """The floor as a regression residual on the logits themselves: ‖f_i − F₋ᵢβ‖²/N (ND Eq 2 at λ = 0)."""
    rest = np.delete(np.arange(F.shape[1]), i)
    beta, *_ = np.linalg.lstsq(F[:, rest], F[:, i], rcond=None)
    r = F[:, i] - F[:, rest] @ beta
    return float(r @ r / F.shape[0])


def _random_problems(rng, count: int, nmax: int, kmax: float):
    """Yield (Cov, logits or None, κ): prescribed-spectrum SPD and Gram matrices of low-rank-plus-noise logits."""
    for t in range(count):
        n = int(np.exp(rng.uniform(np.log(5), np.log(nmax))))
        scale = 10 ** rng.uniform(-2, 2)
        if t % 2 == 0:
            cond = 10 ** rng.uniform(0, np.log10(kmax))
            yield spd_with_condition(n, cond, rng, scale=scale), None
        else:
            rank = max(1, int(n * rng.uniform(0.2, 0.9)))
            noise = 10 ** rng.uniform(-5, -1)
            F = np.sqrt(scale) * lowrank_logits(max(2 * n, 40), n, rank, noise, rng)
            yield gram(F), F


def _symbolic(sizes, planted, fn) -> dict:
    out = {}
    for n in sizes:
        for i in sorted({0, n - 1}):
            for name, expr in fn(n, i, planted=planted).items():
                out[f"n={n} i={i} {name}"] = sym.vanishes(expr)
    return out


@check(
    "nd.floor_closed_form", equation="A15, A28–A30, A33", kind="symbolic+numeric",
    tolerance=f"{KAPPA_UNITS:g}·κ·ε", figures=("nd.remark2_det_ratio",),
    tolerance_reason="the floor's relative condition number is O(κ(Cov)); backward-stable solvers agree to "
                     "O(κ·ε): measured worst ≈ 6·κε for the LU/eigen/lstsq routes and ≈ 40·κε for the det ratio in "
                     "its stable range (n ≤ 40, κ ≤ 1e8); 100·κε covers n ≤ 300 without hiding an O(1) error",
    negative_control="1/Cov_ii in place of 1/(Cov⁻¹)_ii (symbolic and numeric)",
)
def floor_closed_form(ctx, planted):
    sizes = (2, 3) if ctx.quick else (2, 3, 4)
    symbolic = _symbolic(sizes, planted, sym.floor_residuals)
    rng = ctx.rng("matrices")
    count, nmax = (40, 80) if ctx.quick else (200, 300)
    worst = {"kkt_lu": 0.0, "eigen_A33": 0.0, "lstsq_on_logits": 0.0, "det_ratio_stable_range": 0.0,
             "theta_vs_kkt": 0.0}
    conds, sizes_seen = [], []
    for c, F in _random_problems(rng, count, nmax, 1e12):
        n = c.shape[0]
        w = np.linalg.eigvalsh(c)
        kappa = w[-1] / max(w[0], w[-1] * EPS)
        conds.append(kappa)
        sizes_seen.append(n)
        unit = kappa * EPS
        floor = 1.0 / np.diag(c) if planted else dep.error_floor(c)
        # error of each independent route in units of κε (relative error / (κ ε))
        for i in rng.choice(n, size=min(3, n), replace=False):
            ref, theta_ref = _kkt_floor(c, int(i))
            worst["kkt_lu"] = max(worst["kkt_lu"], abs(floor[i] - ref) / ref / unit)
            th = dep.theta_floor(c, int(i))
            worst["theta_vs_kkt"] = max(worst["theta_vs_kkt"],
                                        np.linalg.norm(th - theta_ref) / np.linalg.norm(theta_ref) / unit)
            if F is not None:
                ls = _lstsq_floor(F, int(i))
                worst["lstsq_on_logits"] = max(worst["lstsq_on_logits"], abs(floor[i] - ls) / ls / unit)
            if n <= 40 and kappa <= 1e8:
                dr = dep.det_ratio(c, int(i), method="det")
                worst["det_ratio_stable_range"] = max(worst["det_ratio_stable_range"],
                                                      abs(floor[i] - dr) / dr / unit)
        eig = dep.error_floor_eigen(c)
        worst["eigen_A33"] = max(worst["eigen_A33"], float(np.max(np.abs(floor - eig) / eig)) / unit)
    measured = max(worst.values())
    sym_ok = all(symbolic.values())
    return Result(
        measured=measured, expected=f"<= {KAPPA_UNITS:g} (κε units)",
        holds=bool(sym_ok and measured <= KAPPA_UNITS),
        details={"symbolic identities vanishing": f"{sum(symbolic.values())}/{len(symbolic)} (sizes {sizes})",
                 "matrices": count, "n range": [min(sizes_seen), max(sizes_seen)],
                 "condition number range": [float(min(conds)), float(max(conds))],
                 "worst error per route (κε units)": worst},
    )


@check(
    "nd.lambda_max", equation="A16, A47", kind="numeric", tolerance="δ = 1e-3 relative in λ",
    tolerance_reason="the optimum is tested at λ_max(1±δ) with an exact-zero coordinate-descent solver "
                     "(KKT ≤ 1e-9·λ_max); any δ > 0 separates the two sides, 1e-3 keeps the moved coefficient "
                     "far above rounding",
    negative_control="λ_max = ‖Cov₋ᵢ,ᵢ‖_∞ (the factor 2 dropped)",
)
def lambda_max_check(ctx, planted):
    rng = ctx.rng("covs")
    count = 12 if ctx.quick else 60
    delta = 1e-3
    violations, kkt_worst, err_gap = [], 0.0, 0.0
    for t in range(count):
        n = int(rng.integers(3, 26))
        c = gram(lowrank_logits(3 * n, n, max(1, n // 2), 0.1, rng)) if t % 2 else spd_with_condition(
            n, 10 ** rng.uniform(0, 6), rng)
        i = int(rng.integers(n))
        lm = dep.lambda_max(c)[i] / (2.0 if planted else 1.0)
        e_i = np.zeros(n)
        e_i[i] = -1.0
        above = covlasso_cd(c, i, lm * (1 + delta))
        below = covlasso_cd(c, i, lm * (1 - delta))
        lam_rand = lm * (1 - delta) * rng.uniform()
        inside = covlasso_cd(c, i, lam_rand)
        kkt_worst = max(kkt_worst, kkt_violation(c, i, lm * (1 + delta), above),
                        kkt_violation(c, i, lm * (1 - delta), below))
        ok_above = np.array_equal(above, e_i)
        ok_below = not np.array_equal(below, e_i) and not np.array_equal(inside, e_i)
        err_at_max = dep.prediction_error(c, above)
        ok_err = abs(err_at_max - c[i, i]) <= 1e-12 * c[i, i]
        err_gap = max(err_gap, abs(err_at_max - c[i, i]) / c[i, i])
        if not (ok_above and ok_below and ok_err):
            violations.append({"n": n, "i": i, "θ(λmax(1+δ)) = −e_i": ok_above,
                               "θ(λ) ≠ −e_i below λmax": ok_below, "err(λmax) = Cov_ii": ok_err})
    return Result(
        measured=len(violations), expected=0, holds=not violations,
        details={"covariances": count, "violations (first 3)": violations[:3],
                 "worst KKT violation of the solver (units of λ_max)": kkt_worst,
                 "max |err(θ*(λ_max)) − Cov_ii|/Cov_ii": err_gap},
    )


@check(
    "nd.relative_floor", equation="A31–A32", kind="symbolic+numeric", tolerance=f"{KAPPA_UNITS:g}·κ·ε",
    tolerance_reason="same forward-error budget as the floor itself (R is the floor divided by an exact Cov_ii); "
                     "the path minimum is compared with a 1e-9 relative slack for the iterative solver",
    negative_control="A31 without the Σα²σ² = Cov_ii factor (i.e. R = the absolute floor)",
)
def relative_floor_check(ctx, planted):
    sizes = (2, 3) if ctx.quick else (2, 3, 4)
    symbolic = _symbolic(sizes, planted, sym.relative_floor_residual)
    rng = ctx.rng("matrices")
    count, nmax = (30, 60) if ctx.quick else (120, 200)
    worst = {"eigen_A31": 0.0, "lstsq_relative_error_A32": 0.0}
    path_violations, r_range = 0, [np.inf, -np.inf]
    for t, (c, F) in enumerate(_random_problems(rng, count, nmax, 1e10)):
        n = c.shape[0]
        w = np.linalg.eigvalsh(c)
        unit = w[-1] / max(w[0], w[-1] * EPS) * EPS
        R = dep.error_floor(c) if planted else dep.relative_floor(c)
        r_range = [min(r_range[0], R.min()), max(r_range[1], R.max())]
        worst["eigen_A31"] = max(worst["eigen_A31"],
                                 float(np.max(np.abs(R - dep.relative_floor_eigen(c)) / dep.relative_floor_eigen(c))) / unit)
        if F is not None:
            i = int(rng.integers(n))
            rel = _lstsq_floor(F, i) / (F[:, i] @ F[:, i] / F.shape[0])
            worst["lstsq_relative_error_A32"] = max(worst["lstsq_relative_error_A32"], abs(R[i] - rel) / rel / unit)
        if t < 20:  # A32: R is the infimum over λ of the relative error along the path (small, κ ≤ 1e3: CD converges)
            cs = spd_with_condition(int(rng.integers(3, 16)), 10 ** rng.uniform(0, 3), rng, scale=10 ** rng.uniform(-2, 2))
            i = int(rng.integers(cs.shape[0]))
            Rs = (dep.error_floor(cs) if planted else dep.relative_floor(cs))[i]
            lm = dep.lambda_max(cs)[i]
            rels = [dep.prediction_error(cs, covlasso_cd(cs, i, f * lm)) / cs[i, i] for f in (0.0, 0.3, 0.7, 1.0)]
            if abs(rels[0] - Rs) > 1e-9 * Rs or min(rels) < Rs * (1 - 1e-9) or rels[-1] > 1 + 1e-12:
                path_violations += 1
    measured = max(worst.values())
    sym_ok = all(symbolic.values())
    return Result(
        measured=measured, expected=f"<= {KAPPA_UNITS:g} (κε units); path minimum = R",
        holds=bool(sym_ok and measured <= KAPPA_UNITS and path_violations == 0 and r_range[1] <= 1 + 1e-12),
        details={"symbolic identities vanishing": f"{sum(symbolic.values())}/{len(symbolic)} (sizes {sizes})",
                 "matrices": count, "worst error per route (κε units)": worst,
                 "path minimum violations": path_violations, "range of R over all categories": r_range},
    )


def _det_ratio_failures(c: np.ndarray, idx, stable: np.ndarray) -> tuple[int, float]:
    """How many det ratios are non-finite, zero, or off the stable floor by > 1e-2 relative; and slogdet's worst error."""
    bad, slog_worst = 0, 0.0
    for i in idx:
        dr = dep.det_ratio(c, int(i), method="det")
        if not np.isfinite(dr) or dr <= 0 or abs(dr - stable[i]) > 1e-2 * stable[i]:
            bad += 1
        sl = dep.det_ratio(c, int(i), method="slogdet")
        slog_worst = max(slog_worst, abs(sl - stable[i]) / stable[i])
    return bad, slog_worst


@check(
    "nd.det_ratio_unstable", equation="Remark 2", kind="numeric", tolerance="≥ 50% det-ratio failures",
    figures=("nd.remark2_det_ratio",),
    tolerance_reason="Remark 2 says the ratio 'often' gives NaN: we require it to fail (NaN/inf/0 or > 1% off) on at "
                     "least half of the categories of logit-like covariances, while the stable floor stays within "
                     "100·κε of an independent LU solve on every one",
    negative_control="the same comparison on well-conditioned covariances (n = 20, κ ≤ 10), where the planted claim "
                     "'the det ratio fails' must not hold",
)
def det_ratio_unstable(ctx, planted):
    rng = ctx.rng("logits")
    if planted:
        cases = [spd_with_condition(20, 10 ** rng.uniform(0, 1), rng) for _ in range(4)]
    else:
        ns = (200, 400) if ctx.quick else (200, 500, 1000)
        cases = [gram(lowrank_logits(2 * n, n, n // 5, 1e-3, rng)) for n in ns]
    total = bad = 0
    stable_worst = slog_worst = 0.0
    per_size = {}
    for c in cases:
        n = c.shape[0]
        stable = dep.error_floor(c)
        w = np.linalg.eigvalsh(c)
        unit = w[-1] / w[0] * EPS
        idx = rng.choice(n, size=min(8, n), replace=False)
        for i in idx[:3]:
            ref, _ = _kkt_floor(c, int(i))
            stable_worst = max(stable_worst, abs(stable[i] - ref) / ref / unit)
        b, s = _det_ratio_failures(c, idx, stable)
        per_size[f"n={n} (κ={w[-1] / w[0]:.1e})"] = f"{b}/{len(idx)} det ratios failed"
        total, bad, slog_worst = total + len(idx), bad + b, max(slog_worst, s)
    frac = bad / total
    return Result(
        measured=frac, expected=">= 0.5 failed, stable form within 100κε",
        holds=bool(frac >= 0.5 and stable_worst <= KAPPA_UNITS),
        details={"det ratio failures": per_size, "stable floor worst error vs LU-KKT (κε units)": stable_worst,
                 "exp(slogdet difference) worst relative error": slog_worst,
                 "note": "the failure is under/overflow of det itself (0/0, inf/inf); the ratio of log-determinants "
                         "survives where it is representable, and at n ≤ 40 LU's det ratio is as accurate as the "
                         "stable form (see figure)"},
    )
