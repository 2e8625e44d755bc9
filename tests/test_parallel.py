"""verify.parallel: a run in worker processes gives the serial run's verdicts, runs preparations first (shared,
errors recorded), survives a worker that dies, and is chosen by --jobs / $THEORYLAB_JOBS."""
from __future__ import annotations

import os
import sys
import textwrap
import uuid

import pytest

import verify
from tests.helpers import isolated_registry
from verify import api, cli, parallel

PLUGIN = '''
import os
from pathlib import Path

import numpy as np

from verify import Result, check, register_claim
from verify.parallel import prep

LOG = Path({log!r})
for cid in ("ok", "uses_prep", "dies", "ordered"):
    register_claim(f"{p}.{{cid}}", paper="MY", kind="numeric", claim=f"{{cid}} claim")


def write(tag):
    with open(LOG, "a") as fh:
        env = ",".join(os.environ.get(k, "-") for k in ("OMP_NUM_THREADS", "MALLOC_MMAP_THRESHOLD_"))
        fh.write(f"{{tag}} {{os.getpid()}} {{env}}\\n")


def broken():
    raise RuntimeError("prep exploded")


def slow(tag, seconds):
    import time

    time.sleep(seconds)
    write(tag)


def _ordered(ctx):
    return [prep("read-out", slow, "read-out", 0.0, cost=100, after=("net",)), prep("net", slow, "net", 1.0, cost=1)]


@check("{p}.ordered", equation="-", kind="numeric", tolerance=1e-12, tolerance_reason="exact",
       negative_control="off by one", prepare=_ordered)
def ordered(ctx, planted):
    return _result(0.0, planted)


def _result(x, planted):
    err = abs(x - (1.0 if planted else 0.0))
    return Result(measured=err, expected="<= 1e-12", holds=bool(err <= 1e-12), miss=err / 1e-12)


@check("{p}.ok", equation="-", kind="numeric", tolerance=1e-12, tolerance_reason="exact",
       negative_control="off by one", cost=5)
def ok(ctx, planted):
    return _result(float(ctx.rng("x").integers(0, 1)), planted)


def _preps(ctx):
    return [prep("shared prep", write, "prep"), prep("shared prep", write, "prep"), prep("bad prep", broken)]


@check("{p}.uses_prep", equation="-", kind="numeric", tolerance=1e-12, tolerance_reason="exact",
       negative_control="off by one", prepare=_preps)
def uses_prep(ctx, planted):
    lines = LOG.read_text().split() if LOG.exists() else []
    return _result(0.0 if "prep" in lines else 5.0, planted)


@check("{p}.dies", equation="-", kind="numeric", tolerance=1e-12, tolerance_reason="exact",
       negative_control="off by one")
def dies(ctx, planted):
    if os.environ.get("THEORYLAB_TEST_DIE") == "1":
        os._exit(3)
    return _result(0.0, planted)
'''


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    name = f"par_plugin_{uuid.uuid4().hex[:8]}"
    prefix = f"p{uuid.uuid4().hex[:6]}"
    log = tmp_path / "log.txt"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(PLUGIN.format(p=prefix, log=str(log))))
    monkeypatch.syspath_prepend(str(tmp_path))
    with isolated_registry(name):
        yield name, prefix, log


def _key(o):
    return (o.id, o.status, o.measured, o.negative_control_result, o.error)


def test_workers_give_the_serial_verdicts_in_the_selection_order(plugin):
    name, p, log = plugin
    ids = [f"{p}.ok", f"{p}.uses_prep", "vc.decomposition", "nd.kkt_sparsity"]
    before = {k: os.environ.get(k) for k in parallel.WORKER_ENV}
    serial = api.run(ids, quick=True, plugins=[name], jobs=1)
    assert serial[f"{p}.uses_prep"].status == "fail"                 # no preparation in one process
    par = api.run(ids, quick=True, plugins=[name], jobs=2)
    assert [o.id for o in par] == [o.id for o in serial]             # the catalog's order, both ways
    same = [i for i in ids if i != f"{p}.uses_prep"]
    assert [_key(par[i]) for i in same] == [_key(serial[i]) for i in same]  # same numbers
    assert par[f"{p}.uses_prep"].status == "pass"                    # it read what its preparation wrote
    assert log.read_text().split().count("prep") == 1                # one preparation for two identical labels
    line = next(ln for ln in log.read_text().splitlines() if ln.startswith("prep "))
    assert line.split()[2] == f"1,{32 << 20}"                        # the worker's environment: one thread, malloc
    assert {k: os.environ.get(k) for k in parallel.WORKER_ENV} == before  # the parent's is left as it was
    assert par.jobs == 2 and par.preparations["shared prep"]["error"] is None
    assert par.preparations["bad prep"]["error"] == "RuntimeError: prep exploded"  # recorded, run went on
    assert par.meta()["preparations"]["bad prep"]["error"]


