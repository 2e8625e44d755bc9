"""RD checks: Rank Diminishing in Deep Neural Networks (seed 004).

Numerical rank (Eq 4, Thm 1), partial Jacobian rank (Eq 5, Lemma 2), monotone depth (Thm 2 / Eq 7),
structural impetus (Thm 3 / Fig 3), the Lyapunov ψ-law (Thm 5 / Eq 10, Cor 1), spectrum
centralization for non-Gaussian layers (Thm 4), MLP-50 (Fig 1 d–f) and Marchenko–Pastur (Sec 3.1).
Sizes for quick/full live in ``sims.rank_nets.rd_settings`` (shared with paper_figs/rd.py).
rd.cls_dim and rd.independence_deficit belong to the real-model checks.
"""
from __future__ import annotations

import numpy as np
import torch

from sims import jacobian as J
from sims import random_matrix as rm
from sims import rank_nets as nets
from theory import rank as R
from verify.registry import Result, check


def _fmt(x, d=3):
    return float(np.round(float(x), d))


# ----------------------------------------------------------------------------- Eq 4, Thm 1

@check(
    "rd.numerical_rank_stable", equation="Eq 4, Thm 1", kind="numeric", tolerance="0 rank changes below δ_max",
    tolerance_reason="Thm 1 is exact: below the Weyl margin δ_max = min|σ_i − εσ_1|/((1+ε)‖D‖₂) no singular value "
                     "can cross ε‖W+δD‖₂, so a single change is a counterexample; low-rank W must give Rank_ε = Rank "
                     "for ε < σ_r/σ_1",
    negative_control="the exact rank (numpy matrix_rank, tolerance ~1e-13·σ_1) claimed stable under the same "
                     "perturbations: random δD makes a low-rank W full rank, the motivation of Sec 3.1",
)
def numerical_rank_stable(ctx, planted):
    rng = ctx.rng("matrices")
    cases = 40 if ctx.quick else 200
    changes = checked = lowrank_bad = 0
    tight = []
    for c in range(cases):
        n, d = (int(v) for v in rng.integers(6, 40, size=2))
        r = int(rng.integers(1, min(n, d)))
        w = rng.standard_normal((n, r)) @ np.diag(np.logspace(0, -2, r)) @ rng.standard_normal((r, d))
        dmat = rng.standard_normal((n, d))
        em = R.eps_max_low_rank(w)
        eps = float(em * rng.uniform(0.05, 0.95))
        if R.numerical_rank(w, eps) != np.linalg.matrix_rank(w):
            lowrank_bad += 1
        if c % 4 == 3:  # adversarial direction: push the singular value nearest the threshold across it
            u, s, vt = np.linalg.svd(w)
            i = int(np.argmin(np.abs(s - eps * s[0])))
            sign = -1.0 if s[i] >= eps * s[0] else 1.0
            dmat = sign * np.outer(u[:, i], vt[i]) * np.sqrt(n * d)
        dmax = R.weyl_delta_max(w, eps, dmat)
        base = np.linalg.matrix_rank(w) if planted else R.numerical_rank(w, eps)
        for frac in (1e-9, 1e-3, 0.3, 0.9, 0.999):
            wp = w + frac * dmax * dmat
            got = np.linalg.matrix_rank(wp) if planted else R.numerical_rank(wp, eps)
            changes += int(got != base)
            checked += 1
        if c % 4 == 3:  # how tight is the certified bound: first δ (in units of δ_max) where the rank changes
            for f in (1.01, 1.1, 1.5, 2, 3, 5, 10, 30):
                if R.numerical_rank(w + f * dmax * dmat, eps) != R.numerical_rank(w, eps):
                    tight.append(f)
                    break
    holds = changes == 0 and lowrank_bad == 0
    return Result(
        measured=changes + lowrank_bad, expected=0, holds=bool(holds),
        details={"matrices": cases, "perturbations checked": checked, "rank changes below δ_max": changes,
                 "low-rank W with Rank_ε ≠ Rank for ε < ε_max": lowrank_bad,
                 "adversarial D: rank changed first at δ/δ_max (median, max)":
                     [float(np.median(tight)), float(np.max(tight))] if tight else "never within 30·δ_max"},
    )


# ----------------------------------------------------------------------------- Eq 5, Lemma 2

