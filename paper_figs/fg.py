"""FG figures: easy/hard test error vs step (coarse vs fine training), detector growth (common vs subclass
lucky neurons), and the hard-sample gap vs k. All read the cached experiments of the fg checks' sweep (paper regime,
seed 0; the vertical lines mark the horizons at which the checks read the claims)."""
from __future__ import annotations

import numpy as np

from paper_figs._layout import finish, separate_coincident
from paper_figs.registry import figure
from sims.multiview.experiment import cached_experiment, granularity_sweep
from sims.multiview.experiment import sweep_settings as _settings
from sims.multiview.regimes import HORIZONS


def _base_run(quick: bool) -> dict:
    s = _settings(quick)
    return cached_experiment({**s["base_config"], "k": max(s["ks"]), "seed": s["seeds"][0]})


@figure("fg.test_error_curves", answers="FG Thm 5.1 / 5.2",
        caption="Easy and hard test error on the coarse task vs SGD step, for coarse training (F_±) and fine "
                "training read out by F̂_y = max_c F_{y,c}; left: the training loss (mean batch loss per window). "
                "Paper-faithful headline regime of docs/fg.md (d = 100, k = 8, P = 16, exactly s = 3 common and "
                "subclass patches per sample, α′ ≤ 1/(s log d), ‖ζ*‖ = log d); triangles on the top edge: the three "
                "horizons the checks read. Series that coincide (e.g. every error at 0) are drawn as concentric "
                "rings and named in the legend's title.",
        checks=("fg.coarse_training", "fg.fine_training"))
def draw_curves(quick: bool):
    return curves_figure(_base_run(quick))


def curves_figure(r: dict):
    """Training loss and easy/hard coarse-task test error vs step of one experiment (run_experiment's dict)."""
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    errs = []
    for lab, color in (("coarse", "C3"), ("fine", "C0")):
        if lab not in r:
            continue
        c = r[lab]["curves"]
        st = np.array(c["step"])
        loss = np.array(c["train_loss"], float)
        a.semilogy(st[1:], loss[1:], color=color, label=f"{lab} labels")
        errs += b.plot(st, c["easy_err"], "-", color=color, label=f"{lab}: easy")
        errs += b.plot(st, c["hard_err"], "--", color=color, label=f"{lab}: hard")
    last = int(r["config"]["steps"])
    marks = [h for hz in HORIZONS.values() if hz[-1] == last for h in hz]
    for ax in (a, b):
        ax.set_xscale("log")
        ax.minorticks_off()
        ax.grid(True, alpha=0.3)
        ax.plot(marks, np.ones(len(marks)), "v", color="0.3", ms=6, transform=ax.get_xaxis_transform(),
                clip_on=False, label=f"horizons the checks read (t = {', '.join(map(str, marks))})")
    note = separate_coincident(errs)  # e.g. coarse: easy, fine: easy and fine: hard all 0: rings of three sizes
    a.set_xlabel("SGD step")
    a.set_ylabel("batch cross-entropy (mean per window)")
    a.set_title("training loss", pad=10)
    b.set_xlabel("SGD step")
    b.set_ylabel("coarse-task test error (fraction)")
    b.set_ylim(-0.05, 0.8)
    b.set_title(f"coarse-task test error (d = {r['config']['d']}, k = {r['config']['k']})", pad=10)
    a.legend(fontsize=8)
    b.legend(fontsize=8, title=note.replace("; ", "\n") + " (rings)" if note else None, title_fontsize=7)
    return finish(fig)


@figure("fg.detector_growth", answers="FG Sec 5.2, Lemma E.5 / G.2",
        caption="Mean growth ⟨w_r⁽ᵗ⁾ − w_r⁽⁰⁾, v⟩ of the lucky neurons S⁽⁰⁾(v) of the common feature v_y and of the "
                "subclass features v_{y,c}, coarse vs fine labels (left); the ratio common/subclass at the end vs "
                "k (right, dotted: slope 1). Coarse: Θ(k); fine: a k-independent constant in Lemma G.2's [1/4, 2/3].",
        checks=("fg.growth_ratio", "fg.activation_scale"))
def draw_growth(quick: bool):
    s = _settings(quick)
    return growth_figure(_base_run(quick), granularity_sweep(s["base_config"], s["ks"], s["ds"], s["seeds"]))


