"""Benchmark: all n error floors at once (ND A30 on the correlation matrix, one Cholesky) against a naive loop.

Anchors measured in the same run: (a) the naive loop, one constrained least-squares solve of
Cov₋ᵢ₋ᵢ θ̂ = Cov₋ᵢ,ᵢ per category (what one writes from Eq 6 at λ = 0); (b) the machine's float64
matmul rate, to express the floors as a multiple of one n×n GEMM; (c) one bare n×n Cholesky (the floor's own
floor: validation, Cholesky, triangular inverse and row norms are ≈ 4 of them in flops). Also the singular route
(eigendecomposition) on a rank-n/2 covariance. ``--gpu`` adds a GPU column (torch float64 Cholesky and
diag of the inverse on CUDA) when CUDA is present, else one line saying why it was skipped.

    python benchmarks/bench_dependency.py [--n N] [--gpu] [--device cuda] [--tiny]
"""
import argparse
import time

import numpy as np

from sims.spd import gram, lowrank_logits
from theory.dependency import error_floor


def best_of(fn, repeat=3):
    ts, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t)
    return min(ts), out


def naive_floors(c):
    n = c.shape[0]
    out = np.empty(n)
    for i in range(n):
        rest = np.delete(np.arange(n), i)
        th = np.linalg.solve(c[np.ix_(rest, rest)], c[rest, i])
        out[i] = c[i, i] - c[rest, i] @ th
    return out


def gpu_column(c, device="cuda"):
    """The floors on ``device`` (torch float64; CUDA, or ``cpu`` for the gpu-check's dry run); or None, why."""
    try:
        import torch
    except ImportError as exc:
        return None, f"torch is not importable ({exc})"
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        return None, "torch.cuda.is_available() is False (no CUDA device, or a CPU-only torch build)"
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    g = torch.from_numpy(c).to(dev)

    def floors():
        d = torch.sqrt(torch.diagonal(g))
        k = g / d[:, None] / d[None, :]
        L = torch.linalg.cholesky(k)
        inv = torch.cholesky_inverse(L)
        out = torch.diagonal(g) / torch.diagonal(inv)
        sync()
        return out

    floors()
    t, out = best_of(floors)
    err = float(np.max(np.abs(out.cpu().numpy() - error_floor(c)) / error_floor(c)))
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu (dry run of the GPU column)"
    return {"seconds": t, "max rel. difference vs CPU": err, "device": name}, None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--device", default="cuda", help="device of the GPU column (cpu: dry run of its code)")
    ap.add_argument("--tiny", action="store_true", help="smallest size (n = 60): every code path in seconds")
    args = ap.parse_args()
    n = 60 if args.tiny else args.n
    rng = np.random.default_rng(0)
    c = gram(lowrank_logits(5 * n, n, n // 2, 0.1, rng))
    t_fast, fast = best_of(lambda: error_floor(c))
    m = min(n, 200)  # the naive loop is O(n^4): time it on the first m categories and scale
    t_naive_m, _ = best_of(lambda: naive_floors(c[:m, :m]), repeat=1)
    t_naive = t_naive_m * (n / m) ** 4
    ref = naive_floors(c[:50, :50])
    agree = np.max(np.abs(error_floor(c[:50, :50]) - ref) / ref)
    a = rng.standard_normal((n, n))
    t_mm, _ = best_of(lambda: a @ a)
    t_chol, _ = best_of(lambda: np.linalg.cholesky(c))
    gflops = 2 * n**3 / t_mm / 1e9
    cs = gram(lowrank_logits(5 * n, n, n // 2, 0.0, rng))  # exactly rank n/2: the singular (eigen) route
    t_sing, fl = best_of(lambda: error_floor(cs), repeat=1)
    print(f"error floors, n = {n} (logit-like Cov, rank n/2 + noise; timings on a shared machine are contended)")
    print(f"  all floors at once (Cholesky route):   {t_fast * 1e3:9.1f} ms = {t_fast / t_chol:.1f}x one bare Cholesky "
          f"({t_chol * 1e3:.1f} ms), {t_fast / t_mm:.2f}x one GEMM")
    print(f"  naive loop of n solves (scaled from m={m}, O(n^4)): {t_naive * 1e3:9.1f} ms   ratio {t_naive / t_fast:8.1f}x")
    print(f"  float64 matmul n×n: {t_mm * 1e3:.1f} ms = {gflops:.0f} GFLOP/s")
    print(f"  singular Cov (rank n/2, eigen route): {t_sing * 1e3:.1f} ms = {t_sing / t_chol:.1f}x one Cholesky; "
          f"floors exactly 0: {int((fl == 0).sum())}/{n}")
    print(f"  max relative disagreement with the naive loop (n=50): {agree:.1e}")
    if args.gpu:
        col, why = gpu_column(c, args.device)
        if col is None:
            print(f"  GPU column skipped: {why}")
        else:
            print(f"  GPU ({col['device']}): {col['seconds'] * 1e3:.1f} ms ({t_fast / col['seconds']:.1f}x the CPU route); "
                  f"max rel. difference {col['max rel. difference vs CPU']:.1e}")


if __name__ == "__main__":
    main()
