"""The gpu-check (docs/gpu.md) proven on the CPU: its dry run exercises every part, benchmark option and
test it calls; the d = 1000 configs load with the regime read at run time and are refused on the CPU with an
estimate; the cost estimate counts the step's flops."""
from __future__ import annotations

import json
import math
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sims.multiview.regimes import HEADLINE, regime_config
from theory.multiview import paper_width
from verify import cli
from verify.commands import sim

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples"


def test_dry_run_runs_every_part_on_the_cpu(tmp_path):
    """``python tools/gpu_check.py --device cpu``: every part passes at tiny sizes (a benchmark that does not take
    the gpu-check's arguments fails here, not in the GPU window); one JSON and one Markdown table. Its CPU and wall
    time are printed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    env = {**os.environ, "THEORYLAB_CACHE": os.environ.get("THEORYLAB_CACHE", str(tmp_path / "cache"))}
    r = subprocess.run([sys.executable, "tools/gpu_check.py", "--device", "cpu", "--out", str(tmp_path / "gc")],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=2400)  # a hang, not a slow CI
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"gpu_check dry run: {wall:.1f} s wall, {cpu:.1f} s CPU")
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    rep = json.loads((tmp_path / "gc" / "gpu_check.json").read_text())
    sys.path.insert(0, str(ROOT / "tools"))
    import gpu_check

    names = [p.name for p in gpu_check.parts()]
    assert [p["name"] for p in rep["parts"]] == names
    assert all(p["status"].startswith("pass") for p in rep["parts"]), [(p["name"], p["status"]) for p in rep["parts"]]
    assert rep["meta"]["dry_run"] and rep["ok"]
    by = {p["name"]: p for p in rep["parts"]}
    assert by["tests_fg"]["numbers"]["counts"]["skipped"] >= 6           # the CUDA tests were collected
    assert by["bench_multiview"]["numbers"]["gpu"]["rows"]               # the GPU column's code ran (on the CPU)
    assert by["fg_dsweep"]["numbers"]["rows"][-1]["d"] == 32
    md = (tmp_path / "gc" / "GPU_CHECK.md").read_text()
    assert "| part | status | seconds | budget | key numbers |" in md and "DRY RUN" in md
    # its cost is printed, not asserted (tests do not time things): ~21 s of CPU with a warm numba cache


def test_every_benchmark_is_a_part_and_budgets_fit_the_window():
    sys.path.insert(0, str(ROOT / "tools"))
    import gpu_check

    ps = gpu_check.parts()
    benches = {p.args[0] for p in ps if p.kind == "bench"}
    assert benches == {f"benchmarks/{f.name}" for f in (ROOT / "benchmarks").glob("bench_*.py")}
    assert all("--gpu" in p.args for p in ps if p.kind == "bench")
    # 8 minutes, the window (the warm-up part runs only where no install warmed the numba cache; the install's
    # time comes off the total budget)
    assert sum(p.budget for p in ps if p.name != "warmup") <= 480
    assert gpu_check.cuda_test_files()[0] == "tests/test_gpu_fg.py"


def test_gpu_check_without_cuda_is_one_line_exit_2(capsys):
    import torch

    sys.path.insert(0, str(ROOT / "tools"))
    import gpu_check

    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    assert gpu_check.main(["--device", "cuda"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "CUDA is not available" in err
    assert gpu_check.main(["--only", "warp"]) == 2


def test_d1000_configs_read_the_regime_at_run_time_and_scale_the_widths():
    cfg = sim.load_config(EX / "multiview_d1000.toml")
    from sims.multiview import regimes

    T = regimes.HORIZONS[False][-1]                          # the fg checks' last full horizon, read now
    assert cfg["d"] == 1000 and cfg["k"] == 8 and cfg["steps"] == T
    for key, v in regime_config(HEADLINE, 1000).items():   # whatever the regime sets, read now
        assert cfg[key] == pytest.approx(v), key
    assert cfg["m_coarse"] == round(0.050477 * paper_width(1000)) == 100715
    assert cfg["m_fine"] == round(paper_width(1000, fine=True)) == 1995
    plan = sim.load_plan(EX / "multiview_d1000_sweep.toml")
    assert plan["sweep"] and plan["ds"] == [64, 128, 256, 512, 1000]
    assert plan["configs"][-1] == cfg                        # its d = 1000 point is the single run (shared cache)
    assert [c["steps"] for c in plan["configs"]] == [T] * 5
    wide = sim.load_config(EX / "multiview_d1000_wide.toml")
    assert wide["m_coarse"] == round(0.2 * paper_width(1000))
    with pytest.raises(ValueError, match="load_plan"):
        sim.load_config(EX / "multiview_d1000_sweep.toml")


@pytest.mark.parametrize("text, match", [
    ('regime = "paper"\nd = 64\nhard_noise_norm = 2.0\n', "set by regime"),
    ('regime = "fancy"\nd = 64\n', "regime"),
    ('m_coarse = 10\nm_coarse_fraction = 0.1\n', "both m_coarse"),
    ('m_fine_fraction = 2.0\n', r"\(0, 1\]"),
    ('steps = 10\nsteps_per_d = 1.0\n', "both steps"),
    ('steps_per_d = -1\n', "steps_per_d"),
    ('horizon = "long"\n', "horizon"),
    ('steps = 10\nhorizon = "full"\n', "both steps and horizon"),
    ('[multiview]\nk = 2\n[sweep]\nd = "64"\n', r"\[sweep\]"),
    ('[multiview]\nd = 64\n[sweep]\nd = [64]\n', "both in the config"),
    ('[multiview]\nk = 2\n[other]\nx = 1\n', "beside"),
])
def test_rule_keys_refuse_bad_input(tmp_path, text, match):
    p = tmp_path / "c.toml"
    p.write_text(text)
    with pytest.raises(ValueError, match=match):
        sim.load_plan(p)


def test_cpu_refuses_the_d1000_run_with_its_estimate(tmp_path, monkeypatch, capsys):
    """On the CPU the d = 1000 run is refused in one line with its estimate (flops at a measured rate), exit 2,
    before any training; --max-cpu-minutes moves the limit."""
    monkeypatch.setattr(sim, "cpu_gflops", lambda cfg=None: 100.0)
    assert cli.main(["sim", "multiview", "--config", str(EX / "multiview_d1000.toml"), "--out",
                     str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "refused on the CPU" in err and "--force" in err
    flops = sim.estimate_cost(sim.load_config(EX / "multiview_d1000.toml"))["flops"]
    assert f"{flops / 100e9 / 3600:.1f} h" in err                      # flops / (100 GFLOP/s)
    assert not (tmp_path / "o" / "curves.json").exists()
    with pytest.raises(ValueError, match="refused"):
        sim.preflight(sim.load_plan(EX / "multiview_d1000_sweep.toml")["configs"], "cpu", max_cpu_minutes=60)


def test_estimate_counts_the_steps_and_evaluations():
    cfg = sim.load_config(EX / "multiview_d1000.toml")
    e = sim.estimate_cost(cfg)
    c = e["trainings"]["coarse"]
    assert c["flops_per_step"] == 4 * 32 * cfg["P"] * 1000 * 2 * 100715
    assert cfg["steps"] * c["flops_per_step"] < c["flops"] < 1.5 * cfg["steps"] * c["flops_per_step"]
    assert e["flops"] == pytest.approx(c["flops"] + e["trainings"]["fine"]["flops"])
    assert 8 * 2**30 < e["peak_bytes"] < 40 * 2**30                   # fits one 78 GiB GPU with room
    assert math.isfinite(sim.cpu_gflops(cfg)) and sim.cpu_gflops(cfg) > 0


def test_small_configs_are_not_measured_and_force_overrides(monkeypatch):
    monkeypatch.setattr(sim, "cpu_gflops", lambda cfg=None: 1e-3)  # an absurdly slow CPU
    paper = [sim.load_config(EX / "multiview_paper.toml")]
    with pytest.raises(ValueError, match="refused"):
        sim.preflight(paper, "cpu", max_cpu_minutes=0.5)
    info = sim.preflight(paper, "cpu", force=True, max_cpu_minutes=0.5)
    assert info["estimated_seconds"] > 30
    from sims.multiview.experiment import validate_config

    tiny = [validate_config({"d": 32, "k": 2, "m_coarse": 40, "m_fine": 20, "lucky": 2.0, "steps": 20, "batch": 8,
                             "n_test": 16, "eval_every": 10})]
    assert "estimated_seconds" not in sim.preflight(tiny, "cpu")        # below the limit even at 1 GFLOP/s


def test_bench_multiview_reads_the_d1000_step_from_the_shipped_config():
    """The GPU column's d = 1000 row (not reached by the dry run's --tiny) takes its sizes from the config."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_multiview", ROOT / "benchmarks" / "bench_multiview.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    sizes = mod.d1000_sizes(False)
    cfg = sim.load_config(EX / "multiview_d1000.toml")
    assert sizes == {k: cfg[k] for k in ("d", "P", "s", "k", "m_coarse", "m_fine", "batch")}


