"""VC Sec 6.2 (train and test collapse over training) and Sec 6.3 (VCI and transfer) on glyph CNNs trained here.

Regime (the pretraining networks of the registry sims.glyphs.networks; fixed before any verdict,
docs/glyph_checks.md): LeNet on 105 glyph classes (15 per script, homoglyphs excluded) of the 1000-class glyph
task, 24 training images per class, 8 epochs, AdamW with warm-up and cosine decay; checkpoints at epochs 0, 1, 2,
4, 8. A network whose held-out (aug_test) accuracy at its
own label level is below MIN_ACC = 0.5 (chance ≈ 0.01) is not trained: its run is ``undecided`` (reported), never a
verdict. Quick: a 200-class task, 3 classes per script, 8 images, 3 epochs — not trained, so quick reports.

**vc.training_collapse** (VC Sec 6.2: "Fuzziness and VCI show a decreasing trend"; Fig 6: "test collapse also
happens for VCI"). Judged over the horizons epochs 1, 2, 4, 8 (epoch 0, the initialisation, is drawn, not judged):
VCI *decreases* on the training images and on held-out aug_test images (the test set of the training
distribution); fuzziness decreases on the training images, read at the checkpoints where Σ_B resolves the paper's
rank min(p, K − 1) (VC Sec 6.1; elsewhere VC's quantity is undefined). "Decreases" = Spearman's ρ(epoch, metric)
≤ −0.8 (at most one adjacent inversion) and a relative drop ≥ 5 %. Fuzziness's decrease must also be the labels':
raw fuzziness falls under labellings the network never learned too (the features' geometry changes over training),
so its drop must reach the 95th percentile of the drops of the same features' fuzziness under 20 random labellings
(``fuzziness_null``, at the same checkpoints) — a permutation test at 5 %. Held-out fuzziness, face_test and the
squared-distance and cosine-similarity curves ("need not", Sec 4.1) are reported. Three seeds.

**vc.transfer_correlation** (VC Sec 6.3, Fig 7, Eq 6, App C). τ group: τ ∈ {0.1, 0.2, 0.4, 0.6, 0.8, 1} at λ = 0;
λ group: λ ∈ {0, 2.5, 3.75, 5, 7.5, 10} at τ = 1 (the paper's grids; its λ group's unregularised end is its τ = 1
run). Metrics on the training images of the pretraining classes (the paper: on a train subset); MLOG by
:func:`theory.collapse.mlog` from the probe accuracies on four downstream tasks of 20 classes never used in
pretraining and p_pretrain (aug_test accuracy). Statistic: Pearson's r, the paper's (Fig 7's legends), within each
group of six networks. VCI "correlates positively" when r ≥ r_crit = 0.729 in *both* groups (the one-sided 5 % critical
value of r for n = 6: a correlation that six points can tell from none); r ≤ −r_crit in a group refutes it; anything
between is undecided (six points cannot tell), reported. The older metrics' sign change is reported, not judged (the
sign of an r that six points cannot tell from 0 is noise). One seed: a replication is already 11 trainings; three
would exceed the budget.
"""
from __future__ import annotations

import math

import numpy as np

from sims.glyphs import networks as nw
from sims.glyphs import pretrain as pt
from sims.glyphs import vc_experiments as ve
from theory import collapse as vc
from verify.checks._shared import glyph_preps as gp
from verify.checks.vc._eq6 import mlog_checked
from verify.checks._shared.library_pins import probe_bias_pinned, probe_pinned
from verify.checks.vc._readout import p_pretrain_cross_check
from verify.checks.vc._settings import PAPER_COS_RATIO, collapse_setting, intervention, vc_setting  # noqa: F401
from verify.registry import Result, check

RHO_MAX = -0.8   # Spearman ρ(epoch, metric) at most this: a decreasing trend over the horizons
DROP_MIN = 0.05  # relative drop from the first to the last horizon at least this
JUDGED_SPLITS = ("train", "aug_test")
ALPHA = 0.05
# VC App C Table 2 (the paper's own numbers): Fuzziness, Sqr Dist, Cos Sim, VCI, MLOG for τ = 0.1 … 1 and λ = 2.5 … 10
PAPER_TAU = np.array([[15.93, 2.829, 0.4634, 0.796, 0.3250], [15.64, 2.534, 0.4856, 0.7849, 0.2704],
                      [13.45, 2.141, 0.512, 0.7552, 0.2029], [12.62, 1.923, 0.5371, 0.7406, 0.1711],
                      [11.83, 1.742, 0.5589, 0.728, 0.1343], [11.46, 1.625, 0.5767, 0.7201, 0.1161]])
