"""Forward hooks on any ``torch.nn.Module`` feeding streaming accumulators (no activations are kept by default).

``capture(model, batches, layers=..., device=...)`` runs ``model`` over ``batches`` and, for every named layer,
accumulates in float64

* :class:`SecondMoment`: count, Σh and Σhhᵀ → the mean and the uncentred second-moment matrix E[h hᵀ]
  (ND Eq 2's Cov when h are the logits) and the centred covariance (RD Sec 3.3's Σ);
* :class:`ClassMoments`: per-class counts and sums → class means, Σ_W and Σ_B (VC Eq 1–2) from the layer's
  :class:`SecondMoment`, when the batches carry labels;
* optionally (``keep=``) the activations themselves, for checks that need per-sample values.

A layer spec is ``"output"`` (the model's output), ``"<module name>"`` (that module's output) or
``"<module name>:input"`` (its first input, e.g. ``"_fc:input"``: the final features F(x) of RD Eq 11).
Activations are flattened to (batch, -1). Bad input is a ValueError: a layer name that does not exist
(with the closest names), a model output that is not 2-D logits (batch, classes ≥ 2), NaN/Inf activations.
"""
from __future__ import annotations

import dataclasses
import difflib
from typing import Iterable

import numpy as np


class SecondMoment:
    """Streaming Σh, Σhhᵀ in float64 over rows h ∈ R^d; mergeable (sums add)."""

    def __init__(self, dim: int | None = None):
        self.n = 0
        self.s1 = None if dim is None else np.zeros(dim)
        self.s2 = None if dim is None else np.zeros((dim, dim))

    def update(self, H) -> "SecondMoment":
        H = np.asarray(H, dtype=np.float64)
        if H.ndim != 2:
            raise ValueError(f"SecondMoment.update: expected (batch, d), got shape {H.shape}")
        if self.s1 is None:
            self.s1, self.s2 = np.zeros(H.shape[1]), np.zeros((H.shape[1], H.shape[1]))
        if H.shape[1] != self.s1.shape[0]:
            raise ValueError(f"SecondMoment.update: width {H.shape[1]} != {self.s1.shape[0]}")
        self.n += H.shape[0]
        self.s1 += H.sum(axis=0)
        self.s2 += H.T @ H
        return self

    def merge(self, other: "SecondMoment") -> "SecondMoment":
        if other.n == 0:
            return self
        if self.n == 0:
            self.n, self.s1, self.s2 = other.n, other.s1.copy(), other.s2.copy()
            return self
        self.n += other.n
        self.s1 = self.s1 + other.s1
        self.s2 = self.s2 + other.s2
        return self

    def _need(self):
        if self.n == 0:
            raise ValueError("SecondMoment: no samples accumulated")

    @property
    def mean(self) -> np.ndarray:
        self._need()
        return self.s1 / self.n

    @property
    def second_moment(self) -> np.ndarray:
        """E[h hᵀ] (uncentred, ND Eq 2's Cov), symmetrised exactly."""
        self._need()
        m = self.s2 / self.n
        return 0.5 * (m + m.T)

    @property
    def covariance(self) -> np.ndarray:
        """E[(h − μ)(h − μ)ᵀ] (population normalisation)."""
        m = self.mean
        return self.second_moment - np.outer(m, m)


class ClassMoments:
    """Per-class counts and sums of one layer (labels may appear in any order; classes grow as seen)."""

    def __init__(self):
        self.counts: dict = {}
        self.sums: dict = {}

    def update(self, H, y) -> "ClassMoments":
        H = np.asarray(H, dtype=np.float64)
        y = np.asarray(y)
        if y.shape != (H.shape[0],):
            raise ValueError(f"ClassMoments.update: {y.shape[0] if y.ndim else 0} labels for {H.shape[0]} rows")
        for c in np.unique(y):
            sel = y == c
            c = int(c)
            self.counts[c] = self.counts.get(c, 0) + int(sel.sum())
            self.sums[c] = self.sums.get(c, 0.0) + H[sel].sum(axis=0)
        return self

    @property
    def classes(self) -> np.ndarray:
        return np.array(sorted(self.counts))

    def means(self) -> np.ndarray:
        return np.stack([self.sums[c] / self.counts[c] for c in self.classes])

    def scatter(self, moments: SecondMoment) -> tuple[np.ndarray, np.ndarray]:
        """(Σ_W, Σ_B) of VC Eq 1–2 (population normalisation) from the class sums and the layer's moments.

        Σ_W = E[hhᵀ] − Σ_c (n_c/N) μ_c μ_cᵀ,  Σ_B = Σ_c (n_c/N)(μ_c − μ)(μ_c − μ)ᵀ.
        """
        n = np.array([self.counts[c] for c in self.classes], dtype=float)
        if n.sum() != moments.n:
            raise ValueError(f"ClassMoments.scatter: {int(n.sum())} labelled rows vs {moments.n} in the moments")
        if len(n) < 2:
            raise ValueError("ClassMoments.scatter: need at least 2 classes")
        M = self.means()
        p = n / n.sum()
        mu = p @ M
        sw = moments.second_moment - (M.T * p) @ M
        D = M - mu
        sb = (D.T * p) @ D
        return 0.5 * (sw + sw.T), 0.5 * (sb + sb.T)