def test_a_worker_that_dies_fails_its_check_only(plugin, monkeypatch):
    name, p, _ = plugin
    monkeypatch.setenv("THEORYLAB_TEST_DIE", "1")
    run = api.run([f"{p}.dies", f"{p}.ok", "vc.decomposition"], quick=True, plugins=[name], jobs=2)
    assert [run[i].status for i in (f"{p}.dies", f"{p}.ok", "vc.decomposition")] == ["fail", "pass", "pass"]
    assert "worker process died" in run[f"{p}.dies"].error


def test_the_priority_is_the_longest_chain_of_work_a_task_heads():
    deps = {("prep", "net"): set(), ("prep", "read-out"): {("prep", "net")}, ("check", "a"): {("prep", "read-out")},
            ("check", "b"): set(), ("check", "c"): {("prep", "net")}}
    cost = {("prep", "net"): 10, ("prep", "read-out"): 2, ("check", "a"): 5, ("check", "b"): 15, ("check", "c"): 1}
    rank = parallel.critical_path(deps, cost)
    assert rank == {("prep", "net"): 17, ("prep", "read-out"): 7, ("check", "a"): 5, ("check", "b"): 15,
                    ("check", "c"): 1}  # the net (10 s) heads 17 s of work: it goes before check b (15 s)
    with pytest.raises(ValueError, match="cycle through 'x'"):
        parallel.critical_path({("prep", "x"): {("prep", "y")}, ("prep", "y"): {("prep", "x")}},
                               {("prep", "x"): 1, ("prep", "y"): 1})


def test_jobs_are_validated_before_anything_runs():
    assert parallel.check_jobs("auto") == parallel.auto_jobs() >= 1
    assert parallel.check_jobs("3") == 3
    for bad in (0, -1, "two", 1.5, True):
        with pytest.raises(verify.UsageError, match="jobs"):
            api.run(["vc.decomposition"], quick=True, jobs=bad)


def test_the_cli_reads_jobs_from_the_flag_and_the_environment(monkeypatch):
    seen = []

    def fake_run(*a, **kw):
        seen.append(kw["jobs"])
        raise KeyboardInterrupt

    monkeypatch.setattr(api, "run", fake_run)
    monkeypatch.setenv("THEORYLAB_JOBS", "5")
    for argv in (["verify", "nd.kkt_sparsity"], ["verify", "-j", "2", "nd.kkt_sparsity"]):
        assert cli.main(argv) != 0
    assert seen == ["5", "2"]


def test_prepare_must_be_callable():
    with pytest.raises(ValueError, match="prepare"):
        verify.registry.check("vc.decomposition", equation="-", kind="numeric", tolerance=0, tolerance_reason="-",
                              negative_control="-", prepare=3)
    with pytest.raises(ValueError, match="cost"):
        verify.registry.check("vc.decomposition", equation="-", kind="numeric", tolerance=0, tolerance_reason="-",
                              negative_control="-", cost=-1)
    assert sys.modules["verify.parallel"] is parallel


def test_figures_drawn_in_workers_are_the_serial_ones(tmp_path):
    one = api.draw_figures(tmp_path / "one", ["nd.error_path", "vc.fig2_spectra"], quick=True, jobs=1)
    two = api.draw_figures(tmp_path / "two", ["nd.error_path", "vc.fig2_spectra"], quick=True, jobs=2)
    assert list(two.done) == list(one.done) == ["nd.error_path", "vc.fig2_spectra"] and not two.failed
    assert sorted(p.name for p in (tmp_path / "two").iterdir()) == sorted(p.name for p in (tmp_path / "one").iterdir())


def test_a_preparation_waits_for_the_ones_it_reads(plugin):
    """``after``: a read-out is prepared only once the network it reads is (no worker queues on a cache lock), even
    when the read-out is listed first and costs more."""
    name, p, log = plugin
    run = api.run([f"{p}.ordered", f"{p}.ok"], quick=True, plugins=[name], jobs=2)
    assert run[f"{p}.ordered"].status == "pass", run.preparations
    assert [line.split()[0] for line in log.read_text().splitlines()] == ["net", "read-out"]


def test_a_script_without_a_main_guard_gets_the_cause_not_a_dead_worker_per_check(tmp_path):
    """spawn re-imports the calling script: without the guard the workers cannot start; one clear error says so."""
    import subprocess

    script = tmp_path / "noguard.py"
    script.write_text("import verify\nr = verify.run(['vc.decomposition', 'nd.kkt_sparsity'], quick=True, jobs=2)\n"
                      "print([o.status for o in r])\n")
    env = dict(__import__("os").environ, PYTHONPATH=str(__import__("pathlib").Path(__file__).resolve().parents[1]))
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode != 0 and "__main__" in p.stderr and "could not start" in p.stderr, p.stderr[-2000:]


class _FakeCheck:
    def __init__(self, cost, preps=()):
        self.cost, self._preps = cost, list(preps)

    def preparations(self, ctx):
        return self._preps


