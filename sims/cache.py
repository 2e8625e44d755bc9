"""On-disk cache of long computations, keyed by their parameters and their code, written atomically.

Results are dicts of numpy arrays and scalars stored as ``.npz`` (no pickle). Checks and figures call the
same cached function, so a simulation runs once per parameter set and code version.

* Key: the experiment's name, its parameters (JSON, sorted keys) and the fingerprint of the code the
  ``compute`` function depends on (:func:`sims.codehash.code_fingerprint`: the source of its module and of
  every project module that module imports, transitively). Editing a data model or a trainer therefore
  invalidates exactly the entries computed with the old code; nothing else is recomputed.
* Integrity: every entry stores a small manifest (name, key, the list of arrays). A file that cannot be
  read (truncated, garbage) or whose content does not match its manifest (a valid ``.npz`` with other keys)
  is recomputed and replaced, never used; :data:`REJECTED` records why, for tests and the curious.
* Place: ``$THEORYLAB_CACHE/results`` when that variable is set, else the user cache folder
  ``$XDG_CACHE_HOME/theorylab/results`` (``~/.cache/theorylab/results``); see :func:`cache_root`.
* Files are written atomically (temporary file, fsync, rename) with the permissions an ordinary
  ``open()`` would give (``0666`` minus the umask), so collaborators can read reports and results.
* Computed once across processes: while one process computes an entry it holds an exclusive lock
  (``fcntl.flock`` on ``results/locks/<entry>.lock``); another process asking for the same entry waits for the
  lock, then reads what the first one wrote instead of computing it again (a verify run with ``--jobs 2`` and
  a sweep's workers share networks and results this way). The lock goes with the process that holds it (a
  killed process leaves no stale lock); lock files stay (a few bytes each; ``make clean`` removes the cache).
  Where ``fcntl`` is missing (Windows) entries are computed without the lock.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import contextlib
import tempfile
import threading
from pathlib import Path
from typing import Callable

import numpy as np

from sims.codehash import code_fingerprint
from theory._cachedir import cache_root as _cache_root

MANIFEST = "__theorylab_manifest__"
REJECTED: list[tuple[str, str]] = []  # (file, why) for every cache file found unusable in this process


def cache_root() -> Path:
    """The cache root (``$THEORYLAB_CACHE``, else ``$XDG_CACHE_HOME/theorylab``, else ``~/.cache/theorylab``)."""
    return Path(_cache_root())


def cache_dir() -> Path:
    d = cache_root() / "results"
    d.mkdir(parents=True, exist_ok=True)
    return d


def key(name: str, params: dict, code: str = "") -> str:
    """Stable hash of a name, JSON-serialisable parameters (sorted keys) and a code fingerprint."""
    blob = json.dumps({"name": name, "params": params, "code": code}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


_UMASK_LOCK = threading.Lock()


def _umask() -> int:
    """The process umask, read without changing it where /proc allows (os.umask can only be read by setting it)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    with _UMASK_LOCK:
        old = os.umask(0o022)
        os.umask(old)
    return old


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write to a temporary file in the same folder, fsync, then rename: never a half-written file.

    The file gets the mode an ordinary ``open(path, "w")`` would give: the mode of the file it replaces,
    else ``0o666`` minus the umask (``mkstemp`` alone would leave it ``0o600``, unreadable to others).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fchmod(fh.fileno(), mode)
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def save_npz(path: Path, result: dict) -> None:
    buf = io.BytesIO()
    np.savez(buf, **{k: np.asarray(v) for k, v in result.items()})
    atomic_write_bytes(path, buf.getvalue())


def load_npz(path: Path) -> dict:
    with np.load(path, allow_pickle=False) as z:
        return {k: (z[k].item() if z[k].ndim == 0 else z[k]) for k in z.files}


def _save_entry(path: Path, result: dict, manifest: dict) -> None:
    if MANIFEST in result:
        raise ValueError(f"a cached result may not use the key {MANIFEST!r}")
    manifest = dict(manifest, keys=sorted(result))
    save_npz(path, {**result, MANIFEST: np.asarray(json.dumps(manifest, sort_keys=True))})


