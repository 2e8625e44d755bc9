"""The arithmetic of linear HSIC and CKA on their sufficient terms (module doc of :mod:`theory.geometry.cka`):
the terms from centred data or from centred cross-moments, HSIC₀/HSIC₁ from the terms, CKA from the HSICs.
Shared by :mod:`~theory.geometry.cka`, :class:`~theory.geometry.moments.CrossMoments`, the kernel and RDM metrics."""
from __future__ import annotations

import numpy as np


def _check_debiased(debiased) -> bool:
    if not isinstance(debiased, (bool, np.bool_)):
        raise ValueError(f"debiased: must be True or False, got {debiased!r}")
    return bool(debiased)


def _min_rows(debiased: bool) -> tuple[int, str]:
    if debiased:
        return 4, " for the unbiased HSIC estimator (its normaliser n(n − 3)(n − 1)(n − 2) vanishes below 4)"
    return 2, " for a centred HSIC"


def _terms_from_data(Xs: np.ndarray, Ys: np.ndarray, gram: bool | None = None) -> dict:
    """‖X_cᵀY_c‖², ‖X_cᵀX_c‖², ‖Y_cᵀY_c‖², traces and Σ‖x_c‖^a‖y_c‖^b of centred, scaled data: through the
    (p, q) feature-space products, or through the n×n Gram matrices when n is the smaller dimension."""
    n, p = Xs.shape
    q = Ys.shape[1]
    if gram is None:
        gram = n < max(p, q)
    if gram:
        K, L = Xs @ Xs.T, Ys @ Ys.T
        fxy, fxx, fyy = float(np.sum(K * L)), float(np.sum(K * K)), float(np.sum(L * L))
        kd, ld = np.diag(K).copy(), np.diag(L).copy()
    else:
        Cxy, Cxx, Cyy = Xs.T @ Ys, Xs.T @ Xs, Ys.T @ Ys
        fxy, fxx, fyy = float(np.sum(Cxy * Cxy)), float(np.sum(Cxx * Cxx)), float(np.sum(Cyy * Cyy))
        kd, ld = np.einsum("ij,ij->i", Xs, Xs), np.einsum("ij,ij->i", Ys, Ys)
    return {"n": n, "fxy": fxy, "fxx": fxx, "fyy": fyy, "tx": float(kd.sum()), "ty": float(ld.sum()),
            "wxy": float(kd @ ld), "wxx": float(kd @ kd), "wyy": float(ld @ ld)}


def _terms_from_moments(c: dict) -> dict:
    return {"n": c["n"], "fxy": float(np.sum(c["cxy"] ** 2)), "fxx": float(np.sum(c["cxx"] ** 2)),
            "fyy": float(np.sum(c["cyy"] ** 2)), "tx": float(np.trace(c["cxx"])), "ty": float(np.trace(c["cyy"])),
            "wxy": c["wxy"], "wxx": c["wxx"], "wyy": c["wyy"]}


def _hsic_parts(t: dict, debiased: bool) -> tuple[float, float, float]:
    """(HSIC(X, Y), HSIC(X, X), HSIC(Y, Y)) in the scaled units (module doc)."""
    n = t["n"]
    if not debiased:
        d = float(n - 1) ** 2
        return t["fxy"] / d, t["fxx"] / d, t["fyy"] / d
    a, b, d = 1.0 / ((n - 1.0) * (n - 2.0)), n / (n - 2.0), n * (n - 3.0)

    def h(f, ta, tb, w):
        return (f + ta * tb * a - b * w) / d
    return h(t["fxy"], t["tx"], t["ty"], t["wxy"]), h(t["fxx"], t["tx"], t["tx"], t["wxx"]), \
        h(t["fyy"], t["ty"], t["ty"], t["wyy"])


def _cka(t: dict, debiased: bool) -> float:
    hxy, hxx, hyy = _hsic_parts(t, debiased)
    for h, name in ((hxx, "X"), (hyy, "Y")):
        if not h > 0:
            if not debiased or (t["fxx"] if name == "X" else t["fyy"]) == 0:
                raise ValueError(f"{name}: every feature is constant over the samples (HSIC({name}, {name}) = 0); "
                                 "CKA is undefined")
            raise ValueError(f"{name}: the unbiased HSIC({name}, {name}) is {h:.3g} <= 0 with n = {t['n']} samples "
                             "(too few samples, or one sample dominates); debiased CKA is undefined here: use more "
                             "samples or debiased=False")
    return float(hxy / np.sqrt(hxx) / np.sqrt(hyy))
