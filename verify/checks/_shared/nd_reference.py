"""The independent reference for ND Table 1's columns that the dependency verdicts read (nd.table1_metrics,
rd.independence_deficit, nd.between_networks): a plain recomputation every library number is checked against."""
from __future__ import annotations

import numpy as np


def plain_check(m: dict, St, th, i: int, offset=None, y=None) -> None:
    """Independent reference for the Table 1 columns the verdicts read (not sims.real.analysis.dependency_metrics):
    f̂_i = Σ_{j≠i} θ_j f_j by np.delete, the replaced logit put in a copy, argmaxes against the labels (or the
    unmodified prediction). A library slip there (e.g. accuracies read from the unmodified prediction, an offset
    dropped) raises, so the check fails instead of giving a verdict (docs/real.md)."""
    St = np.asarray(St, dtype=np.float64)
    pred = np.delete(St, i, axis=1) @ np.delete(np.asarray(th, dtype=np.float64), i)
    base = St if offset is None else St + offset
    R = base.copy()
    R[:, i] = pred + (0.0 if offset is None else offset[i])
    y0 = base.argmax(1)
    yy = y0 if y is None else np.asarray(y)
    hit, pos = R.argmax(1) == yy, yy == i
    abs_err = float(np.mean(np.abs(St[:, i] - pred)))
    spread = float(np.mean(np.abs(St[:, i] - float(np.mean(St[:, i])))))
    ref = {"abs_err": abs_err, "rel_err": abs_err / max(float(np.mean(np.abs(St[:, i]))), 1e-300),
           "spread_rel_err": abs_err / max(spread, 1e-300),
           "acc": float(hit.mean()), "ori_acc": float(np.mean(y0 == yy)),
           "pos_acc": float(hit[pos].mean()) if pos.any() else float("nan"),
           "ori_pos_acc": float(np.mean(y0[pos] == i)) if pos.any() else float("nan")}
    bad = [k for k in ("abs_err", "rel_err", "spread_rel_err")
           if not abs(m[k] - ref[k]) <= 1e-9 * max(abs(ref[k]), 1e-300)]
    bad += [k for k in ("acc", "ori_acc", "pos_acc", "ori_pos_acc")
            if not (m[k] == ref[k] or (np.isnan(m[k]) and np.isnan(ref[k])))]
    if bad:
        raise ValueError(f"category {i}: the library's Table 1 columns {bad} differ from a plain recomputation "
                         f"({', '.join(f'{k} {m[k]!r} vs {ref[k]!r}' for k in bad)})")
