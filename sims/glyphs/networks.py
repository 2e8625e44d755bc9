"""The registry of trained glyph networks: every network a check trains, with its configuration, its held-out sets,
its precondition and the checks that read it.

A network is a :class:`Network` record, found by name with :func:`record`. :func:`net` trains it (or loads it from
the disk cache): :func:`sims.glyphs.train.train_glyph_net` on the record's task with the keyword arguments
:meth:`Network.train_kwargs`. The trainer's cache key is those arguments and the trainer's code, so a network is
trained once and every check naming it reads the same weights. :func:`precondition` says whether the network
reached the held-out accuracies required of it (a check built on an untrained network must end reported, never
with a verdict). :func:`listing` is every network a full or quick run trains, each with the checks that read it;
``python -m sims.glyphs.networks [--quick]`` prints it (:func:`table`).

**Names** (the same in quick and full mode; each mode has its own configuration):

* ``<arch>[-base]-s<seed>``, family ``suite`` (ND/RD): ``lenet-s0``; ``-base`` trains on the base classes only
  (ND Sec 3.2's f_base); any architecture of sims.glyphs.nets and seed take the table's configuration;
* ``pretrain-[a1-]<labels>-tau<τ>-lam<λ>-s<seed>[-<arch>-e<epochs>]``, family ``pretrain`` (VC/FG; ``a1-``: FG App
  A.1's regime of fg.label_granularity, :data:`A1`: a subset of P, 100 images per class): ``<labels>`` is
  ``fine`` (code points), ``script`` (7 labels) or ``kmeans<n>`` (k-means sub-labels within each script, n labels
  in all: GRANULARITY_LEVELS 'k3', 'k7'; A1's ladder 'k2', 'k3'); τ and λ as Python writes the floats, without a trailing ``.0``
  (``tau0.1-lam0.375``); the suffix only where the architecture or the epochs differ from the regime's (the
  sensitivity rows: ``-lenet-e16``, ``-resnet-e8``). Networks with equal training arguments get equal names.

**The suite** (fixed before any verdict was looked at; docs/glyph_nets.md, "The suite networks"): level 'fine',
the trainer's AdamW 2·10⁻³ with warm-up + cosine, τ = 1, λ = 0, data_seed 0, task :data:`TASK` (1000 code points,
32×32, DejaVu Serif held out as test faces); quick: :data:`TASKS` ``['suite'][True]`` (the 100 code points of
highest coverage):

====================  ======  =========  ========  ======  =====  ===================================
name                  arch    class set  per cl.   epochs  batch  required held-out accuracy (face, aug)
====================  ======  =========  ========  ======  =====  ===================================
lenet-s0, -s1, -s2    lenet   all        24        8       256    ≥ 0.30, ≥ 0.35
lenet-base-s0         lenet   base       24        8       256    ≥ 0.30, ≥ 0.35
(quick) the same      lenet   100 / 90   16        6       128    ≥ 0.40, ≥ 0.40
====================  ======  =========  ========  ======  =====  ===================================

Class sets (:func:`class_set`): ``all`` = every class; ``base`` = the classes k with k mod 10 ≠ 9; ``new`` = k mod
10 = 9. Held out: ``aug_test`` and ``face_test``, EVAL_PER_CLASS images per class, seed EVAL_SEED.

**The pretraining regime** (fixed before any verdict was looked at; docs/glyph_checks.md says why): task
:data:`TASK` (quick: 200 code points); pretraining classes P: ``quota`` classes of each of the seven scripts (105
in full), none in a homoglyph group, drawn with CLASS_SEED (:mod:`sims.glyphs.label_sets`); downstream: N_TASKS
disjoint tasks of ``task_classes`` further classes; LeNet, the trainer's AdamW and batch size (128), SIZES'
images per class, epochs and checkpoints; τ = 1, λ = 0 unless a grid moves them (TAU_GRID at λ = 0, LAMBDA_GRID at
τ = 1: VC App C); labels fine, script or k-means (GRANULARITY_LEVELS: FG's ladder); held out: ``aug_test`` and
``face_test``, ``SIZES['held']`` images per class, seed 1; required: accuracy ≥ MIN_ACC on aug_test at the
network's own level. VC_SENSITIVITY / FG_SENSITIVITY move the architecture and epochs toward the papers' networks.
"""
from __future__ import annotations

import dataclasses
import functools
import re
import threading

import numpy as np

from sims.glyphs import label_sets
from sims.glyphs.nets import check_arch
from sims.glyphs.task import GlyphTaskConfig, glyph_task