PAPER_LAMBDA = np.array([[13.15, 2.78, 0.4097, 0.7216, 0.0440], [14.31, 3.803, 0.3556, 0.719, -0.0063],
                         [14.51, 4.783, 0.3551, 0.7099, -0.0507], [15.22, 7.287, 0.2794, 0.6936, -0.1539],
                         [13.92, 9.964, 0.172, 0.6652, -0.2375]])


def spearman(x, y) -> float:
    """Spearman's ρ (no ties expected: epochs are distinct; a tied metric gets average ranks)."""
    from scipy import stats

    return float(stats.spearmanr(x, y)[0])


def relative_drop(c) -> float:
    """(first − last) / |first| of a curve over its horizons (−inf when it starts at 0)."""
    return (c[0] - c[-1]) / abs(c[0]) if c[0] != 0 else -math.inf


def trend(curve) -> dict:
    """{'rho', 'drop', 'holds', 'miss'} of one metric curve over the judged horizons (module doc)."""
    c = np.asarray(curve, float)
    if len(c) > 1 and np.all(c == c[0]):  # ρ undefined: a curve read from one network at every horizon, not a trend
        raise ValueError(f"the metric curve is constant over its {len(c)} horizons ({c[0]!r}): Spearman ρ is undefined "
                         "(were the checkpoints read as one network?)")
    rho = spearman(np.arange(len(c)), c)
    drop = relative_drop(c)
    rho = -1.0 if not np.isfinite(rho) else round(rho, 12)  # ρ of 4 points is a multiple of 0.2: no rounding slip
    miss = max((1 + rho) / (1 + RHO_MAX), DROP_MIN / drop if drop > 0 else math.inf)
    return {"rho": rho, "drop": drop, "holds": bool(miss <= 1), "miss": float(miss)}


JUDGED_ITEMS = (("vci", "train"), ("vci", "aug_test"), ("fuzziness", "train"))  # VC Sec 6.2; Fig 6: VCI's test collapse


NULL_QUANTILE = 0.95  # fuzziness's drop must reach this quantile of the never-learned labellings' drops


def label_specific(drop: float, null_curves) -> dict:
    """A drop against the drops of ``null_curves`` (labellings, horizons): its miss is the null's NULL_QUANTILE
    quantile over the drop (≤ 1: the drop is at least the quantile; 0 when the quantile is ≤ 0 < drop)."""
    nd = np.array([relative_drop(c) for c in np.asarray(null_curves, float)])
    q = float(np.quantile(nd, NULL_QUANTILE))
    miss = math.inf if not drop > 0 else (0.0 if q <= 0 else q / drop)
    return {"null_quantile": q, "miss": miss}


def judge_collapse(curves: dict, judged_rows, readable=None, null=None) -> dict:
    """Trends of JUDGED_ITEMS; ``curves[split]`` is (horizons, 4) in ve.METRICS order, ``judged_rows`` the horizons.
    ``readable[split]`` (bool per checkpoint): where fuzziness is read at the paper's rank min(p, K − 1) (VC Sec
    6.1); fuzziness is judged over those horizons only, and not at all (None) when fewer than 3 remain.
    ``null[split]`` (labellings, horizons): fuzziness under labellings never learned; fuzziness's drop must also
    reach their NULL_QUANTILE drop (:func:`label_specific`, module doc)."""
    out = {}
    idx = np.arange(len(next(iter(curves.values()))))[judged_rows]
    for m, sp in JUDGED_ITEMS:
        rows = idx
        if m == "fuzziness" and readable is not None:
            rows = idx[np.asarray(readable[sp], bool)[idx]]
        if len(rows) < 3:
            out[f"{m} on {sp}"] = None
            continue
        t = trend(np.asarray(curves[sp], float)[rows, ve.METRICS.index(m)])
        if m == "fuzziness" and null is not None:
            spec = label_specific(t["drop"], np.asarray(null[sp], float)[:, rows])
            t = {**t, "null_quantile": spec["null_quantile"], "miss": max(t["miss"], spec["miss"])}
            t["holds"] = bool(t["miss"] <= 1)
        out[f"{m} on {sp}"] = t
    return out