@dataclasses.dataclass
class CaptureResult:
    """What :func:`capture` accumulated: per layer moments / class moments / kept rows, plus labels and argmax."""

    moments: dict
    classes: dict
    kept: dict
    labels: np.ndarray | None
    predictions: np.ndarray
    n: int
    layers: dict


def _resolve(model, spec: str):
    modules = dict(model.named_modules())
    if spec == "output":
        return model, "output"
    name, _, where = spec.partition(":")
    if where not in ("", "input", "output"):
        raise ValueError(f"layer {spec!r}: the part after ':' must be 'input' or 'output'")
    if name not in modules or name == "":
        close = difflib.get_close_matches(name, [n for n in modules if n], n=5)
        raise ValueError(f"layer {name!r} does not exist in {type(model).__name__}"
                         + (f"; closest names: {close}" if close else "")
                         + f" ({len(modules) - 1} named modules; see model.named_modules())")
    return modules[name], where or "output"


def _first_tensor(t):
    """The activation of a block whose output is a tensor, a tuple/list (first tensor: e.g. attention blocks
    returning (out, weights)) or a dict (e.g. ``last_hidden_state``: the first tensor value)."""
    import torch

    if isinstance(t, dict):
        t = next((v for v in t.values() if isinstance(v, torch.Tensor)), None)
    elif isinstance(t, (tuple, list)):
        t = next((v for v in t if isinstance(v, torch.Tensor)), t[0] if len(t) else None)
    return t


def _as_rows(t, spec: str, pool: bool = False) -> np.ndarray:
    import torch

    t = _first_tensor(t)
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"layer {spec!r}: produced a {type(t).__name__}, not a tensor")
    if pool and t.dim() == 3:  # tokens (B, T, C) → (B, C): mean over the tokens
        t = t.mean(dim=1)
    elif pool and t.dim() > 3:  # (B, C, H, W) → (B, C): global average over space
        t = t.mean(dim=tuple(range(2, t.dim())))
    a = t.detach().float().reshape(t.shape[0], -1).cpu().numpy()
    if not np.isfinite(a).all():
        col = int(np.argwhere(~np.isfinite(a))[0][1])
        raise ValueError(f"layer {spec!r}: non-finite activation (first at column {col})")
    return a


