"""Linear CKA between layers of one pass, and between two models on the same inputs (aligned by sample id).

Both come from the streamed cross-moments of :class:`~sims.geometry.stats.GeometryState` (no n×n Gram matrix):
:func:`cka_matrix` reads every captured pair through :meth:`theory.geometry.CrossMoments.cka` (Kornblith et al.
2019 Eq 2; ``debiased=True``: Song et al. 2012's unbiased HSIC, Nguyen et al. 2021). :func:`compare_models`
runs two models in the same pass — on one batch stream, or on two streams whose batches carry the same sample
ids in the same order (a mismatch is a ValueError) — and returns the block of CKA values between their layers.
"""
from __future__ import annotations

import numpy as np

from sims.geometry.capture import capture_models
from sims.geometry.stats import GeometryState


def cka_matrix(st: GeometryState, names=None, debiased: bool = False) -> dict:
    """Linear CKA between every two of ``names`` (default: all captured layers): {"layers", "matrix" (L×L
    lists), "debiased", "errors"}. An undefined entry (e.g. debiased CKA with too few samples, a constant layer)
    is None with its reason in ``errors`` — never NaN."""
    names = list(st.dims if names is None else names)
    return cka_block(st, names, names, debiased)


def cka_block(st: GeometryState, rows, cols, debiased: bool = False) -> dict:
    """CKA of every layer in ``rows`` with every layer in ``cols`` (see :func:`cka_matrix`)."""
    if not isinstance(debiased, (bool, np.bool_)):
        raise ValueError(f"debiased: must be True or False, got {debiased!r}")
    from sims.threads import single_threaded

    with single_threaded(torch_threads=None, blas_threads=1):  # small p×q products: no spinning BLAS pool
        return _cka_block(st, list(rows), list(cols), bool(debiased))


def _cka_block(st: GeometryState, rows: list, cols: list, debiased: bool) -> dict:
    M = [[None] * len(cols) for _ in rows]
    errors, done = {}, {}
    for i, a in enumerate(rows):
        for j, b in enumerate(cols):
            key = (a, b) if (a, b) in done or (b, a) not in done else (b, a)
            if key in done:
                M[i][j] = done[key]
                continue
            try:
                v = 1.0 if a == b else float(st.cross_moments(a, b).cka(debiased=bool(debiased)))
            except ValueError as exc:
                v = None
                errors[f"{a}|{b}"] = str(exc).splitlines()[0]
            M[i][j] = done[(a, b)] = v
    return {"rows": rows, "cols": cols, "layers": rows if rows == cols else rows + cols, "matrix": M,
            "debiased": bool(debiased), "errors": errors}


def compare_models(model_a, model_b, batches=None, layers_a=None, layers_b=None, *, streams=None,
                   debiased: bool = False, names=("A", "B"), **kw) -> dict:
    """CKA between the layers of two models on the same samples, in one pass.

    ``batches`` feeds both models; or ``streams=(batches_a, batches_b)``, each batch (x, y, ids), aligned by id.
    ``layers_b`` defaults to ``layers_a``. Returns {"block": cka_block(A layers × B layers), "state"}; the state
    also holds the within-model pairs. Other keywords go to :func:`~sims.geometry.capture.capture_models`.
    """
    ka, kb = names
    if ka == kb:
        raise ValueError(f"names: the two models need different names, got {names!r}")
    layers_b = layers_a if layers_b is None else layers_b
    if streams is not None:
        if batches is not None:
            raise ValueError("give either batches (one stream for both models) or streams=(a, b), not both")
        if len(streams) != 2:
            raise ValueError(f"streams: expected two batch streams (a, b), got {len(streams)}")
        streams = {ka: streams[0], kb: streams[1]}
    elif batches is None:
        raise ValueError("batches: required (or streams=(batches_a, batches_b))")
    st = capture_models({ka: model_a, kb: model_b}, batches, {ka: layers_a, kb: layers_b}, streams=streams, **kw)
    ra = [n for n in st.dims if n.startswith(f"{ka}/")]
    rb = [n for n in st.dims if n.startswith(f"{kb}/")]
    return {"block": cka_block(st, ra, rb, debiased), "state": st}
