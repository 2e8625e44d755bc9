"""Helpers of the real-model checks judged on the glyph networks (docs/real.md, "The glyph networks: ND and RD
verdicts"): ND Table 1's tolerances and its judge, the glyph data in the form verify/checks/real/trained_networks.py reads, the
precondition (the networks are trained), and ND Sec 2.4's between-network verdict on two independently trained
glyph networks (used by ``nd.between_networks`` in verify/checks/nd/covlasso.py).

Regime (fixed before any verdict was looked at; the registry sims/glyphs/networks.py has the networks,
sims/glyphs/dependencies.py the held-out splits): the suite's 1000-class LeNets ``lenet-s<seed>`` (full) or their
100-class quick versions; second moments, PCA bases and CovLasso fits on the training faces under fresh
augmentation (``aug_test``); errors and accuracies against the true code points on the held-out DejaVu Serif faces
(``face_test``); the target categories a seeded random draw (ND's Table 1 shows chosen illustrations; a random draw
cannot favour the claim). A network below its required held-out accuracy (networks.precondition) makes the Result ``undecided``
(the check is then reported, never judged).
"""
from __future__ import annotations

import numpy as np

from sims.real import analysis as A
from verify.checks._shared.nd_reference import plain_check
from verify.checks._shared.nd_scan import RHO_GRID

RHO = 0.02            # λ = ρ·λ_max(i) (ND A47): the typical reading's sparsity level
REL_ERR_MAX = 0.30    # ND Table 1's worst relative error is 29.7 % (ViT-S); judged relative to the logit's spread
SUPPORT_MAX = 50      # "a few other categories": ≤ 5 % of the 1000
ACC_RATIO = 0.95      # modified accuracy ≥ 0.95 × original (Table 1: 60.9 vs 61.0 at worst)
POS_RATIO = 0.85      # modified positive accuracy ≥ 0.85 × original (Table 1's worst: 72.0 vs 84.0 = 0.857)
CLS_THRESHOLD = 0.95  # RD Sec 4: "reproduce 95 % of the original accuracy"
CLS_RATIO = 109 / 192  # RD Table 2's largest ClsDim/width ratio (ViT-T)
ARCH = "lenet"
#: Full mode: one 1000-class network per seed, seeds 0, 1, 2 (a claim about networks is judged on ≥ 3 of them).
GLYPH_SEEDS = 3
CATEGORIES = {False: 12, True: 6}  # target categories per network (a seeded draw)


def net_name(seed: int) -> str:
    return f"{ARCH}-s{int(seed)}"


def judge_table1(rows: list) -> dict:
    """Medians of ND Table 1's columns over ``rows`` and the miss in tolerance units (≤ 1: the claim holds)."""
    def med(k):
        v = [r[k] for r in rows if r.get(k) is not None and np.isfinite(r[k])]
        return float(np.median(v)) if v else float("nan")

    meds = {k: med(k) for k in ("spread_rel_err", "rel_err", "abs_err", "support", "acc", "ori_acc", "pos_acc",
                                "ori_pos_acc")}

    def at_least(x, t):  # miss of "x ≥ t" in tolerance units: t/x, read at most 100 (x = 0 is a clear miss)
        if not (np.isfinite(x) and np.isfinite(t)):
            return float("inf")
        return 0.0 if t <= 0 else t / max(x, t / 100)  # t = 0: not read (the Result is undecided, below)

    parts = {"spread_rel_err": meds["spread_rel_err"] / REL_ERR_MAX, "support": meds["support"] / SUPPORT_MAX,
             "acc": at_least(meds["acc"], ACC_RATIO * meds["ori_acc"]),
             "pos_acc": at_least(meds["pos_acc"], POS_RATIO * meds["ori_pos_acc"])}
    miss = max(parts.values())
    miss = miss if np.isfinite(miss) else float("inf")  # a NaN median (no positives) is a miss, not a pass
    # An original (unmodified) accuracy of 0 leaves nothing to compare with: Table 1's accuracy columns cannot be
    # read, and a bug that zeroes them (e.g. labels shifted against the logit columns) must not read as "holds".
    zero = [k for k in ("ori_acc", "ori_pos_acc") if not (np.isfinite(meds[k]) and meds[k] > 0)]
    undecided = (f"the unmodified model's {' and '.join(zero)} is {', '.join(str(meds[k]) for k in zero)}: Table 1's "
                 "comparison with the original cannot be read (no verdict)") if zero else None
    return {"rows": rows, "medians": meds, "miss": float(miss), "miss parts": parts, "undecided": undecided}


