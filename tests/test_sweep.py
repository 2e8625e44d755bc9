"""Resumable sweeps (verify/sweep/): resume, faults (dying workers, damaged files, shared folder), Dask, bad input."""
from __future__ import annotations

import json
import math
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import default_sigint
from verify import sweep
from verify.sweep import experiments as sweep_experiments
from verify.cli import main as cli_main
from verify.sweep.plot import plot_data
from verify.sweep.store import FolderBusy, FolderLock

ROOT = Path(__file__).resolve().parents[1]


def _essence(res_or_dir):
    """(params, seed, status, result) per point, keyed by point key: what must not depend on where it ran."""
    res = sweep.load_sweep(res_or_dir) if isinstance(res_or_dir, (str, Path)) else res_or_dir
    return {r["key"]: (r["params"], r["seed"], r["status"], r.get("result")) for r in res.records}


def _parse_all(out: Path) -> int:
    """Every JSON file of a sweep folder parses; returns how many point files there are."""
    for f in out.rglob("*.json"):
        json.loads(f.read_text())
    return len(list((out / "points").glob("*.json")))


# ------------------------------------------------------------------------------------------- points
def test_expand_grid_zip_fixed_replicates():
    pts = sweep.expand_points({"grid": {"a": [1, 2], "b": ["u", "v"]}, "zip": {"c": [0, 1], "d": [5, 6]},
                               "fixed": {"e": 9}, "replicates": 2})
    assert len(pts) == 2 * 2 * 2 * 2
    assert pts[0] == {"e": 9, "a": 1, "b": "u", "c": 0, "d": 5, "replicate": 0}
    assert {(p["c"], p["d"]) for p in pts} == {(0, 5), (1, 6)}  # zipped, not crossed
    assert sweep.expand_points({"x": [1, 2, 3], "n": 4}) == [{"n": 4, "x": v} for v in (1, 2, 3)]
    assert sweep.expand_points({"fixed": {"x": 1}, "seeds": [7, 8]}) == [{"x": 1, "replicate": 7},
                                                                          {"x": 1, "replicate": 8}]


def test_seed_depends_on_params_and_sweep_seed_not_on_order():
    a = sweep.derive_seed(0, "toy", {"x": 1.0, "n": 8})
    assert a == sweep.derive_seed(0, "toy", {"n": 8, "x": 1.0})
    assert a != sweep.derive_seed(1, "toy", {"x": 1.0, "n": 8})
    assert a != sweep.derive_seed(0, "toy", {"x": 2.0, "n": 8})
    assert 0 <= a < 2**32


def test_to_jsonable_converts_numpy_keeps_non_finite_floats():
    out = sweep.to_jsonable({"a": np.arange(3), "b": np.float32(0.5), "c": np.float64("nan"), 1: (np.int64(2),),
                             "d": -np.inf})
    assert math.isnan(out.pop("c"))
    assert out == {"a": [0, 1, 2], "b": 0.5, "1": [2], "d": -math.inf}
    assert all(type(v) in (list, float) for v in out.values())
    assert json.loads(json.dumps(out)) == out
    with pytest.raises(TypeError, match="not JSON-serialisable"):
        sweep.to_jsonable({"x": object()})


# ------------------------------------------------------------------------------------------- resume
def test_resume_skips_finished_points_and_extends(tmp_path):
    out = tmp_path / "s"
    first = sweep.run_sweep("toy", {"x": [0.5, 1.0, 2.0]}, out, scheduler="local", workers=2, progress=False)
    assert first.ok and first.ran == 3 and first.skipped == 0
    files = sorted((out / "points").glob("*.json"))
    mtimes = [f.stat().st_mtime_ns for f in files]
    again = sweep.run_sweep("toy", {"x": [0.5, 1.0, 2.0]}, out, scheduler="serial", progress=False)
    assert again.ran == 0 and again.skipped == 3 and again.ok
    assert [f.stat().st_mtime_ns for f in files] == mtimes  # not rewritten
    assert _essence(again) == _essence(first)
    more = sweep.run_sweep("toy", {"x": [0.5, 1.0, 2.0, 4.0]}, out, scheduler="serial", progress=False)
    assert more.ran == 1 and more.skipped == 3
    for name in ("index.json", "summary.csv", "summary.md", "plot.png", "sweep.json"):
        assert (out / name).stat().st_size > 0, name
    index = json.loads((out / "index.json").read_text())
    assert index["counts"] == {"done": 4}
    assert "| x |" in (out / "summary.md").read_text().replace("| x | n |", "| x |")


def _corrupt(rec: dict, how: str) -> str:
    """A point file's text damaged the ways a crash, a hand edit or another program could leave it."""
    rec = json.loads(json.dumps(rec))
    if how == "truncated":
        return json.dumps(rec)[:40]
    if how == "not_object":
        return "[1, 2]"
    if how == "extra_key":
        rec["note"] = "hand-edited"
    elif how == "missing_key":
        del rec["seed"]
    elif how == "wrong_param":
        rec["params"]["n"] = 4.5
    elif how == "param_as_string":
        rec["params"]["x"] = str(rec["params"]["x"])
    elif how == "wrong_seed":
        rec["seed"] += 1
    elif how == "wrong_status":
        rec["status"] = "ok"
    elif how == "result_missing_field":
        del rec["result"]["y"]
    elif how == "result_not_object":
        rec["result"] = 3.0
    elif how == "other_version":
        rec["version"] = "0"
    return json.dumps(rec)


CORRUPTIONS = {"truncated": "not valid JSON", "not_object": "not a JSON object", "extra_key": "unknown key.*note",
               "missing_key": "missing key.*seed", "wrong_param": "params .* are not the point's",
               "param_as_string": "params .* are not the point's", "wrong_seed": "seed is",
               "wrong_status": "status 'ok'", "result_missing_field": "result lacks field.*'y'",
               "result_not_object": "result is float", "other_version": "version is '0'"}


