"""FG experiments: one validated config → coarse and fine training on the same data model → plain numbers.

``run_experiment(config, device="cpu", progress=False)`` returns a JSON-serialisable dict; the config is a flat
dict (or TOML table) whose keys are those of :data:`DEFAULTS` (unknown key → ValueError). ``granularity_sweep``
loops over (k, d, seed) points; ``cached_experiment`` caches one experiment on disk keyed by its config.

The defaults are the *tuned* regime (α′ ∈ [0.25, 0.5], ‖ζ*‖ = 2.0; docs/fg.md); the paper-faithful regime that
the fg checks report as their headline, the horizons and the d-scaling sweep are in :mod:`sims.multiview.regimes`
(the paper's conditions beside our values: ``theory.multiview.regime_table``). Both share d = 100, P = 16, s = 3,
k = 8, m = 800 per superclass (coarse) and 100 per subclass (fine: the same total width), the bias threshold
τ = √(c_b log d) with m·Q(τ) = 8 lucky neurons per feature (c_b ≈ 1.17 coarse, 0.43 fine at d = 100: the paper's
pair m = Θ(d^{2+2c₀}), c_b = 4+2c₀ reduced to a width that trains here), noise norm 0.5, σ₀ = 0.01, η = 0.02
(η = Θ(σ₀)), batch 32, float32.
"""
from __future__ import annotations

import copy
import json
import math
import time

import torch

from sims.multiview import models
from sims.multiview.data import COUNT_LAWS
from sims.multiview.defaults import DEFAULTS  # also read as sims.multiview.experiment.DEFAULTS
from sims.multiview.train import train
from theory.multiview import c_b_for_lucky

_INT = {"d", "P", "k", "m_coarse", "m_fine", "steps", "batch", "eval_every", "n_test", "seed", "shared", "k2"}
_FLOAT = {"s", "iota", "iota_lower", "iota_upper", "noise_norm", "hard_noise_norm", "lucky", "sigma0", "eta", "flip"}


