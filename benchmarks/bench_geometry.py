"""Benchmark: sims.geometry's one-pass statistics against their floors, in the same run, on the same device.

1. Per layer (width p, N samples in batches, 10 classes): the whole metric set's accumulation (shifted float64
   sums: C, Σ‖x‖²x, Σ‖x‖⁴, class sums, class ‖x‖² sums, unit-vector sums — ``sims.geometry.stats.Accumulator``)
   against the bare GEMM floor Σ HᵀH (``addmm_`` of the same features, already float64 on the device). Goal ≤ 2×.
   The read-out of every metric from the state (eigendecompositions, O(p³), independent of N) is timed apart.
2. Debiased linear CKA of two layers at N = 20 000: one pass (the Accumulator's cross-moments, then
   ``CrossMoments.cka``) against the n×n Gram implementation (Song et al.'s unbiased HSIC from K̃ = XXᵀ, L̃ = YYᵀ with
   zeroed diagonals, in row blocks so that it fits in memory). Goal ≥ 10× and equal to 1e-10 relative.
3. Peak memory of a capture of N and 2N samples (data generated batch by batch), each in a fresh process:
   resident set size on the CPU, ``torch.cuda.max_memory_allocated`` on CUDA. Goal: flat.

    python benchmarks/bench_geometry.py [--n 20000] [--widths 128,512,1024] [--batch 256] [--threads 1]
                                        [--device cpu] [--gpu] [--tiny] [--json PATH]

Compile/warm-up is excluded (one untimed batch first); times are the best of ``--repeat``. On the shared 2-core
machine quote ``uptime``'s load with the numbers.
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _sync(dev):
    import torch

    if torch.device(dev).type == "cuda":
        torch.cuda.synchronize()


def _best(fn, repeat, dev):
    best = float("inf")
    for _ in range(repeat):
        _sync(dev)
        t = time.perf_counter()
        fn()
        _sync(dev)
        best = min(best, time.perf_counter() - t)
    return best


def per_layer(n, widths, batch, dev, repeat):
    import torch

    from sims.geometry.metrics import layer_metrics
    from sims.geometry.stats import Accumulator

    g = torch.Generator(device="cpu").manual_seed(0)
    rows = []
    for p in widths:
        nb = max(1, n // batch)
        mix = torch.randn(p, p, generator=g) / p ** 0.5
        H = [(torch.randn(batch, p, generator=g) @ mix + 3.0).float().to(dev) for _ in range(nb)]
        y = [torch.randint(0, 10, (batch,), generator=g).to(dev) for _ in range(nb)]
        H64 = [h.double() for h in H]
        C = torch.zeros(p, p, dtype=torch.float64, device=dev)

        def floor():
            C.zero_()
            for h in H64:
                C.addmm_(h.T, h)

        def full():
            acc = Accumulator({"h": p}, 10, (), dev)
            for h, yy in zip(H, y):
                acc.update({"h": h}, yy)
            return acc

        floor()
        full()  # warm-up
        t_floor = t_full = float("inf")
        for _ in range(repeat):  # interleaved: a load change on a shared machine hits both alike
            t_floor = min(t_floor, _best(floor, 1, dev))
            t_full = min(t_full, _best(full, 1, dev))
        st = full().state()
        t = time.perf_counter()
        layer_metrics(st, "h")
        t_read = time.perf_counter() - t
        rows.append({"p": p, "n": nb * batch, "floor_s": t_floor, "metric_set_s": t_full, "ratio": t_full / t_floor,
                     "readout_s": t_read})
    return rows


def gram_debiased_hsic_terms(X, Y, block=2048):
    """Song et al.'s unbiased HSIC(X, Y), HSIC(X, X), HSIC(Y, Y) from the n×n Gram matrices K = XXᵀ, L = YYᵀ with
    zeroed diagonals (torch float64 on the data's device, in row blocks of ``block`` so that it fits in memory)."""
    import torch

    n = X.shape[0]
    K1 = X @ X.sum(0) - (X * X).sum(1)  # K̃1
    L1 = Y @ Y.sum(0) - (Y * Y).sum(1)
    tr = {"xy": 0.0, "xx": 0.0, "yy": 0.0}
    for s in range(0, n, block):
        Kb, Lb = X[s:s + block] @ X.T, Y[s:s + block] @ Y.T
        idx = torch.arange(s, min(s + block, n), device=X.device)
        Kb[idx - s, idx] = 0.0
        Lb[idx - s, idx] = 0.0
        tr["xy"] += float((Kb * Lb).sum())
        tr["xx"] += float((Kb * Kb).sum())
        tr["yy"] += float((Lb * Lb).sum())

    def h(t, a1, b1):
        return (t + float(a1.sum()) * float(b1.sum()) / ((n - 1) * (n - 2)) - 2.0 / (n - 2) * float(a1 @ b1)) \
            / (n * (n - 3))
    return h(tr["xy"], K1, L1), h(tr["xx"], K1, K1), h(tr["yy"], L1, L1)


def cka_vs_gram(n, p, q, batch, dev):
    import numpy as np
    import torch

    from sims.geometry.stats import Accumulator

    rng = np.random.default_rng(1)
    Z = rng.standard_normal((n, 32))
    X = Z @ rng.standard_normal((32, p)) + 0.5 * rng.standard_normal((n, p)) + 5.0
    Y = np.tanh(Z @ rng.standard_normal((32, q))) + 0.5 * rng.standard_normal((n, q)) - 2.0
    Xt, Yt = torch.as_tensor(X, device=dev), torch.as_tensor(Y, device=dev)

    def one_pass():
        acc = Accumulator({"x": p, "y": q}, None, [("x", "y")], dev)
        for s in range(0, n, batch):
            acc.update({"x": Xt[s:s + batch], "y": Yt[s:s + batch]})
        return acc.state().cross_moments("x", "y").cka(debiased=True)

    one_pass()
    _sync(dev)
    t = time.perf_counter()
    v1 = one_pass()
    _sync(dev)
    t1 = time.perf_counter() - t
    # HSIC₁ is translation-invariant; centring (outside the timing) keeps the Gram sums small
    Xc, Yc = torch.as_tensor(X - X.mean(0), device=dev), torch.as_tensor(Y - Y.mean(0), device=dev)
    gram_debiased_hsic_terms(Xc[:512], Yc[:512])  # warm-up
    _sync(dev)
    t = time.perf_counter()
    hxy, hxx, hyy = gram_debiased_hsic_terms(Xc, Yc)
    v2 = hxy / np.sqrt(hxx * hyy)
    _sync(dev)
    t2 = time.perf_counter() - t
    return {"n": n, "p": p, "q": q, "one_pass_s": t1, "gram_s": t2, "speedup": t2 / t1, "cka_one_pass": v1,
            "cka_gram": v2, "rel_diff": abs(v1 - v2) / abs(v2)}


CHILD = r"""
import json, resource, sys, torch
sys.path.insert(0, {root!r})
from sims.geometry import capture
n, p, batch, dev = {n}, {p}, {batch}, {dev!r}
net = torch.nn.Sequential(torch.nn.Linear(p, p), torch.nn.ReLU(), torch.nn.Linear(p, p)).to(dev)
def gen():
    g = torch.Generator().manual_seed(0)
    for s in range(0, n, batch):
        yield torch.randn(batch, p, generator=g), torch.randint(0, 10, (batch,), generator=g)
st = capture(net, gen(), ["0", "1", "2"], n_classes=10, device=dev, progress=False)
cuda = torch.cuda.max_memory_allocated() if torch.device(dev).type == "cuda" else None
def hwm():  # this process's own peak (ru_maxrss would carry the parent's peak across fork + exec)
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"n": st.n, "rss_mib": hwm(),
                  "cuda_mib": None if cuda is None else cuda / 2 ** 20}}))
"""


def peak_memory(n, p, batch, dev):
    """[{n, rss_mib, cuda_mib}] for N and 2N: on CUDA in this process (peak allocated, reset before each), on the
    CPU in a fresh process each (peak resident set)."""
    import torch

    if torch.device(dev).type == "cuda":
        from sims.geometry import capture

        net = torch.nn.Sequential(torch.nn.Linear(p, p), torch.nn.ReLU(), torch.nn.Linear(p, p)).to(dev)
        res = []
        for m in (n, 2 * n):
            def gen(m=m):
                g = torch.Generator().manual_seed(0)
                for s in range(0, m, batch):
                    yield torch.randn(batch, p, generator=g), torch.randint(0, 10, (batch,), generator=g)
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            st = capture(net, gen(), ["0", "1", "2"], n_classes=10, device=dev, progress=False)
            res.append({"n": st.n, "rss_mib": None, "cuda_mib": torch.cuda.max_memory_allocated() / 2 ** 20})
        return res
    out = []
    for m in (n, 2 * n):
        code = CHILD.format(root=str(ROOT), n=m, p=p, batch=batch, dev=dev)
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
        if r.returncode:
            raise RuntimeError(r.stderr[-2000:])
        out.append(json.loads(r.stdout.strip().splitlines()[-1]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--widths", default="128,512,1024")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--cka-width", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--device", default=None, help="torch device (default: cuda when present, else cpu)")
    ap.add_argument("--gpu", action="store_true", help="run on CUDA (skipped with a note if there is none)")
    ap.add_argument("--tiny", action="store_true", help="seconds: N = 512, widths 16, 32")
    ap.add_argument("--threads", type=int, default=1, help="torch and BLAS threads on the CPU (default 1: on a "
                    "loaded machine thread pools spin; both sides of every ratio use the same setting)")
    ap.add_argument("--json", metavar="PATH")
    a = ap.parse_args()
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(a.threads)
    threadpool_limits(a.threads)

    if a.tiny:
        a.n, a.widths, a.batch, a.cka_width, a.repeat = 512, "16,32", 64, 16, 1
    dev = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if a.gpu and torch.device(dev).type == "cuda" and not torch.cuda.is_available():
        print("bench_geometry: --gpu given but CUDA is not available; skipped")
        return
    widths = [int(w) for w in a.widths.split(",")]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"bench_geometry on {dev} ({torch.cuda.get_device_name() if torch.device(dev).type == 'cuda' else 'CPU'}, "
          f"{os.cpu_count()} cores, {a.threads} thread(s), load {load:.1f}), N = {a.n}, batch {a.batch}, "
          f"torch {torch.__version__}")
    rows = per_layer(a.n, widths, a.batch, dev, a.repeat)
    print("1. per layer: whole metric set's one-pass accumulation vs the bare GEMM floor Σ HᵀH (goal <= 2x)")
    print(f"   {'p':>6} {'floor s':>9} {'metric set s':>13} {'ratio':>6} {'read-out s':>11}")
    for r in rows:
        print(f"   {r['p']:6d} {r['floor_s']:9.4f} {r['metric_set_s']:13.4f} {r['ratio']:6.2f} {r['readout_s']:11.4f}")
    ck = cka_vs_gram(a.n, a.cka_width, a.cka_width, a.batch, dev)
    print(f"2. debiased CKA, N = {ck['n']}, p = q = {ck['p']}: one pass {ck['one_pass_s']:.3f} s, n×n Gram "
          f"{ck['gram_s']:.3f} s, speed-up {ck['speedup']:.1f}x (goal >= 10x); CKA {ck['cka_one_pass']:.15f} vs "
          f"{ck['cka_gram']:.15f}, relative difference {ck['rel_diff']:.2e} (goal <= 1e-10)")
    mem = peak_memory(a.n, widths[0], a.batch, dev)
    key = "cuda_mib" if mem[0]["cuda_mib"] is not None else "rss_mib"
    print(f"3. peak memory of a 3-layer capture (p = {widths[0]}): N = {mem[0]['n']}: {mem[0][key]:.1f} MiB, "
          f"2N = {mem[1]['n']}: {mem[1][key]:.1f} MiB ({key}); ratio {mem[1][key] / mem[0][key]:.3f} (goal: flat)")
    if a.json:
        Path(a.json).write_text(json.dumps({"device": dev, "load": load, "per_layer": rows, "cka": ck,
                                            "memory": mem}, indent=1))


if __name__ == "__main__":
    main()
