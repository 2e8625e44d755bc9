"""Training the glyph CNNs (:mod:`sims.glyphs.nets`) on the glyph task, with their weights cached on disk.

``train_glyph_net(task_cfg, arch, level, ...)`` trains one network and returns a :class:`GlyphNet`: the model in
eval mode, its configuration, the per-epoch history and the weights at the requested checkpoint epochs. The
result is cached by :func:`sims.cache.cached` under the parameters and the fingerprint of this module's code (and
of everything it imports: the nets and the glyph task), so a second call loads the weights and an edit of the
trainer, the nets or the task retrains.

**Loss** (VC Sec 6.3). CE(z/τ, y) + λ·R(F, y): the cross-entropy of the logits z divided by the softmax
temperature τ (VC Sec 6.3's Softmax_τ; Kornblith et al. 2021), plus λ = ``cos_reg`` times the within-class
cosine-similarity regulariser on the final features F(x) (:func:`cosine_regulariser`). VC Sec 6.3 describes its
term as "the average within-class cosine similarity divided by the number of data points of each class in the
batch"; our reading, per batch: for each class k with n_k ≥ 2 samples in the batch, s_k = the mean of
sim(F_i, F_j) = F_iᵀF_j/(‖F_i‖‖F_j‖) over the ordered pairs i ≠ j of class k, and R = the mean over those
classes of s_k / n_k (classes with one sample in the batch have no pair and are left out; R = 0 when no class
has two). Its sign is the one VC's Table 2 implies: a larger λ *lowers* the within-class cosine similarity
(their "Cos Sim" column falls from 0.58 at λ = 0 to 0.17 at λ = 10), so the term is added to the loss. That
column is a similarity although VC Sec 3.2 names d̄_within (a distance) "Cosine Similarity": in the τ group it
rises as Fuzziness, Sqr Dist and VCI fall (vc.paper_tables' finding), so it is 1 − d̄_within.

**Batches.** So that a class has several samples in a batch (R is undefined otherwise, and with 1000 classes
and 256-image batches most classes would appear once), every epoch orders the training set in same-class
groups of ``group`` = 4 images: the images of each class are shuffled and cut into groups, the groups are
shuffled, and the sequence is split into ⌈N/batch_size⌉ nearly equal batches. All runs use this order (λ = 0
too), so runs that differ only in τ or λ see the same batches. All randomness (initialisation, then the epoch
orders) comes from one ``torch.Generator(seed)`` on the CPU, whatever the device.

**Optimiser (fixed before any verdict was looked at).** AdamW (β = 0.9, 0.999; weight decay 5·10⁻⁴ on conv
and linear weights only, not on biases or BN), peak learning rate ``lr`` = 2·10⁻³, linear warm-up over the
first 5 % of the steps, then cosine decay to 0 (the VC paper's cosine-annealing schedule, VC Sec 6.1). Why
Adam: the same settings train both a BN-free LeNet and a BN ResNet within a few epochs, with no per-network
tuning (the verdicts compare many networks, and tuning each is out of our budget); and Adam's step does not
scale with the gradient, so dividing the logits by τ changes the shape of the loss, not the step size — the
temperature experiment then compares temperatures, not learning rates.

**Threads.** On the CPU the training runs with one torch thread (``threads``; docs/glyph_nets.md says why).
Tensors use the channels-last layout. There is no host synchronisation per step: loss and accuracy are summed on
the device and read once per epoch.
"""
from __future__ import annotations

import dataclasses
import math
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

from sims.cache import cached
from sims.glyphs.nets import build_net, check_arch
from sims.threads import single_threaded