def validate_config(config: dict | None) -> dict:
    """A complete, checked copy of ``config`` (defaults filled in). Every problem is a ValueError saying which key."""
    if config is None:
        config = {}
    if not isinstance(config, dict):
        raise ValueError(f"config must be a dict (a TOML table), got {type(config).__name__}")
    entry = models.resolve(config.get("model", DEFAULTS["model"]))  # ValueError listing the known models
    own = {k: v for k, v in entry.params.items() if k not in DEFAULTS}  # a plugin model's own config keys
    unknown = sorted(set(config) - set(DEFAULTS) - set(own))
    if unknown:
        extra = f" and data model {entry.name!r}'s {sorted(own)}" if own else ""
        raise ValueError(f"unknown config key(s) {unknown}; allowed keys: {sorted(DEFAULTS)}{extra}")
    cfg = copy.deepcopy(DEFAULTS)
    cfg.update(copy.deepcopy(own))
    cfg.update(copy.deepcopy(config))
    for key, default in own.items():
        cfg[key] = _own_value(entry.name, key, default, cfg[key])
    for key in _INT:
        v = cfg[key]
        if isinstance(v, bool) or not isinstance(v, int):
            if isinstance(v, float) and v.is_integer():
                cfg[key] = int(v)
            else:
                raise ValueError(f"config key {key!r} must be an integer, got {v!r}")
    for key in _FLOAT:
        v = cfg[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"config key {key!r} must be a finite number, got {v!r}")
        cfg[key] = float(v)
    for key in ("c_b_coarse", "c_b_fine"):
        v = cfg[key]
        if v != "auto" and (isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0):
            raise ValueError(f"config key {key!r} must be 'auto' or a number > 0, got {v!r}")
    if cfg["counts"] not in COUNT_LAWS:
        raise ValueError(f"config key 'counts' must be one of {list(COUNT_LAWS)}, got {cfg['counts']!r}")
    if cfg["dictionary"] not in ("identity", "random"):
        raise ValueError(f"config key 'dictionary' must be 'identity' or 'random', got {cfg['dictionary']!r}")
    if cfg["dtype"] not in ("float32", "float64"):
        raise ValueError(f"config key 'dtype' must be 'float32' or 'float64', got {cfg['dtype']!r}")
    tr = cfg["trainings"]
    if isinstance(tr, str):
        tr = cfg["trainings"] = [tr]
    if not tr or any(t not in ("coarse", "fine") for t in tr) or len(set(tr)) != len(tr):
        raise ValueError(f"config key 'trainings' must be a non-empty list of distinct 'coarse'/'fine', got {tr!r}")
    positive = ("d", "P", "k", "m_coarse", "m_fine", "steps", "batch", "eval_every", "n_test", "k2", "s",
                "noise_norm", "hard_noise_norm", "sigma0", "eta", "lucky")
    for key in positive:
        if not cfg[key] > 0:
            raise ValueError(f"config key {key!r} must be > 0, got {cfg[key]}")
    if cfg["s"] > cfg["P"]:
        raise ValueError(f"impossible sizes: s = {cfg['s']} feature patches expected but only P = {cfg['P']} patches")
    if cfg["d"] < 3:
        raise ValueError(f"config key 'd' must be >= 3 (log d − 1/log⁵ d > 0), got {cfg['d']}")
    if not 0 <= cfg["iota"] < 1:
        raise ValueError(f"config key 'iota' must lie in [0, 1), got {cfg['iota']}")
    if not 0 <= cfg["iota_lower"] <= cfg["iota_upper"]:
        raise ValueError(f"need 0 <= iota_lower <= iota_upper, got {cfg['iota_lower']}, {cfg['iota_upper']}")
    if cfg["eval_every"] > cfg["steps"]:
        raise ValueError(f"eval_every = {cfg['eval_every']} > steps = {cfg['steps']}")
    for key in ("m_coarse", "m_fine"):
        if not cfg["lucky"] < cfg[key] / 2 and cfg["c_b_" + key[2:]] == "auto":
            raise ValueError(f"lucky = {cfg['lucky']} neurons per feature needs {key} > {2 * cfg['lucky']:g}")
    data = make_data_model(cfg)  # raises on too many features for d, bad shared / flip
    for key in ("batch", "n_test"):
        if cfg[key] % data.n_fine:
            raise ValueError(f"config key {key!r} = {cfg[key]} must be a multiple of the {data.n_fine} fine classes "
                             f"(exactly {key}/{data.n_fine} samples per subclass, FG B.1 item 9)")
    return cfg


def _own_value(model: str, key: str, default, v):
    """A plugin model's own config key, checked against the type of its default (int, float, bool, str)."""
    where = f"config key {key!r} (a parameter of data model {model!r})"
    if isinstance(default, bool) or isinstance(default, str):
        if type(v) is not type(default):
            raise ValueError(f"{where} must be a {type(default).__name__}, got {v!r}")
    elif isinstance(default, int):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not float(v).is_integer():
            raise ValueError(f"{where} must be an integer, got {v!r}")
        v = int(v)
    elif isinstance(default, float):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"{where} must be a finite number, got {v!r}")
        v = float(v)
    elif v is not None and (isinstance(v, (dict, list)) or not isinstance(v, (bool, int, float, str))):
        raise ValueError(f"{where} must be a number, a string or a bool, got {v!r}")
    return v


def make_data_model(cfg: dict):
    """The data model named by ``cfg['model']``: built, for a validated config, by
    :func:`sims.multiview.models.build` (``factory(d, P, s, k, **the config keys it takes)``)."""
    return models.build(cfg)


def resolved_c_b(cfg: dict) -> dict:
    """c_b for coarse and fine training: the configured number, or the 'auto' choice m·Q(√(c_b log d)) = lucky."""
    out = {}
    for lab in ("coarse", "fine"):
        v = cfg[f"c_b_{lab}"]
        out[lab] = float(v) if v != "auto" else c_b_for_lucky(cfg[f"m_{lab}"], cfg["lucky"], cfg["d"])
    return out