@check(
    "rd.partial_rank", equation="Eq 5, Lemma 2", kind="numeric", tolerance="max |J_{f∘ψ} − Sub(J_f)| ≤ 1e-12; 0 violations",
    tolerance_reason="Eq 5 is an identity (float64 roundoff ~1e-15 on entries O(1)); Lemma 2 is exact for exact "
                     "ranks, which we take in float64 with ε = 1e-9 on networks with bottlenecks (true ranks are "
                     "separated from zero by >1e-6 relative)",
    negative_control="(i) J_{f∘ψ} at the zero-padded point claimed equal to Sub(J_f) at the original x (differs for a "
                     "nonlinear f), and (ii) Lemma 2 reversed: partial-rank loss ≥ full-rank loss (fails where strict)",
)
def partial_rank(ctx, planted):
    with J.single_threaded():
        return _partial_rank(ctx, planted)


def _partial_rank(ctx, planted):
    g = ctx.torch_generator("nets")
    rng = ctx.rng("patches")
    c, hw = 3, 8
    blocks = nets.cnn_blocks([c, 6, 6, 2, 6], g)  # a 2-channel bottleneck: rank is lost at block 3
    x = torch.randn(2, c, hw, hw, generator=g, dtype=torch.float64)
    seq = torch.nn.Sequential(*blocks)
    f = lambda z: seq(z.unsqueeze(0))[0]  # noqa: E731
    full = J.jacobian(f, x[0])
    err = 0.0
    for p in (2, 3, 4):
        idx = J.patch_indices((c, hw, hw), p)
        u = x[0].reshape(-1)[torch.as_tensor(idx)]
        jg = torch.func.jacrev(lambda v: f(J.pad(v, idx, x.shape[1:])))(u).reshape(-1, len(idx)).detach()
        jpad_full = J.jacobian(f, J.pad(u, idx, x.shape[1:]))
        # Eq 5: J_{f∘ψ}(u) = Sub(J_f(ψ(u))); planted: Sub(J_f(x))
        ref = full[:, idx] if planted else jpad_full[:, idx]
        err = max(err, float((jg - ref).abs().max()))
        for mode in ("forward", "reverse"):
            err = max(err, float((J.partial_jacobian(f, x[0], idx, at="padded", mode=mode) - jg).abs().max()))
    # Lemma 2: |Rank(f1) − Rank(f2∘f1)| ≥ |Rank Sub(f1) − Rank Sub(f2∘f1)| for f1 = F_k, f2 = next block
    js = J.subnetwork_jacobians(blocks, x)
    n_in = x[0].numel()
    trials = 15 if ctx.quick else 60
    viol = strict = 0
    for _ in range(trials):
        k = int(rng.integers(1, n_in // 2))
        cols = np.sort(rng.choice(n_in, size=k, replace=False))
        for a in range(len(js) - 1):
            f1, f21 = js[a].numpy(), js[a + 1].numpy()
            full_loss = abs(R.numerical_rank(f1, 1e-9) - R.numerical_rank(f21, 1e-9))
            part_loss = abs(R.numerical_rank(f1[:, cols], 1e-9) - R.numerical_rank(f21[:, cols], 1e-9))
            ok = part_loss >= full_loss if planted else full_loss >= part_loss
            viol += int(not ok)
            strict += int(full_loss > part_loss)
    holds = err <= 1e-12 and viol == 0
    return Result(
        measured={"max |J_{f∘ψ} − Sub(J_f)|": err, "Lemma 2 violations": viol}, expected="≤ 1e-12, 0",
        holds=bool(holds),
        details={"patches": "central 2×2, 3×3, 4×4 (×3 channels) of a 3×8×8 input, 4-block CNN (ReLU, bottleneck)",
                 "modes": "vmap(jvp) and vmap(vjp) both compared with jacrev of f∘ψ",
                 "Lemma 2 pairs checked": trials * (len(js) - 1), "of which strict (full loss > partial loss)": strict,
                 "full ranks of F_k (ε=1e-9)": [R.numerical_rank(j.numpy(), 1e-9) for j in js]},
    )


# ----------------------------------------------------------------------------- Thm 2 / Eq 7

def _zoo(g, quick):
    h = 8 if quick else 12
    mlp = nets.mlp_blocks([48, 48, 32, 48, 24, 48, 48], g)
    cnn = nets.cnn_blocks([3, 6, 6, 3, 6, 6], g, strides=[1, 1, 2, 1, 1])
    res = nets.residual_blocks(3, 4, g)
    att = nets.attention_blocks(12, 4, g)
    return {
        "MLP": (mlp, torch.randn(2, 48, generator=g, dtype=torch.float64)),
        "CNN": (cnn, torch.randn(2, 3, h, h, generator=g, dtype=torch.float64)),
        "residual": (res, torch.randn(2, 3, h, h, generator=g, dtype=torch.float64)),
        "attention": (att, torch.randn(2, 6, 12, generator=g, dtype=torch.float64)),
    }


@check(
    "rd.monotone_depth", equation="Thm 2, Eq 7", kind="numeric", tolerance="0 increases of Rank(J_{F_k}) with k",
    tolerance_reason="Eq 7 follows from Rank(AB) ≤ Rank(B) exactly; ranks are taken in float64 with ε = 1e-9 (exact "
                     "rank up to roundoff), on 3 inputs per stack; the float32-rule ranks are reported too (numerical "
                     "rank with a relative threshold is not monotone in general: Rank_ε(AB) can exceed Rank_ε(B))",
    negative_control="the reversed claim Rank(F_k) ≥ Rank(F_{k−1}) (rank never falls), which fails wherever a block "
                     "loses rank",
)
def monotone_depth(ctx, planted):
    with J.single_threaded():
        return _monotone_depth(ctx, planted)


def _monotone_depth(ctx, planted):
    g = ctx.torch_generator("zoo")
    viol, drops, per = 0, 0, {}
    f32_viol = 0
    for name, (blocks, x) in _zoo(g, ctx.quick).items():
        rows = []
        for s in range(2):
            xs = x if s == 0 else x + 0.5 * torch.randn(x.shape, generator=g, dtype=x.dtype)
            js = J.subnetwork_jacobians(blocks, xs)
            r = [R.numerical_rank(j.numpy(), 1e-9) for j in js]
            r32 = [R.numerical_rank(j.numpy()) for j in js]
            d = np.diff([xs[0].numel()] + r)
            viol += int(np.sum(d < 0)) if planted else int(np.sum(d > 0))
            drops += int(np.sum(d < 0))
            f32_viol += int(np.sum(np.diff(r32) > 0))
            rows.append({"exact": r, "float32 rule": r32})
        per[name] = rows
    return Result(
        measured=viol, expected=0, holds=bool(viol == 0),
        details={"ranks of J_{F_1..F_L} per stack (2 inputs)": per, "strict decreases seen": drops,
                 "increases under the float32 rule (not covered by Eq 7)": f32_viol,
                 "stacks": "MLP 48-48-32-48-24-48-48 ReLU; CNN 3-6-6-3(stride 2)-6-6 ReLU; 4 residual conv blocks "
                           "(3 ch); 4 softmax attention blocks (6 tokens × 12) with residual + ReLU MLP"},
    )


# ----------------------------------------------------------------------------- Thm 3 / Fig 3

@check(
    "rd.structural_impetus", equation="Thm 3, Fig 3", kind="sim",
    tolerance="each component: rank or PCA dim after < before",
    figures=("rd.fig3_structural",),
    tolerance_reason="the paper claims a strict loss for every component ('none can preserve rank'): any component "
                     "with both numbers unchanged (float32 rule, as in Sec 4.3) contradicts it",
    negative_control="the same measurement for an identity component, which must not be found to lose rank",
)
def structural_impetus(ctx, planted):
    st = nets.rd_settings(ctx.quick)["si"]
    if planted:
        g = ctx.torch_generator("identity")
        c, hw = st["channels"], 8
        x = torch.randn(st["jac_batch"] * 40, c, hw, hw, generator=g, dtype=torch.float64)
        fc = nets.component("fc", c, hw, g)
        blocks = [fc, torch.nn.Identity()]
        r = J.subnetwork_ranks(blocks, x[:st["jac_batch"]])
        with torch.no_grad():
            h = fc(x).reshape(x.shape[0], -1).numpy()
        lost = {"identity": bool(r[1] < r[0] or R.pca_dim(h) < R.pca_dim(h))}
        return Result(measured=lost, expected="all True", holds=all(lost.values()))
    d = nets.structural_impetus(st["channels"], st["batch"], st["jac_batch"], seed=ctx.seed)
    lost, table = {}, {}
    for name in nets.COMPONENTS:
        rb, ra = int(d[f"rank_before_{name}"]), int(d[f"rank_after_{name}"])
        pb, pa = int(d["pca_before"]), int(d[f"pca_after_{name}"])
        lost[name] = bool(ra < rb or pa < pb)
        table[name] = f"Jacobian rank {rb} → {ra}; PCA dim {pb} → {pa}"
    keep = [k for k, v in lost.items() if not v]
    finding = None
    if keep:
        finding = (f"Not every component loses rank: {', '.join(keep)} preserve(s) both the Jacobian rank and the PCA "
                   f"dimension ({'; '.join(table[k] for k in keep)}). BatchNorm with batch statistics is a per-channel "
                   f"affine map of each sample up to O(1/B) coupling, so its per-sample Jacobian is full rank and the "
                   f"feature span is unchanged. The losses that do occur: "
                   + "; ".join(f"{k}: {table[k]}" for k in lost if lost[k]) + ".")
    return Result(
        measured=lost, expected="all True", holds=not keep, finding=finding,
        details={"per component": table, "input PCA dim": int(d["pca_input"]), "ambient dim": int(d["ambient"]),
                 "setting": f"Gaussian inputs {st['channels']}×8×8 (the paper uses 128×8×8; channels reduced to keep "
                            f"the run short), random FC of {st['channels'] * 64} units first, batch {st['batch']} for "
                            f"PCA (paper 5000), per-sample Jacobian of sample 0 within a batch of {st['jac_batch']}; "
                            "float32 rule ε = 1.19e−7 × N (Sec 4.3); normalisations without affine parameters, "
                            "BN with batch statistics, GN with C/4 groups"},
    )


# ----------------------------------------------------------------------------- Thm 5 / Eq 10, Cor 1

@check(
    "rd.lyapunov_law", equation="Thm 5, Eq 10", kind="sim", tolerance="max_k z ≤ 5 for every n",
    figures=("rd.lyapunov_spectrum",),
    tolerance_reason="after L Gaussian layers the Benettin estimate of λ_k has standard deviation ½√ψ'((n−k+1)/2)/√L "
                     "(the O(1/√L) finite-L fluctuation; per layer log R_kk = ½ log χ²_{n−k+1}); averaged over T "
                     "trials, |mean − law| / (sd/√(LT)) ≤ 5 for all k and n",
    negative_control="an off-by-one ψ-law ½(log 2 + ψ((n−k+2)/2)), which must give z > 5",
)
def lyapunov_law(ctx, planted):
    st = nets.rd_settings(ctx.quick)["lyap"]
    d = rm.lyapunov_data(st["ns"], st["L"], st["trials"], seed=ctx.seed)
    worst, per = 0.0, {}
    for n in st["ns"]:
        spec = d[f"spec_{n}"]
        k = np.arange(1, n + 1)
        law = 0.5 * (np.log(2) + __import__("scipy").special.digamma((n - k + 2) / 2)) if planted else R.lyapunov_law(n)
        se = R.lyapunov_law_sd(n) / np.sqrt(st["L"] * st["trials"])
        z = np.abs(spec.mean(0) - law) / se
        worst = max(worst, float(z.max()))
        ratio_meas = np.exp(spec.mean(0) - spec.mean(0)[0])
        per[f"n={n}"] = {"max z": _fmt(z.max(), 2), "λ_1 measured/law": [_fmt(spec.mean(0)[0], 4), _fmt(law[0], 4)],
                         "λ_n measured/law": [_fmt(spec.mean(0)[-1], 4), _fmt(law[-1], 4)],
                         "Eq 10 ratio k=n measured/law": [_fmt(ratio_meas[-1], 4), _fmt(R.ratio_law(n)[-1], 4)],
                         "sd across trials × √L / predicted (k=1, k=n)":
                             [_fmt(spec[:, 0].std(ddof=1) * np.sqrt(st["L"]) / R.lyapunov_law_sd(n)[0], 2),
                              _fmt(spec[:, -1].std(ddof=1) * np.sqrt(st["L"]) / R.lyapunov_law_sd(n)[-1], 2)]}
    return Result(measured=_fmt(worst, 2), expected="≤ 5", holds=bool(worst <= 5.0),
                  details={"per n": per, "L": st["L"], "trials": st["trials"],
                           "estimator": "Benettin QR recursion (numba), exponents in QR order (unsorted)"})


@check(
    "rd.gradient_explosion", equation="Cor 1", kind="sim", tolerance="|log σ_1/L − rate| ≤ 5·sd/√(LT) + (log n + 3)/L",
    tolerance_reason="log σ_1 = Σ log R_11 + O(1): the sum has sd ½√ψ'(n/2)·√L, the gap to log‖J‖₂ is a finite "
                     "random variable of order log n (the overlap of e_1 with the top singular vector), hence the "
                     "(log n + 3)/L term",
    negative_control="the rate without log 2, ½ψ(n/2), which must fall outside the tolerance",
)
def gradient_explosion(ctx, planted):
    from scipy import special

    st = nets.rd_settings(ctx.quick)["top"]
    d = rm.top_singular_data(st["ns"], st["depths"], st["trials"], seed=ctx.seed)
    ok, per = True, {}
    for n in st["ns"]:
        rate = 0.5 * special.digamma(n / 2) if planted else R.gradient_explosion_rate(n)
        lt = d[f"log_top_{n}"]
        rows = []
        for j, L in enumerate(st["depths"]):
            meas = lt[:, j].mean() / L
            tol = 5 * R.lyapunov_law_sd(n)[0] / np.sqrt(L * st["trials"]) + (np.log(n) + 3) / L
            ok &= bool(abs(meas - rate) <= tol)
            rows.append({"L": L, "log σ_1 / L": _fmt(meas, 4), "rate": _fmt(rate, 4), "tol": _fmt(tol, 4)})
        per[f"n={n}"] = rows
    return Result(measured=per[f"n={st['ns'][-1]}"][-1]["log σ_1 / L"], expected=per[f"n={st['ns'][-1]}"][-1]["rate"],
                  holds=bool(ok), details={"per n": per, "trials": st["trials"],
                                           "how": "exact log‖J_L⋯J_1‖₂ via a renormalised product (numba)"})


# ----------------------------------------------------------------------------- Thm 4

def _decay_fit(sums, cp):
    """Rates μ_k of log(σ_k/σ_1) ≈ a − μ_k L from Benettin sums (trials, len(cp), n), sorted per trial."""
    s = -np.sort(-sums, axis=2)
    n = s.shape[2]
    rates, zs, better_exp, collapsed = {}, {}, {}, []
    for k in range(1, n):
        lr = s[:, :, k] - s[:, :, [0]][:, :, 0]
        fin = np.all(np.isfinite(lr), axis=0)
        if fin.sum() < 4:
            collapsed.append(k + 1)
            continue
        L, y = cp[fin].astype(float), lr[:, fin].mean(0)
        A = np.vstack([np.ones_like(L), L]).T
        coef, res, *_ = np.linalg.lstsq(A, y, rcond=None)
        slopes = np.array([np.polyfit(L, lr[t, fin], 1)[0] for t in range(lr.shape[0])])
        se = slopes.std(ddof=1) / np.sqrt(len(slopes)) + 1e-300
        rates[k + 1], zs[k + 1] = -coef[1], -coef[1] / se
        sse_exp = float(np.sum((A @ coef - y) ** 2))
        B = np.vstack([np.ones_like(L), np.log(L)]).T
        cpow, *_ = np.linalg.lstsq(B, y, rcond=None)
        sse_pow = float(np.sum((B @ cpow - y) ** 2))
        better_exp[k + 1] = sse_exp <= sse_pow
    return rates, zs, better_exp, collapsed


@check(
    "rd.general_centralization", equation="Thm 4, Eq 9", kind="sim",
    tolerance="every k ≥ 2: μ_k > 0 with z ≥ 4, μ_k·L_max ≥ 1, log(σ_k/σ_1) linear in L (beats a power of L)",
    tolerance_reason="Eq 9 says log(σ_k/σ_1) ≈ −μ_k L: we fit the Benettin log-ratios at 16–30 depths, require the "
                     "slope to be negative beyond 4 standard errors (spread of per-trial slopes), at least an e-fold "
                     "decay over the run (μ_k·L_max ≥ 1, so rounding-level slopes do not count) and the linear-in-L "
                     "model to beat a + b log L; exactly collapsed directions (σ_k = 0, ReLU masks) count as decayed",
    negative_control="Haar orthogonal layers (no spectrum spread: σ_k/σ_1 = 1 at every depth) must fail",
)
def general_centralization(ctx, planted):
    st = nets.rd_settings(ctx.quick)["cent"]
    dists = ["orthogonal"] if planted else ["orthogonal_diag", "heavy_tailed", "relu"]
    d = rm.centralization_data(st["n"], st["checkpoints"], dists, st["trials"], seed=ctx.seed)
    cp = np.asarray(d["checkpoints"])
    ok, per = True, {}
    for dist in dists:
        rates, zs, bexp, collapsed = _decay_fit(d[f"sums_{dist}"], cp)
        good = bool(rates or collapsed) and all(zs[k] >= 4 and bexp[k] and rates[k] * cp[-1] >= 1.0 for k in rates)
        ok &= bool(good)
        ks = sorted(rates)
        per[dist] = {"exponential": bool(good),
                     "μ_k (k=2, middle, last finite)": [_fmt(rates[k], 5) for k in (ks[:1] + ks[len(ks) // 2:len(ks) // 2 + 1] + ks[-1:])] if ks else [],
                     "k of those": (ks[:1] + ks[len(ks) // 2:len(ks) // 2 + 1] + ks[-1:]) if ks else [],
                     "min z": _fmt(min(zs.values()), 1) if zs else None,
                     "k where a power of L fits better": [k for k in ks if not bexp[k]],
                     "k collapsed exactly (σ_k = 0)": len(collapsed)}
    bad = [k for k, v in per.items() if not v["exponential"]]
    finding = None
    if bad and not planted:
        finding = f"σ_k/σ_1 does not decay exponentially in L for: {', '.join(bad)} ({per})"
    return Result(measured={k: v["exponential"] for k, v in per.items()}, expected="all True", holds=bool(ok),
                  finding=finding, details={"per distribution": per, "n": st["n"], "depths": f"{cp[0]}..{cp[-1]}",
                                            "trials": st["trials"]})


# ----------------------------------------------------------------------------- Fig 1 d–f

@check(
    "rd.mlp50_decay", equation="Fig 1 d–f, Thm 5", kind="sim",
    tolerance="local decay rate per layer constant within 25% (L 10→25 vs 25→50) and rank(50) < n/2",
    figures=("rd.fig1_mlp50",),
    tolerance_reason="an exponential n·C^L has a constant decay rate −Δlog rank/ΔL; we compare the rate over L 10→25 "
                     "with the rate over 25→50 (mean of three weight draws, both curves) and allow 25% (a power L^-b "
                     "gives a ratio of 0.45). We also fit log rank = a − bL and a − b log L over every depth 1..50 "
                     "(interpolated) and report which is closer, but that comparison flips with the seed at n = 200",
    negative_control="the same measurement on an MLP with Haar orthogonal weights (no rank loss): the fall test must fail",
)
def mlp50_decay(ctx, planted):
    st = nets.rd_settings(ctx.quick)["mlp"]
    if planted:  # the control is cheap: the same measurement and comparison at the quick size
        st = nets.rd_settings(True)["mlp"]
    d = nets.mlp50_decay(st["n"], st["depth"], st["draws"], st["samples"], st["depths"], orthogonal=planted,
                         seed=ctx.seed)
    L = np.asarray(d["depths"], dtype=float)
    n = st["n"]
    verdicts, fits = [], {}
    for key in ("jac_rank", "feat_dim"):
        r = np.asarray(d[key], dtype=float)
        m = r.mean(0)
        use = m > 0
        # fit on every integer depth (log rank interpolated between measured depths), so the verdict does
        # not depend on which depths were measured
        grid = np.arange(1.0, L[use].max() + 1)
        y = np.interp(grid, L[use], np.log(m[use]))
        A = np.vstack([np.ones_like(grid), grid]).T
        B = np.vstack([np.ones_like(grid), np.log(grid)]).T
        ce, *_ = np.linalg.lstsq(A, y, rcond=None)
        cpw, *_ = np.linalg.lstsq(B, y, rcond=None)
        sse_e, sse_p = float(np.sum((A @ ce - y) ** 2)), float(np.sum((B @ cpw - y) ** 2))
        lr = lambda a, b: float((np.interp(a, grid, y) - np.interp(b, grid, y)) / (b - a))  # noqa: E731
        fall = m[-1] / n
        rate_ratio = lr(25, 50) / lr(10, 25) if lr(10, 25) > 0 else float("nan")
        verdicts.append(bool(np.isfinite(rate_ratio) and abs(np.log(rate_ratio)) <= np.log(1.25) and fall < 0.5))
        pred = R.psi_law_rank(n, L, d["eps"] if key == "jac_rank" else np.sqrt(d["eps"]))
        fits[key] = {"rank at L=1, 10, 50 (mean of draws)": [_fmt(m[list(L).index(v)], 1) for v in (1, 10, 50) if v in L],
                     "ψ-law prediction at L=1, 10, 50": [int(pred[list(L).index(v)]) for v in (1, 10, 50) if v in L],
                     "max |measured − ψ-law| / ψ-law": _fmt(np.max(np.abs(m - pred) / pred), 3),
                     "exponential fit: rate per layer, SSE(log)": [_fmt(-ce[1], 4), _fmt(sse_e, 4)],
                     "power fit: exponent, SSE(log)": [_fmt(-cpw[1], 3), _fmt(sse_p, 4)],
                     "better fit": "exponential" if sse_e < sse_p else "power law",
                     "local decay rate per layer, L 10→25 vs 25→50 (constant if exponential)":
                         [_fmt(lr(10, 25), 4), _fmt(lr(25, 50), 4)],
                     "late/early rate ratio (exponential 1, L^-b 0.45)": _fmt(rate_ratio, 3),
                     "rank(L_max)/n": _fmt(fall, 3)}
    grid = np.arange(1.0, L.max() + 1)
    yj = np.log(R.psi_law_rank(n, grid, d["eps"]).astype(float))
    A = np.vstack([np.ones_like(grid), grid]).T
    B = np.vstack([np.ones_like(grid), np.log(grid)]).T
    se_psi = np.sum((A @ np.linalg.lstsq(A, yj, rcond=None)[0] - yj) ** 2)
    sp_psi = np.sum((B @ np.linalg.lstsq(B, yj, rcond=None)[0] - yj) ** 2)
    psi_form = "an exponential" if se_psi < sp_psi else "a power law"
    fits["ψ-law Jacobian curve: SSE exp / power"] = [_fmt(se_psi, 4), _fmt(sp_psi, 4)]
    lpsi = lambda a, b: float((np.interp(a, grid, yj) - np.interp(b, grid, yj)) / (b - a))  # noqa: E731
    fits["ψ-law Jacobian curve: late/early rate ratio"] = _fmt(lpsi(25, 50) / lpsi(10, 25), 3)
    holds = all(verdicts)
    finding = None
    if not holds and not planted:
        parts = []
        for key, label in (("jac_rank", "Jacobian rank"), ("feat_dim", "feature (PCA) dimension")):
            f = fits[key]
            parts.append(f"{label}: better fit {f['better fit']}, local rate {f['local decay rate per layer, L 10→25 vs 25→50 (constant if exponential)']} per layer over L 10→25 vs 25→50 (exp rate {f['exponential fit: rate per layer, SSE(log)'][0]}/layer, "
                         f"SSE {f['exponential fit: rate per layer, SSE(log)'][1]}; power L^-{f['power fit: exponent, SSE(log)'][0]}, "
                         f"SSE {f['power fit: exponent, SSE(log)'][1]}); measured at L = 1, 10, 50: "
                         f"{f['rank at L=1, 10, 50 (mean of draws)']} vs ψ-law {f['ψ-law prediction at L=1, 10, 50']}")
        finding = (f"MLP-{st['depth']} of width {n}: the fall is not exponential. The decay rate per layer drops from "
                   f"L 10→25 to 25→50 by a factor {fits['jac_rank']['late/early rate ratio (exponential 1, L^-b 0.45)']} "
                   f"(Jacobian rank) and {fits['feat_dim']['late/early rate ratio (exponential 1, L^-b 0.45)']} (feature "
                   "dimension), where an exponential keeps it at 1 and a power of L gives 0.45: the curves lie between "
                   "the two forms. " + "; ".join(parts)
                   + f". Over these depths the ψ-law rank curve itself (same ε) is fitted better by {psi_form}, with a "
                   f"late/early rate ratio {fits['ψ-law Jacobian curve: late/early rate ratio']}. "
                   "With ε fixed, Rank_ε ≈ #{k : ψ((n−k+1)/2) − ψ(n/2) ≥ 2 log ε / L} ≈ n(1 − ε^(2/L)), which tends to "
                   "2n|log ε|/L (a power of L) once L ≫ 2|log ε|: Thm 5's exponential is in σ_k/σ_1, not in the rank "
                   "at a fixed tolerance. The measured ranks lie below the ψ-law at every depth: the asymptotic "
                   f"law drops the O(1) offsets of log σ_k (at L = 1 it puts σ_n/σ_1 at e^(λ_n−λ_1) = "
                   f"{np.exp(R.lyapunov_law(n)[-1] - R.lyapunov_law(n)[0]):.3g}, while a square Gaussian matrix has "
                   f"σ_n/σ_1 ≈ 1/(2n) = {1 / (2 * n):.2g}).")
    return Result(measured={k: fits[k]["late/early rate ratio (exponential 1, L^-b 0.45)"] for k in ("jac_rank", "feat_dim")},
                  expected="rate ratio 1 (exponential)",
                  holds=bool(holds),
                  finding=finding,
                  details={"fits": fits, "n": n, "depths": [int(v) for v in L], "draws": st["draws"],
                           "inputs": st["samples"], "weights": "orthogonal (control)" if planted else "N(0, 1/n), float32",
                           "stop rule (max|J| < 1.19e-7) triggered at": [int(v) if v <= st["depth"] else None for v in d["stop"]],
                           "max|J_L| at the last depth": [float(v) for v in np.asarray(d["max_abs"])[:, -1]]})


# ----------------------------------------------------------------------------- Sec 3.1

@check(
    "rd.marchenko_pastur", equation="Sec 3.1, Eq 4", kind="sim",
    tolerance="|mean Rank_ε − MP prediction| ≤ 4·SE + 2% of min(N, d)",
    figures=("rd.marchenko_pastur",),
    tolerance_reason="Monte Carlo standard error plus a finite-size allowance: the MP law is the N → ∞ limit and the "
                     "threshold ε·σ_1 moves with the Tracy–Widom fluctuation of σ_1 (O(N^-2/3)) and, with a planted "
                     "signal, with the O(N^-1/2) fluctuation of the spikes",
    negative_control="the exact-rank view 'a random matrix has full rank min(N, d) almost surely', which the numerical "
                     "rank must contradict",
)
def marchenko_pastur(ctx, planted):
    st = nets.rd_settings(ctx.quick)["mp"]
    d = rm.mp_rank_data(st["cases"], st["trials"], seed=ctx.seed)
    ok, rows = True, []
    for i, (N, dd, e, r, th) in enumerate(st["cases"]):
        ranks = np.asarray(d[f"ranks_{i}"], dtype=float)
        pred = float(min(N, dd)) if planted else R.mp_numerical_rank(N, dd, e, r, th)
        se = ranks.std(ddof=1) / np.sqrt(ranks.size)
        tol = 4 * se + 0.02 * min(N, dd)
        ok &= bool(abs(ranks.mean() - pred) <= tol)
        rows.append({"N×d": f"{N}×{dd}", "ε": e, "signal rank, θ": [r, th], "mean Rank_ε": _fmt(ranks.mean(), 2),
                     "prediction": _fmt(pred, 2), "tol": _fmt(tol, 2), "sd": _fmt(ranks.std(), 2)})
    return Result(measured=[r["mean Rank_ε"] for r in rows], expected=[r["prediction"] for r in rows], holds=bool(ok),
                  details={"cases": rows, "trials": st["trials"],
                           "prediction": "r + (min − r)·P_MP(λ ≥ ε²σ_top²), σ_top = bulk edge 1+√γ or the BBP spike"})
