"""The named experiments that ``theorylab sweep`` runs: one function per experiment, (params, seed) → dict.

Each experiment declares its parameters (type, range, default: :mod:`verify.sweep.schema`; an unknown or
ill-typed parameter is a ValueError before anything runs), its result fields, a version string (part of
every point's key: bump it when the function computes something else), and the summary plot's default axes.
The implementations are imported lazily inside the functions, so this module imports with numpy alone and a
sweep's worker pays only for the experiment it runs.

* ``massive_floors`` (ND Sec 2.2, A15/A31–A33): logits f = W h, h ∈ R^p, n categories; the error floors
  err_i(θ*(0)) and relative floors R(Cov, i) from :mod:`theory.dependency`. With Gaussian W and isotropic
  h the relative floor of each category is Beta((p−n+1)/2, (n−1)/2) distributed (the squared distance of a
  Gaussian row of W from the span of the others over its squared norm), mean (p−n+1)/p for n ≤ p and
  exactly 0 for n > p (massive categories: every logit is a linear combination of the others).
* ``lyapunov`` (RD Thm 5, Eq 10): Monte Carlo Lyapunov spectrum of products of L random n×n layer
  Jacobians (:func:`sims.random_matrix.lyapunov_spectrum`) against the ψ-law
  (:func:`theory.rank.lyapunov_law`).
* ``multiview`` (FG Sec 4, App B): one training run of the two-layer ReLU learner on hierarchical
  multi-view data (:func:`sims.multiview.experiment.run_experiment`); its parameters are that function's
  config keys.
* ``toy``: a deterministic few-millisecond computation for tests (``fail=true`` raises, ``crash=true`` kills
  its worker process, ``work`` adds CPU-bound iterations so a test can interrupt a sweep mid-run).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from verify.sweep.schema import REPLICATE, Experiment, Param


def _call_params(params: dict) -> dict:
    return {k: v for k, v in params.items() if k != REPLICATE}


# ---------------------------------------------------------------------------------------------------- toy
def _toy(params: dict, seed: int) -> dict:
    """y = x·mean(z) + ‖z‖²/n for z ~ N(0, I_n) from the point's seed; ``work`` tanh iterations of a fixed
    64×64 map (CPU time without sleeping); ``fail`` raises (to test failure records); ``crash`` exits the
    worker process abruptly with ``os._exit(3)``, ``signal`` > 0 sends the worker that signal (9: SIGKILL, as
    an OOM kill; 11: SIGSEGV, as a segfault), to test a dying worker."""
    x, n, work = params["x"], params["n"], params["work"]
    if params["fail"]:
        raise ValueError(f"toy: planted failure at x={x}")
    if params["crash"] or params["signal"]:  # a worker that dies: only ever in a child process
        import multiprocessing
        import os

        if multiprocessing.parent_process() is None:
            raise ValueError("toy: crash/signal only in a worker process (scheduler 'local' or dask)")
        if params["signal"]:
            os.kill(os.getpid(), params["signal"])
        os._exit(3)
    rng = np.random.default_rng(seed)
    z = rng.standard_normal(n)
    A = np.random.default_rng(12345).standard_normal((64, 64)) / 8.0
    v = np.ones(64)
    for _ in range(work):
        v = np.tanh(A @ v + 0.1)
    return {"y": x * float(z.mean()) + float(z @ z) / n, "z0": float(z[0]), "v_norm": float(np.linalg.norm(v)),
            "z": z[: min(n, 4)]}


# --------------------------------------------------------------------------------------- massive floors
def _massive_floors(params: dict, seed: int) -> dict:
    """ND floors of logits f = W h (ND Sec 2.2): W ∈ R^{n×p} with N(0, 1/p) entries, h ~ N(0, diag(s)),
    s_k ∝ k^(−decay) (mean 1), optional logit noise of variance ``noise`` and, with ``samples`` > 0, the
    empirical uncentred covariance of that many samples instead of the population one.

    Returns floor statistics over the n categories: relative floors R(Cov, i) = err_i(θ*(0))/Cov_ii
    (ND A31–A32), absolute floors (A15/A33), the fraction of zero floors (f_i a linear combination of the
    other logits) and, where it applies (decay = 0, noise = 0, population Cov), the theory value
    E[R] = max(p − n + 1, 0)/p (Beta((p−n+1)/2, (n−1)/2) law of each R for Gaussian W).
    """
    from theory.dependency import error_floor, relative_floor

    n, p, samples, decay, noise = (params[k] for k in ("n", "p", "samples", "decay", "noise"))
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((n, p)) / math.sqrt(p)
    s = np.arange(1, p + 1, dtype=float) ** (-decay)
    s *= p / s.sum()
    if samples == 0:
        cov = (W * s) @ W.T + noise * np.eye(n)
    else:
        H = rng.standard_normal((samples, p)) * np.sqrt(s)
        F = H @ W.T
        if noise > 0:
            F = F + math.sqrt(noise) * rng.standard_normal(F.shape)
        cov = F.T @ F / samples
    floors = error_floor(cov)
    diag = np.diag(cov)
    rel = relative_floor(cov)
    w = np.linalg.eigvalsh(cov)
    rank = int((w > n * np.finfo(float).eps * w[-1]).sum())
    zero = rel <= 1e-10
    theory = max(p - n + 1, 0) / p if (decay == 0 and noise == 0 and samples == 0) else None
    out = {
        "rank": rank,
        "mean_relative_floor": float(rel.mean()),
        "median_relative_floor": float(np.median(rel)),
        "min_relative_floor": float(rel.min()),
        "max_relative_floor": float(rel.max()),
        "sem_relative_floor": float(rel.std(ddof=1) / math.sqrt(n)),
        "mean_floor": float(floors.mean()),
        "mean_cov_diag": float(diag.mean()),
        "frac_zero_floor": float(zero.mean()),
        "theory_mean_relative_floor": theory,
    }
    if theory is not None:
        out["relative_floor_error"] = float(rel.mean() - theory)
    return out


# --------------------------------------------------------------------------------------------- lyapunov
def _lyapunov(params: dict, seed: int) -> dict:
    """RD Thm 5 / Eq 10: the Lyapunov spectrum λ_k = lim (1/L) log σ_k of a product of L random n×n
    matrices, Monte Carlo (``trials`` products, Benettin QR) against the ψ-law λ_k = ½(log 2 + ψ((n−k+1)/2))
    (:func:`theory.rank.lyapunov_law`, N(0, 1) entries). ``sort=False`` (default) keeps the QR order, which
    estimates λ_k without the order-statistics bias of sorting each trial. Reported: the errors of the
    exponents and of the gaps λ_k − λ_1 (what Eq 10 states: log of (σ_k/σ_1)^{1/L}), and the largest
    |error| in units of the law's standard error sd_k/√(L·trials) (:func:`theory.rank.lyapunov_law_sd`).
    """
    from sims.random_matrix import lyapunov_spectrum
    from theory import rank

    n, L, trials, sort = params["n"], params["L"], params["trials"], params["sort"]
    spec = np.asarray(lyapunov_spectrum(n, L, dist=params["dist"], trials=trials, seed=seed, sort=sort),
                      dtype=float)
    if spec.ndim == 1:
        spec = spec[None, :]
    if spec.shape != (trials, n):
        raise ValueError(f"lyapunov: lyapunov_spectrum returned shape {spec.shape}, expected ({trials}, {n})")
    law = np.asarray(rank.lyapunov_law(n), dtype=float).ravel()
    if law.shape != (n,):
        raise ValueError(f"lyapunov: lyapunov_law({n}) returned {law.shape[0]} values, expected {n}")
    mean = spec.mean(axis=0)
    spread = spec.std(axis=0, ddof=1) / math.sqrt(trials) if trials > 1 else np.full(n, np.nan)
    err = mean - law
    gap_err = (mean - mean[0]) - (law - law[0])
    out = {
        "max_abs_error": float(np.abs(err).max()),
        "rms_error": float(np.sqrt((err**2).mean())),
        "max_abs_gap_error": float(np.abs(gap_err).max()),
        "lambda_1": float(mean[0]),
        "lambda_1_law": float(law[0]),
        "lambda_n": float(mean[-1]),
        "lambda_n_law": float(law[-1]),
        "mean_spectrum": mean,
        "sem_spectrum": spread,
        "law": law,
    }
    se = np.asarray(rank.lyapunov_law_sd(n), dtype=float) / math.sqrt(L * trials)
    out["max_z"] = float(np.max(np.abs(err) / se))
    return out


# -------------------------------------------------------------------------------------------- multiview
def _multiview_names(point: dict | None = None) -> list:
    """The config keys (``DEFAULTS``) and, for a point whose ``model`` is a plugin's, that model's own keys."""
    from sims.multiview import models
    from sims.multiview.experiment import DEFAULTS

    names = list(DEFAULTS)
    spec = (point or {}).get("model")
    if isinstance(spec, str):
        try:
            names += [k for k in models.resolve(spec).params if k not in DEFAULTS]
        except ValueError:
            pass  # validate_config says what is wrong with the model
    return names


def _multiview_validate(given: dict) -> dict:
    """The complete config :func:`sims.multiview.experiment.validate_config` makes of ``given`` (types,
    ranges, consistency of d, k, P, batch)."""
    from sims.multiview.experiment import validate_config

    return validate_config(given)


def _multiview(params: dict, seed: int) -> dict:
    """FG: one run of :func:`sims.multiview.experiment.run_experiment`. The config gets ``seed`` = the
    point's derived seed unless the point sets ``seed`` itself (a caller that owns its seeds, e.g. a
    ``runner`` handed to ``granularity_sweep``). CPU only (a sweep point's result must not depend on where it
    runs)."""
    import torch

    from sims.multiview.experiment import cached_experiment

    config = _call_params(params)
    config.setdefault("seed", seed)
    from sims.threads import single_threaded

    with single_threaded(blas_threads=None):  # reductions in one fixed order: the same floats on any CPU
        # through the sims cache: the fg figures (which cannot import verify) read the same runs from it
        return cached_experiment(config, device="cpu", progress=False)


# ------------------------------------------------------------------------------- estimates (sizes alone)
def _toy_estimate(params: dict) -> dict:
    """z (n floats), its square, the 64×64 map."""
    return {"bytes": 8.0 * (3 * params["n"] + 2 * 64 * 64)}


def _floors_estimate(params: dict) -> dict:
    """W (n×p), h's scales, H and F (samples × p, samples × n, twice with noise), Cov, its equilibrated copy,
    eigenvalues and the floors' factorisations (about six n×n float64 matrices)."""
    n, p, m = params["n"], params["p"], params["samples"]
    return {"bytes": 8.0 * (n * p + p + m * (p + 2 * n) + 6 * n * n),
            "flops": 2.0 * m * p * n + 2.0 * m * n * n + 10.0 * n ** 3}


