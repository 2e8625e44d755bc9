"""``theorylab sim multiview --config FILE.toml``: one FG experiment (coarse and fine training) with a progress
bar; writes its curves as JSON and NPZ and its figures.

The TOML file holds the keys of ``sims.multiview.experiment.DEFAULTS`` at top level (or inside a
``[multiview]`` table); anything else is an error that names the key.
"""
from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path


def load_config(path) -> dict:
    """Read and validate a TOML config (unknown key, impossible sizes → ValueError with the key)."""
    from sims.multiview.experiment import validate_config

    path = Path(path)
    if not path.exists():
        raise ValueError(f"config file {path} does not exist")
    try:
        with open(path, "rb") as fh:
            raw = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: not valid TOML ({exc})") from None
    if set(raw) == {"multiview"} and isinstance(raw["multiview"], dict):
        raw = raw["multiview"]
    try:
        return validate_config(raw)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


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


def run_sim(config_path, out_dir, device="cpu", figures: bool = True) -> dict:
    from sims.cache import atomic_write_text, save_npz
    from sims.multiview.experiment import run_experiment

    cfg = load_config(config_path)
    result = run_experiment(cfg, device=device, progress=True)
    out = Path(out_dir)
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
    return {"result": result, "written": written, "out": out}


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


def cmd_sim(args) -> int:
    from verify.api import check_device, prepare_dir

    check_device(args.device)                     # before any work: a missing GPU is one line, exit 2
    prepare_dir(args.out, "--out")
    try:
        done = run_sim(args.config, args.out, device=args.device, figures=not args.no_figs)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(summary_table(done["result"]["summary"]))
    print(f"\nwrote {', '.join(done['written'])} to {done['out']}")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("sim", help="run one simulation (multiview: FG coarse vs fine training)")
    p.add_argument("model", choices=["multiview"], help="which simulation")
    p.add_argument("--config", required=True, metavar="FILE.toml", help="experiment config (keys of DEFAULTS)")
    p.add_argument("--out", default="report/sim_multiview", metavar="DIR", help="output folder")
    p.add_argument("--device", default="cpu", help="torch device (cpu, cuda, ...)")
    p.add_argument("--no-figs", action="store_true", help="skip the figures")
    p.set_defaults(func=cmd_sim)
