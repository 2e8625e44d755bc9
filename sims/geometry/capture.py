"""One streaming pass over any torch model(s): forward hooks on named modules → float64 accumulators.

``capture(model, batches, layers)`` returns a :class:`~sims.geometry.stats.GeometryState` (numpy, picklable,
mergeable); ``capture_models({"A": model_a, "B": model_b}, ...)`` runs several models on the same samples
(one stream, or one stream per model aligned by sample id) so that CKA between their layers comes from the same
pass (:mod:`sims.geometry.cka_pairs`).

Layer specs: ``"output"`` (the model's return value), ``"<module>"`` (its output), ``"<module>:input"`` (its first
positional input), each optionally with ``@<i>`` or ``@<key>`` to pick an element of a tuple/list/dict output
(default: the first tensor in it). An unknown module is a ValueError listing the closest and the available
names. A module called more than once per forward pass (a shared ReLU, a reused block) is *flagged*
(``state.reused[name]`` = calls per pass, and a warning) and its last call is used.

Activations of more than 2 dimensions are reduced per layer as the user asks (``pool``): ``"mean"`` (default;
(B, C, H, W) → global average over space, (B, T, C) tokens → mean over T) or ``"flatten"`` (B, −1). A layer
wider than ``max_features`` is an error that suggests pooling (its p×p moments would not fit).

Batches: ``x``, ``(x,)``, ``(x, y)``, ``(x, y, ids)`` or a dict with keys ``x``, ``y``, ``id``. ``y``: integer labels
in [0, n_classes) (class statistics need ``n_classes``); ``ids``: integer sample ids, used to align several
streams (a mismatch is an error). Accumulation is in float64 on ``device`` (CUDA when present; MPS has no
float64, so there batches move to the CPU). Progress: a tqdm bar on stderr in images/s.
"""
from __future__ import annotations

import difflib
import warnings
from typing import Iterable

from sims.geometry.stats import Accumulator, GeometryState

POOLS = ("mean", "flatten")


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def accumulation_device(device):
    import torch

    d = torch.device(device)
    return torch.device("cpu") if d.type == "mps" else d


def parse_spec(spec: str) -> tuple[str, str, str | None]:
    """(module name, "output" | "input", element selector or None)."""
    if not isinstance(spec, str) or not spec:
        raise ValueError(f"layer spec: expected a non-empty string, got {spec!r}")
    body, _, sel = spec.partition("@")
    name, _, where = body.partition(":")
    if where not in ("", "input", "output"):
        raise ValueError(f"layer {spec!r}: the part after ':' must be 'input' or 'output'")
    return name, where or "output", (sel or None)


def resolve(model, spec: str):
    """(module, where, selector) of a layer spec, or a ValueError naming the closest and available modules."""
    name, where, sel = parse_spec(spec)
    if name == "output":
        return model, "return", sel
    modules = dict(model.named_modules())
    if name not in modules or name == "":
        avail = [n for n in modules if n]
        close = difflib.get_close_matches(name, avail, n=5)
        shown = ", ".join(avail[:40]) + (f", … ({len(avail)} in all)" if len(avail) > 40 else "")
        raise ValueError(f"layer {name!r} does not exist in {type(model).__name__}"
                         + (f"; closest names: {close}" if close else "") + f"; available: {shown or '(none)'}")
    return modules[name], where, sel


def select(t, spec: str, sel):
    """The tensor of an activation: ``sel`` picks an element of a tuple/list/dict, else its first tensor."""
    import torch

    if sel is not None and isinstance(t, (tuple, list)):
        if not sel.lstrip("-").isdigit() or not -len(t) <= int(sel) < len(t):
            raise ValueError(f"layer {spec!r}: the output is a {type(t).__name__} of {len(t)}; @{sel} is not an index")
        t = t[int(sel)]
    elif sel is not None and isinstance(t, dict):
        if sel not in t:
            raise ValueError(f"layer {spec!r}: the output dict has keys {list(t)}, not {sel!r}")
        t = t[sel]
    elif sel is not None and not isinstance(t, torch.Tensor):
        raise ValueError(f"layer {spec!r}: @{sel} given but the output is a {type(t).__name__}")
    if isinstance(t, dict):
        t = next((v for v in t.values() if isinstance(v, torch.Tensor)), t)
    elif isinstance(t, (tuple, list)):
        t = next((v for v in t if isinstance(v, torch.Tensor)), t)
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"layer {spec!r}: produced a {type(t).__name__}, not a tensor")
    return t


