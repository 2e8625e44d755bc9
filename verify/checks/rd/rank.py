"""RD checks (1/2): Rank Diminishing in Deep Neural Networks.

Numerical rank (Eq 4, Thm 1), partial Jacobian rank (Eq 5, Lemma 2), monotone depth (Thm 2 / Eq 7),
structural impetus (Thm 3 / Fig 3); Marchenko–Pastur (Sec 3.1) is :mod:`verify.checks.rd.spectrum`, the claims
about products of many layers (Thm 4, Thm 5, Cor 1, MLP-50) are in :mod:`verify.checks.rd.products`. Sizes for quick/full live in
``sims.rank_nets.rd_settings`` (shared with paper_figs/rd.py). Every check has a negative control (a
realistic bug, named in its text) and a positive control (data on which the claim holds by construction);
every result carries ``miss`` in tolerance units. A count that must be 0 has tolerance "less than one",
i.e. miss = count / 0.5. rd.cls_dim and rd.independence_deficit belong to the real-model checks.
"""
from __future__ import annotations

import numpy as np
import torch
from sims import jacobian as J
from sims import rank_components as fig3
from sims import rank_nets as nets
from theory import rank as R
from verify.checks.rd import _controls as C
from verify.registry import Result, check


def _fmt(x, d=3):
    return float(np.round(float(x), d))


def _count_miss(c) -> float:
    """A count whose tolerance is 0 (fewer than one): miss = c / 0.5."""
    return float(c) / 0.5


def _claim_finding(control: bool, miss: float, text: str) -> str | None:
    """The finding of a claim run that fails (miss > 1): what was measured, so that a `refuted` always carries one.
    None for the controls and for a claim that holds."""
    if control or miss <= 1:
        return None
    return f"{text} (miss {miss:.3g} tolerance units)."


# ----------------------------------------------------------------------------- Eq 4, Thm 1

def _rank_frobenius(w, eps):
    """The bug of the negative control: a threshold relative to ‖W‖_F instead of σ_1 = ‖W‖₂."""
    s = np.linalg.svd(w, compute_uv=False)
    return int(np.count_nonzero(s >= eps * np.sqrt(np.sum(s**2))))


def _first_change(rank_fn, w, dmat, dmax, fmax=30.0):
    """Smallest δ/δ_max at which rank_fn(W + δD) ≠ rank_fn(W): a grid up to ``fmax``, then bisection."""
    base = rank_fn(w)
    grid = np.unique(np.concatenate([[1e-9, 1e-6, 1e-3], np.geomspace(0.01, fmax, 40), [0.999, 1.001]]))
    lo = 0.0
    for f in grid:
        if rank_fn(w + f * dmax * dmat) != base:
            hi = f
            for _ in range(30):
                mid = 0.5 * (lo + hi)
                lo, hi = (lo, mid) if rank_fn(w + mid * dmax * dmat) != base else (mid, hi)
            return hi
        lo = f
    return fmax