# ---------------------------------------------------------------------------------------------- configurations
TASK = GlyphTaskConfig()  # both families' full task
TASKS = {"suite": {False: TASK, True: GlyphTaskConfig(n_classes=100)},
         "pretrain": {False: TASK, True: GlyphTaskConfig(n_classes=200, size=32, seed=0)}}

#: The suite's training per mode, and the held-out accuracies required of it.
SUITE = {False: {"epochs": 8, "per_class": 24, "batch_size": 256, "checkpoints": (4,)},
         True: {"epochs": 6, "per_class": 16, "batch_size": 128, "checkpoints": ()}}
SUITE_REQUIRED = {False: (("face_test_all", 0.30), ("aug_test", 0.35)),
                  True: (("face_test_all", 0.40), ("aug_test", 0.40))}
EVAL_SEED = 1                          # the suite's held-out images: task.images(split, per_class, EVAL_SEED)
EVAL_PER_CLASS = {False: 8, True: 8}   # per class and split

#: The pretraining regime (module doc).
CLASS_SEED = 20240607
MIN_ACC = 0.5  # precondition: held-out (aug_test) accuracy at the network's own level
HELD = 16      # held-out images per class (aug_test, face_test), seed 1
N_TASKS = 4
SIZES = {
    False: {"quota": 15, "task_classes": 20, "per_class": 24, "epochs": 8, "checkpoints": (0, 1, 2, 4, 8),
            "held": HELD},
    True: {"quota": 3, "task_classes": 5, "per_class": 8, "epochs": 3, "checkpoints": (0, 1, 2, 3), "held": 8},
}
ARCH = "lenet"
GRANULARITY_LEVELS = ("script", "k3", "k7", "fine")  # coarse → fine (k: k-means clusters per script)
KMEANS = {"k2": 2, "k3": 3, "k7": 7}
#: FG App A.1's regime (fg.label_granularity's judged run, fixed before it was run): per script the ``easy`` code
#: points of P best aligned with their script's common appearance and the ``hard`` worst aligned
#: (label_sets.aligned_subset: easy samples the majority, FG Sec 4's remark; hard ones present, so the gain on them
#: can be read), ``per_class`` training images each (App A.1: 'sample count per subclass not too limited'; A.1.1
#: rebalances to 'e.g. 1000'), the k-means ladder ``levels`` within each script; the rest as the main regime.
A1 = {False: {"per_class": 100, "easy": 3, "hard": 2, "levels": ("script", "k2", "k3", "fine")},
      True: {"per_class": 100, "easy": 2, "hard": 1, "levels": ("script", "k2", "fine")}}
REGIMES = ("main", "a1")
KMEANS_SEED = 20260601
#: VC Sec 6.3's grids (App C, Tables 1–2): τ at λ = 0; λ at τ = 1, the paper's values scaled by LAMBDA_SCALE
#: (sims.glyphs.vc_experiments says why), the λ = 0 network its unregularised end.
TAU_GRID = {False: (0.1, 0.2, 0.4, 0.6, 0.8, 1.0), True: (0.1, 0.4, 1.0)}
PAPER_LAMBDA_GRID = (0.0, 2.5, 3.75, 5.0, 7.5, 10.0)  # VC App C, in the paper's units
LAMBDA_SCALE = 0.1  # our regulariser's λ per paper λ (calibrated on training accuracy alone)
LAMBDA_GRID = {False: tuple(LAMBDA_SCALE * v for v in PAPER_LAMBDA_GRID), True: (0.0, 0.5, 1.0)}
#: Sensitivity rows, seed 0 (VC and FG leave these open; each moved toward the papers' larger, longer-trained
#: networks: VC's ResNet-50 trained for hundreds of epochs). VC: (name, arch, epochs (None: the regime's), τ grid,
#: λ grid): vc.training_collapse reads each row's τ = 1, λ = 0 network; vc.transfer_correlation its reduced grids
#: (3 + 3 networks, 5 distinct: the sign of r is what is compared), on its refutation branch only. FG: (name, arch,
#: epochs, how it moves toward the paper), at the two ends of the granularity ladder (script, fine).
VC_SENSITIVITY = {False: (("LeNet, 2× epochs (16)", "lenet", 16, (0.1, 0.4, 1.0), (0.0, 0.5, 1.0)),
                          ("ResNet, 8 epochs", "resnet", None, (0.1, 0.4, 1.0), (0.0, 0.5, 1.0))),
                  True: (("LeNet, 2× epochs (6)", "lenet", 6, (0.1, 1.0), (0.0, 1.0)),)}
