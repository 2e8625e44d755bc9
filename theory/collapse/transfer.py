"""VC Eq 6: the mean log odds gain (MLOG) of linear-probe transfer, the downstream figure the metrics predict."""
from __future__ import annotations

import numpy as np

from theory.collapse.stats import check_real_numeric
from theory.validate import as_float_array


def mlog(downstream, pretrain, percent: bool = False) -> np.ndarray | float:
    """Mean log odds gain, VC Eq 6: (1/n) Σ_i log(p_i/(1 − p_i)) − log(p_pre/(1 − p_pre)) (natural log).

    downstream: (..., n_tasks) accuracies; pretrain: (...) accuracies; fractions in (0, 1), or percent in
    (0, 100) with ``percent=True``.
    """
    if not isinstance(percent, (bool, np.bool_)):
        raise ValueError(f"percent: must be True or False, got {percent!r}")
    d = as_float_array(check_real_numeric(downstream, "downstream"), "downstream")
    q = as_float_array(check_real_numeric(pretrain, "pretrain"), "pretrain")
    if d.ndim == 0:
        raise ValueError("downstream: expected an array (..., n_tasks) of accuracies, got a scalar")
    if q.shape != d.shape[:-1]:
        raise ValueError(f"pretrain: shape {q.shape} must equal downstream's leading shape {d.shape[:-1]} "
                         f"(downstream is (..., n_tasks) = {d.shape})")
    if percent:
        d, q = d / 100.0, q / 100.0
    for a, nm in ((d, "downstream"), (q, "pretrain")):
        if np.any((a <= 0) | (a >= 1)):
            hint = " (pass percent=True for percentages)" if np.all(a < 100) and np.any(a > 1) else ""
            raise ValueError(f"{nm}: accuracies must lie strictly inside (0, 1){hint}")
    lo = np.log(d / (1 - d)).mean(axis=-1) - np.log(q / (1 - q))
    return float(lo) if np.ndim(lo) == 0 else lo