def rows(t, spec: str, pool: str, b: int, max_features: int):
    """(b, p) rows of an activation: pooled (mean over space or tokens) or flattened."""
    if t.dim() == 0 or t.shape[0] != b:
        raise ValueError(f"layer {spec!r}: activation of shape {tuple(t.shape)} does not have the batch ({b}) first")
    if pool == "mean" and t.dim() == 3:
        t = t.mean(dim=1)
    elif pool == "mean" and t.dim() > 3:
        t = t.mean(dim=tuple(range(2, t.dim())))
    t = t.reshape(b, -1)
    if t.shape[1] > max_features:
        raise ValueError(f"layer {spec!r}: {t.shape[1]} features exceed max_features = {max_features} (its p×p "
                         "moments would take " f"{8 * t.shape[1] ** 2 / 2 ** 30:.1f} GiB); pool it "
                         "(pool='mean') or raise max_features")
    if not t.is_floating_point():
        t = t.double()
    return t


def snapshot(t, spec: str, sel, pool: str, b: int, max_features: int):
    """The (b, p) rows of an activation, taken when its hook fires: never a view of the module's output, so an
    in-place operation later in the forward pass (``ReLU(inplace=True)`` after a convolution) cannot change them."""
    src = select(t, spec, sel)
    r = rows(src, spec, pool, b, max_features)
    return r.clone() if r.untyped_storage().data_ptr() == src.untyped_storage().data_ptr() else r


def _pools(pool, names) -> dict:
    if isinstance(pool, str):
        pool = {n: pool for n in names}
    pool = dict(pool)
    for n in names:
        pool.setdefault(n, "mean")
    bad = {k: v for k, v in pool.items() if v not in POOLS}
    if bad:
        raise ValueError(f"pool: each layer's reduction must be one of {POOLS}, got {bad}")
    unknown = [k for k in pool if k not in names]
    if unknown:
        raise ValueError(f"pool: {unknown} are not among the captured layers {list(names)}")
    return pool


def split_batch(batch):
    """(x, y or None, ids or None) of one batch (module doc)."""
    if isinstance(batch, dict):
        return batch.get("x", batch.get("image")), batch.get("y", batch.get("label")), batch.get("id")
    if isinstance(batch, (tuple, list)):
        if not 1 <= len(batch) <= 3:
            raise ValueError(f"batches: a batch must be x, (x, y) or (x, y, ids); got a {len(batch)}-tuple")
        return tuple(batch) + (None,) * (3 - len(batch))
    return batch, None, None


class _Hooks:
    """Forward hooks of one model's layers; ``forward(x)`` returns {name: (b, p) rows} (reduced when the hook fires,
    :func:`snapshot`). ``pool``: {name: "mean" | "flatten"}."""

    def __init__(self, model, layers: dict, pool: dict, max_features: int):
        self.model, self.layers, self.pool, self.max_features = model, layers, pool, max_features
        self.b = 0
        self.targets = {n: resolve(model, s) for n, s in layers.items()}
        self.seen: dict = {}
        self.calls: dict = {}
        self.handles = []
        by_module: dict = {}
        for name, (mod, where, _) in self.targets.items():
            if where == "return":
                continue
            by_module.setdefault((id(mod), where), (mod, where, []))[2].append(name)
        for mod, where, names in by_module.values():
            if where == "input":
                h = mod.register_forward_pre_hook(self._pre(names))
            else:
                h = mod.register_forward_hook(self._post(names))
            self.handles.append(h)

    def _pre(self, names):
        def hook(mod, inp):
            for n in names:
                self.seen[n] = self._take(n, inp[0] if isinstance(inp, tuple) and len(inp) else inp)
                self.calls[n] = self.calls.get(n, 0) + 1
        return hook

    def _post(self, names):
        def hook(mod, inp, out):
            for n in names:
                self.seen[n] = self._take(n, out)
                self.calls[n] = self.calls.get(n, 0) + 1
        return hook

    def _take(self, name: str, t):
        return snapshot(t, self.layers[name], self.targets[name][2], self.pool[name], self.b, self.max_features)

    def forward(self, x):
        self.seen.clear()
        self.calls.clear()
        self.b = x.shape[0]
        out = self.model(x)
        got = {}
        for name, (mod, where, sel) in self.targets.items():
            if where == "return":
                got[name] = self._take(name, out)
                continue
            if name not in self.seen:
                raise ValueError(f"layer {self.layers[name]!r}: its module was not called during the forward pass")
            got[name] = self.seen[name]
        return got

    def remove(self):
        for h in self.handles:
            h.remove()


def _layer_dict(layers) -> dict:
    if layers is None:
        return {"output": "output"}
    if isinstance(layers, str):
        return {layers: layers}
    if isinstance(layers, dict):
        return dict(layers)
    return {s: s for s in layers}


