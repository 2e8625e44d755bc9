"""The block zoo for the RD checks: random MLP, CNN, residual and attention stacks, Fig 3 components.

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


#: the components of RD Fig 3 (caption and Sec 4.3): conv 3×3, FC, and the normalisations
COMPONENTS = ("conv3x3", "fc", "bn", "ln", "in", "gn")
#: what the paper claims for each: "considerable" loss (linear layers), "modest" loss (normalisations it names
#: in the caption), and BN, which Sec 4.1 says "may" lose dimensions and Sec 4.3 cites as a remission
PAPER_CLAIM = {"conv3x3": "loses rank considerably", "fc": "loses rank considerably", "ln": "loses rank modestly",
               "in": "loses rank modestly", "gn": "loses rank modestly",
               "bn": "no strict-loss claim: 'may lose dimensions modestly' (Sec 4.1), a remission (Sec 4.3)"}
#: controls: a planted loss (positive) and BatchNorm after ``model.eval()`` (negative: frozen statistics make it a
#: per-channel affine map, invertible, which must not be found to lose rank)
CONTROLS = ("bottleneck1x1", "bn_eval")
#: invertible reference maps run beside the components: they must never be found to lose rank (the comparison's
#: noise floor is stated and checked on them): the identity, a Haar-orthogonal map of the C·hw² features (κ = 1)
#: and a per-channel rescaling with log-uniform scales in [1/2, 2] (κ ≤ 4)
REFERENCES = ("identity", "orthogonal", "rescale")
#: the condition number up to which an invertible map is "rank kept": a component loses rank only when it loses a
#: direction that no map of condition ≤ KAPPA_REF could have pushed below the threshold (see :func:`_loss_record`)
KAPPA_REF = 4.0


class ChannelBottleneck(nn.Module):
    """A 1×1 convolution whose C×C weight has rank ⌈C/2⌉: a planted loss of half the channels (a positive control)."""

    def __init__(self, c: int, g: torch.Generator):
        super().__init__()
        r = max(1, (c + 1) // 2)
        w = torch.randn(c, r, generator=g, dtype=torch.float64) @ torch.randn(r, c, generator=g, dtype=torch.float64)
        self.register_buffer("w", w / math.sqrt(c))

    def forward(self, x):
        return torch.einsum("oc,bchw->bohw", self.w.to(x.dtype), x)


class ChannelScale(nn.Module):
    """x_c ↦ s_c·x_c: an invertible per-channel rescaling (condition number max s / min s)."""

    def __init__(self, scales: torch.Tensor):
        super().__init__()
        self.register_buffer("s", scales.reshape(1, -1, 1, 1))

    def forward(self, x):
        return x * self.s.to(x.dtype)


class DenseMap(nn.Module):
    """A fixed linear map of the flattened (C, hw, hw) features (e.g. Haar orthogonal)."""

    def __init__(self, m: torch.Tensor, shape):
        super().__init__()
        self.shape = tuple(shape)
        self.register_buffer("m", m)

    def forward(self, x):
        return (x.reshape(x.shape[0], -1) @ self.m.to(x.dtype).T).reshape(x.shape[0], *self.shape)


def rescale_scales(c: int, g: torch.Generator, kappa: float = KAPPA_REF) -> torch.Tensor:
    """Per-channel scales log-uniform in [κ^−½, κ^½] (condition number ≤ κ), drawn from ``g``."""
    return torch.exp((torch.rand(c, generator=g, dtype=torch.float64) - 0.5) * math.log(kappa))


def component(name: str, c: int, hw: int, g: torch.Generator, dtype=torch.float64, device=None) -> nn.Module:
    """One Fig 3 component (or a control of :data:`CONTROLS`, a reference of :data:`REFERENCES`) with random
    weights, on (B, C, hw, hw) features.

    Normalisations have no affine parameters (γ = 1, β = 0) and use batch statistics (training mode);
    GroupNorm uses C/4 groups. ``bn_eval``: BatchNorm with affine weights at trained-like values
    (γ_c = exp(0.25·N(0, 1)), β_c ~ N(0, 0.1²)) in inference mode; :func:`structural_impetus` first runs a
    calibration pass (training mode over the batch, momentum 0.1), so it is the layer a pipeline measures after
    ``model.eval()``: (x − μ_run)/√(v_run + 1e−5)·γ + β, a per-channel affine map.
    """
    c, hw = _check_size(c, "c"), _check_size(hw, "hw")
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
    elif name == "bottleneck1x1":
        m = ChannelBottleneck(c, g)
    elif name == "bn_eval":
        m = nn.BatchNorm2d(c, affine=True, track_running_stats=True, momentum=0.1).to(torch.float64)
        with torch.no_grad():
            m.weight.copy_(torch.exp(0.25 * torch.randn(c, generator=g, dtype=torch.float64)))
            m.bias.copy_(0.1 * torch.randn(c, generator=g, dtype=torch.float64))
        m.eval()
    elif name == "identity":
        m = nn.Identity()
    elif name == "orthogonal":
        q, r = torch.linalg.qr(torch.randn(c * hw * hw, c * hw * hw, generator=g, dtype=torch.float64))
        m = DenseMap(q * torch.sign(torch.diagonal(r)), (c, hw, hw))
    elif name == "rescale":
        m = ChannelScale(rescale_scales(c, g))
    else:
        raise ValueError(f"component: one of {COMPONENTS + CONTROLS + REFERENCES}, got {name!r}")
    return m.to(device=device, dtype=dtype)


def calibrate_(m: nn.Module, h: torch.Tensor, passes: int = 10) -> nn.Module:
    """A calibration pass for a BatchNorm in inference mode: ``passes`` training-mode forwards over chunks of
    ``h`` (running statistics with the module's momentum), then ``eval()``. Other modules are returned as they are."""
    if isinstance(m, nn.BatchNorm2d) and m.track_running_stats:
        m.train()
        with torch.no_grad():
            for chunk in torch.tensor_split(h, passes):
                if chunk.shape[0] > 1:
                    m(chunk)
        m.eval()
    return m


# ----------------------------------------------------------------------------- cached experiments

def _pca_eigenvalues(y: torch.Tensor) -> np.ndarray:
    """PCA eigenvalues (descending) of the rows of y (B, n), on y's device, in float64: min(B − 1, n) values.

    As :func:`theory.rank.pca_dim` does: eigenvalues of the n×n covariance when B > 2n (absolute error
    ~n·1e−16·λ_max, far below the float32-rule threshold ~1e−4·λ_max, and several times faster), else the
    singular values of the centred data."""
    from sims.jacobian import singular_values

    yc = y.reshape(y.shape[0], -1).to(torch.float64)
    yc = yc - yc.mean(0, keepdim=True)
    b, n = yc.shape
    k = min(b - 1, n)
    if b > 2 * n:
        scale = float(yc.abs().max()) or 1.0
        yc = yc / scale
        lam = torch.linalg.eigvalsh(yc.T @ yc / (b - 1)).flip(0).clamp_min(0.0).cpu().numpy() * scale**2
        return lam[:k]
    return (singular_values(yc)[:k] ** 2) / (b - 1)


def _loss_record(before: np.ndarray, after: np.ndarray, eps: float, factor: float = 1.0) -> dict:
    """Numerical ranks before/after (RD Eq 4) and whether the component lost a direction beyond the noise floor.

    ``before``, ``after``: descending singular values (``factor`` = κ) or PCA eigenvalues (``factor`` = κ²).
    An invertible map A of condition κ keeps σ_i(AW)/σ_1(AW) ≥ (σ_i(W)/σ_1(W))/κ (Ostrowski), and the
    eigenvalues of A Σ Aᵀ relative to the top one within 1/κ² of Σ's, so it can only remove the directions of
    ``before`` that lie between ε and factor·ε: "floor" = Rank_ε(before) − Rank_{factor·ε}(before) is the most
    rank such a map can lose. "margin" = (after[r_f − 1]/after[0])/ε with r_f = Rank_{factor·ε}(before): the
    weakest direction that stood above the floor before, relative to the threshold after; < 1 exactly when the
    component loses a direction no invertible map of condition ≤ κ could have lost. "margin_any" is the same
    with factor 1 (any drop of Rank_ε counts, the comparison before issue 24)."""
    from theory.rank import rank_from_singular_values

    before, after = np.asarray(before, dtype=float), np.asarray(after, dtype=float)
    rb, ra = rank_from_singular_values(before, eps), rank_from_singular_values(after, eps)
    rf = int(np.sum(before >= factor * eps * before[0])) if before.size and before[0] > 0 else 0
    top = float(after[0]) if after.size else 0.0

    def margin(r):
        if r < 1 or top <= 0:
            return float("inf")
        return float(after[r - 1] / top / eps) if r <= after.size else 0.0

    return {"before": rb, "after": ra, "margin": margin(rf), "margin_any": margin(rb), "floor": rb - rf,
            "kept_above_floor": rf}


def judge(spectra: dict, name: str, eps_j: float, eps_p: float, kappa: float = KAPPA_REF) -> dict:
    """Re-judge a component of :func:`structural_impetus` from its stored spectra at any ε and κ (no recompute):
    ``{"jac": record, "pca": record, "miss": min of the two margins}`` (miss < 1: the component loses rank)."""
    jac = _loss_record(spectra["before"]["jac"], spectra[name]["jac"], eps_j, kappa)
    pca = _loss_record(spectra["before"]["pca"], spectra[name]["pca"], eps_p, kappa ** 2)
    return {"jac": jac, "pca": pca, "miss": min(jac["margin"], pca["margin"])}


def structural_impetus(channels: int, batch: int, jac_batch: int, hw: int = 8, seed: int = 0,
                       components=COMPONENTS, device: str = "cpu", input_law: str = "gaussian") -> dict:
    """RD Fig 3 / Thm 3: PCA dimension and Jacobian rank before and after each component.

    Inputs (batch, C, hw, hw) with iid entries (``input_law``: "gaussian" as in the paper, or "uniform" ±√3,
    for the sensitivity table); a random FC layer of C·hw² units first ("we plug those components into a simple
    fully-connected layer", Sec 4.3), then the component. PCA dimension: eigenvalues of the feature covariance
    ≥ 1.19e−7 × N × λ_max, N = min(batch − 1, C·hw²) (Sec 4.3). Jacobian rank: of J_comp(h_0)·W_fc for sample
    0, the other ``jac_batch − 1`` samples held fixed (BatchNorm couples them), float32 rule. Returns per
    component ``{name: {"jac": record, "pca": record}}`` (see :func:`_loss_record`, judged at
    :data:`KAPPA_REF`), "pca_input", "ambient", "pca_fresh_batch" (the PCA dimension of the FC features on an
    independent batch: the sampling noise of that number), and "spectra" (descending singular values /
    eigenvalues before and after each component, for :func:`judge`). Weights and inputs are drawn on the CPU,
    so every ``device`` computes the same numbers up to roundoff. Cached on disk.
    """
    from sims.cache import cached
    from sims.jacobian import singular_values, subnetwork_jacobians
    from theory.rank import float32_eps_rule

    channels, batch, jac_batch, hw = (_check_size(v, k) for v, k in
                                      ((channels, "channels"), (batch, "batch"), (jac_batch, "jac_batch"), (hw, "hw")))
    seed = _check_seed(seed)
    if jac_batch > batch or batch < 2:
        raise ValueError(f"batch: need batch >= 2 and jac_batch <= batch, got {batch}, {jac_batch}")
    if input_law not in ("gaussian", "uniform"):
        raise ValueError(f"input_law: 'gaussian' or 'uniform', got {input_law!r}")
    comps = [str(c) for c in components]
    for c in comps:
        if c not in COMPONENTS + CONTROLS + REFERENCES:
            raise ValueError(f"components: unknown {c!r}; one of {COMPONENTS + CONTROLS + REFERENCES}")
    n = channels * hw * hw
    params = {"version": 4, "C": channels, "B": batch, "BJ": jac_batch, "hw": hw, "seed": seed, "components": comps}
    if input_law != "gaussian":
        params["input_law"] = input_law
    if str(device) != "cpu":
        params["device"] = str(device)

    def draw_inputs(g):
        x = torch.randn(batch, channels, hw, hw, generator=g, dtype=torch.float64)
        if input_law == "uniform":
            x = (torch.rand(batch, channels, hw, hw, generator=g, dtype=torch.float64) - 0.5) * math.sqrt(12.0)
        return x

    def compute():
        import json

        g = torch.Generator().manual_seed(seed)
        x = draw_inputs(g)
        fc = component("fc", channels, hw, g)
        with torch.no_grad():
            h = fc(x)
        dev = torch.device(device)
        h_dev = h.to(dev)
        w = fc.lin.weight.detach().to(dev)  # J_fc = W (constant)
        eps_j = float32_eps_rule(n)
        eps_p = float32_eps_rule(min(batch - 1, n))
        sv_before = singular_values(w)
        pca_before = _pca_eigenvalues(h_dev)
        lam_x = _pca_eigenvalues(x.to(dev))
        out = {"ambient": n, "eps_jacobian": eps_j, "eps_pca": eps_p, "kappa_ref": KAPPA_REF,
               "pca_input": int((lam_x >= eps_p * lam_x[0]).sum())}
        arrays = {"before_jac": sv_before, "before_pca": pca_before}
        for name in comps:
            comp = calibrate_(component(name, channels, hw, g, device=dev), h_dev)
            with torch.no_grad():
                y = comp(h_dev)
            # only BatchNorm with batch statistics couples the samples; the others are per-sample maps, whose
            # Jacobian needs no other sample in the batch (identical numbers, jac_batch times less work)
            jc = subnetwork_jacobians([comp], h_dev[:jac_batch if name == "bn" else 1], chunk_size=1024)[0]
            arrays[f"{name}_jac"], arrays[f"{name}_pca"] = singular_values(jc @ w), _pca_eigenvalues(y)
            out[name] = {"jac": _loss_record(sv_before, arrays[f"{name}_jac"], eps_j, KAPPA_REF),
                         "pca": _loss_record(pca_before, arrays[f"{name}_pca"], eps_p, KAPPA_REF ** 2)}
            if name in ("rescale", "bn_eval"):  # the per-channel factor of these affine maps: its condition number
                f = comp.s.flatten() if name == "rescale" else comp.weight / torch.sqrt(comp.running_var + comp.eps)
                f = f.detach()
                out[name]["kappa"] = float(f.abs().max() / f.abs().min())
        g_fresh = torch.Generator().manual_seed(10_000 + seed)  # an independent batch through the same FC
        with torch.no_grad():
            lam_f = _pca_eigenvalues(fc(draw_inputs(g_fresh)).to(dev))
        out["pca_fresh_batch"] = int((lam_f >= eps_p * lam_f[0]).sum())
        return {"json": np.array(json.dumps(out)), **{f"spec_{k}": np.asarray(v, dtype=np.float64)
                                                      for k, v in arrays.items()}}

    def compute_single_thread():
        from sims.jacobian import single_threaded

        with single_threaded():
            return compute()

    import json

    raw = cached("rd_structural", params, compute_single_thread)
    d = json.loads(str(raw["json"]))
    d["spectra"] = {"before": {"jac": np.asarray(raw["spec_before_jac"]), "pca": np.asarray(raw["spec_before_pca"])}}
    for name in comps:
        d["spectra"][name] = {"jac": np.asarray(raw[f"spec_{name}_jac"]), "pca": np.asarray(raw[f"spec_{name}_pca"])}
    return d


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
    """Sizes of every RD experiment, shared by the checks (verify/checks/rd.py) and figures (paper_figs/rd.py),
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