FG_SENSITIVITY = {False: (("2× epochs (16)", ARCH, 16, "longer training: FG's networks are trained to a margin"),
                          ("ResNet (8 epochs)", "resnet", None, "the other architecture: a deeper BN network")),
                  True: (("2× epochs (6)", ARCH, 6, "longer training"),)}
#: Seeds per configuration in a full run, from the run's seed (a claim about networks is judged on ≥ 3); quick: 1.
SEEDS = 3


def task_config(family: str, quick: bool = False) -> GlyphTaskConfig:
    return TASKS[family][bool(quick)]


def class_set(which: str, quick: bool = False) -> tuple:
    """The suite's fine classes of a class set (module doc), sorted."""
    k = np.arange(task_config("suite", quick).n_classes)
    keep = {"all": np.ones_like(k, bool), "base": k % 10 != 9, "new": k % 10 == 9}.get(which)
    if keep is None:
        raise ValueError(f"class set: {which!r} is not one of 'all', 'base', 'new'")
    return tuple(int(v) for v in k[keep])


@functools.lru_cache(maxsize=2)
def class_sets(quick: bool) -> dict:
    """{'pretrain': sorted P, 'downstream': [sorted Q_t] × N_TASKS}: the pretraining regime's class sets."""
    s = SIZES[bool(quick)]
    return label_sets.pretrain_classes(task_config("pretrain", quick), s["quota"], s["task_classes"], N_TASKS,
                                       CLASS_SEED)


@functools.lru_cache(maxsize=4)
def pretrain_classes(quick: bool, regime: str = "main") -> np.ndarray:
    """The pretraining classes of ``regime``: 'main' P (class_sets), 'a1' FG App A.1's aligned subset of P (A1)."""
    P = class_sets(quick)["pretrain"]
    if regime == "main":
        return P
    if regime != "a1":
        raise ValueError(f"regime: {regime!r} is not one of {REGIMES}")
    a = A1[bool(quick)]
    return label_sets.aligned_subset(task_config("pretrain", quick), P, a["easy"], a["hard"])


def levels(regime: str = "main", quick: bool = False) -> tuple:
    """The granularity ladder (coarse → fine) of ``regime``."""
    return GRANULARITY_LEVELS if regime == "main" else A1[bool(quick)]["levels"]


@functools.lru_cache(maxsize=16)
def kmeans_groups(quick: bool, k: int, regime: str = "main") -> np.ndarray:
    """((fine class, label), …) of the regime's classes: k-means sub-labels within each script
    (label_sets.kmeans_groups)."""
    return label_sets.kmeans_groups(task_config("pretrain", quick), pretrain_classes(quick, regime), k, KMEANS_SEED)


# ------------------------------------------------------------------------------------------------------ records
@dataclasses.dataclass(frozen=True)
class HeldOut:
    """Held-out images of a network: ``task.images(split, per_class, seed)`` kept to its classes."""

    split: str
    per_class: int
    seed: int


@dataclasses.dataclass(frozen=True)
class Network:
    """One trained glyph network (module doc): its name, family, task and training, held-out sets, required
    accuracies (``required``: (key of :func:`sims.glyphs.features.heldout_accuracy`, minimum), …); ``checks`` (the
    checks that read it) and ``conditional`` (read only on a branch of a check, not prepared) as :func:`listing`
    fills them."""

    name: str
    family: str          # 'suite' (ND/RD) or 'pretrain' (VC/FG)
    quick: bool
    arch: str
    classes: str         # 'all' / 'base' (suite), 'pretrain' (P), 'pretrain-a1' (A1's subset of P)
    labels: str          # 'fine', 'script', or a k-means level of KMEANS
    seed: int
    epochs: int
    per_class: int
    checkpoints: tuple
    batch_size: int | None = None  # None: the trainer's default (not passed)
    tau: float | None = None       # None: not passed (the trainer's τ = 1, λ = 0)
    cos_reg: float | None = None
    heldout: tuple = ()
    required: tuple = ()
    checks: tuple = ()
    conditional: bool = False

    @property
    def task(self) -> GlyphTaskConfig:
        return task_config(self.family, self.quick)

    def train_kwargs(self) -> dict:
        """The keyword arguments of :func:`sims.glyphs.train.train_glyph_net` besides the task, device, progress."""
        if self.family == "suite":
            cl = class_set(self.classes, self.quick)
            return {"arch": self.arch, "level": "fine", "classes": None if len(cl) == self.task.n_classes else cl,
                    "epochs": self.epochs, "per_class": self.per_class, "batch_size": self.batch_size,
                    "seed": self.seed, "checkpoints": self.checkpoints}
        km = self.labels in KMEANS
        regime = "a1" if self.classes == "pretrain-a1" else "main"
        return {"arch": self.arch, "level": "fine" if km else self.labels,
                "classes": pretrain_classes(self.quick, regime), "tau": self.tau, "cos_reg": self.cos_reg,
                "epochs": self.epochs, "per_class": self.per_class, "seed": self.seed,
                "checkpoints": self.checkpoints,
                "groups": kmeans_groups(self.quick, KMEANS[self.labels], regime) if km else None}


