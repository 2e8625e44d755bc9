"""sims.geometry.distributed: two gloo processes on 127.0.0.1 (torch.multiprocessing.spawn), each capturing half the
batches and all-reducing (explicitly, or by ``capture`` itself when a process group is up), give the single-process state's metrics and CKA to ~1e-12 on both ranks; a Dask
LocalCluster capturing four shards and merging them on the cluster equals one pass."""
from __future__ import annotations

import pickle
import socket

import numpy as np
import torch

from sims.geometry import all_metrics, capture, cka_matrix
from sims.geometry.distributed import all_reduce, dask_capture

LAYERS = ["0", "2"]


def _net():
    g = torch.Generator().manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.Tanh(), torch.nn.Linear(16, 8), torch.nn.ReLU())
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.4)
        m[0].bias.copy_(-m[0].weight @ torch.full((5,), 43.0))  # inputs sit near 43: tanh not saturated
    return m


def _batches(lo=0, hi=8):
    g = torch.Generator().manual_seed(1)
    y = torch.arange(256) % 3
    X = torch.randn(256, 5, generator=g) * 2 + 40.0 + 3.0 * y[:, None]  # far from zero: the ranks' origins differ
    return [(X[32 * i:32 * (i + 1)], y[32 * i:32 * (i + 1)]) for i in range(8)][lo:hi]


def _summary(st) -> dict:
    m = all_metrics(st)
    return {"n": st.n, "cka": cka_matrix(st, debiased=True)["matrix"][0][1],
            "cka0": cka_matrix(st)["matrix"][0][1],
            **{f"{k}.{key}": m[k][key] for k in LAYERS for key in ("effective_rank", "stable_rank", "nc1", "cdnv")}}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, world: int, port: int, out: str) -> None:
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        torch.set_num_threads(1)
        half = 8 // world
        # rank 1 gets its half in a different batch order: the order of batches does not matter
        mine = _batches(rank * half, (rank + 1) * half)[::(-1 if rank else 1)]
        st = capture(_net(), mine, LAYERS, n_classes=3, progress=False, device="cpu", reduce=False)
        total = all_reduce(st)
        auto = capture(_net(), mine, LAYERS, n_classes=3, progress=False, device="cpu")  # reduces by itself
        with open(f"{out}.{rank}", "wb") as f:
            pickle.dump((_summary(total), _summary(auto)), f)
    finally:
        dist.destroy_process_group()


def _close(a: dict, b: dict, tol: float, what: str = "") -> None:
    for k in a:
        assert abs(a[k] - b[k]) <= tol * max(abs(b[k]), 1e-300), (k, a[k], b[k])
    worst = max(abs(a[k] - b[k]) / max(abs(b[k]), 1e-300) for k in a)
    print(f"{what}: largest relative difference from one process {worst:.2e}")


def test_two_gloo_processes_equal_one_process(tmp_path):
    ref = _summary(capture(_net(), _batches(), LAYERS, n_classes=3, progress=False))
    out = str(tmp_path / "res")
    torch.multiprocessing.spawn(_worker, args=(2, _free_port(), out), nprocs=2, join=True)
    got = [pickle.load(open(f"{out}.{r}", "rb")) for r in range(2)]
    assert got[0] == got[1]  # every rank holds the identical state
    (manual, auto), _ = got
    assert manual["n"] == auto["n"] == 256 and manual == auto
    _close(manual, ref, 1e-12, "two gloo processes")


def test_all_reduce_without_a_process_group_is_a_copy():
    st = capture(_net(), _batches(0, 2), LAYERS, n_classes=3, progress=False)
    c = all_reduce(st)
    assert c is not st and c.n == st.n and np.array_equal(c.layers["0"]["C"], st.layers["0"]["C"])


def _shard_task(k: int):
    return capture(_net(), _batches(2 * k, 2 * k + 2), LAYERS, n_classes=3, progress=False, device="cpu")


def test_dask_local_cluster_merges_shards_like_one_pass():
    from distributed import Client, LocalCluster

    ref = _summary(capture(_net(), _batches(), LAYERS, n_classes=3, progress=False))
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cl, \
            Client(cl) as client:
        st = dask_capture(client, _shard_task, [3, 1, 0, 2])
    _close(_summary(st), ref, 1e-12, "Dask, 4 shards")
