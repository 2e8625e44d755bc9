"""RD Sec 3.2 with torch.func: full and partial Jacobians, ranks of every sub-network F_k = f^k ∘ … ∘ f^1.

* :func:`jacobian` — J_f(x) as a (d, n) matrix over flattened output/input, by ``vmap`` over ``jvp``
  (forward mode: n tangents) or over ``vjp`` (reverse mode: d cotangents), whichever is fewer.
* :func:`partial_jacobian` — RD Eq 5: Sub(J_f, j₁..j_K) = J_{f∘ψ}, ψ the zero-padding of the patch
  (u ↦ (0,…,u₁,…,u_K,…,0) with u_k at j_k). Forward mode pushes the K zero-padded basis vectors
  ψ(e_k) through f; reverse mode pulls all d outputs back and keeps the K columns. ``at="x"``: the
  sub-matrix of J_f(x) itself; ``at="padded"``: J_{f∘ψ} at Sub(x), i.e. J_f at the zero-padded input
  ψ(Sub(x)), Eq 5 read literally.
* :func:`subnetwork_jacobians` / :func:`subnetwork_ranks` — RD Thm 2 / Eq 7: the (partial) Jacobian of
  each F_k, by propagating the K tangents block by block (one forward-mode sweep for all k), and its
  numerical rank (RD Eq 4; float32 rule of Sec 4.3 unless ``eps``).

Conventions: a model is a list of blocks (``torch.nn.Module`` or callables) acting on batches; ``x`` is a
batch ``(B, ...)`` and the Jacobian is that of sample ``sample`` with the other samples held fixed
(blocks that couple samples, like BatchNorm in training mode, are handled exactly). Blocks must be
functional under ``torch.func`` (BatchNorm with ``track_running_stats=False``).
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
import torch

from sims.threads import single_threaded  # noqa: F401  (re-exported: J.single_threaded())
from torch.func import jvp, vjp, vmap

from theory.rank import _check_eps, float32_eps_rule, rank_from_singular_values


# ``single_threaded()``: torch and BLAS on one thread, for the many small Jacobians of the checks
# (on a shared 2-core machine spin-waiting thread pools make small ops 5–10× slower); see sims.threads.


def _check_tensor(x, name="x") -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name}: must be a torch.Tensor, got {type(x).__name__}")
    if x.numel() == 0:
        raise ValueError(f"{name}: is empty (shape {tuple(x.shape)})")
    if not torch.is_floating_point(x):
        raise ValueError(f"{name}: must be floating point, got {x.dtype}")
    bad = ~torch.isfinite(x)
    if bad.any():
        idx = tuple(int(i) for i in torch.nonzero(bad)[0])
        raise ValueError(f"{name}: {int(bad.sum())} non-finite value(s); first at index {idx}")
    return x


def _mode(mode: str, n_in: int, n_out: int) -> str:
    if mode not in ("auto", "forward", "reverse"):
        raise ValueError(f"mode: 'auto', 'forward' or 'reverse', got {mode!r}")
    if mode == "auto":
        return "forward" if n_in <= n_out else "reverse"
    return mode


def _check_chunk(chunk) -> int | None:
    if chunk is None:
        return None
    if isinstance(chunk, (bool, np.bool_)) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
        raise ValueError(f"chunk_size: must be None or an integer >= 1, got {chunk!r}")
    return int(chunk)


def _chunks(n: int, chunk: int | None):
    step = n if not chunk else max(1, int(chunk))
    for a in range(0, n, step):
        yield a, min(n, a + step)


def _columns_forward(f, x, tangents: torch.Tensor, chunk=None) -> torch.Tensor:
    """J_f(x) T for tangents (K, *x.shape) → (d, K)."""
    push = vmap(lambda t: jvp(f, (x,), (t,))[1].reshape(-1))
    cols = [push(tangents[a:b]) for a, b in _chunks(tangents.shape[0], chunk)]
    return torch.cat(cols, 0).T.detach()


def _rows_reverse(f, x, chunk=None) -> torch.Tensor:
    """J_f(x) as (d, n) by vmap over vjp with the d unit cotangents."""
    y, pull = vjp(f, x)
    d = y.numel()
    eye = torch.eye(d, dtype=y.dtype, device=y.device).reshape(d, *y.shape)
    rows = [vmap(lambda c: pull(c)[0].reshape(-1))(eye[a:b]) for a, b in _chunks(d, chunk)]
    return torch.cat(rows, 0).detach()


def jacobian(f: Callable, x: torch.Tensor, mode: str = "auto", chunk_size: int | None = None) -> torch.Tensor:
    """J_f(x) (RD Eq 3) as a (d, n) matrix, d = f(x).numel(), n = x.numel()."""
    x = _check_tensor(x)
    chunk_size = _check_chunk(chunk_size)
    with torch.no_grad():
        y = f(x)
    m = _mode(mode, x.numel(), y.numel())
    if m == "forward":
        n = x.numel()
        eye = torch.eye(n, dtype=x.dtype, device=x.device).reshape(n, *x.shape)
        return _columns_forward(f, x, eye, chunk_size)
    return _rows_reverse(f, x, chunk_size)


def _as_indices(idx, shape) -> torch.Tensor:
    n = int(np.prod(shape))
    if isinstance(idx, torch.Tensor):
        idx = idx.detach().cpu().numpy()
    a = np.asarray(idx)
    if a.dtype == bool:
        if a.shape != tuple(shape):
            raise ValueError(f"idx: boolean mask of shape {a.shape} does not match x's {tuple(shape)}")
        a = np.flatnonzero(a.ravel())
    a = a.ravel()
    if a.size == 0:
        raise ValueError("idx: selects no input coordinate")
    if not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"idx: flat integer indices or a boolean mask, got dtype {a.dtype}")
    if a.min() < 0 or a.max() >= n:
        raise ValueError(f"idx: indices must lie in [0, {n}), got range [{a.min()}, {a.max()}]")
    if np.unique(a).size != a.size:
        raise ValueError("idx: indices must be distinct")
    return torch.as_tensor(np.sort(a), dtype=torch.long)


def patch_indices(shape, patch: int, center=None) -> np.ndarray:
    """Flat indices of a ``patch × patch`` spatial window (all channels) of a (C, H, W) input.

    Default: the central window, as RD Sec 4.3 ("the central 16×16×3 image patch").
    """
    if len(shape) != 3 or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1 for v in shape):
        raise ValueError(f"shape: expected three positive integers (C, H, W), got {tuple(shape)}")
    c, h, w = (int(v) for v in shape)
    if isinstance(patch, bool) or not isinstance(patch, (int, np.integer)) or not 1 <= patch <= min(h, w):
        raise ValueError(f"patch: must be in [1, {min(h, w)}], got {patch}")
    top = (h - patch) // 2 if center is None else int(center[0]) - patch // 2
    left = (w - patch) // 2 if center is None else int(center[1]) - patch // 2
    if top < 0 or left < 0 or top + patch > h or left + patch > w:
        raise ValueError("patch: window does not fit inside the image")
    mask = np.zeros((c, h, w), dtype=bool)
    mask[:, top:top + patch, left:left + patch] = True
    return np.flatnonzero(mask.ravel())


def pad(u: torch.Tensor, idx, shape) -> torch.Tensor:
    """ψ of RD Eq 5: place u (K,) at the flat positions idx of a zero tensor of ``shape``."""
    ii = _as_indices(idx, shape)
    out = torch.zeros(int(np.prod(shape)), dtype=u.dtype, device=u.device)
    out = out.index_put((ii.to(u.device),), u.reshape(-1))
    return out.reshape(shape)


def partial_jacobian(f: Callable, x: torch.Tensor, idx, at: str = "x", mode: str = "auto",
                     chunk_size: int | None = None) -> torch.Tensor:
    """RD Eq 5: Sub(J_f, j₁..j_K) = J_{f∘ψ} as a (d, K) matrix.

    ``at="x"``: columns j_k of J_f(x). ``at="padded"``: J_{f∘ψ}(Sub(x)), i.e. J_f at the zero-padded
    input ψ(Sub(x)). ``mode``: "forward" pushes the K zero-padded unit tangents ψ(e_k) (vmap over jvp),
    "reverse" pulls the d unit cotangents (vmap over vjp) and keeps the K columns; "auto" picks
    forward when K ≤ d.
    """
    x = _check_tensor(x)
    chunk_size = _check_chunk(chunk_size)
    ii = _as_indices(idx, x.shape).to(x.device)
    if at not in ("x", "padded"):
        raise ValueError(f"at: 'x' or 'padded', got {at!r}")
    point = x if at == "x" else pad(x.reshape(-1)[ii], ii.cpu(), x.shape)
    with torch.no_grad():
        y = f(point)
    k = ii.numel()
    m = _mode(mode, k, y.numel())
    if m == "forward":
        tang = torch.zeros(k, x.numel(), dtype=x.dtype, device=x.device)
        tang[torch.arange(k, device=x.device), ii] = 1.0
        return _columns_forward(f, point, tang.reshape(k, *x.shape), chunk_size)
    return _rows_reverse(f, point, chunk_size)[:, ii]


def jacobian_loop(f: Callable, x: torch.Tensor, idx=None) -> torch.Tensor:
    """One autograd call per output (the benchmark anchor): (d, n) or, with idx, (d, K)."""
    x = _check_tensor(x).detach().clone().requires_grad_(True)
    y = f(x).reshape(-1)
    rows = []
    for i in range(y.numel()):
        (g,) = torch.autograd.grad(y[i], x, retain_graph=True)
        rows.append(g.reshape(-1))
    j = torch.stack(rows)
    return j if idx is None else j[:, _as_indices(idx, x.shape).to(j.device)]


# ----------------------------------------------------------------------------- sub-networks

def compose_check(blocks: Sequence[Callable], x: torch.Tensor) -> list[torch.Tensor]:
    """Run x through the blocks; ValueError naming the block that fails or yields NaN/Inf.

    Returns the features [F_1(x), …, F_L(x)] (batches).
    """
    if len(blocks) == 0:
        raise ValueError("blocks: the model has no blocks")
    x = _check_tensor(x)
    feats, h = [], x
    with torch.no_grad():
        for k, blk in enumerate(blocks):
            name = type(blk).__name__
            try:
                h = blk(h)
            except (RuntimeError, ValueError, TypeError, IndexError) as exc:
                raise ValueError(f"blocks do not compose: block {k} ({name}) fails on input of shape "
                                 f"{tuple(feats[-1].shape) if feats else tuple(x.shape)}: {exc}") from None
            if not isinstance(h, torch.Tensor):
                raise ValueError(f"blocks do not compose: block {k} ({name}) returned {type(h).__name__}")
            if not torch.isfinite(h).all():
                raise ValueError(f"block {k} ({name}) produced NaN/Inf")
            feats.append(h)
    return feats


def subnetwork_jacobians(blocks: Sequence[Callable], x: torch.Tensor, idx=None, sample: int = 0,
                         chunk_size: int | None = None) -> list[torch.Tensor]:
    """The (partial) Jacobians J_{F_k} of sample ``sample``, k = 1..L, each (d_k, K) (RD Eq 7).

    One forward-mode sweep: the K zero-padded tangents (RD Eq 5; all n input coordinates if idx is None)
    of the chosen sample are pushed through block after block, T_k = J_{f^k}(F_{k−1}(x)) T_{k−1}, with
    the other samples' tangents zero.
    """
    feats = compose_check(blocks, x)
    chunk_size = _check_chunk(chunk_size)
    if isinstance(sample, (bool, np.bool_)) or not isinstance(sample, (int, np.integer)):
        raise ValueError(f"sample: must be an integer index, got {sample!r}")
    if not 0 <= sample < x.shape[0]:
        raise ValueError(f"sample: {sample} out of range for a batch of {x.shape[0]}")
    per = x.shape[1:]
    ii = (torch.arange(int(np.prod(per))) if idx is None else _as_indices(idx, per)).to(x.device)
    k = ii.numel()
    out = []
    for a, b in _chunks(k, chunk_size):
        t = torch.zeros(b - a, *x.shape, dtype=x.dtype, device=x.device)
        t.reshape(b - a, x.shape[0], -1)[torch.arange(b - a), sample, ii[a:b]] = 1.0
        h = x
        cols = []
        for j, blk in enumerate(blocks):
            t = vmap(lambda tt, blk=blk, h=h: jvp(blk, (h,), (tt,))[1])(t)
            h = feats[j]
            cols.append(t[:, sample].reshape(b - a, -1).T)
        out.append(cols)
    return [torch.cat([c[j] for c in out], 1).detach() for j in range(len(blocks))]


def singular_values(j: torch.Tensor) -> np.ndarray:
    """Singular values (descending, float64 numpy) of a matrix on any device, computed where it lives.

    The matrix is rescaled by a power of two first (exact), so the values are right at any scale."""
    if not isinstance(j, torch.Tensor) or j.dim() != 2 or j.numel() == 0:
        raise ValueError(f"j: must be a non-empty 2-D tensor, got {getattr(j, 'shape', type(j).__name__)}")
    a = _check_tensor(j.detach(), "j").to(torch.float64)
    m = float(a.abs().max())
    if m == 0.0:
        return np.zeros(min(a.shape))
    e = int(np.frexp(m)[1])
    return np.ldexp(torch.linalg.svdvals(torch.ldexp(a, torch.tensor(-e, device=a.device))).cpu().numpy(), e)


def subnetwork_ranks(blocks: Sequence[Callable], x: torch.Tensor, eps: float | None = None, idx=None,
                     sample: int = 0, chunk_size: int | None = None) -> list[int]:
    """Numerical ranks (RD Eq 4) of the (partial) Jacobians of F_1, …, F_L (RD Thm 2), on x's device.

    ``eps=None``: the float32 rule of Sec 4.3, ε = 1.19e−7 × min(d_k, K) for each matrix.
    """
    if eps is not None:
        eps = _check_eps(eps)
    js = subnetwork_jacobians(blocks, x, idx=idx, sample=sample, chunk_size=chunk_size)
    ranks = []
    for j in js:
        e = float32_eps_rule(min(j.shape)) if eps is None else eps
        ranks.append(rank_from_singular_values(singular_values(j), e))
    return ranks