def _pairs(pairs, names) -> list:
    if pairs in (None, False, "none"):
        return []
    if pairs in (True, "all"):
        return [(names[i], names[j]) for i in range(len(names)) for j in range(i + 1, len(names))]
    out = [tuple(p) for p in pairs]
    for a, b in out:
        for k in (a, b):
            if k not in names:
                raise ValueError(f"pairs: {k!r} is not a captured layer; captured: {names}")
    return out


def capture(model, batches: Iterable, layers=None, **kw) -> GeometryState:
    """One pass of ``model`` over ``batches``: the statistics of ``layers`` (list of specs, or {name: spec}).

    Keywords: ``pool`` ("mean" | "flatten" | {name: ...}), ``n_classes`` (labels → class statistics),
    ``pairs`` ("all" (default): cross-moments of every two layers, for the CKA matrix; None; or a list),
    ``device`` (default CUDA when present), ``progress``, ``total``, ``max_features`` (4096), ``desc``.
    """
    return capture_models({"": model}, batches, {"": layers}, **kw)


def capture_models(models: dict, batches, layers: dict, *, streams: dict | None = None, pool="mean",
                   n_classes: int | None = None, pairs="all", device=None, progress: bool | None = None,
                   total: int | None = None, max_features: int = 4096, desc: str = "geometry",
                   reduce: bool | None = None, max_memory: float = 8 * 2 ** 30) -> GeometryState:
    """Several models on the same samples; layer names are "<model>/<layer>" (just "<layer>" for the key "").

    ``max_memory``: bytes the accumulators may take (default 8 GiB; checked at the first batch, a ValueError naming
    the largest parts). ``reduce``: all-reduce the state over the ``torch.distributed`` process group (each rank
    captured its own batches; :func:`sims.geometry.distributed.all_reduce`); None (default): when a process group
    is initialised (``torchrun``). Every rank must capture at least one batch.

    ``batches`` feeds every model; or ``streams`` {model key: its own batches}, aligned by sample id (every
    batch must carry the same ids in the same order: a mismatch, or one stream ending first, is a ValueError).
    """
    import torch
    from sims.progress import bar as progress_bar

    if not isinstance(models, dict) or not models:
        raise ValueError("models: expected a non-empty dict {key: torch.nn.Module}")
    for k, m in models.items():
        if not isinstance(m, torch.nn.Module):
            raise ValueError(f"model {k!r}: expected a torch.nn.Module, got {type(m).__name__}")
    if isinstance(max_features, bool) or not isinstance(max_features, int) or max_features < 1:
        raise ValueError(f"max_features: must be an integer >= 1, got {max_features!r}")
    if n_classes is not None and (isinstance(n_classes, bool) or not isinstance(n_classes, int) or n_classes < 2):
        raise ValueError(f"n_classes: must be an integer >= 2 (or None: no class statistics), got {n_classes!r}")
    full = {}
    hooks = {}
    dev = torch.device(default_device() if device is None else device)
    acc_dev = accumulation_device(dev)
    try:
        lays = {}
        for key in models:
            lays[key] = _layer_dict(layers.get(key) if isinstance(layers, dict) and key in layers else layers)
            for n in lays[key]:
                full[f"{key}/{n}" if key else n] = (key, n)
        names = list(full)
        pool = _pools(pool, names)
        for key, model in models.items():
            hooks[key] = _Hooks(model, lays[key], {n: pool[f"{key}/{n}" if key else n] for n in lays[key]},
                                max_features)
        pair_list = _pairs(pairs, names)
        if streams is not None:
            missing = [k for k in models if k not in streams]
            if missing or set(streams) - set(models):
                raise ValueError(f"streams: needs one batch stream per model {list(models)}, got {list(streams)}")
            its = {k: iter(streams[k]) for k in models}
        else:
            shared = iter(batches)
        acc, reused = None, {}
        for m in models.values():
            m.eval()
        bar = progress_bar(total=total, desc=desc, unit="img", smoothing=0.1,
                           disable=None if progress is None else not progress)
        pos = 0
        with torch.inference_mode(), bar:
            while True:
                got = _next_batches(its if streams is not None else {k: shared for k in models},
                                    streams is not None, pos)
                if got is None:
                    break
                feats, y, b = {}, None, None
                for key, (x, yk, ids) in got.items():
                    if not isinstance(x, torch.Tensor):
                        raise ValueError(f"batches: expected tensors, got {type(x).__name__}")
                    b = x.shape[0]
                    if yk is not None and y is None:
                        y = torch.as_tensor(yk).to(acc_dev).long()
                    taken = hooks[key].forward(x.to(dev))
                    for n, t in taken.items():
                        full_name = f"{key}/{n}" if key else n
                        feats[full_name] = t
                        if hooks[key].calls.get(n, 1) > 1 and full_name not in reused:
                            reused[full_name] = hooks[key].calls[n]
                            warnings.warn(f"layer {full_name!r}: its module ran {reused[full_name]} times in one "
                                          "forward pass (a reused module); its last call is used", stacklevel=2)
                if b == 0:
                    continue
                if y is not None:
                    y = _labels(y, b, n_classes)
                if acc is None:
                    dims = {n: t.shape[1] for n, t in feats.items()}
                    check_memory(dims, pair_list, n_classes, max_memory)
                    acc = Accumulator(dims, n_classes, pair_list, acc_dev)
                acc.update(feats, y if n_classes is not None else None)
                pos += b
                bar.update(b)
    finally:
        for h in hooks.values():
            h.remove()
    if acc is None or acc.n == 0:
        raise ValueError("batches: empty (no sample was captured)")
    st = acc.state()
    st.reused = reused
    st.meta = {"device": str(dev), "accumulated_on": str(acc_dev), "layers": {n: full[n][1] for n in names},
               "pool": pool}
    if reduce is None:
        reduce = torch.distributed.is_available() and torch.distributed.is_initialized()
    if reduce:
        from sims.geometry.distributed import all_reduce

        meta = st.meta
        st = all_reduce(st)
        st.meta = {**meta, "world_size": torch.distributed.get_world_size()}
    return st