def _scheduled(monkeypatch, found, jobs):
    """run_checks with a thread pool wider than ``jobs`` standing in for the worker processes: the order tasks start
    in and the most that ran at once (only the scheduler's cap limits it)."""
    import concurrent.futures as cf
    import threading
    import time

    log, running, most, lock = [], [0], [0], threading.Lock()

    def task(kind, name):
        with lock:
            log.append(name)
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.02)
        with lock:
            running[0] -= 1

    def run_prep(p, *a):
        task("prep", p.label)
        return p.label, 0.0, None

    def run_check(cid, *a):
        task("check", cid)
        return cid

    monkeypatch.setattr(parallel, "_pool", lambda n, *a: cf.ThreadPoolExecutor(max_workers=8))
    monkeypatch.setattr(parallel, "_started", lambda ex, n: None)
    monkeypatch.setattr(parallel, "_run_prep", run_prep)
    monkeypatch.setattr(parallel, "_run_check", run_check)
    outcomes, prepared = parallel.run_checks(list(found), found, quick=True, seed=0, stage=None, device="cpu",
                                             jobs=jobs)
    return log, most[0], outcomes, prepared


def test_the_scheduler_keeps_at_most_jobs_tasks_running_and_starts_the_longest_chain_first(monkeypatch):
    net = parallel.prep("net", print, cost=10)
    readout = parallel.prep("read-out", print, cost=2, after=("net",))
    found = {"small": _FakeCheck(1), "big": _FakeCheck(15), "reads": _FakeCheck(5, [net, readout]),
             **{f"x{i}": _FakeCheck(3) for i in range(6)}}
    log, most, outcomes, prepared = _scheduled(monkeypatch, found, jobs=1)
    assert most == 1 and sorted(outcomes) == sorted(found) and set(prepared) == {"net", "read-out"}
    assert log[:4] == ["net", "big", "read-out", "reads"]  # the net heads 17 s of work, the big check 15 s
    assert log[-1] == "small"
    log, most, outcomes, _ = _scheduled(monkeypatch, found, jobs=3)
    assert most == 3 and len(log) == len(found) + 2 and log.index("net") < log.index("read-out") < log.index("reads")


def test_a_cycle_of_preparations_is_skipped_not_fatal(monkeypatch):
    x = parallel.prep("x", print, after=("y",))
    y = parallel.prep("y", print, after=("x",))
    z = parallel.prep("z", print, after=("x",))
    found = {"a": _FakeCheck(1, [x, y, z]), "b": _FakeCheck(1)}
    log, _, outcomes, prepared = _scheduled(monkeypatch, found, jobs=2)
    assert sorted(outcomes) == ["a", "b"] and sorted(log) == ["a", "b"]  # the check runs (it computes what it needs)
    assert all("cycle" in prepared[lab]["error"] for lab in "xyz")


def test_one_label_names_one_computation(monkeypatch):
    found = {"a": _FakeCheck(1, [parallel.prep("net", print, 1)]), "b": _FakeCheck(1, [parallel.prep("net", print, 2)])}
    with pytest.raises(ValueError, match="prepares 'net' differently from a"):
        _scheduled(monkeypatch, found, jobs=2)
    found["b"] = _FakeCheck(1, [parallel.prep("net", print, 1, cost=7)])  # the cost is an estimate: it may differ
    assert sorted(_scheduled(monkeypatch, found, jobs=2)[2]) == ["a", "b"]


def test_every_built_in_check_and_figure_is_found_where_it_is_declared():
    """A worker imports only the module declaring a check or figure (verify.declarations reads the decorators'
    first arguments from the source): every registered id must be found there, in the module that registers it."""
    from paper_figs import registry as figreg
    from verify import declarations, registry

    checks, figs = registry.discover(), figreg.discover()
    builtin = {cid: c for cid, c in checks.items() if c.compare.__module__.startswith("verify.checks.")}
    assert declarations.declarations("verify.checks", "check") == {cid: c.compare.__module__ for cid, c in builtin.items()}
    assert declarations.declarations("paper_figs", "figure") == {fid: f.draw.__module__ for fid, f in figs.items()}


def _loaded_check_modules() -> list[str]:
    """The check modules (verify.checks.<paper>.<module>) and figure modules this process has imported."""
    checks = [m for m in sys.modules if m.startswith("verify.checks.") and m.count(".") == 3]
    figs = [m for m in sys.modules if m.startswith("paper_figs.") and m not in ("paper_figs.registry",
                                                                                 "paper_figs._layout")]
    return sorted(checks + figs)


def test_a_worker_imports_only_the_modules_of_its_tasks():
    with parallel._one_thread_env():
        ex = parallel._pool(1, (), True)
    try:
        parallel._started(ex, 1)
        assert ex.submit(_loaded_check_modules).result() == []
        ex.submit(parallel._check, "nd.kkt_sparsity").result()
        ex.submit(parallel._figure, "nd.error_path").result()
        mods = ex.submit(_loaded_check_modules).result()
    finally:
        ex.shutdown(wait=True)
    assert "verify.checks.nd.covlasso" in mods and "paper_figs.nd_covlasso" in mods, mods
    assert not [m for m in mods if m.startswith(("verify.checks.vc", "verify.checks.fg", "paper_figs.glyphs"))], mods
