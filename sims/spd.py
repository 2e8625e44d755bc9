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


def singular_logit_model(rng: np.random.Generator, spread: float = 3.0, mean: float = 0.0):
    """(W, m, floors): an exactly singular logit model with logit scales spread over 2·``spread`` decades.

    Logits f = W z, z ~ N(m, I_L) (m ~ ``mean``·N(0, I)), so Cov = E[f fᵀ] = W (I + m mᵀ) Wᵀ has rank L < n.
    n1 categories read only r1 < n1 shared latents (each is a linear combination of the others: floor 0);
    n2 more also read a private latent p with weight a_k, so the others span every latent but p and
    err_i(θ*(0)) = (a_k s_k)² / ((I + m mᵀ)⁻¹)_pp (Sherman–Morrison: (M⁻¹)_pp = 1 − m_p²/(1 + ‖m‖²)).
    Every row of W is scaled by s = 10^U(−spread, spread); the categories are shuffled.
    """
    n1 = int(rng.integers(3, 30))
    r1 = int(rng.integers(1, n1))
    n2 = int(rng.integers(0, 6))
    n, L = n1 + n2, r1 + n2
    W = np.zeros((n, L))
    W[:, :r1] = rng.standard_normal((n, r1))
    a = rng.uniform(0.05, 1.0, n2)
    W[n1 + np.arange(n2), r1 + np.arange(n2)] = a
    s = 10 ** rng.uniform(-spread, spread, n)
    W *= s[:, None]
    m = mean * rng.standard_normal(L)
    floors = np.zeros(n)
    inv_pp = 1.0 - m[r1:] ** 2 / (1.0 + m @ m)
    floors[n1:] = (a * s[n1:]) ** 2 / inv_pp
    perm = rng.permutation(n)
    return W[perm], m, floors[perm]


def second_moment_of_model(W: np.ndarray, m: np.ndarray) -> np.ndarray:
    """E[f fᵀ] = W (I + m mᵀ) Wᵀ of f = W z, z ~ N(m, I) (population, symmetric)."""
    c = W @ W.T + np.outer(W @ m, W @ m)
    return 0.5 * (c + c.T)