def check_memory(dims: dict, pairs: list, n_classes, max_memory: float) -> int:
    """Bytes of the float64 accumulators (layer moments, class sums, pair cross-moments, staging), or a ValueError
    when they exceed ``max_memory`` or the memory this machine has available (:func:`sims.resources.require`)."""
    k = int(n_classes or 0)
    layer = {n: 8 * ((p + 2) ** 2 + k * (2 * p + 2)) for n, p in dims.items()}
    pair = sum(8 * (dims[a] + 1) * (dims[b] + 1) for a, b in pairs)
    total = sum(layer.values()) + pair + 8 * Accumulator.STAGE * len(dims)
    top = sorted(dims.items(), key=lambda kv: -kv[1])[:3]
    hint = "capture fewer or pooled layers, or pairs=None (theorylab geometry --no-cka)"
    if total > max_memory:
        raise ValueError(f"the accumulators would take {total / 2 ** 30:.1f} GiB (max_memory "
                         f"{max_memory / 2 ** 30:.1f} GiB): {len(dims)} layers, widest {top}, {len(pairs)} layer pairs "
                         f"({pair / 2 ** 30:.1f} GiB); {hint}")
    from sims.resources import require

    require(total, f"the geometry accumulators ({len(dims)} layers, widest {top}, {len(pairs)} layer pairs)",
            hint=hint)
    return total


def _labels(y, b: int, n_classes):
    if y.shape != (b,):
        raise ValueError(f"labels: {tuple(y.shape)} for a batch of {b} samples")
    if n_classes is not None and b and (int(y.min()) < 0 or int(y.max()) >= n_classes):
        bad = int(y[(y < 0) | (y >= n_classes)][0])
        raise ValueError(f"labels: label {bad} is outside [0, {n_classes}) (n_classes = {n_classes})")
    return y


def _next_batches(its: dict, separate: bool, pos: int):
    """{key: (x, y, ids)} of the next batch of every stream (one shared batch when not separate), or None."""
    import torch

    if not separate:
        it = next(iter(its.values()))
        try:
            batch = split_batch(next(it))
        except StopIteration:
            return None
        return {k: batch for k in its}
    got, ended = {}, []
    for k, it in its.items():
        try:
            got[k] = split_batch(next(it))
        except StopIteration:
            ended.append(k)
    if ended and len(ended) < len(its):
        raise ValueError(f"streams: {ended} ended after {pos} samples while {[k for k in its if k not in ended]} "
                         "still had batches; the streams must hold the same samples")
    if ended:
        return None
    ref_key = next(iter(got))
    ref = got[ref_key]
    for k, (x, _, ids) in got.items():
        if ids is None or ref[2] is None:
            raise ValueError(f"streams: batch at sample {pos} of stream {k!r} has no sample ids; separate streams "
                             "are aligned by id: yield (x, y, ids)")
        a, b = torch.as_tensor(ref[2]).reshape(-1), torch.as_tensor(ids).reshape(-1)
        if a.shape != b.shape or not torch.equal(a.cpu(), b.cpu()):
            i = next((j for j in range(min(len(a), len(b))) if int(a[j]) != int(b[j])), min(len(a), len(b)))
            va = int(a[i]) if i < len(a) else None
            vb = int(b[i]) if i < len(b) else None
            raise ValueError(f"streams: sample ids differ at sample {pos + i}: {ref_key!r} has {va}, {k!r} has {vb}; "
                             "the streams must present the same samples in the same order")
    return got