LEVELS = ("fine", "base", "script")
GROUP = 4            # same-class images kept together in the epoch order (module doc)
WEIGHT_DECAY = 5e-4  # AdamW's decoupled weight decay, conv and linear weights only
WARMUP = 0.05        # fraction of the steps with a linear warm-up


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Everything that determines a trained glyph net, besides the task configuration and the code."""

    arch: str = "lenet"
    level: str = "fine"
    classes: tuple | None = None
    tau: float = 1.0
    cos_reg: float = 0.0
    epochs: int = 6
    per_class: int = 16
    batch_size: int = 128
    lr: float = 2e-3
    seed: int = 0
    data_seed: int = 0
    checkpoints: tuple = ()
    groups: tuple | None = None
    """An explicit labelling instead of the task's ``level``: ((fine class, label), …) for every trained class
    (e.g. k-means clusters of the fine classes within each script); ``level`` is then "fine" and names nothing."""

    def __post_init__(self):
        check_arch(self.arch)
        if self.level not in LEVELS:
            raise ValueError(f"level: {self.level!r} is not one of {LEVELS}")
        for name in ("tau", "cos_reg", "lr"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"{name}: need a finite number, got {v!r}")
        if self.tau <= 0:
            raise ValueError(f"tau: the softmax temperature must be > 0, got {self.tau!r}")
        if self.cos_reg < 0:
            raise ValueError(f"cos_reg: the regulariser strength λ must be ≥ 0, got {self.cos_reg!r}")
        if self.lr <= 0:
            raise ValueError(f"lr: must be > 0, got {self.lr!r}")
        for name, low in (("epochs", 1), ("per_class", 1), ("batch_size", 2), ("seed", 0), ("data_seed", 0)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
                raise ValueError(f"{name}: need an int ≥ {low}, got {v!r}")
        ck = self.checkpoints
        if not isinstance(ck, (tuple, list)) or any(isinstance(e, bool) or not isinstance(e, (int, np.integer))
                                                     or not 0 <= e <= self.epochs for e in ck):
            raise ValueError(f"checkpoints: need epochs (ints) in [0, epochs={self.epochs}], got {ck!r}")
        object.__setattr__(self, "checkpoints", tuple(sorted({int(e) for e in ck})))
        if self.groups is not None:
            g = np.asarray(self.groups)
            if g.ndim != 2 or g.shape[1] != 2 or not np.issubdtype(g.dtype, np.integer) or len(g) < 2:
                raise ValueError(f"groups: need ((fine class, label), …) pairs of ints, got {self.groups!r}")
            if len(np.unique(g[:, 0])) != len(g):
                raise ValueError("groups: each fine class may appear once")
            if self.classes is not None and set(g[:, 0].tolist()) != set(self.classes):
                raise ValueError("groups: must label exactly the trained classes")
            object.__setattr__(self, "groups", tuple((int(a), int(b)) for a, b in sorted(g.tolist())))

    def label_of(self, task) -> np.ndarray:
        """int64 [n_fine]: each fine class's label — the task's at ``level``, or ``groups`` (−1 for others)."""
        if self.groups is None:
            return np.asarray(task.labels(self.level), dtype=np.int64)
        out = np.full(len(task.labels("fine")), -1, dtype=np.int64)
        g = np.asarray(self.groups)
        out[g[:, 0]] = g[:, 1]
        return out

    def key(self) -> dict:
        """The cache key's view of this configuration (``groups`` only when given: older entries keep their keys)."""
        d = dataclasses.asdict(self)
        if d["groups"] is None:
            del d["groups"]
        return d
        if self.classes is not None:
            c = np.asarray(self.classes)
            if c.ndim != 1 or c.size < 2 or not np.issubdtype(c.dtype, np.integer) or len(np.unique(c)) != c.size:
                raise ValueError(f"classes: need ≥ 2 distinct fine-class indices, got {self.classes!r}")
            object.__setattr__(self, "classes", tuple(int(v) for v in c))


@dataclasses.dataclass
class GlyphNet:
    """A trained glyph net. ``model`` is in eval mode on ``device``; ``label_values[j]`` is the label (at
    ``config.level``, in the task's numbering) of output j; ``classes`` the fine classes trained on;
    ``checkpoints`` maps an epoch to a CPU state dict (epoch 0 = the initialisation); ``history`` holds per-epoch
    arrays ``loss`` (mean training loss, regulariser included), ``ce`` (mean CE(z/τ)) and ``train_acc``
    (accuracy on the training batches, measured during the epoch in train mode). ``seconds`` and
    ``images_per_s`` were measured when the weights were trained (``from_cache`` says whether they were loaded)."""

    model: torch.nn.Module
    config: TrainConfig
    task_cfg: object
    history: dict
    checkpoints: dict
    label_values: np.ndarray
    classes: np.ndarray
    seconds: float
    images_per_s: float
    device: str
    from_cache: bool

    def at_checkpoint(self, epoch: int) -> torch.nn.Module:
        """A copy of the model with the weights saved at ``epoch``, in eval mode on the model's device."""
        if epoch not in self.checkpoints:
            raise ValueError(f"epoch: no checkpoint at {epoch!r}; saved: {sorted(self.checkpoints)}")
        net = build_net(self.config.arch, len(self.label_values), self.task_cfg.size)
        net.load_state_dict(self.checkpoints[epoch])
        return net.to(self.device, memory_format=torch.channels_last).eval()


