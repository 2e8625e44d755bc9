"""Benchmark: ImageNet-folder capture (sims.real.imagenet.capture_folder) vs the bare forward pass, same run.

A generated folder of ``--images`` JPEGs (500×375, the typical ImageNet validation size, flat layout with real
validation file names so labels are looked up) is captured with EfficientNet-Lite0 (logits + final features,
DataLoader with ``--workers`` decoding processes, chunked cache writes); the anchor is the bare forward pass of
the same model on the same batch size (random tensors already in memory, ``torch.inference_mode``), on the same
device. Goal: capture ≥ 90 % of the bare forward pass's images/s (decoding must hide behind the forward pass).

    python benchmarks/bench_capture.py [--images 512] [--batch-size 64] [--workers N] [--gpu] [--device cuda] [--tiny]

The capture is timed once from a cold cache (a fresh THEORYLAB_CACHE): it includes worker start-up. On a shared
2-core machine decoding workers and the forward pass compete for the same cores: the ratio is then lower than
on a machine with spare cores (say so when quoting it).
"""
import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", type=int, default=512)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--gpu", action="store_true", help="run on CUDA (skipped with a note if there is none)")
    ap.add_argument("--device", default="cuda", help="device of the --gpu run (cpu: dry run of its code)")
    ap.add_argument("--tiny", action="store_true", help="4 JPEGs, batch 2, no decoding workers: seconds")
    a = ap.parse_args()
    if a.tiny:
        a.images, a.batch_size, a.workers = 4, 2, 0
    import torch
    from PIL import Image

    device = "cpu"
    if a.gpu:
        if torch.device(a.device).type == "cuda" and not torch.cuda.is_available():
            print("bench_capture: --gpu given but CUDA is not available; skipped")
            return
        device = a.device
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["THEORYLAB_CACHE"] = str(Path(tmp) / "cache")
        from sims.real.imagenet import capture_folder, default_workers, scan, val_labels
        from sims.real.models import default_model

        folder = Path(tmp) / "val"
        folder.mkdir()
        rng = np.random.default_rng(0)
        base = rng.integers(0, 256, (375, 500, 3), dtype=np.uint8)
        for k, name in enumerate(sorted(val_labels())[: a.images]):
            Image.fromarray(np.roll(base, 7 * k, axis=1)).save(folder / name, quality=90)
        files = scan(folder)
        spec = default_model("lite0", device=device)
        workers = default_workers() if a.workers is None else a.workers
        x = torch.randn(a.batch_size, 3, 224, 224, device=device)
        if device == "cpu":
            x = x.contiguous(memory_format=torch.channels_last)
        with torch.inference_mode():
            spec.module(x)  # warm-up
            n_b = max(1, a.images // a.batch_size)
            if torch.device(device).type == "cuda":
                torch.cuda.synchronize()
            t = time.perf_counter()
            for _ in range(n_b):
                spec.module(x)
            if torch.device(device).type == "cuda":
                torch.cuda.synchronize()
            bare = n_b * a.batch_size / (time.perf_counter() - t)
        t = time.perf_counter()
        d = capture_folder(spec, files, batch_size=a.batch_size, workers=workers, device=device, progress=False)
        cap = len(d["logits"]) / (time.perf_counter() - t)
    print(f"capture of {a.images} JPEGs (500×375) with EfficientNet-Lite0 on {device}, batch {a.batch_size}, "
          f"{workers} workers, {os.cpu_count()} cores")
    print(f"  bare forward pass : {bare:8.1f} images/s")
    print(f"  capture_folder    : {cap:8.1f} images/s (decode + transform + forward + hooks + cache writes)")
    print(f"  ratio capture/bare: {cap / bare:.2f}  (goal >= 0.90)")


if __name__ == "__main__":
    main()