def capture(model, batches: Iterable, layers=None, *, device: str = "cpu", keep=(), class_stats: bool = True,
            n_classes: int | None = None, progress: bool | None = None, total: int | None = None,
            desc: str = "capture", pool=()) -> CaptureResult:
    """Run ``model`` on ``batches`` with forward hooks on ``layers`` and stream their statistics.

    ``batches``: iterable of ``x`` or ``(x, y)`` (y: integer labels, e.g. the source photograph, used for
    class statistics). ``layers``: dict name → spec, a list of specs, or None (= ``{"logits": "output"}``).
    ``keep``: names whose rows are kept (float32) in ``result.kept``. The model's output must be 2-D
    logits (batch, classes); ``result.predictions`` is their argmax. Runs under ``torch.inference_mode``.
    ``n_classes``: when given, the class statistics are :class:`theory.collapse.ClassStats` (labels in
    [0, n_classes)), so ``theory.collapse.vci(result.classes[name])`` etc. work without keeping activations;
    otherwise :class:`ClassMoments` (any integer labels).
    ``progress``: tqdm bar on stderr in images/s (None: only on a terminal); ``total``: number of samples
    (images or crops) the bar counts to.
    ``pool``: names whose activations are averaged to (B, C) (per-block statistics): (B, C, H, W) over space,
    token sequences (B, T, C) over the tokens.
    Blocks returning tuples or dicts contribute their first tensor.
    """
    import torch
    from sims.progress import bar as progress_bar

    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"model: expected a torch.nn.Module, got {type(model).__name__}")
    if layers is None:
        layers = {"logits": "output"}
    elif isinstance(layers, (list, tuple)):
        layers = {s: s for s in layers}
    elif isinstance(layers, str):
        layers = {layers: layers}
    layers = dict(layers)
    keep = tuple(keep)
    unknown = [k for k in keep if k not in layers]
    if unknown:
        raise ValueError(f"keep: {unknown} are not among the captured layers {list(layers)}")
    targets = {name: _resolve(model, spec) for name, spec in layers.items()}
    moments = {name: SecondMoment() for name in layers}
    cls = {name: ClassMoments() for name in layers} if n_classes is None else {}
    kept = {name: [] for name in keep}
    current: dict = {}
    handles = []

    def make_hook(name, where):
        if where == "input":
            return lambda mod, inp: current.__setitem__(name, inp)
        return lambda mod, inp, out: current.__setitem__(name, out)

    for name, (mod, where) in targets.items():
        if where == "output" and mod is model and layers[name] == "output":
            continue  # read from the return value
        h = (mod.register_forward_pre_hook(make_hook(name, "input")) if where == "input"
             else mod.register_forward_hook(make_hook(name, "output")))
        handles.append(h)
    model.eval()
    labels, preds, n, bar = [], [], 0, None
    try:
        with torch.inference_mode():
            bar = progress_bar(total=total, desc=desc, unit="img", smoothing=0.1,
                               disable=None if progress is None else not progress)
            for batch in batches:
                if isinstance(batch, (tuple, list)):
                    x, y = batch[0], (None if len(batch) < 2 else batch[1])
                else:
                    x, y = batch, None
                if not isinstance(x, torch.Tensor):
                    raise ValueError(f"batches: expected tensors, got {type(x).__name__}")
                x = x.to(device)
                if x.dim() == 4 and x.device.type == "cpu":
                    x = x.contiguous(memory_format=torch.channels_last)
                current.clear()
                out = model(x)
                if isinstance(out, (tuple, list, dict)):
                    out = _first_tensor(out)
                if not isinstance(out, torch.Tensor) or out.dim() != 2 or out.shape[0] != x.shape[0] \
                        or out.shape[1] < 2:
                    shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
                    raise ValueError(f"model output: expected 2-D logits (batch={x.shape[0]}, classes>=2), "
                                     f"got {shape}")
                preds.append(out.argmax(dim=1).cpu().numpy())
                yb = None if y is None else np.asarray(y.cpu().numpy() if isinstance(y, torch.Tensor) else y)
                if yb is not None:
                    labels.append(yb)
                for name, spec in layers.items():
                    t = out if (spec == "output") else current.get(name)
                    if t is None:
                        raise ValueError(f"layer {spec!r}: was not called during the forward pass")
                    rows = _as_rows(t, spec, name in pool)
                    moments[name].update(rows)
                    if yb is not None and class_stats:
                        if name not in cls:  # n_classes given: VC's mergeable ClassStats, created at the first batch
                            from theory.collapse import ClassStats

                            cls[name] = ClassStats(rows.shape[1], int(n_classes))
                        cls[name].update(rows, yb)
                    if name in kept:
                        kept[name].append(rows.astype(np.float32))
                n += x.shape[0]
                bar.update(x.shape[0])
    finally:
        if bar is not None:
            bar.close()
        for h in handles:
            h.remove()
    if n == 0:
        raise ValueError("batches: empty (no sample was captured)")
    lab = np.concatenate(labels) if labels and sum(len(v) for v in labels) == n else None
    return CaptureResult(
        moments=moments, classes={k: v for k, v in cls.items() if lab is not None and class_stats},
        kept={k: np.concatenate(v) for k, v in kept.items()}, labels=lab, predictions=np.concatenate(preds),
        n=n, layers=layers)