def test_corrupt_point_files_are_reported_and_replaced(tmp_path, caplog):
    """A point file that is not a record of its point was taken as done, silently. Each damage
    below is named in a warning and in ``res.replaced``, and the point runs again."""
    out = tmp_path / "s"
    spec = {"x": [float(i) for i in range(len(CORRUPTIONS) + 1)]}
    ref = sweep.run_sweep("toy", spec, out, scheduler="serial", progress=False)
    victims = {}
    for rec, how in zip(ref.records, CORRUPTIONS):
        path = out / "points" / f"{rec['key']}.json"
        path.write_text(_corrupt(json.loads(path.read_text()), how))
        victims[rec["key"]] = (how, path)
    (out / "points" / ".x.json.abc.tmp").write_text("partial")  # a write killed before its rename
    with caplog.at_level("WARNING", logger="theorylab.sweep"):
        res = sweep.run_sweep("toy", spec, out, scheduler="serial", progress=False)
    assert res.ran == len(CORRUPTIONS) and res.skipped == 1 and res.ok
    assert {k for k, _ in res.replaced} == set(victims)
    for key, why in res.replaced:
        how, path = victims[key]
        assert re.search(CORRUPTIONS[how], why), (how, why)
        assert f"{path} is not a record of the point" in caplog.text and why in caplog.text  # said, not silent
    assert not list((out / "points").glob(".*.tmp"))
    assert _essence(res) == _essence(ref) == _essence(out)  # rewritten with the true records


def test_load_sweep_does_not_trust_a_corrupt_point_file(tmp_path):
    out = tmp_path / "s"
    ref = sweep.run_sweep("toy", {"x": [1.0, 2.0]}, out, scheduler="serial", progress=False)
    victim = out / "points" / f"{ref.records[1]['key']}.json"
    victim.write_text(_corrupt(json.loads(victim.read_text()), "wrong_param"))
    res = sweep.load_sweep(out)
    assert [r["status"] for r in res.records] == ["done", "pending"]


def test_failed_point_recorded_and_rerun_only_with_retry_failed(tmp_path, capsys):
    cfg = tmp_path / "f.toml"
    cfg.write_text('experiment = "toy"\nseed = 1\n[zip]\nx = [1.0, 2.0, 3.0]\nfail = [false, true, false]\n')
    out = tmp_path / "out"
    args = ["sweep", str(cfg), "--out", str(out), "--scheduler", "serial", "--no-progress"]
    assert cli_main(args) == 1
    assert "FAILED" in capsys.readouterr().err
    res = sweep.load_sweep(out)
    (bad,) = res.failed
    assert bad["params"]["x"] == 2.0 and bad["result"] is None
    assert bad["error"] == "ValueError: toy: planted failure at x=2.0"
    assert "Traceback" in bad["traceback"] and "_toy" in bad["traceback"]
    assert len(res.done) == 2
    path = out / "points" / f"{bad['key']}.json"
    stamp = json.loads(path.read_text())["finished"]
    os.utime(path, ns=(0, 0))
    again = sweep.run_sweep("toy", sweep.load_config(cfg)["points"], out, scheduler="serial", seed=1,
                            progress=False)
    assert again.ran == 0 and len(again.failed) == 1  # not rerun without retry_failed
    assert path.stat().st_mtime_ns == 0
    assert cli_main(args + ["--retry-failed"]) == 1  # rerun (and it fails again: the failure is planted)
    assert path.stat().st_mtime_ns != 0 and json.loads(path.read_text())["status"] == "failed"
    assert "finished" in json.loads(path.read_text()) and stamp
    summary = (out / "summary.md").read_text()
    assert "failed points" in summary and "planted failure" in summary


# --------------------------------------------------------------------------------------- kill test
# A plugin experiment whose points wait at a gate: point number k (in the order they finish) may finish only once
# the file <gate>/allow holds a number >= k. The interrupt tests open the gate point by point and signal the sweep
# while its next point waits there, so they wait for the sweep's own files, never for a duration: a loaded or slow
# machine only makes them take longer (HANG is a limit only a hang reaches).
HANG = 600.0
GATED = """
import os
import time
from pathlib import Path

import numpy as np

from verify.sweep import Experiment, Param, register_experiment


def gated(params, seed):
    gate = Path(os.environ["SWEEP_GATE"])
    (gate / "done").mkdir(exist_ok=True)
    while int((gate / "allow").read_text() or 0) <= len(list((gate / "done").iterdir())):
        time.sleep(0.01)
    z = np.random.default_rng(seed).standard_normal(int(params["n"]))
    (gate / "done" / f"{params['x']}").write_text("")
    return {"y": params["x"] * float(z.mean()) + float(z @ z) / params["n"]}


register_experiment(Experiment(name="gated", run=gated, params={"x": Param("float", 0.0), "n": Param("int", 8, lo=1)},
                               results=("y",), description="waits at the test's gate"))
"""
GATED_CFG = """experiment = "gated"
seed = 5
[grid]
x = [{xs}]
[fixed]
n = 32
"""


def _gated(tmp_path, xs, name="kill"):
    """(command, env, gate folder) of a one-worker sweep of the gated plugin over ``xs``."""
    (tmp_path / "gated_plugin.py").write_text(GATED)
    cfg = tmp_path / f"{name}.toml"
    cfg.write_text(GATED_CFG.format(xs=", ".join(map(str, xs))))
    gate = tmp_path / f"gate-{name}"
    gate.mkdir()
    _open(gate, 0)
    cmd = [sys.executable, "-m", "verify.cli", "sweep", str(cfg), "--out", str(tmp_path / name), "--workers", "1",
           "--no-progress", "--plugins", "gated_plugin"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)]), "SWEEP_GATE": str(gate)}
    return cmd, env, gate


def _open(gate: Path, n: int) -> None:
    """Let the first n points (in finishing order) finish."""
    tmp = gate / "allow.tmp"
    tmp.write_text(str(n))
    tmp.replace(gate / "allow")


