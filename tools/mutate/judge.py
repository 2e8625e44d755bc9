"""Runs INSIDE the temporary copy of the tree, one process per baseline or mutant (never in the worktree).

    python -m tools.mutate.judge baseline OUT.json [TEST_FILE ...]   # every check and test (or these files), traced
    python -m tools.mutate.judge run PLAN.json OUT.json   # one mutant: the planned tests, then checks
    python -m tools.mutate.judge serve                    # a warm server: one fork per mutant (below)

``serve`` imports the heavy libraries once (numpy, scipy, sympy, torch, numba, pytest: most of a mutant's
time; docs/mutation.md) but no module of the project, then forks one child per request read from
stdin; the child imports the project fresh from the (mutated) copy, so each mutant still starts from a
clean interpreter state as far as the project is concerned.

The verdict of a check is ``(status, negative_control_result, positive_control_result)`` from the
registry in quick mode, exactly as ``theorylab verify --quick`` computes it (seed 0, no report dir).
A mutant is killed when a planned test fails (pytest ``-x``: the first failure ends the run) or a planned
check's verdict differs from the baseline's. A check runs once per process: ``run_quick`` in a test
reuses the outcome (memoised), so the check tests of ``tests/test_checks_*.py`` cost nothing extra.
Hypothesis runs derandomised without its example database, so every run sees the same examples.
"""
from __future__ import annotations

import cProfile
import json
import os
import sys
import time
from pathlib import Path

import pytest

ROOT = Path.cwd().resolve()
TRACED = ("theory/", "sims/", "verify/registry.py")
EXCLUDED_TESTS = ("tests/test_mutate.py",)


HEAVY = ("numpy", "scipy.linalg", "scipy.special", "scipy.stats", "scipy.integrate", "scipy.optimize",
         "scipy.sparse", "sympy", "torch", "numba", "matplotlib.pyplot", "hypothesis", "sklearn.linear_model",
         "tqdm", "threadpoolctl")


def _assert_in_copy() -> None:
    import importlib.util

    where = Path(importlib.util.find_spec("theory").origin).resolve()
    if ROOT not in where.parents or not (ROOT / ".mutate-copy").exists():
        sys.exit(f"judge: refusing to run: theory imports from {where}, not from a mutate copy at {ROOT}")


def _units(prof: cProfile.Profile) -> list[str]:
    """``path:first line`` of every project function the profile saw called."""
    out = set()
    for entry in prof.getstats():
        code = entry.code
        if isinstance(code, str) or code.co_name == "<module>":
            continue
        try:
            rel = Path(code.co_filename).resolve().relative_to(ROOT).as_posix()
        except ValueError:
            continue
        if rel.startswith(TRACED):
            out.add(f"{rel}:{code.co_firstlineno}")
    return sorted(out)


class Checks:
    """The registry in quick mode, each check run once per process (``run_quick`` in tests included)."""

    def __init__(self, trace: bool):
        from verify import registry

        self.registry, self.trace = registry, trace
        self.all = registry.discover()
        self.memo: dict = {}
        self.requested: list[str] = []
        self.original = registry.run_check
        registry.run_check = self._run_check

    def _run_check(self, chk, ctx, trace: bool = False):
        """The registry's ``run_check``, memoised for the registered checks (a test's own toy checks pass
        through); traced only when called directly (not inside a test, whose profile then sees it)."""
        if self.all.get(chk.id) is not chk:
            return self.original(chk, ctx)
        self.requested.append(chk.id)
        k = (chk.id, ctx.quick, ctx.seed, ctx.device)
        if k not in self.memo:
            prof = cProfile.Profile() if trace else None
            t0 = time.perf_counter()
            if prof:
                prof.enable()
            try:
                out = self.original(chk, ctx)
            finally:
                if prof:
                    prof.disable()
            self.memo[k] = (out, time.perf_counter() - t0, _units(prof) if prof else [])
        return self.memo[k][0]

    def verdict(self, cid: str) -> tuple[list, float, list]:
        if cid not in self.all:
            return ["missing", "", ""], 0.0, []
        ctx = self.registry.Context(check_id=cid, quick=True, seed=0, report_dir=None)
        out = self._run_check(self.all[cid], ctx, trace=self.trace)
        _, seconds, units = self.memo[(cid, True, 0, "cpu")]
        return [out.status, out.negative_control_result or "", out.positive_control_result or ""], seconds, units


