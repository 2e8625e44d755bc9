"""Layer by layer on a real model: per-block statistics in one pass, per-block Jacobian ranks.

* :func:`block_statistics`: one capture pass with forward hooks on named modules (any model; blocks returning
  tuples or dicts contribute their first tensor), each block's output averaged over space to (N, C). Per block:
  the PCA dimension (RD Sec 4.3, theory.rank.pca_dim), ClsDim (RD Eq 6) of a linear probe (least squares from
  the block's pooled features to the final logits, fit on half of the source photographs, ClsDim against the
  full model's predictions: RD defines ClsDim for the final features, a probe is our stand-in for earlier
  blocks — a departure, stated), VCI and the older collapse metrics (VC, theory.collapse) with the source
  photograph (or the true class) as the class.
* :func:`block_jacobian_ranks`: RD Fig 1 a–c on the real model: numerical ranks (RD Eq 4, float32 rule) of the
  partial Jacobians (RD Eq 5) of every sub-network F_k = f^k ∘ … ∘ f^1 of EfficientNet-Lite0 on the central
  p×p×3 input patch, by batched JVPs (torch.func, sims.jacobian). p = 16 (the paper's patch) when the memory
  and arithmetic budget allow it (CUDA), else the largest p that fits; the figure states p. Cached.
"""
from __future__ import annotations

import time

import numpy as np

from sims.cache import cached

PATCHES = (16, 12, 8, 6, 4, 2)
BUDGET = {"cpu": {"bytes": 3e8, "flops": 4e9}, "cuda": {"bytes": 2e10, "flops": 2e13}}


def lite_modules(module) -> dict:
    """Per-block module names of EfficientNet-Lite: stem BN, the 16 MBConv blocks, the head BN, the pooled features."""
    names = {"stem": "_bn0"}
    names.update({f"block{k}": f"_blocks.{k}" for k in range(len(module._blocks))})
    names.update({"head": "_bn1", "features": "_fc:input"})
    return names


def lite_sequence(module) -> tuple[list, list]:
    """EfficientNet-Lite as a list of callables f^1..f^L (stem, blocks, head, pool) and their names."""
    m = module
    blocks = [lambda h: m._swish(m._bn0(m._conv_stem(h)))]
    blocks += [(lambda h, b=b: b(h)) for b in m._blocks]
    # the pool as a mean over space (= AdaptiveAvgPool2d(1) + flatten): on channels-last tensors under vmap the
    # pooling op falls back to a per-sample loop (functorch's "batching rule for aten::as_strided_" warning)
    blocks += [lambda h: m._swish(m._bn1(m._conv_head(h))), lambda h: h.mean(dim=(2, 3))]
    return blocks, ["stem"] + [f"block{k}" for k in range(len(m._blocks))] + ["head", "pool"]


def block_features(spec, batches, layers: dict, total=None) -> dict:
    """Pooled (N, C) features of every named block plus the logits, in one pass (sims.real.capture)."""
    from sims.real.capture import capture

    lay = {"logits": "output", **layers}
    res = capture(spec.module, batches, lay, keep=tuple(lay), pool=tuple(layers), class_stats=False,
                  progress=False, total=total)
    return {**{k: res.kept[k] for k in lay}, "source": res.labels}


def block_curves(feats: dict, names: list, groups, labels=None, seed: int = 0) -> dict:
    """PCA dimension, probe ClsDim, VCI and collapse metrics of each block (module doc)."""
    from sims.real import analysis as A
    from theory.collapse import metrics, vci
    from theory.rank import pca_dim

    L = feats["logits"].astype(np.float64)
    cls = np.searchsorted(np.unique(groups if labels is None else labels), groups if labels is None else labels)
    fit, test = A.grouped_halves(groups, np.random.default_rng([seed, 11]))
    out = {"names": names, "width": [], "pca_dim": [], "cls_dim": [], "vci": [], "trace_ratio": [],
           "cosine_similarity": [], "held_out": []}
    for nm in names:
        F = feats[nm].astype(np.float64)
        P = np.linalg.lstsq(np.c_[F, np.ones(len(F))], L, rcond=None)[0]  # probe: logits ≈ F W_pᵀ + b_p
        Wp, bp = P[:-1].T, P[-1]
        pc = A.ProjectedClassifier(F, F, Wp, bp)  # RD's protocol: Σ and accuracy on the same samples
        r = A.cls_dim(pc, 0.95, against=L.argmax(1))
        Ph = np.linalg.lstsq(np.c_[F[fit], np.ones(len(fit))], L[fit], rcond=None)[0]
        out["width"].append(F.shape[1])
        out["pca_dim"].append(pca_dim(F))
        out["cls_dim"].append(r["cls_dim"] if r["cls_dim"] is not None else np.nan)
        out["held_out"].append(float(np.mean((np.c_[F[test], np.ones(len(test))] @ Ph).argmax(1)
                                             == L[test].argmax(1))))  # probe agreement on unseen photographs
        out["vci"].append(vci(F, cls))
        try:
            met = metrics(F, cls, rank="exact")
        except ValueError:  # e.g. too few channels for the classes: no value, not a crash
            met = {}
        out["trace_ratio"].append(float(met.get("trace_ratio", np.nan)))
        out["cosine_similarity"].append(float(met.get("cosine_similarity", np.nan)))
    return {k: (np.asarray(v, dtype=float) if k != "names" else v) for k, v in out.items()}


