"""FG Sec 1 / Fig 2 / App A on glyph CNNs trained here: coarse accuracy against pretraining label granularity.

FG's claim (Sec 1, Fig 2; App A): pretraining on finer labels (more classes) gives a backbone on which the coarse
target task is learned to a higher accuracy, and (Sec 1.2, Thm 4.x) the gain is on the *hard* samples — those whose
coarse class's common feature is weak or absent.

Regime (sims.glyphs.granularity; fixed before any verdict, docs/glyph_checks.md): the coarse task is the script of
the 105 pretraining classes (7 scripts × 15); LeNets pretrained on the same images at three granularities —
script (7 labels, the baseline: pretraining on the target labels), base letter, code point (105) — then a linear
probe for the script on the frozen features (FG App A.2's linear probing), tested on held-out aug_test images
(FG assumes no distribution shift; face_test reported). Hard samples: images of the pretraining classes whose
pixel appearance (mean canonical render over the training faces) is closer to another script's common appearance
(mean of its members) than to its own script's (without itself). Every network must be trained (aug_test accuracy
at its own level ≥ MIN_ACC), else the run is undecided.

Judged per seed (three seeds), on aug_test, from paired per-image correctness:

* grows: acc(fine) − acc(script) ≥ 2·SE (paired SE clustered by fine class: the 16 held-out images of a class
  share its drawing and its hardness, so the per-image SE undercounts the variance), and no step down the granularity ladder
  (script → base → fine) falls by more than 2·SE — with our classes base ≈ fine (104 base letters among 105 code
  points), so the middle step is expected flat;
* largest on hard samples: gain_hard > gain_easy (gain = acc(fine) − acc(script) on those images), the point
  estimate (its z is reported). Miss of that part: 1 − d/(|d| + SE_d), ≤ 1 exactly when d ≥ 0.

Refuted only when the reverse is shown: acc(fine) − acc(script) ≤ −2·SE, or gain_hard − gain_easy ≤ −2·SE (class-
clustered SEs); a seed that neither holds nor shows the reverse is undecided (reported). An independent review
found the per-image SE too small and the earlier rule (any miss refutes) too quick; this reading replaced it.
"""

from __future__ import annotations

import math

import numpy as np

from sims.glyphs import glyph_task
from sims.glyphs import granularity as gr
from sims.glyphs import pretrain as pt
from sims.glyphs.probe import linear_probe
from theory.stats import mean_se
from verify.checks import _glyph_preps as gp
from verify.registry import Result, check

Z = 2.0  # standard errors for "grows" and "no step down"
SPLIT = "aug_test"


def paired(a, b, groups=None) -> tuple:
    """(mean(b − a), SE) for per-image correctness arrays a, b (same images); ``groups`` (one label per image, e.g.
    its fine class): the cluster-robust SE of :func:`theory.stats.mean_se` (images of one class share its drawing
    and, for the hard set, its hardness: not independent); None: per image."""
    return mean_se(np.asarray(b, float) - np.asarray(a, float), groups)