def _lyapunov_estimate(params: dict) -> dict:
    """Per trial at least five n×n float64 matrices (the product, its QR, the next layers; the kernel's own check
    counts its block of layers on top)."""
    n, L, trials = params["n"], params["L"], params["trials"]
    return {"bytes": 8.0 * trials * 5 * n * n, "flops": 4.0 * trials * L * n ** 3}


def _multiview_estimate(params: dict) -> dict:
    """:func:`sims.multiview.sizing.estimate_cost` of the point's config: peak memory and GEMM flops."""
    from sims.multiview.sizing import estimate_cost

    cost = estimate_cost(_call_params(params))
    return {"bytes": cost["peak_bytes"], "flops": cost["flops"]}


# the distributions of sims.random_matrix.DISTS (a test keeps the two lists equal)
LAYER_DISTS = ("gaussian", "rademacher", "uniform", "heavy_tailed", "cauchy", "sparse", "relu", "orthogonal_diag",
               "orthogonal")
FLOOR_RESULTS = ("rank", "mean_relative_floor", "median_relative_floor", "min_relative_floor",
                 "max_relative_floor", "sem_relative_floor", "mean_floor", "mean_cov_diag", "frac_zero_floor",
                 "theory_mean_relative_floor")
LYAPUNOV_RESULTS = ("max_abs_error", "rms_error", "max_abs_gap_error", "lambda_1", "lambda_1_law", "lambda_n",
                    "lambda_n_law", "max_z", "mean_spectrum", "sem_spectrum", "law")

