"""VC simulations: variability-collapse metrics over training (VC Fig 3, Fig 6 analogues), and the paper's tables.

Two tasks, each a small ReLU MLP trained with cross-entropy on CPU in seconds:

* ``digits``: scikit-learn's bundled 8×8 digits (1797 images, K = 10), 70/30 stratified split,
  MLP 64 → 256 → 256 → 64 (feature layer, p = 64 > K) → 10;
* ``manyclass``: a synthetic K = 100 Gaussian-mixture task (input d = 32, 30 train / 10 test points per
  class, class centres on a sphere, isotropic noise), MLP 32 → 256 → 256 → 128 (p = 128 > K) → 100.

Every few epochs the penultimate-layer features of the train and the test set are streamed through
:class:`theory.collapse.ClassStats` and all metrics of the paper are recorded (:func:`theory.collapse.metrics`),
plus the eigenvalue spectra of Σ_B and Σ_T at initialisation and at the end (VC Fig 2 analogue).
Results are cached on disk (``sims.cache.cached``) keyed by every parameter.
"""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from sims.cache import cached
from theory import collapse as vc

TABLES_CSV = Path(__file__).resolve().parents[1] / "theory" / "data" / "vc_tables.csv"
METRIC_KEYS = ("vci", "fuzziness", "squared_distance", "cosine_similarity", "class_separation", "probe_loss",
               "within_vb", "within_vb_perp")
TASKS = ("digits", "manyclass")


def load_tables(path: Path | str = TABLES_CSV) -> dict:
    """VC App C Tables 1 and 2 (one row per pretraining run) as {column: array}; 'group' is 'tau' or 'lambda'."""
    with open(path, newline="") as fh:
        rows = list(csv.reader(line for line in fh if not line.startswith("#")))
    header, body = rows[0], rows[1:]
    out = {}
    for i, h in enumerate(header):
        col = [r[i] for r in body]
        out[h] = np.array(col) if h == "group" else np.array(col, dtype=float)
    return out


def _data(task: str, rng: np.random.Generator, quick: bool):
    if task == "digits":
        from sklearn.datasets import load_digits

        X, y = load_digits(return_X_y=True)
        X = X.astype(np.float32) / 16.0
        test = np.zeros(len(y), bool)
        for k in range(10):
            idx = np.flatnonzero(y == k)
            test[rng.choice(idx, size=int(round(0.3 * len(idx))), replace=False)] = True
        mu, sd = X[~test].mean(0), X[~test].std(0) + 1e-3
        X = (X - mu) / sd
        return X[~test], y[~test], X[test], y[test], 10
    if task == "manyclass":
        K, d = (50, 32) if quick else (100, 32)
        n_tr, n_te = 30, 10
        c = rng.normal(size=(K, d))
        c *= 3.0 / np.linalg.norm(c, axis=1, keepdims=True)  # class centres on a sphere of radius 3

        def draw(n):
            y = np.repeat(np.arange(K), n)
            return (c[y] + 0.8 * rng.normal(size=(len(y), d))).astype(np.float32), y

        Xtr, ytr = draw(n_tr)
        Xte, yte = draw(n_te)
        return Xtr, ytr, Xte, yte, K
    raise ValueError(f"task: must be one of {TASKS}, got {task!r}")


def _features_metrics(net, X, y, K, device):
    import torch

    st = vc.ClassStats(net.p, K)
    with torch.no_grad():
        for s in range(0, len(y), 4096):
            xb = torch.as_tensor(X[s:s + 4096], device=device)
            f = net.features(xb)
            st.update(f.double().cpu().numpy(), y[s:s + 4096])
    with torch.no_grad():
        acc = float((net(torch.as_tensor(X, device=device)).argmax(1).cpu().numpy() == y).mean())
    m = vc.metrics(st)
    out = {k: float(m[k]) for k in METRIC_KEYS}
    out["vci_exact"] = vc.vci(st, rank="exact")
    out["accuracy"] = acc
    return out, st


