"""``theorylab sim multiview --config FILE.toml``: one FG experiment (coarse and fine training) with a progress
bar; writes its curves as JSON and NPZ and its figures. A config with a ``[sweep]`` table runs one experiment per
d (the d-scaling sweep) and writes ``sweep.json`` and a table of the hard-sample gap against d.

The TOML file holds the keys of ``sims.multiview.experiment.DEFAULTS`` at top level (or inside a
``[multiview]`` table); anything else is an error that names the key. Four more keys are resolved here, per d,
before the config is validated (``examples/multiview_d1000.toml`` uses them):

* ``regime = "paper"`` (or ``"tuned"``): the data parameters of ``sims.multiview.regimes.regime_config(regime,
  d)``, read at run time, so a config never copies them (setting one of them as well is an error);
* ``m_coarse_fraction`` / ``m_fine_fraction``: the widths as a fraction of the paper's
  ``theory.multiview.paper_width(d)`` = d^{2+2c₀} per superclass / d^{1+2c₀} per subclass (c₀ = 0.05), rounded;
* ``horizon = "full"`` (or ``"quick"``): T = the last horizon of ``sims.multiview.regimes.HORIZONS`` and its
  evaluation interval (``EVAL_EVERY``), read at run time: every d trained as long as the fg checks' runs;
  ``steps_per_d``: T = round(steps_per_d · d) instead (T ∝ d).

Before anything is allocated or written the run's cost is estimated from its sizes alone
(:func:`estimate_cost`, :mod:`sims.multiview.sizing`): a run whose estimated peak memory exceeds the machine's
available memory (on CUDA: the GPU's free memory) is refused with the estimate and the memory available; on the CPU
a run estimated longer than ``--max-cpu-minutes`` (default 30) at the step rate timed on a bounded slice is
refused with the estimate. ``--force`` runs it anyway.

The run shows one progress bar on stderr (SGD steps of every training, with steps/s; ``-q`` silences it).
``--json PATH`` also writes the run's numbers as one JSON object (:func:`sim_json`); ``--json -`` prints it
on stdout and nothing else (the table and the list of written files go to stderr). ``--plugins MODULE``
imports a plugin first, so that the config's ``model`` may name a data model it registers
(docs/datamodel.md); ``model = "pkg.mod:Factory"`` needs no plugin.
"""
from __future__ import annotations

import json
import sys
import time
import tomllib
from pathlib import Path

from sims import resources

RULE_KEYS = ("regime", "m_coarse_fraction", "m_fine_fraction", "steps_per_d", "horizon")


def _read_toml(path) -> dict:
    path = Path(path)
    if not path.exists():
        raise ValueError(f"config file {path} does not exist")
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not valid TOML ({exc})") from None


def resolve_rules(raw: dict, d: int | None = None) -> dict:
    """A plain config (keys of DEFAULTS) from ``raw`` with the rule keys (``RULE_KEYS``) resolved at ``d``."""
    from sims.multiview.experiment import DEFAULTS
    from theory.multiview import paper_width

    raw = dict(raw)
    rules = {k: raw.pop(k) for k in RULE_KEYS if k in raw}
    if d is not None:
        raw["d"] = d
    d = int(raw.get("d", DEFAULTS["d"]))
    if "regime" in rules:
        from sims.multiview.regimes import regime_config

        regime = regime_config(rules["regime"], d)  # ValueError names the regimes
        both = sorted(set(regime) & set(raw))
        if both:
            raise ValueError(f"key(s) {both} are set by regime {rules['regime']!r} (regime_config at run time); "
                             f"remove them from the config")
        raw.update(regime)
    for lab in ("coarse", "fine"):
        key = f"m_{lab}_fraction"
        if key in rules:
            f = rules[key]
            if isinstance(f, bool) or not isinstance(f, (int, float)) or not 0 < f <= 1:
                raise ValueError(f"config key {key!r} must be a number in (0, 1], got {f!r}")
            if f"m_{lab}" in raw:
                raise ValueError(f"config sets both m_{lab} and {key}; keep one")
            raw[f"m_{lab}"] = max(1, int(round(f * paper_width(d, fine=lab == "fine"))))
    if "horizon" in rules:
        from sims.multiview import regimes

        h = rules["horizon"]
        if h not in ("full", "quick") or "steps_per_d" in rules:
            raise ValueError(f"config key 'horizon' must be 'full' or 'quick' (and not beside steps_per_d), got {h!r}")
        if "steps" in raw:
            raise ValueError("config sets both steps and horizon; keep one")
        quick = h == "quick"
        raw["steps"] = int(regimes.HORIZONS[quick][-1])
        every = getattr(regimes, "EVAL_EVERY", None)
        if "eval_every" not in raw:
            raw["eval_every"] = int(every[quick]) if every else int(regimes.HORIZONS[quick][0])
    if "steps_per_d" in rules:
        s = rules["steps_per_d"]
        if isinstance(s, bool) or not isinstance(s, (int, float)) or not s > 0:
            raise ValueError(f"config key 'steps_per_d' must be a number > 0, got {s!r}")
        if "steps" in raw:
            raise ValueError("config sets both steps and steps_per_d; keep one")
        raw["steps"] = max(1, int(round(s * d)))
    return raw


