"""RD Fig 3 / Thm 3 (structural impetus): the components (conv 3×3, FC and the normalisations), the invertible
reference maps and the controls, and the comparison that tells a rank-losing component from an invertible map
(:func:`judge`, :func:`_loss_record`: a component loses rank only if it loses a direction that no map of
condition ≤ ``KAPPA_REF`` could have pushed below the threshold).

The networks (the block zoo) are in :mod:`sims.rank_nets`; everything here runs on the device of its input.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from sims.rank_nets import FC, _check_seed, _check_size, _init_


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
    with factor 1 (any drop of Rank_ε counts: the earlier comparison, without the noise floor)."""
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
