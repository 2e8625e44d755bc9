"""The block zoo for the RD checks: random MLP, CNN, residual and attention stacks, Fig 3 components.

Every model is a list of blocks (``torch.nn.Module``) acting on batches, as
:func:`sims.jacobian.subnetwork_ranks` expects. Weights are drawn from a ``torch.Generator`` (never
global state), float64 unless ``dtype`` says otherwise. BatchNorm uses batch statistics
(``track_running_stats=False``), the training-mode behaviour, so it is functional under torch.func.
"""
from __future__ import annotations

import math

import torch
from torch import nn


def _init_(module: nn.Module, g: torch.Generator, gain: float = 1.0) -> nn.Module:
    """Gaussian weights N(0, gain²/fan_in), Gaussian biases N(0, 0.1²)."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith("weight") and p.dim() >= 2:
                fan_in = p[0].numel()
                p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * gain / math.sqrt(fan_in))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    return module


def mlp_blocks(widths, g: torch.Generator, dtype=torch.float64, act=nn.ReLU) -> list[nn.Module]:
    """Dense blocks Linear(widths[i] → widths[i+1]) + activation, input (B, widths[0])."""
    return [_init_(nn.Sequential(nn.Linear(a, b), act()), g, gain=math.sqrt(2)).to(dtype)
            for a, b in zip(widths[:-1], widths[1:])]


def cnn_blocks(channels, g: torch.Generator, dtype=torch.float64, strides=None) -> list[nn.Module]:
    """Conv 3×3 (padding 1) + ReLU blocks, input (B, channels[0], H, W); ``strides`` per block (default 1)."""
    strides = strides or [1] * (len(channels) - 1)
    return [_init_(nn.Sequential(nn.Conv2d(a, b, 3, stride=s, padding=1), nn.ReLU()), g, gain=math.sqrt(2)).to(dtype)
            for a, b, s in zip(channels[:-1], channels[1:], strides)]


class Residual(nn.Module):
    """x + conv(relu(conv(x))) (a basic ResNet block without normalisation)."""

    def __init__(self, c: int):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.ReLU(), nn.Conv2d(c, c, 3, padding=1))

    def forward(self, x):
        return torch.relu(x + self.body(x))


def residual_blocks(c: int, n_blocks: int, g: torch.Generator, dtype=torch.float64) -> list[nn.Module]:
    return [_init_(Residual(c), g, gain=0.5).to(dtype) for _ in range(n_blocks)]


class Attention(nn.Module):
    """Single-head softmax self-attention with a residual and a ReLU MLP, tokens (B, T, D)."""

    def __init__(self, d: int, residual: bool = True):
        super().__init__()
        self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, d), nn.ReLU())
        self.residual = residual
        self.scale = 1.0 / math.sqrt(d)

    def forward(self, x):
        a = torch.softmax(self.q(x) @ self.k(x).transpose(-1, -2) * self.scale, dim=-1) @ self.v(x)
        h = x + a if self.residual else a
        return self.mlp(h)


def attention_blocks(d: int, n_blocks: int, g: torch.Generator, dtype=torch.float64,
                     residual: bool = True) -> list[nn.Module]:
    return [_init_(Attention(d, residual), g).to(dtype) for _ in range(n_blocks)]


class FC(nn.Module):
    """A dense layer on flattened (C, H, W) features, reshaped back (the FC of RD Fig 3)."""

    def __init__(self, c: int, hw: int):
        super().__init__()
        self.shape = (c, hw, hw)
        self.lin = nn.Linear(c * hw * hw, c * hw * hw)

    def forward(self, x):
        return self.lin(x.reshape(x.shape[0], -1)).reshape(x.shape[0], *self.shape)


COMPONENTS = ("conv3x3", "fc", "bn", "ln", "in", "gn")


def component(name: str, c: int, hw: int, g: torch.Generator, dtype=torch.float64) -> nn.Module:
    """One Fig 3 component with random weights, on (B, C, hw, hw) features.

    Normalisations have no affine parameters (γ = 1, β = 0), GroupNorm uses C/4 groups.
    """
    if name == "conv3x3":
        m = _init_(nn.Conv2d(c, c, 3, padding=1), g)
    elif name == "fc":
        m = _init_(FC(c, hw), g)
    elif name == "bn":
        m = nn.BatchNorm2d(c, affine=False, track_running_stats=False)
    elif name == "ln":
        m = nn.LayerNorm([c, hw, hw], elementwise_affine=False)
    elif name == "in":
        m = nn.InstanceNorm2d(c, affine=False, track_running_stats=False)
    elif name == "gn":
        m = nn.GroupNorm(max(1, c // 4), c, affine=False)
    else:
        raise ValueError(f"component: one of {COMPONENTS}, got {name!r}")
    return m.to(dtype)