def _load_entry(path: Path, entry_key: str) -> dict:
    """The cached dict, or ValueError saying why the file is unusable (truncated, garbage, wrong content)."""
    try:
        data = load_npz(path)
    except Exception as exc:  # zipfile.BadZipFile, EOFError, OSError, ValueError ...: a damaged file
        raise ValueError(f"unreadable ({type(exc).__name__}: {exc})") from None
    raw = data.pop(MANIFEST, None)
    if not isinstance(raw, str):
        raise ValueError("no manifest (not written by sims.cache)")
    try:
        manifest = json.loads(raw)
    except json.JSONDecodeError:
        raise ValueError("manifest is not JSON") from None
    if manifest.get("key") != entry_key:
        raise ValueError(f"manifest key {manifest.get('key')!r} is not the file's key {entry_key!r}")
    if sorted(data) != manifest.get("keys"):
        raise ValueError(f"arrays {sorted(data)} do not match the manifest's {manifest.get('keys')}")
    return data


def entry_path(name: str, params: dict, compute: Callable | None = None, depends: tuple = ()) -> Path:
    """Where ``cached(name, params, compute, depends=depends)`` keeps its result."""
    code = code_fingerprint(*((compute,) if compute is not None else ()), *depends)[0]
    return cache_dir() / f"{name}-{key(name, params, code)}.npz"


def cached(name: str, params: dict, compute: Callable[[], dict], refresh: bool = False,
           depends: tuple = ()) -> dict:
    """Return ``compute()`` for these parameters and this code, from disk if it was computed before.

    ``params`` must determine the result together with the code (include the seed). The code is found
    from ``compute``'s module and its imports (module doc); pass further functions or modules whose code
    matters and that this module does not import (e.g. a callback from a caller) in ``depends``.
    ``compute`` returns a flat dict of arrays/scalars. A damaged entry is recomputed, never used.
    """
    fingerprint, modules = code_fingerprint(compute, *depends)
    k = key(name, params, fingerprint)
    path = cache_dir() / f"{name}-{k}.npz"
    seen = _stamp(path)
    if not refresh and seen is not None:
        found = _try_load(path, k)
        if found is not None:
            return found
    with entry_lock(path):
        now = _stamp(path)
        # another process may have written it while this one waited for the lock (a file not seen before)
        if not refresh and now is not None and now != seen:
            found = _try_load(path, k)
            if found is not None:
                return found
        return _compute_and_save(name, path, k, compute, fingerprint, modules)


def _stamp(path: Path):
    """(inode, size, mtime) of the file, None when absent: tells a file written meanwhile from the one read."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _try_load(path: Path, k: str) -> dict | None:
    try:
        return _load_entry(path, k)
    except ValueError as exc:  # never use a damaged file: recompute and replace it
        REJECTED.append((str(path), str(exc)))
        return None


_LOCKS: dict = {}  # lock path -> [RLock, depth]: threads of one process queue here; the holder may re-enter
_LOCKS_LOCK = threading.Lock()


@contextlib.contextmanager
def entry_lock(path: Path):
    """Hold the inter-process lock of the cache entry ``path`` (module doc) for the block. Threads of one process
    wait for each other too; the thread holding it may enter again (a compute asking for its own entry)."""
    try:
        import fcntl
    except ImportError:  # no flock (Windows): compute without it
        yield
        return
    lock = Path(path).parent / "locks" / (Path(path).name + ".lock")
    with _LOCKS_LOCK:
        slot = _LOCKS.setdefault(str(lock), [threading.RLock(), 0])
    with slot[0]:
        slot[1] += 1
        try:
            if slot[1] > 1:
                yield
                return
            lock.parent.mkdir(parents=True, exist_ok=True)
            with open(lock, "a+b") as fh:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
        finally:
            slot[1] -= 1


def _compute_and_save(name, path, k, compute, fingerprint, modules) -> dict:
    from sims.codehash import stale

    result = compute()
    if not isinstance(result, dict):
        raise TypeError(f"cached({name}): compute() must return a dict, got {type(result).__name__}")
    old = stale(modules)
    if old:  # the key is the code on disk; this process ran older code: storing it there would lie
        import warnings

        warnings.warn(f"cached({name}): not stored — {', '.join(old)} changed on disk after this process imported "
                      f"it, so the result was computed by older code than the key names", RuntimeWarning, stacklevel=3)
        tmp = path.with_name(f".unstored-{os.getpid()}-{path.name}")  # the same round trip as a stored entry
        try:
            _save_entry(tmp, result, {"name": name, "key": k, "code": fingerprint, "modules": modules})
            return _load_entry(tmp, k)
        finally:
            tmp.unlink(missing_ok=True)
    _save_entry(path, result, {"name": name, "key": k, "code": fingerprint, "modules": modules})
    return _load_entry(path, k)