def constructed_curves(rng, shrink=(1.0, 0.7, 0.5, 0.35)) -> tuple[dict, dict]:
    """Positive control: Gaussian class clusters whose within-class spread shrinks over four 'checkpoints' (classes
    fixed), so VCI and fuzziness fall by construction; metrics through ve.collapse_metrics (theory.collapse).
    Returns (curves, null): the null is the training split's fuzziness under ve.NULL_LABELLINGS random labellings."""
    K, n, p = 12, 30, 16
    y = np.repeat(np.arange(K), n)
    labellings = [rng.permutation(y) for _ in range(ve.NULL_LABELLINGS)]
    mu = 2.0 * rng.normal(size=(K, p))
    z = rng.normal(size=(K * n, p))
    out, null = {}, {}
    for sp in JUDGED_SPLITS:
        rows, nf = [], []
        for s in shrink:
            H = mu[y] + s * z
            m = ve.collapse_metrics(H, y)
            rows.append([m[k] for k in ve.METRICS])
            if sp == "train":
                nf.append([ve.fuzziness(vc.ClassStats.from_features(H, yn)) for yn in labellings])
        out[sp] = np.asarray(rows)
        if nf:
            null[sp] = np.asarray(nf).T
        z = rng.normal(size=(K * n, p))
    return out, null


def _fmt(x):
    return float(f"{x:.4g}")


def collapse_sensitivity(quick: bool, device) -> dict:
    """Judged trends (ρ, drop, holds) of seed 0's τ = 1, λ = 0 network in each regime of ve.SENSITIVITY, over its
    checkpoints after the initialisation (fuzziness where the paper's rank is resolved)."""
    rows = {}
    for name, arch, epochs, _, _ in ve.SENSITIVITY[bool(quick)]:
        r = ve.collapse_curves(quick, 0, device, arch, epochs)
        v = judge_collapse({sp: r[f"{sp}/metrics"] for sp in ve.SPLITS}, slice(1, None), _readable(r), _null(r))
        rows[name] = {k: ([_fmt(x["rho"]), _fmt(x["drop"]), x["holds"]] if x else "not readable")
                      for k, x in v.items()}
        rows[name]["final aug_test accuracy"] = _fmt(r["aug_test/accuracy"][-1])
    return rows


def _readable(r) -> dict:
    """Per split: the checkpoints where fuzziness was read at the paper's rank (no fallback) — with the true labels
    and, where the null was computed, under every never-learned labelling too (one rank on both sides)."""
    out = {sp: ~np.asarray(r[f"{sp}/fuzziness_fallback"], bool) for sp in ve.SPLITS}
    for sp in ve.SPLITS:
        if f"{sp}/fuzziness_null_fallback" in r:
            out[sp] = out[sp] & ~np.asarray(r[f"{sp}/fuzziness_null_fallback"], bool).any(axis=0)
    return out


def _null(r) -> dict:
    """Per split with one: fuzziness under the never-learned labellings, (labellings, checkpoints)."""
    return {sp: np.asarray(r[f"{sp}/fuzziness_null"]) for sp in ve.SPLITS if f"{sp}/fuzziness_null" in r}


