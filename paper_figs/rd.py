"""RD figures: Fig 1 d–f (MLP-50), Fig 3 (structural impetus), the Lyapunov ψ-law, Marchenko–Pastur.

Each figure reads the cached result its check computed (sizes from ``sims.rank_nets.rd_settings``).
"""
from __future__ import annotations

import numpy as np

from paper_figs._layout import finish
from paper_figs.registry import figure
from sims import marchenko_pastur as mp
from sims import random_matrix as rm
from sims import rank_components as fig3
from sims import rank_nets as nets
from theory import rank as R


@figure("rd.fig1_mlp50", answers="RD Fig 1 d–f",
        caption="Linear MLP (dense n→n layers, N(0, 1/n) weights, float32, Gaussian inputs): numerical rank of the "
                "Jacobian J_{F_L} (left) and PCA dimension of the features F_L(x) (right) against depth L, three weight "
                "draws, float32 rule ε = 1.19e−7·n; dashed: the ψ-law prediction #{k : L(λ_k − λ_1) ≥ log ε} "
                "(√ε for the features). Log–log axes: a power law is a straight line here, an exponential bends down.",
        checks=("rd.mlp50_decay",))
def fig1_mlp50(quick: bool):
    import matplotlib.pyplot as plt

    st = nets.rd_settings(quick)["mlp"]
    d = nets.mlp50_decay(st["n"], st["depth"], st["draws"], st["samples"], st["depths"])
    L = np.asarray(d["depths"], dtype=float)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, key, eps, title in ((axes[0], "jac_rank", d["eps"], "Jacobian rank"),
                                (axes[1], "feat_dim", np.sqrt(d["eps"]), "feature (PCA) dimension")):
        r = np.asarray(d[key], dtype=float)
        for i in range(r.shape[0]):
            ok = r[i] > 0
            ax.loglog(L[ok], r[i, ok], "o-", ms=3, lw=1, label=f"weight draw {i + 1}")
        ax.loglog(L, R.psi_law_rank(st["n"], L, eps), "k--", lw=1.2, label="ψ-law (Thm 5)")
        ax.set_xlabel("depth L (number of dense layers)")
        ax.set_ylabel(title)
        ax.set_title(f"{title}, n = {st['n']}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    return finish(fig)


@figure("rd.fig3_structural", answers="RD Fig 3",
        caption="Structural impetus: Jacobian rank (left) and PCA dimension (right) lost by each component (ambient "
                "minus measured, at the component's input, i.e. after the random FC layer, and at its output; the "
                "numbers on the bars are the dimensions lost, those under the names the measured values), Gaussian "
                "inputs C×8×8 (C = 16 in the full run, 4 in quick; the paper uses 128), PCA over a batch of 5000 (800"
                " in quick), float32 rule. The paper says conv and FC lose considerably, IN/LN/GN modestly, and cites"
                " BN as a remission: BatchNorm with batch statistics keeps both numbers; IN/GN can raise the PCA "
                "dimension while their Jacobian loses exactly 2 per normalised group.",
        checks=("rd.structural_impetus",))
def fig3_structural(quick: bool):
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    st = nets.rd_settings(quick)["si"]
    d = fig3.structural_impetus(st["channels"], st["batch"], st["jac_batch"])
    names = list(fig3.COMPONENTS)
    x = np.arange(len(names))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4))
    amb = int(d["ambient"])
    for ax, key, title in ((axes[0], "jac", "Jacobian rank"), (axes[1], "pca", "PCA dimension")):
        b = np.array([d[n][key]["before"] for n in names], dtype=float)
        a = np.array([d[n][key]["after"] for n in names], dtype=float)
        for off, lost, label, color in ((-0.2, amb - b, "input of the component (after the random FC)", "C0"),
                                        (0.2, amb - a, "output of the component", "C3")):
            ax.bar(x + off, lost, 0.4, label=label, color=color)
            zero = lost == 0  # a bar of height 0 shows as a short thick stroke on the axis
            ax.plot(x[zero] + off, lost[zero], "_", ms=14, mew=3, color=color)
            for xi, v in zip(x + off, lost):
                ax.text(xi, max(v, 0), f"{int(v)}", ha="center", va="bottom", fontsize=7, color=color)
        ax.set_xticks(x, [f"{n.upper() if len(n) <= 3 else n}\n{int(bi)}→{int(ai)}" for n, bi, ai in zip(names, b, a)],
                      fontsize=8)
        ax.set_xlabel(f"component (below: {title} at its input → output)")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel(f"dimensions lost (ambient {amb} − measured)")
        ax.set_title(f"{title} lost by each component, ambient {amb}")
        ax.axhline(0, color="k", lw=0.8)
        ax.set_ylim(-0.05 * max(1, (amb - np.r_[a, b]).max()), 1.3 * max(1, (amb - np.r_[a, b]).max()))
        ax.legend(fontsize=8, title="numbers on the bars: dimensions lost", title_fontsize=7)
        ax.grid(True, axis="y", alpha=0.3)
    return finish(fig)