EXPERIMENTS: dict[str, Experiment] = {
    e.name: e
    for e in (
        Experiment(
            "toy", _toy, "deterministic few-millisecond computation for tests",
            params={"x": Param("float", 1.0), "n": Param("int", 8, lo=1), "work": Param("int", 0, lo=0),
                    "fail": Param("bool", False), "crash": Param("bool", False),
                    "signal": Param("int", 0, lo=0, hi=64)},
            required=("y", "z0", "v_norm", "z"), results=("y", "z0", "v_norm"),
            plot={"x": "x", "y": "y"}, estimate=_toy_estimate,
        ),
        Experiment(
            "massive_floors", _massive_floors,
            "ND error floors of logits W h (n categories, h ∈ R^p): relative floor vs n/p",
            params={"n": Param("int", 64, lo=2), "p": Param("int", 128, lo=1), "decay": Param("float", 0.0),
                    "noise": Param("float", 0.0, lo=0), "samples": Param("int", 0, lo=0)},
            required=FLOOR_RESULTS, results=FLOOR_RESULTS + ("relative_floor_error",),
            plot={"x": "n", "y": "mean_relative_floor", "hue": "p"}, estimate=_floors_estimate,
            summary=("mean_relative_floor", "theory_mean_relative_floor", "relative_floor_error", "frac_zero_floor",
                     "rank"),
        ),
        Experiment(
            "lyapunov", _lyapunov,
            "RD Thm 5: Monte Carlo Lyapunov spectrum of L random n×n layers vs the ψ-law",
            params={"n": Param("int", 16, lo=1), "L": Param("int", 50, lo=1),
                    "dist": Param("str", "gaussian", choices=LAYER_DISTS), "trials": Param("int", 8, lo=1),
                    "sort": Param("bool", False)},
            required=LYAPUNOV_RESULTS, results=LYAPUNOV_RESULTS[:8],
            plot={"x": "L", "y": "max_abs_gap_error", "hue": "n"}, estimate=_lyapunov_estimate,
            summary=("max_abs_error", "max_abs_gap_error", "max_z", "lambda_1", "lambda_1_law"),
        ),
        Experiment(
            "multiview", _multiview,
            "FG two-layer ReLU training on hierarchical multi-view data (one run_experiment call per point)",
            validate=_multiview_validate, names=_multiview_names, seed_param="seed",
            required=("config", "summary"),
            results=("summary.*", "coarse.final.*", "fine.final.*", "c_b.*", "seconds"),
            plot={"x": "k", "y": "summary.hard_gap", "hue": "d"}, estimate=_multiview_estimate,
            summary=("summary.coarse_easy_err", "summary.coarse_hard_err", "summary.fine_easy_err",
                     "summary.fine_hard_err", "summary.hard_gap"),
        ),
    )
}