@check(
    "rd.numerical_rank_stable", equation="Eq 4, Thm 1",
    kind="numeric", tolerance="first rank change at δ ≥ δ_max (miss = δ_max/δ_first); Rank_ε = Rank for ε < ε_max",
    tolerance_reason="Thm 1 is exact: below the Weyl margin δ_max = min|σ_i − εσ_1|/((1+ε)‖D‖₂) no singular value "
                     "can cross ε‖W+δD‖₂; we locate the first δ at which the rank changes (grid + bisection, up to "
                     "30 δ_max) along random and adversarial D (which pushes the singular value nearest the "
                     "threshold across it, so the bound is met within a factor 1+ε); low-rank W must give "
                     "Rank_ε = Rank for ε < σ_r/σ_1 (a count, tolerance < 1)",
    negative_control="bug: the numerical rank thresholded relative to ‖W‖_F instead of σ_1 = ‖W‖₂ (Eq 4 says "
                     "spectral norm), with δ_max still from Thm 1's spectral margin",
    positive_control="diagonal W and diagonal D: the singular values are the |diagonal entries|, so every crossing "
                     "point is known in closed form and lies at or beyond δ_max",
)
def numerical_rank_stable(ctx, planted, positive=False):
    rng = ctx.rng("positive" if positive else "matrices")
    cases = 40 if ctx.quick else 200
    rank_fn = _rank_frobenius if planted else R.numerical_rank
    lowrank_bad, ratios, adv = 0, [], []
    for c in range(cases):
        n, d = (int(v) for v in rng.integers(6, 40, size=2))
        r = int(rng.integers(1, min(n, d)))
        if positive:
            w = np.zeros((n, d))
            w[np.arange(r), np.arange(r)] = np.sort(rng.uniform(0.01, 1.0, r))[::-1]
            dmat = np.zeros((n, d))
            dmat[np.arange(min(n, d)), np.arange(min(n, d))] = rng.standard_normal(min(n, d))
        else:
            w = rng.standard_normal((n, r)) @ np.diag(np.logspace(0, -2, r)) @ rng.standard_normal((r, d))
            dmat = rng.standard_normal((n, d))
        eps = float(R.eps_max_low_rank(w) * rng.uniform(0.05, 0.95))
        lowrank_bad += int(rank_fn(w, eps) != np.linalg.matrix_rank(w))
        if c % 4 == 3 and not positive:  # adversarial: push the singular value nearest this rank's threshold across
            u, s, vt = np.linalg.svd(w)
            thr = eps * (np.sqrt(np.sum(s**2)) if planted else s[0])
            i = int(np.argmin(np.abs(s - thr)))
            dmat = (-1.0 if s[i] >= thr else 1.0) * np.outer(u[:, i], vt[i]) * np.sqrt(n * d)
        dmax = R.weyl_delta_max(w, eps, dmat)
        f = _first_change(lambda a: rank_fn(a, eps), w, dmat, dmax)
        ratios.append(f)
        if c % 4 == 3 and not positive:
            adv.append(f)
    first = float(np.min(ratios))
    miss = max(1.0 / first, _count_miss(lowrank_bad))
    return Result(
        measured=_fmt(first, 4), expected="≥ 1 (first change at or beyond δ_max)", holds=bool(miss <= 1), miss=miss,
        finding=_claim_finding(planted or positive, miss, f"Thm 1: the numerical rank changed at δ = {first:.4g} δ_max "
                               f"(must be ≥ 1) over {cases} matrices; {lowrank_bad} low-rank W with Rank_ε ≠ Rank for "
                               "ε < ε_max"),
        details={"matrices": cases, "first change δ/δ_max: min over matrices": _fmt(first, 4),
                 "adversarial D: first change δ/δ_max (median, max)":
                     [_fmt(np.median(adv), 4), _fmt(np.max(adv), 4)] if adv else None,
                 "random D without a change up to 30 δ_max": int(np.sum(np.asarray(ratios) >= 30)),
                 "low-rank W with Rank_ε ≠ Rank for ε < ε_max": lowrank_bad,
                 "rank": "‖W‖_F threshold (planted bug)" if planted else "Eq 4 (σ_1 threshold)"},
    )


# ----------------------------------------------------------------------------- Eq 5, Lemma 2

@check(
    "rd.partial_rank", equation="Eq 5, Lemma 2", kind="numeric", tolerance="max |J_{f∘ψ} − Sub(J_f)| ≤ 1e-12; 0 violations",
    tolerance_reason="Eq 5 is an identity (float64 roundoff ~1e-15 on entries O(1)); Lemma 2 is exact for exact "
                     "ranks, which we take in float64 with ε = 1e-9 on networks with bottlenecks (true ranks are "
                     "separated from zero by >1e-6 relative). An identity checked at roundoff level: any real bug "
                     "misses by many orders of magnitude",
    negative_control="bugs: (i) Sub(J_f) taken at the original x instead of the zero-padded point ψ(Sub(x)) (differs "
                     "for a nonlinear f), and (ii) Lemma 2's bound read the wrong way round (partial-rank loss ≥ "
                     "full-rank loss)",
    positive_control="a linear network (convolutions without activations): J is constant, so J_{f∘ψ} = Sub(J_f) at "
                     "every point and Lemma 2 holds for rank-subadditivity reasons alone",
)
def partial_rank(ctx, planted, positive=False):
    with J.single_threaded():
        return _partial_rank(ctx, planted, positive)