_SUITE_NAME = re.compile(r"([a-z]+)(-base)?-s(\d+)$")
_PRETRAIN_NAME = re.compile(r"pretrain-(a1-)?(fine|script|kmeans\d+)-tau(.+?)-lam(.+?)-s(\d+)(?:-([a-z]+)-e(\d+))?$")


def _num(x: float) -> str:
    r = repr(float(x))
    return r[:-2] if r.endswith(".0") else r


def suite(arch: str = "lenet", seed: int = 0, classes: str = "all", quick: bool = False) -> Network:
    """The suite network ``<arch>[-base]-s<seed>`` (module doc)."""
    check_arch(arch)
    if classes not in ("all", "base"):
        raise ValueError(f"classes: a suite network trains on 'all' or 'base', got {classes!r}")
    q = bool(quick)
    held = tuple(HeldOut(sp, EVAL_PER_CLASS[q], EVAL_SEED) for sp in ("aug_test", "face_test"))
    return Network(f"{arch}{'-base' if classes == 'base' else ''}-s{int(seed)}", "suite", q, arch, classes, "fine",
                   int(seed), heldout=held, required=SUITE_REQUIRED[q], **SUITE[q])


def pretrain(quick: bool = False, labels: str = "fine", tau: float = 1.0, cos_reg: float = 0.0, seed: int = 0,
             arch: str = ARCH, epochs: int | None = None, regime: str = "main") -> Network:
    """The network of the pretraining regime with ``labels`` (a level of :func:`levels`), temperature τ,
    regulariser λ = ``cos_reg`` and ``seed``; ``arch`` and ``epochs`` (None: the regime's) move the regime, with
    checkpoints at 0, the powers of two up to ``epochs`` and ``epochs``; ``regime`` 'a1': FG App A.1's class
    subset and images per class (A1)."""
    if regime not in REGIMES:
        raise ValueError(f"regime: {regime!r} is not one of {REGIMES}")
    q = bool(quick)
    if labels not in levels(regime, q):
        raise ValueError(f"labels: {labels!r} is not one of {levels(regime, q)}")
    check_arch(arch)
    s = dict(SIZES[q], per_class=A1[q]["per_class"]) if regime == "a1" else SIZES[q]
    ep, ck = s["epochs"], s["checkpoints"]
    if epochs is not None:
        doubling = [0] + [2 ** i for i in range(int(epochs).bit_length()) if 2 ** i <= epochs] + [int(epochs)]
        ep, ck = int(epochs), tuple(sorted(set(doubling)))
    tag = f"kmeans{len(np.unique(kmeans_groups(q, KMEANS[labels], regime)[:, 1]))}" if labels in KMEANS else labels
    moved = f"-{arch}-e{ep}" if (arch, ep, ck) != (ARCH, s["epochs"], s["checkpoints"]) else ""
    held = tuple(HeldOut(sp, s["held"], 1) for sp in ("aug_test", "face_test"))
    a1 = regime == "a1"
    return Network(f"pretrain-{'a1-' if a1 else ''}{tag}-tau{_num(tau)}-lam{_num(cos_reg)}-s{int(seed)}{moved}",
                   "pretrain", q, arch, "pretrain-a1" if a1 else "pretrain", labels, int(seed), ep, s["per_class"],
                   ck, None, float(tau), float(cos_reg), held, (("aug_test", MIN_ACC),))


