"""FG regimes: the paper-faithful regime (the headline), the small-s regime beside it, the horizons every training
claim is judged at, the settling rule, the d-scaling sweep at a fixed T, and the sensitivity runs that move each
modelling choice the paper leaves open to the paper's side.

Everything here was fixed from the paper's assumptions (FG B.3; ``theory.multiview.paper_regime``) before any run
of this revision was read; docs/fg.md lists each parameter beside its bound.

* ``paper`` (headline): exact patch counts (``counts="exact"``: exactly s common and s subclass patches per easy
  sample, s subclass and s feature-noise patches per hard one; B.3 item 10's s ≥ polylog(d) makes the counts
  concentrate, Eq 213), α′ ∈ [1/log⁴ d, 1/(s log d)] (B.3 item 8 at its edges, constants 1), big-noise norm
  ‖ζ*‖ = log d (item 12 / Lemma E.8, Eq 117); d, P, s, k, m, c_b from m·Q = lucky, σ₀, η, batch: departures from
  B.3 that the sizes force, stated in ``regime_table``.
* ``small_s``: the same with Binomial patch counts of mean s = 3 (B.1 item 5 read literally at small s): 3.6 % of
  easy training samples carry no common patch, which B.3 item 10 excludes. Kept as a second, labelled regime:
  what it shows is a finding about small s, not about the paper.
* ``tuned``: Binomial counts, α′ ∈ [0.25, 0.5] ≈ 7× item 8's bound, ‖ζ*‖ = 2; available to ``regime_config``
  and the sandbox, not run by the checks (docs/fg.md).

Horizons (steps at which every training claim is read, one run per point): full (100, 500, 2000), quick (50, 250,
1000): 20× from the first to the last, evaluated every 100 (quick 50) steps; fixed before any run of this revision
(docs/fg.md).

Settling rule (:func:`settle`): a quantity has settled at T when its readings over the last 20 % of the run
(t ∈ [0.8 T, T], 5 readings) stay within the check's settling tolerance of its value at T. A claim whose judged
quantity has not settled gets no verdict (status ``reported``, "not settled").

The d-scaling sweep trains every d for the same T (the last horizon), so d and the training length are not
mixed; the sensitivity runs (full mode, one seed, quick sizes d = 64) repeat the k-sweep with one choice at a
time moved to the paper's side.
"""
from __future__ import annotations

import math

from theory.multiview import paper_regime

REGIMES = ("paper", "small_s")
ALL_REGIMES = ("paper", "small_s", "tuned")
HEADLINE = "paper"
QUICK_BASE = {"d": 64, "m_coarse": 400, "m_fine": 50, "lucky": 4.0, "n_test": 128}
HORIZONS = {False: (100, 500, 2000), True: (50, 250, 1000)}
EVAL_EVERY = {False: 100, True: 50}
SETTLE_FRACTION = 0.2  # the settled part: the last 20 % of the run
SCALING_DS = {False: (64, 128, 256), True: (32, 64, 128)}


def regime_config(regime: str, d: int, s: float = 3.0) -> dict:
    """The config keys a regime sets at patch dimension d (the rest are ``experiment.DEFAULTS``)."""
    if regime == "paper":
        return {**paper_regime(d, s), "counts": "exact"}
    if regime == "small_s":
        return {**paper_regime(d, s), "counts": "binomial"}
    if regime == "tuned":
        return {"iota_lower": 0.25, "iota_upper": 0.5, "hard_noise_norm": 2.0, "counts": "binomial"}
    raise ValueError(f"regime must be one of {ALL_REGIMES}, got {regime!r}")


def sweep_settings(quick: bool, regime: str = HEADLINE) -> dict:
    """The k-sweep of one regime read at the horizons: k ∈ {2, 4, 8} (headline, full) or {2, 8} (small_s, and
    quick) at the base d (100 full, 64 quick), trained to the last horizon."""
    base = dict(QUICK_BASE) if quick else {}
    d = base.get("d", 100)
    hz = HORIZONS[quick]
    base.update(regime_config(regime, d), steps=hz[-1], eval_every=EVAL_EVERY[quick])
    ks = (2, 4, 8) if (regime == HEADLINE and not quick) else (2, 8)
    return {"base_config": base, "ks": ks, "ds": (d,), "horizons": hz, "regime": regime, "seeds": (0,)}