def either(*reasons):
    """The first non-empty reason of several (precondition, Table 1 reading): a Result's ``undecided``."""
    return next((r for r in reasons if r), None)


def precondition(ctx, names) -> dict:
    """networks.precondition of each named network; ``ok`` when every one is trained enough for a verdict."""
    from sims.glyphs import networks as nw

    pre = {n: nw.precondition(n, ctx.quick, ctx.device) for n in names}
    bad = [p["reason"] for p in pre.values() if not p["trained"]]
    return {"ok": not bad, "lines": {n: p["reason"] for n, p in pre.items()}, "accuracies": pre,
            "undecided": ("; ".join(bad) + " (the glyph networks are not trained: no verdict)") if bad else None}


_DATA: dict = {}


def glyph_data(ctx, seed: int | None = None) -> dict:
    """The network ``lenet-s<seed>`` (default ctx.seed) in verify/checks/real/trained_networks.py's data form: ``logits``,
    ``features``, ``W``, ``b``, ``labels`` (true output indices), fit rows then test rows with ``split`` = (fit,
    test), ``names``, ``cats`` (a seeded draw of target categories), ``inputs``, ``precondition``."""
    from sims.glyphs import dependencies as GD
    from sims.glyphs import networks as nw

    seed = ctx.seed if seed is None else seed
    name = net_name(seed)
    key = (name, ctx.quick, str(ctx.device))
    if key in _DATA:
        return _DATA[key]
    fit, test = GD.outputs(name, ctx.quick, GD.FIT_SPLIT, ctx.device), GD.outputs(name, ctx.quick, GD.TEST_SPLIT,
                                                                                 ctx.device)
    nf, nt = len(fit["labels"]), len(test["labels"])
    K = fit["logits"].shape[1]
    cats = np.random.default_rng([20260611, int(seed), int(ctx.quick)]).choice(K, CATEGORIES[bool(ctx.quick)],
                                                                              replace=False)
    s = nw.record(name, ctx.quick)
    d = {k: np.concatenate([fit[k], test[k]]) for k in ("logits", "features", "labels")}
    d.update(twins=twin_outputs(GD.task(ctx.quick), fit.get("label_values")))
    d.update(W=fit["W"], b=fit["b"], split=(np.arange(nf), nf + np.arange(nt)), names=fit["names"], photos=None,
             groups=np.arange(nf + nt), cats=[int(c) for c in cats], name=name,
             judged_on=f"judged on the glyph network {name}",
             precondition=precondition(ctx, [name]),
             inputs=(f"glyph network {name} ({s.arch}, {K} code points, {s.per_class} training images per class, "
                     f"{s.epochs} epochs): second moments / PCA on {nf} aug_test images of the training faces, "
                     f"errors and accuracies (true labels) on {nt} images of the held-out DejaVu Serif faces"))
    agree_with_precondition(d, name, nt)
    agree_with_the_classifier(d, last_layer(name, ctx.quick, ctx.device))
    _DATA[key] = d
    return d


def last_layer(name: str, quick: bool, device=None):
    """The named network's classifier module (the Linear whose weight and bias the read-out returns as W, b)."""
    from sims.glyphs import networks as nw

    return nw.net(name, quick, device).model.classifier


def agree_with_the_classifier(d: dict, classifier, rows: int = 512) -> None:
    """The logits the checks read must be the network's own last layer on its features: torch's float32 ``classifier``
    (a Linear) on the float32 features of the first ``rows`` rows against ``d["logits"]`` (float64), within the
    float32 error bound of a (width + 1)-term sum, 1.01·(width + 1)·u₃₂·(Σ_j |W_ij F_j| + |b_i|) per entry. A dropped
    or doubled bias, other weights, or logits of other rows than the features raise ValueError."""
    import torch

    F = np.asarray(d["features"][:rows], dtype=np.float32)
    with torch.no_grad():
        ref = classifier(torch.from_numpy(F)).double().cpu().numpy()
    W, b = np.asarray(d["W"], float), np.asarray(d["b"], float)
    u = float(np.finfo(np.float32).eps) / 2
    tol = 1.01 * (W.shape[1] + 1) * u * (np.abs(F.astype(float)) @ np.abs(W).T + np.abs(b)) + 1e-30
    err = np.abs(np.asarray(d["logits"][:rows], float) - ref)
    if np.any(err > tol):
        i, j = np.unravel_index(int(np.argmax(err / tol)), err.shape)
        raise ValueError(f"the logits read are not the network's last layer on its features: row {i}, output {j} "
                         f"differs by {err[i, j]:.3g} (float32 bound {tol[i, j]:.3g}; |b_{j}| = {abs(b[j]):.3g})")