def record(name, quick: bool = False) -> Network:
    """The :class:`Network` of ``name`` (module doc) in quick or full mode (``checks`` empty: :func:`listing` fills
    it); a record is returned as it is."""
    if isinstance(name, Network):
        return name
    q = bool(quick)
    m, p = _SUITE_NAME.match(str(name)), _PRETRAIN_NAME.match(str(name))
    if m and not str(name).startswith("pretrain-"):
        try:
            return suite(m.group(1), int(m.group(3)), "base" if m.group(2) else "all", q)
        except ValueError:
            pass
    elif p:
        a1, tag, tau, lam, seed, arch, epochs = p.groups()
        regime = "a1" if a1 else "main"
        for lv in [lv for lv in levels(regime, q) if lv == tag or (lv in KMEANS and tag.startswith("kmeans"))]:
            try:
                rec = pretrain(q, lv, float(tau), float(lam), int(seed), arch or ARCH,
                               None if epochs is None else int(epochs), regime)
            except ValueError:
                continue
            if rec.name == name:
                return rec
    raise ValueError(f"name: {name!r} is not a suite network ('<arch>[-base]-s<seed>') nor a pretraining network "
                     "('pretrain-<labels>-tau<τ>-lam<λ>-s<seed>[-<arch>-e<epochs>]', written as listing() writes it)")


# ------------------------------------------------------------------------------------------------ the listing
def uses(quick: bool = False, seed: int = 0, conditional: bool = False) -> dict:
    """{check id: [Network, …]}: the networks each check trains in a run of ``seed`` (its preparations; with
    ``conditional`` also those a check trains only on a branch: vc.transfer_correlation's sensitivity rows)."""
    q = bool(quick)
    seeds = range(seed, seed + (1 if q else SEEDS))
    real = [suite("lenet", s, quick=q) for s in seeds]
    grids = [(t, 0.0) for t in TAU_GRID[q]] + [(1.0, lam) for lam in LAMBDA_GRID[q]]
    # rd.cls_dim's second architecture (full runs): the pretraining regime's LeNet and ResNet of seed 0
    other = [] if q else [pretrain(q, "fine", 1.0, 0.0, 0, arch) for arch in (ARCH, "resnet")]
    out = {"nd.table1_metrics": real, "rd.independence_deficit": real, "rd.cls_dim": real + other,
           "nd.between_networks": [suite("lenet", seed, quick=q), suite("lenet", seed + 1, quick=q)],
           "nd.new_categories": [suite("lenet", seed, "base", q), suite("lenet", seed, quick=q)],
           "vc.training_collapse": [pretrain(q, seed=s) for s in seeds]
           + [pretrain(q, seed=0, arch=a, epochs=e) for _, a, e, _, _ in VC_SENSITIVITY[q]],
           "vc.transfer_correlation": [pretrain(q, "fine", t, lam, s) for s in seeds for t, lam in grids],
           "fg.label_granularity": [pretrain(q, lv, seed=s) for s in seeds for lv in GRANULARITY_LEVELS]
           + [pretrain(q, lv, seed=0, arch=a, epochs=e) for _, a, e, _ in FG_SENSITIVITY[q]
              for lv in (GRANULARITY_LEVELS[0], GRANULARITY_LEVELS[-1])]
           + [pretrain(q, lv, seed=s, regime="a1") for s in seeds for lv in levels("a1", q)]}
    if conditional:  # fg.label_granularity's sensitivity rows of the A.1 run, read only when it does not hold
        out["fg.label_granularity"] = out["fg.label_granularity"] + [
            dataclasses.replace(pretrain(q, lv, seed=0, arch=a, epochs=e, regime="a1"), conditional=True)
            for _, a, e, _ in FG_SENSITIVITY[q] for lv in (levels("a1", q)[0], levels("a1", q)[-1])]
    if conditional:
        extra = [dataclasses.replace(pretrain(q, "fine", t, lam, 0, a, e), conditional=True)
                 for _, a, e, taus, lams in VC_SENSITIVITY[q] for t, lam in [(t, 0.0) for t in taus]
                 + [(1.0, lam) for lam in lams]]
        out["vc.transfer_correlation"] = out["vc.transfer_correlation"] + extra
    return out


def listing(quick: bool = False, seed: int = 0, conditional: bool = False) -> list:
    """Every network a run of ``seed`` trains (:func:`uses`), once each, with ``checks`` (the checks that read it)
    filled in; a network some check prepares is not ``conditional``. Suite first, then by name."""
    recs, checks = {}, {}
    for cid, nets in uses(quick, seed, conditional).items():
        for r in nets:
            old = recs.get(r.name)
            recs[r.name] = r if old is None or old.conditional else old
            checks.setdefault(r.name, set()).add(cid)
    out = [dataclasses.replace(r, checks=tuple(sorted(checks[n]))) for n, r in recs.items()]
    return sorted(out, key=lambda r: (r.family != "suite", r.name))


