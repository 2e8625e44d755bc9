"""VC Eq 6 (mean log odds gain) through the library, cross-checked against the equation written out here."""
from __future__ import annotations

import math

import numpy as np

from theory import collapse as vc


def mlog_checked(downstream, pretrain) -> np.ndarray:
    """theory.collapse.mlog(downstream, pretrain) after checking it against Eq 6 computed term by term in Python
    floats: (1/n) Σ_i log(p_i/(1 − p_i)) − log(p_pre/(1 − p_pre)). Both are the same float64 formula, so they agree to
    a few ulps of the largest log-odds term (bound 1e-12·(1 + Σ|terms|)); a disagreement is a library bug (a
    ValueError: the check fails) and never reaches a verdict."""
    d = np.asarray(downstream, float)
    q = np.asarray(pretrain, float)
    got = np.asarray(vc.mlog(d, q), float)
    rows = d.reshape(-1, d.shape[-1])
    for k, (row, pre) in enumerate(zip(rows, q.reshape(-1))):
        terms = [math.log(p / (1.0 - p)) for p in row]
        ref = math.fsum(terms) / len(terms) - math.log(pre / (1.0 - pre))
        bound = 1e-12 * (1.0 + sum(abs(t) for t in terms) + abs(math.log(pre / (1.0 - pre))))
        if not abs(got.reshape(-1)[k] - ref) <= bound:
            raise ValueError(f"theory.collapse.mlog disagrees with VC Eq 6 written out: row {k}: "
                             f"{got.reshape(-1)[k]!r} vs {ref!r} (bound {bound:.1e}): a library bug, no verdict")
    return got
