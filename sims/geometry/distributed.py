"""Merging one pass's statistics across processes and machines.

* :func:`all_reduce` — under ``torch.distributed`` (``torchrun``; gloo on CPU, NCCL on GPU): every rank
  captures its own shard, then the ranks agree on one power of two per layer (an all-reduce MAX) and one
  origin per layer (the count-weighted mean of the ranks' origins, an all-reduce SUM, identical on every
  rank), re-express their sums about it with the exact shift identities, and all-reduce SUM one flat float64
  vector of every sum. Every rank ends with the same state, equal to a single-process pass to rounding.
* :func:`dask_capture` — data on several machines: one task per shard returns its (picklable) state, and the
  states are merged pairwise in a tree on the cluster (:meth:`GeometryState.merge`, exact identities).
"""
from __future__ import annotations

import numpy as np

from sims.geometry.stats import LOW, GeometryState, merge_all


def _flat_names(st: GeometryState) -> list:
    keys = [("L", k, a) for k in st.dims for a in ("s", "C", "u", "w", "counts", "S", "T", "U")]
    return keys + [("P", ab, a) for ab in sorted(st.pairs) for a in ("C", "ua", "ub", "w")]


def _get(st, key):
    kind, k, a = key
    return (st.layers[k] if kind == "L" else st.pairs[k])[a]


def _set(st, key, v):
    kind, k, a = key
    (st.layers[k] if kind == "L" else st.pairs[k])[a] = v


def init_from_env(device) -> tuple[int, int]:
    """(rank, world size): under ``torchrun`` (WORLD_SIZE > 1 in the environment) the default process group is
    initialised here if it is not yet (NCCL for a CUDA device, else gloo); (0, 1) otherwise."""
    import os

    import torch
    import torch.distributed as dist

    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1 or not dist.is_available():
        return 0, 1
    if not dist.is_initialized():
        cuda = torch.device(device).type == "cuda"
        if cuda:
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group("nccl" if cuda else "gloo")
    return dist.get_rank(), dist.get_world_size()


def all_reduce(st: GeometryState, group=None, device=None) -> GeometryState:
    """The state of all ranks' data on every rank (module doc). ``st`` is not changed. Without an initialised
    process group it returns a copy. ``device``: where the collective's tensors live (default: CUDA for NCCL)."""
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return st.copy()
    if device is None:
        device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend(group) == "nccl" \
            else torch.device("cpu")
    sigs = [None] * dist.get_world_size(group)
    dist.all_gather_object(sigs, (st.signature(), st.describe()), group=group)
    if any(s[0] != sigs[0][0] for s in sigs):
        bad = next(i for i, s in enumerate(sigs) if s[0] != sigs[0][0])
        raise ValueError(f"all_reduce: rank {bad} captured different layers ({sigs[bad][1]}) than rank 0 "
                         f"({sigs[0][1]})")
    names = list(st.dims)

    def reduce(v: np.ndarray, op) -> np.ndarray:
        t = torch.as_tensor(np.ascontiguousarray(v, dtype=np.float64), device=device).clone()
        dist.all_reduce(t, op=op, group=group)
        return t.cpu().numpy()

    e_loc = np.array([float(st.layers[k]["e"]) if st.n else float(LOW) for k in names])
    e = reduce(e_loc, dist.ReduceOp.MAX).astype(np.int64)
    n_tot = int(reduce(np.array([float(st.n)]), dist.ReduceOp.SUM)[0])
    if n_tot == 0:
        raise ValueError("all_reduce: no rank captured any sample")
    loc = st.rescaled({k: int(e[i]) for i, k in enumerate(names)}) if st.n else st.copy()
    # the common origin: Σ_r n_r o_r / N (identical bits on every rank: one all-reduce)
    o_parts = np.concatenate([st.n * st.layers[k]["o"] for k in names])
    o_all = reduce(o_parts, dist.ReduceOp.SUM) / n_tot
    origins, at = {}, 0
    for k in names:
        origins[k] = o_all[at:at + st.dims[k]]
        at += st.dims[k]
    if st.n:
        loc = loc.moved_to(origins)
    keys = _flat_names(loc)
    parts = [np.ravel(np.asarray(_get(loc, key), dtype=np.float64)) for key in keys]
    if not st.n:
        parts = [np.zeros_like(p) for p in parts]
    flat = reduce(np.concatenate(parts + [np.array([float(st.n)])]), dist.ReduceOp.SUM)
    out = loc.copy()
    at = 0
    for key, p in zip(keys, parts):
        shape = np.shape(_get(loc, key))
        _set(out, key, flat[at:at + p.size].reshape(shape) if shape else np.float64(flat[at]))
        at += p.size
    out.n = int(round(flat[at]))
    for i, k in enumerate(names):
        out.layers[k]["o"] = origins[k].copy()
        out.layers[k]["e"] = np.int64(e[i])
    eps = reduce(np.array([st.eps[k] for k in names]), dist.ReduceOp.MAX)
    out.eps = {k: float(eps[i]) for i, k in enumerate(names)}
    reused = [None] * dist.get_world_size(group)
    dist.all_gather_object(reused, st.reused, group=group)
    out.reused = {}
    for r in reused:
        for k, v in r.items():
            out.reused[k] = max(v, out.reused.get(k, 0))
    return out


def dask_capture(client, task, shards) -> GeometryState:
    """Run ``task(shard) -> GeometryState`` for every shard on a Dask cluster and merge the states there.

    ``task`` must be importable by the workers (a module-level function); each returns the statistics of its
    shard (e.g. ``capture`` over the files it holds). The merge is a balanced tree of
    :meth:`GeometryState.merge` tasks; the result equals a single pass over all shards to rounding.
    """
    shards = list(shards)
    if not shards:
        raise ValueError("dask_capture: no shards")
    futs = client.map(task, shards, pure=False)
    while len(futs) > 1:
        nxt = [client.submit(_merge2, futs[i], futs[i + 1], pure=False) for i in range(0, len(futs) - 1, 2)]
        if len(futs) % 2:
            nxt.append(futs[-1])
        futs = nxt
    out = futs[0].result()
    if not isinstance(out, GeometryState):
        raise ValueError(f"dask_capture: the task returned a {type(out).__name__}, not a GeometryState")
    return out


def _merge2(a: GeometryState, b: GeometryState) -> GeometryState:
    return a.merge(b)


__all__ = ["all_reduce", "dask_capture", "init_from_env", "merge_all"]
