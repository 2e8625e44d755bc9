"""A sweep's memory, from the points' parameters alone, checked before any point runs or any file is written.

Each experiment may declare ``estimate(params) -> {"bytes", "flops"}`` (:class:`verify.sweep.schema.Experiment`).
:func:`check` takes the points still to run: the largest must fit this machine's available memory
(:func:`sims.resources.require`; refused otherwise with the estimate, naming the point), and the local pool runs
no more points at once than fit side by side (fewer workers, said on stderr). On a Dask cluster the points run
elsewhere: nothing is checked here, and a worker refuses a point that does not fit it (``run_experiment`` checks
its own config).
"""
from __future__ import annotations

import os
import sys

from sims import resources
from verify.sweep.schema import REPLICATE


def estimates(exp, records: list[dict]) -> list[dict | None]:
    """The experiment's estimate of each record's point (None where it declares none)."""
    if exp.estimate is None:
        return [None] * len(records)
    return [exp.estimate({k: v for k, v in r["params"].items() if k != REPLICATE}) for r in records]


def _short(params: dict, varying: list[str]) -> str:
    shown = {k: params[k] for k in varying if k in params} or params
    return ", ".join(f"{k} = {v}" for k, v in shown.items())


def check(exp, records: list[dict], sched: str, workers: int | None, force: bool | None = None) -> dict:
    """Refuse (:class:`sims.resources.InsufficientMemory`) a sweep whose largest point does not fit; return
    ``{"workers": the local pool size to use (or the one given), "bytes": the largest point's estimate,
    "flops": the sum of the points' flops (None if not estimated)}``."""
    est = estimates(exp, records)
    known = [(e, r) for e, r in zip(est, records) if e is not None]
    out = {"workers": workers, "bytes": None, "flops": None}
    if not known:
        return out
    flops = [e.get("flops") for e, _ in known]
    out["flops"] = sum(flops) if all(f is not None for f in flops) else None
    big, rec = max(known, key=lambda er: er[0]["bytes"])
    out["bytes"] = big["bytes"]
    if sched not in ("local", "serial"):
        return out
    from verify.sweep.summary import axes

    varying = axes(records) if len(records) > 1 else []
    resources.require(big["bytes"], f"sweep {exp.name}: its largest point ({_short(rec['params'], varying)})",
                      force=force, hint="leave that point out or make it smaller")
    if sched == "serial":
        return out
    n = min(workers or os.cpu_count() or 1, len(records))
    have, _source = resources.available()
    forced = resources.is_forced() if force is None else force
    if n > 1 and have is not None and not forced and n * big["bytes"] > 0.9 * have:
        fit = max(1, int(0.9 * have // big["bytes"]))
        print(f"sweep: {n} points at once would need {resources.fmt_bytes(n * big['bytes'])} (largest point "
              f"{resources.fmt_bytes(big['bytes'])}), {resources.fmt_bytes(have)} is available: running {fit} "
              f"worker(s)", file=sys.stderr)
        out["workers"] = fit
    return out
