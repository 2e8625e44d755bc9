"""Benchmark: training the glyph CNNs (sims/glyphs/train.py) against the bare forward+backward of the same model.

For each architecture (LeNet, small ResNet) and class count K, on in-memory random images of the task's shape
([N, 1, 32, 32], N = K × per_class), measured in the same run and on the same device:

(a) the anchor: the bare forward+backward of the same model on one batch (``zero_grad``, cross-entropy,
    ``backward``; no optimiser, no data gather) — what a training step cannot beat;
(b) the trainer: one epoch of ``sims.glyphs.train.fit`` (the grouped epoch order, the batch gather, the loss,
    AdamW and the schedule, per-epoch metrics), images/s over the whole epoch.

The ratio (b)/(a) is the trainer's efficiency (goal ≥ 0.8). The rounds alternate (a) and (b) and the ratio is the
median of the per-round ratios, so a change of the machine's load between rounds cancels out. A warm-up epoch and
a warm-up step come first (not timed). Also printed: the seconds per epoch at this K and per_class, the
forward GFLOP/s × 3 (forward + backward) and, as a roofline, torch's float32 1024³ matmul rate on the device.

    python benchmarks/bench_glyph_train.py [--threads T] [--gpu] [--device DEV] [--tiny] [--json PATH]

Without ``--gpu``: the CPU table (K = 1000 and 100, 8 images per class, batch 128, as the trainer's defaults).
``--gpu``: the GPU table only (K = 1000, 16 images per class, batch 1024, a few seconds on one GPU), on
``--device`` (default cuda; skipped with one line saying why when CUDA is absent; ``--device cpu`` runs the GPU
table's code on the CPU: the gpu-check's dry run). ``--tiny`` shrinks every size so that the script runs in
seconds (its numbers mean nothing). CPU runs use ``--threads`` torch threads (default 1, as the trainer).
"""
import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sims.glyphs.nets import build_net, flops_per_image  # noqa: E402
from sims.glyphs.train import TrainConfig, fit  # noqa: E402


def _sync(device):
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def matmul_rate(n, device, repeat=5):
    g = torch.Generator(device=device).manual_seed(1)
    A = torch.randn(n, n, device=device, generator=g)
    B = torch.randn(n, n, device=device, generator=g)
    A @ B
    _sync(device)
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        A @ B
        _sync(device)
        ts.append(time.perf_counter() - t)
    return 2 * n ** 3 / statistics.median(ts) / 1e9


def row(arch, K, per_class, batch, device, rounds, cos_reg=0.0, size=32):
    dev = torch.device(device)
    g = torch.Generator().manual_seed(0)
    N = K * per_class
    X = torch.rand(N, 1, size, size, generator=g).to(dev).contiguous(memory_format=torch.channels_last)
    y = torch.arange(K).repeat_interleave(per_class).to(dev)
    net = build_net(arch, K, size, seed=0).to(dev, memory_format=torch.channels_last)
    fl = flops_per_image(net, size)
    cfg = TrainConfig(arch=arch, epochs=1, per_class=per_class, batch_size=batch, cos_reg=cos_reg)
    xb, yb = X[:batch], y[:batch]
    n_batches = -(-N // batch)

    def bare():
        net.zero_grad(set_to_none=True)
        F.cross_entropy(net(xb), yb).backward()

    fit(net, X, y, cfg, dev, progress=False)  # warm-up epoch (allocations, oneDNN primitives)
    bare()
    _sync(dev)
    ratios, bare_rates, train_rates, epoch_s = [], [], [], []
    for _ in range(rounds):
        net.train()
        t = time.perf_counter()
        for _ in range(n_batches):
            bare()
        _sync(dev)
        b_rate = n_batches * batch / (time.perf_counter() - t)
        _hist, _ck, secs = fit(net, X, y, cfg, dev, progress=False)
        t_rate = N / secs
        bare_rates.append(b_rate)
        train_rates.append(t_rate)
        epoch_s.append(secs)
        ratios.append(t_rate / b_rate)
    tr = statistics.median(train_rates)
    return {"arch": arch, "K": K, "per_class": per_class, "batch": batch, "cos_reg": cos_reg, "N": N,
            "mflop_fwd": fl / 1e6, "bare_img_s": statistics.median(bare_rates), "train_img_s": tr,
            "ratio": statistics.median(ratios), "epoch_s": statistics.median(epoch_s),
            "train_gflops_3x": 3 * fl * tr / 1e9}


def table(device, threads, tiny, gpu=False):
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        print(f"{device} table skipped: torch.cuda.is_available() is False (torch {torch.__version__})")
        return {"skipped": "CUDA not available"}
    if dev.type == "cpu":
        torch.set_num_threads(threads)
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else f"cpu, torch threads={threads}"
    if tiny:
        settings = [(a, 20, 8, 32, 0.0) for a in ("lenet", "resnet")] + [("resnet", 20, 8, 32, 1.0)]
        rounds, sq = 2, 128
    elif not gpu:
        settings = [(a, K, 8, 128, 0.0) for a in ("lenet", "resnet") for K in (1000, 100)]
        settings += [(a, 1000, 8, 128, 1.0) for a in ("lenet", "resnet")]
        rounds, sq = 3, 1024
    else:
        settings = [(a, 1000, 16, 1024, lam) for lam in (0.0, 1.0) for a in ("lenet", "resnet")]
        rounds, sq = 3, 8192
    peak = matmul_rate(sq, dev)
    print(f"glyph CNN training, float32, 32×32 images, device: {name}; float32 {sq}³ matmul {peak:.0f} GFLOP/s")
    head = (f"{'arch':7s} {'K':>5s} {'N':>7s} {'batch':>5s} {'λ':>4s} {'MFLOP':>6s} {'bare img/s':>11s} "
            f"{'train img/s':>12s} {'ratio':>6s} {'s/epoch':>8s} {'GFLOP/s':>8s}")
    print(head)
    rows = []
    for arch, K, pc, bs, lam in settings:
        r = row(arch, K, pc, bs, dev, rounds, lam)
        rows.append(r)
        print(f"{arch:7s} {K:5d} {r['N']:7d} {bs:5d} {lam:4.1f} {r['mflop_fwd']:6.1f} {r['bare_img_s']:11.0f} "
              f"{r['train_img_s']:12.0f} {r['ratio']:6.2f} {r['epoch_s']:8.2f} {r['train_gflops_3x']:8.1f}",
              flush=True)
    print("  ratio = trainer images/s ÷ bare forward+backward images/s of the same model and batch "
          "(median over rounds; goal ≥ 0.8); GFLOP/s = 3 × forward flops × train images/s")
    return {"device": name, "matmul_gflops": peak, "rows": rows}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=1, help="torch threads on the CPU (the trainer uses 1)")
    ap.add_argument("--gpu", action="store_true", help="the GPU table (skipped with a note without CUDA)")
    ap.add_argument("--device", default=None, help="device of the table (default: cuda with --gpu, else cpu)")
    ap.add_argument("--tiny", action="store_true", help="smallest sizes: every code path in seconds")
    ap.add_argument("--json", default=None, metavar="PATH", help="also write the numbers as JSON")
    a = ap.parse_args(argv)
    device = a.device or ("cuda" if a.gpu else "cpu")
    out = {"benchmark": "glyph_train", "tiny": a.tiny, "gpu" if a.gpu else "cpu": table(device, a.threads, a.tiny,
                                                                                         a.gpu)}
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
