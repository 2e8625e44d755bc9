"""ND Sec 3.2 (new categories from base logits) and Sec 3.3 (the dependency regulariser) on a small trained model.

The task is generated here: a Gaussian mixture with ``n_classes`` ≥ 100 classes whose means lie on a
``latent_dim``-dimensional subspace of R^dim (μ_c = U z_c, z_c ~ N(0, I), U orthonormal), observed with
isotropic noise: x = μ_c + σ ε. Massive categories in a low-dimensional structure are the regime where
ND Sec 2.2 predicts neural dependencies. The classifier is a two-hidden-layer ReLU MLP trained in float32
with Adam; every random draw comes from a seeded ``numpy.random.Generator`` / ``torch.Generator``.

* :func:`new_categories_experiment` (ND Sec 3.2, App. C "Training settings of Sec. 3.2"): train f_base on
  the n₁ base classes; freeze it; learn Θ ∈ R^{n₁×n₂} by minimising the cross-entropy of
  f_all = [f_base, f_base Θ] on the training set (a convex problem in Θ, solved by full-batch L-BFGS);
  compare with f_baseline trained on all n₁ + n₂ classes (Tab 2: all classes; Tab 4: argmax within the new
  classes). Negative control: the same Θ fit on labels permuted among the new-class samples.
* :func:`regularizer_experiment` (ND Sec 3.3, App. C "Training settings of Sec. 3.3"): from f_baseline pick
  the pair (i, j) with the largest CovLasso coefficient |θ_j| (ND Eq 2, λ = ρ·λ_max(i), Cov = E[f fᵀ] on
  held-out data), then fine-tune with SGD (lr 0.01, momentum 0.9, weight decay 5e-4) adding
  w·|E_batch[f_i f_j]| (w = 0.2 as in the paper), and, as the control arm, the same fine-tuning without
  the penalty. The coefficient θ_j and the accuracy are recorded after every epoch.

Both results are cached on disk (:func:`sims.cache.cached`) keyed by every parameter and the seed.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from sims.cache import cached
from sims.threads import single_threaded
from theory import dependency as dep
from theory.covlasso import covlasso

VERSION = 2


@dataclasses.dataclass(frozen=True)
class TaskParams:
    """Sizes of the Gaussian-mixture task and of the MLP (all JSON-serialisable, part of the cache key)."""

    n_classes: int = 120
    dim: int = 32
    latent_dim: int = 12
    n_train: int = 150  # per class
    n_test: int = 80  # per class
    noise: float = 0.8
    hidden: int = 128
    epochs: int = 15
    lr: float = 2e-3
    batch: int = 256

    def validate(self) -> None:
        if self.n_classes < 2:
            raise ValueError(f"n_classes: need at least 2 classes, got {self.n_classes}")
        for name in ("dim", "latent_dim", "n_train", "n_test", "hidden", "epochs", "batch"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name}: must be a positive integer, got {v!r}")
        if self.latent_dim > self.dim:
            raise ValueError(f"latent_dim = {self.latent_dim} > dim = {self.dim}")
        if not np.isfinite(self.noise) or self.noise <= 0:
            raise ValueError(f"noise: must be > 0 and finite, got {self.noise}")
        if not np.isfinite(self.lr) or self.lr <= 0:
            raise ValueError(f"lr: must be > 0 and finite, got {self.lr}")


def make_mixture(p: TaskParams, rng: np.random.Generator) -> dict:
    """Draw the task: class means U z_c on a latent_dim subspace, train/test samples (float32), labels."""
    p.validate()
    U, _ = np.linalg.qr(rng.standard_normal((p.dim, p.latent_dim)))
    means = rng.standard_normal((p.n_classes, p.latent_dim)) @ U.T

    def draw(per_class: int):
        y = np.repeat(np.arange(p.n_classes), per_class)
        x = means[y] + p.noise * rng.standard_normal((y.size, p.dim))
        return x.astype(np.float32), y.astype(np.int64)

    x_tr, y_tr = draw(p.n_train)
    x_te, y_te = draw(p.n_test)
    return {"x_train": x_tr, "y_train": y_tr, "x_test": x_te, "y_test": y_te, "means": means}


def build_mlp(dim: int, hidden: int, n_out: int, generator, device: str = "cpu"):
    """dim → hidden → hidden → n_out ReLU MLP, He-uniform weights drawn from ``generator`` (no global RNG)."""
    import torch
    from torch import nn

    if n_out < 1:
        raise ValueError(f"n_out: need at least one output, got {n_out}")
    model = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                          nn.Linear(hidden, n_out))
    with torch.no_grad():
        for layer in model:
            if isinstance(layer, nn.Linear):
                bound = float(np.sqrt(6.0 / layer.in_features))
                layer.weight.copy_((torch.rand(layer.weight.shape, generator=generator) * 2 - 1) * bound)
                layer.bias.zero_()
    return model.to(device)


def _tensor(a, device, dtype=None):
    import torch

    return torch.as_tensor(a, device=device, dtype=dtype)


def train_classifier(x, y, n_out: int, p: TaskParams, generator, device: str = "cpu", desc: str = "train"):
    """Adam + cross-entropy, minibatches in an order drawn from ``generator``; returns the trained model."""
    import torch
    import torch.nn.functional as F
    from tqdm import tqdm

    if len(x) != len(y) or len(y) == 0:
        raise ValueError(f"x and y: need the same positive length, got {len(x)} and {len(y)}")
    if int(np.max(y)) >= n_out or int(np.min(y)) < 0:
        raise ValueError(f"y: labels must lie in [0, {n_out}), got range [{int(np.min(y))}, {int(np.max(y))}]")
    model = build_mlp(x.shape[1], p.hidden, n_out, generator, device)
    opt = torch.optim.Adam(model.parameters(), lr=p.lr)
    xt, yt = _tensor(x, device), _tensor(y, device)
    n = len(y)
    for _ in tqdm(range(p.epochs), desc=desc, disable=None, leave=False):
        perm = torch.randperm(n, generator=generator).to(device)
        for k in range(0, n, p.batch):
            idx = perm[k:k + p.batch]
            loss = F.cross_entropy(model(xt[idx]), yt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return model


def logits_of(model, x, device: str = "cpu") -> np.ndarray:
    import torch

    with torch.no_grad():
        return model(_tensor(x, device)).double().cpu().numpy()


#: Θ is a fit, not a start, only when ‖∇‖ fell ≥ 10× from Θ = 0. CE on separable new classes has no attained minimum
#: (the gradient decays slowly: the tiny task's 100 iterations leave 0.024), while 3 iterations leave 0.7.
THETA_GRAD_RTOL = 0.1


def fit_theta(f_base: np.ndarray, y: np.ndarray, n_new: int, *, max_iter: int = 100, device: str = "cpu",
              features: np.ndarray | None = None, new_only: bool = False, check: bool = True) -> np.ndarray:
    """Θ ∈ R^{n₁×n₂} minimising CE([f_base, f_base Θ], y) with f_base frozen (ND Sec 3.2); full-batch L-BFGS.

    Labels 0..n₁−1 are base classes, n₁..n₁+n₂−1 the new ones. The problem is convex in Θ; float32.
    ``features`` (N × d): the new logits are ``features`` Θ instead (a linear probe, Θ ∈ R^{d×n₂}).
    ``new_only``: the paper's literal wording ("on the training set of the new categories"): CE over the new
    classes alone, on the new-class samples only — nothing keeps the new logits below the base ones elsewhere.
    ``check``: a ValueError unless the fit moved toward stationarity (‖∇‖ ≤ THETA_GRAD_RTOL·‖∇ at Θ = 0‖): a Θ
    stopped after a few iterations is not the minimiser the paper's Θ is, and a verdict read off it would be about
    the solver.
    """
    import torch
    import torch.nn.functional as F

    f = np.asarray(f_base)
    if f.ndim != 2 or f.shape[0] != len(y):
        raise ValueError(f"f_base: expected shape (N, n_base) with N = len(y) = {len(y)}, got {f.shape}")
    if not np.all(np.isfinite(f)):
        raise ValueError("f_base: contains NaN/Inf")
    if n_new < 1:
        raise ValueError(f"n_new: need at least one new class, got {n_new}")
    n1 = f.shape[1]
    if int(np.max(y)) >= n1 + n_new:
        raise ValueError(f"y: label {int(np.max(y))} >= n_base + n_new = {n1 + n_new}")
    h = f if features is None else np.asarray(features)
    if h.ndim != 2 or h.shape[0] != len(y) or not np.all(np.isfinite(h)):
        raise ValueError(f"features: expected finite (N, d) with N = {len(y)}, got shape {h.shape}")
    ft = _tensor(f, device, torch.float32)
    ht = _tensor(h, device, torch.float32)
    yt = _tensor(y, device, torch.int64)
    keep = yt >= n1
    theta = torch.zeros(h.shape[1], n_new, device=device, requires_grad=True)
    opt = torch.optim.LBFGS([theta], lr=1, max_iter=max_iter, history_size=20, line_search_fn="strong_wolfe",
                            tolerance_grad=1e-9, tolerance_change=1e-12)

    def closure():
        opt.zero_grad()
        if new_only:
            loss = F.cross_entropy(ht[keep] @ theta, yt[keep] - n1)
        else:
            loss = F.cross_entropy(torch.cat([ft, ht @ theta], 1), yt)
        loss.backward()
        return loss

    closure()
    g0 = theta.grad.norm().item()
    opt.step(closure)
    closure()
    g1 = theta.grad.norm().item()
    if check and g1 > THETA_GRAD_RTOL * g0:
        raise ValueError(f"fit_theta: Θ did not converge in {max_iter} L-BFGS iterations: ‖∇‖ = {g1:.3g} is "
                         f"{g1 / g0:.3g} of its value at Θ = 0 (> {THETA_GRAD_RTOL:g}); raise max_iter")
    return theta.detach().double().cpu().numpy()


def cross_entropy(logits: np.ndarray, y: np.ndarray) -> float:
    """Mean softmax cross-entropy of float64 ``logits`` against integer labels ``y`` (log-sum-exp shifted by the row
    maximum)."""
    L = np.asarray(logits, dtype=np.float64)
    m = L.max(1, keepdims=True)
    lse = m[:, 0] + np.log(np.exp(L - m).sum(1))
    return float(np.mean(lse - L[np.arange(len(L)), np.asarray(y)]))


def _accuracies(logits: np.ndarray, y: np.ndarray, n_base: int) -> dict:
    """All-class accuracy (ND Tab 2) and argmax-within-group accuracies on base/new samples (ND Tab 4)."""
    new = y >= n_base
    return {
        "all": float(np.mean(logits.argmax(1) == y)),
        "new_within": float(np.mean(logits[new][:, n_base:].argmax(1) + n_base == y[new])),
        "base_within": float(np.mean(logits[~new][:, :n_base].argmax(1) == y[~new])),
        "correct_all": logits.argmax(1) == y,
        "correct_new_within": logits[new][:, n_base:].argmax(1) + n_base == y[new],
    }


def _task_params_dict(p: TaskParams) -> dict:
    return dataclasses.asdict(p)


def single_thread():
    """Torch and BLAS on one thread inside the block (restored after): these models are tiny, and on a shared
    2-core machine OpenMP spin-waiting made a 256-sample backward pass 50× slower (see :mod:`sims.threads`)."""
    return single_threaded()


def baseline_model(p: TaskParams, seed: int, device: str = "cpu"):
    """f_baseline trained on all classes, cached as its weights; returns (model, task)."""
    import torch

    task = make_mixture(p, np.random.default_rng([seed, 0]))

    def compute():
        g = torch.Generator().manual_seed(int(seed) % (2**63 - 1) + 2)
        m = train_classifier(task["x_train"], task["y_train"], p.n_classes, p, g, device, desc="f_baseline")
        return {k: v.detach().cpu().numpy() for k, v in m.state_dict().items()}

    with single_thread():
        state = cached("nd_training_baseline", {"version": VERSION, "task": _task_params_dict(p), "seed": int(seed)},
                       compute)
    model = build_mlp(p.dim, p.hidden, p.n_classes, torch.Generator().manual_seed(0), device)
    model.load_state_dict({k: torch.as_tensor(np.asarray(v)) for k, v in state.items()})
    return model, task


def new_categories_experiment(p: TaskParams, n_new: int, seed: int, device: str = "cpu", theta_iter: int = 100,
                              sparse_rho: float | None = None) -> dict:
    """ND Sec 3.2 protocol on the mixture: f_base on n₁ = n_classes − n_new classes, Θ on its frozen logits.

    Returns accuracies (fractions) of f_all = [f_base, f_base Θ], of f_baseline (all classes), and of the
    negative control Θ_shuffled (labels permuted among the new-class training samples); per-class new-class
    accuracies; Θ; the paired-difference standard errors; the relative CovLasso floor R (ND A31) of each
    baseline new-class logit given the base logits (how linear the retrained new logits are in f_base).

    ``sparse_rho``: also the sparse reading (ND Sec 2.4, between networks): each f_baseline new logit as the
    CovLasso combination (λ = sparse_rho·λ_max, Cov = E[f fᵀ] of [f_base, f_baseline,k] on the training set) of the
    base logits; reports its support sizes and the within-new-class accuracy of f_base Θ_CovLasso.
    """
    import torch

    p.validate()
    if not 1 <= n_new < p.n_classes:
        raise ValueError(f"n_new: must be in [1, n_classes) = [1, {p.n_classes}), got {n_new}")
    if sparse_rho is not None and not 0 < sparse_rho < 1:
        raise ValueError(f"sparse_rho: must be in (0, 1) or None, got {sparse_rho}")
    params = {"version": VERSION, "arms": 2, "task": _task_params_dict(p), "n_new": int(n_new), "seed": int(seed),
              "theta_iter": int(theta_iter), "sparse_rho": sparse_rho}

    def compute():
        n1 = p.n_classes - n_new
        full, task = baseline_model(p, seed, device)
        xtr, ytr, xte, yte = task["x_train"], task["y_train"], task["x_test"], task["y_test"]
        g = torch.Generator().manual_seed(int(seed) % (2**63 - 1) + 1)
        base_mask = ytr < n1
        f_base = train_classifier(xtr[base_mask], ytr[base_mask], n1, p, g, device, desc="f_base")
        ftr, fte = logits_of(f_base, xtr, device), logits_of(f_base, xte, device)
        theta = fit_theta(ftr, ytr, n_new, max_iter=theta_iter, device=device)
        rng = np.random.default_rng([seed, 3])
        y_shuf = ytr.copy()
        new_idx = np.flatnonzero(ytr >= n1)
        y_shuf[new_idx] = rng.permutation(ytr[new_idx])
        theta_shuf = fit_theta(ftr, y_shuf, n_new, max_iter=theta_iter, device=device)
        # the paper's literal wording: Θ from the new-class samples and the new classes alone
        theta_lit = fit_theta(ftr, ytr, n_new, max_iter=theta_iter, device=device, new_only=True)
        # Θ never learned (left at a random draw of the learned Θ's norm)
        theta_rand = rng.standard_normal(theta.shape)
        theta_rand *= np.linalg.norm(theta) / np.linalg.norm(theta_rand)
        # a linear probe on f_base's penultimate features instead of its logits (not through dependencies)
        htr, hte = logits_of(f_base[:-1], xtr, device), logits_of(f_base[:-1], xte, device)  # penultimate features
        theta_probe = fit_theta(ftr, ytr, n_new, max_iter=theta_iter, device=device, features=htr)
        full_logits = logits_of(full, xte, device)
        arms = {"dependency": np.concatenate([fte, fte @ theta], 1),
                "shuffled": np.concatenate([fte, fte @ theta_shuf], 1),
                "literal": np.concatenate([fte, fte @ theta_lit], 1),
                "random": np.concatenate([fte, fte @ theta_rand], 1),
                "probe": np.concatenate([fte, hte @ theta_probe], 1),
                "baseline": full_logits}
        acc = {name: _accuracies(lg, yte, n1) for name, lg in arms.items()}
        out = {"n_base": n1, "n_new": n_new, "theta": theta,
               # f_all's cross-entropy on Θ's fit samples and on the test samples: a fit reads lower on its own
               # samples, so the order says which samples Θ was fitted on (the check reads it)
               "theta_ce_train_test": [cross_entropy(np.concatenate([ftr, ftr @ theta], 1), ytr),
                                       cross_entropy(arms["dependency"], yte)]}
        for name, a in acc.items():
            for k in ("all", "new_within", "base_within"):
                out[f"acc_{k}_{name}"] = a[k]
        for k in ("all", "new_within"):  # SE of the paired accuracy difference (arm − baseline)
            for name in arms:
                if name == "baseline":
                    continue
                d = acc[name][f"correct_{k}"].astype(float) - acc["baseline"][f"correct_{k}"].astype(float)
                tag = "" if name == "dependency" else f"_{name}"
                out[f"se_diff_{k}{tag}"] = float(d.std(ddof=1) / np.sqrt(d.size))
        new_te = yte >= n1
        cls = yte[new_te]
        for name in arms:
            c = acc[name]["correct_new_within"]
            out[f"per_class_new_{name}"] = np.array([c[cls == k].mean() for k in range(n1, p.n_classes)])
        # between-network dependency (ND Sec 2.4): each retrained new logit regressed on the base logits
        joint = np.concatenate([fte, full_logits[:, n1:]], 1)
        cov = joint.T @ joint / len(joint)
        out["relative_floor_new_on_base"] = np.array(
            [dep.relative_floor(cov[np.ix_(list(range(n1)) + [n1 + k], list(range(n1)) + [n1 + k])])[n1]
             for k in range(n_new)])
        if sparse_rho is not None:
            g_tr = logits_of(full, xtr, device)[:, n1:]
            theta_cl = np.zeros((n1, n_new))
            for k in range(n_new):
                jt = np.concatenate([ftr, g_tr[:, k:k + 1]], 1)
                theta_cl[:, k] = covlasso(second_moment(jt), n1, rho=sparse_rho)[:n1]
            new_te = yte >= n1
            out["acc_new_within_covlasso"] = float(np.mean((fte[new_te] @ theta_cl).argmax(1) + n1 == yte[new_te]))
            out["covlasso_support"] = (theta_cl != 0).sum(0)
        return out

    with single_thread():
        return cached("nd_training_new_categories", params, compute)


def second_moment(logits: np.ndarray) -> np.ndarray:
    """Cov = E[f fᵀ] (uncentred, ND Sec 2.2) of an (N, n) logit matrix, float64: theory.dependency.second_moment
    (one implementation, read at call time)."""
    return dep.second_moment(logits)


def dependency_coefficient(cov: np.ndarray, i: int, j: int, rho: float) -> float:
    """θ_j of the CovLasso solution for target i (ND Eq 2) with λ = ρ·λ_max(i)."""
    return float(covlasso(cov, i, rho=rho)[j])


def choose_pair(cov: np.ndarray, rho: float, candidates) -> tuple[int, int, float]:
    """Among target categories ``candidates``, the (i, j) with the largest CovLasso |θ_j| (ND Sec 3.3)."""
    best = (-1, -1, 0.0)
    for i in candidates:
        th = covlasso(cov, int(i), rho=rho)
        th[int(i)] = 0.0
        j = int(np.argmax(np.abs(th)))
        if abs(th[j]) > abs(best[2]):
            best = (int(i), j, float(th[j]))
    if best[0] < 0:
        raise ValueError("choose_pair: no candidate target has a nonzero dependency coefficient at this rho")
    return best


def finetune(model, task: dict, p: TaskParams, pair: tuple[int, int] | None, weight: float, epochs: int, rho: float,
             generator, device: str = "cpu", track: list | None = None) -> dict:
    """SGD fine-tuning (ND App. C: lr 0.01, momentum 0.9, wd 5e-4) with loss CE + weight·|E_batch[f_i f_j]|.

    ``pair = None`` or ``weight = 0`` is the unpenalised arm. After each epoch (and before the first) records,
    for every tracked pair (default: ``[pair]``), the CovLasso coefficient θ_j on held-out data and E[f_i f_j]
    (arrays of shape (epochs + 1, len(track))), and the test accuracy.
    """
    import torch
    import torch.nn.functional as F
    from tqdm import tqdm

    if weight < 0 or not np.isfinite(weight):
        raise ValueError(f"weight: must be >= 0 and finite, got {weight}")
    track = list(track) if track else ([pair] if pair is not None else [])
    if not track:
        raise ValueError("finetune: give the pair to penalise or the pairs to track")
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    xt, yt = _tensor(task["x_train"], device), _tensor(task["y_train"], device)
    xte, yte = task["x_test"], task["y_test"]
    from sims.heldout import check_held_out

    check_held_out(task["x_train"], xte, "nd.regularizer: the fine-tuning's samples vs the held-out read-out")
    rec = {"coef": [], "acc": [], "moment": []}

    def record():
        lg = logits_of(model, xte, device)
        cov = second_moment(lg)
        rec["coef"].append([dependency_coefficient(cov, i, j, rho) for i, j in track])
        rec["acc"].append(float(np.mean(lg.argmax(1) == yte)))
        rec["moment"].append([float(cov[i, j]) for i, j in track])

    record()
    n = len(yt)
    for _ in tqdm(range(epochs), desc="finetune", disable=None, leave=False):
        perm = torch.randperm(n, generator=generator).to(device)
        for k in range(0, n, p.batch):
            idx = perm[k:k + p.batch]
            out = model(xt[idx])
            loss = F.cross_entropy(out, yt[idx])
            if pair is not None and weight > 0:
                loss = loss + dependency_penalty(out, pair, weight)
            opt.zero_grad()
            loss.backward()
            opt.step()
        record()
    return {k: np.array(v) for k, v in rec.items()}


def dependency_penalty(out, pair, weight: float):
    """ND Sec 3.3's regulariser on a batch of logits ``out`` (N × n): weight·|E[f_i f_j]|, the batch mean of the
    product of logits i and j (the uncentred second moment of ND Remark 1), for ``pair`` = (i, j)."""
    i, j = int(pair[0]), int(pair[1])
    return weight * (out[:, i] * out[:, j]).mean().abs()


def regularizer_experiment(p: TaskParams, seed: int, *, epochs: int = 10, weight: float = 0.2, rho: float = 0.1,
                           n_candidates: int = 16, device: str = "cpu") -> dict:
    """ND Sec 3.3 on f_baseline: coefficient/accuracy trajectories with and without the penalty (cached)."""
    import copy

    import torch

    p.validate()
    if not 0 < rho < 1:
        raise ValueError(f"rho: must be in (0, 1), got {rho}")
    if epochs < 1:
        raise ValueError(f"epochs: must be >= 1, got {epochs}")
    params = {"version": VERSION, "task": _task_params_dict(p), "seed": int(seed), "epochs": int(epochs),
              "weight": float(weight), "rho": float(rho), "n_candidates": int(n_candidates)}

    def compute():
        model, task = baseline_model(p, seed, device)
        cov = second_moment(logits_of(model, task["x_test"], device))
        rng = np.random.default_rng([seed, 4])
        cands = rng.choice(p.n_classes, size=min(n_candidates, p.n_classes), replace=False)
        i, j, _ = choose_pair(cov, rho, cands)
        # a second pair (another target and its strongest partner), tracked in both arms, never penalised
        others = [c for c in cands if c not in (i, j)]
        i2, j2, _ = choose_pair(cov, rho, others[:max(1, len(others) // 2)])
        out = {"i": i, "j": j, "i_other": i2, "j_other": j2}
        for name, w in (("penalised", weight), ("unpenalised", 0.0)):
            g = torch.Generator().manual_seed(int(seed) % (2**63 - 1) + 5)
            rec = finetune(copy.deepcopy(model), task, p, (i, j), w, epochs, rho, g, device,
                           track=[(i, j), (i2, j2)])
            for k, v in rec.items():
                out[f"{name}_{k}"] = v
        return out

    with single_thread():
        return cached("nd_training_regularizer", params, compute)


# The sizes used by the checks (verify/checks/nd/sec3_training.py) and figures (paper_figs/nd_training.py), so both read
# the same cache. quick: 100 classes (90 base + 10 new); full: 120 classes (100 base + 20 new), 30 fine-tuning
# epochs as ND App. C.
QUICK = {"task": TaskParams(n_classes=100, n_train=80, n_test=50, hidden=96, epochs=10), "n_new": 10, "ft_epochs": 30}
FULL = {"task": TaskParams(), "n_new": 20, "ft_epochs": 30, "sparse_rho": 0.01}
REG_WEIGHT = 0.2  # ND App. C: "The loss weight for the regularization term is set to 0.2"
REG_RHO = 0.1  # CovLasso λ = 0.1·λ_max(i) for the tracked coefficient


def standard_sizes(quick: bool) -> dict:
    return QUICK if quick else FULL


def new_categories_result(quick: bool, seed: int = 0, device: str = "cpu") -> dict:
    """:func:`new_categories_experiment` at the standard quick/full sizes."""
    s = standard_sizes(quick)
    return new_categories_experiment(s["task"], s["n_new"], seed, device, sparse_rho=s.get("sparse_rho"))


def regularizer_result(quick: bool, seed: int = 0, device: str = "cpu") -> dict:
    """:func:`regularizer_experiment` at the standard quick/full sizes."""
    s = standard_sizes(quick)
    return regularizer_experiment(s["task"], seed, epochs=s["ft_epochs"], weight=REG_WEIGHT, rho=REG_RHO, device=device)
