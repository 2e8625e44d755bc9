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


# ----------------------------------------------------------------------------- cached experiments

def structural_impetus(channels: int, batch: int, jac_batch: int, hw: int = 8, seed: int = 0) -> dict:
    """RD Fig 3 / Thm 3: PCA dimension and Jacobian rank before and after each component.

    Gaussian inputs (batch, C, hw, hw); a random FC layer of C·hw² units first ("we plug those components
    into a simple fully-connected layer"), then the component. PCA dimension: eigenvalues of the feature
    covariance ≥ 1.19e−7 × N × λ_max over ``batch`` samples (RD Sec 4.3). Jacobian rank: per-sample
    Jacobian of sample 0 (float32 rule), the other ``jac_batch − 1`` samples held fixed (BatchNorm
    couples them). Cached on disk.
    """
    from sims.cache import cached
    from sims.jacobian import subnetwork_ranks
    from theory.rank import pca_dim

    params = {"version": 1, "C": channels, "B": batch, "BJ": jac_batch, "hw": hw, "seed": seed,
              "components": list(COMPONENTS)}

    def compute():
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(batch, channels, hw, hw, generator=g, dtype=torch.float64)
        fc = component("fc", channels, hw, g)
        with torch.no_grad():
            h = fc(x)
        out = {"pca_input": pca_dim(x.reshape(batch, -1).numpy()),
               "pca_before": pca_dim(h.reshape(batch, -1).numpy()), "ambient": channels * hw * hw}
        for name in COMPONENTS:
            comp = component(name, channels, hw, g)
            with torch.no_grad():
                y = comp(h)
            r = subnetwork_ranks([fc, comp], x[:jac_batch], chunk_size=128)
            out[f"pca_after_{name}"] = pca_dim(y.reshape(batch, -1).numpy())
            out[f"rank_before_{name}"], out[f"rank_after_{name}"] = r
        return out

    def compute_single_thread():
        from sims.jacobian import single_threaded

        with single_threaded():
            return compute()

    return cached("rd_structural", params, compute_single_thread)


def mlp50_decay(n: int, depth: int, draws: int, samples: int, depths=None, orthogonal: bool = False,
                seed: int = 0) -> dict:
    """RD Fig 1 d–f: ranks of J_{F_L} = W_L ⋯ W_1 and PCA dimensions of F_L(x) for a linear MLP.

    ``depth`` dense layers n → n with N(0, 1/n) weights (``orthogonal=True``: Haar orthogonal weights,
    the negative control), ``samples`` Gaussian inputs, everything in float32 as in the paper, singular
    values/eigenvalues in float64. Ranks with the float32 rule ε = 1.19e−7 × n (Jacobian: σ_k ≥ ε σ_1;
    features: λ_k ≥ ε λ_max of the covariance). Stop rule of Sec 4.3: a draw stops when max|J_L| < 1.19e−7.
    Returns arrays (draws, len(depths)) with −1 after a stop.
    """
    import numpy as np

    from sims.cache import cached
    from theory.rank import FLOAT32_EPS, float32_eps_rule, rank_from_singular_values

    ds = list(range(1, depth + 1)) if depths is None else [int(d) for d in depths]
    params = {"version": 4, "n": n, "depth": depth, "draws": draws, "samples": samples, "depths": ds,
              "orthogonal": orthogonal, "seed": seed}

    def compute():
        eps = float32_eps_rule(n)
        jr = -np.ones((draws, len(ds)), dtype=np.int64)
        fr = -np.ones((draws, len(ds)), dtype=np.int64)
        maxabs = np.zeros((draws, len(ds)))
        stop = np.full(draws, depth + 1)
        for dr in range(draws):
            # numpy only (float32 sgemm): mixing torch's OpenMP pool with OpenBLAS stalls on a busy machine
            rng = np.random.default_rng([seed, dr])
            x = rng.standard_normal((samples, n), dtype=np.float32)
            j = np.eye(n, dtype=np.float32)
            for layer in range(1, depth + 1):
                if orthogonal:
                    q, r = np.linalg.qr(rng.standard_normal((n, n)))
                    w = (q * np.sign(np.diag(r))).astype(np.float32)
                else:
                    w = rng.standard_normal((n, n), dtype=np.float32) / np.float32(np.sqrt(n))
                j = w @ j
                x = x @ w.T
                if float(np.abs(j).max()) < FLOAT32_EPS:
                    stop[dr] = layer
                    break
                if layer in ds:
                    c = ds.index(layer)
                    # float32 values as in the paper, Gram matrices and spectra in float64: a float32 Gram would
                    # blur σ below √(1e−7)·σ_1 ≈ 3e−4·σ_1, above the 1.19e−4 threshold
                    jd = j.astype(np.float64)
                    s = np.sqrt(np.clip(np.linalg.eigvalsh(jd.T @ jd), 0, None))
                    jr[dr, c] = rank_from_singular_values(s, eps)
                    xc = x.astype(np.float64)
                    xc -= xc.mean(0)
                    lam = np.clip(np.linalg.eigvalsh(xc.T @ xc / (samples - 1)), 0, None)
                    fr[dr, c] = rank_from_singular_values(lam, eps)
                    maxabs[dr, c] = float(np.abs(j).max())
        return {"depths": np.array(ds), "jac_rank": jr, "feat_dim": fr, "max_abs": maxabs, "stop": stop,
                "eps": eps}

    def compute_single_thread():
        from sims.random_matrix import _blas_single_thread

        with _blas_single_thread(None):
            return compute()

    return cached("rd_mlp50", params, compute_single_thread)


def rd_settings(quick: bool) -> dict:
    """Sizes of every RD experiment, shared by the checks (verify/checks/rd.py) and figures (paper_figs/rd.py),
    so a figure reads the cached result its check computed."""
    if quick:
        return {
            "lyap": {"ns": [4, 16], "L": 500, "trials": 8},
            "top": {"ns": [4, 16], "depths": [50, 200, 500], "trials": 8},
            "cent": {"n": 16, "checkpoints": list(range(30, 601, 30)), "trials": 16},
            "mp": {"cases": [(64, 64, 0.05, 0, 0.0), (128, 64, 0.3, 0, 0.0), (200, 100, 0.3, 1, 3.0)],
                   "trials": 400},
            "si": {"channels": 4, "batch": 800, "jac_batch": 8},
            "mlp": {"n": 200, "depth": 50, "draws": 3, "samples": 400,
                    "depths": [1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 35, 40, 45, 50]},
        }
    return {
        "lyap": {"ns": [4, 16, 64], "L": 2000, "trials": 8},
        "top": {"ns": [4, 16, 64], "depths": [100, 500, 2000], "trials": 8},
        "cent": {"n": 32, "checkpoints": list(range(100, 2001, 100)), "trials": 16},
        "mp": {"cases": [(64, 64, 0.05, 0, 0.0), (128, 128, 0.01, 0, 0.0), (256, 128, 0.3, 0, 0.0),
                         (400, 200, 0.3, 1, 3.0), (400, 200, 0.2, 1, 2.0)], "trials": 2000},
        "si": {"channels": 16, "batch": 5000, "jac_batch": 8},
        "mlp": {"n": 1000, "depth": 50, "draws": 3, "samples": 2000,
                "depths": [1, 2, 3, 5, 7, 10, 15, 20, 25, 30, 40, 50]},
    }