def growth_figure(r: dict, sw: dict | None = None):
    """Detector growth of one experiment; with a granularity sweep ``sw`` also the growth ratio vs k."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2 if sw else 1, figsize=(11 if sw else 5.5, 4.2), squeeze=False)
    a = axes[0, 0]
    for lab, color in (("coarse", "C3"), ("fine", "C0")):
        if lab not in r:
            continue
        c = r[lab]["curves"]
        a.plot(c["step"], c["growth_common"], "-", color=color, label=f"{lab}: common v_y")
        a.plot(c["step"], c["growth_sub"], "--", color=color, label=f"{lab}: subclass v_(y,c)")
    a.set_xlabel("SGD step")
    a.set_ylabel("mean ⟨Δw_r, v⟩ over r ∈ S⁽⁰⁾(v)")
    a.set_title(f"detector growth of the lucky neurons, k = {r['config']['k']}")
    a.legend(fontsize=8)
    a.grid(True, alpha=0.3)
    if not sw:
        return finish(fig)
    b = axes[0, 1]
    ks = np.array(sw["ks"], float)
    rc = [sw["by_k"][k]["coarse_growth_ratio"] for k in sw["ks"]]
    rf = [sw["by_k"][k]["fine_growth_ratio"] for k in sw["ks"]]
    b.loglog(ks, rc, "o-", color="C3", label="coarse labels")
    b.loglog(ks, rf, "s-", color="C0", label="fine labels")
    b.loglog(ks, rc[0] * ks / ks[0], ":", color="k", label="∝ k")
    b.axhspan(0.25, 2 / 3, color="C0", alpha=0.1, label="Lemma G.2: [1/4, 2/3]")
    b.set_xticks(ks, [str(int(k)) for k in ks])
    b.minorticks_off()
    b.set_xlabel("subclasses per superclass k")
    b.set_ylabel("growth ratio common / subclass")
    b.set_title("growth ratio common / subclass at the last step")
    b.legend(fontsize=8)
    b.grid(True, alpha=0.3)
    return finish(fig)


@figure("fg.hard_gap_vs_k", answers="FG Thm 5.1 vs 5.2",
        caption="Paper-faithful regime, seed 0. Left: hard-sample error of coarse training (red) and fine training "
                "(blue) vs k at d = 100 (quick 64), one line per horizon (lighter = earlier). Right: the same vs d at "
                "k = 8, every d trained the same T (the last horizon; the d-scaling sweep).",
        checks=("fg.granularity_sweep",))
def draw_gap(quick: bool):
    import matplotlib.pyplot as plt

    from sims.multiview.regimes import at_horizon, scaling_configs

    s = _settings(quick)
    runs = {k: cached_experiment({**s["base_config"], "k": k, "seed": 0}) for k in s["ks"]}
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    ks = list(s["ks"])
    fine = []
    for i, t in enumerate(s["horizons"]):
        alpha = 0.35 + 0.65 * i / max(len(s["horizons"]) - 1, 1)
        at = [at_horizon(runs[k], t) for k in ks]
        a.plot(ks, [x["coarse"]["hard_err"] for x in at], "o-", color="C3", alpha=alpha, label=f"coarse, t = {t}")
        fine += a.plot(ks, [x["fine"]["hard_err"] for x in at], "s--", color="C0", alpha=alpha,
                       label=f"fine, t = {t}")
    notes = ["fine: the same at every horizon" if separate_coincident(fine) else ""]  # often 0 at all three
    sc = [cached_experiment({**c, "seed": 0}) for c in scaling_configs(quick)]
    ds = [r["config"]["d"] for r in sc]
    right = b.plot(ds, [r["summary"]["coarse_hard_err"] for r in sc], "o-", color="C3", label="coarse training")
    b.plot(ds, [r["summary"]["fine_hard_err"] for r in sc], "s-", color="C0", label="fine training")
    right += b.plot(ds, [r["summary"]["hard_gap"] for r in sc], "^--", color="k", label="gap (coarse − fine)")
    notes.append(separate_coincident(right))  # the gap equals coarse training's error where fine's is 0
    for ax, xs, xlabel, note in ((a, ks, "subclasses per superclass k", notes[0]),
                                 (b, ds, "dimension d (same T for every d)", notes[1])):
        ax.set_xscale("log", base=2)
        ax.set_xticks(xs, [str(x) for x in xs])
        ax.minorticks_off()
        ax.set_xlabel(xlabel)
        ax.set_ylabel("coarse-task error on hard samples (fraction)")
        ax.set_ylim(-0.05, 1)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, title=note.replace("; ", "\n") + " (rings)" if note else None, title_fontsize=7)
    a.set_title("hard-sample error vs k at three horizons")
    b.set_title(f"hard-sample error vs d at k = {max(ks)}, last horizon")
    return finish(fig)
