"""The per-layer metric set and the CKA matrices, read from one pass's :class:`~sims.geometry.stats.GeometryState`.

Every number comes from the public functions of :mod:`theory.geometry` and :mod:`theory.collapse`, fed with the
streamed statistics:

* spectrum (covariance, from the layer's :class:`theory.geometry.CrossMoments`): ``effective_rank``,
  ``stable_rank``, ``participation_ratio``, ``alpha_req``, ``spike_count`` (Marchenko–Pastur);
* RankMe (Garrido et al. 2023, Eq 1; uncentred, σ and σ² variants) and the numerical rank: the singular values
  of Z are the square roots of the eigenvalues of the uncentred ZᵀZ = C_c + n·μμᵀ, passed as diag(σ) (same
  singular values). Values below √ε·σ₁ are not resolved this way: the numerical rank uses the activations'
  dtype rule max(n, p)·eps(dtype), which for float32 (1.2e-7·max(n, p)) is above that resolution;
* with labels: NC1 (sample weighting, VC's ClassStats), VCI, the within-class cosine distance (VC Sec 3.2),
  NC2 (class weighting, from the class means: :func:`theory.geometry.nc2` of the K means, one per class),
  CDNV (Galanti et al. 2022, Def 1) from the class variances tr(Σ_k).

A metric that is undefined for these data (too few samples, constant features, an empty class) is reported
as ``{"error": "<why>"}`` — never NaN.
"""
from __future__ import annotations

import numpy as np

from sims.geometry.stats import GeometryState


def _try(fn):
    try:
        v = fn()
    except (ValueError, np.linalg.LinAlgError) as exc:
        return {"error": str(exc).splitlines()[0]}
    return v


def _singular_values(st: GeometryState, name: str) -> np.ndarray:
    """σ of the uncentred features (relative units: one power of two removed)."""
    m = st.cross_moments(name)
    c = m.centred()
    mu = m.mean_x
    e = int(c["ex"])
    mu_s = np.ldexp(mu, -e) if e else mu
    G = c["cxx"] + st.n * np.outer(mu_s, mu_s)
    top = float(np.max(np.abs(G))) if G.size else 0.0
    if top > 0:
        G = G / top
    lam = np.clip(np.linalg.eigvalsh(0.5 * (G + G.T)), 0.0, None)[::-1]
    return np.sqrt(lam)


def layer_metrics(st: GeometryState, name: str, spikes_level: float = 0.99) -> dict:
    """The metric set of one layer (module doc): a flat dict of numbers, dicts or ``{"error": ...}``.

    Runs with one BLAS thread (:func:`sims.threads.single_threaded`): the p×p eigendecompositions of a loaded
    machine's spinning BLAS pool took 3 s instead of 0.05 s at p = 512."""
    from sims.threads import single_threaded

    with single_threaded(torch_threads=None, blas_threads=1):
        return _layer_metrics(st, name, spikes_level)


def _layer_metrics(st: GeometryState, name: str, spikes_level: float) -> dict:
    from theory.geometry import (alpha_req, effective_rank, nc1, nc2, numerical_rank, participation_ratio,
                                 rankme, spike_count, stable_rank)

    if st.n < 2:
        raise ValueError(f"layer {name!r}: {st.n} sample(s) captured; the metrics need at least 2")
    m = st.cross_moments(name)
    out = {"n": st.n, "p": st.dims[name]}
    if name in st.reused:
        out["reused_calls"] = st.reused[name]
    sv = _try(lambda: _singular_values(st, name))
    if isinstance(sv, dict):
        out["rankme"] = out["rankme_sigma2"] = out["numerical_rank"] = sv
    else:
        D = np.diag(sv)
        out["rankme"] = _try(lambda: rankme(D, "sigma"))
        out["rankme_sigma2"] = _try(lambda: rankme(D, "sigma2"))
        tol = max(st.n, st.dims[name]) * st.eps[name]
        out["numerical_rank"] = _try(lambda: numerical_rank(D, eps=min(tol, 0.5)))
    out["effective_rank"] = _try(lambda: effective_rank(m))
    out["stable_rank"] = _try(lambda: stable_rank(m))
    out["participation_ratio"] = _try(lambda: participation_ratio(m))
    a = _try(lambda: alpha_req(m))
    out["alpha_req"] = a if "error" in a else {"alpha": a["alpha"], "stderr": a["stderr"],
                                                "fit_range": list(a["fit_range"])}
    s = _try(lambda: spike_count(m, level=spikes_level))
    out["spikes"] = s if "error" in s else {"n_spikes": s["n_spikes"], "edge": s["edge"],
                                            "threshold": s["threshold"], "noise_var": s["noise_var"]}
    if st.n_classes is not None:
        out.update(class_metrics(st, name, nc1, nc2))
    return out


def class_metrics(st: GeometryState, name: str, nc1, nc2) -> dict:
    from theory.collapse import cosine_similarity, vci

    cs = _try(lambda: st.class_stats(name))
    if isinstance(cs, dict):
        return {k: cs for k in ("nc1", "vci", "cosine_distance", "nc2", "cdnv")}
    out = {"nc1": _try(lambda: nc1(cs, weighting="sample")), "vci": _try(lambda: vci(cs)),
           "cosine_distance": _try(lambda: cosine_similarity(cs))}

    def _nc2():
        cnt, M, _ = st.class_variances(name)
        return nc2(M, np.arange(len(cnt)), weighting="class")
    out["nc2"] = _try(_nc2)
    out["cdnv"] = _try(lambda: cdnv_from_stats(st, name))
    return out


def cdnv_from_stats(st: GeometryState, name: str) -> float:
    """Mean CDNV over class pairs, (Var_i + Var_j)/(2‖μ_i − μ_j‖²) (Galanti et al. 2022, Def 1), streamed."""
    cnt, M, var = st.class_variances(name)
    iu = np.triu_indices(len(cnt), 1)
    D = M[iu[0]] - M[iu[1]]
    dist2 = np.einsum("ij,ij->i", D, D)
    if np.any(dist2 == 0):
        k = int(np.flatnonzero(dist2 == 0)[0])
        raise ValueError(f"cdnv: classes {int(iu[0][k])} and {int(iu[1][k])} have the same mean: CDNV is infinite")
    return float(np.mean((var[iu[0]] + var[iu[1]]) / (2.0 * dist2)))


def all_metrics(st: GeometryState, spikes_level: float = 0.99) -> dict:
    """{layer: layer_metrics(...)} in capture order."""
    return {name: layer_metrics(st, name, spikes_level) for name in st.dims}
