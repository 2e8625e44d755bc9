"""FG regimes: the paper-faithful regime (the headline) and the tuned one, the horizons every training claim is
judged at, and the d-scaling sweep with T ∝ d (FG Lemma E.4: A(t) = log(Ct + t₀), so Eq 10's Θ(log d) needs
T = poly(d)).

The parameters were fixed from the paper's assumptions (FG B.3; ``theory.multiview.paper_regime``) before any
run; docs/fg.md lists each one beside its bound.

* ``paper``: α′ ∈ [1/log⁴ d, 1/(s log d)] (B.3 item 8 at its edges, constants 1), big-noise norm ‖ζ*‖ = log d
  (item 12 / Lemma E.8, Eq 117), everything else as the tuned regime (d, P, s, k, m, c_b from m·Q = lucky, σ₀, η,
  batch: departures from B.3 that the sizes force, stated in ``regime_table``).
* ``tuned``: the earlier regime, α′ ∈ [0.25, 0.5] (≈ 7× the bound at d = 100), ‖ζ*‖ = 2.0 (below log d).

Horizons (steps at which every training claim is read, one run per point): full (25, 125, 500), quick
(10, 50, 200): 20× from the first to the last.
"""
from __future__ import annotations

import math

from theory.multiview import paper_regime

REGIMES = ("paper", "tuned")
HEADLINE = "paper"
QUICK_BASE = {"d": 64, "m_coarse": 400, "m_fine": 50, "lucky": 4.0, "n_test": 128}
HORIZONS = {False: (25, 125, 500), True: (10, 50, 200)}
STEPS_PER_D = 1.5  # T(d) = 1.5 d steps in the d-scaling sweep (150 steps at d = 100, the earlier fixed horizon)


def regime_config(regime: str, d: int, s: float = 3.0) -> dict:
    """The config keys a regime sets at patch dimension d (the rest are ``experiment.DEFAULTS``)."""
    if regime == "paper":
        return paper_regime(d, s)
    if regime == "tuned":
        return {"iota_lower": 0.25, "iota_upper": 0.5, "hard_noise_norm": 2.0}
    raise ValueError(f"regime must be one of {REGIMES}, got {regime!r}")


def sweep_settings(quick: bool, regime: str = HEADLINE) -> dict:
    """The k-sweep of one regime read at the horizons: k ∈ {2, 4, 8} (paper, full) or {2, 8} (tuned, and quick)
    at the base d (100 full, 64 quick), trained to the last horizon, evaluated every 25 steps."""
    base = dict(QUICK_BASE) if quick else {}
    d = base.get("d", 100)
    hz = HORIZONS[quick]
    base.update(regime_config(regime, d), steps=hz[-1], eval_every=hz[0] if quick else 25)
    ks = (2, 4, 8) if (regime == HEADLINE and not quick) else (2, 8)
    return {"base_config": base, "ks": ks, "ds": (d,), "horizons": hz, "regime": regime, "seeds": (0,)}


def scaling_configs(quick: bool, k: int = 8) -> list[dict]:
    """The d-scaling sweep (paper regime, k = 8): d ∈ {64, 128, 256} (quick {32, 64, 128}), T = 1.5 d steps."""
    base = dict(QUICK_BASE) if quick else {}
    ds = (32, 64, 128) if quick else (64, 128, 256)
    out = []
    for d in ds:
        T = int(round(STEPS_PER_D * d))
        out.append({**base, **regime_config(HEADLINE, d), "d": d, "k": k, "steps": T, "eval_every": min(25, T)})
    return out


def at_horizon(result: dict, t: int) -> dict:
    """One experiment's numbers at step ``t`` (an evaluation step of its curves): per training, train loss (mean
    batch loss over the preceding window), easy/hard coarse error, fine-task error, common/subclass growth ratio
    of the lucky neurons."""
    out = {}
    for lab in ("coarse", "fine"):
        if lab not in result:
            continue
        c = result[lab]["curves"]
        if t not in c["step"]:
            raise ValueError(f"horizon {t} is not an evaluation step of the run (steps {c['step'][:3]}…)")
        i = c["step"].index(t)
        gs = c["growth_sub"][i]
        out[lab] = {"train_loss": c["train_loss"][i], "easy_err": c["easy_err"][i], "hard_err": c["hard_err"][i],
                    "fine_easy_err": c["fine_easy_err"][i],
                    "growth_ratio": c["growth_common"][i] / gs if gs and gs > 0 else math.inf}
    if "coarse" in out and "fine" in out:
        out["hard_gap"] = out["coarse"]["hard_err"] - out["fine"]["hard_err"]
    return out