def scaling_configs(quick: bool, k: int = 8) -> list[dict]:
    """The d-scaling sweep (headline regime, k = 8): d ∈ {64, 128, 256} (quick {32, 64, 128}), every d trained to
    the same last horizon T and read at every horizon."""
    base = dict(QUICK_BASE) if quick else {}
    T = HORIZONS[quick][-1]
    return [{**base, **regime_config(HEADLINE, d), "d": d, "k": k, "steps": T, "eval_every": EVAL_EVERY[quick]}
            for d in SCALING_DS[quick]]


#: the sensitivity runs: (name, the choice moved, config changes, direction). Each is the headline regime's k-sweep
#: at the quick sizes (d = 64, m = 400 / 50, 4 lucky neurons per feature), full horizons. Direction "toward": the
#: choice moved to the paper's side; "away": moved away from it; "edge": the other edge of a garbled condition.
SENSITIVITY = (
    ("baseline", "— (headline regime at d = 64)", {}, "baseline"),
    ("fewer lucky neurons", "lucky 4 → 1 per feature (the paper's (m, c_b) pair implies ≈ 0.1 at d = 100)",
     {"lucky": 1.0}, "toward"),
    ("smaller noise", "σ_ζ√d 0.5 → 0.1 (item 11: 1/log¹⁰ d)", {"noise_norm": 0.1}, "toward"),
    ("much smaller noise", "σ_ζ√d 0.5 → 0.01 (item 11: 1/log¹⁰ d)", {"noise_norm": 0.01}, "toward"),
    ("wider network", "m 400 / 50 → 800 / 100 at the same lucky count (Prop 1: Θ(d^{2+2c₀}))",
     {"m_coarse": 800, "m_fine": 100}, "toward"),
    ("larger batch", "N 32 → 128 (item 15: N ≥ k d log d)", {"batch": 128}, "toward"),
    ("smaller init", "σ₀ 0.01 → 0.001, η 0.02 → 0.002 (item 14: σ₀ ≪ 1, η = Θ(σ₀))", {"sigma0": 0.001, "eta": 0.002},
     "toward"),
    ("bigger ζ*", "‖ζ*‖ log d → 2 log d (item 12's lower edge ω(polylog d): larger is further inside)",
     {"hard_noise_norm": 2 * math.log(QUICK_BASE["d"])}, "toward"),
    ("ζ* at item 12's upper edge", "‖ζ*‖ log d → √d/log d = 1.92 (σ_ζ* = 1/log d per coordinate: the upper edge "
     "of the garbled item 12, whose window is empty at d ≤ 10⁴)", {"hard_noise_norm": math.sqrt(QUICK_BASE["d"]) / math.log(QUICK_BASE["d"])}, "edge"),
    ("Binomial counts", "exact → Binomial counts (away from the paper: the small-s choice)", {"counts": "binomial"},
     "away"),
)


def sensitivity_settings() -> list[dict]:
    """One k-sweep per sensitivity run (full horizons, quick sizes): ``[{"name", "choice", "direction",
    "base_config", "ks", "horizons", "regime"}]``."""
    out = []
    hz = HORIZONS[False]
    for name, choice, change, direction in SENSITIVITY:
        base = {**QUICK_BASE, **regime_config(HEADLINE, QUICK_BASE["d"]), "steps": hz[-1],
                "eval_every": EVAL_EVERY[False], **change}
        out.append({"name": name, "choice": choice, "direction": direction, "base_config": base, "ks": (2, 4, 8),
                    "ds": (QUICK_BASE["d"],), "horizons": hz, "regime": f"sensitivity: {name}"})
    return out


def settle(values_by_step: dict, T: int, tol: float) -> dict:
    """The settling rule: readings ``{step: value}`` over [0.8 T, T] within ``tol`` of the value at T.

    Returns ``{"settled": bool, "drift": max |q(t) − q(T)|, "window": [first, last step], "tol": tol}``; a window
    with fewer than 2 readings is an error (the run was not evaluated often enough to tell)."""
    lo = T * (1 - SETTLE_FRACTION)
    win = sorted(t for t in values_by_step if lo - 1e-9 <= t <= T)
    if len(win) < 2 or win[-1] != T:
        raise ValueError(f"settling needs ≥ 2 readings in [{lo:g}, {T}] ending at T, got steps {win}")
    qT = values_by_step[T]
    drift = max(abs(values_by_step[t] - qT) for t in win)
    return {"settled": bool(drift <= tol), "drift": float(drift), "window": [win[0], win[-1]], "tol": float(tol)}


def settle_steps(T: int, eval_every: int) -> list[int]:
    """The evaluation steps in the settled window [0.8 T, T]."""
    lo = T * (1 - SETTLE_FRACTION)
    return [t for t in range(0, T + 1, eval_every) if t >= lo - 1e-9]


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
