"""Benchmark: FG training step (Eq 14 forward + Eq 17 update + Eq 18 bias, one batched expression) in float32.

Anchors measured in the same run:
(a) torch's float32 matmul rate, on a 1024³ GEMM (the machine's roofline) and on the step's own GEMM shape
    (N·P × d) @ (d × C·m); the step's achieved GFLOP/s counts the two GEMMs, 4·N·P·d·C·m flops;
(b) a naive step that loops over classes and neurons in Python (what one writes from Eq 17 directly).

    python benchmarks/bench_multiview.py [--threads T] [--device cpu]
"""
import argparse
import math
import time

import torch

from sims.multiview import HierarchicalMultiView, TwoLayerReLU


def best_of(fn, repeat=5, inner=1):
    fn()  # warm-up
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        ts.append((time.perf_counter() - t) / inner)
    return min(ts)


def naive_step(W, b, X, y, eta, log5):
    """Eq 17–18 with Python loops over classes c and neurons r (vectorised over samples and patches only)."""
    C, m, d = W.shape
    N = X.shape[0]
    F = torch.zeros(N, C)
    for c in range(C):
        for r in range(m):
            F[:, c] += torch.relu(X @ W[c, r] + b[c, r]).sum(1)
    G = torch.nn.functional.one_hot(y, C).float() - torch.softmax(F, 1)
    for c in range(C):
        for r in range(m):
            act = ((X @ W[c, r] + b[c, r]) > 0).float()  # (N, P)
            dw = (eta / N) * torch.einsum("n,np,npd->d", G[:, c], act, X)
            W[c, r] += dw
            b[c, r] -= dw.norm() / log5


def main(threads=1, device="cpu"):
    torch.set_num_threads(threads)
    d, P, s, k = 100, 16, 3.0, 8
    dm = HierarchicalMultiView(d, P, s, k)
    g = torch.Generator(device=device).manual_seed(0)
    print(f"FG training step, float32, d={d}, P={P}, k={k}, device={device}, torch threads={threads}")
    print(f"{'setting':28s} {'step ms':>9s} {'samples/s':>11s} {'GFLOP/s':>9s} {'% same-shape GEMM':>18s} "
          f"{'% 1024³ GEMM':>13s}")
    A = torch.randn(1024, 1024, device=device)
    t_big = best_of(lambda: A @ A, repeat=10)
    peak = 2 * 1024 ** 3 / t_big / 1e9
    rows = []
    for label, C, m, N in (("coarse, N=32 (the regime)", 2, 800, 32), ("fine, N=32 (the regime)", 16, 100, 32),
                           ("coarse, N=256", 2, 800, 256)):
        net = TwoLayerReLU(C, m, d, sigma0=0.01, c_b=1.17, generator=g, device=device)
        batch = dm.sample(N, generator=g, device=device)
        y = batch.y_coarse if C == 2 else batch.y_fine
        t_step = best_of(lambda: net.step(batch.X, y, 0.02), repeat=5, inner=5)
        t_sample = best_of(lambda: dm.sample(N, generator=g, device=device), repeat=5, inner=5)
        flops = 4 * N * P * d * C * m
        Xf, Wf = batch.X.reshape(N * P, d), net.W.reshape(C * m, d).T.contiguous()
        t_mm = best_of(lambda: Xf @ Wf, repeat=5, inner=5)
        shape_rate = 2 * N * P * d * C * m / t_mm / 1e9
        rate = flops / t_step / 1e9
        print(f"{label:28s} {t_step * 1e3:9.2f} {N / (t_step + t_sample):11.0f} {rate:9.2f} "
              f"{100 * rate / shape_rate:17.0f}% {100 * rate / peak:12.0f}%")
        rows.append((label, C, m, N, t_step))
    print(f"  (samples/s includes drawing the batch; float32 GEMM 1024³: {peak:.1f} GFLOP/s)")
    # naive loop anchor on the regime's coarse step (extrapolated from a slice of the neurons)
    label, C, m, N, t_step = rows[0]
    m_naive = 100
    net = TwoLayerReLU(C, m_naive, d, sigma0=0.01, c_b=1.17, generator=g, device=device)
    batch = dm.sample(N, generator=g, device=device)
    W, b = net.W.clone(), net.b.clone()
    t_naive = best_of(lambda: naive_step(W, b, batch.X, batch.y_coarse, 0.02, math.log(d) ** 5), repeat=3)
    t_naive *= m / m_naive
    print(f"naive Python loop over classes and neurons ({label}; timed on m={m_naive}, scaled to m={m}): "
          f"{t_naive * 1e3:.0f} ms per step = {t_naive / t_step:.0f}x the batched step")
    # agreement of the naive loop with the batched step
    net = TwoLayerReLU(2, 20, d, sigma0=0.3, c_b=0.05, generator=g, device=device, dtype=torch.float32)
    W, b = net.W.clone(), net.b.clone()
    naive_step(W, b, batch.X, batch.y_coarse, 0.02, math.log(d) ** 5)
    net.step(batch.X, batch.y_coarse, 0.02)
    print(f"  max |W_naive − W_batched| after one step: {(W - net.W).abs().max():.1e}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    main(a.threads, a.device)