def resolve_device(device=None) -> torch.device:
    """``device`` as a torch.device; None → CUDA when available, else the CPU."""
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        return torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(f"device: {device!r} is not a torch device") from None


def cosine_regulariser(feats: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """R(F, y) = mean over classes k with n_k ≥ 2 in the batch of s_k / n_k (module doc; VC Sec 6.3).

    s_k = mean of cos(F_i, F_j) over ordered pairs i ≠ j of class k. Vectorised: one B×B cosine matrix, sample
    weights 1/(n_i²(n_i − 1)), no host synchronisation. A zero feature vector has cosine 0 with everything.
    """
    fn = F.normalize(feats, dim=1, eps=1e-12)
    S = fn @ fn.T
    same = (y[:, None] == y[None, :]).to(S.dtype)
    same.fill_diagonal_(0.0)
    n = same.sum(1) + 1.0                                     # n_k of each sample's class
    pairs = n > 1.5
    w = torch.where(pairs, 1.0 / (n * n * (n - 1.0)).clamp_min(1.0), torch.zeros_like(n))
    n_classes = torch.where(pairs, 1.0 / n, torch.zeros_like(n)).sum()   # number of classes with n_k ≥ 2
    total = (w * (same * S).sum(1)).sum()
    return total / n_classes.clamp_min(1.0)


def glyph_loss(logits, feats, y, tau: float = 1.0, cos_reg: float = 0.0):
    """(total, ce, reg): CE(logits/τ, y) + λ R(feats, y) (module doc). ``reg`` is computed only when λ > 0."""
    ce = F.cross_entropy(logits / tau, y)
    if cos_reg > 0:
        reg = cosine_regulariser(feats, y)
        return ce + cos_reg * reg, ce, reg
    return ce, ce, torch.zeros((), device=logits.device)


def epoch_order(y: torch.Tensor, generator: torch.Generator, group: int = GROUP) -> torch.Tensor:
    """A permutation of range(len(y)) in shuffled same-class groups of ``group`` (module doc), on the CPU."""
    y = y.cpu()
    n = len(y)
    u = torch.rand(n, generator=generator, dtype=torch.float64)
    by_class = torch.argsort(y.double() + u)                  # grouped by class, shuffled within each class
    ys = y[by_class]
    start = torch.zeros_like(ys)
    new = torch.ones(n, dtype=torch.bool)
    new[1:] = ys[1:] != ys[:-1]
    pos = torch.arange(n)
    start = torch.cummax(torch.where(new, pos, torch.zeros_like(pos)), 0).values
    rank = pos - start                                        # position within its class
    chunk = torch.cumsum((new | (rank % group == 0)).long(), 0) - 1
    prio = torch.rand(int(chunk[-1]) + 1, generator=generator, dtype=torch.float64)
    order = torch.sort(prio[chunk], stable=True).indices
    return by_class[order]


def _param_groups(net):
    decay, rest = [], []
    for m in net.modules():
        for name, p in m.named_parameters(recurse=False):
            is_weight = name == "weight" and isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))
            (decay if is_weight else rest).append(p)
    return [{"params": decay, "weight_decay": WEIGHT_DECAY}, {"params": rest, "weight_decay": 0.0}]


def _lr_factor(step: int, total: int) -> float:
    warm = max(1, int(WARMUP * total))
    if step < warm:
        return (step + 1) / warm
    return 0.5 * (1.0 + math.cos(math.pi * (step - warm) / max(1, total - warm)))


_LAST_IMAGES: list = []  # [(task, per_class, data_seed, X, y)]: the last training set drawn, reused in-process


def _train_images(task, per_class: int, data_seed: int, classes=None):
    """``task.images('train', per_class, data_seed, classes=classes)`` as numpy (``classes`` sorted distinct, or
    None: all), memoised for the last (task, per_class, seed, classes): a verify run trains many nets on one
    training set, and drawing it costs ~0.2 ms per image. A class's images do not depend on which others are drawn."""
    key = (per_class, data_seed, classes)
    if _LAST_IMAGES and _LAST_IMAGES[0][0] is task and _LAST_IMAGES[0][1] == key:
        return _LAST_IMAGES[0][2:]
    X, y_fine, _face = (task.images("train", per_class, data_seed) if classes is None
                        else task.images("train", per_class, data_seed, classes=list(classes)))
    X, y_fine = np.asarray(X, dtype=np.float32), np.asarray(y_fine, dtype=np.int64)
    _LAST_IMAGES[:] = [(task, key, X, y_fine)]  # holds the task: its id cannot be reused
    return X, y_fine