def twin_outputs(task, label_values) -> dict:
    """{output j: outputs whose classes are drawn identically (homoglyph_groups(0.5): Latin H / Greek Η, - / ‑)}."""
    if label_values is None:
        return {}
    pos = {int(v): j for j, v in enumerate(np.asarray(label_values))}
    out = {}
    for g in task.homoglyph_groups(0.5):
        js = [pos[k] for k in g if k in pos]
        for j in js:
            out[j] = set(js) - {j}
    return out


def agree_with_precondition(d: dict, name: str, nt: int) -> None:
    """The original accuracy on the test rows (float64 logits of sims.glyphs.features) must be the precondition's
    held-out accuracy (sims.glyphs.features.heldout_accuracy: float32 batched forward, its own image draw): two
    computations of one number on the same images. A float32 near-tie may flip an argmax, so ≤ 2 images may
    differ; more means the rows are not the images the precondition judged (a wrong split, order or net)."""
    test = d["split"][1]
    ori = float(np.mean(d["logits"][test].argmax(1) == d["labels"][test]))
    pre = d["precondition"]["accuracies"][name]["face_test_all"]
    if abs(ori - pre) > 2.0 / nt + 1e-12:
        raise ValueError(f"{name}: the original accuracy on the test rows, {ori:.4f}, is not the precondition's "
                         f"held-out accuracy {pre:.4f} (same images): the rows are not the judged images")
    d["original accuracy (test rows; precondition's)"] = [round(ori, 4), round(pre, 4)]


def between_rows(ctx, F_fit, G_fit, F_test, G_test, y_test, cats, planted: bool = False, names=None,
                 rho: float = RHO) -> list:
    """ND Sec 2.4 rows: g_i (network g) predicted from f_j, j ≠ i (network f), for each target i.

    Cov of f̃ = (f_1, …, g_i, …, f_n) on the fit rows (theory.neural_dependency.mixed_logits, ND Eq 2), θ*(λ) at
    λ = ρ·λ_max(i) exactly (sims.real.analysis.covlasso_path); Table 1's metrics of g with g_i replaced by Σθ_j f_j
    on the test rows, true labels (theory.neural_dependency.replaced_logit_metrics). ``planted``: the negative
    control, g_i predicted from the logits of f on *other* test images (rows of F_test permuted: the pairing of
    the two networks' outputs on one image is lost)."""
    import theory.neural_dependency as ndep

    rows = []
    Ft = F_test
    if planted:
        Ft = F_test[ctx.rng("between-permute").permutation(len(F_test))]
    for i in cats:
        C = A.second_moment(ndep.mixed_logits(F_fit, G_fit, i))
        th = A.covlasso_path(C, i, [rho * A.lambda_max_i(C, i)])[0]
        m = ndep.replaced_logit_metrics(Ft, y_test, i, th, evaluated=G_test)
        rows.append({"category": int(i), "name": names[i] if names else str(i), "rel_err": m["rel_err"],
                     "spread_rel_err": m["spread_rel_err"],
                     "abs_err": m["abs_err"], "acc": m["acc"], "ori_acc": m["orig_acc"],
                     "pos_acc": np.nan if m["pos_acc"] is None else m["pos_acc"],
                     "ori_pos_acc": np.nan if m["orig_pos_acc"] is None else m["orig_pos_acc"],
                     "n_pos": m["n_pos"], "support": int(np.count_nonzero(np.delete(th, i))),
                     "dependency": A.dependency_text(i, th, names)})
    return rows


