"""Drive a sampled mutation run: copy the tree, trace a baseline, run each mutant in its own process.

The worktree is only ever read. Everything happens in ``WORKDIR/tree`` (a copy of the tracked and
untracked-but-not-ignored files, file times preserved), which is re-synced at the start of every run,
so an interrupted run can never leave a mutant behind where you work.

Per mutant: the mutated module is written into the copy (its mtime moved on, so neither a ``.pyc`` nor
numba's on-disk index can serve the original), the judge runs in a fresh process (forked from a warm
server that holds the heavy libraries but no project module: ``judge.serve``) with a fresh
``THEORYLAB_CACHE`` (cached simulations are keyed by parameters only, so they would hide the mutant) and
a throw-away ``NUMBA_CACHE_DIR``: hard links to the warm baseline cache minus the kernels of every file
that imports the mutated module (those recompile; a numba cache does not notice edits in another file).
The original file is restored, bytes and times, before the next mutant. One thread for BLAS, OpenMP and
numba: runs are deterministic and stay polite on a shared machine.
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

from tools.mutate import report
from tools.mutate import targets as tg
from tools.mutate.judge import EXCLUDED_TESTS
from tools.mutate.mutants import Mutant, generate

#: the numerical modules of sims/ mutated by default besides theory/ (docs/mutation.md)
NUMERIC_SIMS = ("sims/random_matrix.py", "sims/jacobian.py", "sims/spd.py", "sims/multiview/learner.py",
                "sims/multiview/train.py")
EQUIVALENT_FILE = Path(__file__).with_name("equivalent.toml")
FINGERPRINTED = ("theory", "sims", "verify", "paper_figs", "pyproject.toml", "tools/mutate/judge.py")  # the baseline depends on these
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "NUMBA_NUM_THREADS": "1", "MPLBACKEND": "Agg", "PYTHONHASHSEED": "0"}


def default_modules(root: Path) -> list[str]:
    theory = sorted(p.relative_to(root).as_posix() for p in (root / "theory").rglob("*.py")
                    if p.name != "__init__.py")
    return theory + [m for m in NUMERIC_SIMS if (root / m).exists()]


def select_modules(root: Path, patterns: list[str]) -> list[str]:
    import fnmatch

    every = sorted(p.relative_to(root).as_posix() for pkg in ("theory", "sims") for p in (root / pkg).rglob("*.py"))
    if not patterns:
        return default_modules(root)
    out = [m for m in every if any(fnmatch.fnmatch(m, p) or m.startswith(p) for p in patterns)]
    if not out:
        raise SystemExit(f"mutate: no module of theory/ or sims/ matches {patterns}")
    return [m for m in out if not m.endswith("__init__.py") or (root / m).stat().st_size]


def sample(root: Path, modules: list[str], n: int, seed: int) -> list[Mutant]:
    """A seeded random sample of ``n`` mutants per module, interleaved module by module (round robin).

    The sample is a prefix of one seeded shuffle per module, so a larger ``n`` extends a smaller one (and
    reuses its stored results)."""
    per_module = []
    for m in modules:
        every = generate(m, (root / m).read_text(encoding="utf-8"))
        random.Random(f"{seed}:{m}").shuffle(every)
        per_module.append(every[:n] if n > 0 else every)
    out = []
    for k in range(max((len(p) for p in per_module), default=0)):
        out.extend(p[k] for p in per_module if k < len(p))
    return out


def _edit(diff: str) -> tuple:
    """The removed and added lines of a unified diff, stripped: what a mutant does, whatever its line number."""
    return tuple(l[1:].strip() for l in diff.splitlines()
                 if l[:1] in "-+" and not l.startswith(("---", "+++")))


def match_survivors(old: list[dict], root: Path) -> tuple[list[Mutant], list[str]]:
    """Today's mutants for the survivors (and uncovered) of a written report: the same key with the same edit,
    else the same module, unit, operator and edit under another ``#k`` (an edit elsewhere in the unit renumbers
    keys). Returns (mutants, keys whose edit no longer exists)."""
    found, gone, cache = [], [], {}
    for r in old:
        if r["outcome"] not in ("survived", "uncovered"):
            continue
        mod = r["module"]
        if mod not in cache:
            src = (root / mod).read_text(encoding="utf-8") if (root / mod).exists() else ""
            cache[mod] = (src, generate(mod, src) if src else [])
        src, ms = cache[mod]
        want = _edit(r.get("diff", ""))
        same = [m for m in ms if m.key == r["key"] and _edit(m.diff(src)) == want]
        same = same or [m for m in ms if m.unit == r["unit"] and m.operator == r["operator"]
                        and _edit(m.diff(src)) == want]
        if same and same[0] not in found:
            found.append(same[0])
        elif not same:
            gone.append(r["key"])
    return found, gone


def load_equivalent(lines: bool = False) -> dict:
    """Mutant key -> the argument that it cannot change any result (``equivalent.toml``); with ``lines``,
    key -> the stripped source line the argument was written for (its ``line``), or None."""
    if not EQUIVALENT_FILE.exists():
        return {}
    data = tomllib.loads(EQUIVALENT_FILE.read_text(encoding="utf-8"))
    return {e["key"]: (e.get("line") if lines else e["reason"]) for e in data.get("mutant", [])}


def equivalent_applies(m: Mutant, source: str, line: str | None) -> bool:
    """Whether an equivalence entry still describes mutant ``m``: its key's #k counts same-text mutants in the
    unit, so an edit of the unit can move the key onto another mutant; ``line`` pins the one it was argued for."""
    return line is None or source.splitlines()[m.line - 1].strip() == line


# ----------------------------------------------------------------------------- the copy of the tree

def sync_tree(src: Path, tree: Path) -> None:
    """Make ``tree`` a copy of the project files of ``src`` (git's view: tracked + untracked, not ignored)."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=src, check=True,
                           capture_output=True).stdout.decode().split("\0")
    files = {f for f in files if f and (src / f).is_file()}
    tree.mkdir(parents=True, exist_ok=True)
    for p in list(tree.rglob("*")):
        rel = p.relative_to(tree).as_posix()
        if p.is_file() and rel not in files and "__pycache__" not in rel and rel != ".mutate-copy":
            p.unlink()
    for f in sorted(files):
        a, b = src / f, tree / f
        sa = a.stat()
        if not b.exists() or b.stat().st_size != sa.st_size or b.stat().st_mtime_ns != sa.st_mtime_ns \
                or b.read_bytes() != a.read_bytes():
            b.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(a, b)
    (tree / ".mutate-copy").write_text("a copy made by tools/mutate; safe to delete\n")


