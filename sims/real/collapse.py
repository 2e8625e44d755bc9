"""VC collapse metrics on a real model's final features: rank policy, dead channels, held-out VCI and probe loss.

In-sample VCI (VC Def 5.3) and the optimal probe loss (VC Thm 5.1) are properties of the fitted sample. When the
centred features of N samples have rank N − 1 (N ≤ d + 1 and the samples in general position, e.g. 72 images
and 1280 features) the least-squares probe interpolates **any** labels: the probe loss is 0 and VCI is 0 even
for Gaussian noise with random labels. :func:`held_out` gives the versions that stay meaningful there:

* the samples of each class are split in two seeded halves A, B (by source image when crops share one, so no
  image is on both sides; classes with a single sample are left out);
* the probe of VC Thm 5.1 — least squares [h, 1] → one-hot e_y, minimum norm, on the features centred with
  A's mean, in their own coordinates — is fitted on A and its loss (1/2n_B) Σ_B ‖W h + b − e_y‖² is taken on
  B, and the other way round; the held-out probe loss is the mean of both. It is ≥ 0 and, with one half on
  both sides, it is theory.collapse's probe loss exactly (Thm 5.1's optimum). (Per-feature standardisation
  would inflate the noise of near-dead channels: on a real 72-image folder it turned a probe with 97 %
  held-out accuracy into a loss 2.6× chance.);
* held-out VCI reads that loss back through Thm 5.1 (with priors π_k, :mod:`theory.collapse.probe`):
  Tr[Σ_T†Σ̃_B] = (1 − Σπ_k²) − 2·loss and VCI = 1 − Tr[Σ_T†Σ̃_B] / (Σπ_k² · rank) — the in-sample VCI exactly
  for balanced classes (Σ̃_B = Σ_B/K), a balanced-equivalent reading otherwise; ≥ 0 for balanced classes at
  rank K − 1. Chance level — features that carry no class information — is the best constant probe: loss
  ½(1 − Σπ_k²), VCI 1; an over-fitted probe scores worse than chance on B (VCI above 1);
* also the accuracy of the same probes on the other half, against the majority-class rate.

:func:`vc_metrics` runs :func:`theory.collapse.metrics` under a rank policy: columns that are exactly zero for
every sample (dead ReLU channels) carry nothing for any VC metric and are removed first (reported); ``rank``
is theory's 'paper' (min(p, K − 1), VC Sec 6.1), 'exact' (the numerical rank of Σ_B: eigenvalues at most
max(p, K)·ε·λ_max — round-off, possibly slightly negative — count as 0) or an int; 'auto' (the default of
``theorylab analyze``) is 'paper' when Σ_B resolves that rank, else 'exact', and says so.
"""
from __future__ import annotations

import numpy as np

EPS = np.finfo(np.float64).eps


def dead_columns(F) -> np.ndarray:
    """Indices of the feature columns that are exactly 0 for every sample (e.g. dead ReLU channels)."""
    F = np.asarray(F)
    return np.flatnonzero(~np.any(F != 0, axis=0))


def affine_rank(F) -> int:
    """Numerical rank of the centred features: eigenvalues of the smaller Gram matrix (N×N or d×d) above
    max(N, d)·ε·λ_max."""
    X = np.asarray(F, dtype=np.float64)
    X = X - X.mean(0)
    if min(X.shape) == 0:
        return 0
    G = X @ X.T if X.shape[0] <= X.shape[1] else X.T @ X
    w = np.linalg.eigvalsh(0.5 * (G + G.T))
    return int(np.sum(w > max(X.shape) * EPS * w[-1])) if w[-1] > 0 else 0


def interpolates(F) -> bool:
    """True when the centred features of the N samples have rank N − 1: a linear probe fits any labels exactly."""
    F = np.asarray(F)
    return F.shape[0] <= F.shape[1] + 1 and affine_rank(F) >= F.shape[0] - 1


def vc_metrics(F, y, rank="auto") -> dict:
    """:func:`theory.collapse.metrics` of features F with classes y under the rank policy (module doc).

    Returns ``{"metrics": ..., "rank_policy": used policy, "rank_note": sentence, "dead": #dead columns,
    "features": F without them}``. A ValueError from theory that the policy cannot resolve propagates.
    """
    from theory.collapse import metrics

    F = np.asarray(F, dtype=np.float64)
    y = np.asarray(y)
    dead = dead_columns(F)
    Fk = np.delete(F, dead, axis=1) if dead.size else F
    if Fk.shape[1] == 0:
        raise ValueError("features: every feature column is 0 for every sample (all channels dead)")
    if rank not in ("auto", "paper", "exact") and (isinstance(rank, bool) or not isinstance(rank, (int, np.integer))):
        raise ValueError(f"rank: 'auto', 'paper', 'exact' or a positive integer, got {rank!r}")
    note = ""
    if rank == "auto":
        try:
            met, used = metrics(Fk, y, rank="paper"), "paper"
        except ValueError as exc:
            if "Σ_B" not in str(exc):
                raise
            met, used = metrics(Fk, y, rank="exact"), "exact"
            K = len(np.unique(y))
            note = (f"rank 'paper' = min(p, K − 1) = {min(Fk.shape[1], K - 1)} is not resolved (the class means span "
                    f"fewer dimensions), so rank 'exact' = {met['rank']} was used: eigenvalues of Σ_B at most "
                    f"100·max(p, K)·ε·λ_max (round-off, here possibly slightly negative) count as 0")
    else:
        met, used = metrics(Fk, y, rank=rank if isinstance(rank, str) else int(rank)), str(rank)
    return {"metrics": met, "rank_policy": used, "rank_note": note, "dead": int(dead.size), "features": Fk}


