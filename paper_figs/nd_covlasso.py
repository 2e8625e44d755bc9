"""ND figures from the exact CovLasso solutions on the synthetic massive-category model (sims.nd_models).

* ``nd.error_path``: err_i(θ*(λ)) between the floor err_i(θ*(0)) and Cov_ii (Eq 5), and the support size;
* ``nd.fig3_cov_vs_theta``: |E[f_i f_j]| against θ_j with the λ/2 bar (Fig 3, Conj 1);
* ``nd.fig4_graph``: a dependency graph, targets inside, the categories they depend on around (Fig 4);
* ``nd.massive_floors``: the relative floor R(Cov, i) as n/p grows (Sec 2.2).

The real-model versions belong to the real-model issue.
"""
from __future__ import annotations

import numpy as np

from paper_figs._layout import finish, legend_below
from paper_figs.registry import figure
from sims.threads import single_threaded
from sims.nd_models import massive_category_logits
from sims.spd import gram
from theory import dependency as dep
from theory.covlasso import covlasso, covlasso_all, covlasso_path


# Draw with single-threaded BLAS: the matrices are small, where BLAS threads only add synchronisation.
_one_blas_thread = single_threaded(torch_threads=None, user_api="blas")


def _model(quick: bool, seed: int = 0):
    n, p = (120, 80) if quick else (300, 200)
    F, y, _ = massive_category_logits(15 * n, n, p, np.random.default_rng(seed), noise=0.05)
    return gram(F)


@figure("nd.error_path", answers="ND Eq 5",
        caption="Left: the relative prediction error err_i(θ*(λ))/Cov_ii along the exact CovLasso path for four "
                "categories of the synthetic massive-category model (n > p features, noise 0.05): it rises "
                "monotonically from the floor R(Cov, i) = err_i(θ*(0))/Cov_ii (dashed, ND A30–A32) to 1 at "
                "λ_max = 2‖Cov₋ᵢ,ᵢ‖_∞ (A47). Dots: breakpoints of the piecewise-linear path. Right: support size.",
        checks=("nd.error_path_monotone", "nd.markov_bound"))
@_one_blas_thread
def draw_error_path(quick: bool):
    import matplotlib.pyplot as plt

    c = _model(quick)
    floors = dep.relative_floor(c)
    lmax = dep.lambda_max(c)
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    for k, i in enumerate((0, 7, 19, 42)):
        path = covlasso_path(c, i)
        bp = path.breakpoints
        lams = np.unique(np.concatenate([bp, np.geomspace(max(bp[-2], 1e-6 * bp[0]), bp[0], 300)]))
        th = path.at(lams)
        err = np.einsum("mi,ij,mj->m", th, c, th) / c[i, i]
        x = lams / lmax[i]
        a.semilogy(x, err, color=f"C{k}", lw=1.3, label=f"category {i}")
        eb = np.einsum("mi,ij,mj->m", path.coefs, c, path.coefs) / c[i, i]
        a.semilogy(bp / lmax[i], eb, ".", color=f"C{k}", ms=3)
        a.axhline(floors[i], color=f"C{k}", ls="--", lw=0.8)
        sizes = [len(s) for s in path.supports]
        b.step(bp / lmax[i], sizes, where="post", color=f"C{k}", label=f"category {i}")
    a.axhline(1.0, color="k", lw=0.8, label="Cov_ii (relative error 1)")
    a.plot([], [], "--", color="0.4", lw=0.8, label="floor R(Cov, i), colour of its category")
    a.plot([], [], ".", color="0.4", ms=5, label="breakpoints of the path")
    a.set_xlabel("λ / λ_max(i)")
    a.set_ylabel("relative error err_i(θ*(λ)) / Cov_ii")
    a.set_title("relative error along the exact CovLasso path")
    a.legend(fontsize=7)
    a.grid(True, alpha=0.3)
    b.set_xlabel("λ / λ_max(i)")
    b.set_ylabel("support size |{j : θ_j ≠ 0}| (categories)")
    b.set_title("support size along the path")
    b.legend(fontsize=7)
    b.grid(True, alpha=0.3)
    return finish(fig)


@figure("nd.fig3_cov_vs_theta", answers="ND Fig 3",
        caption="|E[f_i f_j]| against the CovLasso coefficient θ_j for four target categories of the synthetic "
                "massive-category model at λ = 0.3·λ_max(i). The vertical line is the λ/2 bar of Conj 1: categories "
                "left of it should have θ_j = 0; red: those that do not (Conj 1 violations).",
        checks=("nd.conjecture1", "nd.screening_rule"))
@_one_blas_thread
def draw_fig3(quick: bool):
    import matplotlib.pyplot as plt

    c = _model(quick, seed=1)
    fig, axes = plt.subplots(1, 4, figsize=(14, 3.6), sharey=False)
    for ax, i in zip(axes, (3, 11, 27, 50)):
        rest = np.delete(np.arange(c.shape[0]), i)
        lam = 0.3 * dep.lambda_max(c)[i]
        th = covlasso(c, i, lam)[rest]
        cov = np.abs(c[rest, i])
        bad = (cov < lam / 2) & (th != 0)
        ax.scatter(cov[~bad], th[~bad], s=9, color="C0", alpha=0.7, label="category j")
        ax.scatter(cov[bad], th[bad], s=18, color="C3", label="θ_j ≠ 0 left of λ/2 (Conj 1 violation)")
        ax.axvline(lam / 2, color="k", ls="--", lw=1, label="λ/2 (Conj 1's bar)")
        ax.set_xlabel("|E[f_i f_j]| (logit second moment)")
        ax.set_ylabel("CovLasso coefficient θ_j")
        ax.set_title(f"target i = {i}: {int((th != 0).sum())} nonzero θ_j, {int(bad.sum())} violations", fontsize=9)
        ax.grid(True, alpha=0.3)
    legend_below(fig, fontsize=8)
    return finish(fig)