@check(
    "vc.training_collapse", equation="Sec 6.2, Fig 3–6, App B Fig 8", kind="sim", seeds=3,
    tolerance=f"over the checkpoints after initialisation (epochs 1, 2, 4, 8): VCI on train and on aug_test, and "
              f"fuzziness on train at the checkpoints where its rank min(p, K − 1) is resolved (≥ 3 of them): Spearman "
              f"ρ ≤ {RHO_MAX:g} and relative drop ≥ {DROP_MIN:.0%}; fuzziness's drop also ≥ the {NULL_QUANTILE:.0%} "
              f"quantile of its drops under {ve.NULL_LABELLINGS} random labellings; every seed's network trained "
              f"(aug_test accuracy ≥ {nw.MIN_ACC:g})",
    tolerance_reason="VC Sec 6.2: 'Fuzziness and VCI show a decreasing trend' (training features) and Fig 6 'test "
                     "collapse also happens for VCI' (held-out features: VCI only). Fuzziness is VC's Tr[Σ_B†Σ_W] at "
                     "rank min(p, K − 1) (Sec 6.1): at a checkpoint where Σ_B does not resolve that rank (dead ReLU units "
                     "of an untrained net) the paper's quantity is undefined, so it is not read there. A 'decreasing "
                     "trend' off noisy curves: over four horizons ρ ≤ −0.8 allows one adjacent inversion, and a 5 % "
                     "drop separates a trend from a flat curve (a misaligned label array moves VCI by a few %); fixed "
                     "before the runs. Raw fuzziness also falls under labellings the network never learned (the "
                     "features' geometry changes: a raw fuzziness item passed a permuted-label control), so its "
                     "decrease must also be the labels': a permutation test at 5 % (its drop against the drops under "
                     "20 random labellings of the same features, at the same checkpoints). face_test, held-out "
                     "fuzziness, squared distance and cosine similarity reported. VC states the trend 'across these "
                     "settings' (ResNet18 / CIFAR-10, ResNet50 and DeiT / ImageNet-1K; collapse_setting, measured): "
                     "on the glyph LeNet it is a finding in that regime either way, as vc.transfer_correlation's",
    negative_control="the same network's checkpoints read newest first (a checkpoint list sorted the wrong way: the "
                     "metrics, their readable flags and the null's curves in reverse epoch order): no judged item may "
                     "show the decrease (the control fails only when every item fails). The labellings a network never "
                     "learned are the fuzziness item's null itself, so they cannot be its control: the VCI of a "
                     "misaligned label array is a reported line",
    positive_control="Gaussian class clusters whose within-class spread shrinks over four checkpoints (VCI and "
                     "fuzziness fall by construction), metrics through the same theory.collapse calls and judge",
    figures=("vc.glyph_collapse_curves",), prepare=gp.collapse(3), cost=5,
    reads="the VC/FG glyph pretraining network of each seed (sims/glyphs/networks.py)",
)
def training_collapse(ctx, planted, positive=False):
    """VC Sec 6.2 on one seed's τ = 1, λ = 0 glyph LeNet (module doc)."""
    if positive:
        curves, null = constructed_curves(ctx.rng("positive"))
        rows, readable = slice(None), None
        acc_ok, acc = True, None
    else:
        r = ve.collapse_curves(ctx.quick, ctx.seed, ctx.device)
        curves = {sp: r[f"{sp}/metrics"] for sp in ve.SPLITS}
        null = _null(r)  # labellings never learned (module doc)
        rows = slice(1, None)  # horizons: every checkpoint after the initialisation
        readable = _readable(r)
        if planted:  # the checkpoints newest first
            curves = {sp: np.asarray(c)[::-1] for sp, c in curves.items()}
            readable = {sp: np.asarray(v)[::-1] for sp, v in readable.items()}
            null = {sp: np.asarray(v)[:, ::-1] for sp, v in null.items()}
        acc = float(r["aug_test/accuracy"][-1])
        acc_ok = acc >= nw.MIN_ACC
    verdicts = judge_collapse(curves, rows, readable, null)
    unreadable = [k for k, v in verdicts.items() if v is None]
    judged = {k: v for k, v in verdicts.items() if v is not None}
    # the claim needs every item; the negative control must fail every item (it "holds" when any item does)
    miss = (min if planted else max)(v["miss"] for v in judged.values())
    holds = bool(miss <= 1) and acc_ok and not unreadable
    if not acc_ok:
        miss = max(miss, nw.MIN_ACC / max(acc, 1e-9))
    if unreadable:
        miss = max(miss, 1.0 + 1e-9)
    measured = {k: f"ρ = {v['rho']:+.2f}, drop {v['drop']:+.1%}" + (f" (null 95 %: {v['null_quantile']:+.1%})"
                                                                     if "null_quantile" in v else "")
                for k, v in judged.items()}
    details = {"judged (ρ, relative drop; holds)": {k: ([_fmt(v["rho"]), _fmt(v["drop"]), v["holds"]] if v else
                                                        "fewer than 3 checkpoints with the paper's rank")
                                                    for k, v in verdicts.items()}}
    undecided = finding = None
    if not positive:
        ep = [int(e) for e in r["epochs"]]
        details["epochs (checkpoints; 0 = initialisation, drawn not judged)"] = ep
        details["checkpoints where fuzziness has the paper's rank"] = {
            sp: [e for e, ok in zip(ep, readable[sp]) if ok] for sp in ve.SPLITS}
        details[f"train: fuzziness under {ve.NULL_LABELLINGS} never-learned labellings, at each checkpoint "
                "(min, median, max)"] = [[_fmt(np.min(c)), _fmt(np.median(c)), _fmt(np.max(c))]
                                         for c in np.asarray(null["train"]).T]
        for sp in ve.SPLITS:
            details[f"{sp}: accuracy at each checkpoint"] = [_fmt(a) for a in r[f"{sp}/accuracy"]]
            for j, m in enumerate(ve.METRICS):
                details[f"{sp}: {m} at each checkpoint"] = [_fmt(v) for v in curves[sp][:, j]]
        rep = {}
        for sp in ve.SPLITS:
            for m in ve.METRICS:
                t = trend(np.asarray(curves[sp])[rows, ve.METRICS.index(m)])
                rep[f"{m} on {sp}"] = f"ρ = {t['rho']:+.2f}, drop {t['drop']:+.1%} ({'decreases' if t['holds'] else 'no'})"
        details["every metric and split, every horizon (squared distance and cosine similarity 'need not'; held-out "
                "fuzziness and face_test reported)"] = rep
        details["training"] = f"{r['seconds']:.1f} s, {r['images_per_s']:.0f} images/s (measured when trained)"
        mis = {}
        for sp in ve.SPLITS:
            t = trend(np.asarray(r[f"{sp}/permuted"])[rows, ve.METRICS.index("vci")])
            mis[f"vci on {sp}"] = f"ρ = {t['rho']:+.2f}, drop {t['drop']:+.1%} ({'decreases' if t['holds'] else 'no'})"
        details["VCI with the fine labels permuted over the samples (a misaligned label array; reported)"] = mis
        if not acc_ok and not planted:
            undecided = (f"the network is not trained: aug_test accuracy {acc:.3f} < {nw.MIN_ACC:g} at the last "
                         "checkpoint (the regime's precondition)")
        elif unreadable and not planted:
            undecided = (f"{', '.join(unreadable)}: fewer than 3 checkpoints where Σ_B resolves the paper's rank "
                         "min(p, K − 1): VC's fuzziness is undefined there")
        elif not holds and not planted:
            bad = [k for k, v in judged.items() if not v["holds"]]
            sens = collapse_sensitivity(ctx.quick, ctx.device)
            details["sensitivity (regime moved toward the paper: ρ, drop, decreases?)"] = sens
            text = "; ".join(f"{name}: " + ", ".join(f"{k} {'yes' if isinstance(row.get(k), list) and row[k][2] else 'no'}"
                                                     for k in bad) for name, row in sens.items())
            away = [name for name, row in sens.items()
                    if all(isinstance(row.get(k), list) and row[k][2] for k in judged)]
            if away:
                undecided = (f"{', '.join(bad)} do(es) not decrease on seed {ctx.seed}, but the judged curves all "
                             f"decrease with {'; '.join(away)} (a choice the paper leaves open): the finding is about "
                             f"that choice. Sensitivity: {text}")
            else:
                finding = (f"Not every judged curve decreases on seed {ctx.seed}: {', '.join(bad)} "
                           f"({'; '.join(measured[k] for k in bad)}). Sensitivity: {text}.")
    return Result(measured=measured, expected=f"ρ ≤ {RHO_MAX:g} and drop ≥ {DROP_MIN:.0%} for each",
                  holds=holds, miss=float(miss), details=details, finding=finding, undecided=undecided,
                  regime=None if planted or positive else collapse_setting(ctx.quick, acc))


