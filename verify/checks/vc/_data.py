"""Shared data and helpers of the VC checks (not a check module: the leading underscore keeps discovery away).

Misses (``Result.miss``) are in tolerance units: :func:`miss_le` for err ≤ tol, :func:`miss_ge` for x ≥ t,
:func:`miss_exact` for exact (symbolic) comparisons.
"""
from __future__ import annotations

import math

import numpy as np

EPS = np.finfo(float).eps


def features(rng, K: int, N: int, p: int, within: float = 1.0, sep: float = 3.0, offset: float = 0.0,
             mean_dim: int | None = None, anisotropic: bool = True, counts=None):
    """Gaussian class clusters: H (n, p), y (n,). Class means (in a mean_dim-dim subspace if given) of scale
    ``sep``, within-class noise of scale ``within`` with a random anisotropic covariance (κ = 100), plus
    ``offset``. Well-conditioned on purpose: numerical ranks are then unambiguous (gap ≥ 1e-6 vs ε).
    ``counts`` (K,) gives imbalanced classes (N is then ignored)."""
    counts = np.full(K, N) if counts is None else np.asarray(counts)
    y = np.repeat(np.arange(K), counts)
    md = p if mean_dim is None else mean_dim
    mu = sep * rng.normal(size=(K, md)) @ orth(rng, p)[:md]
    A = random_map(rng, p, 10.0) if anisotropic else np.eye(p)  # anisotropic, condition number 10
    H = mu[y] + within * rng.normal(size=(len(y), p)) @ A + offset
    return H, y


def orth(rng, p):
    q, r = np.linalg.qr(rng.normal(size=(p, p)))
    return q * np.sign(np.diag(r))


def random_map(rng, p, cond):
    """Invertible p×p map with condition number ``cond`` (random orthogonal factors, log-spaced singular values)."""
    s = np.geomspace(1.0, 1.0 / cond, p)
    return (orth(rng, p) * s) @ orth(rng, p).T


def two_pass(H, y, K):
    """Σ_W, Σ_B, Σ_T straight from VC Eq 1–3 (two passes, all data in memory, weights n_k/N; the reference)."""
    n = len(y)
    mu = np.stack([H[y == k].mean(0) for k in range(K)])
    cnt = np.bincount(y, minlength=K)
    mg = (cnt @ mu) / n
    R = H - mu[y]
    Sw = R.T @ R / n
    D = mu - mg
    Sb = (D * (cnt / n)[:, None]).T @ D
    G = H - mg
    St = G.T @ G / n
    return Sw, Sb, St


def centred_rows(H, y, K):
    """M (K, p) with rows √π_k(μ_k − μ_G) from two passes (Σ_B = MᵀM)."""
    n = len(y)
    cnt = np.bincount(y, minlength=K)
    mu = np.stack([H[y == k].mean(0) for k in range(K)])
    return (mu - (cnt @ mu) / n) * np.sqrt(cnt / n)[:, None]


def rel(a, b):
    """max |a − b| / max |b|."""
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def rel_corr(a, b, d):
    """max_ij |a − b|_ij / √(d_i d_j): errors in units of the features' own scales (d = diag Σ_T), so a column
    of size 1e-100 is judged as strictly as one of size 1e100."""
    s = np.sqrt(np.where(d > 0, d, 1.0))
    return float(np.max(np.abs(a - b) / s[:, None] / s[None, :]))


def exact_rank(A, rtol=1e-12):
    w = np.linalg.eigvalsh(A)
    return int(np.sum(w > rtol * max(w[-1], 0)))


def miss_le(err, tol) -> float:
    """err ≤ tol in tolerance units."""
    return float(err) / float(tol)


def miss_ge(x, t) -> float:
    """x ≥ t in tolerance units (t/x; inf when x ≤ 0)."""
    return float(t) / float(x) if x > 0 else math.inf


def miss_exact(ok: bool) -> float:
    """An exact comparison: 0 if it holds, inf if not."""
    return 0.0 if ok else math.inf
