"""RD Sec 3.1: the numerical rank of Gaussian matrices against the Marchenko–Pastur law (with a planted BBP spike).
Sizes in ``sims.rank_nets.rd_settings`` (shared with paper_figs/rd.py); the conventions of
:mod:`verify.checks.rd.rank` (negative and positive controls, ``miss`` in tolerance units)."""
from __future__ import annotations

import numpy as np

from sims import marchenko_pastur as mp
from sims import rank_nets as nets
from theory import rank as R
from verify.checks.rd import _controls as C
from verify.checks.rd.rank import _fmt
from verify.registry import Result, check


@check(
    "rd.marchenko_pastur", equation="Sec 3.1, Eq 4", kind="sim",
    tolerance="|mean Rank_ε − MP prediction| ≤ 4·SE + 2% of min(N, d)",
    figures=("rd.marchenko_pastur",),
    tolerance_reason="Monte Carlo standard error plus a finite-size allowance: the MP law is the N → ∞ limit and the "
                     "threshold ε·σ_1 moves with the Tracy–Widom fluctuation of σ_1 (O(N^-2/3)) and, with a planted "
                     "signal, with the O(N^-1/2) fluctuation of the spikes",
    negative_control="bug: the threshold's σ_1 taken at the MP bulk edge 1+√γ although a planted spike sits above it "
                     "(the BBP outlier ignored)",
    positive_control="ranks drawn from an MP law written out in the check, independently of theory.rank (edges "
                     "(1 ± √γ)², the density integrated by quadrature, the BBP spike in closed form): r + Binomial(min − r, "
                     "P(λ ≥ ε²σ_top²)) per trial, compared with the library's prediction theory.rank.mp_numerical_rank "
                     "by the same test; and the library's edges mp_edges(γ) and prediction must equal the closed forms "
                     "(|Δedge| ≤ 1e−12, |Δprediction| ≤ 1e−6·min(N, d)). A wrong law in theory.rank (e.g. edges "
                     "(1 ± γ)²) fails the control: the check ends 'fail', never 'refuted'", cost=7,
)
def marchenko_pastur(ctx, planted, positive=False):
    st = nets.rd_settings(ctx.quick)["mp"]
    d = None if positive else mp.mp_rank_data(st["cases"], st["trials"], seed=ctx.seed)
    rng = ctx.rng("binomial")
    miss, rows, law_miss = 0.0, [], 0.0
    for i, (N, dd, e, r, th) in enumerate(st["cases"]):
        m = min(N, dd)
        pred = R.mp_numerical_rank(N, dd, e, r, 0.0 if planted else th)
        if positive:
            indep, g = C.mp_prediction_closed_form(N, dd, e, r, th)
            edges = np.array([(1 - np.sqrt(g)) ** 2, (1 + np.sqrt(g)) ** 2])
            law_miss = max(law_miss, float(np.max(np.abs(np.asarray(R.mp_edges(g)) - edges))) / 1e-12,
                           abs(pred - indep) / (1e-6 * m))
            ranks = r + rng.binomial(m - r, min(max((indep - r) / (m - r), 0.0), 1.0), size=st["trials"]).astype(float)
        else:
            ranks = np.asarray(d[f"ranks_{i}"], dtype=float)
        tol = 4 * ranks.std(ddof=1) / np.sqrt(ranks.size) + 0.02 * m
        miss = max(miss, abs(ranks.mean() - pred) / tol)
        rows.append({"N×d": f"{N}×{dd}", "ε": e, "signal rank, θ": [r, th], "mean Rank_ε": _fmt(ranks.mean(), 2),
                     "prediction": _fmt(pred, 2), "tol": _fmt(tol, 2), "miss": _fmt(abs(ranks.mean() - pred) / tol, 2)})
        if positive:
            rows[-1]["closed-form prediction (independent)"] = _fmt(indep, 4)
    details = {"cases": rows, "trials": st["trials"],
               "prediction": "r + (min − r)·P_MP(λ ≥ ε²σ_top²), σ_top = bulk edge 1+√γ or the BBP spike"}
    if positive:
        miss = max(miss, law_miss)
        details["positive control: library edges/prediction vs closed form, in tolerance units"] = _fmt(law_miss, 4)
    finding = None
    if not (planted or positive) and miss > 1:
        w = max(rows, key=lambda row: row["miss"])
        finding = (f"The Monte Carlo numerical rank of Gaussian matrices does not match the Marchenko–Pastur "
                   f"prediction of Sec 3.1: worst case {w['N×d']}, ε = {w['ε']}, signal rank/θ {w['signal rank, θ']}: "
                   f"mean Rank_ε {w['mean Rank_ε']} vs prediction {w['prediction']} (tolerance {w['tol']}, miss "
                   f"{w['miss']}; {st['trials']} trials per case).")
    return Result(measured=[r["mean Rank_ε"] for r in rows], expected=[r["prediction"] for r in rows],
                  holds=bool(miss <= 1), miss=float(miss), finding=finding, details=details)