def table(quick: bool = False, seed: int = 0) -> str:
    """:func:`listing` (conditional networks included, marked ``*``) as a text table."""
    rows = [("name", "arch", "labels", "classes", "per cl.", "epochs", "batch", "held out", "required", "checks")]
    for r in listing(quick, seed, conditional=True):
        held = ", ".join(f"{h.split} {h.per_class}/cl seed {h.seed}" for h in r.heldout)
        rows.append((r.name + ("*" if r.conditional else ""), r.arch, r.labels, r.classes, str(r.per_class),
                     str(r.epochs), str(r.batch_size or "default"), held,
                     ", ".join(f"{k} ≥ {v:g}" for k, v in r.required), ", ".join(r.checks)))
    w = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w[i]) for i, c in enumerate(row)).rstrip() for row in rows)


# ----------------------------------------------------------------------------------- training and judging
_NETS: dict = {}
_ACC: dict = {}
_IMAGES: dict = {}
_LOCK = threading.RLock()


def net(name, quick: bool = False, device=None, progress: bool = False):
    """The trained :class:`sims.glyphs.train.GlyphNet` of ``name`` or of a record (trained once, then from the disk
    cache). Suite networks are also kept in memory (several checks of one process read them)."""
    from sims.glyphs.train import train_glyph_net

    rec = record(name, quick)
    if rec.family != "suite":
        return train_glyph_net(rec.task, device=device, progress=progress, **rec.train_kwargs())
    key = (rec.name, rec.quick, str(device))
    with _LOCK:
        if key not in _NETS:
            _NETS[key] = train_glyph_net(rec.task, device=device, progress=progress, **rec.train_kwargs())
        return _NETS[key]


def images(task_cfg, split: str, per_class: int, seed: int):
    """``glyph_task(task_cfg).images(split, per_class, seed)`` as numpy ``(X, y fine, face)``, memoised."""
    key = (task_cfg, split, int(per_class), int(seed))
    with _LOCK:
        if key not in _IMAGES:
            X, y, f = glyph_task(task_cfg).images(split, per_class, seed)
            _IMAGES[key] = (X.numpy(), y.numpy(), f.numpy())
        return _IMAGES[key]


class _HeldOutImages:
    """The task with :meth:`images` answered from :func:`images` (same arguments → same images)."""

    def __init__(self, task_cfg):
        self._cfg = task_cfg
        self._task = glyph_task(task_cfg)

    def __getattr__(self, item):
        return getattr(self._task, item)

    def images(self, split, per_class, seed, augment=True, classes=None):
        if augment and classes is None:
            return images(self._cfg, split, per_class, seed)
        return self._task.images(split, per_class, seed, augment, classes)


def accuracy(name, quick: bool = False, device=None) -> dict:
    """:func:`sims.glyphs.features.heldout_accuracy` of the network on its held-out sets (memoised)."""
    from sims.glyphs.features import heldout_accuracy

    rec = record(name, quick)
    (per_class, seed), = {(h.per_class, h.seed) for h in rec.heldout}
    key = (rec.name, rec.quick, str(device))
    with _LOCK:
        if key not in _ACC:
            _ACC[key] = heldout_accuracy(net(rec, device=device), task=_HeldOutImages(rec.task), per_class=per_class,
                                         seed=seed)
        return _ACC[key]


_WHERE = {"face_test_all": "the test faces", "aug_test": "aug_test"}


def precondition(name, quick: bool = False, device=None) -> dict:
    """Did the network reach its required held-out accuracies? ``{'trained': bool, 'face_test_all', 'aug_test',
    'face_test', 'required': {key: minimum}, 'reason': str}`` — a check must not give a verdict on a network with
    ``trained`` False."""
    rec = record(name, quick)
    a = accuracy(rec, device=device)
    ok = all(a[k] >= v for k, v in rec.required)
    reason = f"{rec.name}: held-out accuracy " + ", ".join(f"{a[k]:.3f} on {_WHERE[k]} (required ≥ {v:g})"
                                                           for k, v in rec.required)
    return {"trained": bool(ok), "face_test_all": a["face_test_all"], "aug_test": a["aug_test"],
            "face_test": a["face_test"], "required": dict(rec.required),
            "reason": reason + ("" if ok else ": NOT trained enough for a verdict")}


if __name__ == "__main__":
    import sys

    print(table("--quick" in sys.argv[1:]))