def stratified_halves(y, rng, groups=None) -> tuple[np.ndarray, np.ndarray]:
    """Seeded halves of each class; with ``groups`` (e.g. the source image) a class's groups are split instead
    of its samples when it has at least two, so no group sits on both sides. Classes that cannot be split
    (one sample, or one group) are left out of both halves."""
    y = np.asarray(y)
    g = np.arange(len(y)) if groups is None else np.asarray(groups)
    a, b = [], []
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        gs = np.unique(g[idx])
        if len(gs) >= 2:
            gs = rng.permutation(gs)
            first = np.isin(g[idx], gs[: len(gs) // 2])
        elif groups is not None and len(idx) >= 2:
            return stratified_halves(y, rng, None)  # one group per class (e.g. class = source image): by sample
        else:
            continue
        a.append(idx[first])
        b.append(idx[~first])
    if not a:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.sort(np.concatenate(a)), np.sort(np.concatenate(b))


def _centred(F, A):
    """[(h − μ_A)/s, 1] with one global scale s (the RMS of A): the features' own coordinates, which the
    minimum-norm probe depends on (per-feature standardisation would inflate near-dead channels' noise)."""
    mu = F[A].mean(0)
    s = float(np.sqrt(np.mean((F[A] - mu) ** 2))) or 1.0
    return lambda I: np.c_[(F[I] - mu) / s, np.ones(len(I))]


def probe_transfer(F, y, A, B, K: int) -> tuple[float, float]:
    """(loss, accuracy) on B of the minimum-norm least-squares probe [h, 1] → one-hot fitted on A (module doc).

    ``y`` integers in [0, K). With A = B the loss is the optimal probe loss of VC Thm 5.1 on that sample."""
    import scipy.linalg as sla

    F = np.asarray(F, dtype=np.float64)
    y = np.asarray(y)
    X = _centred(F, A)
    Xa, Ya = X(A), np.eye(K)[y[A]]
    if Xa.shape[0] <= 4 * Xa.shape[1]:
        Wp = sla.lstsq(Xa, Ya, lapack_driver="gelsd")[0]
    else:  # many samples: the normal equations with an eigenvalue cutoff (a pseudo-inverse), d × d only
        G = Xa.T @ Xa
        w, Q = np.linalg.eigh(0.5 * (G + G.T))
        keep = w > G.shape[0] * EPS * max(w[-1], 0.0)
        Wp = Q[:, keep] @ ((Q[:, keep].T @ (Xa.T @ Ya)) / w[keep][:, None])
    P = X(B) @ Wp
    R = P - np.eye(K)[y[B]]
    return float(np.sum(R * R) / (2 * len(B))), float(np.mean(P.argmax(1) == y[B]))


def held_out(F, y, rank: int, seed: int = 0, groups=None) -> dict:
    """Held-out probe loss, VCI (Thm 5.1 read back) and probe accuracy (module doc) with their chance levels.

    ``rank``: the rank of Σ_B the in-sample VCI used (so both VCIs share the denominator). ``groups``: e.g. the
    source image of each crop. Returns NaNs with ``"reason"`` when fewer than two classes can be split."""
    F = np.asarray(F, dtype=np.float64)
    y = np.asarray(y)
    A, B = stratified_halves(y, np.random.default_rng([seed, 53]), groups)
    cls = np.unique(y[A]) if len(A) else np.zeros(0, int)
    nan = float("nan")
    if len(cls) < 2:
        return {"vci": nan, "probe_loss": nan, "probe_acc": nan, "chance_probe_loss": nan, "chance_acc": nan,
                "n_fit": int(len(A)), "n_test": int(len(B)), "classes": int(len(cls)),
                "reason": "fewer than two classes have at least two samples (or source images) to split"}
    K = len(cls)
    yy = np.zeros(len(y), dtype=np.int64)
    both = np.concatenate([A, B])
    yy[both] = np.searchsorted(cls, y[both])  # the split classes as 0..K-1 (rows outside A ∪ B are not used)
    l1, a1 = probe_transfer(F, yy, A, B, K)
    l2, a2 = probe_transfer(F, yy, B, A, K)
    loss = 0.5 * (l1 + l2)
    pi = np.bincount(yy[both], minlength=K) / len(both)
    s2 = float(pi @ pi)
    r = max(1, min(int(rank), K - 1, F.shape[1]))
    counts_b, counts_a = np.bincount(yy[B], minlength=K), np.bincount(yy[A], minlength=K)
    return {"vci": 1.0 - ((1.0 - s2) - 2.0 * loss) / (s2 * r), "probe_loss": loss, "probe_acc": 0.5 * (a1 + a2),
            "chance_probe_loss": 0.5 * (1.0 - s2),
            "chance_acc": 0.5 * float(counts_b.max() / counts_b.sum() + counts_a.max() / counts_a.sum()),
            "n_fit": int(len(A)), "n_test": int(len(B)), "classes": K, "reason": ""}
