"""Benchmark: FG training step (Eq 14 forward + Eq 17 update + Eq 18 bias, one batched expression) in float32.

Anchors measured in the same run, on the same device:
(a) torch's float32 matmul rate, on a square GEMM (the device's roofline: 1024³ on the CPU, 8192³ on a GPU) and
    on the step's own GEMM shape (N·P × d) @ (d × C·m); the step's achieved GFLOP/s counts the two GEMMs,
    4·N·P·d·C·m flops (Eq 17's forward pre-activations and its ΔW = Mᵀ X);
(b) on the GPU column also the TF32 matmul rate (``torch.backends.cuda.matmul.allow_tf32``), the tensor-core
    ceiling a float32 step could reach if it accepted TF32's 10-bit mantissa (the trainer does not: it keeps
    torch's default, TF32 off, so CPU and CUDA runs compute the same function to float32 rounding);
(c) a naive step that loops over classes and neurons in Python (what one writes from Eq 17 directly), CPU only.

    python benchmarks/bench_multiview.py [--threads T] [--gpu] [--device cuda] [--tiny] [--json PATH]

The CPU table always runs (one torch thread, as the trainer). ``--gpu`` adds the GPU column on ``--device``
(default ``cuda``; skipped with one line saying why when CUDA is absent; ``--device cpu`` runs the column's code
on the CPU, which is what the gpu-check's dry-run does): the regime's steps (launch-bound at d = 100) and the
d = 1000 step of ``examples/multiview_d1000.toml``. ``--tiny`` shrinks every size so the whole script runs in
seconds (it exercises every code path; its numbers mean nothing). Times are medians of repeats after a warm-up,
with a device synchronisation before every clock read; compile/warm-up time is excluded.
"""
import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sims.multiview import HierarchicalMultiView, TwoLayerReLU  # noqa: E402


def _sync(device):
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def timed(fn, device="cpu", repeat=5, inner=1):
    """Median seconds per call of ``fn`` over ``repeat`` rounds of ``inner`` calls, after one warm-up call."""
    fn()
    _sync(device)
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        _sync(device)
        ts.append((time.perf_counter() - t) / inner)
    return statistics.median(ts)


def matmul_rate(n, device, tf32=False, repeat=5):
    """GFLOP/s of an n×n×n float32 matmul on ``device`` (TF32 allowed or not; restored afterwards)."""
    g = torch.Generator(device=device).manual_seed(1)
    A = torch.randn(n, n, device=device, generator=g)
    B = torch.randn(n, n, device=device, generator=g)
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = bool(tf32)
    try:
        t = timed(lambda: A @ B, device, repeat=repeat)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old
    return 2 * n ** 3 / t / 1e9


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


def step_row(label, d, P, s, k, C, m, N, device, repeat=5, inner=5):
    """Time one SGD step (fp32, TF32 off) and the batch draw at these sizes; its flops and same-shape GEMM rate."""
    dm = HierarchicalMultiView(d, P, s, k)
    g = torch.Generator(device=device).manual_seed(0)
    net = TwoLayerReLU(C, m, d, sigma0=0.01, c_b=1.17, generator=g, device=device)
    batch = dm.sample(N, generator=g, device=device)
    y = batch.y_coarse if C == 2 else batch.y_fine
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        t_step = timed(lambda: net.step(batch.X, y, 0.02), device, repeat=repeat, inner=inner)
        t_sample = timed(lambda: dm.sample(N, generator=g, device=device), device, repeat=repeat, inner=inner)
        Xf, Wf = batch.X.reshape(N * P, d), net.W.reshape(C * m, d).T.contiguous()
        t_mm = timed(lambda: Xf @ Wf, device, repeat=repeat, inner=inner)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old
    flops = 4 * N * P * d * C * m
    return {"label": label, "d": d, "P": P, "k": k, "C": C, "m": m, "N": N, "step_ms": t_step * 1e3,
            "sample_ms": t_sample * 1e3, "samples_per_s": N / (t_step + t_sample), "step_gflops": flops / t_step / 1e9,
            "same_shape_gemm_gflops": 2 * N * P * d * C * m / t_mm / 1e9, "flops_per_step": flops}


def print_rows(rows, anchors):
    names = list(anchors)
    head = f"{'setting':34s} {'step ms':>9s} {'samples/s':>11s} {'GFLOP/s':>9s} {'% shape GEMM':>13s}"
    print(head + "".join(f" {'% ' + n:>14s}" for n in names))
    for r in rows:
        line = (f"{r['label']:34s} {r['step_ms']:9.3f} {r['samples_per_s']:11.0f} {r['step_gflops']:9.1f} "
                f"{100 * r['step_gflops'] / r['same_shape_gemm_gflops']:12.0f}%")
        print(line + "".join(f" {100 * r['step_gflops'] / anchors[n]:13.1f}%" for n in names))


def d1000_sizes(tiny):
    """The d = 1000 config's step sizes, read through the sim command's loader (the shipped TOML)."""
    if tiny:
        return {"d": 48, "P": 8, "s": 2.0, "k": 2, "m_coarse": 300, "m_fine": 40, "batch": 8}
    from verify.commands.sim import load_config

    cfg = load_config(ROOT / "examples" / "multiview_d1000.toml")
    return {key: cfg[key] for key in ("d", "P", "s", "k", "m_coarse", "m_fine", "batch")}


