"""Benchmark: the glyph task's render rate, against the bare FreeType draw of the same glyphs in the same run.

Anchor: ``FT2Font.load_glyph`` + ``draw_glyph_to_bitmap`` of the task's (class, face) glyphs into a buffer,
nothing else (no layout, no checks, no augmentation). Contestants:

(1) canonical renders: :func:`sims.glyphs.render.render_canonical` of the same glyphs (layout, crop, fit);
(2) augmented images from the cached canonical renders: ``task.images('train', per_class, seed)``
    (affine jitter, stroke, blur, noise; exact numpy), reported as images/s and as the wall time of the
    whole draw (the issue's target: 1000 classes × 60 images in seconds);
(3) loading the task from the disk cache in this process (the in-memory memo cleared first).

    python benchmarks/bench_glyphs.py [--n-classes 1000] [--per-class 60] [--repeat 3] [--tiny] [--gpu]

Single-threaded numpy throughout. Each time is the best of ``--repeat`` runs (the least contended on a
shared machine); the ratios within one run are the fair numbers.
"""
import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from sims.glyphs import GlyphTaskConfig, fonts, glyph_task, render  # noqa: E402
from sims.glyphs import task as task_mod  # noqa: E402


def best_of(fn, repeat):
    """(best wall time, best process CPU time, result) of ``repeat`` runs."""
    best, cpu, out = float("inf"), float("inf"), None
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        best = min(best, time.perf_counter() - t)
        cpu = min(cpu, time.process_time() - c)
    return best, cpu, out


def glyph_list(task, limit):
    """(font, glyph index) of the task's (class, face) pairs, the first ``limit`` in class-major order."""
    by_name = {f.name: f for f in fonts.faces()}
    cands = {}
    out = []
    for k, f in np.argwhere(task.coverage)[:limit]:
        face = by_name[task.faces[f]]
        if face.name not in cands:
            cands[face.name] = fonts.candidates(face)
        out.append((fonts.load_font(face.path), cands[face.name][int(task.codepoints[k])]))
    return out


def bare_draw(glyphs, canvas):
    em = canvas / render.EM_SPAN
    for font, gid in glyphs:
        font.set_size(em, 72)
        g = font.load_glyph(gid, flags=fonts_flags())
        buf = np.zeros((2 * canvas, 2 * canvas), np.uint8)
        font.draw_glyph_to_bitmap(buf, canvas // 2, canvas // 2, g, antialiased=True)


def fonts_flags():
    from matplotlib.ft2font import LoadFlags
    return LoadFlags.NO_HINTING


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n-classes", type=int, default=1000)
    ap.add_argument("--per-class", type=int, default=60)
    ap.add_argument("--size", type=int, default=32)
    ap.add_argument("--glyphs", type=int, default=5000, help="glyphs drawn by the anchor and by (1)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tiny", action="store_true", help="a quick run: 100 classes, 10 per class, 1 repeat")
    ap.add_argument("--gpu", action="store_true",
                    help="accepted for the gpu-check: rendering and augmentation run on the CPU whatever the device, "
                         "so this prints the CPU table of the GPU machine's host")
    ap.add_argument("--device", default=None, help="accepted and ignored, as --gpu (the images are drawn on the CPU)")
    a = ap.parse_args()
    if a.gpu or a.device not in (None, "cpu"):
        print("note: the glyph renderer and augmentation are CPU code (numpy/FreeType); the table below is the "
              "host CPU's")
    if a.tiny:
        a.n_classes, a.per_class, a.glyphs, a.repeat = 100, 10, 1000, 1
    cfg = GlyphTaskConfig(n_classes=a.n_classes, size=a.size, seed=0)
    t0 = time.perf_counter()
    task = glyph_task(cfg)
    print(f"task: {task.n_classes} classes, {len(task.faces)} faces, {int(task.coverage.sum())} (class, face) "
          f"glyphs; first glyph_task() in this process {time.perf_counter() - t0:.2f} s")
    canvas = 2 * a.size
    glyphs = glyph_list(task, a.glyphs)
    n = len(glyphs)
    t_anchor, c_anchor, _ = best_of(lambda: bare_draw(glyphs, canvas), a.repeat)
    t_canon, c_canon, _ = best_of(lambda: [render.render_canonical(f, g, canvas) for f, g in glyphs], a.repeat)
    print("rates per second of wall time (CPU time in brackets: on a shared machine the fairer figure)")
    print(f"anchor  bare FT2Font load_glyph + draw_glyph_to_bitmap, {canvas} px: "
          f"{n / t_anchor:8.0f} glyphs/s ({n / c_anchor:.0f})")
    print(f"(1)     canonical renders (layout, crop, fit):             {n / t_canon:8.0f} glyphs/s ({n / c_canon:.0f})"
          f"  = {t_anchor / t_canon:.2f}x anchor ({c_anchor / c_canon:.2f}x)")
    n_img = task.n_classes * a.per_class
    t_img, c_img, (X, _, _) = best_of(lambda: task.images("train", a.per_class, 0), a.repeat)
    print(f"(2)     augmented {a.size}x{a.size} images from the cache:      {n_img / t_img:8.0f} images/s "
          f"({n_img / c_img:.0f})  = {t_anchor / n * n_img / t_img:.2f}x anchor ({c_anchor / n * n_img / c_img:.2f}x);"
          f" {n_img} images in {t_img:.2f} s ({c_img:.2f} s CPU)")
    t_clean, c_clean, _ = best_of(lambda: task.images("train", a.per_class, 0, augment=False), a.repeat)
    print(f"        without augmentation (resampling only):          {n_img / t_clean:8.0f} images/s "
          f"({n_img / c_clean:.0f})")

    def reload():
        task_mod._TASKS.clear()
        return glyph_task(cfg)
    t_load, c_load, _ = best_of(reload, a.repeat)
    print(f"(3)     glyph_task() from the disk cache: {t_load:.2f} s ({c_load:.2f} s CPU)")
    assert X.shape == (n_img, 1, a.size, a.size)

if __name__ == "__main__":
    main()
