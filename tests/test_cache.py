"""sims.cache: results keyed by parameters AND code, damaged files recomputed, readable permissions, location."""
from __future__ import annotations

import hashlib
import importlib
import os
import stat
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from sims import cache, codehash

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def cache_env(tmp_path, monkeypatch):
    monkeypatch.setenv("THEORYLAB_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "results"


@pytest.fixture
def pkg(tmp_path, monkeypatch):
    """A small package in tmp_path: exp.py caches model.value(); other.py is not imported by exp."""
    name = f"cachepkg_{uuid.uuid4().hex[:8]}"
    root = tmp_path / "src" / name
    root.mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "model.py").write_text("def value():\n    return 1.0\n")
    (root / "other.py").write_text("def unrelated():\n    return 0\n")
    (root / "exp.py").write_text(textwrap.dedent(f"""
        from sims.cache import cached
        from . import model

        CALLS = []

        def run(p=1):
            def compute():
                CALLS.append(p)
                return {{"v": model.value() * p}}
            return cached("pkg_exp", {{"p": p}}, compute)
    """))
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    importlib.invalidate_caches()
    yield name, root
    for m in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[m]


def _fresh(name):
    """Re-import the temporary package after an edit (as a new Python session would)."""
    for m in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[m]
    importlib.invalidate_caches()
    return importlib.import_module(f"{name}.exp")


def test_editing_the_code_invalidates_exactly_the_stale_entries(cache_env, pkg):
    name, root = pkg
    exp = _fresh(name)
    assert exp.run()["v"] == 1.0 and exp.CALLS == [1]
    assert exp.run()["v"] == 1.0 and exp.CALLS == [1]          # second call: from disk
    (root / "other.py").write_text("def unrelated():\n    return 42\n")
    exp = _fresh(name)
    assert exp.run()["v"] == 1.0 and exp.CALLS == []            # unrelated edit: still cached
    (root / "model.py").write_text("def value():\n    return 2.0  # the researcher's edit\n")
    exp = _fresh(name)
    assert exp.run()["v"] == 2.0 and exp.CALLS == [1]           # the data model changed: fresh result
    assert exp.run()["v"] == 2.0 and exp.CALLS == [1]
    (root / "exp.py").write_text((root / "exp.py").read_text().replace("* p", "* p * 3"))
    exp = _fresh(name)
    assert exp.run()["v"] == 6.0 and exp.CALLS == [1]           # the compute module itself changed


def test_fingerprint_follows_project_imports_only():
    from sims import marchenko_pastur

    _, mods = codehash.code_fingerprint(marchenko_pastur.mp_rank_data)
    assert {"sims.marchenko_pastur", "sims.random_matrix", "theory.rank", "theory.validate"} <= set(mods)
    assert not any(m.split(".")[0] in ("numpy", "numba", "scipy", "torch") for m in mods)
    assert "sims.cache" not in mods and "sims.codehash" not in mods