class Tracer:
    """pytest plugin: per test, its outcome, seconds, the project functions it called, the checks it ran."""

    def __init__(self, checks: Checks, trace: bool):
        self.checks, self.trace, self.tests, self.first_failure = checks, trace, {}, None

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        self.tests[item.nodeid] = {"outcome": "passed", "seconds": 0.0, "units": [], "requested": []}
        self._prof = cProfile.Profile() if self.trace else None
        self._mark = len(self.checks.requested)
        if self._prof:
            self._prof.enable()

    def pytest_runtest_logreport(self, report):
        t = self.tests.setdefault(report.nodeid, {"outcome": "passed", "seconds": 0.0, "units": [],
                                                  "requested": []})
        t["seconds"] += report.duration
        if report.failed:
            t["outcome"] = "failed"
            self.first_failure = self.first_failure or report.nodeid
        elif report.skipped and t["outcome"] == "passed":
            t["outcome"] = "skipped"
        if report.when == "teardown":
            if self._prof:
                self._prof.disable()
                t["units"] = _units(self._prof)
            t["requested"] = sorted(set(self.checks.requested[self._mark:]))


def _pytest(args: list[str], plugin) -> int:
    """pytest in this process, Hypothesis derandomised and without its example database."""
    from hypothesis import settings

    settings.register_profile("mutate", database=None, derandomize=True)
    settings.load_profile("mutate")
    return int(pytest.main(args, plugins=[plugin]))


def baseline(out_path: str, files: list[str]) -> None:
    """Trace every check (quick) and every test; with ``files``, only the tests of these files."""
    t0 = time.perf_counter()
    checks = Checks(trace=True)
    verdicts = {}
    for cid, chk in (checks.all.items() if not files else ()):
        v, seconds, units = checks.verdict(cid)
        file = Path(sys.modules[chk.compare.__module__].__file__).resolve().relative_to(ROOT).as_posix()
        verdicts[cid] = {"verdict": v, "seconds": round(seconds, 3), "units": units, "file": file}
    tracer = Tracer(checks, trace=True)
    _pytest(files or ["tests", *(f"--ignore={t}" for t in EXCLUDED_TESTS)], tracer)
    out = {"root": str(ROOT), "checks": verdicts, "tests": tracer.tests,
           "import_errors": sorted(checks.registry.IMPORT_ERRORS), "seconds": round(time.perf_counter() - t0, 1)}
    Path(out_path).write_text(json.dumps(out, indent=1))


def run(plan_path: str, out_path: str) -> None:
    plan = json.loads(Path(plan_path).read_text())
    result = {"killed": False, "by": None, "detail": ""}
    try:
        checks = Checks(trace=False)
        if plan["tests"]:
            tracer = Tracer(checks, trace=False)
            code = _pytest(["-x", *plan["tests"]], tracer)
            if code != 0:
                result.update(killed=True, by=f"test {tracer.first_failure or '(collection)'}",
                              detail=f"pytest exit code {code}")
        if not result["killed"]:
            for cid in plan["checks"]:
                v, _, _ = checks.verdict(cid)
                if v != plan["expected"][cid]:
                    result.update(killed=True, by=f"check {cid}", detail=f"{plan['expected'][cid]} -> {v}")
                    break
    except BaseException as exc:  # an import that breaks, a SystemExit from a mutated guard, ...
        result.update(killed=True, by="error", detail=f"{type(exc).__name__}: {exc}"[:500])
    Path(out_path).write_text(json.dumps(result))


def serve() -> None:
    """Read ``{"plan", "out", "log"}`` lines; per line fork a child that runs the mutant (in its own process
    group, output to ``log``) and answer ``{"pid"}`` at once, then ``{"status"}`` when it ended."""
    import importlib

    for name in HEAVY:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    for project in ("theory", "sims", "verify", "paper_figs", "tests"):
        assert project not in sys.modules, f"serve: {project} must not be imported before the fork"
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.setsid()
                null = os.open(os.devnull, os.O_RDONLY)
                log = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                os.dup2(null, 0)
                os.dup2(log, 1)
                os.dup2(log, 2)
                run(req["plan"], req["out"])
                code = 0
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        print(json.dumps({"pid": pid}), flush=True)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"status": os.waitstatus_to_exitcode(status)}), flush=True)


if __name__ == "__main__":
    _assert_in_copy()
    os.environ.setdefault("MPLBACKEND", "Agg")
    mode = sys.argv[1]
    if mode == "baseline":
        baseline(sys.argv[2], sys.argv[3:])
    elif mode == "run":
        run(sys.argv[2], sys.argv[3])
    elif mode == "serve":
        serve()
    else:
        sys.exit(f"judge: unknown mode {mode!r}")