def run_experiment(config: dict, device="cpu", progress=False, data_model=None) -> dict:
    """Run coarse and/or fine training of FG Eq 14–18 on one data model; return plain numbers.

    ``data_model``: any object satisfying :class:`sims.multiview.data.DataModel` (the sandbox); by default the
    one named by ``config['model']``. A config whose estimated peak memory does not fit
    (:func:`sims.multiview.sizing.require_memory`) is refused before anything is allocated. ``progress``: True for a tqdm bar per training (shown on a terminal), or
    a callable called with 1 after every SGD step of every training (e.g. an outer bar's ``update``). Output: ``{"config", "c_b", "<training>": {"curves": {...lists},
    "final": {...}}, "summary": {coarse_easy_err, coarse_hard_err, fine_easy_err, fine_hard_err, hard_gap, ...},
    "seconds"}``.
    """
    cfg = validate_config(config)
    data = make_data_model(cfg) if data_model is None else data_model
    if data_model is not None:
        models.check_protocol(data_model)  # names each missing attribute / method
        for key in ("d", "P", "k"):  # the config sizes the learner and c_b, the data model draws the samples
            have = getattr(data_model, key, None)
            if have is not None and int(have) != cfg[key]:
                raise ValueError(f"config {key} = {cfg[key]} but the data model {type(data_model).__name__} has "
                                 f"{key} = {have}: set the config's {key!r} to the data model's")
        for key in ("batch", "n_test"):
            if cfg[key] % data.n_fine:
                raise ValueError(f"config key {key!r} = {cfg[key]} must be a multiple of the data model's "
                                 f"{data.n_fine} fine classes")
    from sims.multiview.sizing import require_memory

    require_memory(cfg, device)  # from the sizes alone, before any tensor: InsufficientMemory names the estimate
    dtype = getattr(torch, cfg["dtype"])
    c_b = resolved_c_b(cfg)
    t0 = time.perf_counter()
    out = {"config": cfg, "c_b": c_b, "device": str(device)}
    for i, lab in enumerate(cfg["trainings"]):
        g = torch.Generator(device=device).manual_seed(cfg["seed"] * 1000 + i + 17)
        out[lab] = train(data, labels=lab, m=cfg[f"m_{lab}"], c_b=c_b[lab], sigma0=cfg["sigma0"], eta=cfg["eta"],
                         steps=cfg["steps"], batch=cfg["batch"], eval_every=cfg["eval_every"],
                         n_test=cfg["n_test"], generator=g, device=device, dtype=dtype, progress=progress)
    summary = {}
    for lab in cfg["trainings"]:
        f = out[lab]["final"]
        for key in ("train_loss", "easy_err", "hard_err", "growth_ratio", "response_common_lucky",
                    "response_sub_lucky", "response_common_all", "response_sub_all", "margin_easy", "lucky_common",
                    "lucky_sub"):
            summary[f"{lab}_{key}"] = f[key]
    if "fine" in cfg["trainings"]:
        summary["fine_fine_easy_err"] = out["fine"]["final"]["fine_easy_err"]
        summary["fine_fine_hard_err"] = out["fine"]["final"]["fine_hard_err"]
    if len(cfg["trainings"]) == 2:
        summary["hard_gap"] = summary["coarse_hard_err"] - summary["fine_hard_err"]
    out["summary"] = summary
    out["seconds"] = time.perf_counter() - t0
    return _plain(out)


def _plain(x):
    """Plain JSON values (non-finite floats as strings 'inf'/'nan' are avoided: they stay floats for math)."""
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, bool) or x is None or isinstance(x, str):
        return x
    if isinstance(x, int):
        return int(x)
    return float(x)


def cached_experiment(config: dict, device="cpu", progress: bool = False) -> dict:
    """:func:`run_experiment` cached on disk (``sims.cache.cached``) keyed by the validated config and device."""
    from sims.cache import cached

    cfg = validate_config(config)
    params = {"version": 5, "config": cfg, "device": str(device)}
    entry = models.resolve(cfg["model"])  # a plugin model's code is part of the key: editing it reruns
    res = cached("fg_experiment", params,
                 lambda: {"json": json.dumps(run_experiment(cfg, device=device, progress=progress))},
                 depends=() if entry.builtin else (entry.factory,))
    return json.loads(res["json"])