def test_fingerprint_of_relative_and_function_level_imports(tmp_path, monkeypatch):
    name = f"fppkg_{uuid.uuid4().hex[:8]}"
    root = tmp_path / name
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "sub" / "__init__.py").write_text("")
    (root / "sub" / "deep.py").write_text("X = 1\n")
    (root / "helper.py").write_text("Y = 1\n")
    (root / "main.py").write_text("from .sub import deep\n\ndef f():\n    from . import helper\n    return helper.Y\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        mod = importlib.import_module(f"{name}.main")
        _, mods = codehash.code_fingerprint(mod.f)
        assert {f"{name}.main", f"{name}.helper", f"{name}.sub", f"{name}.sub.deep", name} <= set(mods)
    finally:
        for m in [m for m in sys.modules if m.startswith(name)]:
            del sys.modules[m]


def _entry(cache_env):
    (path,) = list(cache_env.glob("pkg_exp-*.npz"))
    return path


@pytest.mark.parametrize("damage", ["truncate", "garbage", "wrong_keys", "no_manifest", "empty"])
def test_damaged_cache_file_is_recomputed_never_used(cache_env, pkg, damage):
    name, _ = pkg
    exp = _fresh(name)
    assert exp.run(p=5)["v"] == 5.0
    path = _entry(cache_env)
    blob = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(blob[: len(blob) // 2])
    elif damage == "garbage":
        path.write_bytes(os.urandom(len(blob)))
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "wrong_keys":  # a valid npz, with the manifest of the entry but other arrays
        data = np.load(path)
        np.savez(path.with_suffix(""), w=np.array(99.0), **{cache.MANIFEST: data[cache.MANIFEST]})
    else:  # a valid npz with the right array but no manifest
        np.savez(path.with_suffix(""), v=np.array(99.0))
    exp.CALLS.clear()
    n_rejected = len(cache.REJECTED)
    assert exp.run(p=5)["v"] == 5.0 and exp.CALLS == [5]       # recomputed
    assert len(cache.REJECTED) == n_rejected + 1 and cache.REJECTED[-1][0] == str(path)
    assert exp.run(p=5)["v"] == 5.0 and exp.CALLS == [5]       # and the repaired file is used again


def test_manifest_key_is_reserved(cache_env):
    with pytest.raises(ValueError, match="may not use the key"):
        cache.cached("bad", {}, lambda: {cache.MANIFEST: 1})


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_atomic_write_respects_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        p = tmp_path / "out" / "REPORT.md"
        cache.atomic_write_text(p, "hello")
        assert stat.S_IMODE(p.stat().st_mode) == 0o666 & ~umask
        assert p.read_text() == "hello"
        assert not [f for f in p.parent.iterdir() if f.name.endswith(".tmp")]
    finally:
        os.umask(old)


def test_atomic_write_keeps_the_mode_of_the_file_it_replaces(tmp_path):
    p = tmp_path / "report.json"
    p.write_text("{}")
    p.chmod(0o640)
    cache.atomic_write_bytes(p, b"[]")
    assert stat.S_IMODE(p.stat().st_mode) == 0o640 and p.read_bytes() == b"[]"


def test_cache_location(monkeypatch, tmp_path):
    monkeypatch.setenv("THEORYLAB_CACHE", "rel_cache")
    monkeypatch.chdir(tmp_path)
    assert cache.cache_root() == tmp_path / "rel_cache"
    monkeypatch.delenv("THEORYLAB_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_root() == tmp_path / "xdg" / "theorylab"
    assert cache.cache_dir() == tmp_path / "xdg" / "theorylab" / "results" and cache.cache_dir().is_dir()


def _numba_cache_dir(env: dict) -> str:
    code = "import theory.covlasso, numba.core.config as c; print(c.CACHE_DIR)"
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True,
                         check=True)
    return out.stdout.strip()


def test_package_sets_the_numba_cache_dir(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "THEORYLAB_CACHE")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    assert _numba_cache_dir(env) == str(tmp_path / "xdg" / "theorylab" / "numba")
    env["THEORYLAB_CACHE"] = str(tmp_path / "tl")
    assert _numba_cache_dir(env) == str(tmp_path / "tl" / "numba")
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "mine")                 # a user's own setting wins
    assert _numba_cache_dir(env) == str(tmp_path / "mine")


_SLOW_ENTRY = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from sims.cache import cached

    def compute():
        with open(sys.argv[1], "a") as fh:   # one line per compute: the test counts them
            fh.write("computed\\n")
        time.sleep(1.0)
        return {"v": 42.0}

    print(cached("lock_probe", {"p": 1}, compute)["v"])
""")


def test_two_processes_compute_an_entry_once(cache_env, tmp_path):
    """The inter-process lock: two processes asking for the same missing entry at once compute it once; the
    second waits, then reads what the first wrote (a verify run with --jobs 2 shares networks this way)."""
    script, log = tmp_path / "slow_entry.py", tmp_path / "computed.txt"
    script.write_text(_SLOW_ENTRY)
    env = dict(os.environ, THEORYLAB_CACHE=str(cache_env.parent), PYTHONPATH=str(ROOT))
    procs = [subprocess.Popen([sys.executable, str(script), str(log)], env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert outs == ["42.0", "42.0"] and [p.returncode for p in procs] == [0, 0]
    assert log.read_text().count("computed") == 1


def test_entry_lock_is_reentrant_and_threads_wait(cache_env):
    """A compute that asks for its own entry's lock again does not deadlock; another thread waits for the holder."""
    import threading
    import time

    path = cache.cache_dir() / "x-1.npz"
    order = []
    with cache.entry_lock(path):
        with cache.entry_lock(path):
            order.append("inner")

        def other():
            with cache.entry_lock(path):
                order.append("other")

        t = threading.Thread(target=other)
        t.start()
        time.sleep(0.3)
        order.append("outer done")
    t.join(600)  # a limit only a hang reaches: the order below is fixed by the lock, not by the 0.3 s sleep
    assert order == ["inner", "outer done", "other"]


_EDITED_MID_RUN = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    import helper_mod                       # imported: the process now runs this version
    from sims.cache import cached
    Path(sys.argv[2]).write_text("imported")
    while not Path(sys.argv[3]).exists():   # the test edits helper_mod.py meanwhile
        time.sleep(0.02)
    print(cached("edited_mid_run", {"p": 1}, helper_mod.compute)["v"])
""")


def test_a_dependency_edited_mid_run_is_not_stored_under_the_new_code(cache_env, tmp_path):
    """A process imports a module, the module's file is edited, then the process computes an entry: its key (the
    code on disk) names the new code, its result is the old code's — it is returned but not stored; a fresh process
    computes and stores the new code's result."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "helper_mod.py").write_text("def compute():\n    return {'v': 1.0}\n")
    script, started, go = tmp_path / "run.py", tmp_path / "started", tmp_path / "go"
    script.write_text(_EDITED_MID_RUN)
    env = dict(os.environ, THEORYLAB_CACHE=str(cache_env.parent), PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, str(script), str(pkg), str(started), str(go)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 600  # only a hang reaches it: the script writes the file once it has imported
    while not started.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.05)  # the edit must be later than the import on the file's mtime clock
    (pkg / "helper_mod.py").write_text("def compute():\n    return {'v': 2.0}\n")
    go.write_text("")
    out, err = proc.communicate(timeout=600)
    assert out.strip() == "1.0" and "not stored" in err and "helper_mod" in err, err
    assert not list(cache_env.glob("edited_mid_run-*.npz"))
    fresh = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import helper_mod; "
                            "from sims.cache import cached; print(cached('edited_mid_run', {'p': 1}, "
                            "helper_mod.compute)['v'])", str(pkg)], env=env, capture_output=True, text=True,
                           timeout=600)
    assert fresh.stdout.strip() == "2.0" and len(list(cache_env.glob("edited_mid_run-*.npz"))) == 1