@figure("nd.fig4_graph", answers="ND Fig 4",
        caption="Dependency graph of ten target categories (inside) on the categories they depend on (outside) in "
                "the synthetic massive-category model, CovLasso at λ = 0.5·λ_max(i); edge width ∝ |θ_j|, blue "
                "positive, red negative.",
        checks=("nd.kkt_sparsity",))
@_one_blas_thread
def draw_fig4(quick: bool):
    import matplotlib.pyplot as plt

    c = _model(quick, seed=2)
    n = c.shape[0]
    Theta = covlasso_all(c, rho=0.5)
    targets = np.arange(10)
    base = sorted({int(j) for t in targets for j in np.flatnonzero(Theta[t]) if j != t})
    ang = np.linspace(0, 2 * np.pi, len(base), endpoint=False)
    pos = {j: (np.cos(a), np.sin(a)) for j, a in zip(base, ang)}
    tang = np.linspace(0, 2 * np.pi, len(targets), endpoint=False) + 0.2
    tpos = {int(t): (0.35 * np.cos(a), 0.35 * np.sin(a)) for t, a in zip(targets, tang)}
    wmax = max(np.abs(Theta[t][base]).max() for t in targets)
    fig, ax = plt.subplots(figsize=(7, 7))
    for t in targets:
        for j in np.flatnonzero(Theta[t]):
            if j == t:
                continue
            w = Theta[t, j]
            (x0, y0), (x1, y1) = tpos[int(t)], pos[int(j)]
            ax.plot([x0, x1], [y0, y1], color="C0" if w > 0 else "C3", lw=0.5 + 3 * abs(w) / wmax, alpha=0.6)
    ax.scatter(*zip(*pos.values()), s=25, color="0.4", zorder=3)
    for j, a in zip(base, ang):  # along the radius, so that a crowded circle (the full run) keeps them apart
        left = np.cos(a) < 0
        ax.text(1.05 * np.cos(a), 1.05 * np.sin(a), str(j), fontsize=6 if len(base) <= 120 else 5,
                rotation=np.rad2deg(a) + (180 if left else 0), rotation_mode="anchor",
                ha="right" if left else "left", va="center")
    ax.scatter(*zip(*tpos.values()), s=120, color="C2", zorder=4)
    for t, (x, y) in tpos.items():
        ax.text(x, y, str(t), fontsize=7, ha="center", va="center", color="w", zorder=5)
    ax.set_title(f"dependency graph: {len(targets)} targets on {len(base)} of {n - len(targets)} other categories")
    ax.set_aspect("equal")
    ax.axis("off")
    from matplotlib.lines import Line2D

    keys = [Line2D([], [], color="C0", lw=2, label="θ_j > 0 (width ∝ |θ_j|)"),
            Line2D([], [], color="C3", lw=2, label="θ_j < 0"),
            Line2D([], [], ls="", marker="o", ms=9, color="C2", label="target category i"),
            Line2D([], [], ls="", marker="o", ms=5, color="0.4", label="category j it depends on")]
    ax.legend(handles=keys, fontsize=8, ncols=2, loc="upper center", bbox_to_anchor=(0.5, 0.0))
    return finish(fig)


@figure("nd.massive_floors", answers="ND Sec 2.2",
        caption="Relative error floor R(Cov, i) = err_i(θ*(0))/Cov_ii (A31) of every category for logits f = W h + σe, "
                "h ∈ R^p (p = 40), as the number of categories n grows past p. σ = 0: R follows (p−n+1)/p (dashed, "
                "the Beta mean) and is exactly 0 once n > p; logit noise of relative variance σ² lifts the floors to order σ².",
        checks=("nd.massive_categories",))
@_one_blas_thread
def draw_massive(quick: bool):
    import matplotlib.pyplot as plt

    rng = np.random.default_rng(3)
    p = 40
    ratios = np.array([0.25, 0.5, 0.75, 0.9, 1.0, 1.25, 1.5, 2, 3, 4, 6] if not quick else [0.25, 0.5, 0.75, 1.0, 1.5, 2, 4])
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for k, sigma in enumerate((0.0, 0.03, 0.1)):
        med, lo, hi = [], [], []
        for r in ratios:
            n = max(2, int(round(r * p)))
            W = rng.standard_normal((n, p))
            c = W @ W.T + sigma**2 * p * np.eye(n)  # E[(Wh + σ√p e)(…)ᵀ], h ~ N(0, I_p), e ~ N(0, I_n): noise σ² relative to Cov_ii ≈ p
            R = dep.relative_floor(c)
            R = np.maximum(R, 1e-17)
            med.append(np.median(R))
            lo.append(np.quantile(R, 0.1))
            hi.append(np.quantile(R, 0.9))
        ax.fill_between(ratios, lo, hi, color=f"C{k}", alpha=0.2)
        ax.semilogy(ratios, med, "o-", color=f"C{k}", label=f"σ = {sigma:g} (median, 10–90%)")
    law = np.clip((p - ratios * p + 1) / p, 1e-17, None)
    ax.semilogy(ratios[ratios <= 1], law[ratios <= 1], "k--", lw=1, label="(p − n + 1)/p")
    ax.axvline(1.0, color="0.5", lw=0.8, label="n = p")
    ax.set_xlabel("n / p (categories per feature dimension)")
    ax.set_ylabel("relative floor R(Cov, i) (0 drawn at 1e-17)")
    ax.set_title(f"relative error floor of every category vs n / p (p = {p})")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    return finish(fig)
