"""The block zoo for the RD checks: random MLP, CNN, residual and attention stacks, and the MLP-50 experiment
(Fig 1 d–f); the Fig 3 components and their rank-loss comparison live in :mod:`sims.rank_components`.

Every model is a list of blocks (``torch.nn.Module``) acting on batches, as
:func:`sims.jacobian.subnetwork_ranks` expects. Weights are drawn from a ``torch.Generator`` (never
global state), float64 unless ``dtype`` says otherwise. BatchNorm uses batch statistics
(``track_running_stats=False``), the training-mode behaviour, so it is functional under torch.func.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn



def check_singular_values(s: np.ndarray, j: np.ndarray, rtol: float = 1e-8) -> None:
    """A ValueError unless Σ s_k² = ‖J‖_F² (the trace identity tr JᵀJ = Σ σ_k²) within ``rtol``: the singular values
    read off J's Gram matrix are J's own (σ² or a wrong Gram taken for σ fails by far more). Float64 eigenvalues of
    JᵀJ are exact to ≈ n·ε·σ_1², so the identity holds to ≈ 1e-12 relative at n = 1000; 1e-8 leaves room."""
    fro2 = float(np.einsum("ij,ij->", j, j))
    got = float(np.sum(np.square(s, dtype=np.float64)))
    if not abs(got - fro2) <= rtol * fro2:
        raise ValueError(f"singular values of J fail the trace identity: Σσ² = {got:.6g} vs ‖J‖_F² = {fro2:.6g} "
                         "(a bug in the spectrum, not a measurement)")

def _check_seed(seed) -> int:
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed: must be an integer >= 0, got {seed!r}")
    return int(seed)


def _check_size(x, name: str) -> int:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)) or x < 1:
        raise ValueError(f"{name}: must be a positive integer, got {x!r}")
    return int(x)


def _init_(module: nn.Module, g: torch.Generator, gain: float = 1.0) -> nn.Module:
    """Gaussian weights N(0, gain²/fan_in), Gaussian biases N(0, 0.1²), drawn on the CPU from ``g`` (so a model
    has the same weights on every device)."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith("weight") and p.dim() >= 2:
                fan_in = p[0].numel()
                p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * gain / math.sqrt(fan_in))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=g, dtype=p.dtype))
    return module


def mlp_blocks(widths, g: torch.Generator, dtype=torch.float64, act=nn.ReLU, device=None) -> list[nn.Module]:
    """Dense blocks Linear(widths[i] → widths[i+1]) + activation, input (B, widths[0])."""
    widths = [_check_size(w, "widths[i]") for w in widths]
    return [_init_(nn.Sequential(nn.Linear(a, b), act()), g, gain=math.sqrt(2)).to(device=device, dtype=dtype)
            for a, b in zip(widths[:-1], widths[1:])]


def cnn_blocks(channels, g: torch.Generator, dtype=torch.float64, strides=None, device=None) -> list[nn.Module]:
    """Conv 3×3 (padding 1) + ReLU blocks, input (B, channels[0], H, W); ``strides`` per block (default 1)."""
    channels = [_check_size(c, "channels[i]") for c in channels]
    strides = strides or [1] * (len(channels) - 1)
    return [_init_(nn.Sequential(nn.Conv2d(a, b, 3, stride=s, padding=1), nn.ReLU()), g,
                   gain=math.sqrt(2)).to(device=device, dtype=dtype)
            for a, b, s in zip(channels[:-1], channels[1:], strides)]


class Residual(nn.Module):
    """x + conv(relu(conv(x))) (a basic ResNet block without normalisation)."""

    def __init__(self, c: int):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.ReLU(), nn.Conv2d(c, c, 3, padding=1))

    def forward(self, x):
        return torch.relu(x + self.body(x))


def residual_blocks(c: int, n_blocks: int, g: torch.Generator, dtype=torch.float64, device=None) -> list[nn.Module]:
    c, n_blocks = _check_size(c, "c"), _check_size(n_blocks, "n_blocks")
    return [_init_(Residual(c), g, gain=0.5).to(device=device, dtype=dtype) for _ in range(n_blocks)]


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
                     residual: bool = True, device=None) -> list[nn.Module]:
    d, n_blocks = _check_size(d, "d"), _check_size(n_blocks, "n_blocks")
    return [_init_(Attention(d, residual), g).to(device=device, dtype=dtype) for _ in range(n_blocks)]