# ---------------------------------------------------------------------------------------------------------------
def pearson(x, y) -> float:
    x, y = np.asarray(x, float), np.asarray(y, float)
    if np.std(x) == 0 or np.std(y) == 0:
        return 0.0
    return float(np.corrcoef(x, y)[0, 1])


def r_crit(n: int, alpha: float = ALPHA) -> float:
    """One-sided critical value of Pearson's r for n points: t_{1−α, n−2}/√(n − 2 + t²)."""
    from scipy import stats

    t = float(stats.t.ppf(1 - alpha, n - 2))
    return t / math.sqrt(n - 2 + t * t)


def group_mlog(points) -> np.ndarray:
    """Eq 6 for each network through theory.collapse.mlog (checked against Eq 6 written out)."""
    down = np.asarray([p["p_downstream"] for p in points], float)
    pre = np.asarray([p["p_pretrain"] for p in points], float)
    return mlog_checked(down, pre)


def judge_transfer(groups: dict) -> dict:
    """groups: {name: (metric matrix (n, 4) in ve.METRICS order, mlog (n,))} → r's, VCI verdict, sign changes."""
    r = {g: {m: pearson(M[:, j], y) for j, m in enumerate(ve.METRICS)} for g, (M, y) in groups.items()}
    rc = {g: r_crit(len(y)) for g, (M, y) in groups.items()}
    rv = {g: r[g]["vci"] for g in groups}
    holds = all(rv[g] >= rc[g] for g in groups)
    refuted = any(rv[g] <= -rc[g] for g in groups)
    miss = max(rc[g] / rv[g] if rv[g] > 0 else math.inf for g in groups)  # r ≥ r_crit in tolerance units
    flips = {m: bool(np.sign(r["tau"][m]) != np.sign(r["lambda"][m])) for m in ve.METRICS if m != "vci"}
    return {"r": r, "r_crit": rc, "holds": holds, "refuted": refuted, "miss": float(miss), "flips": flips}


