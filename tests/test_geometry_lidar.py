"""LiDAR (theory.geometry.lidar_rank): closed forms and the definition written out densely.

Closed form: embeddings whose within-object covariance is exactly I and whose object means span k directions
with equal variance have an LDA matrix with k equal eigenvalues: LiDAR = k (δ = 0), for any invertible linear
map of the embeddings (it changes Σ_w and Σ_b alike). Reference: Σ_w^−½ by an eigendecomposition, Σ_lidar
formed explicitly, its eigenvalues' entropy.
"""
from __future__ import annotations

import numpy as np
import pytest

from theory.geometry import lidar


def designed(k=4, n=30, q=5, p=8, seed=0):
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((n, q, p))
    G -= G.mean(axis=1, keepdims=True)  # residuals centred within each object
    Q, _ = np.linalg.qr(G.reshape(n * q, p))  # orthonormal columns, still centred within objects
    R = (Q * np.sqrt(n * (q - 1))).reshape(n, q, p)  # Σ_w = I exactly
    H = rng.standard_normal((n, k))
    U, _ = np.linalg.qr(H - H.mean(0))  # centred orthonormal: the means' scatter has k equal eigenvalues
    V, _ = np.linalg.qr(rng.standard_normal((p, k)))
    M = 2.0 * np.sqrt(n - 1.0) * U @ V.T
    return R + M[:, None, :]


def dense_lidar(Z, delta, eps=0.0):
    n, q, p = Z.shape
    mu = Z.mean(axis=1)
    Sb = (mu - mu.mean(0)).T @ (mu - mu.mean(0)) / (n - 1)
    R = (Z - mu[:, None]).reshape(-1, p)
    Sw = R.T @ R / (n * (q - 1)) + delta * np.eye(p)
    w, V = np.linalg.eigh(Sw)
    S = V @ np.diag(w ** -0.5) @ V.T
    lam = np.clip(np.linalg.eigvalsh(S @ Sb @ S), 0, None)
    pk = lam / lam.sum() + eps
    pk = pk[pk > 0]
    return np.exp(-np.sum(pk * np.log(pk)))


@pytest.mark.parametrize("k", [1, 3, 6])
def test_equal_discriminant_directions_give_k(k):
    Z = designed(k)
    # the eigenvalues are k copies of one value and p − k zeros up to rounding (~1e-15 relative): entropy exact
    assert lidar(Z, delta=0.0) == pytest.approx(k, rel=1e-12)
    A = np.random.default_rng(1).standard_normal((8, 8))
    assert lidar(Z @ A.T + 1e6, delta=0.0) == pytest.approx(k, rel=1e-8)  # κ(A)² ε and the offset's rounding
    assert lidar(1e150 * Z, delta=0.0) == pytest.approx(k, rel=1e-12)


def test_against_the_dense_definition_and_layouts():
    rng = np.random.default_rng(2)
    Z = rng.standard_normal((40, 6, 10)) + rng.standard_normal((40, 1, 10)) * np.linspace(0.2, 2, 10) + 3.0
    for delta, eps in ((1e-3, 0.0), (0.5, 1e-7)):
        assert lidar(Z, delta=delta, eps=eps) == pytest.approx(dense_lidar(Z, delta, eps), rel=1e-11)
    assert lidar(Z.reshape(240, 10), n_augs=6, delta=1e-3) == lidar(Z, delta=1e-3)
    assert lidar(Z.astype(np.float32), delta=1e-3) == pytest.approx(
        dense_lidar(Z.astype(np.float32).astype(np.float64), 1e-3), rel=1e-11)


def test_errors():
    Z = designed(2)
    with pytest.raises(ValueError, match="n_augs"):
        lidar(Z.reshape(150, 8))
    with pytest.raises(ValueError, match="n_augs"):
        lidar(Z.reshape(150, 8), n_augs=7)
    with pytest.raises(ValueError, match="Z: expected"):
        lidar(np.ones(5))
    with pytest.raises(ValueError, match="delta"):
        lidar(Z, delta=-1.0)
    with pytest.raises(ValueError, match="eps"):
        lidar(Z, eps=1.0)
    with pytest.raises(ValueError, match="convention"):
        lidar(Z, convention="paper")
    with pytest.raises(ValueError, match="delta: the within-object covariance"):
        lidar(np.repeat(Z[:, :1], 5, axis=1) + np.arange(5.0)[None, :, None], delta=0.0)  # rank-1 Σ_w
    with pytest.raises(ValueError, match="object means coincide"):
        lidar(Z - Z.mean(axis=1, keepdims=True))
    with pytest.raises(ValueError, match="Z: non-finite"):
        lidar(np.where(Z > 2, np.inf, Z))
