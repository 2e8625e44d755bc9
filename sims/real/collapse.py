"""VC collapse metrics on a real model's final features: rank policy, dead channels, held-out VCI and probe loss.

In-sample VCI (VC Def 5.3) and the optimal probe loss (VC Thm 5.1) are properties of the fitted sample. When the
centred features of N samples have rank N − 1 (N ≤ d + 1 and the samples in general position, e.g. 72 images
and 1280 features) the least-squares probe interpolates **any** labels: the probe loss is 0 and VCI is 0 even
for Gaussian noise with random labels. :func:`held_out` gives the versions that stay meaningful there:

* the samples of each class are split in two seeded halves A, B (by source image when crops share one, so no
  image is on both sides; classes with a single sample are left out);
* the LDA directions Σ_T,A†(μ_k,A − μ_A) are fitted on A and met with B's centred class means, and the other
  way round: T_ho = ½ Σ_k π_k [(μ_k,A − μ_A)ᵀ Σ_T,A† (μ_k,B − μ_B) + (A ↔ B)], the cross-fitted Tr[Σ_T†Σ_B];
  with A = B it is the in-sample trace exactly;
* held-out VCI = 1 − T_ho / rank and held-out probe loss = ½(1 − Σ_k π_k²) − ½ T̃_ho (Thm 5.1 with priors,
  :mod:`theory.collapse.probe`; T̃ weights class k by π_k²). Chance level — features that carry no class
  information — is T = 0: VCI 1 and probe loss ½(1 − Σπ_k²) (the best constant probe);
* also the accuracy on B of the least-squares probe fitted on A (minimum norm), against the chance rate.

Each half's class statistics come from :class:`theory.collapse.ClassStats`; Σ_T,A† is taken in the
equilibrated frame (diag Σ_T = 1, as theory.collapse does) and drops eigenvalues below p·ε·λ_max.

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
    """Numerical rank of the centred features (singular values above max(N, d)·ε·σ_max)."""
    X = np.asarray(F, dtype=np.float64)
    X = X - X.mean(0)
    if min(X.shape) == 0:
        return 0
    s = np.linalg.svd(X, compute_uv=False) if X.shape[0] <= X.shape[1] + 1 else \
        np.sqrt(np.clip(np.linalg.eigvalsh(X.T @ X)[::-1], 0.0, None))
    return int(np.sum(s > max(X.shape) * EPS * max(s[0], 0.0))) if s.size and s[0] > 0 else 0


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


def _half(F, y, K):
    from theory.collapse import ClassStats

    st = ClassStats.from_features(F, y, n_classes=K)
    mu = st.global_mean
    D = st.means - mu  # (K, p) centred class means
    S = st.sigma_t()
    return D, 0.5 * (S + S.T), st.priors


def _pinv_apply(S, D) -> np.ndarray:
    """Σ_T†Dᵀ (p, K) with Σ_T† in the equilibrated frame (eigenvalues below p·ε·λ_max dropped)."""
    d = np.sqrt(np.clip(np.diag(S), 0.0, None))
    live = d > 0
    out = np.zeros((S.shape[0], D.shape[0]))
    if not live.any():
        return out
    s = d[live]
    Se = S[np.ix_(live, live)] / np.outer(s, s)
    w, Q = np.linalg.eigh(0.5 * (Se + Se.T))
    keep = w > Se.shape[0] * EPS * max(w[-1], 0.0)
    Z = Q[:, keep].T @ (D[:, live] / s).T
    out[live] = ((Q[:, keep] @ (Z / w[keep][:, None])).T / s).T
    return out


def cross_trace(F, y, A, B, K: int | None = None) -> dict:
    """Cross-fitted Tr[Σ_T†Σ_B] (π_k weights) and Tr[Σ_T†Σ̃_B] (π_k² weights) between halves A and B (module doc).

    ``y`` must be integers in [0, K); every class must have samples in both halves."""
    F = np.asarray(F, dtype=np.float64)
    y = np.asarray(y)
    K = int(y.max()) + 1 if K is None else int(K)
    Da, Sa, pa = _half(F[A], y[A], K)
    Db, Sb, pb = _half(F[B], y[B], K)
    pi = 0.5 * (pa + pb)
    Pa, Pb = _pinv_apply(Sa, Da), _pinv_apply(Sb, Db)  # (p, K) LDA directions of each half
    cross = 0.5 * (np.einsum("kp,pk->k", Db, Pa) + np.einsum("kp,pk->k", Da, Pb))
    return {"trace": float(pi @ cross), "weighted_trace": float((pi * pi) @ cross), "priors": pi}


def probe_accuracy(F, y, A, B) -> float:
    """Accuracy on B of the minimum-norm least-squares probe [F, 1] → one-hot fitted on A."""
    F = np.asarray(F, dtype=np.float64)
    mu, sd = F[A].mean(0), F[A].std(0)
    sd = np.where(sd > 0, sd, 1.0)
    X = lambda I: np.c_[(F[I] - mu) / sd, np.ones(len(I))]  # noqa: E731
    K = int(np.max(y)) + 1
    Wp = np.linalg.lstsq(X(A), np.eye(K)[np.asarray(y)[A]], rcond=None)[0]
    return float(np.mean((X(B) @ Wp).argmax(1) == np.asarray(y)[B]))


def held_out(F, y, rank: int, seed: int = 0, groups=None) -> dict:
    """Held-out VCI, probe loss and probe accuracy (module doc) with their chance levels.

    ``rank``: the rank of Σ_B the in-sample VCI used (so both VCIs share the denominator). ``groups``: e.g. the
    source image of each crop. Returns NaNs with ``"reason"`` when fewer than two classes can be split."""
    F = np.asarray(F, dtype=np.float64)
    y = np.asarray(y)
    A, B = stratified_halves(y, np.random.default_rng([seed, 5_3]), groups)
    cls = np.unique(y[A]) if len(A) else np.zeros(0, int)
    nan = float("nan")
    if len(cls) < 2:
        return {"vci": nan, "probe_loss": nan, "probe_acc": nan, "chance_probe_loss": nan, "chance_acc": nan,
                "n_fit": int(len(A)), "n_test": int(len(B)), "classes": int(len(cls)),
                "reason": "fewer than two classes have at least two samples (or source images) to split"}
    keep = np.concatenate([A, B])
    yy = np.searchsorted(cls, y)  # classes kept: 0..K-1 (others are outside A ∪ B)
    K = len(cls)
    ct = cross_trace(F, np.where(np.isin(np.arange(len(y)), keep), yy, 0), A, B, K)
    pi = ct["priors"]
    chance_loss = 0.5 * (1.0 - float(pi @ pi))
    counts = np.bincount(yy[B], minlength=K)
    r = max(1, min(int(rank), K - 1, F.shape[1]))
    return {"vci": 1.0 - ct["trace"] / r, "probe_loss": chance_loss - 0.5 * ct["weighted_trace"],
            "probe_acc": probe_accuracy(F, np.where(np.isin(np.arange(len(y)), keep), yy, 0), A, B),
            "chance_probe_loss": chance_loss, "chance_acc": float(counts.max() / counts.sum()),
            "n_fit": int(len(A)), "n_test": int(len(B)), "classes": K, "reason": ""}
