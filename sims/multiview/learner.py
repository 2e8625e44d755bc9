"""FG learner: the two-layer average-pooling ReLU network of FG Eq 2 / Eq 14 and its SGD step (Eq 16–18).

F_c(X) = Σ_{r∈[m]} a_{c,r} Σ_{p∈[P]} σ(⟨w_{c,r}, x_p⟩ + b_{c,r}),  a_{c,r} = 1 frozen (FG B.2), σ = ReLU;
a disjoint group of m neurons per output class c (coarse: the 2 superclasses; fine: the 2k subclasses).

Initialisation (FG B.2, garbled in the seed; rebuilt from Def C.1 and the base case of Lemma G.2):
w⁽⁰⁾ ~ N(0, σ₀² I_d), b⁽⁰⁾ = −σ₀ √(c_b log d).

SGD step on the cross-entropy (FG Eq 16–17), for a batch of N samples::

    w_{c,r} ← w_{c,r} + (η/N) Σ_n (1{y_n = c} − logit_c(X_n)) Σ_p σ′(⟨w_{c,r}, x_{n,p}⟩ + b_{c,r}) x_{n,p}

computed as ONE batched expression: with pre-activations Z = X_flat W_flatᵀ + b ∈ R^{NP × Cm},
G = onehot(y) − softmax(F) ∈ R^{N×C}, M = 1{Z > 0} ⊙ G (broadcast over p and r): ΔW = (η/N) Mᵀ X_flat — two
GEMMs per step, no loop over classes, neurons or patches. The bias follows FG Eq 18:
b_{c,r} ← b_{c,r} − ‖Δw_{c,r}‖₂ / log⁵ d (not a gradient step).
"""
from __future__ import annotations

import math

import torch

from theory.multiview import bias_threshold


class TwoLayerReLU:
    """Weights ``W`` (C, m, d) and biases ``b`` (C, m) of FG Eq 14 (a = 1 frozen), on ``device`` in ``dtype``."""

    def __init__(self, n_classes: int, m: int, d: int, *, sigma0: float, c_b: float, generator: torch.Generator,
                 device="cpu", dtype=torch.float32):
        if n_classes < 2 or m < 1 or d < 2:
            raise ValueError(f"need n_classes >= 2, m >= 1, d >= 2; got {n_classes}, {m}, {d}")
        if not (sigma0 > 0 and math.isfinite(sigma0)):
            raise ValueError(f"sigma0 must be > 0, got {sigma0}")
        if not (c_b > 0 and math.isfinite(c_b)):
            raise ValueError(f"c_b must be > 0, got {c_b}")
        self.C, self.m, self.d = int(n_classes), int(m), int(d)
        self.sigma0, self.c_b = float(sigma0), float(c_b)
        self.log5 = math.log(d) ** 5
        self.W = sigma0 * torch.randn(self.C, self.m, self.d, generator=generator, device=device, dtype=dtype)
        self.b = torch.full((self.C, self.m), -sigma0 * bias_threshold(c_b, d), device=device, dtype=dtype)

    # ---- forward ----
    def preactivations(self, X: torch.Tensor) -> torch.Tensor:
        """Z[(n,p), (c,r)] = ⟨w_{c,r}, x_{n,p}⟩ + b_{c,r}, shape (N·P, C·m)."""
        if X.ndim != 3 or X.shape[2] != self.d:
            raise ValueError(f"X must have shape (N, P, {self.d}), got {tuple(X.shape)}")
        N, P, d = X.shape
        return torch.addmm(self.b.reshape(1, -1), X.reshape(N * P, d), self.W.reshape(-1, d).T)

    def forward(self, X: torch.Tensor, Z: torch.Tensor | None = None) -> torch.Tensor:
        """F (N, C) of FG Eq 14."""
        N, P, _ = X.shape
        Z = self.preactivations(X) if Z is None else Z
        return torch.relu(Z).reshape(N, P, self.C, self.m).sum(dim=(1, 3))

    __call__ = forward

    # ---- FG Eq 17–18 ----
    def eq17_delta(self, X: torch.Tensor, y: torch.Tensor, eta: float) -> tuple[torch.Tensor, torch.Tensor]:
        """ΔW of FG Eq 17 as one batched expression; also returns F (for the loss)."""
        N, P, d = X.shape
        A = torch.relu_(self.preactivations(X))  # σ(Z), in place: the step is memory-bound beside its 2 GEMMs
        F = A.view(N, P, self.C, self.m).sum(dim=(1, 3))
        G = torch.nn.functional.one_hot(y, self.C).to(X.dtype) - torch.softmax(F, dim=1)  # (N, C)
        M = A.sign_().view(N, P, self.C, self.m).mul_(G[:, None, :, None])  # σ′(Z) ⊙ G, in place
        dW = torch.mm(M.view(N * P, self.C * self.m).T, X.reshape(N * P, d)).mul_(eta / N)
        return dW.reshape(self.C, self.m, d), F

    def step(self, X: torch.Tensor, y: torch.Tensor, eta: float) -> float:
        """One SGD step: w ← w + ΔW (Eq 17), b ← b − ‖Δw‖₂/log⁵ d (Eq 18). Returns the batch's cross-entropy."""
        dW, F = self.eq17_delta(X, y, eta)
        self.W += dW
        self.b -= torch.linalg.vector_norm(dW, dim=2) / self.log5
        return float(torch.nn.functional.cross_entropy(F, y))

    def autograd_delta(self, X: torch.Tensor, y: torch.Tensor, eta: float) -> torch.Tensor:
        """−η ∇_W of the mean cross-entropy (FG Eq 16) by autograd: the reference for Eq 17."""
        W = self.W.detach().clone().requires_grad_(True)
        N, P, d = X.shape
        Z = X.reshape(N * P, d) @ W.reshape(-1, d).T + self.b.reshape(1, -1)
        F = torch.relu(Z).reshape(N, P, self.C, self.m).sum(dim=(1, 3))
        loss = torch.nn.functional.cross_entropy(F, y)
        (g,) = torch.autograd.grad(loss, W)
        return -eta * g