def _partial_rank(ctx, planted, positive):
    g = ctx.torch_generator("nets-linear" if positive else "nets")
    rng = ctx.rng("patches")
    c, hw = 3, 8
    blocks = nets.cnn_blocks([c, 6, 6, 2, 6], g)  # a 2-channel bottleneck: rank is lost at block 3
    if positive:
        blocks = [b[0] for b in blocks]  # the convolutions alone: a linear map
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
        ref = full[:, idx] if planted else jpad_full[:, idx]  # Eq 5: J_{f∘ψ}(u) = Sub(J_f(ψ(u)))
        err = max(err, float((jg - ref).abs().max()))
        for mode in ("forward", "reverse"):
            err = max(err, float((J.partial_jacobian(f, x[0], idx, at="padded", mode=mode) - jg).abs().max()))
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
            viol += int(not (part_loss >= full_loss if planted else full_loss >= part_loss))
            strict += int(full_loss > part_loss)
    miss = max(err / 1e-12, _count_miss(viol))
    return Result(
        measured={"max |J_{f∘ψ} − Sub(J_f)|": err, "Lemma 2 violations": viol}, expected="≤ 1e-12, 0",
        holds=bool(miss <= 1), miss=miss,
        finding=_claim_finding(planted or positive, miss, f"Eq 5 / Lemma 2: max |J_(f∘ψ) − Sub(J_f)| = {err:.3g} "
                               f"(tolerance 1e-12) and {viol} Lemma 2 violations in {trials * (len(js) - 1)} pairs"),
        details={"patches": "central 2×2, 3×3, 4×4 (×3 channels) of a 3×8×8 input, 4-block CNN "
                            + ("without activations (linear)" if positive else "(ReLU, 2-channel bottleneck)"),
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


def _low_rank_linear(widths, ranks, g):
    """Linear layers whose weights have the given ranks (the positive control's stack)."""
    out = []
    for a, b, r in zip(widths[:-1], widths[1:], ranks):
        lin = torch.nn.Linear(a, b, bias=False).double()
        with torch.no_grad():
            lin.weight.copy_(torch.randn(b, r, generator=g, dtype=torch.float64)
                             @ torch.randn(r, a, generator=g, dtype=torch.float64) / a)
        out.append(lin)
    return out


@check(
    "rd.monotone_depth", equation="Thm 2, Eq 7", kind="numeric", tolerance="0 increases of Rank(J_{F_k}) with k",
    tolerance_reason="Eq 7 follows from Rank(AB) ≤ Rank(B) exactly; ranks are taken in float64 with ε = 1e-9 (exact "
                     "rank up to roundoff), on 2 inputs per stack; the float32-rule ranks are reported too (numerical "
                     "rank with a relative threshold is not monotone in general: Rank_ε(AB) can exceed Rank_ε(B))",
    negative_control="bug: the rank of each block's own Jacobian J_{f^k} (at F_{k−1}(x)) taken for the sub-network's "
                     "J_{F_k} = J_{f^k}⋯J_{f^1}; a block after a bottleneck has higher rank than the bottleneck",
    positive_control="linear layers with weights of planted ranks 40, 30, 30, 20 (widths 48): Rank(J_{F_k}) is "
                     "min of the ranks so far, monotone by construction",
)
def monotone_depth(ctx, planted, positive=False):
    with J.single_threaded():
        return _monotone_depth(ctx, planted, positive)


def _monotone_depth(ctx, planted, positive):
    g = ctx.torch_generator("zoo")
    if positive:
        zoo = {"planted-rank linear": (_low_rank_linear([48] * 5, [40, 30, 30, 20], g),
                                       torch.randn(2, 48, generator=g, dtype=torch.float64))}
    else:
        zoo = _zoo(g, ctx.quick)
    viol, drops, per, f32_viol = 0, 0, {}, 0
    for name, (blocks, x) in zoo.items():
        rows = []
        for s in range(2):
            xs = x if s == 0 else x + 0.5 * torch.randn(x.shape, generator=g, dtype=x.dtype)
            if planted:  # per-block Jacobians, each at its own input
                feats = [xs] + J.compose_check(blocks, xs)
                js = [J.subnetwork_jacobians([b], feats[k])[0] for k, b in enumerate(blocks)]
            else:
                js = J.subnetwork_jacobians(blocks, xs)
            r = [R.numerical_rank(j.numpy(), 1e-9) for j in js]
            d = np.diff([xs[0].numel()] + r)
            viol += int(np.sum(d > 0))
            drops += int(np.sum(d < 0))
            f32_viol += int(np.sum(np.diff([R.numerical_rank(j.numpy()) for j in js]) > 0))
            rows.append(r)
        per[name] = rows
    return Result(
        measured=viol, expected=0, holds=bool(viol == 0), miss=_count_miss(viol),
        finding=_claim_finding(planted or positive, _count_miss(viol), f"Thm 2 / Eq 7: Rank(J_(F_k)) increased with "
                               f"k {viol} times (must be 0); ranks per stack: {per}"),
        details={"ranks of J_{F_1..F_L} per stack (2 inputs, ε = 1e-9)": per, "strict decreases seen": drops,
                 "increases under the float32 rule (not covered by Eq 7)": f32_viol,
                 "stacks": "MLP 48-48-32-48-24-48-48 ReLU; CNN 3-6-6-3(stride 2)-6-6 ReLU; 4 residual conv blocks "
                           "(3 ch); 4 softmax attention blocks (6 tokens × 12) with residual + ReLU MLP"},
    )


# ----------------------------------------------------------------------------- Thm 3 / Fig 3

#: the components Fig 3's caption says lose rank (BN is reported apart: a remission in Sec 4.3)
SI_JUDGED = ("conv3x3", "fc", "ln", "in", "gn")


def _si_verdicts(d, eps_scale=1.0, kappa=fig3.KAPPA_REF, names=None):
    """Per component: miss (< 1: loses rank beyond the noise floor of maps of condition ≤ κ) from stored spectra."""
    names = names or [k for k in d["spectra"] if k != "before"]
    return {k: fig3.judge(d["spectra"], k, eps_scale * d["eps_jacobian"], eps_scale * d["eps_pca"], kappa)["miss"]
            for k in names}


def _si_row(v, names):
    """'conv3x3 L, fc L, …' (L: loses rank, K: keeps it) and whether every judged component loses."""
    text = ", ".join(f"{k} {'L' if v[k] <= 1 else 'K'}" for k in names if k in v)
    return text, all(v[k] <= 1 for k in SI_JUDGED if k in v)


def _si_sensitivity(d, st, seed):
    """Re-judge Fig 3 with each open modelling choice moved (measured, never assumed): ε (and the comparison's κ,
    reported but not counted) from the stored spectra at the run's size; input law, batch below the ambient
    dimension (the paper's B/n = 5000/8192) and channel count by re-running at small sizes (cached). Returns
    (rows, survives_all) where survives_all covers the paper's open choices only."""
    names = list(SI_JUDGED) + ["bn", "rescale"]
    rows, ok = {}, True
    size = f"C = {st['channels']}, B = {st['batch']}"
    for kap in (1.0, 2.0, 16.0):  # the comparison's own choice, not the paper's: reported, not in "survives"
        t, s = _si_row(_si_verdicts(d, kappa=kap, names=names), names)
        rows[f"comparison: noise floor κ = {kap:g} (ours {fig3.KAPPA_REF:g}; {size}; not a choice of the paper, "
             "not counted in 'survives')"] = f"{t} → five lose: {s}"
    for es in (0.1, 10.0):
        t, s = _si_row(_si_verdicts(d, eps_scale=es, names=names), names)
        rows[f"ε = {es:g} × float32 rule (paper: 1 ×; {size})"] = f"{t} → five lose: {s}"
        ok &= s
    comps = list(fig3.COMPONENTS) + ["rescale"]
    small = [("input law uniform ±√3 (paper: Gaussian)", dict(channels=4, batch=800, input_law="uniform")),
             ("batch below the ambient dimension, B/n = 0.6 as the paper's 5000/8192", dict(channels=4, batch=156)),
             ("channel count C = 8 (paper 128; larger runs in docs/rd.md)", dict(channels=8, batch=2000))]
    for label, kw in small:
        e = fig3.structural_impetus(kw["channels"], kw["batch"], 8, seed=seed, components=comps,
                                    input_law=kw.get("input_law", "gaussian"))
        t, s = _si_row(_si_verdicts(e, names=names), names)
        rows[f"{label} (C = {kw['channels']}, B = {kw['batch']})"] = f"{t} → five lose: {s}"
        ok &= s
    return rows, ok


@check(
    "rd.structural_impetus", equation="Thm 3, Fig 3", kind="sim",
    tolerance="each component the paper says loses rank (conv 3×3, FC, LN, IN, GN) loses a direction, in Jacobian "
              "rank or PCA dimension, that no invertible map of condition ≤ 4 could have lost",
    figures=("rd.fig3_structural",),
    tolerance_reason="Fig 3's caption and Sec 4.3: 'convolution and FC layers tend to lose rank considerably; "
                     "normalization layers, like IN, LN, and GN, lose rank modestly. But none can preserve rank' — "
                     "a strict loss, in either measure (float32 rule of Sec 4.3 on both). Numerical rank is not "
                     "invariant under invertible maps: a map A of condition κ keeps σ_i(AW)/σ_1(AW) within a factor κ "
                     "of σ_i(W)/σ_1(W), so it can push below ε·σ_1 the directions that lay between ε and κε before "
                     "(eigenvalues: between ε and κ²ε). That band is the noise floor (stated per run; measured on the "
                     "identity, a Haar-orthogonal map and a per-channel rescaling, which must all keep rank, else the "
                     "check raises). A component loses rank when a direction that stood above κε before ends below ε "
                     "after: miss = (s_after[r]/s_after[1])/ε with r = Rank_{κε}(before), for the weaker of the two "
                     "measures (< 1 exactly when it loses). κ = 4 covers the invertible parts of the normalisations "
                     "(their Jacobians on the directions they keep have condition 1.00 (LN), 1.00–1.04 (GN), "
                     "1.25–1.28 (BN), 1.39–1.41 (IN), measured at C = 4 and 16) and trained-like affine weights. "
                     "BatchNorm is judged apart: Sec 4.1 says it 'may' lose dimensions and Sec 4.3 cites it "
                     "as a remission, so BN keeping rank is reported, not counted against the paper. 'Considerably' "
                     "and 'modestly' have no threshold in the paper: the sizes are reported. Fig 3's setting "
                     "(128 × 8 × 8, FC 8192, batch 5000) is measured as the regime: below it (the run's budget allows "
                     "C = 16) a run that holds is a finding in that regime, as every check run outside its paper's "
                     "setting. Readings: Thm 3's local form (Jacobian rank) and Fig 3's PCA panel, each alone",
    negative_control="bug: Fig 3's BatchNorm measured after model.eval() (a calibration pass over the batch, "
                     "trained-like affine weights γ = exp(0.25·N(0,1))): the layer is then a per-channel affine map, "
                     "invertible, and must not be found to lose rank. Under the earlier comparison without a noise "
                     "floor (any drop of Rank_ε counts) it was found to lose rank (PCA dimension 1006 → 1004 at C = 16)",
    positive_control="the same experiment (the library's FC layer built by component('fc'), then a component) with a "
                     "1×1 convolution whose C×C weight has rank ⌈C/2⌉ (a planted channel bottleneck) must be found "
                     "to lose rank; and that FC layer — the construction the 'fc' component shares — must be the "
                     "Gaussian layer of Fig 3: the squared singular values of its weight (scaled to mean 1) within "
                     "KS distance 0.05 of the quarter-circle law (γ = 1 Marchenko–Pastur, CDF written out in the "
                     "check). A bug in building the FC (e.g. orthogonal initialisation: KS 0.61) fails the control, "
                     "so the check ends 'fail', never 'refuted'", cost=29,
)
def structural_impetus(ctx, planted, positive=False):
    st = nets.rd_settings(ctx.quick)["si"]
    comps = ["bn_eval"] if planted else ["bottleneck1x1"] if positive else list(fig3.COMPONENTS) + list(fig3.REFERENCES)
    d = fig3.structural_impetus(st["channels"], st["batch"], st["jac_batch"], seed=ctx.seed, components=comps)
    amb = int(d["ambient"])
    misses = _si_verdicts(d, names=comps)
    broken = [k for k in comps if k in fig3.REFERENCES and misses[k] <= 1]
    if broken:
        raise RuntimeError(f"invertible reference map(s) {broken} found to lose rank: the comparison is broken")
    lines = {}
    for name in comps:
        rec = d[name]
        lost = misses[name] <= 1
        jl, pl = rec["jac"]["before"] - rec["jac"]["after"], rec["pca"]["before"] - rec["pca"]["after"]
        claim = fig3.PAPER_CLAIM.get(name, "reference (invertible)" if name in fig3.REFERENCES else "control")
        verdict = ("loses rank" if lost else "keeps rank (within the noise floor)")
        if name == "bn":
            verdict += " — consistent with the paper (no strict-loss claim for BN; a remission in Sec 4.3)" if not lost \
                else " — the paper makes no strict-loss claim for BN"
        elif name in fig3.PAPER_CLAIM:
            verdict += " — as the paper says" if lost else " — CONTRADICTS the paper"
        kap = f"; condition number {rec['kappa']:.3g}" if "kappa" in rec else ""
        lines[name] = (f"{claim}: {verdict}. Jacobian rank {rec['jac']['before']} → {rec['jac']['after']} "
                       f"({100 * jl / amb:.2g}% of {amb}); PCA dim {rec['pca']['before']} → {rec['pca']['after']} "
                       f"({100 * pl / amb:.2g}%); miss {misses[name]:.3g} (Jacobian {rec['jac']['margin']:.3g}, PCA "
                       f"{rec['pca']['margin']:.3g}; any-drop rule: "
                       f"{min(rec['jac']['margin_any'], rec['pca']['margin_any']):.3g}){kap}")
    judged = ["bn_eval"] if planted else ["bottleneck1x1"] if positive else list(SI_JUDGED)
    miss = max(misses[k] for k in judged)
    ks = C.fc_init_ks(d["spectra"]["before"]["jac"])
    if positive:
        miss = max(miss, ks / C.FC_KS_TOL)
    first = d[comps[0]]
    details = {"per component": lines, "input PCA dim": int(d["pca_input"]), "ambient dim": amb,
               "FC initialisation: KS distance of σ²/mean σ² from the quarter-circle law (tol 0.05; judged in the "
               "positive control)": _fmt(ks, 4),
               "ε (Jacobian, PCA)": [d["eps_jacobian"], d["eps_pca"]],
               "noise floor": {
                   "κ": fig3.KAPPA_REF,
                   "Jacobian: Rank_ε(W) − Rank_{κε}(W) (the most an invertible map of condition ≤ κ can lose)":
                       first["jac"]["floor"],
                   "PCA: dim_ε − dim_{κ²ε} of the FC features": first["pca"]["floor"]},
               "setting": f"Gaussian inputs {st['channels']}×8×8 (the paper: 128×8×8; 128 channels take ~70 "
                          "CPU-minutes, far beyond the run's budget of about a minute on one core: docs/rd.md has "
                          f"one-off runs at C = 128), random FC of {st['channels'] * 64} units first (paper: 8192), "
                          f"batch {st['batch']} for PCA (paper 5000), Jacobian of sample 0 within a batch of "
                          f"{st['jac_batch']}; float32 rule ε = 1.19e−7 × N (Sec 4.3); normalisations without affine "
                          "parameters, with batch statistics; GN with C/4 groups"}
    finding = None
    if not (planted or positive):
        ref = {k: {"Jacobian rank change": d[k]["jac"]["before"] - d[k]["jac"]["after"],
                   "PCA dim change": d[k]["pca"]["before"] - d[k]["pca"]["after"],
                   "miss (must be > 1)": _fmt(misses[k], 3)} for k in fig3.REFERENCES}
        details["noise floor"]["measured on invertible maps (rank lost before → after)"] = ref
        details["noise floor"]["PCA dim sampling noise: |dim(this batch) − dim(an independent batch)|"] = \
            abs(int(d["pca_fresh_batch"]) - int(first["pca"]["before"]))
        sens, survives = _si_sensitivity(d, st, ctx.seed)
        details["sensitivity"] = sens
        sizes = {k: (d[k]["jac"]["before"] - d[k]["jac"]["after"], d[k]["pca"]["before"] - d[k]["pca"]["after"])
                 for k in fig3.COMPONENTS}
        lin, norm = ("conv3x3", "fc"), ("ln", "in", "gn")
        finding = ("Per component (C = {c}, Jacobian loss / PCA loss in dimensions): ".format(c=st["channels"])
                   + "; ".join(f"{k} {sizes[k][0]} / {sizes[k][1]}" for k in fig3.COMPONENTS)
                   + "; an invertible per-channel rescaling (κ ≤ 4) "
                   f"{d['rescale']['jac']['before'] - d['rescale']['jac']['after']}"
                   f" / {d['rescale']['pca']['before'] - d['rescale']['pca']['after']}, within the noise floor "
                   f"{first['jac']['floor']} / {first['pca']['floor']}. "
                   + ("Every component the caption names loses rank beyond the floor" if miss <= 1
                      else "Not every component the caption names loses rank beyond the floor")
                   + (" and this survives every modelling choice re-run here (details: sensitivity, small sizes)"
                      if survives else
                      " in this regime, but not under every modelling choice re-run (details: sensitivity)")
                   + ". Thm 3 states no size (any map with invariant directions loses that many dimensions), so "
                     "this run judges it; Fig 3's own setting (128 × 8 × 8) is beyond the run's budget and is not "
                     "reproduced: at 128 channels LayerNorm's two lost directions can hide among the FC layer's own "
                     "sub-threshold directions (one-off runs at C = 128 in docs/rd.md)"
                   + ". 'Considerably' (conv, FC) vs 'modestly' (LN, IN, GN): "
                   + ("holds in the PCA dimension" if min(sizes[k][1] for k in lin) > max(sizes[k][1] for k in norm)
                      else "does not hold in the PCA dimension")
                   + " and " + ("holds" if min(sizes[k][0] for k in lin) > max(sizes[k][0] for k in norm)
                                else "does not hold") + " in the Jacobian rank (the normalisations lose exactly 2 "
                   "per normalised group: LN 2, GN 2G, IN 2C). BatchNorm with batch statistics "
                   + ("keeps rank" if misses["bn"] > 1 else "loses rank")
                   + " (a per-channel affine map of each sample up to O(1/B) coupling), as the paper's remission "
                     "remark leads one to expect. PCA dimension can rise after IN/GN: a nonlinear map can raise the "
                     "linear dimension of a sample, so PCA dimension is not an intrinsic dimension.")
    readings = None
    if not (planted or positive):
        def line(measure, quote):
            m = {k: float(d[k][measure]["margin"]) for k in SI_JUDGED}
            bad = [k for k, v in m.items() if v > 1]
            return {"quantifier": "for all named components", "holds": not bad, "miss": _fmt(max(m.values()), 3),
                    "measured": ("every named component loses beyond the floor" if not bad else
                                 f"{', '.join(bad)} do(es) not lose beyond the floor")
                    + f" (C = {st['channels']}; Fig 3's setting is 128 × 8 × 8 into an FC of 8192)", "quote": quote}
        readings = {
            "Thm 3 in its local form: the Jacobian rank of every named component falls (the intrinsic dimension of "
            "the output manifold; no size stated)": line("jac", "the intrinsic dimension of the output feature "
                                                         "manifold will be strictly lower than that of the input"),
            "Fig 3's PCA panel: the PCA dimension of every named component's features falls (a linear dimension; "
            "this run's C, below Fig 3's setting)": line("pca", "PCA dimension of feature spaces … none can "
                                                             "preserve rank")}
    return Result(
        measured={k: _fmt(misses[k], 3) for k in comps if k not in fig3.REFERENCES},
        expected="miss ≤ 1 for " + ", ".join(judged), holds=bool(miss <= 1), miss=float(miss), finding=finding,
        details=details, readings=readings,
        regime=None if (planted or positive) else {
            "Thm 3's condition: each component has directions along which its output is invariant (LN, IN, GN: the "
            "normalised directions; conv, FC: a kernel), applied to a full-dimensional input (no size stated)":
                {"measured": f"Gaussian inputs {st['channels']}×8×8, input PCA dim {int(d['pca_input'])} of {amb}",
                 "holds": bool(int(d["pca_input"]) == amb)},
            "Fig 3's setting (Sec 4.3): Gaussian inputs 128 × 8 × 8 into an FC layer of 8192 units, batch 5000 (the "
            "caption's 'none can preserve rank' is read off that run)":
                {"measured": f"{st['channels']} × 8 × 8 into an FC of {st['channels'] * 64} units, batch {st['batch']} "
                             "(128 channels take ~70 CPU-minutes: docs/rd.md)",
                 "holds": bool(st["channels"] == 128 and st["batch"] >= 5000)}},
    )