BUILTIN = frozenset(EXPERIMENTS)
_REGISTERED_BY: dict[str, str] = {}  # plugin experiment -> the module that registered it


def register_experiment(exp: Experiment) -> Experiment:
    """Add a plugin's experiment (``theorylab sweep --plugins MODULE``; docs/sweep.md). A built-in name, or a
    name already taken by another function, is a ValueError naming the plugin (the module that calls this)."""
    if not isinstance(exp, Experiment):
        raise ValueError(f"register_experiment takes a verify.sweep.schema.Experiment, got {type(exp).__name__}")
    import sys

    where = sys._getframe(1).f_globals.get("__name__") or getattr(exp.run, "__module__", "?")  # the plugin
    if exp.name in BUILTIN:
        raise ValueError(f"plugin {where}: {exp.name!r} is a built-in sweep experiment and cannot be replaced; "
                         f"register yours under another name")
    old = EXPERIMENTS.get(exp.name)
    if old is not None and (old.run.__module__, old.run.__qualname__) != (where, exp.run.__qualname__):
        raise ValueError(f"plugin {where}: sweep experiment {exp.name!r} is already registered by "
                         f"{old.run.__module__}; choose another name")
    EXPERIMENTS[exp.name] = exp
    _REGISTERED_BY[exp.name] = where
    return exp


def unregister_experiment(name: str) -> None:
    """Forget a plugin's experiment (a built-in name is a ValueError)."""
    if name in BUILTIN:
        raise ValueError(f"{name!r} is a built-in sweep experiment")
    EXPERIMENTS.pop(name, None)
    _REGISTERED_BY.pop(name, None)


def plugin_code(exp: Experiment, params: dict) -> tuple[list, list[str]]:
    """The plugin code a point runs: (functions and modules whose code its result depends on, the modules a
    worker must import to run it); ([], []) for built-in code only. A plugin experiment: its function and the
    module that registered it; a ``multiview`` point whose ``model`` is a plugin's: the model's factory and the
    module that registered it (or the module of ``"pkg.mod:Factory"``)."""
    import sys

    if exp.name not in BUILTIN:
        code, module = exp.run, _REGISTERED_BY.get(exp.name, getattr(exp.run, "__module__", ""))
    elif exp.name == "multiview" and isinstance(params.get("model"), str):
        from sims.multiview import models

        entry = models.resolve(params["model"])
        if entry.builtin:
            return [], []
        code, module = entry.factory, entry.module
    else:
        return [], []
    mods = [m for m in {module, getattr(code, "__module__", "")} if m and m != "__main__"]
    return [code] + [sys.modules[m] for m in mods if m in sys.modules], mods


def get(name: str) -> Experiment:
    """The experiment called ``name``; ValueError listing the known ones otherwise."""
    if not isinstance(name, str) or name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; known: {', '.join(sorted(EXPERIMENTS))} (a plugin's "
                         f"experiment needs --plugins MODULE)")
    return EXPERIMENTS[name]


def run(name: str, params: dict, seed: int) -> Any:
    """Run one point (called in the worker) with its parameters checked (:meth:`Experiment.canonical`)."""
    exp = get(name)
    return exp.run(_call_params(exp.canonical(params)), seed)