def _wait_for(cond, proc, what: str) -> None:
    deadline = time.monotonic() + HANG
    while not cond():
        if proc.poll() is not None:
            pytest.fail(f"the sweep ended (rc {proc.returncode}) before {what}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"{what}: not within {HANG:.0f} s (a hang)")
        time.sleep(0.01)


def _interrupt(cmd, cwd, env, out: Path, gate: Path, after: int, sig) -> int:
    """Start the sweep with the gate open for ``after`` points; once their files exist (the next point waits at the
    gate), send ``sig`` to its process group. Returns the number of point files at that moment."""
    _open(gate, after)
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, preexec_fn=default_sigint)
    n_files = lambda: len(list((out / "points").glob("*.json"))) if (out / "points").exists() else 0  # noqa: E731
    try:
        _wait_for(lambda: n_files() >= after, proc, f"{after} points finished")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, sig)
        err = proc.communicate(timeout=HANG)[1].decode()
    expected = 130 if sig == signal.SIGINT else -signal.SIGKILL
    assert proc.returncode == expected, err[-2000:]
    return n_files()


def test_sigkill_mid_run_loses_nothing_and_resume_matches_uninterrupted(tmp_path):
    xs = [round(0.25 * i, 2) for i in range(12)]
    cmd, env, gate = _gated(tmp_path, xs)
    out = tmp_path / "kill"
    # Ctrl-C while the 4th point waits: exits 130 at once, the 3 finished points kept
    n_int = _interrupt(cmd, tmp_path, env, out, gate, 3, signal.SIGINT)
    assert n_int == 3 and _parse_all(out) == 3
    # SIGKILL of the sweep and its pool worker while the 7th point waits (resuming from the interrupted run)
    n_at_kill = _interrupt(cmd, tmp_path, env, out, gate, n_int + 3, signal.SIGKILL)
    assert n_at_kill == n_int + 3
    n_files = _parse_all(out)  # no half-written file: every point file (and index, manifest) parses
    assert n_files == n_at_kill
    for f in (out / "points").glob("*.json"):
        assert json.loads(f.read_text())["status"] == "done"
    # resume: the same command finishes the rest
    _open(gate, len(xs))
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=HANG)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"({len(xs) - n_files} run now, {n_files} found finished)" in done.stdout
    assert not list((out / "points").glob(".*.tmp"))
    # identical to an uninterrupted run, point by point
    ref_gate = tmp_path / "gate-ref"
    ref_gate.mkdir()
    _open(ref_gate, len(xs))
    ref = subprocess.run([*cmd[:cmd.index("--out") + 1], str(tmp_path / "ref"), *cmd[cmd.index("--out") + 2:]],
                         cwd=tmp_path, env={**env, "SWEEP_GATE": str(ref_gate)}, capture_output=True, text=True,
                         timeout=HANG)
    assert ref.returncode == 0, ref.stderr[-2000:]
    assert _point_files(out) == _point_files(tmp_path / "ref")
    assert len(_point_files(out)) == len(xs)


def _point_files(out: Path) -> dict:
    """(params, seed, status, result) of each point file, by file name (a plugin sweep, read without the plugin)."""
    recs = {f.name: json.loads(f.read_text()) for f in (out / "points").glob("*.json")}
    return {k: (r["params"], r["seed"], r["status"], r.get("result")) for k, r in recs.items()}


# ----------------------------------------------------------------------------------------------- dask
def test_dask_localcluster_matches_local_run(tmp_path):
    distributed = pytest.importorskip("distributed")
    import dask

    spec = {"grid": {"x": [0.5, 1.0, 1.5]}, "fixed": {"n": 12}, "seeds": [0, 1]}
    local = sweep.run_sweep("toy", spec, tmp_path / "local", scheduler="local", workers=2, progress=False)
    # allowed-failures = 0: the scheduler gives up on a task at its first dead worker (default 3 retries)
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None) as cluster:
        addr = cluster.scheduler_address
        assert addr.startswith("tcp://127.0.0.1:")
        remote = sweep.run_sweep("toy", spec, tmp_path / "dask", scheduler=addr, progress=False)
        # BLAS-heavy and ill-conditioned (n = p): bit-identical only because every task runs one BLAS thread
        floors = {"grid": {"n": [24, 32]}, "fixed": {"p": 32}}
        remote_floors = sweep.run_sweep("massive_floors", floors, tmp_path / "dask_mf", scheduler=addr,
                                        progress=False)
        # a point that kills its dask worker: KilledWorker -> recorded crashed, the other points done
        crash = sweep.run_sweep("toy", [{"x": 1.0}, {"x": 2.0, "crash": True}, {"x": 3.0}], tmp_path / "dask_crash",
                                scheduler=addr, progress=False)
    assert [r["status"] for r in crash.records] == ["done", "crashed", "done"]
    assert "killed its dask worker" in crash.crashed[0]["error"]
    assert remote.ok and remote.ran == 6
    assert _essence(remote) == _essence(local)
    here = sweep.run_sweep("massive_floors", floors, tmp_path / "serial_mf", scheduler="serial", progress=False)
    assert remote_floors.ok and _essence(remote_floors) == _essence(here)
    workers = {r["worker"].rsplit(":", 1)[1] for r in remote.records}
    assert str(os.getpid()) not in workers  # it really ran on the cluster's worker processes


