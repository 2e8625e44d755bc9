"""Benchmark: the full VC metric set from streamed batches against the bare Gram GEMM on the same data.

Workload (the size of ImageNet's validation features): N = 50 000 features of dimension p = 2048 in K = 1000
balanced classes, fed in batches (labels shuffled, so every batch holds almost every class). Anchor, measured in the
same run on the same float64 batches: Σ_batches Hᵦᵀ Hᵦ (numpy dispatches it to SYRK). Timed for ClassStats: every ``update``
(class-sorted float64 copy, cosine sums, centring, SYRK, Chan correction) plus ``metrics`` once at the end
(Σ_T, one Cholesky with condition estimate, one K×K eigh, Σ_W M ᵀ, VCI, fuzziness, squared distance,
cosine metrics, probe loss, V_B split; best of 3 runs). Batch generation is not timed. Anchor and update
alternate batch by batch, so load changes on a shared machine hit both alike.

Peak memory: tracemalloc's peak of the accumulate-and-finish path (numpy reports its buffers to
tracemalloc), with the input batch subtracted, for two values of N: it depends on p, K and the batch size,
not on N.

GPU column (``--gpu``): the same batches on CUDA in float64: anchor Σ HᵦᵀHᵦ with torch, and
:class:`sims.collapse_torch.TorchClassStats` (the same one-pass algorithm on the device) plus the host metrics;
skipped with one line saying why when CUDA is absent.

    python benchmarks/bench_collapse.py [N] [p] [K] [batch] [--gpu] [--device cuda] [--tiny]
    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_collapse.py   # steadier on a shared machine
"""
import argparse
import time
import tracemalloc

import numpy as np

from theory.collapse import ClassStats, metrics


