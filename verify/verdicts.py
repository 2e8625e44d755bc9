"""How a check's runs become a verdict's parts: the regime rule, the miss classes of a negative control, JSON values.

The regime rule (one rule for every verdict): a paper's claim is refuted only where the conditions the paper states
for it hold in the setup. A run that does not hold while a condition it measured (``Result.regime``) fails gives no
refutation: it becomes ``undecided`` with the failed conditions named — a finding *in that regime*; a run that holds
there keeps its verdict and says, in its finding, that the regime is outside the paper's conditions.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np


def outside_regime(r):
    """``r`` (a Result) read against the paper's stated conditions it measured (``Result.regime``). Outside them (a
    condition failed) the run is a finding in that regime either way: one that does not hold gets ``undecided``
    (never a refutation), and so does one that holds (never a pass: agreement in a regime the paper does not speak
    of verifies nothing it states), with a finding saying that it held there. The rule is symmetric, so a check
    whose paper's conditions cannot be met here can neither confirm nor contradict the paper."""
    if r.undecided or not r.regime:
        return r
    failed = {k: v for k, v in r.regime.items() if not v["holds"]}
    if not failed:
        return r
    where = "; ".join(f"{k} (measured: {v.get('measured')})" for k, v in failed.items())
    if r.holds:
        note = (f"Holds in a regime outside the paper's stated conditions — {where}: agreement in this regime, "
                "not a verification under the paper's own conditions.")
        r.finding = f"{note} {r.finding}" if r.finding else note
        r.undecided = (f"holds, but outside the paper's stated conditions — {where}: a finding in this regime, not "
                       "a verification")
        return r
    r.undecided = (f"outside the paper's stated conditions — {where}: what was measured is a finding in this regime, "
                   "not a refutation")
    return r


MISS_CLASSES = (  # (upper bound on a negative control's miss in tolerance units, class)
    (1.0, "HELD (broken control)"),
    (10.0, "near miss"),
    (1e3, "clear"),
    (math.inf, "far: catches nothing subtle?"),
)


def miss_class(miss: float | None, kind: str = "") -> str:
    """How far a negative control misses, in words: near miss ≤ 10, clear ≤ 10³, far > 10³ tolerances.

    An infinite miss of a symbolic comparison is "exact" (a symbolic identity either holds or not);
    elsewhere it is "far". None (the check sets no ``Result.miss``) is "not recorded".
    """
    if miss is None:
        return "not recorded"
    m = float(miss)
    if math.isinf(m) and kind.startswith("symbolic"):
        return "exact (symbolic)"
    return next(label for bound, label in MISS_CLASSES if m <= bound)


def to_jsonable(x: Any) -> Any:
    """numpy scalars/arrays, paths, tuples and non-finite floats to plain JSON values."""
    if isinstance(x, dict):
        return {str(k): to_jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return to_jsonable(x.tolist())
    if isinstance(x, (np.bool_, bool)):
        return bool(x)
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating, float)):
        v = float(x)
        return v if math.isfinite(v) else str(v)
    if isinstance(x, Path):
        return str(x)
    if x is None or isinstance(x, (str, int)):
        return x
    return str(x)


