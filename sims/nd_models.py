"""Synthetic logit models for the neural-dependency checks (ND Sec 2.2 massive categories, Sec 2.4 two networks).

* :func:`massive_category_logits`: a linear last layer on p-dimensional features, f = W h (+ noise),
  with class prototypes as the rows of W and features h = s·w_y/‖w_y‖ + ξ, so every class has a
  high logit on its own samples (a classifier-like model). With n > p categories Cov = E[f fᵀ] has
  rank p and every error floor vanishes (ND Sec 2.2).
* :func:`two_networks`: two "networks" f and g that read the same p-dimensional features through
  different linear maps, g through a noisy view of them (ND Sec 2.4: independently trained models
  on the same data).

All take a ``numpy.random.Generator`` and return float64 arrays.
"""
from __future__ import annotations

import numpy as np


def massive_category_logits(N: int, n: int, p: int, rng: np.random.Generator, signal: float = 3.0,
                            noise: float = 0.0, feature_noise: float = 1.0):
    """(F, labels, W): N samples of n logits f = W h + noise·e, h ∈ R^p, W (n × p) Gaussian/√p.

    Labels are uniform over the n classes; h = signal·w_y/‖w_y‖ + feature_noise·ξ (ξ standard normal).
    """
    if min(N, n, p) < 1:
        raise ValueError(f"N, n, p must be >= 1, got {N}, {n}, {p}")
    W = rng.standard_normal((n, p)) / np.sqrt(p)
    y = rng.integers(0, n, size=N)
    proto = W / np.linalg.norm(W, axis=1, keepdims=True)
    H = signal * proto[y] + feature_noise * rng.standard_normal((N, p))
    F = H @ W.T
    if noise > 0:
        F = F + noise * rng.standard_normal((N, n))
    return F, y, W


def two_networks(N: int, n: int, p: int, rng: np.random.Generator, signal: float = 6.0, view_noise: float = 0.1,
                 noise: float = 0.01):
    """(F, G, labels): two networks' logits on the same N samples and n classes.

    Shared features h as in :func:`massive_category_logits`; f = W_f h + noise·e, g = W_g (h + view_noise·ξ)
    + noise·e' with independent maps W_f, W_g (n × p): different linear maps of noisy views of the
    same features. The default signal gives both networks ≈ 83 % accuracy at n = 120, p = 80.
    """
    if min(N, n, p) < 1:
        raise ValueError(f"N, n, p must be >= 1, got {N}, {n}, {p}")
    Wf = rng.standard_normal((n, p)) / np.sqrt(p)
    Wg = rng.standard_normal((n, p)) / np.sqrt(p)
    y = rng.integers(0, n, size=N)
    proto = (Wf + Wg) / np.linalg.norm(Wf + Wg, axis=1, keepdims=True)  # both networks learned the classes
    H = signal * proto[y] + rng.standard_normal((N, p))
    F = H @ Wf.T + noise * rng.standard_normal((N, n))
    G = (H + view_noise * rng.standard_normal((N, p))) @ Wg.T + noise * rng.standard_normal((N, n))
    return F, G, y