def between_glyph(ctx, planted: bool, positive: bool = False) -> dict:
    """ND Sec 2.4 / Fig 2e–f on two independently trained glyph networks f = lenet-s<seed>, g = lenet-s<seed+1>
    (same configuration, different initialisation and batch order), read as the paper states it (Fig 2e–f show
    chosen cases): some category of g shows ND's picture when predicted from f's other logits
    (:func:`between_scan`, every category and ρ of RHO_GRID, chosen on the aug_test images, confirmed on the
    held-out faces); the typical reading (median over a seeded draw at ρ = 0.02, Table 1's tolerances) is a second
    line. ``positive``: the same code on synthetic logits where g's category 0 is an exact combination of f's
    (sims.real.analysis.planted_logits: f_0 = 1.064·f_1 + 0.38·f_2 + 0.4·f_3 (f_3 ≡ 2: a bias-only logit); f's own
    column 0 replaced by noise)."""
    from sims.glyphs import dependencies as GD

    if positive:
        L, _ = A.planted_logits(seed=ctx.seed)
        rng = np.random.default_rng([ctx.seed, 11])
        G = L.copy()
        F = L.copy()
        F[:, 0] = rng.normal(scale=L[:, 0].std(), size=len(L))
        y = G.argmax(1)
        h = len(L) // 2
        t = judge_table1(between_rows(ctx, F[:h], G[:h], F[h:], G[h:], y[h:], [0], planted))
        ex = between_scan(F[:h], G[:h], y[:h], F[h:], G[h:], y[h:])
        return {**t, "existential": ex, "holds": ex["holds"], "miss": ex["miss"], "inputs": "synthetic planted logits",
                "precondition": None, "undecided": None}
    fn, gn = net_name(ctx.seed), net_name(ctx.seed + 1)
    pre = precondition(ctx, [fn, gn])
    f_fit, g_fit = GD.outputs(fn, ctx.quick, GD.FIT_SPLIT, ctx.device), GD.outputs(gn, ctx.quick, GD.FIT_SPLIT,
                                                                                 ctx.device)
    f_te, g_te = GD.outputs(fn, ctx.quick, GD.TEST_SPLIT, ctx.device), GD.outputs(gn, ctx.quick, GD.TEST_SPLIT,
                                                                                ctx.device)
    if not (np.array_equal(f_te["label_values"], g_te["label_values"]) and np.array_equal(f_te["y_fine"],
                                                                                         g_te["y_fine"])):
        raise ValueError(f"{fn} and {gn} must share their classes and held-out images")
    for name, out in ((fn, f_te), (gn, g_te)):  # the test rows are the held-out images each network was judged on
        agree_with_precondition({"logits": out["logits"], "labels": out["labels"], "precondition": pre,
                                 "split": (np.arange(0), np.arange(len(out["labels"])))}, name, len(out["labels"]))
    K = f_te["logits"].shape[1]
    cats = np.random.default_rng([20260612, int(ctx.seed), int(ctx.quick)]).choice(K, CATEGORIES[bool(ctx.quick)],
                                                                                  replace=False)
    Ft = f_te["logits"]
    if planted:  # the pairing of the two networks' outputs on one image lost
        Ft = f_te["logits"][ctx.rng("between-permute").permutation(len(f_te["logits"]))]
    rows = between_rows(ctx, f_fit["logits"], g_fit["logits"], Ft, g_te["logits"], g_te["labels"],
                        [int(c) for c in cats], False, names=f_te["names"])
    t = judge_table1(rows)
    ex = between_scan(f_fit["logits"], g_fit["logits"], g_fit["labels"], Ft, g_te["logits"], g_te["labels"],
                      twins=twin_outputs(GD.task(ctx.quick), f_te.get("label_values")))
    ex["names"] = f_te["names"]
    undecided = pre["undecided"]
    if not planted and not ex["holds"]:  # each choice ND leaves open moved to the paper's side (nd_scan.alternatives)
        ex["alternatives"] = between_alternatives(f_fit, g_fit, Ft, g_te, twins=twin_outputs(
            GD.task(ctx.quick), f_te.get("label_values")))
        held = [k for k, r in ex["alternatives"].items() if r["holds"] and r["decides"]]
        if held and not undecided:
            undecided = ("the picture appears with a choice the paper leaves open moved to its side — "
                         + "; ".join(f"{k}: {ex['alternatives'][k]['measured']}" for k in held)
                         + ". The refutation holds only under the other choice: a finding about that choice")
    if not planted:  # the typical line with λ moved (six targets per row)
        t["sensitivity"] = {}
        for rho in (0.005, 0.05):
            ts = judge_table1(between_rows(ctx, f_fit["logits"], g_fit["logits"], f_te["logits"], g_te["logits"],
                                           g_te["labels"], [int(c) for c in cats[:6]], rho=rho))
            t["sensitivity"][f"ρ = {rho:g}"] = {"miss": round(ts["miss"], 3), **{
                m: round(v, 3) for m, v in ts["medians"].items() if m in ("spread_rel_err", "rel_err", "support",
                                                                         "pos_acc", "ori_pos_acc")}}
    from verify.checks._shared import nd_scan as S_

    acc = [a.get("face_test_all") for a in pre["accuracies"].values()]
    regime = {"two well-trained networks (ND Sec 2.4; the glyph suite's held-out accuracy requirement)":
              {"measured": f"held-out accuracy {min(acc):.3f} (lower of the two)", "holds": bool(pre["ok"])},
              S_.MASSIVE: {"measured": f"n = {K} categories", "holds": bool(K >= 1000)}}
    return {**t, "existential": ex, "holds": ex["holds"], "miss": ex["miss"], "typical_miss": t["miss"],
            "undecided": undecided, "precondition": pre["lines"], "regime": regime,
            "inputs": f"g = {gn} predicted from f = {fn}: Cov of f̃ and the choice of cases on {len(f_fit['labels'])} "
                      f"aug_test images, metrics of g (true labels) on {len(f_te['labels'])} held-out-face images"}


