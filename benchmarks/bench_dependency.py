"""Benchmark: all n error floors at once (ND A30 via one Cholesky) against a naive per-category loop.

Anchors measured in the same run: (a) the naive loop, one constrained least-squares solve of
Cov₋ᵢ₋ᵢ θ̂ = Cov₋ᵢ,ᵢ per category (what one writes from Eq 6 at λ = 0); (b) the machine's float64
matmul rate, to express the Cholesky route as a fraction of the GEMM roofline.

    python benchmarks/bench_dependency.py [n]
"""
import sys
import time

import numpy as np

from sims.spd import gram, lowrank_logits
from theory.dependency import error_floor


def best_of(fn, repeat=3):
    ts = []
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


def main(n=1000):
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
    gflops = 2 * n**3 / t_mm / 1e9
    # validation (one Cholesky) + Cholesky + triangular inverse + row norms ~ n³/3 + n³/3 + n³/3 flops
    print(f"error floors, n = {n} (logit-like Cov, rank n/2 + noise)")
    print(f"  all floors at once (Cholesky):      {t_fast * 1e3:9.1f} ms")
    print(f"  naive loop of n solves (scaled from m={m}, O(n^4)): {t_naive * 1e3:9.1f} ms   ratio {t_naive / t_fast:8.1f}x")
    print(f"  float64 matmul n×n: {t_mm * 1e3:.1f} ms = {gflops:.0f} GFLOP/s; floors take {t_fast / t_mm:.2f}x one GEMM")
    print(f"  max relative disagreement with the naive loop (n=50): {agree:.1e}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
