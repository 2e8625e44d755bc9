"""The cost of an FG experiment from its sizes alone: flops and peak memory, estimated before anything is allocated.

:func:`estimate_cost` counts the GEMM flops of every training of one :func:`sims.multiview.experiment.run_experiment`
and its peak memory; :func:`require_memory` refuses a config whose peak does not fit this machine (or the GPU)
through :func:`sims.resources.require`, naming the estimate and the memory available. ``run_experiment`` and the
command lines (``theorylab sim``, sweep points) call it before the first tensor is made.
"""
from __future__ import annotations

from sims import resources

ITEMSIZE = {"float32": 4, "float64": 8}


def estimate_cost(cfg: dict) -> dict:
    """Flops and peak memory (bytes) of one run of the validated config ``cfg`` (every training it asks for).

    Flops per training: each step's two GEMMs, 4·N·P·d·C·m (Eq 17); each evaluation (every ``eval_every`` steps
    and at the end) the forward pass on the easy and the hard test set, 2 · 2·n_test·P·d·C·m, and the growth
    projection (W − W⁽⁰⁾)Vᵀ, 2·C·m·d²; once the lucky mask W⁽⁰⁾Vᵀ. Elementwise work is left out (it is memory-bound
    and small beside the GEMMs at large C·m).

    Memory of the largest training (``it`` bytes per number: 4 for float32, 8 for float64): kept for the whole
    training, W and W⁽⁰⁾ (2·it per weight), three boolean masks of the weights' shape (3), the dictionary V
    (d²·it; a ``random`` dictionary is made by a float64 QR, 4·8·d² while it is built) and the easy and hard test
    sets (2·n_test·P·d·it); plus the largest temporary: the evaluation's pre-activations and their ReLU
    (2·n_test·P·C·m·it), the growth projection (3·it per weight), the step (a batch and its sampling temporaries
    2·N·P·d·it, its pre-activations N·P·C·m·it, ΔW), or the end-of-training responses (Eq 10–11), which gather W
    for the 2k (class, feature) pairs: 2k·m·(d + 256·(d + 3·m))·it bytes.
    """
    k, d, P, N, n_test = cfg["k"], cfg["d"], cfg["P"], cfg["batch"], cfg["n_test"]
    it = ITEMSIZE.get(cfg.get("dtype", "float32"), 4)
    n_fine = 2 * k
    out = {"trainings": {}, "flops": 0.0, "peak_bytes": 0.0}
    n_eval = cfg["steps"] // cfg["eval_every"] + 2
    dictionary = 4.0 * 8 * d * d if cfg.get("dictionary") == "random" else 1.0 * it * d * d
    tests = 2.0 * n_test * P * d * it
    for lab in cfg["trainings"]:
        C = 2 if lab == "coarse" else n_fine
        m = cfg[f"m_{lab}"]
        Cm = C * m
        step = 4.0 * N * P * d * Cm
        evals = n_eval * (4.0 * n_test * P * d * Cm + 2.0 * Cm * d * d)
        flops = cfg["steps"] * step + evals + 2.0 * Cm * d * d
        responses = 2.0 * k * m * it * (d + 256.0 * d / m + 3 * 256.0)  # W gathered for 2k pairs, patches, z, relu
        temp = max(2.0 * n_test * P * Cm * it, 3.0 * it * Cm * d,
                   2.0 * N * P * d * it + N * P * Cm * it + it * Cm * d, responses)
        mem = (2.0 * it + 3) * Cm * d + dictionary + tests + temp
        out["trainings"][lab] = {"neurons": Cm, "flops_per_step": step, "flops": flops, "peak_bytes": mem}
        out["flops"] += flops
        out["peak_bytes"] = max(out["peak_bytes"], mem)
    return out


def describe(cfg: dict, cost: dict | None = None) -> str:
    """The sizes that set the estimate (and its GEMM flops), for a refusal message."""
    cost = estimate_cost(cfg) if cost is None else cost
    return (f"d = {cfg['d']}, k = {cfg['k']}, m_coarse = {cfg['m_coarse']}, m_fine = {cfg['m_fine']}, P = {cfg['P']}, "
            f"n_test = {cfg['n_test']}, {cfg.get('dtype', 'float32')}; {cost['flops'] / 1e12:.3g} TFLOP")


def require_memory(cfg: dict, device="cpu", force: bool | None = None, what: str = "the FG experiment") -> dict:
    """:func:`estimate_cost`'s peak memory against what ``device`` has (the CPU: :func:`sims.resources.require`;
    CUDA: the GPU's free memory and the blocks torch's caching allocator holds unused);
    :class:`sims.resources.InsufficientMemory` when it does not fit."""
    cost = estimate_cost(cfg)
    peak = cost["peak_bytes"]
    hint = "use a smaller d or narrower widths (m_coarse, m_fine)"
    kind = getattr(device, "type", str(device).split(":")[0])
    if kind == "cuda":
        import torch

        dev = torch.device(device)
        free, _total = torch.cuda.mem_get_info(dev)
        free += torch.cuda.memory_reserved(dev) - torch.cuda.memory_allocated(dev)  # cached blocks torch reuses
        if force is None:
            force = resources.is_forced()
        if peak > free and not force:
            raise resources.InsufficientMemory(
                f"refused on {device}: {what} ({describe(cfg, cost)}) needs an estimated {resources.fmt_bytes(peak)} of "
                f"GPU memory, but {resources.fmt_bytes(free)} is free; {hint}; --force tries anyway", peak, free)
        return {"needed_bytes": peak, "available_bytes": free, "source": f"free memory of {device}"}
    if kind != "cpu":
        return {"needed_bytes": peak, "available_bytes": None, "source": f"not checked on {device}"}
    return resources.require(peak, f"{what} ({describe(cfg, cost)})", force=force, hint=hint)
