"""The VC section of ``theorylab analyze``: collapse metrics of the final features, in-sample and held out.

The class of each sample is chosen once, here, and the heading names it: the true label (a labelled folder),
else the folder's own class when its classes are not the model's logits (``vc_labels``), else the source image of
each crop (the photographs; ``--crops N`` on a folder), else the model's predicted
class (one centre crop per image of an unlabelled folder). The metrics are theory.collapse's under the rank
policy of :func:`sims.real.collapse.vc_metrics`; the held-out VCI / probe loss / probe accuracy are
:func:`sims.real.collapse.held_out`'s. When the centred features have rank N − 1 the in-sample probe interpolates
any labels: the section says so, since in-sample VCI = 0 and probe loss = 0 then carry no information.
"""
from __future__ import annotations

import numpy as np

from sims.real import collapse as VC


def _class_of(F, d) -> tuple[np.ndarray, str, object]:
    """(classes, what they are, groups for the held-out split)."""
    if d["labels"] is not None:
        return np.asarray(d["labels"]), "the true class (the labels)", (None if d.get("per_image", True)
                                                                         else d["groups"])
    if d.get("vc_labels") is not None:
        return (np.asarray(d["vc_labels"]), "the folder's class (its classes are not the model's logits)",
                None if d.get("per_image", True) else d["groups"])
    if not d.get("per_image", False):
        return np.asarray(d["groups"]), "the source image of each crop (no labels)", None
    return np.asarray(d["logits"]).argmax(1), "the model's predicted class (no labels, one crop per image)", None


def _fmt(x) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "—"
    if isinstance(x, (float, np.floating)):
        return "0" if abs(float(x)) <= 1e-12 else f"{float(x):.3g}"
    return str(x)


def vc_section(F, d, rank, seed: int, bar=None) -> tuple[list, dict]:
    """(Markdown lines, JSON dict) of the VC section for features F (N, d) and the capture ``d``.

    ``bar``: called with the total number of parts, returns a callable advancing a progress bar by one."""
    tick = bar(3) if bar is not None else (lambda: None)
    src, what, groups = _class_of(F, d)
    classes, y = np.unique(src, return_inverse=True)
    md = [f"## Variability collapse of the final features (VC), class = {what}", ""]
    out = {"class": what, "classes": int(len(classes)), "rank_policy_requested": rank}
    if len(classes) < 2:
        msg = f"only {len(classes)} class among the {len(F)} samples: VC metrics need at least two"
        return md + [f"not computed: {msg}", ""], {**out, "error": msg}
    try:
        r = VC.vc_metrics(F, y, rank)
    except ValueError as exc:
        hint = " (on the command line: --rank exact, or --rank auto)" if "rank='exact'" in str(exc) else ""
        return md + [f"not computed: {exc}{hint}", ""], {**out, "error": str(exc) + hint}
    tick()
    met = {k: v for k, v in r["metrics"].items() if isinstance(v, (float, int, np.floating, np.integer))}
    Fk = r["features"]
    interp = VC.interpolates(Fk)
    tick()
    ho = VC.held_out(Fk, y, int(met["rank"]), seed=seed, groups=groups)
    tick()
    out.update(rank_policy=r["rank_policy"], rank=int(met["rank"]), rank_note=r["rank_note"],
               dead_columns=r["dead"], features_used=int(Fk.shape[1]), interpolates=bool(interp),
               in_sample=met, held_out=ho)
    if r["dead"]:
        md += [f"{r['dead']} of {F.shape[1]} feature columns are 0 for every sample (dead channels): left out (they "
               "change no VC metric).", ""]
    md += [f"Rank of Σ_B used: {met['rank']} (policy '{r['rank_policy']}'"
           + (f"; requested '{rank}'" if str(rank) != r["rank_policy"] else "") + ")."
           + (f" {r['rank_note']}." if r["rank_note"] else ""), ""]
    if interp:
        md += [f"**Caveat: N = {len(F)} samples ≤ d + 1 = {Fk.shape[1] + 1} and the centred features have rank N − 1: "
               "the in-sample linear probe interpolates any labels, so in-sample VCI = 0 and probe loss = 0 here "
               "whatever the features (Gaussian noise would give the same). Read the held-out column.**", ""]
    split = ("halves of each class's source images" if groups is not None else "halves of each class's samples")
    md += [f"Held out: the least-squares probe of VC Thm 5.1 fitted on one of two seeded {split} (seed {seed}; "
           f"{ho['n_fit']} + {ho['n_test']} samples, {ho['classes']} classes) and scored on the other, both ways; "
           "held-out VCI reads that loss back through Thm 5.1. Chance level (no class information): VCI 1, probe "
           f"loss {_fmt(ho['chance_probe_loss'])}, accuracy {_fmt(ho['chance_acc'])} (majority class); an over-fitted "
           "probe scores worse than chance." + (f" {ho['reason']}." if ho["reason"] else ""), ""]
    rows = [["vci", met["vci"], ho["vci"]], ["probe_loss", met["probe_loss"], ho["probe_loss"]],
            ["probe accuracy", None, ho["probe_acc"]]]
    rows += [[k, v, None] for k, v in met.items() if k not in ("vci", "probe_loss")]
    md += ["| metric | in-sample | held-out |", "|---|---|---|"]
    md += [f"| {k} | {_fmt(a)} | {_fmt(b)} |" for k, a, b in rows] + [""]
    return md, out
