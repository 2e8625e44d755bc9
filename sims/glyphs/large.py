"""The glyph networks at a GPU size, in one command: ``python -m sims.glyphs.large [--tiny] [--device D]``.

Trains the documented larger configuration (docs/glyph_nets.md: 1000 code points, 64 images per class, batch 512;
``--epochs`` 10 by default so that it fits the gpu-check's window, 30 is the documented full run) for the LeNet
and/or the ResNet, then prints one JSON object per network: training seconds, images/s, the device, and the
held-out accuracy on the test faces (never seen in training) and on the augmentation split
(:func:`sims.glyphs.features.heldout_accuracy`). ``--tiny`` is the dry run (20 classes, 8 per class, 1 epoch).
The weights are cached like every glyph net (keyed by the device type too), so a second run only reads out.
"""
from __future__ import annotations

import argparse
import json
import sys
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default=None, help="cpu, cuda, cuda:N (default: CUDA when present)")
    ap.add_argument("--arch", default="lenet,resnet", help="comma-separated: lenet, resnet")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--per-class", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=512)
    ap.add_argument("--tiny", action="store_true", help="20 classes, 8 per class, 1 epoch: every code path")
    a = ap.parse_args(argv)
    from sims.glyphs import GlyphTaskConfig
    from sims.glyphs.features import heldout_accuracy
    from sims.glyphs.train import train_glyph_net

    n_classes, per_class, epochs = (20, 8, 1) if a.tiny else (1000, a.per_class, a.epochs)
    if epochs < 1 or per_class < 1:
        print("sims.glyphs.large: error: --epochs and --per-class must be ≥ 1", file=sys.stderr)
        return 2
    cfg = GlyphTaskConfig(n_classes=n_classes)
    for arch in [s.strip() for s in a.arch.split(",") if s.strip()]:
        t0 = time.perf_counter()
        net = train_glyph_net(cfg, arch=arch, epochs=epochs, per_class=per_class, batch_size=a.batch_size,
                              device=a.device, progress=False)
        acc = heldout_accuracy(net)
        print(json.dumps({"arch": arch, "classes": n_classes, "per_class": per_class, "epochs": epochs,
                          "batch_size": a.batch_size, "device": net.device, "from_cache": net.from_cache,
                          "train_seconds": round(net.seconds, 2), "images_per_s": round(net.images_per_s, 1),
                          "wall_seconds": round(time.perf_counter() - t0, 2),
                          "face_test_acc": round(acc["face_test_all"], 4), "aug_test_acc": round(acc["aug_test"], 4)}),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