# ------------------------------------------------------------------------------------------ bad input
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("kwargs, match", [
    (dict(experiment="nope", points={"x": [1]}), "unknown experiment 'nope'; known: .*toy"),
    (dict(experiment="toy", points={"y": [1]}), "has no parameter 'y'"),
    (dict(experiment="toy", points={"x": []}), "empty grid: parameter 'x'"),
    (dict(experiment="toy", points=[]), "empty sweep"),
    (dict(experiment="toy", points={"grid": {}}), "empty grid"),
    (dict(experiment="toy", points={"x": [1, 1]}), "duplicate point"),
    (dict(experiment="toy", points={"zip": {"x": [1, 2], "n": [3]}}), "one length"),
    (dict(experiment="toy", points={"x": [1]}, scheduler="mpi://h"), "tcp://HOST:PORT"),
    (dict(experiment="toy", points={"x": [1]}, seed=1.5), "seed must be an integer"),
    (dict(experiment="toy", points={"x": [float("nan")]}), "not a JSON number"),
    (dict(experiment="toy", points={"x": [1]}, workers=0), "workers must be"),
    # parameters checked against the experiment's declaration (they used to be coerced silently)
    (dict(experiment="toy", points={"n": [4.5]}), "'toy': parameter 'n' must be an integer, got 4.5"),
    (dict(experiment="toy", points={"x": ["1"]}), "parameter 'x' must be a number"),
    (dict(experiment="toy", points={"fail": [0]}), "parameter 'fail' must be true or false"),
    (dict(experiment="lyapunov", points={"sort": ["false"]}), "parameter 'sort' must be true or false"),
    (dict(experiment="lyapunov", points={"dist": ["gauss"]}), "parameter 'dist' must be one of 'gaussian'"),
    (dict(experiment="lyapunov", points={"L": [0]}), "parameter 'L' must be >= 1, got 0"),
    (dict(experiment="massive_floors", points={"n": [1]}), "parameter 'n' must be >= 2"),
    (dict(experiment="massive_floors", points={"noise": [-0.1]}), "parameter 'noise' must be >= 0"),
    (dict(experiment="massive_floors", points={"decay": [1e400]}), "parameter 'decay'"),
    (dict(experiment="multiview", points={"k": [2.5]}), "'multiview': config key 'k' must be an integer"),
    (dict(experiment="toy", points={"seeds": [[1]], "fixed": {"x": 1.0}}), "'replicate' .* must be an integer"),
    (dict(experiment="toy", points={"x": [1]}, tries=0), "tries must be"),
    (dict(experiment="toy", points={"x": [1]}, wait=-1), "wait must be"),
    # the plot's columns are checked before any point runs
    (dict(experiment="toy", points={"x": [1]}, plot={"y": "nonexistent"}),
     r"\[plot\] y = 'nonexistent' is neither a parameter nor a result field of experiment 'toy'"),
    (dict(experiment="lyapunov", points={"n": [4]}, plot={"hue": "depth"}), r"\[plot\] hue = 'depth'"),
    (dict(experiment="toy", points={"x": [1]}, plot={"colour": "x"}), r"\[plot\]: unknown key"),
    (dict(experiment="toy", points={"x": [1]}, plot={"xscale": "loglog"}), "xscale must be one of"),
])
def test_bad_input_raises_before_writing(tmp_path, kwargs, match):
    out = tmp_path / "never"
    with pytest.raises(ValueError, match=match):
        sweep.run_sweep(out_dir=out, progress=False, **kwargs)
    assert not out.exists()


def test_parameters_recorded_as_they_run(tmp_path):
    """An integral float for an integer parameter is recorded as the integer it runs with (and is the same
    point as the integer), an integer for a float parameter as the float; a direct run checks them too."""
    res = sweep.run_sweep("toy", [{"n": 4.0, "x": 2}], tmp_path / "a", scheduler="serial", progress=False)
    (rec,) = res.records
    assert rec["params"]["n"] == 4 and type(rec["params"]["n"]) is int
    assert rec["params"]["x"] == 2.0 and type(rec["params"]["x"]) is float
    again = sweep.run_sweep("toy", [{"n": 4, "x": 2.0}], tmp_path / "a", scheduler="serial", progress=False)
    assert again.ran == 0 and again.skipped == 1
    assert len(rec["result"]["z"]) == 4
    with pytest.raises(ValueError, match="parameter 'n' must be an integer"):
        sweep_experiments.run("toy", {"n": 4.5}, 0)


def test_layer_distributions_match_sims():
    rm = pytest.importorskip("sims.random_matrix")
    assert sorted(sweep_experiments.LAYER_DISTS) == sorted(rm.DISTS)


def test_unreachable_scheduler_fails_fast_and_writes_nothing(tmp_path, capsys):
    pytest.importorskip("distributed")  # imported before the clock starts: only the connection attempt is timed
    out = tmp_path / "never"
    addr = f"tcp://127.0.0.1:{_free_port()}"
    t0 = time.perf_counter()
    with pytest.raises(ConnectionError, match="cannot reach the dask scheduler"):
        sweep.run_sweep("toy", {"x": [1.0]}, out, scheduler=addr, connect_timeout=1.0, progress=False)
    assert time.perf_counter() - t0 < 120  # gives up (a refused port, 1 s timeout) instead of retrying: no hang
    assert not out.exists()
    cfg = tmp_path / "c.toml"
    cfg.write_text('experiment = "toy"\n[grid]\nx = [1.0]\n')
    assert cli_main(["sweep", str(cfg), "--out", str(out), "--scheduler", addr, "--connect-timeout", "1"]) == 2
    assert "cannot reach the dask scheduler" in capsys.readouterr().err
    assert not out.exists()


def test_config_errors(tmp_path, capsys):
    bad = {"unknown_key.toml": ('experiment = "toy"\nfoo = 1\n[grid]\nx = [1]\n', "unknown key"),
           "no_exp.toml": ("[grid]\nx = [1]\n", "missing 'experiment"),
           "no_grid.toml": ('experiment = "toy"\n', "empty grid"),
           "bad_param.toml": ('experiment = "massive_floors"\n[grid]\nm = [1]\n', "has no parameter 'm'"),
           "bad_toml.toml": ("experiment = \n", "invalid TOML"),
           "bad_plot.toml": ('experiment = "toy"\n[grid]\nx = [1]\n[plot]\nx = "x"\ny = "yy"\n',
                             "y = 'yy' is neither a parameter")}
    for name, (text, match) in bad.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(ValueError, match=match):
            sweep.load_config(tmp_path / name)
        assert cli_main(["sweep", str(tmp_path / name), "--out", str(tmp_path / "o")]) == 2
        assert match.split("'")[0] in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------------------------------- the lock