@figure("rd.lyapunov_spectrum", answers="RD Thm 5, Eq 10",
        caption="Lyapunov spectrum of products of L standard Gaussian n×n matrices (Benettin QR, numba; mean ± 2 sd "
                "across trials) against the ψ-law λ_k = ½(log 2 + ψ((n−k+1)/2)) for several n; x-axis k/n.",
        checks=("rd.lyapunov_law", "rd.gradient_explosion"))
def lyapunov_spectrum(quick: bool):
    import matplotlib.pyplot as plt

    st = nets.rd_settings(quick)["lyap"]
    L = st["checkpoints"][-1]
    d = rm.lyapunov_data(st["ns"], st["checkpoints"], st["trials"])
    fig, ax = plt.subplots(figsize=(6.5, 4.4))
    for i, n in enumerate(st["ns"]):
        spec = d[f"sums_{n}"][:, -1, :] / L
        k = np.arange(1, n + 1)
        ax.errorbar(k / n, spec.mean(0), yerr=2 * spec.std(0, ddof=1), fmt="o", ms=3, color=f"C{i}",
                    label=f"simulated n = {n} (mean ± 2 sd)")
        ax.plot(k / n, R.lyapunov_law(n), "-", color=f"C{i}", lw=1, label=f"ψ-law n = {n}")
    ax.set_xlabel("k / n (exponent index over width)")
    ax.set_ylabel("per-layer exponent λ_k (nats per layer)")
    ax.set_title(f"Lyapunov spectrum of L = {L} Gaussian layers, {st['trials']} trials")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    return finish(fig)


@figure("rd.marchenko_pastur", answers="RD Sec 3.1",
        caption="Left: eigenvalues of GᵀG/N for N×d Gaussian G (γ = d/N = 1/2, pooled over trials) against the "
                "Marchenko–Pastur density; the dotted line is the numerical-rank threshold ε²·(1+√γ)² for ε = 0.3, "
                "everything left of it is not counted. Right: Monte Carlo distribution of Rank_ε for each case of the "
                "check, centred on the MP prediction (vertical line at 0).",
        checks=("rd.marchenko_pastur",))
def marchenko_pastur(quick: bool):
    import matplotlib.pyplot as plt

    st = nets.rd_settings(quick)["mp"]
    N, dd, eps = 256, 128, 0.3
    lam = mp.mp_sample_eigenvalues(N, dd, 10 if quick else 40, np.random.default_rng(0))
    g = dd / N
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    a.hist(lam, bins=60, density=True, alpha=0.5, color="C0", label=f"simulated {N}×{dd}")
    lo, hi = R.mp_edges(g)
    xs = np.linspace(lo, hi, 400)
    a.plot(xs, R.mp_density(xs, g), "k-", lw=1.2, label="Marchenko–Pastur")
    thr = (eps * (1 + np.sqrt(g))) ** 2
    a.axvline(thr, color="C3", ls=":", label=f"ε²σ_top², ε = {eps}")
    pred = R.mp_numerical_rank(N, dd, eps)
    per = lam.reshape(-1, dd)
    meas = np.mean(np.sum(per >= eps**2 * per.max(1, keepdims=True), 1))
    a.set_title(f"spectrum of GᵀG/N; Rank_ε: MP {pred:.1f}, simulated {meas:.1f} of {dd}")
    a.set_xlabel("eigenvalue of GᵀG / N")
    a.set_ylabel("density")
    a.legend(fontsize=8)
    d = mp.mp_rank_data(st["cases"], st["trials"])
    for i, (n1, n2, e, r, th) in enumerate(st["cases"]):
        ranks = np.asarray(d[f"ranks_{i}"], dtype=float)
        p = R.mp_numerical_rank(n1, n2, e, r, th)
        off = ranks - p
        bins = np.arange(np.floor(off.min()) - 0.5, np.ceil(off.max()) + 1.5)
        lab = f"{n1}×{n2}, ε={e}" + (f", spike θ={th}" if r else "")
        b.hist(off, bins=bins, histtype="step", lw=1.4, density=True, label=lab, color=f"C{i}")
    b.axvline(0, color="k", lw=1, label="MP prediction")
    b.set_xlabel("Rank_ε − MP prediction")
    b.set_ylabel("share of trials")
    b.set_title(f"Monte Carlo numerical rank ({st['trials']} trials per case)")
    b.legend(fontsize=8)
    return finish(fig)