def training_data(task, cfg: TrainConfig):
    """(X, y, label_values, classes): the training images of ``cfg.classes`` with labels 0..K−1 at ``cfg.level``.

    ``label_values[j]`` is the task's label (at that level) of output j, sorted ascending."""
    n_fine = len(task.labels("fine"))
    if cfg.classes is not None and not all(0 <= c < n_fine for c in cfg.classes):
        raise ValueError(f"classes: fine-class indices must lie in [0, {n_fine}), got {cfg.classes!r}")
    X, y_fine = _train_images(task, cfg.per_class, cfg.data_seed,
                              None if cfg.classes is None else tuple(np.unique(cfg.classes).tolist()))
    classes = np.arange(n_fine) if cfg.classes is None else np.asarray(cfg.classes, dtype=np.int64)
    keep = np.isin(y_fine, classes)
    X, y_fine = X[keep], y_fine[keep]
    level_of = cfg.label_of(task)
    label_values, y = np.unique(level_of[y_fine], return_inverse=True)
    if len(label_values) < 2:
        raise ValueError(f"level={cfg.level!r}: the chosen classes carry {len(label_values)} label(s) at this level;"
                         " a classifier needs ≥ 2")
    return X, y.astype(np.int64), label_values, np.sort(classes)


def _load_task(task_cfg):
    from sims.glyphs import glyph_task

    return glyph_task(task_cfg)


def _state_to_arrays(prefix: str, sd: dict) -> dict:
    return {f"{prefix}/{k}": v.detach().cpu().numpy() for k, v in sd.items()}


def _arrays_to_state(prefix: str, arrays: dict) -> dict:
    p = prefix + "/"
    return {k[len(p):]: torch.from_numpy(np.array(v)) for k, v in arrays.items() if k.startswith(p)}


def fit(net, X, y, cfg: TrainConfig, device, progress=True, desc="glyph net"):
    """Train ``net`` in place on (X, y) (tensors on ``device``) with ``cfg``'s loss, order and optimiser.

    Returns (history dict of per-epoch arrays, {epoch: CPU state dict}, seconds). ``generator`` order: the
    caller seeded the init; the epoch orders come from a generator seeded with ``cfg.seed`` here.
    """
    from sims.progress import bar as progress_bar

    gen = torch.Generator().manual_seed(int(cfg.seed) + 1_000_003)
    n = len(y)
    n_batches = math.ceil(n / cfg.batch_size)
    total_steps = cfg.epochs * n_batches
    opt = torch.optim.AdamW(_param_groups(net), lr=cfg.lr, betas=(0.9, 0.999))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: _lr_factor(s, total_steps))
    ckpts = {}
    if 0 in cfg.checkpoints:
        ckpts[0] = {k: v.detach().cpu().clone() for k, v in net.state_dict().items()}
    hist = {"loss": [], "ce": [], "train_acc": []}
    bar = progress_bar(total=cfg.epochs * n, unit="img", unit_scale=True, desc=desc, file=sys.stderr,
                       disable=True if not progress else False, leave=False)  # one line per network in a log
    t0 = time.perf_counter()
    net.train()
    for epoch in range(1, cfg.epochs + 1):
        order = epoch_order(y, gen).to(device)
        sums = torch.zeros(3, device=device, dtype=torch.float64)  # loss, ce, correct (summed over samples)
        for idx in torch.tensor_split(order, n_batches):
            xb, yb = X[idx], y[idx]
            feats = net.embed(xb)
            logits = net.classifier(feats)
            loss, ce, _ = glyph_loss(logits, feats, yb, cfg.tau, cfg.cos_reg)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            with torch.no_grad():
                m = len(idx)
                sums += torch.stack([loss.detach() * m, ce.detach() * m, (logits.argmax(1) == yb).sum()]).double()
            bar.update(len(idx))
        s = (sums / n).cpu().numpy()                         # one host sync per epoch
        if not np.isfinite(s[0]):
            raise ValueError(f"training diverged at epoch {epoch} (loss {s[0]}): lower lr={cfg.lr} or raise tau")
        hist["loss"].append(s[0])
        hist["ce"].append(s[1])
        hist["train_acc"].append(s[2])
        bar.set_postfix(loss=f"{s[0]:.3f}", acc=f"{s[2]:.3f}")
        if epoch in cfg.checkpoints:
            ckpts[epoch] = {k: v.detach().cpu().clone() for k, v in net.state_dict().items()}
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    seconds = time.perf_counter() - t0
    bar.close()
    net.eval()
    return {k: np.asarray(v, dtype=np.float64) for k, v in hist.items()}, ckpts, seconds


