"""Random covariance matrices for the closed-form checks: prescribed spectrum, or Gram of logit-like data.

All generators take a ``numpy.random.Generator`` (no global state) and return float64 arrays.
"""
from __future__ import annotations

import numpy as np


def random_orthogonal(n: int, rng: np.random.Generator) -> np.ndarray:
    """Haar-distributed orthogonal matrix (QR of a Gaussian with the sign fix)."""
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    return q * np.sign(np.diag(r))


def spd_with_condition(n: int, cond: float, rng: np.random.Generator, scale: float = 1.0) -> np.ndarray:
    """Q diag(s) Qᵀ with s geometric from ``scale`` down to ``scale/cond`` (so κ₂ ≈ cond)."""
    q = random_orthogonal(n, rng)
    s = scale * np.geomspace(1.0, 1.0 / cond, n)
    c = (q * s) @ q.T
    return 0.5 * (c + c.T)


def lowrank_logits(N: int, n: int, rank: int, noise: float, rng: np.random.Generator) -> np.ndarray:
    """Logits F = Z Wᵀ + noise·E (N × n): rank-``rank`` signal like a classifier's last layer, plus noise."""
    z = rng.standard_normal((N, rank))
    w = rng.standard_normal((n, rank)) / np.sqrt(rank)
    return z @ w.T + noise * rng.standard_normal((N, n))


def gram(F: np.ndarray) -> np.ndarray:
    """Uncentred second moment Cov = FᵀF/N (ND Eq 2's Cov = E[f fᵀ])."""
    c = F.T @ F / F.shape[0]
    return 0.5 * (c + c.T)