def _tool():
    sys.path.insert(0, str(ROOT / "tools"))
    import gpu_check

    return gpu_check


def test_a_part_past_its_budget_is_killed_and_recorded():
    """A part that outlives its budget (5 s) is killed (rc None) with its output so far; the part would sleep an hour,
    so any end before that is the kill, whatever the machine's load (a shell's echo, not a Python start-up, comes
    first)."""
    gc = _tool()
    t0 = time.perf_counter()
    rc, text, secs = gc.run_subprocess(["/bin/sh", "-c", "echo started; exec sleep 3600"], 5.0, dict(os.environ))
    assert rc is None and "started" in text and 5.0 <= secs < 1800 and time.perf_counter() - t0 < 1800
    assert gc.missing_modules(["json", "no_such_module_xyz"]) == ["no_such_module_xyz"]


def test_a_spent_total_budget_leaves_parts_not_run_and_exit_1(tmp_path):
    gc = _tool()
    rc = gc.main(["--device", "cpu", "--only", "bench_dependency", "--total-budget", "0", "--out", str(tmp_path)])
    rep = json.loads((tmp_path / "gpu_check.json").read_text())
    assert rc == 1 and not rep["ok"]
    assert [p["status"] for p in rep["parts"]] == ["pass", "not run (total budget spent)"]
    assert "not run" in rep["markdown"]
