"""FG hierarchical multi-view data (FG Def 4.1–4.4, App B.1) and sandbox data models, sampled in torch.

Every model satisfies the :class:`DataModel` protocol that the trainer takes: ``sample(n, hard=..., train=...,
generator=..., device=..., dtype=...)`` returns a :class:`Batch` of X ∈ R^{n×P×d} with coarse and fine labels,
exactly n / n_fine samples per fine class (FG B.1 item 9), plus the dictionary and the feature indices the
trackers need.

Modelling choices the paper leaves open (FG App B.1), all written down here:

* dictionary V: identity by default (``dictionary="identity"``), or a random orthonormal basis (QR of a seeded
  Gaussian matrix, ``"random"``); rows of ``V`` are the features. v₊ = V[0], v₋ = V[1], v₊,c = V[2 + c],
  v₋,c = V[2 + k + c].
* noise: ζ ~ N(0, σ_ζ² I_d) with σ_ζ = noise_norm/√d, so E‖ζ‖ ≈ noise_norm (the paper's σ_ζ = 1/(log¹⁰ d √d)
  would make the noise invisible at d ≈ 100); the hard sample's one big noise patch has σ_ζ* = hard_noise_norm/√d.
* patch counts (B.1 item 5), ``counts=``:

  - ``"exact"``: every easy sample has exactly s common and exactly s subclass-feature patches (a uniformly
    random placement), every hard sample exactly s subclass-feature and exactly s feature-noise patches. This is
    the paper's regime: B.3 item 10 assumes s ≥ polylog(d) (degree > 15), and the proofs use the counts'
    concentration, |P(X; v)| = (1 ± s^{−1/3}) s for every sample with probability 1 − e^{−Ω(log² d)} (the
    'concentration of the binomial random variable' of Eq 213, Lemma G.2; also Lemma E.5): at the s = 3 that a
    simulation can afford, exact counts are that concentration's limit, so no training sample lacks its common
    feature.
  - ``"binomial"``: each patch is common with probability s/P; each remaining patch is a subclass-feature patch
    with probability s/(P − |P(X; v_y)|); the rest are noise (mean exactly s each). At s = 3, P = 16 a share
    (13/16)¹⁶ ≈ 3.6 % of easy training samples carries no common patch: a small-s regime *outside* the paper's
    assumption (those samples teach a coarse network the subclass features).

  α ~ U[1 − ι, 1 + ι].
* hard samples (B.1 item 6): common patches become noise; each patch outside P(X; v_{y,c}) becomes a
  feature-noise patch α′v + ζ with probability s/(P − |P(X; v_{y,c})|), α′ ~ U[ι_lower, ι_upper]; one of the
  remaining noise patches (chosen uniformly) gets the larger σ_ζ*. **Distractor feature**: v = v_{−y}, the
  *opposite* superclass's common feature. The paper writes only "α′v"; the proof of Lemma E.8 (hard-sample
  error of coarse training) bounds the terms Σ_{p∈P(X_hard; v₋)} of a (+, c) sample, i.e. the distractor is
  v₋ for a + sample: the feature the coarse network has learnt best, pointing to the wrong superclass.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Protocol, runtime_checkable

import torch

# patch kinds recorded in Batch.kinds
NOISE, COMMON, SUBCLASS, FEATURE_NOISE, BIG_NOISE, MIDDLE = 0, 1, 2, 3, 4, 5
#: patch-count laws of :class:`HierarchicalMultiView` (module docstring)
COUNT_LAWS = ("binomial", "exact")


@dataclasses.dataclass
class Batch:
    """X: (n, P, d); y_coarse: (n,) in {0 (= +), 1 (= −)}; y_fine: (n,) in [0, n_fine); kinds: (n, P) patch kinds."""

    X: torch.Tensor
    y_coarse: torch.Tensor
    y_fine: torch.Tensor
    kinds: torch.Tensor


@runtime_checkable
class DataModel(Protocol):
    """What the trainer needs from a data model (FG Def 4.1–4.4 generalised).

    Attributes: ``d``, ``P``; ``n_coarse`` (2) and ``n_fine`` output classes; ``V`` (d, d) dictionary rows;
    ``coarse_of_fine`` (n_fine,) parent superclass of each fine class; ``common_of_coarse`` (n_coarse,) and
    ``sub_of_fine`` (n_fine,) dictionary indices of the common and the subclass feature (the trackers follow
    the lucky neurons of these features); ``sigma_zeta`` and ``iota`` (to draw single feature patches).
    The full contract (what ``sample`` must return, dtype/device and randomness rules, how a config names a
    model of one's own) is docs/datamodel.md; :func:`sims.multiview.models.check_data_model` checks it.
    """

    d: int
    P: int
    n_coarse: int
    n_fine: int
    sigma_zeta: float
    iota: float

    def sample(self, n: int, *, hard: bool = False, train: bool = False, generator: torch.Generator,
               device="cpu", dtype=torch.float32) -> Batch: ...

    def dictionary(self, device="cpu", dtype=torch.float32) -> torch.Tensor: ...

    def coarse_of_fine(self) -> torch.Tensor: ...

    def common_of_coarse(self) -> torch.Tensor: ...

    def sub_of_fine(self) -> torch.Tensor: ...


def _uniform(shape, lo, hi, generator, device, dtype):
    return lo + (hi - lo) * torch.rand(shape, generator=generator, device=device, dtype=dtype)


class HierarchicalMultiView:
    """The paper's data model (FG Def 4.1–4.4, App B.1): two superclasses with k subclasses each."""

    name = "hierarchical"

    def __init__(self, d: int, P: int, s: float, k: int, *, iota: float = 0.1, iota_lower: float = 0.25,
                 iota_upper: float = 0.5, noise_norm: float = 0.5, hard_noise_norm: float = 2.0,
                 dictionary: str = "identity", dictionary_seed: int = 0, counts: str = "binomial"):
        if k < 1:
            raise ValueError(f"k (subclasses per superclass) must be >= 1, got {k}")
        if P < 1 or not 0 < s <= P:
            raise ValueError(f"need P >= 1 and 0 < s <= P, got s={s}, P={P}")
        if not 0 <= iota < 1:
            raise ValueError(f"iota must lie in [0, 1), got {iota}")
        if not 0 <= iota_lower <= iota_upper:
            raise ValueError(f"need 0 <= iota_lower <= iota_upper, got {iota_lower}, {iota_upper}")
        if noise_norm <= 0 or hard_noise_norm <= 0:
            raise ValueError(f"noise norms must be > 0, got {noise_norm}, {hard_noise_norm}")
        if dictionary not in ("identity", "random"):
            raise ValueError(f"dictionary must be 'identity' or 'random', got {dictionary!r}")
        if counts not in COUNT_LAWS:
            raise ValueError(f"counts must be one of {COUNT_LAWS}, got {counts!r}")
        if counts == "exact":
            if float(s) != int(s):
                raise ValueError(f"counts='exact' places exactly s patches of each kind: s must be an integer, got {s}")
            if 2 * int(s) + 1 > P:
                raise ValueError(f"counts='exact' needs 2s + 1 <= P patches (s subclass, s feature-noise and one "
                                 f"big-noise patch per hard sample), got s = {s}, P = {P}")
        self.counts = counts
        self.d, self.P, self.s, self.k = int(d), int(P), float(s), int(k)
        self.iota, self.iota_lower, self.iota_upper = float(iota), float(iota_lower), float(iota_upper)
        self.noise_norm, self.hard_noise_norm = float(noise_norm), float(hard_noise_norm)
        self.sigma_zeta = self.noise_norm / math.sqrt(self.d)
        self.sigma_zeta_hard = self.hard_noise_norm / math.sqrt(self.d)
        self.dictionary_kind, self.dictionary_seed = dictionary, int(dictionary_seed)
        self.n_coarse = 2
        self._setup()
        if self.n_features > self.d:
            raise ValueError(f"{type(self).__name__} needs {self.n_features} orthonormal features but d = {self.d}")

    # ---- structure (overridden by sandbox models) ----
    def _setup(self):
        self.n_fine = 2 * self.k
        self.n_features = 2 + 2 * self.k

    def coarse_of_fine(self) -> torch.Tensor:
        return torch.arange(self.n_fine) // (self.n_fine // 2)

    def common_of_coarse(self) -> torch.Tensor:
        return torch.arange(2)

    def sub_of_fine(self) -> torch.Tensor:
        """Dictionary index of the subclass feature of each fine class: v_{y,c} = V[2 + y k + c]."""
        return 2 + torch.arange(self.n_fine)

    def dictionary(self, device="cpu", dtype=torch.float32) -> torch.Tensor:
        """The orthonormal dictionary V (rows are features, FG Def 4.1); refused before it is made when its d × d
        entries do not fit in the machine's memory (:func:`sims.resources.require`; the random one's QR runs on
        the CPU)."""
        if torch.device(device).type == "cpu" or self.dictionary_kind != "identity":
            from sims.resources import require

            item = torch.empty((), dtype=dtype).element_size()
            require(self.d * self.d * (item if self.dictionary_kind == "identity" else 4 * 8),
                    f"{type(self).__name__}.dictionary(): a {self.d} × {self.d} matrix", hint="use a smaller d")
        if self.dictionary_kind == "identity":
            return torch.eye(self.d, device=device, dtype=dtype)
        g = torch.Generator().manual_seed(self.dictionary_seed)
        q, r = torch.linalg.qr(torch.randn(self.d, self.d, generator=g, dtype=torch.float64))
        q = q * torch.sign(torch.diagonal(r))[None, :]
        return q.T.contiguous().to(device=device, dtype=dtype)

    def _fine_labels(self, n: int, device) -> torch.Tensor:
        if n % self.n_fine:
            raise ValueError(f"a batch holds exactly n/{self.n_fine} samples per fine class (FG B.1 item 9): "
                             f"n = {n} is not a multiple of {self.n_fine}")
        return self._structure(("fine_labels", n), device,
                               lambda: torch.arange(self.n_fine).repeat_interleave(n // self.n_fine))

    def _structure(self, key, device, make) -> torch.Tensor:
        """A structural index tensor (labels of a batch, parents, feature indices) on ``device``, made once per
        model and device: these depend on the model's sizes only, and sampling reads them every step. Callers
        index with them and never write into them."""
        cache = self.__dict__.setdefault("_structures", {})
        k = (key, str(torch.device(device)))
        if k not in cache:
            cache[k] = make().to(device)
        return cache[k]

    def _labels(self, y_fine: torch.Tensor, train: bool, generator) -> tuple[torch.Tensor, torch.Tensor]:
        return self._structure("coarse_of_fine", y_fine.device, self.coarse_of_fine)[y_fine], y_fine

    def _feature_layout(self, n, y_fine, hard, generator, device):
        """Patch kinds (n, P) and the dictionary index of each feature patch (−1 for noise)."""
        if self.counts == "exact":
            return self._exact_layout(n, y_fine, hard, generator, device)
        P, s = self.P, self.s
        y = self.coarse_of_fine().to(device)[y_fine]
        common = torch.rand(n, P, generator=generator, device=device) < s / P
        n_common = common.sum(1, keepdim=True)
        q_sub = s / (P - n_common).clamp(min=1)
        sub = ~common & (torch.rand(n, P, generator=generator, device=device) < q_sub)
        kinds = torch.zeros(n, P, dtype=torch.int8, device=device)
        feat = torch.full((n, P), -1, dtype=torch.long, device=device)
        kinds[sub] = SUBCLASS
        feat = torch.where(sub, self.sub_of_fine().to(device)[y_fine][:, None].expand(n, P), feat)
        common_idx = self.common_of_coarse().to(device)
        if not hard:
            kinds[common] = COMMON
            feat = torch.where(common, common_idx[y][:, None].expand(n, P), feat)
        else:
            n_sub = sub.sum(1, keepdim=True)
            q_fn = s / (P - n_sub).clamp(min=1)
            fnoise = ~sub & (torch.rand(n, P, generator=generator, device=device) < q_fn)
            kinds[fnoise] = FEATURE_NOISE
            feat = torch.where(fnoise, common_idx[1 - y][:, None].expand(n, P), feat)  # distractor v_{−y}
            # one of the remaining noise patches gets the larger σ_ζ* (uniform among them)
            score = torch.rand(n, P, generator=generator, device=device).masked_fill(kinds != NOISE, -1.0)
            best = score.argmax(1)
            has_noise = (kinds == NOISE).any(1)
            rows = torch.arange(n, device=device)[has_noise]
            kinds[rows, best[has_noise]] = BIG_NOISE
        return kinds, feat

    def _exact_layout(self, n, y_fine, hard, generator, device):
        """``counts='exact'``: a uniformly random placement of exactly s patches of each kind (module docstring).

        A random permutation of the P patch slots per sample (argsort of iid uniforms): its first s slots carry the
        common feature (easy) or the feature noise α′v_{−y} (hard), the next s the subclass feature, and (hard) the
        next one the big noise ζ*; the rest are noise."""
        P, s = self.P, int(self.s)
        y = self._structure("coarse_of_fine", device, self.coarse_of_fine)[y_fine]
        rank = torch.rand(n, P, generator=generator, device=device).argsort(1).argsort(1)  # slot order per sample
        first, second = rank < s, (rank >= s) & (rank < 2 * s)
        kinds = torch.zeros(n, P, dtype=torch.int8, device=device)
        feat = torch.full((n, P), -1, dtype=torch.long, device=device)
        kinds[second] = SUBCLASS
        feat = torch.where(second, self._structure("sub_of_fine", device, self.sub_of_fine)[y_fine][:, None]
                           .expand(n, P), feat)
        common_idx = self._structure("common_of_coarse", device, self.common_of_coarse)
        if not hard:
            kinds[first] = COMMON
            feat = torch.where(first, common_idx[y][:, None].expand(n, P), feat)
        else:
            kinds[first] = FEATURE_NOISE
            feat = torch.where(first, common_idx[1 - y][:, None].expand(n, P), feat)  # distractor v_{−y}
            kinds[rank == 2 * s] = BIG_NOISE
        return kinds, feat

    def _coefficients(self, kinds, generator, device, dtype) -> torch.Tensor:
        """The (n, P) coefficient of each patch's feature: α ~ U[1 − ι, 1 + ι] for COMMON, SUBCLASS and MIDDLE
        patches (B.1 item 7), α′ ~ U[ι_lower, ι_upper] for FEATURE_NOISE patches (item 8), 0 for noise."""
        n = kinds.shape[0]
        coef = torch.zeros(n, self.P, device=device, dtype=dtype)
        is_feat = (kinds == COMMON) | (kinds == SUBCLASS) | (kinds == MIDDLE)
        coef = torch.where(is_feat, _uniform((n, self.P), 1 - self.iota, 1 + self.iota, generator, device, dtype), coef)
        fn = kinds == FEATURE_NOISE
        coef = torch.where(fn, _uniform((n, self.P), self.iota_lower, self.iota_upper, generator, device, dtype), coef)
        return coef

    def sample(self, n: int, *, hard: bool = False, train: bool = False, generator: torch.Generator,
               device="cpu", dtype=torch.float32) -> Batch:
        """n samples, n/n_fine per fine class; easy (B.1 item 5) or hard (item 6); X on ``device`` in ``dtype``."""
        device = torch.device(device)
        if device.type == "cpu":  # X and its sampling temporaries, from the sizes alone
            from sims.resources import require

            item = torch.empty((), dtype=dtype).element_size()
            require(2 * n * self.P * self.d * item, f"{type(self).__name__}.sample({n}): {n} × {self.P} patches × "
                    f"d = {self.d}", hint="use a smaller d or fewer samples")
        y_fine = self._fine_labels(n, device)
        kinds, feat = self._feature_layout(n, y_fine, hard, generator, device)
        X = torch.randn(n, self.P, self.d, generator=generator, device=device, dtype=dtype).mul_(self.sigma_zeta)
        big = kinds == BIG_NOISE
        if big.any():
            X[big] *= self.sigma_zeta_hard / self.sigma_zeta
        coef = self._coefficients(kinds, generator, device, dtype)
        # x_p = α v + ζ on the feature patches only (a noise patch's α is 0): the same numbers as adding α v to
        # every patch, without two (n, P, d) temporaries (P = 4096 in fg.linear_fails)
        has = feat >= 0
        if bool((coef.ne(0) & ~has).any()):
            raise ValueError(f"{type(self).__name__}: a patch without a feature (index −1) has a nonzero "
                             f"coefficient: _coefficients must give α = 0 to noise patches")
        if self.dictionary_kind == "identity" and type(self).dictionary is HierarchicalMultiView.dictionary:
            # V = I: α v_j adds α to coordinate j and exactly 0 elsewhere (x + 0 = x), so one scatter gives
            # the same numbers bit for bit as the dense row update below, without the (|has|, d) product
            rows, slots = has.nonzero(as_tuple=True)
            X[rows, slots, feat[has]] += coef[has]
        else:
            V = self.dictionary(device, dtype)
            X[has] += coef[has][:, None] * V[feat[has]]
        y_coarse, y_lab = self._labels(y_fine, train, generator)
        return Batch(X=X, y_coarse=y_coarse, y_fine=y_lab, kinds=kinds)


class SharedSubclass(HierarchicalMultiView):
    """Sandbox: the first ``shared`` subclass features are shared across superclasses, v₊,c = v₋,c (c < shared).

    A hard sample of a shared subclass carries no superclass information, so no training can beat chance on it;
    the fine network still separates the fine classes that keep their own feature.
    """

    name = "shared_subclass"

    def __init__(self, *args, shared: int = 1, **kw):
        self.shared = int(shared)
        super().__init__(*args, **kw)
        if not 0 <= self.shared <= self.k:
            raise ValueError(f"shared must lie in [0, k] = [0, {self.k}], got {shared}")

    def _setup(self):
        super()._setup()
        self.n_features = 2 + 2 * self.k - self.shared

    def sub_of_fine(self) -> torch.Tensor:
        c = torch.arange(self.n_fine) % self.k
        y = torch.arange(self.n_fine) // self.k
        own = 2 + y * self.k + c - y * self.shared
        return torch.where(c < self.shared, 2 + c, own)


class ThreeLevel(HierarchicalMultiView):
    """Sandbox: a three-level hierarchy superclass → k classes → k2 leaves each.

    An easy sample of leaf (y, c, e) has ≈ s common patches v_y, ≈ s middle patches v_{y,c} and ≈ s leaf patches
    v_{y,c,e}; a hard sample loses its common patches (as in B.1 item 6). ``n_fine`` = 2 k k2 leaves: fine
    training uses leaf labels; the middle features are k2 times more frequent than the leaf features.
    """

    name = "three_level"

    def __init__(self, *args, k2: int = 2, **kw):
        self.k2 = int(k2)
        if self.k2 < 1:
            raise ValueError(f"k2 must be >= 1, got {k2}")
        super().__init__(*args, **kw)

    def _setup(self):
        self.n_fine = 2 * self.k * self.k2
        self.n_features = 2 + 2 * self.k + self.n_fine

    def middle_of_fine(self) -> torch.Tensor:
        return 2 + torch.arange(self.n_fine) // self.k2

    def sub_of_fine(self) -> torch.Tensor:
        return 2 + 2 * self.k + torch.arange(self.n_fine)

    def _feature_layout(self, n, y_fine, hard, generator, device):
        kinds, feat = super()._feature_layout(n, y_fine, hard, generator, device)
        # middle-level patches: each still-noise patch becomes v_{y,c} with probability s / #noise
        noise = kinds == NOISE
        q = self.s / noise.sum(1, keepdim=True).clamp(min=1)
        mid = noise & (torch.rand(n, self.P, generator=generator, device=device) < q)
        kinds[mid] = MIDDLE
        feat = torch.where(mid, self.middle_of_fine().to(device)[y_fine][:, None].expand(n, self.P), feat)
        return kinds, feat


class LabelNoise(HierarchicalMultiView):
    """Sandbox: training labels are flipped with probability ``flip`` (to a uniformly chosen fine class of the
    other superclass; the coarse label flips with it). Test samples (``train=False``) keep clean labels."""

    name = "label_noise"

    def __init__(self, *args, flip: float = 0.1, **kw):
        if not 0 <= flip < 0.5:
            raise ValueError(f"flip must lie in [0, 0.5), got {flip}")
        self.flip = float(flip)
        super().__init__(*args, **kw)

    def _labels(self, y_fine, train, generator):
        y_coarse, y_lab = super()._labels(y_fine, train, generator)
        if not train or self.flip == 0:
            return y_coarse, y_lab
        n = y_fine.shape[0]
        flip = torch.rand(n, generator=generator, device=y_fine.device) < self.flip
        other = torch.randint(0, self.k, (n,), generator=generator, device=y_fine.device) + (1 - y_coarse) * self.k
        y_lab = torch.where(flip, other, y_lab)
        return self.coarse_of_fine().to(y_fine.device)[y_lab], y_lab


MODELS = {cls.name: cls for cls in (HierarchicalMultiView, SharedSubclass, ThreeLevel, LabelNoise)}