def _digest(paths, tree: Path) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.relative_to(tree).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:16]


def fingerprints(tree: Path) -> tuple[str, dict[str, str]]:
    """(hash of the code: every package but tests/, {test file: hash}); ``"<common>"`` hashes the rest of
    tests/ (conftest.py, helpers.py): when it changes, every test is traced again."""
    code = []
    for top in FINGERPRINTED:
        code += [tree / top] if (tree / top).is_file() else sorted(p for p in (tree / top).rglob("*") if p.is_file())
    code = [p for p in code if "__pycache__" not in p.parts]
    tests = sorted(p for p in (tree / "tests").rglob("*") if p.is_file() and "__pycache__" not in p.parts
                   and p.relative_to(tree).as_posix() not in EXCLUDED_TESTS)
    files = {p.relative_to(tree).as_posix(): _digest([p], tree) for p in tests if p.name.startswith("test_")}
    files["<common>"] = _digest([p for p in tests if not p.name.startswith("test_")], tree)
    return _digest(code, tree), files


def state(code_fp: str, test_hashes: dict[str, str]) -> str:
    """The source state a mutant's result belongs to: code and tests."""
    return hashlib.sha256((code_fp + json.dumps(test_hashes, sort_keys=True)).encode()).hexdigest()[:16]


def _judge(tree: Path, args: list[str], env_extra: dict, timeout: float | None,
           stream: bool = False) -> tuple[str, float]:
    """Run the judge in ``tree`` in its own process group; ('ok' | 'timeout' | 'crash:<code>', seconds).

    Its output goes to the terminal when ``stream``, else it is kept and shown only if the judge crashed."""
    env = {**os.environ, **ONE_THREAD, **env_extra, "PYTHONPATH": str(tree)}
    t0 = time.perf_counter()
    pipe = None if stream else subprocess.PIPE
    proc = subprocess.Popen([sys.executable, "-m", "tools.mutate.judge", *args], cwd=tree, env=env,
                            stdout=pipe, stderr=subprocess.STDOUT if pipe else None, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return "timeout", time.perf_counter() - t0
    state = "ok" if proc.returncode == 0 else f"crash:{proc.returncode}"
    if proc.returncode != 0 and out:
        sys.stderr.write(out.decode(errors="replace")[-3000:])
    return state, time.perf_counter() - t0


def _fresh(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def run_baseline(tree: Path, work: Path, code_fp: str, test_hashes: dict[str, str]) -> dict:
    """The traced baseline for this code, kept in ``WORKDIR/baseline-<code>.json``.

    Once per state of the code (docs/mutation.md has its cost): every quick check and every test. When only
    test files changed since, only those files are traced again (seconds), so adding a test that kills
    a survivor is cheap to check."""
    path = work / f"baseline-{code_fp}.json"
    old = json.loads(path.read_text()) if path.exists() else None
    if old and old["test_hashes"] == test_hashes:
        return old
    partial = old is not None and old["test_hashes"].get("<common>") == test_hashes["<common>"]
    files = sorted(f for f, h in test_hashes.items() if f != "<common>" and old["test_hashes"].get(f) != h) \
        if partial else []
    print(f"mutate: tracing the baseline ({', '.join(files) if partial else 'every quick check and every test'}"
          f"; once per source state) ...", flush=True)
    tmp = work / "baseline.tmp.json"
    if partial and not files:  # test files were only removed
        new = {"checks": {}, "tests": {}}
    else:
        state_, seconds = _judge(tree, ["baseline", str(tmp), *files],
                                 {"NUMBA_CACHE_DIR": str(work / "numba"), "THEORYLAB_CACHE": str(_fresh(work / "cache"))},
                                 None, stream=True)
        if state_ != "ok":
            raise SystemExit(f"mutate: the baseline run failed ({state_})")
        new = json.loads(tmp.read_text())
        print(f"mutate: baseline traced in {seconds:.0f} s", flush=True)
    if partial:
        keep = {n: t for n, t in old["tests"].items() if n.split("::")[0] in test_hashes and n.split("::")[0] not in files}
        new = {**old, "tests": {**keep, **new["tests"]}}
    new["test_hashes"] = test_hashes
    report.atomic_write(path, json.dumps(new, indent=1))
    base = new
    print(f"mutate: baseline: {len(base['checks'])} checks, {len(base['tests'])} tests "
          f"({sum(t['outcome'] != 'passed' for t in base['tests'].values())} not passing, left out)", flush=True)
    return base


def _numba_dir(work: Path, tree: Path, m: Mutant) -> Path:
    """Hard links to the warm numba cache, minus every kernel that could be stale under mutant ``m``.

    numba notices an edit of a kernel's own file (the index keeps the file's mtime and size), not of
    another file: a kernel inlines the kernels it calls and freezes the globals it reads when it is
    compiled. So the kernels of every file that imports the mutated module go too when that module has
    kernels (a caller elsewhere may have inlined one) or the mutant is at module level (it may change a
    constant a kernel froze); a mutant inside a plain function of a module without kernels cannot reach
    any compiled code."""
    dst = work / "run" / "numba"
    shutil.rmtree(dst, ignore_errors=True)
    src = work / "numba"
    if src.exists():
        shutil.copytree(src, dst, copy_function=os.link)
    else:
        dst.mkdir(parents=True)
    has_kernels = re.search(r"^\s*@\S*jit\b", (tree / m.module).read_text(encoding="utf-8"), re.M)
    stale = tg.importers(tree, m.module) if has_kernels or not m.unit else {m.module}
    for rel in stale:
        p = Path(rel)
        for sub in dst.glob(f"{p.parent.name}_*"):
            for f in sub.glob(f"{p.stem}.*"):
                f.unlink()
    return dst


class Server:
    """The warm judge (``judge.serve``) in the copy; one forked child per mutant, killed on timeout."""

    def __init__(self, tree: Path, work: Path):
        self.tree, self.work = tree, work
        run_dir = work / "run"
        run_dir.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **ONE_THREAD, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1",
               "NUMBA_CACHE_DIR": str(run_dir / "numba"), "THEORYLAB_CACHE": str(run_dir / "cache")}
        self.log = run_dir / "server.log"
        self.proc = subprocess.Popen([sys.executable, "-m", "tools.mutate.judge", "serve"], cwd=tree, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=open(self.log, "wb"), start_new_session=True, text=True)
        if self._read(None) != {"ready": True}:
            raise SystemExit(f"mutate: the judge server did not start; see {self.log}")

    def _read(self, timeout: float | None):
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None
        line = self.proc.stdout.readline()
        return json.loads(line) if line else {"eof": True}

    def judge(self, plan: Path, out: Path, log: Path, timeout: float) -> tuple[str, float]:
        t0 = time.perf_counter()
        self.proc.stdin.write(json.dumps({"plan": str(plan), "out": str(out), "log": str(log)}) + "\n")
        self.proc.stdin.flush()
        started = self._read(60) or {}
        if "pid" not in started:
            raise SystemExit(f"mutate: the judge server stopped ({started}); see {self.log}. "
                             "Run again: judged mutants are kept.")
        pid = started["pid"]
        msg = self._read(timeout)
        if msg is None:
            os.killpg(pid, signal.SIGKILL)
            self._read(60)
            return "timeout", time.perf_counter() - t0
        state = "ok" if msg.get("status") == 0 else f"crash:{msg}"
        return state, time.perf_counter() - t0

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)