def judge_granularity(correct: dict, hard: np.ndarray, groups=None) -> dict:
    """correct: {level: bool per image} in gr.LEVELS order (coarse → fine); hard: bool per image; groups: the
    images' clusters for the SEs (their fine classes; None: per image).

    ``holds``: grows (gain ≥ Z·SE), no step down by more than Z·SE, and gain_hard > gain_easy. ``refuted``: the
    claim's reverse is shown — the gain ≤ −Z·SE (finer labels significantly worse), or gain_hard − gain_easy ≤
    −Z·SE (the gain significantly larger on the easy samples). Neither: the data cannot tell (undecided)."""
    lv = gr.LEVELS
    acc = {k: {"all": float(np.mean(c)), "easy": float(np.mean(c[~hard])) if (~hard).any() else math.nan,
               "hard": float(np.mean(c[hard])) if hard.any() else math.nan} for k, c in correct.items()}
    grp = None if groups is None else np.asarray(groups)
    total, se_total = paired(correct[lv[0]], correct[lv[-1]], grp)
    steps = {f"{a}→{b}": paired(correct[a], correct[b], grp) for a, b in zip(lv, lv[1:])}
    miss_grow = Z * se_total / total if total > 0 else math.inf
    miss_steps = max(max(0.0, -d) / (Z * se) if se > 0 else (0.0 if d >= 0 else math.inf) for d, se in steps.values())
    sub = (lambda m: None if grp is None else grp[m])
    gh, seh = paired(correct[lv[0]][hard], correct[lv[-1]][hard], sub(hard)) if hard.any() else (math.nan, math.inf)
    ge, see = paired(correct[lv[0]][~hard], correct[lv[-1]][~hard], sub(~hard)) if (~hard).any() else (math.nan, math.inf)
    d = gh - ge
    se_d = math.sqrt(seh ** 2 + see ** 2)
    miss_hard = 1 - d / (abs(d) + se_d) if np.isfinite(d) and se_d > 0 else (0.0 if d > 0 else math.inf)
    miss = max(miss_grow, miss_steps, miss_hard)
    refuted = bool(total <= -Z * se_total or (np.isfinite(d) and d <= -Z * se_d))
    return {"acc": acc, "total": (total, se_total), "steps": steps, "gain_hard": (gh, seh), "gain_easy": (ge, see),
            "hard_minus_easy": (d, se_d), "miss": {"grows": miss_grow, "no step down": miss_steps,
                                                    "largest on hard": miss_hard},
            "max_miss": float(miss), "holds": bool(miss <= 1), "refuted": refuted and not miss <= 1,
            "se": "clustered by fine class" if grp is not None else "per image"}


PROBE_SLACK = 0.10  # the script probe may fall this far below the script network's own head, no further


def probe_sane(correct: dict, own: dict, truth_is_planted: bool = False) -> None:
    """The linear probe read against the network's own head where both answer the same question: on the script
    network's features the script probe must score within PROBE_SLACK of that network's own (linear) script head,
    else the probe is broken (e.g. trained on misaligned labels: a review's planted slip gave 0.03 against 0.87 and
    went unseen). Raises ValueError (the check fails). Skipped for the negative control (truth permuted on purpose)."""
    if truth_is_planted:
        return
    lv = gr.LEVELS[0]
    acc = float(np.mean(correct[lv]))
    if acc < own[lv] - PROBE_SLACK:
        raise ValueError(f"the {lv} probe scores {acc:.3f} on the {lv} network's features, whose own head scores "
                         f"{own[lv]:.3f} on the same images: the linear probe is broken")


def _hard_per_image(h: dict, fine) -> np.ndarray:
    return h["hard"][np.searchsorted(h["classes"], fine)]


def constructed_correct(rng, quick: bool) -> tuple:
    """Positive control: FG's picture built into features, through the same linear_probe and judge. Script-level
    'backbone': a one-hot of the script — for the hard classes, of a wrong script (the common feature absent);
    base/fine level: a one-hot of the code point (fine features carry every grouping). Plus Gaussian noise of norm ≈ 0.3."""
    h = gr.hard_classes(quick)
    P, coarse, hard_c = h["classes"], h["coarse"], h["hard"]
    K, S = len(P), int(coarse.max()) + 1
    wrong = (coarse + 1 + rng.integers(0, S - 1, size=K)) % S
    code = np.where(hard_c, wrong, coarse)
    n = 8
    ytr, yte = np.repeat(np.arange(K), n), np.repeat(np.arange(K), n)
    feats = {"script": lambda y: np.eye(S)[code[y]], "base": lambda y: np.eye(K)[y], "fine": lambda y: np.eye(K)[y]}
    correct = {}
    for lv in gr.LEVELS:
        d = feats[lv](ytr[:1]).shape[1]
        Ftr = feats[lv](ytr) + 0.3 / math.sqrt(d) * rng.normal(size=(len(ytr), d))  # noise of norm ≈ 0.3
        Fte = feats[lv](yte) + 0.3 / math.sqrt(d) * rng.normal(size=(len(yte), d))
        correct[lv] = linear_probe(Ftr, coarse[ytr], Fte, coarse[yte])["correct"]
    return correct, hard_c[yte], yte