def choose_patch(dims: list, device: str) -> int:
    """The largest p ∈ PATCHES whose Jacobians (Σ d_k·3p² floats, Σ d_k·(3p²)² flops for the ranks) fit the budget."""
    b = BUDGET["cuda" if str(device).startswith("cuda") else "cpu"]
    for p in PATCHES:
        k = 3 * p * p
        if sum(dims) * k * 4 <= b["bytes"] and sum(dims) * k * k <= b["flops"]:
            return p
    return PATCHES[-1]


def block_jacobian_ranks(spec, x, device: str = "cpu", patch: int | None = None) -> dict:
    """Numerical ranks of the partial Jacobians of F_1..F_L on the central p×p×3 patch of image ``x`` (1, 3, S, S)."""
    import torch

    from sims.jacobian import subnetwork_ranks

    blocks, names = lite_sequence(spec.module)
    x = x.to(device)
    with torch.no_grad():
        dims, h = [], x
        for f in blocks:
            h = f(h)
            dims.append(int(h[0].numel()))
    p = patch or choose_patch(dims, device)
    S = x.shape[-1]
    r0 = (S - p) // 2
    ii = np.array([(c * S + r) * S + q for c in range(3) for r in range(r0, r0 + p) for q in range(r0, r0 + p)])
    t = time.perf_counter()
    ranks = subnetwork_ranks(blocks, x, idx=ii, chunk_size=64)
    return {"ranks": np.asarray(ranks), "dims": np.asarray(dims), "names": np.array(names), "patch": p,
            "K": len(ii), "seconds": time.perf_counter() - t, "device": str(device)}


def real_block_jacobian(quick: bool, device: str = "cpu") -> dict:
    """Cached :func:`block_jacobian_ranks` of Lite0 on the central crop of the cat photograph (chelsea)."""
    from sims.real.images import Augmentation, crop_batches, photographs
    from sims.real.models import default_model

    ims = photographs()
    params = {"model": "lite0", "images": ims.key, "device": "cuda" if str(device).startswith("cuda") else "cpu",
              "patch": 2 if quick else None}

    def compute():
        spec = default_model("lite0", device=device)
        s = ims.names.index("chelsea")
        h, w = ims.images[s].shape[:2]
        c = min(h, w)
        plan = np.array([[s, (h - c) // 2, (w - c) // 2, c, c, 0]])
        x, _ = next(crop_batches(ims, plan, Augmentation(size=224), batch_size=1))
        return block_jacobian_ranks(spec, x.contiguous(), device=device, patch=params["patch"])

    return cached("real_block_jacobian", params, compute)


def real_block_curves(quick: bool, seed: int = 0) -> dict:
    """Cached per-block curves of Lite0 on the photograph crops (one capture pass; class = source photograph)."""
    from sims.real.images import Augmentation, crop_batches, crop_plan, photographs
    from sims.real.models import default_model

    ims = photographs()
    n = 128 if quick else 512
    aug = Augmentation(size=224)
    params = {"model": "lite0", "images": ims.key, "aug": aug.key, "n": n, "seed": seed}

    def compute():
        spec = default_model("lite0")
        layers = lite_modules(spec.module)
        plan = crop_plan(ims, n, aug, seed)
        feats = block_features(spec, crop_batches(ims, plan, aug, batch_size=32), layers)
        c = block_curves(feats, list(layers), feats["source"], seed=seed)
        return {**{k: v for k, v in c.items() if k != "names"}, "names": np.array(c["names"]), "n": n}

    return cached("real_block_curves", params, compute)
