"""On-disk cache of long computations, keyed by a hash of their parameters, written atomically.

Results are dicts of numpy arrays and scalars stored as ``.npz`` (no pickle). Checks and figures
call the same cached function, so a simulation runs once per parameter set. The cache lives in
``$THEORYLAB_CACHE`` (default ``.theorylab_cache/`` in the working directory).
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np


def cache_dir() -> Path:
    d = Path(os.environ.get("THEORYLAB_CACHE", ".theorylab_cache")) / "results"
    d.mkdir(parents=True, exist_ok=True)
    return d


def key(name: str, params: dict) -> str:
    """Stable hash of a name and JSON-serialisable parameters (sorted keys)."""
    blob = json.dumps({"name": name, "params": params}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write to a temporary file in the same folder, fsync, then rename: never a half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def save_npz(path: Path, result: dict) -> None:
    import io

    buf = io.BytesIO()
    np.savez(buf, **{k: np.asarray(v) for k, v in result.items()})
    atomic_write_bytes(path, buf.getvalue())


def load_npz(path: Path) -> dict:
    with np.load(path, allow_pickle=False) as z:
        return {k: (z[k].item() if z[k].ndim == 0 else z[k]) for k in z.files}


def cached(name: str, params: dict, compute: Callable[[], dict], refresh: bool = False) -> dict:
    """Return ``compute()`` for these parameters, from disk if it was computed before.

    ``params`` must determine the result completely (include the seed and a version string when the
    code changes what it computes). ``compute`` returns a dict of arrays/scalars (flat).
    """
    path = cache_dir() / f"{name}-{key(name, params)}.npz"
    if path.exists() and not refresh:
        try:
            return load_npz(path)
        except Exception:  # a corrupt file (should not happen with atomic writes): recompute
            path.unlink(missing_ok=True)
    result = compute()
    if not isinstance(result, dict):
        raise TypeError(f"cached({name}): compute() must return a dict, got {type(result).__name__}")
    save_npz(path, result)
    return load_npz(path)
