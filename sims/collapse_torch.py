"""VC class statistics accumulated on a torch device (a GPU when there is one), handed to theory for the metrics.

:class:`TorchClassStats` runs the same one-pass algorithm as :class:`theory.collapse.ClassStats` (VC Eq 1–3:
class counts, class means, the pooled centred within-class scatter with Chan et al.'s pairwise correction,
class sums of h/‖h‖) in float64 on ``device``, so features produced on a GPU need not be copied to the host
batch by batch. :meth:`to_class_stats` returns the equivalent ClassStats (one p×p copy), on which every metric
of :mod:`theory.collapse` runs. Scale: features must satisfy |h| < 2^250 (squares within float64); larger or
non-finite values are a ValueError (the numpy ClassStats handles any scale).
"""
from __future__ import annotations

import numpy as np
import torch

from theory.collapse import ClassStats

_LIMIT = 2.0 ** 250


class TorchClassStats:
    """``TorchClassStats(p, K, device)``; ``update(H, y)`` with H (b, p) and integer labels y (b,) tensors (or arrays)."""

    def __init__(self, n_features: int, n_classes: int, device: str | torch.device = "cpu"):
        ClassStats(n_features, n_classes)  # the same argument checks and errors
        self.p, self.K, self.device = int(n_features), int(n_classes), torch.device(device)
        kw = {"dtype": torch.float64, "device": self.device}
        self.counts = torch.zeros(self.K, dtype=torch.int64, device=self.device)
        self.means = torch.zeros(self.K, self.p, **kw)
        self.scatter = torch.zeros(self.p, self.p, **kw)
        self.unit_sums = torch.zeros(self.K, self.p, **kw)
        self.absmax = torch.zeros(self.p, **kw)  # largest |h| per column (ClassStats's rescaling bookkeeping)

    def update(self, H, y) -> "TorchClassStats":
        H = torch.as_tensor(H, device=self.device)
        if H.is_complex() or not (H.is_floating_point() or H.dtype in (torch.int8, torch.int16, torch.int32,
                                                                        torch.int64, torch.uint8)):
            raise TypeError(f"H: must be a real numeric tensor, got dtype {H.dtype}")
        if H.dim() != 2 or H.shape[1] != self.p:
            raise ValueError(f"H: expected shape (batch, {self.p}), got {tuple(H.shape)}")
        y = torch.as_tensor(y, device=self.device)
        if y.dim() != 1 or y.shape[0] != H.shape[0] or y.dtype.is_floating_point or y.dtype == torch.bool:
            raise ValueError(f"y: expected {H.shape[0]} integer labels, got shape {tuple(y.shape)} dtype {y.dtype}")
        if H.shape[0] == 0:
            return self
        if int(y.min()) < 0 or int(y.max()) >= self.K:
            raise ValueError(f"y: labels must lie in [0, {self.K})")
        H = H.to(torch.float64)
        top = float(H.abs().max())
        if not np.isfinite(top) or top >= _LIMIT:
            raise ValueError(f"H: max |h| = {top:.3g} is non-finite or ≥ 2^250; use theory.collapse.ClassStats "
                             "(any scale) or rescale the features")
        torch.maximum(self.absmax, H.abs().amax(dim=0), out=self.absmax)
        y = y.to(torch.int64)
        cnt = torch.bincount(y, minlength=self.K)
        sums = torch.zeros(self.K, self.p, dtype=torch.float64, device=self.device).index_add_(0, y, H)
        seen = cnt > 0
        mean_b = torch.where(seen[:, None], sums / cnt.clamp(min=1)[:, None], torch.zeros_like(sums))
        R = H - mean_b[y]  # centred on the batch's own class means
        n_a, n_b = self.counts.to(torch.float64), cnt.to(torch.float64)
        both = (n_a > 0) & seen
        w = torch.sqrt(torch.where(both, n_a * n_b / (n_a + n_b).clamp(min=1), torch.zeros_like(n_a)))
        delta = mean_b - self.means
        X = torch.cat([R, delta[both] * w[both][:, None]])  # Chan's rank-m correction as extra rows
        self.scatter += X.T @ X
        n = (n_a + n_b).clamp(min=1)
        self.means += torch.where(seen[:, None], delta * (n_b / n)[:, None], torch.zeros_like(delta))
        self.counts += cnt
        norms = torch.linalg.vector_norm(H, dim=1)
        U = torch.where(norms[:, None] > 0, H / norms.clamp(min=torch.finfo(torch.float64).tiny)[:, None],
                        torch.zeros_like(H))
        self.unit_sums.index_add_(0, y, U)
        return self

    def to_class_stats(self) -> ClassStats:
        """The equivalent :class:`theory.collapse.ClassStats` (on the host), for the metrics."""
        st = ClassStats(self.p, self.K)
        st.counts = self.counts.cpu().numpy().astype(np.int64)
        st._mean = self.means.cpu().numpy().copy()
        st._m2 = self.scatter.cpu().numpy().copy()
        st.unit_sums = self.unit_sums.cpu().numpy().copy()
        st._cmax = self.absmax.cpu().numpy().copy()  # column units stay 2^0: |h| < 2^250 inside the band
        return st