class FC(nn.Module):
    """A dense layer on flattened (C, H, W) features, reshaped back (the FC of RD Fig 3)."""

    def __init__(self, c: int, hw: int):
        super().__init__()
        self.shape = (c, hw, hw)
        self.lin = nn.Linear(c * hw * hw, c * hw * hw)

    def forward(self, x):
        return self.lin(x.reshape(x.shape[0], -1)).reshape(x.shape[0], *self.shape)


def mlp50_decay(n: int, depth: int, draws: int, samples: int, depths=None, orthogonal: bool = False,
                seed: int = 0, init: str = "gaussian", input_law: str = "gaussian", eps_scale: float = 1.0) -> dict:
    """RD Fig 1 d–f: ranks of J_{F_L} = W_L ⋯ W_1 and PCA dimensions of F_L(x) for a linear MLP.

    ``depth`` dense layers n → n with N(0, 1/n) weights (``orthogonal=True``: Haar orthogonal weights,
    the negative control), ``samples`` Gaussian inputs, everything in float32 as in the paper, singular
    values/eigenvalues in float64. Ranks with the float32 rule ε = 1.19e−7 × n (Jacobian: σ_k ≥ ε σ_1;
    features: λ_k ≥ ε λ_max of the covariance). Stop rule of Sec 4.3: a draw stops when max|J_L| < 1.19e−7.
    Returns arrays (draws, len(depths)) with −1 after a stop.

    For the sensitivity table: ``init`` "gaussian" (N(0, 1/n), variance preserving, the default), "standard"
    (N(0, 1), Thm 5's literal condition: the float32 product overflows near L = 88/(½(log 2 + ψ(n/2))), which also
    stops a draw) or "uniform" (U(±1/√n), PyTorch's nn.Linear default: the product shrinks by √3 per layer until
    the stop rule fires); ``input_law`` "gaussian" or "uniform" (±√3); ``eps_scale`` multiplies the float32-rule ε.
    """
    from sims.cache import cached
    from theory.rank import FLOAT32_EPS, float32_eps_rule, rank_from_singular_values

    n, depth, draws, samples = (_check_size(v, k) for v, k in
                                ((n, "n"), (depth, "depth"), (draws, "draws"), (samples, "samples")))
    seed = _check_seed(seed)
    if samples < 2:
        raise ValueError(f"samples: need at least 2 inputs for a covariance, got {samples}")
    ds = list(range(1, depth + 1)) if depths is None else [_check_size(d, "depths[i]") for d in depths]
    if any(d > depth for d in ds) or sorted(set(ds)) != ds:
        raise ValueError(f"depths: must be increasing and <= depth = {depth}, got {depths!r}")
    if init not in ("gaussian", "standard", "uniform") or input_law not in ("gaussian", "uniform"):
        raise ValueError(f"init: gaussian/standard/uniform, input_law: gaussian/uniform; got {init!r}, {input_law!r}")
    if not (isinstance(eps_scale, (int, float)) and math.isfinite(eps_scale) and eps_scale > 0):
        raise ValueError(f"eps_scale: a positive number, got {eps_scale!r}")
    params = {"version": 6, "n": n, "depth": depth, "draws": draws, "samples": samples, "depths": ds,
              "orthogonal": orthogonal, "seed": seed}
    for k, v, default in (("init", init, "gaussian"), ("input_law", input_law, "gaussian"), ("eps_scale", eps_scale, 1.0)):
        if v != default:
            params[k] = v

    def compute():
        eps = float32_eps_rule(n) * float(eps_scale)
        jr = -np.ones((draws, len(ds)), dtype=np.int64)
        fr = -np.ones((draws, len(ds)), dtype=np.int64)
        maxabs = np.zeros((draws, len(ds)))
        stop = np.full(draws, depth + 1)
        for dr in range(draws):
            # numpy only (float32 sgemm): mixing torch's OpenMP pool with OpenBLAS stalls on a busy machine
            rng = np.random.default_rng([seed, dr])
            x = rng.standard_normal((samples, n), dtype=np.float32)
            if input_law == "uniform":
                x = ((rng.random((samples, n), dtype=np.float32) - np.float32(0.5)) * np.float32(np.sqrt(12.0)))
            j = np.eye(n, dtype=np.float32)
            for layer in range(1, depth + 1):
                if orthogonal:
                    q, r = np.linalg.qr(rng.standard_normal((n, n)))
                    w = (q * np.sign(np.diag(r))).astype(np.float32)
                elif init == "uniform":
                    w = (rng.random((n, n), dtype=np.float32) * np.float32(2.0) - np.float32(1.0)) / np.float32(np.sqrt(n))
                elif init == "standard":
                    w = rng.standard_normal((n, n), dtype=np.float32)
                else:
                    w = rng.standard_normal((n, n), dtype=np.float32) / np.float32(np.sqrt(n))
                with np.errstate(over="ignore", invalid="ignore"):
                    j = w @ j
                if not np.isfinite(j).all() or float(np.abs(j).max()) < FLOAT32_EPS:  # float32 over/underflow
                    stop[dr] = layer
                    break
                if layer in ds:
                    c = ds.index(layer)
                    # float32 values as in the paper, Gram matrices and spectra in float64: a float32 Gram would
                    # blur σ below √(1e−7)·σ_1 ≈ 3e−4·σ_1, above the 1.19e−4 threshold
                    jd = j.astype(np.float64)
                    s = np.sqrt(np.clip(np.linalg.eigvalsh(jd.T @ jd), 0, None))
                    check_singular_values(s, jd)
                    jr[dr, c] = rank_from_singular_values(s, eps)
                    # features F_L(x) = J_L x (a linear network), formed only at the measured depths:
                    # the same float32 numbers up to roundoff ~1e−7, far below the 1.19e−4·λ_max threshold
                    # the covariance in float32 (error ~1e−7·λ_max, below the 1.19e−4·λ_max threshold on λ),
                    # its eigenvalues in float64
                    with np.errstate(over="ignore", invalid="ignore"):
                        xc = x @ j.T
                    if not np.isfinite(xc).all():  # the features overflow float32 before J does (N(0, 1) weights)
                        stop[dr] = layer
                        jr[dr, c] = -1
                        break
                    xc -= xc.mean(0, dtype=np.float64).astype(np.float32)
                    xc /= max(float(np.abs(xc).max()), np.finfo(np.float32).tiny)  # no float32 overflow in the Gram
                    lam = np.clip(np.linalg.eigvalsh((xc.T @ xc).astype(np.float64) / (samples - 1)), 0, None)
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
    """Sizes of every RD experiment, shared by the checks (verify/checks/rd/rank.py) and figures (paper_figs/rd.py),
    so a figure reads the cached result its check computed. Chosen from the paper's settings before running
    (docs/rd.md lists each beside the paper's): "For all L" claims are read at three depths and two or three
    sizes; a full run repeats every sim check for 3 seeds."""
    if quick:
        return {
            "lyap": {"ns": [4, 16], "checkpoints": [125, 250, 500], "trials": 8},
            "top": {"ns": [4, 16], "depths": [50, 200, 500], "trials": 8},
            "cent": {"ns": [16], "checkpoints": list(range(50, 1001, 50)), "trials": 16},
            "mp": {"cases": [(64, 64, 0.05, 0, 0.0), (128, 64, 0.3, 0, 0.0), (200, 100, 0.3, 1, 3.0)],
                   "trials": 300},
            "si": {"channels": 4, "batch": 800, "jac_batch": 8},
            "mlp": {"n": 200, "depth": 50, "draws": 3, "samples": 400,
                    "depths": [1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 35, 40, 45, 50]},
        }
    return {
        "lyap": {"ns": [4, 16, 64], "checkpoints": [500, 1000, 2000], "trials": 8},
        "top": {"ns": [4, 16, 64], "depths": [100, 500, 2000], "trials": 8},
        "cent": {"ns": [16, 32], "checkpoints": list(range(100, 2001, 100)), "trials": 12},
        "mp": {"cases": [(64, 64, 0.05, 0, 0.0), (128, 128, 0.01, 0, 0.0), (256, 128, 0.3, 0, 0.0),
                         (400, 200, 0.3, 1, 3.0), (400, 200, 0.2, 1, 2.0)], "trials": 500},
        "si": {"channels": 16, "batch": 5000, "jac_batch": 8},
        "mlp": {"n": 1000, "depth": 50, "draws": 3, "samples": 2000,
                "depths": [1, 2, 3, 5, 7, 10, 15, 20, 25, 30, 40, 50]},
    }
