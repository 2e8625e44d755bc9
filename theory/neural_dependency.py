"""Neural dependencies of one category (ND Def 1, Eq 2, Sec 2.4, Tab 1): support, coefficients, errors, metrics.

:func:`dependencies` takes either a covariance Cov = E[f fᵀ] (uncentred second moment, ND Eq 2,
Remark 1: no centring, no normalisation) or the raw logits F (N × n, Cov = FᵀF/N), solves CovLasso
for category i exactly (:mod:`theory.covlasso`) and returns

* ``support``: the categories j ≠ i with θ_j ≠ 0 (the neural dependencies of c_i);
* ``theta``: θ*(λ) (θ_i = −1), ``coefficients``: θ_j on the support (f_i ≈ Σ_j θ_j f_j);
* ``err``: err_i(θ) = θᵀCovθ = E[(θᵀf)²] (ND Sec 2.2), ``rel_err`` = err/Cov_ii, ``floor`` = err_i(θ*(0))
  and ``lambda_max``;
* given logits and ``labels``: the Table 1 metrics with the replaced logit f̂_i = Σ_{j≠i} θ_j f_j
  (:func:`replaced_logit_metrics`).

Between networks (ND Sec 2.4): the target is category i of a second network g, the predictors are
the other logits of f: f̃ = (f_1, …, f_{i−1}, g_i, f_{i+1}, …, f_n) and Cov = E[f̃ f̃ᵀ], built from the
cross second moment by :func:`mixed_cov` (pass ``g=`` logits to :func:`dependencies`).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from theory.covlasso import covlasso, resolve_lambda
from theory.dependency import error_floor, prediction_error, second_moment
from theory.validate import as_covariance, as_float_array, check_index


@dataclasses.dataclass
class Dependencies:
    """What :func:`dependencies` found for target category ``i`` (see the module doc)."""

    i: int
    lam: float
    lambda_max: float
    theta: np.ndarray
    support: np.ndarray
    coefficients: np.ndarray
    err: float
    rel_err: float
    floor: float
    cov_ii: float
    metrics: dict | None = None


def mixed_cov(cov_f, cross_fg, g_sq: float, i: int) -> np.ndarray:
    """Cov of f̃ = (f_1, …, g_i, …, f_n) (ND Sec 2.4) from second moments.

    ``cov_f`` = E[f fᵀ] (n × n), ``cross_fg`` = E[f g_i] (n,) or the whole E[f gᵀ] (n × m, column i is
    used), ``g_sq`` = E[g_i²]. Row/column i become E[f_j g_i] and the diagonal entry E[g_i²].
    """
    c = as_covariance(cov_f, "cov_f")
    n = c.shape[0]
    i = check_index(i, n)
    x = as_float_array(cross_fg, "cross_fg")
    if x.ndim == 2:
        if x.shape[0] != n:
            raise ValueError(f"cross_fg: expected {n} rows (the categories of f), got shape {x.shape}")
        x = x[:, check_index(i, x.shape[1], "i (column of cross_fg)")]
    if x.shape != (n,):
        raise ValueError(f"cross_fg: expected shape ({n},) or ({n}, m), got {x.shape}")
    if isinstance(g_sq, (bool, np.bool_)) or not isinstance(g_sq, (int, float, np.integer, np.floating)):
        raise TypeError(f"g_sq: E[g_i^2] must be a real number, got {g_sq!r}")
    g_sq = float(g_sq)
    if not np.isfinite(g_sq) or g_sq < 0:
        raise ValueError(f"g_sq: E[g_i^2] must be finite and >= 0, got {g_sq}")
    m = c.copy()
    m[:, i] = x
    m[i, :] = x
    m[i, i] = g_sq
    return as_covariance(m, "mixed cov (cov_f with row/column i from cross_fg and g_sq: inconsistent moments?)")


def mixed_logits(F, G, i: int) -> np.ndarray:
    """f̃ = F with column i replaced by G[:, i] (ND Sec 2.4)."""
    F = as_float_array(F, "logits", ndim=2)
    G = as_float_array(G, "g", ndim=2)
    if G.shape[0] != F.shape[0]:
        raise ValueError(f"g: must have the same samples as the logits ({F.shape[0]}), got {G.shape[0]}")
    i = check_index(i, F.shape[1])
    check_index(i, G.shape[1], "i (category of g)")
    out = F.copy()
    out[:, i] = G[:, i]
    return out


def replaced_logit_metrics(F, labels, i: int, theta, evaluated=None, offset=None) -> dict:
    """ND Tab 1 metrics for category ``i`` with the replaced logit f̂_i = Σ_{j≠i} θ_j F[:, j].

    ``F``: predictor logits (N × n); ``evaluated``: the network whose accuracy is measured with column i
    replaced (default ``F``; between networks, g's logits). ``offset`` (n,): added to every evaluated logit,
    the replaced one included, before the argmax — the classifier bias b when F = W F(x) (RD Eq 11–12); the
    errors compare the un-offset logits. ``labels``: true classes; None: the unmodified prediction is the label
    (agreement). Returns

    * abs_err = mean|t_i − f̂_i| (t_i the evaluated network's logit i);
    * rel_err = abs_err / mean|t_i| (the paper does not define its Rel Err; this is the ratio of mean absolute
      values): small whenever the logit sits far from 0 — logits sharing a large offset make it small for any f̂;
    * spread_rel_err = abs_err / mean|t_i − mean(t_i)|: the error relative to the logit's spread across the
      images, 1 for the best constant prediction's order of error and 0 for an exact one (able to fail whatever
      the logits' offset);
    * acc / orig_acc (argmax accuracy over all samples with and without the replacement), pos_acc / orig_pos_acc
      (on the samples of class i; None without any), n_pos, support (#{θ_j ≠ 0, j ≠ i}).
    """
    F = as_float_array(F, "logits", ndim=2)
    N, n = F.shape
    i = check_index(i, n)
    E = F if evaluated is None else as_float_array(evaluated, "evaluated logits", ndim=2)
    if E.shape[0] != N:
        raise ValueError(f"evaluated logits: expected {N} samples, got {E.shape[0]}")
    b = None if offset is None else as_float_array(offset, "offset", ndim=1)
    if b is not None and b.shape != (E.shape[1],):
        raise ValueError(f"offset: expected shape ({E.shape[1]},), got {b.shape}")
    base = E if b is None else E + b
    y = base.argmax(1) if labels is None else _labels(labels, N, E.shape[1])
    th = np.asarray(theta, float)
    if th.shape != (n,):
        raise ValueError(f"theta: expected shape ({n},), got {th.shape}")
    rest = np.delete(np.arange(n), i)
    pred = F[:, rest] @ th[rest]
    target = E[:, i]
    abs_err = float(np.mean(np.abs(target - pred)))
    R = base.copy()
    R[:, i] = pred + (0.0 if b is None else b[i])
    pos = y == i
    orig_hit = base.argmax(1) == y
    hit = R.argmax(1) == y
    return {
        "abs_err": abs_err,
        "rel_err": _ratio(abs_err, float(np.mean(np.abs(target)))),
        "spread_rel_err": _ratio(abs_err, float(np.mean(np.abs(target - target.mean())))),
        "acc": float(hit.mean()),
        "orig_acc": float(orig_hit.mean()),
        "pos_acc": float(hit[pos].mean()) if pos.any() else None,
        "orig_pos_acc": float(orig_hit[pos].mean()) if pos.any() else None,
        "n_pos": int(pos.sum()),
        "support": int(np.count_nonzero(th[rest])),
    }


def _ratio(err: float, scale: float) -> float:
    return err / scale if scale > 0 else (0.0 if err == 0 else float("inf"))


def _labels(labels, N: int, n: int) -> np.ndarray:
    y = np.asarray(labels)
    if y.shape != (N,):
        raise ValueError(f"labels: expected shape ({N},), got {y.shape}")
    if not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"labels: must be integers, got dtype {y.dtype}")
    if N and (y.min() < 0 or y.max() >= n):
        raise ValueError(f"labels: must lie in [0, {n}), got range [{y.min()}, {y.max()}]")
    return y


#: elements of one temporary of :func:`replaced_logit_metrics_many`'s blocks of pairs (4 Mi float64: 32 MiB)
_BLOCK_ELEMS = 1 << 22


def replaced_logit_metrics_many(F, labels, thetas, offset=None, evaluated=None) -> list:
    """:func:`replaced_logit_metrics` for many (category, θ) pairs at once: ``thetas`` a list of (i, θ);
    ``evaluated`` as there (between networks: g's logits, column i replaced by Σ θ_j F[:, j]).

    The same numbers from one O(N·n) pass and array work per block of pairs: with column i replaced by r, the
    argmax is i where r exceeds the largest other logit (the row's top logit, or its second when the top is i),
    else that logit's index — a first-index tie-break as numpy's argmax (exact ties of float logits aside). Pairs
    are grouped by support size s = #{θ_j ≠ 0, j ≠ i}; a block's replaced logits are Σ over the s supported columns
    (a dense product where s ≥ n/4), so only the order of that sum of s products differs from the plain function."""
    F = as_float_array(F, "logits", ndim=2)
    N, n = F.shape
    E = F if evaluated is None else as_float_array(evaluated, "evaluated logits", ndim=2)
    if E.shape != (N, n):
        raise ValueError(f"evaluated logits: expected shape {(N, n)}, got {E.shape}")
    b = np.zeros(n) if offset is None else as_float_array(offset, "offset", ndim=1)
    if b.shape != (n,):
        raise ValueError(f"offset: expected shape ({n},), got {b.shape}")
    cats, rests = [], []
    for i, th in thetas:
        i = check_index(i, n)
        th = np.asarray(th, float)
        if th.shape != (n,):
            raise ValueError(f"theta: expected shape ({n},), got {th.shape}")
        rest = th.copy()
        rest[i] = 0.0
        cats.append(i)
        rests.append(rest)
    base = E + b
    y = base.argmax(1) if labels is None else _labels(labels, N, n)
    rows = np.arange(N)
    top = base.argmax(1)  # numpy's first-index tie-break, as the plain function
    v_top = base[rows, top]
    masked = base.copy()
    masked[rows, top] = -np.inf
    second = masked.argmax(1)
    v_second = masked[rows, second]
    orig_hit = top == y
    orig_acc = float(orig_hit.mean())
    n_pos = np.bincount(y, minlength=n)
    orig_pos_hits = np.bincount(y[orig_hit], minlength=n)
    # rows: categories, so every per-pair reduction runs along a contiguous row
    FT = np.ascontiguousarray(F.T)
    ET = FT if evaluated is None else np.ascontiguousarray(E.T)
    supports = [np.flatnonzero(r) for r in rests]
    groups: dict = {}
    for p, sup in enumerate(supports):
        groups.setdefault(sup.size, []).append(p)
    out: list = [None] * len(cats)
    for s, members in groups.items():
        block = max(1, _BLOCK_ELEMS // (N * max(s, 1)))
        for c0 in range(0, len(members), block):
            ps = members[c0:c0 + block]
            I = np.array([cats[p] for p in ps])
            if s == 0:
                pred = np.zeros((len(ps), N))
            elif s < n // 4:  # a sparse θ reads its support only
                S = np.stack([supports[p] for p in ps])
                vals = np.stack([rests[p][supports[p]] for p in ps])
                pred = np.einsum("bsn,bs->bn", FT[S], vals)
            else:
                pred = np.stack([rests[p] for p in ps]) @ FT
            T = ET[I]
            is_top = top[None, :] == I[:, None]
            other = np.where(is_top, second[None, :], top[None, :])
            v_other = np.where(is_top, v_second[None, :], v_top[None, :])
            r = pred + b[I][:, None]
            wins = (r > v_other) | ((r == v_other) & (I[:, None] < other))
            hit = np.where(wins, I[:, None], other) == y[None, :]
            abs_err = np.mean(np.abs(T - pred), axis=1)
            mean_abs = np.mean(np.abs(T), axis=1)
            spread = np.mean(np.abs(T - np.mean(T, axis=1, keepdims=True)), axis=1)
            acc = hit.mean(axis=1)
            pos_hits = (hit & (y[None, :] == I[:, None])).sum(axis=1)
            for q, p in enumerate(ps):
                i, npos = int(I[q]), int(n_pos[I[q]])
                e = float(abs_err[q])
                out[p] = {"abs_err": e, "rel_err": _ratio(e, float(mean_abs[q])),
                          "spread_rel_err": _ratio(e, float(spread[q])),
                          "acc": float(acc[q]), "orig_acc": orig_acc,
                          "pos_acc": float(pos_hits[q] / npos) if npos else None,
                          "orig_pos_acc": float(orig_pos_hits[i] / npos) if npos else None,
                          "n_pos": npos, "support": s}
    return out


def between_all(cov_f, cross_fg, g_sq, rho: float) -> np.ndarray:
    """θ*(λ_i) for every target i of a second network g predicted from the other logits of f (ND Sec 2.4), at
    λ_i = ρ·λ_max(i): row i solves CovLasso on :func:`mixed_cov` (cov_f with row/column i from E[f g_i] and
    E[g_i²]), exactly by the homotopy of :mod:`theory.covlasso`. ``cov_f`` = E[f fᵀ] (n × n), ``cross_fg`` =
    E[f gᵀ] (n × n), ``g_sq`` = E[g_i²] (n,). Returns (n, n) with Θ_ii = −1.

    cov_f is validated once; each target's mixed matrix is cov_f with one row and column swapped in a reused
    buffer (its PSD-ness is that of the second moment of f̃, which the caller's data guarantee). All three are
    scaled by one power of four (exact; θ* is scale-free at relative λ)."""
    from theory.covlasso import _homotopy, _max_steps, _check_lam

    c = as_covariance(cov_f, "cov_f")
    n = c.shape[0]
    x = as_float_array(cross_fg, "cross_fg", ndim=2)
    gq = as_float_array(g_sq, "g_sq", ndim=1)
    if x.shape != (n, n) or gq.shape != (n,):
        raise ValueError(f"cross_fg, g_sq: expected shapes ({n}, {n}) and ({n},), got {x.shape} and {gq.shape}")
    if np.any(gq < 0):
        raise ValueError("g_sq: E[g_i^2] must be >= 0")
    rho = _check_lam(rho, "rho")
    top = max(float(np.max(np.diag(c))), float(gq.max()))
    e = 2 * int(np.round(np.log2(top) / 2)) if top > 0 else 0
    c, x, gq = np.ldexp(c, -e), np.ldexp(x, -e), np.ldexp(gq, -e)
    buf = np.ascontiguousarray(c.copy())
    out = np.empty((n, n))
    for i in range(n):
        buf[:, i] = x[:, i]
        buf[i, :] = x[:, i]
        buf[i, i] = gq[i]
        mu = rho * float(np.max(np.abs(np.delete(x[:, i], i)))) if n > 1 else 0.0
        theta, status, _, _, _ = _homotopy(buf, i, mu, False, _max_steps(n))
        if status != 0:
            raise RuntimeError(f"between_all: homotopy did not finish for target {i}")
        out[i] = theta
        buf[:, i] = c[:, i]
        buf[i, :] = c[i, :]
    return out


def dependencies(cov_or_logits, i: int, lam: float | None = None, *, rho: float | None = None,
                 kind: str = "auto", labels=None, g=None, cross=None, g_sq: float | None = None) -> Dependencies:
    """The neural dependencies of category ``i`` (ND Def 1 via Eq 2); λ absolute or ``rho=`` relative.

    ``kind``: "cov" (a covariance), "logits" (N × n raw logits), or "auto" (logits when ``labels`` or
    ``g`` is given or the array is not square, else a covariance). Between networks (ND Sec 2.4: target
    g_i, predictors f_j, j ≠ i): with logits pass ``g=`` (N × m, m > i), and with ``labels`` the metrics
    are g's accuracy with g_i replaced; with a covariance E[f fᵀ] pass the cross second moment
    ``cross=`` E[f gᵀ] (n × m, or its column i) and ``g_sq=`` E[g_i²] (:func:`mixed_cov`).
    """
    x = as_float_array(cov_or_logits, "cov_or_logits" if kind == "auto" else kind, ndim=2)
    if kind not in ("auto", "cov", "logits"):
        raise ValueError(f"kind must be 'auto', 'cov' or 'logits', got {kind!r}")
    if kind == "auto":
        kind = "logits" if (labels is not None or g is not None or x.shape[0] != x.shape[1]) else "cov"
    if (cross is None) != (g_sq is None):
        raise ValueError("between networks from second moments needs both cross= (E[f gᵀ]) and g_sq= (E[g_i²])")
    if kind == "cov":
        if labels is not None or g is not None:
            raise ValueError("labels= and g= need the raw logits (kind='logits'), not a covariance")
        cov = as_covariance(x)
        if cross is not None:
            cov = mixed_cov(cov, cross, g_sq, check_index(i, cov.shape[0]))
        F = None
    else:
        if cross is not None:
            raise ValueError("cross=/g_sq= go with a covariance; with logits pass g= (the second network's logits)")
        F = x
        if F.shape[0] < 2:
            raise ValueError(f"logits: need at least 2 samples, got {F.shape[0]}")
        if g is not None:
            F = mixed_logits(F, g, i)
        cov = as_covariance(second_moment(F))
    n = cov.shape[0]
    if n < 2:
        raise ValueError(f"need at least 2 categories (n = {n} has no other logit to predict from)")
    i = check_index(i, n)
    cii = float(cov[i, i])
    if cii <= 0:
        raise ValueError(f"category {i} has no energy (Cov_ii = E[f_i^2] = 0): nothing to predict")
    lam_v = resolve_lambda(cov, i, lam, rho)
    theta = covlasso(cov, i, lam_v)
    rest = np.delete(np.arange(n), i)
    support = rest[theta[rest] != 0]
    err = prediction_error(cov, theta)
    metrics = None
    if labels is not None:
        metrics = replaced_logit_metrics(F, labels, i, theta,
                                         evaluated=None if g is None else as_float_array(g, "g", ndim=2))
    return Dependencies(
        i=i, lam=lam_v, lambda_max=2.0 * float(np.abs(cov[rest, i]).max()), theta=theta, support=support,
        coefficients=theta[support], err=err, rel_err=err / cii,
        floor=float(error_floor(cov)[i]), cov_ii=cii, metrics=metrics,
    )
