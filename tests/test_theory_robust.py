"""Every public entry point of theory/ under arbitrary input: a finite answer or an error naming the argument.

Hypothesis drives each public callable with one argument at a time replaced by an arbitrary value of its kind —
arrays of any shape (empty, wrong rank) and dtype (int, bool, complex, object, float32), with NaN/Inf and
scales 1e±150 / 1e±300, non-numbers, negative/NaN tolerances, non-integer and huge sizes — the others kept
valid, and asserts that the outcome is either

* a finite answer (no NaN anywhere in it; +inf only where the function documents it), or
* a ValueError / TypeError / MemoryError whose message names the argument that was replaced,

never NaN, a raw library error (LinAlgError, IndexError, ZeroDivisionError, numba's TypingError, ...), a
hang (each call has a time limit) or a crash. ``test_every_public_callable_is_covered`` makes sure a new
public function is either in :data:`TABLE` or in :data:`EXEMPT` with a reason.
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib
import inspect
import pkgutil
import signal

import numpy as np
import pytest
import sympy as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import theory
import theory.collapse as vc
import theory.covlasso as cl
import theory.dependency as dep
import theory.geometry as geo
import theory.multiview as mv
import theory.neural_dependency as nd
import theory.rank as R
import theory.stats as TS
import theory.symbolic.nd as snd
import theory.symbolic.vc as svc
import theory.validate as V

SETTINGS = settings(max_examples=12, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))
TIME_LIMIT_S = 180  # a call that takes longer is a hang (generous: a cold numba cache compiles covlasso_all first)

# ---------------------------------------------------------------------------------------------- values

SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, np.nan, np.inf, -np.inf, 1e150, -1e150, 1e-150, 1e300, 1e-300, 5e-324,
           np.finfo(float).max]


@st.composite
def any_array(draw, max_dims=3, max_side=4):
    """An arbitrary array-like: any rank and size (0 included), dtype, scale and special values."""
    ndim = draw(st.integers(0, max_dims))
    shape = tuple(draw(st.integers(0, max_side)) for _ in range(ndim))
    size = int(np.prod(shape)) if shape else 1
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    a = rng.standard_normal(size) * 10.0 ** draw(st.sampled_from([0, 0, -150, 150, -300, 300]))
    n_special = draw(st.integers(0, min(size, 2)))
    for _ in range(n_special):
        a[draw(st.integers(0, max(size - 1, 0)))] = draw(st.sampled_from(SPECIAL))
    a = a.reshape(shape)
    kind = draw(st.sampled_from(["float64", "float64", "float32", "int64", "bool", "complex", "object", "list",
                                 "uint8"]))
    with np.errstate(all="ignore"):
        if kind == "complex":
            return a + 1j
        if kind == "list":
            return a.tolist()
        if kind == "object":
            return a.astype(object)
        if kind in ("int64", "uint8", "bool"):
            return np.nan_to_num(a, posinf=7, neginf=-7).clip(-1e6, 1e6).astype(kind)
        return a.astype(kind)


JUNK = st.sampled_from([None, "abc", "1.0", b"x", {"a": 1}, object(), [[1, 2], [3]], sp.Symbol("x"), 1 + 2j,
                        [np.nan], ()])


def real_values():
    return st.one_of(st.sampled_from(SPECIAL + [2.0, 0.1, 1e-8, -1e-8, 3, True, False, np.float32(0.25),
                                                np.int64(3), np.array(0.1), np.float64(np.nan), 1 + 0j]),
                     st.floats(allow_nan=True, allow_infinity=True), JUNK)


def int_values():
    return st.one_of(st.sampled_from([-1, 0, 1, 2, 3, 5, 10**12, 2**62, 2.5, 3.0, True, np.int64(3), np.uint8(2),
                                      np.int32(-2), float("nan"), np.inf]), st.integers(-10, 40), JUNK)


def small_int_values():
    """Sizes of the symbolic functions: bad values and the cheap valid ones (sympy's cost grows steeply)."""
    return st.one_of(st.sampled_from([-1, 0, 1, 2, 10**6, 2.5, True, np.int64(2), float("nan")]), JUNK)


@st.composite
def covariances(draw):
    """A valid covariance of 2–5 categories at scale 1e±150 (possibly singular), or an arbitrary array."""
    if draw(st.booleans()):
        return draw(any_array(max_dims=3, max_side=5))
    n = draw(st.integers(2, 5))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    a = rng.standard_normal((draw(st.integers(1, 2 * n)), n))
    c = a.T @ a / a.shape[0]
    d = 10.0 ** rng.integers(-3, 4, n) if draw(st.booleans()) else np.ones(n)
    return c * np.outer(d, d) * 10.0 ** draw(st.sampled_from([0, -150, 150, -100, 100]))


@st.composite
def feature_matrices(draw):
    if draw(st.booleans()):
        return draw(any_array(max_dims=3, max_side=6))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    return rng.standard_normal((12, draw(st.integers(1, 4)))) * 10.0 ** draw(st.sampled_from([0, -150, 150]))


def label_values():
    return st.one_of(st.sampled_from([LABELS, LABELS.astype(float), LABELS + 0.5, -LABELS, LABELS[:5], LABELS * 7,
                                      LABELS.astype(bool), np.zeros(12, int), np.r_[LABELS[:-1], 99]]),
                     any_array(max_dims=2, max_side=12), JUNK)


def string_values(*good):
    return st.one_of(st.sampled_from(list(good) + ["", "bogus", "SVD"]), JUNK, real_values())


def bool_values():
    return st.one_of(st.sampled_from([True, False, np.bool_(True), 0, 1, 2, "yes", None, np.nan]))


KIND = {"array": any_array, "cov": covariances, "features": feature_matrices, "real": real_values,
        "int": int_values, "small_int": small_int_values, "labels": label_values, "bool": bool_values}

# ---------------------------------------------------------------------------------------------- the table

rng0 = np.random.default_rng(0)
C3 = np.array([[2.0, 0.5, 0.1], [0.5, 1.0, 0.2], [0.1, 0.2, 1.5]])
W = rng0.standard_normal((5, 4))
F4 = rng0.standard_normal((40, 4))
G4 = rng0.standard_normal((40, 4))
X12 = rng0.standard_normal((12, 3))
LABELS = np.arange(12) % 3
Y40 = np.argmax(F4, axis=1)


@dataclasses.dataclass
class Entry:
    fn: object
    args: dict  # name -> (good value, kind or strategy, names the error may use for it)
    inf_ok: bool = False  # the function documents +inf for some valid inputs


def slot(good, kind, *names):
    return (good, kind, names)


def _path_at(cov, i, lams):
    return cl.covlasso_path(cov, i).at(lams)


def _stats(n_features, n_classes):
    return vc.ClassStats(n_features, n_classes)


def _stats_update(H, y):
    return vc.ClassStats(3, 3).update(H, y).means


# a one-column logit matrix leaves no other category: the error names the category count (and i)
ONE_COLUMN = ("at least 2 categories", "out of range for n = 1")
COLLAPSE = ("features", "stats_or_features", "stats", "x")
TABLE: dict[str, Entry] = {
    # theory.validate
    "validate.as_float_array": Entry(V.as_float_array, {"x": slot(W, "array", "x"), "name": slot("x", None),
                                                        "ndim": slot(2, "int", "ndim", "x")}),
    "validate.check_finite": Entry(V.check_finite, {"a": slot(W, "array", "a"), "name": slot("a", None)}),
    "validate.as_covariance": Entry(V.as_covariance, {"cov": slot(C3, "cov", "cov"),
                                                      "sym_rtol": slot(1e-8, "real", "sym_rtol", "cov: not symmetric"),
                                                      "psd_rtol": slot(1e-10, "real", "psd_rtol", "cov: not PSD")}),
    "validate.check_index": Entry(V.check_index, {"i": slot(1, "int", "i"), "n": slot(3, "int", "n", "i")}),
    "validate.check_positive": Entry(V.check_positive, {"x": slot(1.0, "real", "x"), "name": slot("x", None),
                                                        "allow_zero": slot(False, "bool", "allow_zero")}),
    "validate.check_real": Entry(V.check_real, {"x": slot(1.5, "real", "x"), "name": slot("x", None)}),
    "validate.check_int": Entry(V.check_int, {"x": slot(3, "int", "x"), "name": slot("x", None),
                                              "lo": slot(1, None), "hi": slot(5, None)}),
    "validate.check_tolerance": Entry(V.check_tolerance, {"x": slot(1e-3, "real", "x"), "name": slot("x", None)}),
    # theory.rank
    "rank.singular_values": Entry(R.singular_values, {"W": slot(W, "array", "W")}),
    "rank.float32_eps_rule": Entry(R.float32_eps_rule, {"n_values": slot(4, "int", "n_values")}),
    "rank.rank_from_singular_values": Entry(R.rank_from_singular_values, {
        "s": slot([3.0, 1.0, 1e-9], "array", "singular values", "s"), "eps": slot(1e-3, "real", "eps")}),
    "rank.numerical_rank": Entry(R.numerical_rank, {"W": slot(W, "array", "W"), "eps": slot(1e-3, "real", "eps")}),
    "rank.pca_dim": Entry(R.pca_dim, {"features": slot(F4, "features", "features"), "eps": slot(None, "real", "eps"),
                                      "method": slot("auto", st.deferred(lambda: string_values("svd", "cov")),
                                                     "method")}),
    "rank.weyl_delta_max": Entry(R.weyl_delta_max, {"W": slot(W, "array", "W"), "eps": slot(1e-3, "real", "eps"),
                                                    "D": slot(W.T[:, :5].T.copy(), "array", "D")}, inf_ok=True),
    "rank.eps_max_low_rank": Entry(R.eps_max_low_rank, {"W": slot(W[:, :2] @ W[:2], "array", "W"),
                                                        "rank_tol": slot(None, "real", "rank_tol")}),
    "rank.lyapunov_law": Entry(R.lyapunov_law, {"n": slot(5, "int", "n")}),
    "rank.lyapunov_law_sd": Entry(R.lyapunov_law_sd, {"n": slot(5, "int", "n")}, inf_ok=True),
    "rank.ratio_law": Entry(R.ratio_law, {"n": slot(5, "int", "n")}),
    "rank.gradient_explosion_rate": Entry(R.gradient_explosion_rate, {"n": slot(5, "int", "n")}),
    "rank.psi_law_rank": Entry(R.psi_law_rank, {"n": slot(5, "int", "n"), "L": slot([1, 10], "array", "L"),
                                                "eps": slot(1e-3, "real", "eps")}),
    "rank.mp_edges": Entry(R.mp_edges, {"gamma": slot(0.5, "real", "gamma")}),
    "rank.mp_density": Entry(R.mp_density, {"x": slot([0.5, 1.0], "array", "x"), "gamma": slot(0.5, "real", "gamma")}),
    "rank.mp_cdf": Entry(R.mp_cdf, {"x": slot(1.0, "real", "x"), "gamma": slot(0.5, "real", "gamma")}),
    "rank.spiked_top_singular": Entry(R.spiked_top_singular, {"theta": slot(2.0, "real", "theta"),
                                                              "gamma": slot(0.5, "real", "gamma")}),
    "rank.mp_numerical_rank": Entry(R.mp_numerical_rank, {
        "N": slot(100, "int", "N"), "d": slot(50, "int", "d"), "eps": slot(1e-3, "real", "eps"),
        "signal_rank": slot(1, "int", "signal_rank"), "theta": slot(2.0, "real", "theta")}),
    # theory.dependency
    "dependency.second_moment": Entry(dep.second_moment, {"F": slot(F4, "features", "logits")}),
    "dependency.inverse_diagonal": Entry(dep.inverse_diagonal, {"cov": slot(C3, "cov", "cov")}),
    "dependency.relative_floor": Entry(dep.relative_floor, {"cov": slot(C3, "cov", "cov"),
                                                            "null_tol": slot(None, "real", "null_tol")}),
    "dependency.error_floor": Entry(dep.error_floor, {"cov": slot(C3, "cov", "cov"),
                                                      "null_tol": slot(None, "real", "null_tol")}),
    "dependency.error_floor_eigen": Entry(dep.error_floor_eigen, {"cov": slot(C3, "cov", "cov")}),
    "dependency.relative_floor_eigen": Entry(dep.relative_floor_eigen, {"cov": slot(C3, "cov", "cov")}),
    "dependency.theta_floor": Entry(dep.theta_floor, {"cov": slot(C3, "cov", "cov"), "i": slot(0, "int", "i"),
                                                      "null_tol": slot(None, "real", "null_tol")}),
    "dependency.prediction_error": Entry(dep.prediction_error, {"cov": slot(C3, "cov", "cov", "theta"),
                                                                "theta": slot([-1.0, 0.2, 0.1], "array", "theta")}),
    "dependency.lambda_max": Entry(dep.lambda_max, {"cov": slot(C3, "cov", "cov")}),
    "dependency.det_ratio": Entry(dep.det_ratio, {"cov": slot(C3, "cov", "cov"), "i": slot(0, "int", "i"),
                                                  "method": slot("det", st.deferred(lambda: string_values("slogdet")),
                                                                 "method"),
                                                  "raw": slot(False, "bool", "raw")}, inf_ok=True),
    # theory.covlasso
    "covlasso.covlasso": Entry(cl.covlasso, {"cov": slot(C3, "cov", "cov"), "i": slot(0, "int", "i"),
                                             "lam": slot(0.1, "real", "lam")}),
    "covlasso.covlasso_rho": Entry(lambda cov, i, rho: cl.covlasso(cov, i, rho=rho), {
        "cov": slot(C3, "cov", "cov"), "i": slot(0, "int", "i"), "rho": slot(0.1, "real", "rho")}),
    "covlasso.covlasso_all": Entry(cl.covlasso_all, {"cov": slot(C3, "cov", "cov"), "lam": slot(0.1, "real", "lam")}),
    "covlasso.covlasso_path": Entry(cl.covlasso_path, {"cov": slot(C3, "cov", "cov"), "i": slot(0, "int", "i"),
                                                       "lams": slot([0.1, 0.01], "array", "lams")}),
    "covlasso.CovLassoPath.at": Entry(_path_at, {"cov": slot(C3, None), "i": slot(0, None),
                                                 "lams": slot([0.1, 0.3], "array", "lams")}),
    "covlasso.covlasso_cd": Entry(cl.covlasso_cd, {"cov": slot(C3, "cov", "cov"), "i": slot(0, "int", "i"),
                                                   "lam": slot(0.1, "real", "lam"), "tol": slot(1e-10, "real", "tol"),
                                                   "max_sweeps": slot(1000, "int", "max_sweeps")}),
    "covlasso.resolve_lambda": Entry(cl.resolve_lambda, {"cov": slot(C3, "cov", "cov"), "i": slot(0, "int", "i"),
                                                         "lam": slot(None, None),
                                                         "rho": slot(0.1, "real", "rho")}),
    "covlasso.kkt_violation": Entry(cl.kkt_violation, {"cov": slot(C3, "cov", "cov", "theta"),
                                                       "i": slot(0, "int", "i"), "lam": slot(0.1, "real", "lam"),
                                                       "theta": slot([-1.0, 0.0, 0.0], "array", "theta")}, inf_ok=True),
    "covlasso.kkt_violation_all": Entry(cl.kkt_violation_all, {"cov": slot(C3, "cov", "cov", "theta"),
                                                               "Theta": slot(-np.eye(3), "array", "theta"),
                                                               "lam": slot(0.1, "real", "lam")}, inf_ok=True),
    # theory.neural_dependency
    "neural_dependency.mixed_cov": Entry(nd.mixed_cov, {"cov_f": slot(C3, "cov", "cov_f", "cross_fg"),
                                                        "cross_fg": slot([0.1, 0.2, 0.3], "array", "cross_fg"),
                                                        "g_sq": slot(1.0, "real", "g_sq"), "i": slot(0, "int", "i")}),
    "neural_dependency.mixed_logits": Entry(nd.mixed_logits, {"F": slot(F4, "features", "logits"),
                                                              "G": slot(G4, "features", "g"), "i": slot(1, "int", "i")}),
    "neural_dependency.replaced_logit_metrics": Entry(nd.replaced_logit_metrics, {
        "F": slot(F4, "features", "logits", "labels", "theta", *ONE_COLUMN), "labels": slot(Y40, "labels", "labels"),
        "i": slot(1, "int", "i"), "theta": slot([0.1, -1.0, 0.2, 0.3], "array", "theta"),
        "evaluated": slot(None, "features", "evaluated")}, inf_ok=True),
    "neural_dependency.replaced_logit_metrics_many": Entry(nd.replaced_logit_metrics_many, {
        "F": slot(F4, "features", "logits", "labels", "theta", "evaluated", *ONE_COLUMN),
        "labels": slot(Y40, "labels", "labels"), "thetas": slot([(1, [0.1, -1.0, 0.2, 0.3])], None),
        "offset": slot(None, "array", "offset"), "evaluated": slot(None, "features", "evaluated")}, inf_ok=True),
    "neural_dependency.between_all": Entry(nd.between_all, {
        "cov_f": slot(C3, "cov", "cov_f", "cross_fg"), "cross_fg": slot(0.5 * C3, "array", "cross_fg"),
        "g_sq": slot([1.0, 1.0, 1.0], "array", "g_sq"), "rho": slot(0.2, "real", "rho")}),
    "neural_dependency.dependencies": Entry(nd.dependencies, {
        "cov_or_logits": slot(F4, "features", "cov_or_logits", "logits", "cov", *ONE_COLUMN), "i": slot(1, "int", "i"),
        "lam": slot(None, None), "rho": slot(0.2, "real", "rho"),
        "kind": slot("auto", st.deferred(lambda: string_values("cov", "logits")), "kind", "cov:")}),
    # theory.multiview
    "multiview.gaussian_tail": Entry(mv.gaussian_tail, {"x": slot([0.0, 1.0], "array", "x")}),
    "multiview.paper_c_b": Entry(mv.paper_c_b, {"c0": slot(0.05, "real", "c0"), "fine": slot(False, "bool", "fine")}),
    "multiview.paper_width": Entry(mv.paper_width, {"d": slot(100, "int", "d"), "c0": slot(0.05, "real", "c0")}),
    "multiview.bias_threshold": Entry(mv.bias_threshold, {"c_b": slot(1.2, "real", "c_b"), "d": slot(100, "int", "d")}),
    "multiview.c_b_for_lucky": Entry(mv.c_b_for_lucky, {"m": slot(800, "int", "m"), "lucky": slot(8.0, "real", "lucky"),
                                                        "d": slot(100, "int", "d")}),
    "multiview.lucky_set_sizes": Entry(mv.lucky_set_sizes, {"m": slot(800, "int", "m"), "d": slot(100, "int", "d"),
                                                            "c_b": slot(1.2, "real", "c_b")}),
    "multiview.lucky_set_sizes_planted": Entry(mv.lucky_set_sizes_planted, {
        "m": slot(800, "int", "m"), "d": slot(100, "int", "d"), "c_b": slot(1.2, "real", "c_b")}),
    "multiview.patch_count_pmf": Entry(mv.patch_count_pmf, {"P": slot(16, "int", "P"), "s": slot(3.0, "real", "s")}),
    "multiview.expected_counts": Entry(mv.expected_counts, {"P": slot(16, "int", "P"), "s": slot(3.0, "real", "s")}),
    "multiview.linear_error": Entry(mv.linear_error, {
        "P": slot(16, "int", "P"), "s": slot(3.0, "real", "s"), "k": slot(2, "int", "k"),
        "sigma_zeta": slot(0.1, "real", "sigma_zeta"), "iota": slot(0.1, "real", "iota"),
        "planted": slot(False, "bool", "planted")}),
    "multiview.paper_regime": Entry(mv.paper_regime, {"d": slot(100, "int", "d"), "s": slot(3.0, "real", "s")}),
    "multiview.regime_table": Entry(mv.regime_table, {
        "d": slot(100, "int", "d"), "P": slot(16, "int", "P"), "s": slot(3.0, "real", "s"), "k": slot(2, "int", "k"),
        "m_coarse": slot(800, "int", "m_coarse", "m"), "m_fine": slot(100, "int", "m_fine", "m"),
        "lucky": slot(8.0, "real", "lucky"), "noise_norm": slot(1.0, "real", "noise_norm"),
        "sigma0": slot(0.01, "real", "sigma0"), "eta": slot(0.1, "real", "eta"), "c0": slot(0.05, "real", "c0")}),
    # theory.collapse (its __all__)
    "collapse.ClassStats": Entry(_stats, {"n_features": slot(3, "int", "n_features"),
                                          "n_classes": slot(3, "int", "n_classes")}),
    "collapse.ClassStats.update": Entry(_stats_update, {"H": slot(X12, "features", "features", "h", "H"),
                                                        "y": slot(LABELS, "labels", "labels", "y")}),
    "collapse.as_stats": Entry(vc.as_stats, {"x": slot(X12, "features", *COLLAPSE), "labels": slot(LABELS, "labels",
                                                                                                  "labels")}),
    "collapse.mlog": Entry(vc.mlog, {"downstream": slot([0.5, 0.7], "array", "downstream"),
                                     "pretrain": slot(0.6, "array", "pretrain"),
                                     "percent": slot(False, "bool", "percent")}),
    "collapse.probe_loss_balanced": Entry(vc.probe_loss_balanced, {"trace_tb": slot(2.0, "real", "trace_tb"),
                                                                   "K": slot(3, "int", "K")}),
    "collapse.probe_loss_lstsq": Entry(vc.probe_loss_lstsq, {"features": slot(X12, "features", "features"),
                                                             "labels": slot(LABELS, "labels", "labels"),
                                                             "n_classes": slot(3, "int", "n_classes")}),
    # theory.symbolic
    "symbolic.nd.generic_symmetric": Entry(snd.generic_symmetric, {"n": slot(2, "small_int", "n")}),
    "symbolic.nd.floor_residuals": Entry(snd.floor_residuals, {"n": slot(2, "small_int", "n"),
                                                               "i": slot(0, "small_int", "i")}),
    "symbolic.nd.relative_floor_residual": Entry(snd.relative_floor_residual, {"n": slot(2, "small_int", "n"),
                                                                               "i": slot(0, "small_int", "i")}),
    "symbolic.vc.generic_symmetric": Entry(svc.generic_symmetric, {"p": slot(2, "small_int", "p"),
                                                                   "name": slot("s", None)}),
    "symbolic.vc.decomposition_residual": Entry(svc.decomposition_residual, {
        "K": slot(2, "small_int", "K"), "N": slot(2, "small_int", "N"), "p": slot(1, "small_int", "p")}),
    "symbolic.vc.trace_identity_residual": Entry(svc.trace_identity_residual, {"p": slot(2, "small_int", "p")}),
    "symbolic.vc.fuzziness_counterexample": Entry(svc.fuzziness_counterexample, {
        "U": slot(None, st.one_of(any_array(max_dims=3, max_side=3), JUNK), "U")}),
    "symbolic.vc.obs42_identity": Entry(svc.obs42_identity, {
        "r": slot(1, "small_int", "r"), "p": slot(2, "small_int", "p"),
        "coupling": slot("none", st.deferred(lambda: string_values("upper", "lower")), "coupling")}),
    "symbolic.vc.obs42_identity_holds": Entry(svc.obs42_identity_holds, {
        "r": slot(1, "small_int", "r"), "p": slot(2, "small_int", "p")}),
}
for _name in ("trace_ratio", "vci", "fuzziness", "squared_distance", "cosine_distances", "cosine_similarity",
              "class_separation", "vb_split", "vb_basis", "spectra", "metrics", "probe_loss", "weighted_trace"):
    _args = {"stats_or_features" if _name not in ("probe_loss", "weighted_trace") else "stats":
             slot(X12, "features", *COLLAPSE), "labels": slot(LABELS, "labels", "labels")}
    if _name in ("vci", "fuzziness", "vb_split", "vb_basis", "metrics"):
        _args["rank"] = slot("paper", st.one_of(int_values(), st.deferred(lambda: string_values("paper", "full"))),
                             "rank")
    if _name in ("trace_ratio", "vci", "fuzziness", "vb_split", "probe_loss", "weighted_trace"):
        _args["rtol"] = slot(None, "real", "rtol")
    TABLE[f"collapse.{_name}"] = Entry(getattr(vc, _name), _args)

# theory.geometry (its __all__; the functions of its submodules are driven through the package's names)
GX, GY = rng0.standard_normal((12, 3)), rng0.standard_normal((12, 2))
GM = geo.CrossMoments(3, 2).update(GX, GY)
GW, GB = rng0.standard_normal((3, 3)), rng0.standard_normal(3)
MOMENTS = st.one_of(JUNK, any_array(max_dims=2, max_side=3))


def _cross_moments_update(X, Y):
    return geo.CrossMoments(3, 2).update(X, Y).n


TABLE.update({
    "stats.mean_se": Entry(TS.mean_se, {"d": slot(np.linspace(-1.0, 2.0, 12), "array", "d"),
                                        "groups": slot(LABELS, "labels", "groups")}, inf_ok=True),
    "geometry.linear_cka": Entry(geo.linear_cka, {"X": slot(GX, "features", "X"), "Y": slot(GY, "features", "Y", "X"),
                                                  "debiased": slot(True, "bool", "debiased")}),
    "geometry.linear_hsic": Entry(geo.linear_hsic, {"X": slot(GX, "features", "X", "hsic"),
                                                    "Y": slot(GY, "features", "Y", "X", "hsic"),
                                                    "debiased": slot(True, "bool", "debiased")}),
    "geometry.cka_from_moments": Entry(geo.cka_from_moments, {"moments": slot(GM, MOMENTS, "moments"),
                                                              "debiased": slot(True, "bool", "debiased")}),
    "geometry.hsic_from_moments": Entry(geo.hsic_from_moments, {"moments": slot(GM, MOMENTS, "moments"),
                                                                "debiased": slot(True, "bool", "debiased")}),
    "geometry.CrossMoments": Entry(geo.CrossMoments, {"n_x_features": slot(3, "int", "n_x_features"),
                                                      "n_y_features": slot(2, "int", "n_y_features")}),
    "geometry.CrossMoments.update": Entry(_cross_moments_update, {"X": slot(GX, "features", "X"),
                                                                  "Y": slot(GY, "features", "Y")}),
    "geometry.rankme": Entry(geo.rankme, {"Z": slot(GX, "features", "Z"),
                                          "variant": slot("sigma", st.deferred(lambda: string_values("sigma2")),
                                                          "variant"),
                                          "center": slot(False, "bool", "center", "Z"), "eps": slot(0.0, "real", "eps")}),
    "geometry.effective_rank": Entry(geo.effective_rank, {"Z": slot(GX, "features", "Z")}),
    "geometry.stable_rank": Entry(geo.stable_rank, {"Z": slot(GX, "features", "Z")}),
    "geometry.participation_ratio": Entry(geo.participation_ratio, {"Z": slot(GX, "features", "Z")}),
    "geometry.numerical_rank": Entry(geo.numerical_rank, {"Z": slot(GX, "features", "Z"),
                                                          "eps": slot(None, "real", "eps"),
                                                          "center": slot(False, "bool", "center", "Z")}),
    "geometry.alpha_req": Entry(geo.alpha_req, {"Z": slot(GX, "features", "Z", "fit_range"),
                                                "fit_range": slot(None, st.one_of(JUNK, st.tuples(
                                                    st.deferred(int_values), st.deferred(int_values))), "fit_range")}),
    "geometry.singular_values": Entry(geo.singular_values, {"Z": slot(GX, "features", "Z"),
                                                            "center": slot(False, "bool", "center", "Z")}),
    "geometry.covariance_eigenvalues": Entry(geo.covariance_eigenvalues, {"Z": slot(GX, "features", "Z")}),
    "geometry.spectrum.dtype_eps": Entry(geo.spectrum.dtype_eps, {"Z": slot(GX, "array", "Z")}),
    "geometry.mp_edge": Entry(geo.mp_edge, {"n": slot(100, "int", "n"), "p": slot(20, "int", "p"),
                                            "noise_var": slot(2.0, "real", "noise_var")}),
    "geometry.tw_threshold": Entry(geo.tw_threshold, {"n": slot(100, "int", "n"), "p": slot(20, "int", "p"),
                                                      "noise_var": slot(2.0, "real", "noise_var"),
                                                      "level": slot(0.99, "real", "level")}),
    "geometry.mp.mp_median": Entry(geo.mp.mp_median, {"beta": slot(0.3, "real", "beta")}),
    "geometry.spike_count": Entry(geo.spike_count, {"Z": slot(GX, "features", "Z"),
                                                    "noise_var": slot(None, "real", "noise_var"),
                                                    "level": slot(0.95, "real", "level")}),
    "geometry.nc1": Entry(geo.nc1, {"H": slot(GX, "features", "H", "y"), "y": slot(LABELS, "labels", "y"),
                                    "weighting": slot("class", st.deferred(lambda: string_values("sample")),
                                                      "weighting"),
                                    "rank": slot(None, "int", "rank"), "n_classes": slot(3, "int", "n_classes", "y")}),
    "geometry.nc2": Entry(geo.nc2, {"H": slot(GX, "features", "H", "y"), "y": slot(LABELS, "labels", "y"),
                                    "weighting": slot("sample", st.deferred(lambda: string_values("class")),
                                                      "weighting"),
                                    "n_classes": slot(3, "int", "n_classes", "y")}),
    "geometry.nc3": Entry(geo.nc3, {"H": slot(GX, "features", "H", "y", "nc3"), "y": slot(LABELS, "labels", "y"),
                                    "W": slot(GW, "features", "W"), "b": slot(GB, "array", "b"),
                                    "weighting": slot("class", st.deferred(lambda: string_values("sample")),
                                                      "weighting"),
                                    "n_classes": slot(3, "int", "n_classes", "y")}),
    "geometry.nc4": Entry(geo.nc4, {"H": slot(GX, "features", "H", "y", "W"), "y": slot(LABELS, "labels", "y"),
                                    "W": slot(GW, "features", "W"), "b": slot(GB, "array", "b"),
                                    "n_classes": slot(3, "int", "n_classes", "y")}),
    "geometry.cdnv": Entry(geo.cdnv, {"H": slot(GX, "features", "H", "y", "cdnv"), "y": slot(LABELS, "labels", "y"),
                                      "n_classes": slot(3, "int", "n_classes", "y")}),
})

# theory.geometry: kernel CKA, random features, CCA, RSA, LiDAR
GZ = rng0.standard_normal((6, 3, 4))
GV = geo.rdm(GX)


def _rff(n_x_features, n_y_features, sigma_x, sigma_y, n_components, seed):
    return repr(geo.RBFFeatureCKA(n_x_features, n_y_features, sigma_x, sigma_y, n_components, seed))


def _rff_update(X, Y):
    return geo.RBFFeatureCKA(3, 2, 1.0, 1.0, n_components=8).update(X, Y).cka()


def _kernel_args(estimators=("song", "lange")):
    return {"X": slot(GX, "features", "X"), "Y": slot(GY, "features", "Y", "X"),
            "kernel": slot("rbf", st.deferred(lambda: string_values("linear")), "kernel"),
            "sigma": slot("median", st.one_of(st.deferred(real_values), st.deferred(
                lambda: string_values("kornblith", "ckatorch"))), "sigma", "X", "Y"),
            "scale": slot(1.0, "real", "scale", "X", "Y"),
            "estimator": slot("gretton", st.deferred(lambda: string_values(*estimators)), "estimator", "X")}


CCA_XY = {"X": slot(GX, "features", "X", "Y"), "Y": slot(GY, "features", "Y", "X")}
TABLE.update({
    "geometry.kernel_cka": Entry(geo.kernel_cka, _kernel_args()),
    "geometry.kernel_hsic": Entry(geo.kernel_hsic, _kernel_args()),
    "geometry.median_bandwidth": Entry(geo.median_bandwidth, {
        "X": slot(GX, "features", "X"),
        "convention": slot("median", st.deferred(lambda: string_values("kornblith", "ckatorch")), "convention")}),
    "geometry.RBFFeatureCKA": Entry(_rff, {"n_x_features": slot(3, "int", "n_x_features"),
                                           "n_y_features": slot(2, "int", "n_y_features"),
                                           "sigma_x": slot(1.0, "real", "sigma_x"),
                                           "sigma_y": slot(1.0, "real", "sigma_y"),
                                           "n_components": slot(8, "int", "n_components"),
                                           "seed": slot(0, "int", "seed")}),
    "geometry.RBFFeatureCKA.update": Entry(_rff_update, {"X": slot(GX, "features", "X"),
                                                         "Y": slot(GY, "features", "Y", "X")}),
    "geometry.rbf_cka_rff": Entry(geo.rbf_cka_rff, {**CCA_XY, "sigma_x": slot(1.0, "real", "sigma_x", "X"),
                                                   "sigma_y": slot(1.0, "real", "sigma_y", "Y"),
                                                   "n_components": slot(8, "int", "n_components", "X", "Y"),
                                                   "seed": slot(0, "int", "seed"),
                                                   "debiased": slot(False, "bool", "debiased", "X", "Y")}),
    "geometry.canonical_correlations": Entry(geo.canonical_correlations, {**CCA_XY,
                                                                          "tol": slot(None, "real", "tol")}),
    "geometry.mean_cca": Entry(geo.mean_cca, {**CCA_XY, "summary": slot(
        "pillai", st.deferred(lambda: string_values("yanai")), "summary")}),
    "geometry.svcca": Entry(geo.svcca, {**CCA_XY, "keep": slot(0.99, "real", "keep")}),
    "geometry.pwcca": Entry(geo.pwcca, {**CCA_XY, "side": slot("x", st.deferred(lambda: string_values("y", "both")),
                                                               "side")}),
    "geometry.rdm": Entry(geo.rdm, {"X": slot(GX, "features", "X"), "metric": slot(
        "sqeuclidean", st.deferred(lambda: string_values("euclidean", "correlation", "cosine")), "metric")}),
    "geometry.compare_rdms": Entry(geo.compare_rdms, {
        "a": slot(GV, "array", "a"), "b": slot(geo.rdm(GX[:, ::-1] ** 2), "array", "b"),
        "method": slot("cosine", st.deferred(lambda: string_values("corr", "cosine_cov", "corr_cov", "spearman")),
                       "method")}),
    "geometry.rsa": Entry(geo.rsa, {**CCA_XY, "metric": slot(
        "sqeuclidean", st.deferred(lambda: string_values("correlation", "cosine")), "metric"),
        "method": slot("corr_cov", st.deferred(lambda: string_values("cosine", "spearman")), "method")}),
    "geometry.rsa_from_moments": Entry(geo.rsa_from_moments, {"moments": slot(GM, MOMENTS, "moments"), "method": slot(
        "cosine", st.deferred(lambda: string_values("corr", "corr_cov")), "method")}),
    "geometry.lidar": Entry(geo.lidar, {"Z": slot(GZ, "array", "Z", "n_augs"), "n_augs": slot(None, "int", "n_augs"),
                                        "delta": slot(1e-3, "real", "delta"), "eps": slot(None, "real", "eps"),
                                        "convention": slot("lda", st.deferred(lambda: string_values("reptrix")),
                                                           "convention")}),
})
TABLE["geometry.alpha_req"].args["fit"] = slot("ols", st.deferred(lambda: string_values("weighted")), "fit")

#: public callables deliberately not driven here, each with the reason.
EXEMPT = {
    "theory._cachedir.cache_root": "no arguments: reads the environment (tested in tests/test_cache.py)",
    "theory._cachedir.set_numba_cache_dir": "no arguments: sets numba's cache folder at import (tests/test_cachedir.py)",
    "theory.covlasso.CovLassoPath": "a result record built by covlasso_path; its .at() is driven as CovLassoPath.at",
    "theory.neural_dependency.Dependencies": "a result record returned by dependencies()",
    "theory.symbolic.nd.centred": "takes a sympy Matrix built by generic_symmetric (driven); exact algebra",
    "theory.symbolic.nd.vanishes": "decides an exact sympy expression; inputs are built by this package",
    "theory.symbolic.vc.vanishes": "decides an exact sympy expression; inputs are built by this package",
    "theory.symbolic.vc.penrose_residuals": "sympy matrices built by obs42_identity (driven); checks square/shape",
    "theory.symbolic.vc.rank_additive_equality": "only a bool argument; exact algebra (tests/test_checks_vc.py)",
    **{f"theory.collapse.linalg.{n}": "internal to theory.collapse (not in its __all__), reached through its metrics"
       for n in ("check_rtol", "rank_arg", "sum_pow2", "trace_pinv", "Frame", "invariant_frame", "original_frame",
                 "Spectra", "noise_floor")},
    **{f"theory.collapse.stats.{n}": "internal to theory.collapse (not in its __all__), reached through as_stats"
       for n in ("check_labels", "check_real_numeric", "pow2_exponent", "unscale")},
    "theory.collapse.probe.loss_from": "internal to theory.collapse: takes a Spectra built by probe_loss (driven)",
    **{f"theory.geometry._inputs.{n}": "internal to theory.geometry (a private module), reached through its metrics"
       for n in ("features", "feature_matrix", "same_rows", "top_exponent", "centre_scale", "centre_scale_mean",
                 "scaled_difference")},
    **{f"theory.geometry.moments.{n}": "CrossMoments' internal arithmetic on validated arrays; pinned against direct "
       "sums in tests/test_geometry_moments.py" for n in ("batch_sums", "shift")},
    **{f"theory.geometry.moments.{n}": "CrossMoments of whole arrays read in row blocks: reached through "
       "CrossMoments.from_data and the metrics" for n in ("stream_moments", "stream_moments_one")},
    **{f"theory.geometry._blocks.{n}": "internal to theory.geometry (a private module: block streaming), reached "
       "through its metrics" for n in ("lazy_features", "rows_per_block", "float_block", "centred_gram")},
}

# public names of a module whose entry is under another name in TABLE
ALIASES = {"theory.collapse.ClassStats": "collapse.ClassStats", "theory.geometry.ClassStats": "collapse.ClassStats",
           "theory.geometry.kernel_approx.RBFFeatureCKA": "geometry.RBFFeatureCKA",
           **{f"theory.geometry.{n}": f"collapse.{n}"  # theory.collapse's metrics, re-exported by theory.geometry
              for n in ("vci", "fuzziness", "squared_distance", "cosine_similarity", "probe_loss")}}


def public_callables() -> list[str]:
    """'module.name' for every public function or class of theory/: a module's __all__ if it has one, else every
    non-underscore function or class defined in it."""
    out = []
    for info in pkgutil.walk_packages(theory.__path__, "theory."):
        m = importlib.import_module(info.name)
        names = getattr(m, "__all__", None)
        for n, o in vars(m).items():
            if n.startswith("_") or not (inspect.isfunction(o) or inspect.isclass(o)):
                continue
            if names is not None:
                if n in names:
                    out.append(f"{info.name}.{n}")
            elif o.__module__ == info.name:
                out.append(f"{info.name}.{n}")
    return sorted(set(out))


def _table_key(qualname: str) -> str:
    return ALIASES.get(qualname, qualname.removeprefix("theory."))


def test_every_public_callable_is_covered():
    covered = set(TABLE)
    collapse_all = set(vc.__all__)
    missing = []
    for q in public_callables():
        key = _table_key(q)
        mod, _, name = q.rpartition(".")
        if key in covered or q in EXEMPT:
            continue
        if mod.startswith("theory.collapse.") and name in collapse_all and f"collapse.{name}" in covered:
            continue  # defined in a submodule, driven through the package's public name
        if mod.startswith("theory.geometry.") and name in geo.__all__ and f"geometry.{name}" in covered:
            continue  # the same for theory.geometry
        if name == "EPS":
            continue
        missing.append(q)
    assert not missing, f"public callables neither in TABLE nor in EXEMPT (with a reason): {missing}"
    assert all(reason.strip() for reason in EXEMPT.values())


# ---------------------------------------------------------------------------------------------- the property

@contextlib.contextmanager
def time_limit(seconds):
    def boom(*_):
        raise TimeoutError(f"hang: no answer in {seconds} s")
    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _leaves(x):
    if isinstance(x, dict):
        for v in x.values():
            yield from _leaves(v)
    elif isinstance(x, (list, tuple)):
        for v in x:
            yield from _leaves(v)
    elif dataclasses.is_dataclass(x) and not isinstance(x, type):
        for f in dataclasses.fields(x):
            yield from _leaves(getattr(x, f.name))
    else:
        yield x


def assert_finite(out, inf_ok: bool, where: str):
    for v in _leaves(out):
        if isinstance(v, (sp.Basic, sp.MatrixBase, str, type(None), vc.ClassStats)):
            continue
        a = np.asarray(v)
        if a.dtype.kind in "fc":
            assert not np.isnan(a).any(), f"{where}: NaN in the answer {out!r}"[:400]
            if not inf_ok:
                assert np.isfinite(a).all(), f"{where}: non-finite answer {out!r}"[:400]


def _strategy(kind):
    if kind is None:
        return None
    return KIND[kind]() if isinstance(kind, str) else kind


def check_call(key: str, name: str, value, entry: Entry):
    kwargs = {k: (value if k == name else good) for k, (good, _, _) in entry.args.items()}
    names = entry.args[name][2]
    where = f"{key}({name}={value!r})"[:300]
    try:
        with np.errstate(all="ignore"), time_limit(TIME_LIMIT_S):
            out = entry.fn(**kwargs)
    except (ValueError, TypeError, MemoryError) as exc:
        msg = str(exc).lower()
        assert type(exc).__module__ == "builtins" or isinstance(exc, sp.SympifyError), \
            f"{where}: raw library error {type(exc).__module__}.{type(exc).__name__}: {exc}"
        assert any(n.lower() in msg for n in names), \
            f"{where}: {type(exc).__name__} does not name {names}: {exc}"
        return
    assert_finite(out, entry.inf_ok, where)


CASES = [(key, name) for key, e in TABLE.items() for name, (_, kind, _) in e.args.items() if kind is not None]


@pytest.mark.parametrize("key", sorted(TABLE))
def test_good_call_is_finite(key):
    e = TABLE[key]
    with np.errstate(all="ignore"), time_limit(TIME_LIMIT_S):
        out = e.fn(**{k: good for k, (good, _, _) in e.args.items()})
    assert_finite(out, e.inf_ok, key)


@pytest.mark.parametrize("key, name", CASES, ids=[f"{k}-{n}" for k, n in CASES])
def test_arbitrary_argument(key, name):
    entry = TABLE[key]
    strategy = _strategy(entry.args[name][1])

    @SETTINGS
    @given(value=strategy)
    def run(value):
        check_call(key, name, value, entry)

    run()
