"""Linear probes on frozen glyph-net features: multinomial logistic regression by L-BFGS, L2 chosen on validation.

VC Sec 6.3 evaluates a pretrained representation "using linear probing (Kornblith et al., 2019)": an L2-penalised
multinomial logistic regression trained by L-BFGS on the frozen features, its penalty strength chosen on a
validation set from 97 log-spaced values in [10⁻⁶, 10⁶]. FG App A.2 reads its ImageNet-21k → 1k result the same way
(a new linear classifier on the frozen backbone). Ours, fixed before any verdict was looked at:

* features standardised with the training features' mean and standard deviation (so one penalty grid fits every
  network, whatever the scale of its features; a constant feature gets standard deviation 1);
* loss: mean cross-entropy + (l2/2)·‖W‖²_F (the bias is not penalised), float64, full batch, torch L-BFGS with
  strong-Wolfe line search, ≤ ``max_iter`` iterations from W = 0;
* penalty: the value of :data:`L2_GRID` (7 log-spaced values in [10⁻⁶, 1]: our budget allows 7 fits, not 97; the
  paper's range above 1 only underfits standardised features) with the best accuracy on the validation samples
  (every ``VAL_EVERY``-th training sample of each class, deterministic), ties to the larger penalty; then refit on
  all the training samples with that penalty.
"""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from sims.threads import single_threaded

L2_GRID = tuple(float(v) for v in np.logspace(-6, 0, 7))
VAL_EVERY = 4
MAX_ITER = 100


def _fit(X: torch.Tensor, y: torch.Tensor, K: int, l2: float, max_iter: int):
    W = torch.zeros(X.shape[1], K, dtype=torch.float64, requires_grad=True)
    b = torch.zeros(K, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([W, b], lr=1, max_iter=max_iter, history_size=20, line_search_fn="strong_wolfe",
                            tolerance_grad=1e-9, tolerance_change=1e-12)

    def closure():
        opt.zero_grad()
        loss = F.cross_entropy(X @ W + b, y) + 0.5 * l2 * (W * W).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return W.detach(), b.detach()


def _standardise(Ftr, *others):
    mu = Ftr.mean(0)
    sd = Ftr.std(0)
    sd = np.where(sd > 0, sd, 1.0)
    return [torch.from_numpy((np.asarray(A, np.float64) - mu) / sd) for A in (Ftr, *others)]


def _labels(y, name):
    y = np.asarray(y)
    if y.ndim != 1 or not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"{name}: need a 1-D integer label array, got shape {y.shape}, dtype {y.dtype}")
    return y


def linear_probe(F_train, y_train, F_test, y_test, grid=L2_GRID, max_iter: int = MAX_ITER) -> dict:
    """Fit the probe on (F_train, y_train), choose l2 on validation (module doc), predict F_test.

    Labels may be any integers; they are renumbered over the training labels (a test label absent from training
    counts as an error). Returns ``{'acc': test accuracy, 'correct': bool [n_test], 'pred': predicted labels,
    'l2': chosen penalty, 'val_acc': [len(grid)] validation accuracies}``.
    """
    F_train, F_test = np.asarray(F_train, np.float64), np.asarray(F_test, np.float64)
    y_train, y_test = _labels(y_train, "y_train"), _labels(y_test, "y_test")
    if F_train.ndim != 2 or F_test.ndim != 2 or F_train.shape[1] != F_test.shape[1]:
        raise ValueError(f"linear_probe: need 2-D features of equal width, got {F_train.shape} and {F_test.shape}")
    if len(F_train) != len(y_train) or len(F_test) != len(y_test):
        raise ValueError("linear_probe: features and labels differ in length")
    values, yi = np.unique(y_train, return_inverse=True)
    K = len(values)
    if K < 2:
        raise ValueError(f"linear_probe: the training labels hold {K} class; a probe needs ≥ 2")
    rank = np.zeros(len(yi), np.int64)  # position of each sample within its class
    for k in range(K):
        idx = np.flatnonzero(yi == k)
        rank[idx] = np.arange(len(idx))
    val = rank % VAL_EVERY == VAL_EVERY - 1
    with single_threaded(torch_threads=1, blas_threads=None):
        Xa, Xv = _standardise(F_train[~val], F_train[val])
        ya, yv = torch.from_numpy(yi[~val]), yi[val]
        val_acc = []
        for l2 in grid:
            W, b = _fit(Xa, ya, K, float(l2), max_iter)
            val_acc.append(float(np.mean((Xv @ W + b).argmax(1).numpy() == yv)))
        best = max(range(len(grid)), key=lambda i: (val_acc[i], i))
        Xt, Xs = _standardise(F_train, F_test)
        W, b = _fit(Xt, torch.from_numpy(yi), K, float(grid[best]), max_iter)
        pred = values[(Xs @ W + b).argmax(1).numpy()]
    correct = pred == y_test
    return {"acc": float(correct.mean()), "correct": correct, "pred": pred, "l2": float(grid[best]),
            "val_acc": np.asarray(val_acc)}