def between_scan(F_sel, G_sel, y_sel, F_test, G_test, y_test, twins=None, limits: dict = A.PICTURE) -> dict:
    """The existential reading between networks: every target i of g at every ρ of RHO_GRID, θ by
    theory.neural_dependency.between_all on the selection images' second moments, scored on both sets."""
    import theory.neural_dependency as ndep

    Fs, Gs = np.asarray(F_sel, np.float64), np.asarray(G_sel, np.float64)
    N = len(Fs)
    cov_f = A.second_moment(Fs)
    cross = Fs.T @ Gs / N
    g_sq = np.einsum("ij,ij->j", Gs, Gs) / N
    rows = A.dependency_scan(None, RHO_GRID, (Fs, y_sel, Gs), (np.asarray(F_test, np.float64), y_test,
                                                               np.asarray(G_test, np.float64)),
                             thetas_at=lambda rho: ndep.between_all(cov_f, cross, g_sq, rho),
                             specificity_cov=((lambda i: ndep.mixed_cov(cov_f, cross, g_sq[i], i))
                                              if "specificity" in limits else None),
                             rng=np.random.default_rng(20260613), twins=twins, limits=limits)
    return A.existential(rows)


def between_alternatives(f_fit, g_fit, F_test, g_te, twins) -> dict:
    """:func:`verify.checks._shared.nd_scan.alternative_specs`' rows between networks."""
    from verify.checks._shared import nd_scan as S_

    c = lambda X: np.asarray(X, np.float64) - np.asarray(X, np.float64).mean(1, keepdims=True)  # noqa: E731
    args = (f_fit["logits"], g_fit["logits"], g_fit["labels"], F_test, g_te["logits"], g_te["labels"])
    cargs = (c(f_fit["logits"]), c(g_fit["logits"]), g_fit["labels"], c(F_test), c(g_te["logits"]), g_te["labels"])
    out = {}
    for label, decides, limits, with_twins, centred in S_.alternative_specs():
        ex = {**between_scan(*(cargs if centred else args), twins=twins if with_twins else None, limits=limits),
              "names": g_te["names"]}
        out[label] = {"holds": ex["holds"], "miss": round(float(ex["miss"]), 3), "measured": S_.summary(ex),
                      "decides": decides}
    return out


def _rows_at(S, fit, test, labels, cats, rho, offset=None) -> list:
    rows = []
    C = A.second_moment(S[fit])  # one second moment for every target (same rows)
    for i in cats:
        th = A.covlasso_path(C, i, [rho * A.lambda_max_i(C, i)])[0]
        m = A.dependency_metrics(S[test], th, i, offset=offset, labels=labels[test])
        plain_check(m, S[test], th, i, offset, labels[test])
        rows.append(m)
    return rows