def test_a_second_sweep_on_a_locked_folder_refuses_or_waits(tmp_path):
    out = tmp_path / "s"
    with FolderLock(out):
        with pytest.raises(FolderBusy, match=rf"{out} is in use by another sweep \(pid {os.getpid()} on "):
            sweep.run_sweep("toy", {"x": [1.0]}, out, scheduler="serial", progress=False)
        t0 = time.monotonic()
        with pytest.raises(FolderBusy, match="rerun with --wait"):
            sweep.run_sweep("toy", {"x": [1.0]}, out, scheduler="serial", progress=False, wait=0.3)
        assert time.monotonic() - t0 >= 0.3
    assert not (out / "points").exists()  # the refused sweeps wrote nothing
    assert sweep.run_sweep("toy", {"x": [1.0]}, out, scheduler="serial", progress=False).ran == 1


def test_a_lock_left_by_a_killed_process_does_not_block(tmp_path):
    out = tmp_path / "s"
    code = (f"import os, signal; from verify.sweep.store import FolderLock; FolderLock({str(out)!r}).__enter__(); "
            f"os.kill(os.getpid(), signal.SIGKILL)")
    proc = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert proc.returncode == -signal.SIGKILL and (out / ".lock").stat().st_size > 0
    res = sweep.run_sweep("toy", {"x": [1.0]}, out, scheduler="serial", progress=False)  # wait=0: no waiting
    assert res.ran == 1 and f'"pid": {os.getpid()}' in (out / ".lock").read_text()