def paper_correlations() -> dict:
    """Pearson r of each metric with MLOG within VC Table 2's τ and λ groups (the paper's own numbers; λ group with
    the τ = 1 run as λ = 0)."""
    names = ("fuzziness", "squared_distance", "cosine_similarity", "vci")
    lam = np.vstack([PAPER_TAU[-1:], PAPER_LAMBDA])
    return {g: {m: round(pearson(T[:, j], T[:, 4]), 3) for j, m in enumerate(names)}
            for g, T in (("tau", PAPER_TAU), ("lambda", lam))}


def _constructed_groups(rng, groups, errors_for: str | None = None):
    """The controls' data: the measured metrics, with downstream accuracies built so MLOG rises with VCI (the claim
    holds by construction). ``errors_for``: the negative control's mistake in that group — its accuracy columns
    recorded as error rates (1 − p passed to Eq 6)."""
    out = {}
    for g, (M, _) in groups.items():
        v = M[:, 0]
        zv = (v - v.mean()) / (v.std() or 1.0)
        pre = np.full(len(v), 0.8)
        logit = np.log(0.8 / 0.2) + 0.5 * zv[:, None] + 0.05 * rng.normal(size=(len(v), nw.N_TASKS))
        down = 1 / (1 + np.exp(-logit))
        if g == errors_for:
            down, pre = 1 - down, 1 - pre
        out[g] = (M, np.asarray(vc.mlog(down, pre)))
    return out


def sensitivity(quick: bool, seed: int, device) -> dict:
    """Pearson r with MLOG per group and metric, for each regime of ve.SENSITIVITY (seed ``seed``)."""
    rows = {}
    for name, arch, epochs, taus, lambdas in ve.SENSITIVITY[bool(quick)]:
        pts = ve.transfer_grid(quick, seed, device, arch, epochs, taus, lambdas)
        row = {}
        for g in pts:
            M, y = np.asarray([p["metrics"] for p in pts[g]]), group_mlog(pts[g])
            row[g] = {m: round(pearson(M[:, j], y), 3) for j, m in enumerate(ve.METRICS)}
        row["p_pretrain"] = [_fmt(p["p_pretrain"]) for g in pts for p in pts[g]]
        row["every network trained (p_pretrain ≥ MIN_ACC)"] = bool(min(row["p_pretrain"]) >= nw.MIN_ACC)
        row["grids"] = {"tau": list(taus), "lambda": list(lambdas)}
        rows[name] = row
    return rows


#: Seeds of the transfer experiment (a replication is 11 trainings; the τ = 1, λ = 0 network is the seed's pretraining
#: network, shared with vc.training_collapse) and the seeds a verdict needs, either way.
TRANSFER_SEEDS = 3
REFUTE_MIN_SEEDS = 3
#: The seed whose regime-moved grids form the sensitivity table of a refutation (one table: 10 trainings).
SENSITIVITY_SEED = 0


