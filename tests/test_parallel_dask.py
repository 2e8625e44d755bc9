"""``verify.run(scheduler=...)`` / ``theorylab verify --scheduler tcp://HOST:PORT``: the preparations and checks of a
run as tasks of a Dask cluster (verify/dask_pool.py) give the local run's statuses and numbers, ship the artifacts
back into the report, and survive a worker killed in the middle of a preparation (run again elsewhere, named)."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from tests.helpers import isolated_registry
from verify import api

distributed = pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parents[1]
HANG = 600.0  # limits only a hang reaches: every wait below is for an event (a file, a worker), not a duration

PLUGIN = '''
import json
import os
import time
from pathlib import Path

from verify import Result, check, register_claim
from verify.parallel import prep

GATE = Path({gate!r})
for cid in ("ok", "artifact", "gated"):
    register_claim(f"{p}.{{cid}}", paper="MY", kind="numeric", claim=f"{{cid}} claim")


def _result(x, planted):
    err = abs(x - (1.0 if planted else 0.0))
    return Result(measured=err, expected="<= 1e-12", holds=bool(err <= 1e-12), miss=err / 1e-12)


@check("{p}.ok", equation="-", kind="numeric", tolerance=1e-12, tolerance_reason="exact", negative_control="off by 1")
def ok(ctx, planted):
    return _result(float(ctx.rng("x").integers(0, 1)), planted)


@check("{p}.artifact", equation="-", kind="numeric", tolerance=1e-12, tolerance_reason="exact",
       negative_control="off by 1")
def artifact(ctx, planted):
    (ctx.artifact_dir / "seed.json").write_text(json.dumps({{"seed": ctx.seed, "pid": os.getpid()}}))
    return _result(0.0, planted)


def slow_once(tag):
    """The first attempt writes its pid and waits for the test (which kills it); a later attempt returns."""
    first = GATE / "first-attempt"
    if not first.exists():
        first.write_text(str(os.getpid()))
        while True:
            time.sleep(0.05)
    (GATE / f"done-{{tag}}").write_text(str(os.getpid()))


@check("{p}.gated", equation="-", kind="numeric", tolerance=1e-12, tolerance_reason="exact",
       negative_control="off by 1", prepare=lambda ctx: [prep("slow once", slow_once, "x")])
def gated(ctx, planted):
    return _result(0.0 if (GATE / "done-x").exists() else 1.0, planted)
'''


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    name = f"dask_plugin_{uuid.uuid4().hex[:8]}"
    prefix = f"d{uuid.uuid4().hex[:6]}"
    gate = tmp_path / "gate"
    gate.mkdir()
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(PLUGIN.format(p=prefix, gate=str(gate))))
    monkeypatch.syspath_prepend(str(tmp_path))
    # the workers are other processes: they find the plugin and the project through PYTHONPATH, one thread each
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), str(ROOT)]))
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
        monkeypatch.setenv(k, "1")
    with isolated_registry(name):
        yield name, prefix, gate


def _key(o):
    return (o.id, o.status, o.measured, o.negative_control_result, o.positive_control_result, o.error, o.finding)


def test_a_local_cluster_gives_the_local_verdicts_and_ships_the_artifacts(plugin, tmp_path):
    name, p, _ = plugin
    ids = [f"{p}.ok", f"{p}.artifact", "vc.decomposition", "nd.kkt_sparsity", "vc.fuzziness_counterexample"]
    local = api.run(ids, quick=True, plugins=[name], jobs=1)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as lc, \
            distributed.Client(lc) as client:
        remote = api.run(ids, quick=True, plugins=[name], scheduler=client, report_dir=tmp_path / "R")
        api.write_report(remote, tmp_path / "R")
    assert [o.id for o in remote] == [o.id for o in local]
    assert [_key(o) for o in remote] == [_key(o) for o in local]
    assert remote.jobs == 2
    art = json.loads((tmp_path / "R" / "artifacts" / f"{p}.artifact" / "seed.json").read_text())
    assert art["seed"] == 0 and art["pid"] != os.getpid()  # written by a worker, shipped back here


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(cond, what: str):
    t0 = time.monotonic()
    while not cond():
        if time.monotonic() - t0 > HANG:
            pytest.fail(f"{what}: not within {HANG:.0f} s (a hang)")
        time.sleep(0.05)


def test_dask_scheduler_and_workers_started_here_and_a_worker_killed_mid_preparation(plugin, tmp_path):
    """`dask scheduler` + two `dask worker` processes; the CLI's --scheduler; the worker running a preparation is
    SIGKILLed: the cluster runs it again on a worker, the check passes, the report names what happened."""
    name, p, gate = plugin
    port = _free_port()
    addr = f"tcp://127.0.0.1:{port}"
    env = dict(os.environ)
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                               "--port", str(port), "--dashboard-address", ":0"], env=env, cwd=tmp_path,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        procs += [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", addr, "--nthreads", "1",
                                    "--nworkers", "1", "--no-dashboard"], env=env, cwd=tmp_path,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(2)]

        def two_workers():
            try:
                with distributed.Client(addr, timeout="2s") as c:
                    return len(c.scheduler_info()["workers"]) == 2
            except OSError:
                return False
        _wait(two_workers, "the scheduler and two workers")
        cmd = [sys.executable, "-m", "verify.cli", "verify", f"{p}.gated", f"{p}.ok", "vc.decomposition", "--quick",
               "--plugins", name, "--scheduler", addr, "--report", str(tmp_path / "R"), "--json", "-", "-q"]
        run = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _wait(lambda: (gate / "first-attempt").exists() or run.poll() is not None, "the preparation started")
        assert run.poll() is None, run.communicate()[1][-2000:]
        os.kill(int((gate / "first-attempt").read_text()), signal.SIGKILL)  # the worker process running it dies
        out, err = run.communicate(timeout=HANG)
        assert run.returncode == 0, err[-3000:]
        rows = [r for r in (json.loads(ln) for ln in out.splitlines() if ln.strip()) if "id" in r]
        assert {r["id"]: r["status"] for r in rows} == {f"{p}.gated": "pass", f"{p}.ok": "pass",
                                                        "vc.decomposition": "pass"}
        assert (gate / "done-x").exists()
        meta = json.loads((tmp_path / "R" / "report.json").read_text())["meta"]
        assert "died 1 time" in meta["preparations"]["slow once"]["worker died"]
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()


def test_an_unreachable_scheduler_is_a_clear_error(capsys):
    from verify.cli import main

    assert main(["verify", "vc.decomposition", "--quick", "--scheduler", f"tcp://127.0.0.1:{_free_port()}"]) == 2
    assert "cannot reach the dask scheduler" in capsys.readouterr().err
    assert main(["verify", "vc.decomposition", "--quick", "--scheduler", "nowhere"]) == 2
    assert "tcp://HOST:PORT" in capsys.readouterr().err