def load_plan(path) -> dict:
    """The run(s) a config file asks for: ``{"configs": [validated config per d], "sweep": bool, "ds": [...]}``."""
    from sims.multiview.experiment import validate_config

    path = Path(path)
    raw = _read_toml(path)
    sweep = raw.pop("sweep", None)
    if "multiview" in raw and isinstance(raw["multiview"], dict):
        extra = sorted(set(raw) - {"multiview"})
        if extra:
            raise ValueError(f"{path}: unknown table(s) or key(s) {extra} beside [multiview] (allowed: [sweep])")
        raw = raw["multiview"]
    ds = [None]
    if sweep is not None:
        if not isinstance(sweep, dict) or set(sweep) != {"d"} or not isinstance(sweep["d"], list) or not sweep["d"] \
                or any(isinstance(v, bool) or not isinstance(v, int) or v < 3 for v in sweep["d"]):
            raise ValueError(f"{path}: [sweep] must hold exactly d = [list of integers >= 3], got {sweep!r}")
        if "d" in raw:
            raise ValueError(f"{path}: d is set both in the config and in [sweep]")
        ds = sorted(set(sweep["d"]))
    _misspelled(path, raw)
    try:
        configs = [validate_config(resolve_rules(raw, d)) for d in ds]
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    return {"configs": configs, "sweep": sweep is not None, "ds": [c["d"] for c in configs]}


def _misspelled(path, raw: dict) -> None:
    """An unknown config key named with the closest known one ("did you mean 'steps'?")."""
    from sims.multiview import models
    from sims.multiview.experiment import DEFAULTS
    from verify.sweep.schema import suggest

    try:
        own = list(models.resolve(raw.get("model", DEFAULTS["model"])).params)
    except ValueError:
        return  # validate_config names the model's problem
    known = set(DEFAULTS) | set(own) | set(RULE_KEYS)
    unknown = sorted(k for k in raw if k not in known)
    if unknown:
        raise ValueError(f"{path}: unknown config key {unknown[0]!r}{suggest(unknown[0], known)}"
                         + (f" (and {unknown[1:]})" if len(unknown) > 1 else "")
                         + f"; allowed keys: {sorted(DEFAULTS)}" + (f" and data model's {own}" if own else ""))


def load_config(path) -> dict:
    """Read and validate a TOML config (unknown key, impossible sizes → ValueError with the key)."""
    plan = load_plan(path)
    if plan["sweep"]:
        raise ValueError(f"{path}: holds a [sweep] over d = {plan['ds']}; use load_plan")
    return plan["configs"][0]


# ------------------------------------------------------------------------------------------- cost estimate
def estimate_cost(cfg) -> dict:
    """:func:`sims.multiview.sizing.estimate_cost` (flops and peak memory from the sizes alone), imported on use: the
    CLI starts without torch (its ``--help`` and argument errors answer in a fraction of a second)."""
    from sims.multiview.sizing import estimate_cost as estimate

    return estimate(cfg)


MEASURE_D = 65536          # the speed measurement's largest d: its arrays stay a few tens of MiB whatever d is
MEASURE_WEIGHTS = 2 ** 22  # and its largest number of weights (2·m·d)