def coarse_scores(F: torch.Tensor, coarse_of_fine: torch.Tensor, n_coarse: int = 2) -> torch.Tensor:
    """FG Thm G.3: the fine network's coarse read-out F̂_y(X) = max_{c} F_{y,c}(X), shape (N, n_coarse)."""
    cof = coarse_of_fine.to(F.device)
    out = torch.full((F.shape[0], n_coarse), -torch.inf, device=F.device, dtype=F.dtype)
    return out.scatter_reduce(1, cof[None, :].expand(F.shape[0], -1), F, reduce="amax", include_self=True)


def mistakes(scores: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """FG Eq 4–6: a mistake is F_y(X) ≤ max_{y′≠y} F_{y′}(X) (ties count as mistakes). Boolean (N,)."""
    true = scores.gather(1, y[:, None])[:, 0]
    other = scores.scatter(1, y[:, None], -torch.inf).max(1).values
    return true <= other


def lucky_mask(W0: torch.Tensor, V: torch.Tensor, sigma0: float, c_b: float, d: int, exclusive: bool = False):
    """FG Def C.1 / G.1 at t = 0: mask (C, m, d) of r ∈ S_c(v_j) (``exclusive``: S*_c(v_j)).

    S(v): ⟨w⁽⁰⁾, v⟩ ≥ σ₀√(c_b(log d − 1/log⁵ d)); S*(v): ⟨w⁽⁰⁾, v⟩ ≥ σ₀√(c_b(log d + 1/log⁵ d)) and
    ⟨w⁽⁰⁾, v′⟩ < σ₀√(c_b(log d − 1/log⁵ d)) for every other v′.
    """
    eps = 1.0 / math.log(d) ** 5
    lo = sigma0 * math.sqrt(c_b * (math.log(d) - eps))
    proj = W0 @ V.T  # (C, m, d): ⟨w_{c,r}, v_j⟩
    above = proj >= lo
    if not exclusive:
        return above
    hi = sigma0 * math.sqrt(c_b * (math.log(d) + eps))
    only_one = above.sum(dim=2, keepdim=True) == 1
    return (proj >= hi) & only_one