def train_run(task: str = "digits", epochs: int = 60, record_every: int = 5, seed: int = 0, quick: bool = False,
              device: str = "cpu", lr: float = 0.05, weight_decay: float = 5e-4) -> dict:
    """Train one task and record the metrics on train and test features every ``record_every`` epochs.

    Runs torch with one intra-op thread (restored afterwards): these nets are tiny (docs/vc.md, sims/threads.py).
    """
    from sims.threads import single_threaded

    with single_threaded(blas_threads=None):
        return _train_run(task, epochs, record_every, seed, quick, device, lr, weight_decay)


def _train_run(task, epochs, record_every, seed, quick, device, lr, weight_decay) -> dict:
    import torch
    from torch import nn

    rng = np.random.default_rng(seed)
    g = torch.Generator(device="cpu")
    g.manual_seed(seed)
    Xtr, ytr, Xte, yte, K = _data(task, rng, quick)
    d = Xtr.shape[1]
    p = 64 if task == "digits" else (64 if quick else 128)

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.p = p
            self.body = nn.Sequential(nn.Linear(d, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                                      nn.Linear(256, p), nn.ReLU())
            self.head = nn.Linear(p, K)

        def features(self, x):
            return self.body(x)

        def forward(self, x):
            return self.head(self.body(x))

    net = MLP()
    with torch.no_grad():  # seeded init through our generator, never the global RNG
        for mod in net.modules():
            if isinstance(mod, nn.Linear):
                bound = 1.0 / np.sqrt(mod.in_features)  # PyTorch's default nn.Linear init, seeded
                mod.weight.uniform_(-bound, bound, generator=g)
                mod.bias.uniform_(-bound, bound, generator=g)
    net.to(device)
    opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9, weight_decay=weight_decay, nesterov=True)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=epochs)
    Xt = torch.as_tensor(Xtr, device=device)
    yt = torch.as_tensor(ytr, device=device)
    lossf = nn.CrossEntropyLoss()
    rec = {"epoch": []}
    spectra = {}

    def record(ep):
        rec["epoch"].append(ep)
        for split, (X, y) in {"train": (Xtr, ytr), "test": (Xte, yte)}.items():
            m, st = _features_metrics(net, X, y, K, device)
            for k, v in m.items():
                rec.setdefault(f"{split}__{k}", []).append(v)
            if split == "train" and (ep == 0 or ep == epochs):
                s = vc.spectra(st)
                spectra[f"spec_b_{'init' if ep == 0 else 'final'}"] = s["sigma_b"]
                spectra[f"spec_t_{'init' if ep == 0 else 'final'}"] = s["sigma_t"]

    net.eval()
    record(0)
    bs = 64
    for ep in range(1, epochs + 1):
        net.train()
        perm = torch.randperm(len(ytr), generator=g).to(device)
        for s in range(0, len(ytr), bs):
            idx = perm[s:s + bs]
            opt.zero_grad()
            loss = lossf(net(Xt[idx]), yt[idx])
            loss.backward()
            opt.step()
        sched.step()
        net.eval()
        if ep % record_every == 0 or ep == epochs:
            record(ep)
    out = {k: np.asarray(v, dtype=float) for k, v in rec.items()}
    out.update(spectra)
    out["K"], out["p"] = K, p
    return out


def training_runs(quick: bool = False, seed: int = 0, device: str = "cpu") -> dict:
    """Both tasks, cached on disk: {task: {key: array}} (keys ``train__vci``, ``test__fuzziness``, ``epoch`` …)."""
    res = {}
    for task in TASKS:
        params = {"version": 1, "task": task, "quick": quick, "seed": seed, "device": device,
                  "epochs": 30 if quick else 60, "record_every": 3 if quick else 2}
        res[task] = cached(f"vc_training_{task}", params,
                           lambda: train_run(task, params["epochs"], params["record_every"], seed, quick, device))
    return res