def batches(N, p, K, b, seed=0):
    """Deterministic float64 batches: class means of scale 1, anisotropic within-class noise, shuffled labels."""
    rng = np.random.default_rng(seed)
    mu = rng.normal(size=(K, p))
    scale = np.linspace(0.3, 2.0, p)
    y_all = rng.permutation(np.repeat(np.arange(K), N // K))
    for s in range(0, len(y_all), b):
        y = y_all[s:s + b]
        g = np.random.default_rng([seed, s])
        yield mu[y] + g.standard_normal((len(y), p)) * scale, y


def run(N, p, K, b, measure_memory=False):
    t_gemm = t_stats = 0.0
    acc = np.zeros((p, p))
    st = ClassStats(p, K)
    peak = 0
    for H, y in batches(N, p, K, b):
        t = time.perf_counter()
        acc += H.T @ H
        t_gemm += time.perf_counter() - t
        if measure_memory:
            tracemalloc.start()
        t = time.perf_counter()
        st.update(H, y)
        t_stats += time.perf_counter() - t
        if measure_memory:
            peak = max(peak, tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
    if measure_memory:
        tracemalloc.start()
    t_fin = np.inf
    for _ in range(1 if measure_memory else 3):  # best of 3: the fixed cost is a few factorisations, and
        t = time.perf_counter()                  # single runs on a shared machine vary several-fold
        m = metrics(st)
        t_fin = min(t_fin, time.perf_counter() - t)
    if measure_memory:
        peak = max(peak, tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    state = st.scatter_within.nbytes + st.means.nbytes + st.unit_sums.nbytes
    return t_gemm, t_stats, t_fin, m, peak + state


def run_gpu(N, p, K, b, device="cuda"):
    """(anchor s, TorchClassStats updates s, to_class_stats + metrics s, metrics) on ``device``; batches made on the
    host and copied before timing (the copy is not timed). ``device="cpu"`` runs the same path (tests)."""
    import torch

    from sims.collapse_torch import TorchClassStats

    dev = torch.device(device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    acc = torch.zeros(p, p, dtype=torch.float64, device=dev)
    ts = TorchClassStats(p, K, dev)
    t_gemm = t_stats = 0.0
    for H, y in batches(N, p, K, b):
        Hd, yd = torch.as_tensor(H, device=dev), torch.as_tensor(y, device=dev)
        sync()
        t = time.perf_counter()
        acc += Hd.T @ Hd
        sync()
        t_gemm += time.perf_counter() - t
        t = time.perf_counter()
        ts.update(Hd, yd)
        sync()
        t_stats += time.perf_counter() - t
    t = time.perf_counter()
    m = metrics(ts.to_class_stats())
    return t_gemm, t_stats, time.perf_counter() - t, m


def gpu_column(N, p, K, b, device="cuda"):
    try:
        import torch
    except ImportError as exc:  # torch is a dependency; say so if it is missing
        print(f"  GPU column skipped: torch not importable ({exc})")
        return
    if torch.device(device).type == "cuda" and not torch.cuda.is_available():
        print("  GPU column skipped: torch.cuda.is_available() is False (no CUDA device on this machine)")
        return
    run_gpu(2 * K, min(p, 256), K, b, device=device)  # warm-up (kernels, allocator)
    t_gemm, t_stats, t_fin, m = run_gpu(N, p, K, b, device=device)
    name = torch.cuda.get_device_name(device) if torch.device(device).type == "cuda" else "cpu, dry run"
    print(f"  GPU ({name}), float64:")
    print(f"    anchor  Σ HᵦᵀHᵦ (torch)            {t_gemm:8.2f} s")
    print(f"    TorchClassStats.update, batches  {t_stats:8.2f} s   ratio {t_stats / t_gemm:5.2f}×")
    print(f"    to host + metrics()              {t_fin:8.2f} s   VCI {m['vci']:.4f}")


def main(N=50_000, p=2048, K=1000, b=10_000, gpu=False, device="cuda"):
    # warm-up (BLAS threads, first-touch pages)
    run(2 * K, min(p, 256), K, b)
    t_gemm, t_stats, t_fin, m, _ = run(N, p, K, b)
    print(f"VC metric set, N = {N}, p = {p}, K = {K}, batch = {b} (float64)")
    print(f"  anchor  Σ HᵦᵀHᵦ (SYRK)             {t_gemm:8.2f} s")
    print(f"  ClassStats.update, all batches     {t_stats:8.2f} s   ratio {t_stats / t_gemm:5.2f}×")
    print(f"  metrics() at the end               {t_fin:8.2f} s   (Σ_T route: {m['sigma_t_route']})")
    print(f"  full metric set                    {t_stats + t_fin:8.2f} s   ratio {(t_stats + t_fin) / t_gemm:5.2f}×"
          f"   (goal ≤ 2×)")
    print(f"  VCI {m['vci']:.4f}  fuzziness {m['fuzziness']:.4f}  squared distance {m['squared_distance']:.4f}  "
          f"cosine d̄_within {m['cosine_similarity']:.4f}  probe loss {m['probe_loss']:.4f}")
    for n in (N // 2, N):  # both feed several batches (a single batch needs no merge rows)
        *_, peak = run(n, p, K, b, measure_memory=True)
        print(f"  peak memory (accumulator + temporaries, input batch excluded), N = {n:6d}: {peak / 2**20:7.1f} MiB")
    print(f"  (one input batch is {b * p * 8 / 2**20:.1f} MiB; the N × p matrix would be {N * p * 8 / 2**20:.0f} MiB)")
    if gpu:
        gpu_column(N, p, K, b, device)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for name, default in (("N", 50_000), ("p", 2048), ("K", 1000), ("batch", 10_000)):
        ap.add_argument(name, type=int, nargs="?", default=default)
    ap.add_argument("--gpu", action="store_true", help="add a CUDA column (skipped with a note without CUDA)")
    ap.add_argument("--device", default="cuda", help="device of the GPU column (cpu: dry run of its code)")
    ap.add_argument("--tiny", action="store_true", help="smallest sizes (N=600, p=16, K=10, batch=200): seconds")
    a = ap.parse_args()
    if a.tiny:
        a.N, a.p, a.K, a.batch = 600, 16, 10, 200
    main(a.N, a.p, a.K, a.batch, gpu=a.gpu, device=a.device)
