"""The user's path through the commands (issue 37): sizes that do not fit are refused before anything is
allocated (under ``ulimit -v``, in subprocesses), with the estimate and the memory available, and ``--force``
goes on; progress on a stream that is not a terminal is one line per phase; ``~`` in a path is the home folder;
a misspelled config key says what it probably meant; an interrupted sweep leaves no semaphore behind.

The subprocess tests run the command line (``python -m verify.cli``) under an address-space limit: an estimate
far above it must be refused in one line (exit 2) and never reach torch's allocator (whose failure reads
``can't allocate memory``)."""
from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIMIT_KB = 4_000_000  # ulimit -v: 4 GB of address space; python + torch map under 1 GB of it


def _limited(args, cwd, limit_kb=LIMIT_KB, env_extra=None, timeout=300):
    """``python -m verify.cli ARGS`` under ``ulimit -v limit_kb``."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{cwd}", "MPLBACKEND": "Agg",
           "THEORYLAB_CACHE": str(Path(cwd) / "cache"), **(env_extra or {})}
    env.pop("THEORYLAB_FORCE", None)
    cmd = " ".join(["ulimit -v", str(limit_kb), ";", "exec", sys.executable, "-m", "verify.cli",
                    *[f"'{a}'" for a in args]])
    return subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _refused(r, *words):
    err = r.stderr.strip()
    assert r.returncode == 2, err[-3000:]
    assert len(err.splitlines()) == 1, err[-3000:]  # one line, no traceback
    assert "refused" in err and "needs an estimated" in err and "available" in err and "--force" in err, err
    assert "ulimit -v" in err  # the limit is what was measured
    for w in words:
        assert w in err, err
    for bad in ("Traceback", "can't allocate", "MemoryError", "Cannot allocate"):
        assert bad not in err, err
    return err


# --------------------------------------------------------------------------------------------- sims.resources
def test_require_refuses_with_the_estimate_and_force_lets_it_pass(monkeypatch):
    from sims import resources

    monkeypatch.delenv(resources.FORCE_ENV, raising=False)
    monkeypatch.setattr(resources, "available", lambda: (2 * 2 ** 30, "a test's 2 GiB"))
    with pytest.raises(resources.InsufficientMemory, match=r"needs an estimated 3 GiB .* has 2 GiB available "
                                                           r"\(a test's 2 GiB\); use less"):
        resources.require(3 * 2 ** 30, "the work", hint="use less")
    assert isinstance(resources.InsufficientMemory("m", 1, 0), ValueError)  # one line, exit 2 at the CLI
    assert resources.require(2 ** 30, "the work")["available_bytes"] == 2 * 2 ** 30          # fits
    assert resources.require(3 * 2 ** 30, "the work", force=True)["needed_bytes"] == 3 * 2 ** 30
    with resources.forced():
        assert os.environ[resources.FORCE_ENV] == "1"                                       # workers inherit it
        resources.require(3 * 2 ** 30, "the work")
    assert resources.FORCE_ENV not in os.environ                                            # restored
    with pytest.raises(ValueError, match="not a number of bytes"):
        resources.require(float("nan"), "the work")
    assert resources.fmt_bytes(4e14) == "364 TiB" and resources.fmt_bytes(512) == "512 B"


def test_available_memory_sees_the_address_space_limit(tmp_path):
    code = "from sims.resources import available; b, s = available(); print(b, '|', s)"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    lim = subprocess.run(["bash", "-c", f"ulimit -v {LIMIT_KB}; exec {sys.executable} -c \"{code}\""], env=env,
                         capture_output=True, text=True, timeout=120)
    assert lim.returncode == 0, lim.stderr
    b, source = lim.stdout.split("|")
    assert 0 < int(b) < LIMIT_KB * 1024 and "ulimit -v" in source


# ------------------------------------------------------------------------------------- the FG data and learner
def test_fg_sizes_that_do_not_fit_are_refused_before_any_tensor(monkeypatch):
    import torch

    from sims import resources
    from sims.multiview import HierarchicalMultiView, run_experiment
    from sims.multiview.sizing import estimate_cost

    monkeypatch.delenv(resources.FORCE_ENV, raising=False)
    big = {"d": 10_000_000, "k": 4, "m_coarse": 200, "m_fine": 50, "steps": 300}
    calls = []
    monkeypatch.setattr(torch, "randn", lambda *a, **k: calls.append(a))  # nothing may be drawn
    with pytest.raises(resources.InsufficientMemory, match="d = 10000000, k = 4, m_coarse = 200"):
        run_experiment(big)
    data = HierarchicalMultiView(10_000_000, 16, 3.0, 4)
    with pytest.raises(resources.InsufficientMemory, match="10000000 × 10000000 matrix"):
        data.dictionary()
    with pytest.raises(resources.InsufficientMemory, match=r"sample\(4096\)"):
        data.sample(4096, generator=torch.Generator())
    assert calls == []
    # the estimate counts what _train keeps: the d × d dictionary alone is 4·d² bytes in float32
    from sims.multiview.experiment import validate_config

    cfg = validate_config({**big, "d": 1000})
    assert estimate_cost(cfg)["peak_bytes"] > 4 * 1000 ** 2 + 11 * 2 * 200 * 1000
    assert estimate_cost({**cfg, "dtype": "float64"})["peak_bytes"] > estimate_cost(cfg)["peak_bytes"]


def test_glyph_images_and_geometry_accumulators_are_sized_first(monkeypatch):
    from sims import resources
    from sims.geometry.capture import check_memory

    monkeypatch.delenv(resources.FORCE_ENV, raising=False)
    monkeypatch.setattr(resources, "available", lambda: (256 * 2 ** 20, "a test's 256 MiB"))
    with pytest.raises(resources.InsufficientMemory, match="geometry accumulators"):
        check_memory({"a": 20_000}, [], None, max_memory=1e15)  # 3 GiB of p × p moments
    assert check_memory({"a": 100}, [], None, max_memory=1e15) < 64 * 2 ** 20  # its staging buffer fits
    from sims.glyphs import task as glyph_task_module

    class Task(glyph_task_module.GlyphTask):  # only what images() reads before it allocates
        def __init__(self):
            self.config = glyph_task_module.GlyphTaskConfig.__new__(glyph_task_module.GlyphTaskConfig)
            object.__setattr__(self.config, "size", 32)

        n_classes = 10

        def split_faces(self, split):
            return [0]

    with pytest.raises(resources.InsufficientMemory, match="glyph images: 10 classes × 100000 per class"):
        Task().images("face_test", 100_000, 0)


# ------------------------------------------------------------------------------- the command line, under ulimit
def test_sim_refuses_a_model_that_does_not_fit_before_allocating(tmp_path):
    """The issue's config: d = 10⁷ at m = 200 used to build the full-size model for its speed measurement (a
    16 GB allocation); it is refused from its sizes, nothing is written; --force tries (and torch's allocator
    fails: the limit is real)."""
    (tmp_path / "big.toml").write_text("[multiview]\nd = 10000000\nk = 4\nm_coarse = 200\nm_fine = 50\nsteps = 300\n")
    r = _limited(["sim", "multiview", "--config", "big.toml", "--out", "o"], tmp_path)
    _refused(r, "sim multiview", "d = 10000000", "364 TiB")
    assert not (tmp_path / "o").exists()
    forced = _limited(["sim", "multiview", "--config", "big.toml", "--out", "o", "--force", "-q"], tmp_path)
    assert forced.returncode == 2 and "refused" not in forced.stderr


def test_a_sweep_point_that_does_not_fit_is_refused_before_anything_runs(tmp_path):
    (tmp_path / "s.toml").write_text('experiment = "massive_floors"\n[grid]\nn = [16, 200000]\np = [64]\n')
    r = _limited(["sweep", "s.toml", "--out", "sw"], tmp_path)
    _refused(r, "sweep massive_floors", "n = 200000")
    assert not (tmp_path / "sw").exists()


def test_analyze_and_geometry_refuse_sizes_that_do_not_fit(tmp_path):
    pytest.importorskip("efficientnet_lite_pytorch")
    pytest.importorskip("skimage")
    r = _limited(["analyze", "--crops", "100000000", "--no-between", "--out", "an"], tmp_path)
    _refused(r, "analyze", "100000000 samples")
    assert not (tmp_path / "an").exists()
    r = _limited(["geometry", "--batch-size", "20000", "--out", "geo"], tmp_path)
    _refused(r, "geometry", "20000 image(s) at 224 × 224")
    assert not (tmp_path / "geo").exists()


# ----------------------------------------------------------------------------------------------- progress bars
def test_progress_on_a_stream_that_is_not_a_terminal_is_one_line_per_phase():
    from sims.progress import LineBar, bar

    out = io.StringIO()
    b = bar(total=300, desc="sim multiview", unit="step", file=out, disable=False)
    assert isinstance(b, LineBar)
    for _ in range(300):
        b.update(1)
    b.set_postfix(loss="0.1")
    b.close()
    b.close()
    text = out.getvalue()
    assert "\r" not in text and text.count("\n") == 1 and text.startswith("sim multiview: 300/300 step in ")
    assert "step/s" in text and "loss=0.1" in text
    quiet = io.StringIO()
    q = bar(total=3, file=quiet, disable=True)  # -q: nothing
    q.update(3)
    q.close()
    assert quiet.getvalue() == ""
    assert list(bar([1, 2, 3], desc="it", file=io.StringIO(), disable=False)) == [1, 2, 3]


def test_sim_progress_through_a_pipe_has_no_carriage_returns(tmp_path):
    toml = tmp_path / "c.toml"
    toml.write_text('d = 20\nP = 8\nk = 2\nm_coarse = 40\nm_fine = 20\nlucky = 4.0\nsteps = 30\nbatch = 8\n'
                    'eval_every = 10\nn_test = 16\n')
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg", "THEORYLAB_CACHE": str(tmp_path / "cache")}
    r = subprocess.run([sys.executable, "-m", "verify.cli", "sim", "multiview", "--config", str(toml), "--out",
                        str(tmp_path / "o"), "--no-figs"], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert "\r" not in r.stderr and "\x1b[" not in r.stderr
    (line,) = [ln for ln in r.stderr.splitlines() if "step/s" in ln]
    assert line.startswith("sim multiview: 60/60 step in ")


# ------------------------------------------------------------------------------------------------ small frictions
def test_a_tilde_in_a_path_is_the_home_folder(tmp_path, monkeypatch, capsys):
    from verify.cli import main

    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    (work / "t.toml").write_text('experiment = "toy"\n[grid]\nx = [1.0, 2.0]\n')
    assert main(["sweep", "t.toml", "--out", "~/sw", "--scheduler", "serial", "--no-progress"]) == 0
    assert (home / "sw" / "summary.md").exists() and not (work / "~").exists()
    assert str(home / "sw") in capsys.readouterr().out  # it says where it wrote


def test_a_misspelled_key_says_what_it_probably_meant(tmp_path, capsys):
    from verify.cli import main

    (tmp_path / "c.toml").write_text("d = 20\nstesp = 30\n")
    assert main(["sim", "multiview", "--config", str(tmp_path / "c.toml"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "unknown config key 'stesp' (did you mean 'steps'?)" in err and len(err.strip().splitlines()) == 1
    (tmp_path / "s.toml").write_text('experiment = "toy"\n[grid]\nxx = [1.0]\n')
    assert main(["sweep", str(tmp_path / "s.toml"), "--out", str(tmp_path / "s")]) == 2
    assert "has no parameter 'xx' (did you mean 'x'?)" in capsys.readouterr().err
    (tmp_path / "p.toml").write_text('experiment = "toy"\nsed = 3\n[grid]\nx = [1.0]\n')
    assert main(["sweep", str(tmp_path / "p.toml"), "--out", str(tmp_path / "s")]) == 2
    assert "(did you mean 'seed'?)" in capsys.readouterr().err
    (tmp_path / "q.toml").write_text("d = 20\nzzzzzz = 1\n")  # nothing close: no guess
    assert main(["sim", "multiview", "--config", str(tmp_path / "q.toml"), "--out", str(tmp_path / "o")]) == 2
    assert "did you mean" not in capsys.readouterr().err


SEMAPHORE = '''
import multiprocessing as mp, sys, time
from pathlib import Path


def busy(gate):
    from tqdm import tqdm  # tqdm's lock is a named semaphore in a spawned process
    for _ in tqdm(range(2), disable=True):
        pass
    Path(gate).write_text("running")
    time.sleep(120)


def pool_worker(conn):
    from verify.sweep.pool import _worker
    _worker(conn)


if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    gate = Path(sys.argv[2])
    if sys.argv[1] == "pool":  # the sweep's worker, running a point that made a tqdm bar, terminated (Ctrl-C)
        from verify.sweep.pool import LocalPool
        pool = LocalPool(1)
        it = pool.run([(0, "k", ("semaphore_exp", {}, 0, ("semaphore_exp",)))])
        import threading
        threading.Thread(target=lambda: list(it), daemon=True).start()
        while not gate.exists():
            time.sleep(0.05)
        pool.close(cancel=True)
    else:  # a bare spawned process doing the same, terminated: the control
        p = ctx.Process(target=busy, args=(str(gate),))
        p.start()
        while not gate.exists():
            time.sleep(0.05)
        p.terminate()
        p.join()
    print("ended")
'''
SEMAPHORE_EXP = '''
import os, time
from pathlib import Path
from verify.sweep import Experiment, register_experiment


def run(params, seed):
    from tqdm import tqdm
    for _ in tqdm(range(2), disable=True):
        pass
    Path(os.environ["GATE"]).write_text("running")
    time.sleep(120)
    return {}


register_experiment(Experiment("semaphore_exp", run, "waits", params={}))
'''


def test_an_interrupted_sweep_worker_leaves_no_semaphore_behind(tmp_path):
    """Terminating the pool's worker (what Ctrl-C of a sweep does) used to leave tqdm's named semaphore to
    multiprocessing's resource tracker, which warned "leaked semaphore" at exit; the control (a bare spawned
    process terminated the same way) shows that the test sees the warning."""
    (tmp_path / "sem.py").write_text(textwrap.dedent(SEMAPHORE))
    (tmp_path / "semaphore_exp.py").write_text(textwrap.dedent(SEMAPHORE_EXP))
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    out = {}
    for how in ("pool", "bare"):
        gate = tmp_path / f"gate-{how}"
        r = subprocess.run([sys.executable, "sem.py", how, str(gate)], cwd=tmp_path, env={**env, "GATE": str(gate)},
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0 and "ended" in r.stdout, r.stderr[-2000:]
        out[how] = r.stderr
    assert "leaked semaphore" in out["bare"]
    assert "leaked semaphore" not in out["pool"] and "resource_tracker" not in out["pool"], out["pool"]


# ------------------------------------------------------------------------------- every link of a report resolves
def markdown_links(path) -> list[str]:
    """The local targets of the Markdown links and images of ``path`` (web addresses and anchors aside)."""
    import re

    text = Path(path).read_text()
    return [t for t in re.findall(r"\]\(([^)\s]+)\)", text) if not t.startswith(("http://", "https://", "#"))]


def assert_links_resolve(path) -> None:
    path = Path(path)
    links = markdown_links(path)
    missing = [t for t in links if not (path.parent / t).exists()]
    assert not missing, f"{path.name} links to missing files: {missing}"


def test_the_link_checker_sees_a_broken_link(tmp_path):
    (tmp_path / "figs").mkdir()
    (tmp_path / "figs" / "a.png").write_bytes(b"x")
    good = tmp_path / "good.md"
    good.write_text("![a](figs/a.png) and [web](https://example.org)\n")
    assert_links_resolve(good)
    bad = tmp_path / "bad.md"
    bad.write_text("![a](figs/figs/a.png)\n")  # the doubled folder GEOMETRY.md used to write
    with pytest.raises(AssertionError, match="figs/figs/a.png"):
        assert_links_resolve(bad)


FIG_PLUGIN = '''
from verify import Result, check, register_claim
from paper_figs.registry import figure

register_claim("{p}.one", paper="MY", kind="numeric", claim="1 = 1")


@check("{p}.one", equation="Eq 1", kind="numeric", tolerance=1e-12, tolerance_reason="exact",
       negative_control="1 = 2", figures=("{p}.fig",))
def one(ctx, planted):
    err = 1.0 if planted else 0.0
    return Result(measured=err, expected="0", holds=err == 0, miss=err / 1e-12)


@figure("{p}.fig", answers="MY Fig 1", caption="a line", checks=("{p}.one",))
def draw(quick):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    return fig
'''


def test_every_link_of_the_verify_report_resolves(tmp_path, monkeypatch):
    import uuid

    from tests.helpers import isolated_registry
    from verify.cli import main

    prefix = f"lk{uuid.uuid4().hex[:6]}"
    (tmp_path / f"{prefix}_checks.py").write_text(textwrap.dedent(FIG_PLUGIN.format(p=prefix)))
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    monkeypatch.chdir(tmp_path)
    with isolated_registry(f"{prefix}_checks", prefix):
        assert main(["verify", "--plugins", f"{prefix}_checks", f"{prefix}.one", "--quick", "-q", "--report",
                     str(tmp_path / "rep")]) == 0
    assert markdown_links(tmp_path / "rep" / "REPORT.md")  # it has a figure to link
    assert_links_resolve(tmp_path / "rep" / "REPORT.md")