def run_mutant(m: Mutant, tree: Path, work: Path, base: dict, timeout_factor: float, server: Server) -> dict:
    tests, checks = tg.targets(m, base, tree)
    rec = {"key": m.key, "module": m.module, "line": m.line, "operator": m.operator, "unit": m.unit,
           "tests": len(tests), "checks": len(checks)}
    if not tests and not checks:
        return {**rec, "outcome": "uncovered", "by": "no test or check executes this code", "seconds": 0.0}
    expected = sum(base["tests"][t]["seconds"] for t in tests) + sum(base["checks"][c]["seconds"] for c in checks)
    timeout = timeout_factor * expected + (120 if "jit" in (tree / m.module).read_text() else 60)
    path = tree / m.module
    original, st = path.read_bytes(), path.stat()
    run_dir = work / "run"
    plan, out, log = run_dir / "plan.json", run_dir / "result.json", run_dir / "judge.log"
    plan.write_text(json.dumps({"tests": tests, "checks": checks,
                                "expected": {c: base["checks"][c]["verdict"] for c in checks}}))
    out.unlink(missing_ok=True)
    try:
        path.write_text(m.apply(original.decode("utf-8")), encoding="utf-8")
        later = max(time.time_ns(), st.st_mtime_ns + 2_000_000_000)
        os.utime(path, ns=(later, later))
        _numba_dir(work, tree, m)
        _fresh(run_dir / "cache")
        state, seconds = server.judge(plan, out, log, timeout)
    finally:
        path.write_bytes(original)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    if state == "timeout":
        return {**rec, "outcome": "killed", "by": f"timeout after {timeout:.0f} s", "seconds": round(seconds, 1)}
    if not out.exists():
        tail = log.read_text(errors="replace")[-300:] if log.exists() else ""
        return {**rec, "outcome": "killed", "by": f"judge {state}", "detail": tail, "seconds": round(seconds, 1)}
    r = json.loads(out.read_text())
    return {**rec, "outcome": "killed" if r["killed"] else "survived", "by": r["by"], "detail": r["detail"],
            "seconds": round(seconds, 1)}