@check(
    "vc.transfer_correlation", equation="Sec 6.3, Fig 7, Eq 6, App C Tables 1–2", kind="sim", seeds=TRANSFER_SEEDS,
    tolerance=f"Pearson r(VCI, MLOG) ≥ r_crit (one-sided {ALPHA:g} critical value: 0.729 for 6 networks) in both the τ "
              "and the λ group; r ≤ −r_crit in a group refutes; between: undecided (reported); every network trained "
              f"(aug_test accuracy ≥ {nw.MIN_ACC:g})",
    tolerance_reason="the paper reports Pearson's r per group (Fig 7) and calls VCI's 'a strong positive correlation'; "
                     "with six networks per group a positive r is only told from none above the one-sided 5 % "
                     "critical value, so that is the bar, both ways; fixed before the runs. A pass or a refutation is "
                     f"a claim about the networks: it needs ≥ {REFUTE_MIN_SEEDS} seeds (a full run has {TRANSFER_SEEDS}; "
                     "a replication is 11 trainings; the registry's rule: every seed holds → pass, none → refuted, "
                     "some → reported); a refutation also needs the λ group to realise VC's intervention (regime)",
    negative_control="on the positive control's data (MLOG rising with VCI by construction, where the claim holds), "
                     "the λ group's MLOG formed from error rates instead of accuracies (1 − p passed to Eq 6: one "
                     "group's accuracy columns recorded as errors), through the same mlog, correlation and threshold",
    positive_control="the measured metrics with downstream accuracies constructed so that MLOG rises with VCI "
                     "(logit = logit(0.8) + 0.5·z(VCI) + noise), through the same mlog, Pearson r and threshold",
    figures=("vc.glyph_transfer_correlation",), prepare=gp.transfer(TRANSFER_SEEDS), cost=5,
    reads="the VC/FG glyph pretraining network of each seed (sims/glyphs/networks.py)",
)
def transfer_correlation(ctx, planted, positive=False):
    """VC Sec 6.3 on the glyph LeNets of the τ and λ grids (module doc)."""
    probe_pinned()  # p_downstream is sims.glyphs.probe's
    probe_bias_pinned()
    pts = ve.transfer_grid(ctx.quick, ctx.seed, ctx.device)
    cross = p_pretrain_cross_check(pts, ctx.quick, ctx.seed, ctx.device)
    groups = {g: (np.asarray([p["metrics"] for p in pts[g]]), group_mlog(pts[g])) for g in pts}
    if positive or planted:  # both controls on data where the claim holds by construction; the negative one with
        groups = _constructed_groups(ctx.rng("positive"), groups, "lambda" if planted else None)  # its mistake
    v = judge_transfer(groups)
    accs = [float(p["p_pretrain"]) for g in pts for p in pts[g]]
    trained = min(accs) >= nw.MIN_ACC or positive or planted
    holds = bool(v["holds"] and trained)
    miss = v["miss"] if trained else max(v["miss"], nw.MIN_ACC / max(min(accs), 1e-9), 1.0 + 1e-9)
    grids = {"tau": ve.TAU_GRID[bool(ctx.quick)], "lambda": ve.LAMBDA_GRID[bool(ctx.quick)]}
    details = {
        "p_pretrain read again by the registry": cross,
        "Pearson r with MLOG (τ group at λ = 0; λ group at τ = 1)": {g: {m: round(x, 3) for m, x in v["r"][g].items()}
                                                                    for g in v["r"]},
        "r_crit per group": {g: round(x, 3) for g, x in v["r_crit"].items()},
        "older metrics: sign of r changes between the groups (reported, not judged)": v["flips"],
        "the paper's own r's (VC Table 2; λ group with its τ = 1 run as λ = 0)": paper_correlations(),
        "networks (group, τ or λ: metrics [vci, fuzziness, squared distance, cosine], p_pretrain, p_downstream, MLOG)":
            [[g, x, [_fmt(a) for a in p["metrics"]], _fmt(p["p_pretrain"]),
              [_fmt(a) for a in p["p_downstream"]], _fmt(m)]
             for g in pts for x, p, m in zip(grids[g], pts[g], groups[g][1])],
        "training seconds per network (measured when trained)": [_fmt(p["seconds"]) for g in pts for p in pts[g]],
    }
    undecided = finding = None
    n_run = 1 if ctx.quick else TRANSFER_SEEDS
    regime = None if planted or positive else {**vc_setting(ctx.quick), **intervention(pts["lambda"])}
    outside = bool(regime) and not all(c["holds"] for c in regime.values())
    if not positive and not planted:
        if not trained:
            undecided = (f"not every network is trained: lowest pretraining aug_test accuracy {min(accs):.3f} < "
                         f"{nw.MIN_ACC:g}")
        elif v["holds"] and n_run < REFUTE_MIN_SEEDS:
            # the rule both ways: a pass is a claim about the networks too, and one seed cannot make it (below)
            undecided = ("VCI correlates positively with MLOG on this seed (r = "
                         + ", ".join(f"{g} {v['r'][g]['vci']:+.2f}" for g in v["r"])
                         + f"), but a verdict either way needs ≥ {REFUTE_MIN_SEEDS} seeds and this run has "
                         f"{n_run}: reported, not judged")
        elif not v["holds"] and not v["refuted"]:
            undecided = ("six networks per group cannot tell VCI's correlation from none: r = "
                         + ", ".join(f"{g} {v['r'][g]['vci']:+.2f}" for g in v["r"])
                         + f" (r_crit {max(v['r_crit'].values()):.3f})")
        elif v["refuted"] and n_run < REFUTE_MIN_SEEDS:
            # A refutation is a claim about the networks, not about one initialisation: it needs ≥ 3 seeds (the
            # project's rule for read-outs of training).
            undecided = ("VCI correlates negatively with MLOG on this seed (r = "
                         + ", ".join(f"{g} {v['r'][g]['vci']:+.2f}" for g in v["r"])
                         + f"), but a refutation needs ≥ {REFUTE_MIN_SEEDS} seeds and this run has {n_run}: "
                         "the λ group's direction is not reproducible across seeds (MLOG's seed-to-seed spread is as "
                         "large as a group's range); reported, not judged")
        elif v["refuted"] and outside:
            # outside VC's stated setting or intervention no refutation is possible (the registry names the conditions):
            # the regime-moved re-runs that a refutation needs are not trained
            finding = ("VCI correlates negatively with MLOG on this seed (r = "
                       + ", ".join(f"{g} {v['r'][g]['vci']:+.2f}" for g in v["r"])
                       + "), outside VC's stated conditions (regime): a finding in this regime")
        elif v["refuted"]:
            sens = sensitivity(ctx.quick, SENSITIVITY_SEED, ctx.device)
            details["sensitivity (regime moved toward the paper; reduced grids; r with MLOG per group)"] = sens
            r_txt = ", ".join(f"{g} {v['r'][g]['vci']:+.2f}" for g in v["r"])
            if any(all(row[g]["vci"] > 0 for g in ("tau", "lambda")) for row in sens.values()):
                undecided = (f"VCI correlates negatively with MLOG here (r = {r_txt}), but a regime moved toward the "
                             "paper's gives positive r in both groups (details: sensitivity): the finding is about the "
                             "regime")
            else:
                finding = (f"VCI correlates negatively with the transfer MLOG (Eq 6) on glyph LeNets: r = {r_txt} "
                           f"(r_crit {max(v['r_crit'].values()):.3f}); the older metrics' r's τ/λ ("
                           + ", ".join(f"{m} {v['r']['tau'][m]:+.2f}/{v['r']['lambda'][m]:+.2f}: "
                                       f"{'sign changes' if v['flips'][m] else 'no sign change'}"
                                       for m in ve.METRICS if m != "vci")
                           + "). Sensitivity (regime moved toward the paper), r(VCI) τ/λ: "
                           + "; ".join(f"{k} {row['tau']['vci']:+.2f}/{row['lambda']['vci']:+.2f}"
                                       for k, row in sens.items())
                           + ". The paper's own Table 2 gives r(VCI) = +0.995 (τ) and +0.93 (λ).")
    measured = {g: f"r(VCI, MLOG) = {v['r'][g]['vci']:+.3f}" for g in v["r"]}
    return Result(measured=measured, expected="r ≥ r_crit in both groups", holds=holds, miss=float(miss),
                  details=details, finding=finding, undecided=undecided, regime=regime)