def train_glyph_net(task_cfg, arch: str = "lenet", level: str = "fine", classes=None, tau: float = 1.0,
                    cos_reg: float = 0.0, epochs: int = 6, per_class: int = 16, batch_size: int = 128,
                    lr: float = 2e-3, seed: int = 0, device=None, checkpoints=(), progress: bool = True,
                    data_seed: int = 0, threads: int = 1, refresh: bool = False, groups=None) -> GlyphNet:
    """Train (or load from the cache) one glyph net; a :class:`GlyphNet` (module doc for loss, order, optimiser).

    ``task_cfg``: a ``sims.glyphs.GlyphTaskConfig``; the training images are
    ``task.images('train', per_class, data_seed)`` (one fixed training set for every ``seed``: the seed draws
    the initialisation and the batch order). ``level``: the label granularity ('fine' codepoints, 'base'
    letters, 'script'). ``classes``: a subset of fine classes to train on (None: all). ``tau``: softmax
    temperature; ``cos_reg``: λ of the within-class cosine regulariser. ``checkpoints``: epochs (0 =
    initialisation) whose weights are kept. ``device``: None → CUDA when present, else the CPU; the cache key
    holds the device type (CPU and CUDA weights differ by float rounding). ``threads``: torch threads on the
    CPU (not in the key: the weights agree to float rounding). ``progress``: a tqdm bar on stderr (images/s).
    """
    cfg = TrainConfig(arch, level, None if classes is None else tuple(np.asarray(classes).tolist()), tau, cos_reg,
                      epochs, per_class, batch_size, lr, seed, data_seed, tuple(checkpoints),
                      None if groups is None else tuple(map(tuple, np.asarray(groups).tolist())))
    if not dataclasses.is_dataclass(task_cfg):
        raise ValueError(f"task_cfg: need a GlyphTaskConfig (a dataclass), got {type(task_cfg).__name__}")
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads: need an int ≥ 1, got {threads!r}")
    dev = resolve_device(device)
    params = {"task": dataclasses.asdict(task_cfg), "train": cfg.key(), "device": dev.type}
    state = {"trained": False}

    def compute():
        state["trained"] = True
        task = _load_task(task_cfg)
        X, y, label_values, used = training_data(task, cfg)
        with single_threaded(torch_threads=threads if dev.type == "cpu" else None, blas_threads=None):
            net = build_net(cfg.arch, len(label_values), int(task_cfg.size), seed=cfg.seed)
            net = net.to(dev, memory_format=torch.channels_last)
            Xt = torch.from_numpy(X).to(dev).contiguous(memory_format=torch.channels_last)
            yt = torch.from_numpy(y).to(dev)
            desc = f"{cfg.arch} {cfg.level} K={len(label_values)} seed={cfg.seed}"
            hist, ckpts, seconds = fit(net, Xt, yt, cfg, dev, progress=progress, desc=desc)
        out = {"label_values": label_values, "classes": used, "seconds": seconds,
               "images_per_s": cfg.epochs * len(y) / seconds, "ckpt_epochs": np.asarray(sorted(ckpts), np.int64)}
        out.update({f"hist/{k}": v for k, v in hist.items()})
        out.update(_state_to_arrays("model", net.state_dict()))
        for e, sd in ckpts.items():
            out.update(_state_to_arrays(f"ckpt{e}", sd))
        return out

    data = cached("glyph_net", params, compute, refresh=refresh)
    label_values = np.asarray(data["label_values"])
    net = build_net(cfg.arch, len(label_values), int(task_cfg.size))
    net.load_state_dict(_arrays_to_state("model", data))
    net = net.to(dev, memory_format=torch.channels_last).eval()
    ckpts = {int(e): _arrays_to_state(f"ckpt{int(e)}", data) for e in np.atleast_1d(data["ckpt_epochs"])}
    hist = {k[len("hist/"):]: np.asarray(v) for k, v in data.items() if k.startswith("hist/")}
    return GlyphNet(net, cfg, task_cfg, hist, ckpts, label_values, np.asarray(data["classes"]),
                    float(data["seconds"]), float(data["images_per_s"]), str(dev), not state["trained"])