def sensitivity(quick: bool, device, coarse_of, h) -> dict:
    """Rows of gr.SENSITIVITY: script- and code-point-pretrained accuracies of the script probe and the gain."""
    rows = {}
    for name, arch, epochs, why in gr.SENSITIVITY[bool(quick)]:
        runs = gr.granularity_runs(quick, 0, device, arch, epochs, levels=(gr.LEVELS[0], gr.LEVELS[-1]))
        fine = runs[gr.LEVELS[0]][f"{SPLIT}/fine"]
        hard = _hard_per_image(h, fine)
        row = {}
        for lv, r in runs.items():
            c = np.asarray(r[f"{SPLIT}/pred"]) == coarse_of[fine]
            row[lv] = [_f(c.mean()), _f(c[hard].mean()), _f(c[~hard].mean())]
            row[f"{lv}: own accuracy"] = _f(r[f"{SPLIT}/own_accuracy"])
        row["gain all, hard, easy"] = [_f(a - b) for a, b in zip(row[gr.LEVELS[-1]], row[gr.LEVELS[0]])]
        row["moves toward the paper"] = why
        rows[name] = row
    return rows


def _f(x):
    return float(f"{x:.4g}")


@check(
    "fg.label_granularity", equation="Sec 1, Fig 2, App A (A.2 linear probing)", kind="sim", seeds=3,
    tolerance=f"on aug_test, per seed: acc(code point) − acc(script) ≥ {Z:g}·SE (paired), no step script → base → "
              f"code point down by more than {Z:g}·SE, and gain_hard > gain_easy; every network trained (aug_test "
              f"accuracy ≥ {pt.MIN_ACC:g} at its own level)",
    tolerance_reason="'grows' must be told from the per-image sampling noise of the held-out set (paired SE over the "
                     "same images); 'the gain largest on hard samples' is a comparison of two gains, judged on its "
                     "point estimate with its z reported (the hard set is class-level, so its SE undercounts class "
                     "variance); three seeds, a mixed verdict is reported; fixed before the runs",
    negative_control="the probe's predictions scored against the script labels of a shuffled image order (a label "
                     "array misaligned with the features): no granularity can then beat chance",
    positive_control="FG's picture built into features (script-level: a one-hot of the script, of a wrong script for "
                     "the hard classes; base/code-point level: a one-hot of the code point; plus noise), through the "
                     "same linear probe and judge",
    figures=("fg.glyph_granularity",), prepare=gp.granularity(3), cost=10,
)
def label_granularity(ctx, planted, positive=False):
    """FG Sec 1 / Fig 2 on glyph LeNets pretrained at script, base-letter and code-point labels (module doc)."""
    if positive:
        correct, hard, classes = constructed_correct(ctx.rng("positive"), ctx.quick)
        v = judge_granularity(correct, hard, groups=classes)
        return Result(measured=f"gain {v['total'][0]:+.3f}", expected="grows, largest on hard", holds=v["holds"],
                      miss=v["max_miss"], details={"miss": v["miss"]})
    runs = gr.granularity_runs(ctx.quick, ctx.seed, ctx.device)
    h = gr.hard_classes(ctx.quick)
    coarse_of = np.asarray(glyph_task(pt.task_config(ctx.quick)).labels(gr.COARSE))
    correct, own = {}, {}
    fine = runs[gr.LEVELS[0]][f"{SPLIT}/fine"]
    truth = coarse_of[fine]
    if planted:
        truth = truth[np.random.default_rng(ctx.seed).permutation(len(truth))]
    for lv, r in runs.items():
        if not np.array_equal(r[f"{SPLIT}/fine"], fine):
            raise ValueError("fg.label_granularity: the levels were scored on different images")
        correct[lv] = np.asarray(r[f"{SPLIT}/pred"]) == truth
        own[lv] = float(r[f"{SPLIT}/own_accuracy"])
    probe_sane(correct, own, truth_is_planted=planted)
    hard = _hard_per_image(h, fine)
    v = judge_granularity(correct, hard, groups=fine)  # SEs clustered by fine class (16 images of one drawing each)
    trained = min(own.values()) >= pt.MIN_ACC
    holds = v["holds"] and trained
    miss = v["max_miss"] if trained else max(v["max_miss"], pt.MIN_ACC / max(min(own.values()), 1e-9), 1 + 1e-9)
    face = {lv: float(np.mean(np.asarray(r["face_test/pred"]) == coarse_of[r["face_test/fine"]])) for lv, r in runs.items()}
    face_hard = _hard_per_image(h, runs[gr.LEVELS[0]]["face_test/fine"])
    details = {
        "coarse accuracy on aug_test (all / easy / hard images)": {lv: {k: _f(x) for k, x in a.items()}
                                                                  for lv, a in v["acc"].items()},
        "SEs": f"{v['se']} ({len(np.unique(fine))} classes, {len(fine)} images)",
        "gain code point − script (mean, SE)": [_f(x) for x in v["total"]],
        "steps (mean, SE)": {k: [_f(x) for x in s] for k, s in v["steps"].items()},
        "gain on hard / on easy images (mean, SE)": {"hard": [_f(x) for x in v["gain_hard"]],
                                                     "easy": [_f(x) for x in v["gain_easy"]]},
        "gain_hard − gain_easy (mean, SE, z)": [_f(v["hard_minus_easy"][0]), _f(v["hard_minus_easy"][1]),
                                               _f(v["hard_minus_easy"][0] / v["hard_minus_easy"][1])],
        "misses (tolerance units)": {k: _f(x) for k, x in v["miss"].items()},
        "face_test coarse accuracy (reported; all / hard)": {
            lv: [_f(x), _f(float(np.mean((np.asarray(r["face_test/pred"]) == coarse_of[r["face_test/fine"]])[face_hard])))]
            for (lv, r), x in zip(runs.items(), face.values())},
        "networks' own aug_test accuracy at their level (precondition)": {k: _f(x) for k, x in own.items()},
        "labels per level": {lv: int(r["n_labels"]) for lv, r in runs.items()},
        "hard classes": f"{int(h['hard'].sum())} of {len(h['classes'])}; images: {int(hard.sum())} hard, "
                        f"{int((~hard).sum())} easy",
        "training seconds (measured when trained)": {lv: _f(r["seconds"]) for lv, r in runs.items()},
    }
    sens = None
    if not planted and trained and not holds:  # before a refutation: the choices FG leaves open, moved its way
        sens = sensitivity(ctx.quick, ctx.device, coarse_of, h)
        details["sensitivity (seed 0, script vs code-point pretraining, aug_test: acc all, hard, easy)"] = sens
    undecided = finding = None
    if not planted:
        if not trained:
            undecided = (f"not every network is trained: lowest own aug_test accuracy {min(own.values()):.3f} < "
                         f"{pt.MIN_ACC:g}")
        elif not holds:
            bad = [k for k, x in v["miss"].items() if x > 1]
            finding = (f"Seed {ctx.seed}: {', '.join(bad)} does not hold: script-probe accuracy "
                       + ", ".join(f"{lv} {a['all']:.3f} (hard {a['hard']:.3f}, easy {a['easy']:.3f})"
                                   for lv, a in v["acc"].items())
                       + f"; gain hard {v['gain_hard'][0]:+.3f} vs easy {v['gain_easy'][0]:+.3f}. Sensitivity "
                       "(code point − script gain, all/hard/easy): "
                       + "; ".join(f"{k}: {row['gain all, hard, easy']}" for k, row in (sens or {}).items()) + ".")
            if not v["refuted"]:
                undecided = (f"neither shown nor reversed: gain code point − script {v['total'][0]:+.3f} (SE "
                             f"{v['total'][1]:.3f}), gain_hard − gain_easy {v['hard_minus_easy'][0]:+.3f} (SE "
                             f"{v['hard_minus_easy'][1]:.3f}), class-clustered SEs: a refutation needs one of them "
                             f"≤ −{Z:g} SE")
            elif sens and any(row["gain all, hard, easy"][0] > 0 and row["gain all, hard, easy"][1] >
                              row["gain all, hard, easy"][2] for row in sens.values()):
                undecided = "the finding goes away in a regime moved toward the paper's (details: sensitivity)"
    ladder = " → ".join(f"{v['acc'][lv]['all']:.3f}" for lv in gr.LEVELS)
    measured = (f"acc {ladder}; gain hard "
                f"{v['gain_hard'][0]:+.3f} vs easy {v['gain_easy'][0]:+.3f}")
    return Result(measured=measured, expected="grows (≥ 2 SE), gain_hard > gain_easy", holds=bool(holds),
                  miss=float(miss), details=details, finding=finding, undecided=undecided)