def cpu_gflops(cfg: dict | None = None, seconds: float = 0.3) -> float:
    """GFLOP/s (the step's 4·N·P·d·C·m) of the trainer's own SGD step on one torch thread (its CPU setting),
    measured now on a slice of the config's coarse network at its P and batch: d capped at ``MEASURE_D``, m at
    1024 and at ``MEASURE_WEIGHTS`` weights, so the measurement allocates a few tens of MiB whatever the config's
    sizes (the rate of a GEMM-bound step changes little beyond these sizes)."""
    import torch

    from sims.multiview.learner import TwoLayerReLU
    from sims.multiview.train import torch_threads

    d, P, N = (cfg["d"], cfg["P"], cfg["batch"]) if cfg else (256, 16, 32)
    d = min(d, MEASURE_D)
    m = min(cfg["m_coarse"] if cfg else 1024, 1024, max(1, MEASURE_WEIGHTS // (2 * d)))
    with torch_threads(1):
        g = torch.Generator().manual_seed(0)
        net = TwoLayerReLU(2, m, d, sigma0=0.01, c_b=1.0, generator=g)
        X = 0.05 * torch.randn(N, P, d, generator=g)
        y = torch.arange(N) % 2
        net.step(X, y, 0.02)
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds or n < 2:
            net.step(X, y, 0.02)
            n += 1
        return 4.0 * N * P * d * 2 * m * n / (time.perf_counter() - t0) / 1e9


def _fmt_seconds(s: float) -> str:
    return f"{s / 3600:.1f} h" if s >= 3600 else f"{s / 60:.1f} min" if s >= 60 else f"{s:.0f} s"


def preflight(configs, device, force: bool = False, max_cpu_minutes: float = 30.0) -> dict:
    """The cost of the planned runs; ValueError (one line, with the estimate) if it should not start here.

    Memory first, from the sizes alone (:func:`sims.multiview.sizing.require_memory`: the machine's available
    memory on the CPU, the GPU's free memory on CUDA), then time: on the CPU a run estimated longer than
    ``max_cpu_minutes`` at the rate :func:`cpu_gflops` measures on a bounded slice. ``force`` skips both."""
    import torch

    from sims.multiview.sizing import require_memory

    costs = [estimate_cost(c) for c in configs]
    flops = sum(c["flops"] for c in costs)
    peak = max(c["peak_bytes"] for c in costs)
    info = {"flops": flops, "peak_bytes": peak, "device": str(device)}
    dev = torch.device(device)
    biggest = configs[max(range(len(configs)), key=lambda i: costs[i]["peak_bytes"])]
    mem = require_memory(biggest, dev, force=True if force else None, what="sim multiview")
    info["available_bytes"] = mem["available_bytes"]
    if dev.type == "cuda":
        info.update(gpu_free_bytes=mem["available_bytes"], gpu_total_bytes=torch.cuda.mem_get_info(dev)[1])
    if dev.type == "cpu":
        if flops <= 1e9 * 60 * max_cpu_minutes:  # under the limit even at 1 GFLOP/s: nothing to measure
            info.update(estimated_seconds_at_most=flops / 1e9)
            return info
        rate = cpu_gflops(max(configs, key=lambda c: c["d"]))
        info.update(cpu_gflops=rate, estimated_seconds=flops / (rate * 1e9))
        if info["estimated_seconds"] > 60 * max_cpu_minutes and not force:
            raise ValueError(
                f"refused on the CPU: {flops / 1e12:.0f} TFLOP of training and evaluation GEMMs, estimated "
                f"{_fmt_seconds(info['estimated_seconds'])} at the {rate:.0f} GFLOP/s of the SGD step on one torch thread "
                f"measured now "
                f"(limit --max-cpu-minutes {max_cpu_minutes:g}); run it with --device cuda (docs/gpu.md), or --force")
    return info


# ----------------------------------------------------------------------------------------------------- run
def flatten_curves(result: dict) -> dict:
    """NPZ-ready arrays: '<training>/<curve>' for every curve, '<training>/final/<name>' for the final numbers."""
    import numpy as np

    out = {}
    for lab in ("coarse", "fine"):
        if lab not in result:
            continue
        for key, vals in result[lab]["curves"].items():
            out[f"{lab}/{key}"] = np.asarray(vals, dtype=float)
        for key, v in result[lab]["final"].items():
            out[f"{lab}/final/{key}"] = np.asarray(v, dtype=float)
    return out


def _write_one(result, out: Path, figures: bool) -> list:
    from sims.cache import atomic_write_text, save_npz

    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "curves.json", json.dumps(result, indent=1))
    save_npz(out / "curves.npz", flatten_curves(result))
    written = ["curves.json", "curves.npz"]
    if figures:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from paper_figs.fg import curves_figure, growth_figure

        for name, fig in (("test_error", curves_figure(result)), ("detector_growth", growth_figure(result))):
            fig.savefig(out / f"{name}.png", dpi=130, bbox_inches="tight")
            plt.close(fig)
            written.append(f"{name}.png")
    return written


def total_steps(configs) -> int:
    """The SGD steps of every training of the planned runs (the progress bar's total)."""
    return sum(c["steps"] * len(c["trainings"]) for c in configs)


def run_sim(config_path, out_dir, device="cpu", figures: bool = True, force: bool = True,
            max_cpu_minutes: float = 30.0, cache: bool = False, progress=True, cost: dict | None = None) -> dict:
    """Run the config's experiment(s) on ``device`` and write them to ``out_dir``. The cost check
    (:func:`preflight`) refuses a run too long for the CPU unless ``force`` (the default here: the command line
    passes ``force=False`` unless --force). ``cache``: through ``sims.cache`` (keyed by config, device and code),
    so a sweep point equal to an earlier single run is not trained twice. ``progress``: True (a bar per
    training on a terminal), False, or a callable called with 1 after every SGD step. ``cost``: the result of
    :func:`preflight` when the caller has checked already."""
    from sims.cache import atomic_write_text
    from sims.multiview.experiment import cached_experiment

    def run_experiment(cfg, device, progress):
        if cache:
            return cached_experiment(cfg, device=device, progress=progress)
        from sims.multiview.experiment import run_experiment as run

        return run(cfg, device=device, progress=progress)

    plan = load_plan(config_path)
    if cost is None:
        cost = preflight(plan["configs"], device, force=force, max_cpu_minutes=max_cpu_minutes)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if not plan["sweep"]:
        result = run_experiment(plan["configs"][0], device=device, progress=progress)
        return {"result": result, "written": _write_one(result, out, figures), "out": out, "cost": cost}
    rows, written = [], []
    for cfg in plan["configs"]:
        r = run_experiment(cfg, device=device, progress=progress)
        sub = f"d{cfg['d']}"
        written += [f"{sub}/{w}" for w in _write_one(r, out / sub, False)]
        rows.append({"d": cfg["d"], "m_coarse": cfg["m_coarse"], "m_fine": cfg["m_fine"], "steps": cfg["steps"],
                     "seconds": r["seconds"], "summary": r["summary"], "c_b": r["c_b"]})
    sweep = {"device": str(device), "ds": plan["ds"], "rows": rows, "cost": cost}
    atomic_write_text(out / "sweep.json", json.dumps(sweep, indent=1))
    return {"sweep": sweep, "written": ["sweep.json"] + written, "out": out, "cost": cost}


def summary_table(summary: dict) -> str:
    """The final numbers as a table: one row per quantity, one column per training (coarse, fine)."""
    from verify.report import fmt, text_table

    labs = [lab for lab in ("coarse", "fine") if any(k.startswith(f"{lab}_") for k in summary)]
    rows, rest = {}, []
    for k, v in summary.items():
        lab = next((lab for lab in labs if k.startswith(f"{lab}_")), None)
        if lab is None:
            rest.append([k, fmt(v)])
        else:
            rows.setdefault(k[len(lab) + 1:], {})[lab] = fmt(v)
    table = text_table([[q] + [vals.get(lab, "") for lab in labs] for q, vals in rows.items()], ["final"] + labs)
    return table + ("\n\n" + text_table(rest) if rest else "")


def sweep_table(sweep: dict) -> str:
    """One row per d: widths, steps, easy/hard coarse error of both trainings, the gap, seconds."""
    from verify.report import fmt, text_table

    rows = [[str(r["d"]), str(r["m_coarse"]), str(r["m_fine"]), str(r["steps"])]
            + [fmt(r["summary"].get(k)) for k in ("coarse_easy_err", "coarse_hard_err", "fine_easy_err",
                                                   "fine_hard_err", "hard_gap")] + [f"{r['seconds']:.1f}"]
            for r in sweep["rows"]]
    return text_table(rows, ["d", "m coarse", "m fine", "steps", "coarse easy", "coarse hard", "fine easy",
                             "fine hard", "gap", "s"])


def sim_json(done: dict) -> dict:
    """The run as one JSON-able object: ``out``, ``written``, ``cost`` and, for one experiment, its ``config``,
    ``c_b``, ``summary``, ``seconds``, ``device``; for a d-sweep, ``sweep`` (``ds`` and one row per d)."""
    out = {"out": str(done["out"]), "written": list(done["written"]), "cost": done["cost"]}
    if "sweep" in done:
        out["sweep"] = done["sweep"]
    else:
        r = done["result"]
        out.update({k: r[k] for k in ("config", "c_b", "summary", "seconds", "device") if k in r})
    return out


class _LazyBar:
    """A progress bar (:func:`sims.progress.bar`: tqdm on a terminal, one line at the end elsewhere) drawn from
    the first step on (a run refused by the cost check prints nothing but its line)."""

    def __init__(self, **kw):
        self.kw, self.bar = kw, None

    def update(self, n: int = 1) -> None:
        if self.bar is None:
            from sims.progress import bar

            self.bar = bar(mininterval=0.5, dynamic_ncols=True, **self.kw)
        self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def cmd_sim(args) -> int:
    from verify import plugins
    from verify.api import check_device, prepare_dir, prepare_file
    from verify.cli import _plugin_list

    check_device(args.device)                     # before any work: a missing GPU is one line, exit 2
    plugins.load(_plugin_list(args))              # a plugin's data model; PluginError: one line, exit 2
    to_stdout = args.json == "-"
    if args.json and not to_stdout:
        prepare_file(args.json, "--json")
    human = sys.stderr if to_stdout else sys.stdout
    try:
        plan = load_plan(args.config)
        # memory and time from the sizes alone, before the output folder is made or anything is allocated
        cost = preflight(plan["configs"], args.device, force=args.force, max_cpu_minutes=args.max_cpu_minutes)
    except ValueError as exc:
        print(f"theorylab sim: error: {exc}", file=sys.stderr)
        return 2
    if Path(args.out).parent.name == "report":  # the default report/sim_multiview: mark report/ as theorylab's
        from verify.api import adopt_report_dir

        adopt_report_dir(Path(args.out).parent)
    prepare_dir(args.out, "--out")
    bar = _LazyBar(total=total_steps(plan["configs"]), desc=f"sim {args.model}", unit="step", disable=args.quiet)
    try:
        with resources.forced(args.force):  # --force reaches the run's own checks (data model, experiment)
            done = run_sim(args.config, args.out, device=args.device, figures=not args.no_figs, force=args.force,
                           max_cpu_minutes=args.max_cpu_minutes, cache=args.cache, progress=bar.update, cost=cost)
    except ValueError as exc:
        bar.close()
        print(f"theorylab sim: error: {exc}", file=sys.stderr)
        return 2
    bar.close()
    if args.json:
        from verify.report import json_line

        text = json_line(sim_json(done))
        if to_stdout:
            print(text, flush=True)
        else:
            from sims.cache import atomic_write_text

            atomic_write_text(Path(args.json), text + "\n")
    if "sweep" in done:
        print(sweep_table(done["sweep"]), file=human)
    else:
        print(summary_table(done["result"]["summary"]), file=human)
    print(f"\nwrote {', '.join(done['written'][:6])}{' …' if len(done['written']) > 6 else ''} to {done['out']}"
          + (f"; JSON to {args.json}" if args.json and not to_stdout else ""), file=human)
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("sim", help="run one simulation (multiview: FG coarse vs fine training)")
    p.add_argument("model", choices=["multiview"], help="which simulation")
    p.add_argument("--config", required=True, metavar="FILE.toml", help="experiment config (keys of DEFAULTS)")
    p.add_argument("--out", default="report/sim_multiview", metavar="DIR", help="output folder")
    p.add_argument("--device", default="cpu", help="torch device (cpu, cuda, ...)")
    p.add_argument("--no-figs", action="store_true", help="skip the figures")
    p.add_argument("--force", action="store_true", help="run even if the cost estimate says it should not start here")
    p.add_argument("--max-cpu-minutes", type=float, default=30.0, metavar="MIN",
                   help="refuse a CPU run estimated longer than this (default 30)")
    p.add_argument("--cache", action="store_true", help="reuse/keep results in the sims cache ($THEORYLAB_CACHE)")
    p.add_argument("--plugins", action="append", metavar="MODULE[,MODULE]",
                   help="import these modules first: the config's model may name a data model they register")
    p.add_argument("--json", metavar="PATH", help="also write the run's numbers as JSON to PATH; '-': the JSON on "
                   "stdout and nothing else (the table goes to stderr)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_sim)