from sims.multiview.regimes import QUICK_BASE, sweep_settings  # noqa: E402,F401  (the shared sweep's settings)


def sweep_points(base_config: dict, ks, ds, seeds) -> list[dict]:
    """The points of the granularity sweep: k ∈ ks at the base d, and d ∈ ds at the largest k; × seeds."""
    base = validate_config(base_config)
    if sorted(base["trainings"]) != ["coarse", "fine"]:
        raise ValueError(f"granularity_sweep compares coarse and fine training: trainings must be both, "
                         f"got {base['trainings']}")
    ks, ds, seeds = list(ks), list(ds), list(seeds)
    if not ks or not seeds:
        raise ValueError("granularity_sweep needs at least one k and one seed")
    pts, seen = [], set()
    grid = [(k, base["d"]) for k in ks] + [(max(ks), d) for d in ds]
    for seed in seeds:
        for k, d in grid:
            if (k, d, seed) in seen:
                continue
            seen.add((k, d, seed))
            pts.append(validate_config({**{k_: v for k_, v in base.items()}, "k": int(k), "d": int(d),
                                        "seed": int(seed)}))
    return pts


def granularity_sweep(base_config: dict, ks, ds, seeds, runner=None, device="cpu", cache: bool = True,
                      progress: bool = False, horizons=None) -> dict:
    """Hard-sample gap (coarse − fine hard error) vs k at the base d, and vs d at the largest k.

    ``runner(list_of_point_configs) -> list of result dicts`` (as returned by :func:`run_experiment`) routes the
    points elsewhere (the sweep runner); by default a plain loop (cached on disk when ``cache``). ``horizons``:
    evaluation steps at which each row also carries its numbers (``row["at"][t]``, see
    :func:`sims.multiview.regimes.at_horizon`).
    """
    from sims.multiview.regimes import at_horizon

    from tqdm import tqdm

    pts = sweep_points(base_config, ks, ds, seeds)
    if runner is None:
        run = cached_experiment if cache else run_experiment
        results = [run(p, device=device) for p in tqdm(pts, desc="granularity sweep", disable=None if progress
                                                      else True)]
    else:
        results = list(runner(pts))
        if len(results) != len(pts):
            raise ValueError(f"runner returned {len(results)} results for {len(pts)} points")
    rows = []
    for p, r in zip(pts, results):
        s = r["summary"]
        rows.append({"k": p["k"], "d": p["d"], "seed": p["seed"], "coarse_hard_err": s["coarse_hard_err"],
                     "fine_hard_err": s["fine_hard_err"], "coarse_easy_err": s["coarse_easy_err"],
                     "fine_easy_err": s["fine_easy_err"], "hard_gap": s["hard_gap"],
                     "coarse_growth_ratio": s["coarse_growth_ratio"], "fine_growth_ratio": s["fine_growth_ratio"],
                     "coarse_response_common_lucky": s["coarse_response_common_lucky"],
                     "coarse_response_sub_lucky": s["coarse_response_sub_lucky"],
                     "coarse_response_common_all": s["coarse_response_common_all"],
                     "coarse_response_sub_all": s["coarse_response_sub_all"],
                     "coarse_margin_easy": s["coarse_margin_easy"], "coarse_train_loss": s["coarse_train_loss"]})
        if horizons:
            rows[-1]["at"] = {int(t): at_horizon(r, int(t)) for t in horizons}
    base = validate_config(base_config)

    def mean_over(sel):
        keys = [k for k in rows[0] if k not in ("k", "d", "seed", "at")]
        return {k: sum(r[k] for r in sel) / len(sel) for k in keys}

    by_k = {int(k): mean_over([r for r in rows if r["k"] == k and r["d"] == base["d"]]) for k in ks}
    by_d = {int(d): mean_over([r for r in rows if r["k"] == max(ks) and r["d"] == d]) for d in ds}
    return {"rows": rows, "by_k": by_k, "by_d": by_d, "ks": [int(k) for k in ks], "ds": [int(d) for d in ds],
            "seeds": [int(s) for s in seeds]}