def cpu_table(threads, tiny):
    torch.set_num_threads(threads)
    if tiny:
        d, P, s, k, sq, settings = 32, 8, 2.0, 2, 128, (("coarse, tiny", 2, 40, 8), ("fine, tiny", 4, 10, 8))
    else:
        d, P, s, k, sq = 100, 16, 3.0, 8, 1024
        settings = (("coarse, N=32 (the regime)", 2, 800, 32), ("fine, N=32 (the regime)", 16, 100, 32),
                    ("coarse, N=256", 2, 800, 256))
    peak = matmul_rate(sq, "cpu", repeat=3 if tiny else 10)
    print(f"FG training step, float32, d={d}, P={P}, k={k}, device=cpu, torch threads={threads}")
    rows = [step_row(lab, d, P, s, k, C, m, N, "cpu", repeat=3 if tiny else 5) for lab, C, m, N in settings]
    anchors = {f"{sq}³ fp32": peak}
    print_rows(rows, anchors)
    print(f"  (samples/s includes drawing the batch; float32 GEMM {sq}³: {peak:.1f} GFLOP/s)")
    # naive loop anchor on the regime's coarse step (extrapolated from a slice of the neurons)
    label, C, m, N = settings[0]
    m_naive = 10 if tiny else 100
    dm = HierarchicalMultiView(d, P, s, k)
    g = torch.Generator().manual_seed(0)
    net = TwoLayerReLU(C, m_naive, d, sigma0=0.01, c_b=1.17, generator=g)
    batch = dm.sample(N, generator=g)
    W, b = net.W.clone(), net.b.clone()
    t_naive = timed(lambda: naive_step(W, b, batch.X, batch.y_coarse, 0.02, math.log(d) ** 5), repeat=1 if tiny else 3)
    t_naive *= m / m_naive
    t_step = rows[0]["step_ms"] / 1e3
    print(f"naive Python loop over classes and neurons ({label}; timed on m={m_naive}, scaled to m={m}): "
          f"{t_naive * 1e3:.0f} ms per step = {t_naive / t_step:.0f}x the batched step")
    # agreement of the naive loop with the batched step
    net = TwoLayerReLU(2, 20, d, sigma0=0.3, c_b=0.05, generator=g)
    W, b = net.W.clone(), net.b.clone()
    naive_step(W, b, batch.X, batch.y_coarse, 0.02, math.log(d) ** 5)
    net.step(batch.X, batch.y_coarse, 0.02)
    err = float((W - net.W).abs().max())
    print(f"  max |W_naive − W_batched| after one step: {err:.1e}")
    return {"threads": threads, "anchors_gflops": anchors, "rows": rows, "naive_ms": t_naive * 1e3,
            "naive_over_batched": t_naive / t_step, "naive_max_abs_diff": err}


def gpu_column(device, tiny):
    """The GPU column: fp32 and TF32 matmul anchors, the regime's steps and the d = 1000 config's steps."""
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        print("GPU column skipped: torch.cuda.is_available() is False (no CUDA device, or a CPU-only torch build "
              f"{torch.__version__})")
        return {"skipped": "CUDA not available"}
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu (dry run of the GPU column)"
    sq = 256 if tiny else 8192
    rep = 3 if tiny else 10
    fp32 = matmul_rate(sq, device, tf32=False, repeat=rep)
    tf32 = matmul_rate(sq, device, tf32=True, repeat=rep)
    anchors = {f"{sq}³ fp32": fp32, f"{sq}³ TF32": tf32}
    print(f"\nGPU column: {name}, float32 steps (TF32 off, as the trainer)")
    print(f"  anchors: {sq}³ matmul {fp32:.0f} GFLOP/s fp32, {tf32:.0f} GFLOP/s TF32 (TF32/fp32 = {tf32 / fp32:.1f}x)")
    big = d1000_sizes(tiny)
    if tiny:
        regime = (("coarse, tiny", 32, 8, 2.0, 2, 2, 40, 8), ("fine, tiny", 32, 8, 2.0, 2, 4, 10, 8))
    else:
        regime = (("coarse, d=100 (the regime)", 100, 16, 3.0, 8, 2, 800, 32),
                  ("fine, d=100 (the regime)", 100, 16, 3.0, 8, 16, 100, 32),
                  ("coarse, d=100, N=256", 100, 16, 3.0, 8, 2, 800, 256))
    settings = list(regime) + [
        (f"coarse, d={big['d']} (d1000 config)", big["d"], big["P"], big["s"], big["k"], 2, big["m_coarse"],
         big["batch"]),
        (f"fine, d={big['d']} (d1000 config)", big["d"], big["P"], big["s"], big["k"], 2 * big["k"], big["m_fine"],
         big["batch"])]
    rows = [step_row(lab, d, P, s, k, C, m, N, device, repeat=3 if tiny else 10, inner=1 if tiny else 5)
            for lab, d, P, s, k, C, m, N in settings]
    print_rows(rows, anchors)
    print("  (the d=100 steps are launch-bound on a GPU: ~20 small kernels and one host sync per step)")
    out = {"device": name, "anchors_gflops": anchors, "rows": rows}
    if dev.type == "cuda":
        out["torch"] = torch.__version__
        out["cuda"] = torch.version.cuda
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=1, help="torch threads of the CPU table (the trainer uses 1)")
    ap.add_argument("--gpu", action="store_true", help="add the GPU column (skipped with a note without CUDA)")
    ap.add_argument("--device", default="cuda", help="device of the GPU column (cpu: dry run of its code)")
    ap.add_argument("--tiny", action="store_true", help="smallest sizes: every code path in seconds")
    ap.add_argument("--json", default=None, metavar="PATH", help="also write the numbers as JSON")
    a = ap.parse_args(argv)
    out = {"benchmark": "multiview", "tiny": a.tiny, "cpu": cpu_table(a.threads, a.tiny)}
    if a.gpu:
        out["gpu"] = gpu_column(a.device, a.tiny)
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