def test_fingerprint_ignores_docstrings_and_comments_not_code(tmp_path, monkeypatch):
    """Docstrings and comments cannot change what a computation returns, so editing them keeps cache entries;
    any edit of the code itself (a constant, an operator) changes the fingerprint."""
    name = f"fpdoc_{uuid.uuid4().hex[:8]}"
    root = tmp_path / name
    root.mkdir()
    (root / "__init__.py").write_text("")
    src = '"""Module doc."""\n\ndef f(x):\n    """Doc of f."""\n    return x + 1  # a comment\n'
    variants = {
        "docstrings": '"""Other doc,\nmeasured on another machine."""\n\n\ndef f(x):\n    """Changed."""\n    return x + 1\n',
        "no docstrings": "def f(x):\n    return x + 1  # another comment\n",
        "constant": src.replace("x + 1", "x + 2"),
        "operator": src.replace("x + 1", "x - 1"),
        "string value": src.replace("return x + 1", "return str(x) + 'a'"),
    }
    monkeypatch.syspath_prepend(str(tmp_path))

    def fp(text):
        (root / "m.py").write_text(text)
        for m in [m for m in sys.modules if m.startswith(name)]:
            del sys.modules[m]
        mod = importlib.import_module(f"{name}.m")
        return codehash.code_fingerprint(mod.f)[0]

    try:
        base = fp(src)
        assert fp(variants["docstrings"]) == base
        assert fp(variants["no docstrings"]) == base
        for kind in ("constant", "operator", "string value"):
            assert fp(variants[kind]) != base, kind
        assert codehash.code_digest(b"def (:\n") == hashlib.sha256(b"def (:\n").hexdigest()  # unparsable: bytes
    finally:
        for m in [m for m in sys.modules if m.startswith(name)]:
            del sys.modules[m]