def test_two_sweep_processes_on_one_folder_run_each_point_once(tmp_path):
    """Two sweeps on one folder both ran every point. Now the second refuses (exit 2, naming
    the first), and with --wait it waits for the first and finds every point finished. The first sweep's points
    wait at a gate that the test opens only once the third is waiting, so no step depends on speed."""
    cmd, env, gate = _gated(tmp_path, [1.0, 2.0, 3.0, 4.0], name="two")
    out = tmp_path / "two"
    first = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    third = None
    try:
        _wait_for(lambda: (out / ".lock").exists() and (out / ".lock").stat().st_size, first, "the first took the lock")
        second = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=HANG)
        assert first.poll() is None  # its first point waits at the closed gate
        assert second.returncode == 2, second.stderr
        assert f"is in use by another sweep (pid {first.pid} on" in second.stderr
        third = subprocess.Popen(cmd + ["--wait"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        seen = []  # its stderr up to the line saying it waits (readline blocks until a line or the end)
        while not seen or ("waiting for the other sweep" not in seen[-1] and seen[-1]):
            seen.append(third.stderr.readline())
        assert "waiting for the other sweep" in seen[-1], "".join(seen)
        _open(gate, 4)
        out3, err3 = third.communicate(timeout=HANG)
        assert third.returncode == 0, err3
        assert "(0 run now, 4 found finished)" in out3
    finally:
        _open(gate, 4)
        if third is not None and third.poll() is None:
            third.kill()
        out1, err1 = first.communicate(timeout=HANG)
    assert first.returncode == 0 and "(4 run now, 0 found finished)" in out1, err1


# -------------------------------------------------------------------------------------- files, plot
def test_output_files_get_normal_permissions(tmp_path):
    """Sweep files were created 0600 (mkstemp). With umask 022 they are 0644."""
    from sims.cache import atomic_write_bytes

    old = os.umask(0o022)
    try:
        atomic_write_bytes(tmp_path / "probe", b"x")
        if stat.S_IMODE((tmp_path / "probe").stat().st_mode) == 0o600:
            pytest.skip("sims.cache.atomic_write_bytes still creates 0600 files (its fix is on another branch)")
        out = tmp_path / "s"
        sweep.run_sweep("toy", {"x": [1.0, 2.0]}, out, scheduler="serial", progress=False)
        files = [f for f in out.rglob("*") if f.is_file()]
        assert len(files) == 8  # .lock, sweep.json, index.json, summary.csv/.md, plot.png, 2 points
        assert {f.name: oct(stat.S_IMODE(f.stat().st_mode)) for f in files} == {f.name: "0o644" for f in files}
    finally:
        os.umask(old)


def _fake(params: dict, y: float) -> dict:
    return {"params": params, "seed": 0, "status": "done", "result": {"y": y}}


def test_plot_orders_numeric_legends_by_value_and_uses_log_x_for_geometric_grids():
    recs = [_fake({"L": L, "n": n}, 1.0 / L) for n in (32, 4, 128, 16, 8) for L in (25, 100, 400, 1600)]
    lines, xscale, yscale = plot_data(recs, {"x": "L", "y": "y", "hue": "n"})
    assert [hv for hv, _ in lines] == [4, 8, 16, 32, 128]  # not "128" < "16" < "32" < "4" < "8"
    assert (xscale, yscale) == ("log", "linear")
    assert plot_data(recs, {"x": "L", "y": "y", "hue": "n", "xscale": "linear"})[1] == "linear"
    linear = [_fake({"n": n}, 1.0) for n in (16, 32, 48, 64, 96, 128)]  # massive_floors' n: not geometric
    assert plot_data(linear, {"x": "n", "y": "y"})[1] == "linear"
    mixed = [_fake({"x": 1, "d": d}, 0.0) for d in ("b", 10, None, 2, "a")]
    assert [hv for hv, _ in plot_data(mixed, {"x": "x", "y": "y", "hue": "d"})[0]] == [None, 2, 10, "a", "b"]


def test_example_configs_parse():
    configs = sorted((ROOT / "examples" / "sweeps").glob("*.toml"))
    assert configs
    for path in configs:
        cfg = sweep.load_config(path)
        assert cfg["points"] and cfg["experiment"] in sweep_experiments.EXPERIMENTS


# ------------------------------------------------------------------------------------------ adapters
def test_massive_floors_adapter_matches_beta_law(tmp_path):
    """ND floors of W h: R ~ Beta((p−n+1)/2, (n−1)/2) per category (mean (p−n+1)/p); 0 once n > p."""
    res = sweep.run_sweep("massive_floors", {"grid": {"n": [8, 24, 40]}, "fixed": {"p": 32}, "replicates": 2},
                          tmp_path / "mf", scheduler="serial", progress=False)
    assert res.ok
    for r in res.records:
        n, out = r["params"]["n"], r["result"]
        if n > 32:
            assert out["frac_zero_floor"] == 1.0 and out["rank"] == 32 and out["max_relative_floor"] == 0.0
        else:
            assert out["frac_zero_floor"] == 0.0 and out["rank"] == n
            # per-category sd of the Beta law / sqrt(n) is ≤ 0.05 here; 0.15 is 3 sd for the mean of n
            assert abs(out["mean_relative_floor"] - (32 - n + 1) / 32) < 0.15
    assert (tmp_path / "mf" / "plot.png").exists()


def test_lyapunov_adapter(tmp_path):
    pytest.importorskip("sims.random_matrix")
    rank = pytest.importorskip("theory.rank")
    if not hasattr(rank, "lyapunov_law"):
        pytest.skip("theory.rank.lyapunov_law has not landed")
    cfg = sweep.load_config(ROOT / "examples" / "sweeps" / "lyapunov.toml")  # the Monte Carlo example, cut small
    points = [p for p in cfg["points"] if p["n"] <= 8 and p["L"] <= 400]
    assert len(points) == 12
    res = sweep.run_sweep("lyapunov", points, tmp_path / "ly", scheduler="serial", seed=cfg["seed"],
                          progress=False)
    assert res.ok, res.failed[:1]
    for r in res.records:
        out = r["result"]
        assert len(out["law"]) == len(out["mean_spectrum"]) == r["params"]["n"]
        assert out["max_z"] < 5  # every exponent within 5 standard errors sd_k/sqrt(L*trials) of the psi-law
    err = {L: np.mean([r["result"]["max_abs_gap_error"] for r in res.records if r["params"]["L"] == L])
           for L in (25, 400)}
    assert err[400] < err[25]  # Monte Carlo error shrinks with depth (about 1/sqrt(L))
    planted = sweep.run_sweep("lyapunov", [{**points[-1], "dist": "orthogonal"}], tmp_path / "neg",
                              scheduler="serial", progress=False)
    assert planted.records[0]["result"]["max_z"] > 5  # negative control: Haar layers do not follow the law


TINY_MV = {"d": 20, "P": 8, "k": 2, "m_coarse": 40, "m_fine": 20, "lucky": 4.0, "steps": 10, "batch": 8,
           "eval_every": 5, "n_test": 16}


def _multiview_module():
    mv = pytest.importorskip("sims.multiview.experiment")
    if not hasattr(mv, "run_experiment"):
        pytest.skip("sims.multiview.experiment.run_experiment has not landed")
    return mv


def _drop_seconds(result):
    return {k: v for k, v in result.items() if k != "seconds"}


def test_multiview_adapter_replicates_get_their_own_seed(tmp_path):
    mv = _multiview_module()
    res = sweep.run_sweep("multiview", {"fixed": TINY_MV, "replicates": 2}, tmp_path / "mv", scheduler="serial",
                          progress=False)
    assert res.ok, res.failed[:1]
    a, b = res.records
    assert a["result"]["config"]["seed"] == a["seed"] != b["seed"] == b["result"]["config"]["seed"]
    # the point gives run_experiment's own result for its seed, wherever it runs
    direct = mv.run_experiment({**TINY_MV, "seed": a["seed"]})
    assert _drop_seconds(sweep.to_jsonable(direct)) == _drop_seconds(a["result"])
    assert "summary.hard_gap" in (tmp_path / "mv" / "summary.csv").read_text().splitlines()[0]
    with pytest.raises(ValueError, match="has no parameter 'kk'"):
        sweep.run_sweep("multiview", {"kk": [1]}, tmp_path / "never", progress=False)


def test_granularity_sweep_through_runner_matches_plain_loop(tmp_path):
    """fg.granularity_sweep(..., runner=sweep_runner(...)) gives the plain loop's rows and resumes."""
    mv = _multiview_module()
    if "runner" not in mv.granularity_sweep.__code__.co_varnames:
        pytest.skip("granularity_sweep has no runner= parameter yet")
    args = (TINY_MV, [2, 4], [30], [0])
    ref = mv.granularity_sweep(*args, cache=False)
    runner = sweep.sweep_runner(tmp_path / "g", scheduler="serial", progress=False)
    got = mv.granularity_sweep(*args, runner=runner)
    assert got["rows"] == ref["rows"] and got["by_k"] == ref["by_k"]
    assert len(list((tmp_path / "g" / "points").glob("*.json"))) == 3
    again = sweep.run_sweep("multiview", mv.sweep_points(*args), tmp_path / "g", scheduler="serial", progress=False)
    assert again.ran == 0 and again.skipped == 3


def test_granularity_config_has_the_granularity_sweep_points():
    mv = _multiview_module()
    if not hasattr(mv, "sweep_points"):
        pytest.skip("sims.multiview.experiment.sweep_points has not landed")
    cfg = sweep.load_config(ROOT / "examples" / "sweeps" / "granularity.toml")
    exp = sweep_experiments.get("multiview")

    def keys(points):
        return sorted(sweep.point_key("multiview", exp.version, p, sweep.derive_seed(0, "multiview", p))
                      for p in (exp.canonical(q) for q in points))

    assert keys(cfg["points"]) == keys(mv.sweep_points({}, (2, 4, 8), (100, 200, 400), (0, 1)))


def test_point_that_kills_its_worker_is_recorded_crashed_and_the_rest_finish(tmp_path, capsys):
    """A point whose worker dies (os._exit: not an exception) used to break the whole pool, so
    every point after it was lost, on every rerun. Now the pool replaces the worker, the other points run,
    and the point is recorded ``crashed`` after ``--tries`` deaths; only --retry-failed runs it again."""
    xs = [float(i) for i in range(8)]
    cfg = tmp_path / "c.toml"
    crash = "[" + ", ".join("true" if x == 3 else "false" for x in xs) + "]"
    cfg.write_text(f'experiment = "toy"\nseed = 3\n[zip]\nx = {xs}\ncrash = {crash}\n')
    out = tmp_path / "out"
    args = ["sweep", str(cfg), "--out", str(out), "--workers", "2", "--no-progress"]
    assert cli_main(args) == 1
    stdout, err = capsys.readouterr()
    assert "7/8 done (8 run now, 0 found finished), 0 failed, 1 crashed, 0 lost" in stdout
    assert "CRASHED" in err and "exited with code 3 on each of 2 tries" in err
    res = sweep.load_sweep(out)
    (bad,) = res.crashed
    assert bad["params"]["x"] == 3.0 and bad["tries"] == 2 and bad["result"] is None
    assert json.loads((out / "index.json").read_text())["counts"] == {"done": 7, "crashed": 1}
    assert "crashed points" in (out / "summary.md").read_text()
    # the other points are exactly those of an uninterrupted serial run
    ref = sweep.run_sweep("toy", [p for p in sweep.load_config(cfg)["points"] if not p["crash"]], tmp_path / "ref",
                          scheduler="serial", seed=3, progress=False)
    assert {k: v for k, v in _essence(out).items() if v[2] == "done"} == _essence(ref)
    # a rerun does not try the crashed point again ...
    again = sweep.run_sweep("toy", sweep.load_config(cfg)["points"], out, workers=2, seed=3, progress=False)
    assert again.ran == 0 and again.skipped == 8 and len(again.crashed) == 1
    # ... unless asked to, with its own bound on tries
    assert cli_main(args + ["--retry-failed", "--tries", "1"]) == 1
    assert "(1 run now, 7 found finished), 0 failed, 1 crashed" in capsys.readouterr()[0]
    assert sweep.load_sweep(out).crashed[0]["tries"] == 1


def test_worker_killed_by_a_signal_is_named(tmp_path):
    res = sweep.run_sweep("toy", [{"x": 1.0}, {"x": 2.0, "signal": int(signal.SIGKILL)}], tmp_path / "k",
                          workers=1, tries=1, progress=False)
    assert [r["status"] for r in res.records] == ["done", "crashed"]
    assert "killed by SIGKILL on each of 1 tries" in res.crashed[0]["error"]


def test_pool_workers_that_die_at_start_up_are_an_error_not_crashed_points(tmp_path):
    """A script without the __main__ guard: its spawned workers die while importing it."""
    script = tmp_path / "noguard.py"
    script.write_text(f"from verify.sweep import run_sweep\n"
                      f"run_sweep('toy', {{'x': [1.0, 2.0]}}, {str(tmp_path / 'o')!r}, workers=1, progress=False)\n")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode != 0
    assert "RuntimeError: sweep workers die while starting" in proc.stderr and "__main__" in proc.stderr
    assert not list((tmp_path / "o" / "points").glob("*.json"))


def test_sweep_runner_returns_results_in_order_and_raises_on_failure(tmp_path):
    runner = sweep.sweep_runner(tmp_path / "r", experiment="toy", scheduler="serial", progress=False)
    got = runner([{"x": 2.0}, {"x": 1.0}])
    ref = sweep.run_sweep("toy", [{"x": 2.0}, {"x": 1.0}], tmp_path / "ref", scheduler="serial", progress=False)
    assert got == ref.results() and got[0] != got[1]
    with pytest.raises(RuntimeError, match=r"1 of 2 sweep point\(s\) did not finish.*planted failure.*traceback in"):
        runner([{"x": 1.0}, {"x": 3.0, "fail": True}])


def test_sweep_json_summary_on_stdout_or_to_a_file(tmp_path, capsys):
    """``--json -``: stdout holds one JSON object and nothing else (the summary lines go to stderr);
    ``--json PATH`` writes the same object and keeps the lines on stdout."""
    cfg = tmp_path / "t.toml"
    cfg.write_text('experiment = "toy"\n[grid]\nx = [1.0, 2.0]\nfail = [false, true]\n')
    assert cli_main(["sweep", str(cfg), "--out", str(tmp_path / "o"), "--scheduler", "serial", "--no-progress",
                     "--json", "-"]) == 1
    io = capsys.readouterr()
    out = json.loads(io.out)
    assert out["experiment"] == "toy" and out["ok"] is False and "toy: 2/4 done" in io.err
    assert out["counts"] == {"points": 4, "done": 2, "failed": 2, "crashed": 0, "lost": 0, "ran": 4, "skipped": 0}
    done = [p for p in out["points"] if p["status"] == "done"]
    failed = [p for p in out["points"] if p["status"] == "failed"]
    assert all(set(p["result"]) >= {"y", "z0", "v_norm"} for p in done)
    assert all("planted failure" in p["error"] and p["result"] is None for p in failed)
    assert set(out["files"]) >= {"summary_csv", "summary_md", "index"}
    path = tmp_path / "s.json"
    assert cli_main(["sweep", str(cfg), "--out", str(tmp_path / "o"), "--scheduler", "serial", "--no-progress",
                     "--json", str(path)]) == 1
    io = capsys.readouterr()
    again = json.loads(path.read_text())
    assert again["counts"]["skipped"] == 4 and "toy: 2/4 done" in io.out and str(path) in io.out
    assert [p["key"] for p in again["points"]] == [p["key"] for p in out["points"]]
    assert cli_main(["sweep", str(cfg), "--json", str(tmp_path)]) == 2            # a folder: refused
    assert "--json" in capsys.readouterr().err


# ------------------------------------------------------------------------------------ summaries a person can read
class _HeavyTail:
    """A plugin data model with parameters of its own (the paper's model; tail_scale and nu only recorded)."""

    def __new__(cls, *args, tail_scale: float = 1.0, nu: float = 3.0, **kw):
        from sims.multiview import HierarchicalMultiView

        return HierarchicalMultiView(*args, **kw)


def test_summary_of_a_plugin_models_grid_has_its_axes_and_the_headline_once(tmp_path, monkeypatch):
    """A grid over a plugin model's own parameters: summary.md has those axes as its first columns and the
    headline results once (no config.* copies of the parameters, no summary.* copy beside coarse/fine.final.*, one
    seconds column), the fixed values that differ from the defaults above the table; summary.csv keeps every
    field but the copies; the plot's x is the first axis and hue the second, not the fixed k."""
    _multiview_module()
    from sims.multiview import models
    from verify.sweep.plot import default_spec, plot_data

    monkeypatch.setenv("THEORYLAB_CACHE", str(tmp_path / "cache"))
    models.register_model("heavy_tail_t", _HeavyTail)
    try:
        grid = {"grid": {"tail_scale": [0.5, 1.0, 2.0], "nu": [3.0, 6.0]},
                "fixed": {**TINY_MV, "model": "heavy_tail_t"}}
        res = sweep.run_sweep("multiview", grid, tmp_path / "ht", scheduler="serial", progress=False)
    finally:
        models.unregister_model("heavy_tail_t")
    assert res.ok and len(res.records) == 6
    md = (tmp_path / "ht" / "summary.md").read_text().splitlines()
    header = next(ln for ln in md if ln.startswith("| "))
    cols = [c.strip() for c in header.strip("|").split("|")]
    assert cols == ["tail_scale", "nu", "summary.coarse_easy_err", "summary.coarse_hard_err", "summary.fine_easy_err",
                    "summary.fine_hard_err", "summary.hard_gap", "seconds"]
    assert not any(c.startswith("config.") for c in cols) and cols.count("seconds") == 1
    fixed = next(ln for ln in md if ln.startswith("Fixed: "))
    assert "model = heavy_tail_t" in fixed and "d = 20" in fixed and "k = 2" in fixed
    assert "iota" not in fixed and "sigma0" not in fixed                       # defaults are not repeated
    assert "axes: tail_scale (3 values), nu (2 values)" in "\n".join(md)
    assert sum(ln.startswith("| ") for ln in md) == 1 + 6                     # header + one row per point
    csv_cols = (tmp_path / "ht" / "summary.csv").read_text().splitlines()[0].split(",")
    assert len(csv_cols) == len(set(csv_cols)) and "summary.hard_gap" in csv_cols and "tail_scale" in csv_cols
    assert not any(c.startswith("config.") for c in csv_cols) and "result.seconds" in csv_cols
    spec = default_spec(sweep.experiments.get("multiview"), None, [r["params"] for r in res.records])
    assert (spec["x"], spec["hue"], spec["y"]) == ("tail_scale", "nu", "summary.hard_gap")
    lines, _, _ = plot_data(res.records, spec)
    assert len(lines) == 2 and all(len(by_x) == 3 for _, by_x in lines)    # 2 lines of 3 points, not one dot
    # a [plot] x given by the config is kept, and a grid over k keeps the experiment's default axes
    assert default_spec(sweep.experiments.get("multiview"), {"x": "nu"}, [r["params"] for r in res.records])["x"] \
        == "nu"
    ks = [{"k": k, "d": 20} for k in (2, 4)]
    assert default_spec(sweep.experiments.get("multiview"), None, ks)["x"] == "k"


def test_sweep_memory_budget_refuses_the_largest_point_and_sizes_the_local_pool(monkeypatch, capsys):
    """From the parameters alone: the largest point must fit (refused, naming it), the local pool runs only as
    many points at once as fit side by side, a Dask cluster is left to its workers, --force skips the checks."""
    from sims import resources
    from verify.sweep import budget, experiments

    monkeypatch.delenv(resources.FORCE_ENV, raising=False)
    monkeypatch.setattr(resources, "available", lambda: (int(2.5 * 2 ** 30), "a test's 2.5 GiB"))
    exp = experiments.get("massive_floors")
    recs = [{"params": exp.canonical({"n": n, "p": 64})} for n in (16, 8000)]  # 8000: ~3.1 GB of n×n matrices
    with pytest.raises(resources.InsufficientMemory, match=r"largest point \(n = 8000\)"):
        budget.check(exp, recs, "local", None)
    assert budget.check(exp, recs, "tcp://h:1", None)["bytes"] > 2.5 * 2 ** 30       # not checked here
    assert budget.check(exp, recs, "local", None, force=True)["workers"] is None
    mid = [{"params": exp.canonical({"n": 4500, "p": 64})} for _ in range(4)]     # ~1 GB each: two at a time
    out = budget.check(exp, mid, "local", 4)
    assert out["workers"] == 2 and "running 2 worker(s)" in capsys.readouterr().err
    assert budget.check(exp, mid, "serial", 4)["workers"] == 4
    small = [{"params": exp.canonical({"n": 16, "p": 64})}] * 3
    assert budget.check(exp, small, "local", 3)["workers"] == 3 and capsys.readouterr().err == ""
    toyless = experiments.Experiment("noest", lambda p, s: {}, "no estimate", params={})
    assert budget.check(toyless, [{"params": {}}], "local", 2) == {"workers": 2, "bytes": None, "flops": None}


def test_a_plugin_edited_while_its_point_runs_is_not_stored_under_its_key(tmp_path):
    """The point's key names the code on disk when the sweep started; the worker's code is checked after the run: a
    plugin edited while a point runs makes that point fail (rerun with --retry-failed), never a result stored under
    the old code's key."""
    cmd, env, gate = _gated(tmp_path, [1.0, 2.0], name="edit")
    out = tmp_path / "edit"
    _open(gate, 1)
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(lambda: (gate / "done").exists() and len(list((gate / "done").iterdir())) >= 1 and
              len(list((out / "points").glob("*.json"))) >= 1 if (out / "points").exists() else False, proc,
              "the first point")
    plugin = tmp_path / "gated_plugin.py"
    plugin.write_text(plugin.read_text() + "\n_EDITED = 1  # a code edit while the second point runs\n")
    _open(gate, 2)
    _, err = proc.communicate(timeout=HANG)
    recs = _point_files(out)
    assert sorted(r[2] for r in recs.values()) == ["done", "failed"]
    failed = next(json.loads(f.read_text()) for f in (out / "points").glob("*.json")
                  if json.loads(f.read_text())["status"] == "failed")
    assert "not the code the point's key names" in failed["error"]