def table1_sensitivity(ctx, d: dict, S, offset=None) -> dict:
    """ND Table 1's verdict again with each choice the paper leaves open moved (cheap rows, same library path):
    λ (ρ = 0.005, 0.05 instead of 0.02); the test images from the training faces (aug_test halves: ImageNet's
    validation images are in-distribution) instead of held-out faces; the categories the network gets most right
    on the fit rows, or categories with a homoglyph twin in the task (``homoglyph_groups(0.75)``: a sibling that
    looks alike, as ImageNet's similar classes; the paper shows chosen illustrations), instead of a random draw;
    the other seed's network is the check's second seed. Returns {choice: {medians, miss}}."""
    from sims.glyphs import dependencies as GD

    fit, test = d["split"]
    y = d["labels"]
    cats = list(d["cats"])[:6]  # six targets per row (the check's own row has them all): the rows' cost
    K = S.shape[1]
    pred = (S if offset is None else S + offset)[fit].argmax(1)
    hit = np.bincount(y[fit][pred == y[fit]], minlength=K) / np.maximum(np.bincount(y[fit], minlength=K), 1)
    best = [int(c) for c in np.argsort(-hit, kind="stable")[:len(cats)]]
    half = np.random.default_rng([ctx.seed, 5]).permutation(fit)
    f2, t2 = np.sort(half[: len(half) // 2]), np.sort(half[len(half) // 2:])
    choices = {"ρ = 0.005": (fit, test, cats, 0.005), "ρ = 0.05": (fit, test, cats, 0.05),
               "test on the training faces (aug_test halves)": (f2, t2, cats, RHO),
               "categories best recognised on the fit rows": (fit, test, best, RHO)}
    twins = sorted({int(c) for g in GD.task(ctx.quick).homoglyph_groups(0.75) for c in g if c < K})
    if len(twins) >= 2:
        pick = np.random.default_rng([ctx.seed, 9]).choice(twins, min(len(cats), len(twins)), replace=False)
        choices["categories with a homoglyph twin (homoglyph_groups(0.75))"] = (fit, test, [int(c) for c in pick], RHO)
    out = {}
    # Each image's logits share an offset (every glyph logit is negative, mean ≈ −37) that softmax ignores and the
    # second moment does not: the row below removes it (same predictions), as a review asked.
    centred = S - S.mean(axis=1, keepdims=True)
    for k, (a, b, c, rho) in choices.items():
        out[k] = _sens_row(judge_table1(_rows_at(S, a, b, y, c, rho, offset)))
    out["each image's mean logit removed (softmax-invariant: same predictions)"] = _sens_row(
        judge_table1(_rows_at(centred, fit, test, y, cats, RHO, offset)))
    return out


def _sens_row(t: dict) -> dict:
    row = {"miss": round(t["miss"], 3), **{m: round(v, 3) for m, v in t["medians"].items()
                                            if m in ("spread_rel_err", "rel_err", "support", "acc", "ori_acc",
                                                     "pos_acc", "ori_pos_acc")}}
    if t.get("undecided"):  # the judge's own caveat travels with the row (e.g. an original accuracy of 0)
        row["undecided"] = t["undecided"]
    return row


def between_finding(gl: dict) -> str:
    from verify.checks._shared import nd_scan as S_

    med = gl["medians"]
    return (f"Between two independently trained glyph networks ({gl['inputs']}): {S_.summary(gl['existential'])}. "
            f"Typical reading: median error {med['spread_rel_err']:.3f} of the logit's spread (|f|-relative "
            f"{med['rel_err']:.3f}), support {med['support']:.0f}, acc {med['acc']:.3f} (original {med['ori_acc']:.3f}), "
            f"positive acc {med['pos_acc']:.3f} (original {med['ori_pos_acc']:.3f}).")


def between_details(gl: dict) -> dict:
    from verify.checks._shared import nd_scan as S_

    return {"glyph verdict (Sec 2.4 / Fig 2e–f, there exists, on two trained glyph networks)":
            f"{'holds' if gl['holds'] else 'does not hold'}: {gl['inputs']}",
            "glyph: existential scan": S_.details(gl["existential"]),
            "glyph, typical reading: medians of Table 1's columns": gl["medians"],
            "glyph, typical reading: miss parts (tolerance units)": gl["miss parts"],
            "glyph, typical reading: per category": {r["name"]: row_view(r) for r in gl["rows"]},
            "glyph: precondition (held-out accuracy)": gl["precondition"],
            "glyph, typical reading: sensitivity (λ moved; median columns, miss in tolerance units)":
                gl.get("sensitivity"),
            "glyph, existential reading: sensitivity (each open choice moved to the paper's side)":
                gl["existential"].get("alternatives")}


def row_view(r: dict) -> dict:
    keys = ("dependency", "abs_err", "spread_rel_err", "rel_err", "acc", "ori_acc", "pos_acc", "ori_pos_acc", "n_pos",
            "support",
            "n_fit", "n_test", "held-out photograph")
    return {k: (round(float(r[k]), 4) if isinstance(r.get(k), (float, np.floating)) else r.get(k))
            for k in keys if k in r}
