"""The files of a sweep folder: a lock, one JSON file per point, the index and the manifest.

* Only the process that runs the sweep writes (workers return their record), and it holds an exclusive
  ``fcntl.flock`` on ``OUT/.lock`` from before its first read until it ends: a second sweep on the same
  folder refuses at once (:class:`FolderBusy`, naming the holder) or, with ``wait``, waits its turn. The OS
  releases the lock when the holder exits or is killed, so a lock left by a dead process never blocks. The
  descriptor is not inherited by workers (Python opens it non-inheritable), so an orphaned worker does not
  keep the folder locked.
* Every file is written atomically (:func:`sims.cache.atomic_write_text`: temporary file in the same
  folder, fsync, rename), so a sweep killed at any moment leaves only complete files; a ``.*.tmp`` left by a
  write cut short is deleted by the next run (under the lock, so never another sweep's write in progress).
* A point file is used only if it is a record of *this* point: valid JSON, exactly the record's keys, this
  experiment, version, key, parameters and seed, a known status and, when done, a result with the
  experiment's required fields (:func:`point_problem`). Anything else is reported, with the reason, and the
  point runs again (its file is replaced when it finishes).
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import logging
import numbers
import os
import socket
import time
from pathlib import Path
from typing import Any

from sims.cache import atomic_write_text
from verify.sweep.points import canonical_json

FORMAT = 1  # layout version of the files written here
STATUSES = ("done", "failed", "crashed")
RECORD_KEYS = frozenset({"format", "experiment", "version", "key", "params", "seed", "status", "result", "error",
                         "traceback", "seconds", "worker", "finished"})
OPTIONAL_KEYS = frozenset({"tries"})  # crashed: how many workers the point killed
LOCK_NAME = ".lock"
log = logging.getLogger("theorylab.sweep")


class FolderBusy(RuntimeError):
    """Another sweep holds the output folder."""


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def to_jsonable(obj: Any) -> Any:
    """Plain JSON types: numpy/torch scalars and arrays → numbers and lists, tuples → lists, keys → str.

    Non-finite floats stay floats (written as Python's JSON extension ``NaN``/``Infinity``, which
    ``json.loads`` reads back), so a consumer doing arithmetic on a result gets floats, never strings.
    """
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return obj
    if hasattr(obj, "detach"):  # torch tensor
        obj = obj.detach().cpu().numpy()
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return to_jsonable(dataclasses.asdict(obj))
    if hasattr(obj, "tolist"):  # numpy array or scalar
        return to_jsonable(obj.tolist())
    if hasattr(obj, "item"):
        return to_jsonable(obj.item())
    raise TypeError(f"result value of type {type(obj).__name__} is not JSON-serialisable: {obj!r:.80}")


def write_json(path: Path, obj) -> None:
    atomic_write_text(path, json.dumps(obj, indent=1, sort_keys=False) + "\n")


# ------------------------------------------------------------------------------------------------- lock
class FolderLock:
    """Exclusive lock on a sweep folder (``fcntl.flock`` on ``OUT/.lock``), held while the sweep runs.

    ``wait``: seconds to wait for another sweep to finish (0: refuse at once, None: wait as long as it
    takes). The lock file holds the holder's pid, host and start time, for the error message.
    """

    def __init__(self, out: Path, wait: float | None = 0.0):
        self.out, self.wait, self.fd = Path(out), wait, None

    def holder(self) -> str:
        try:
            info = json.loads(os.pread(self.fd, 4096, 0) or b"{}")
            return f"pid {info['pid']} on {info['host']}, started {info['started']}"
        except (OSError, ValueError, KeyError, TypeError):
            return "holder unknown"

    def __enter__(self) -> "FolderLock":
        import fcntl

        self.out.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(self.out / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o666)
        deadline = None if self.wait is None else time.monotonic() + self.wait
        told = False
        try:
            while True:
                try:
                    fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if deadline is not None and time.monotonic() >= deadline:
                        raise FolderBusy(f"{self.out} is in use by another sweep ({self.holder()}); wait for it "
                                         f"to end (or rerun with --wait), or choose another output folder") from None
                    if not told:
                        log.warning("sweep: waiting for the other sweep writing to %s (%s)", self.out,
                                    self.holder())
                        told = True
                    time.sleep(0.2)
        except BaseException:  # refused or interrupted while waiting
            os.close(self.fd)
            self.fd = None
            raise
        info = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": now()}).encode()
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, info, 0)
        return self

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            os.close(self.fd)  # releases the flock
            self.fd = None


# ---------------------------------------------------------------------------------------------- points
def point_problem(rec, exp, expected: dict) -> str | None:
    """Why ``rec`` (a parsed point file) is not a record of the point ``expected`` (key, params, seed) of
    experiment ``exp``; None when it is one."""
    if not isinstance(rec, dict):
        return f"not a JSON object but {type(rec).__name__}"
    missing, extra = sorted(RECORD_KEYS - set(rec)), sorted(set(rec) - RECORD_KEYS - OPTIONAL_KEYS)
    if missing or extra:
        return "; ".join(f"{what} key(s) {ks}" for what, ks in (("missing", missing), ("unknown", extra)) if ks)
    want = {"format": FORMAT, "experiment": exp.name, "version": exp.version, "key": expected["key"],
            "seed": expected["seed"]}
    for k, v in want.items():
        if canonical_json(rec[k]) != canonical_json(v):
            return f"{k} is {rec[k]!r}, expected {v!r}"
    if canonical_json(rec["params"]) != canonical_json(expected["params"]):
        return f"params {rec['params']} are not the point's {expected['params']}"
    status = rec["status"]
    if status not in STATUSES:
        return f"status {status!r} is not one of {STATUSES}"
    if status == "done":
        problem = exp.result_problem(rec["result"])
        if problem:
            return problem
    elif not isinstance(rec["error"], str):
        return f"a {status} point without an error message"
    if rec["seconds"] is not None and (isinstance(rec["seconds"], bool)
                                       or not isinstance(rec["seconds"], numbers.Real)):
        return f"seconds is {rec['seconds']!r}"
    return None


class Store:
    """The folder ``out`` of a sweep of experiment ``exp``; use it while holding :class:`FolderLock`."""

    def __init__(self, out: Path, exp):
        self.out, self.exp = Path(out), exp
        self.points = self.out / "points"

    def path(self, key: str) -> Path:
        return self.points / f"{key}.json"

    def open(self, seed: int, name: str | None, n_points: int) -> None:
        """Check that the folder holds no other experiment, clear leftover temp files, write the manifest."""
        manifest = self.out / "sweep.json"
        if manifest.exists():
            try:
                old = json.loads(manifest.read_text())
            except (ValueError, UnicodeDecodeError):
                old = {}
            old_exp = old.get("experiment") if isinstance(old, dict) else None
            if old_exp not in (None, self.exp.name):
                raise ValueError(f"{self.out} holds a sweep of experiment {old_exp!r}, not {self.exp.name!r}; "
                                 f"choose another output folder")
        self.points.mkdir(parents=True, exist_ok=True)
        for folder in (self.out, self.points):
            for stale in folder.glob(".*.tmp"):  # a temp file of a write killed before its rename
                stale.unlink(missing_ok=True)
        write_json(manifest, {"format": FORMAT, "experiment": self.exp.name, "version": self.exp.version,
                              "seed": seed, "name": name, "points": n_points, "started": now()})

    def read(self, expected: dict) -> tuple[dict | None, str | None]:
        """(record, None) for a valid point file; (None, None) when there is none; (None, why) when the file
        is not a record of this point."""
        return read_point(self.path(expected["key"]), self.exp, expected)

    def write(self, expected: dict, outcome: dict) -> dict:
        """Record a finished point (``outcome``: status, result/error, ...); returns the record written."""
        rec = {"format": FORMAT, "experiment": self.exp.name, "version": self.exp.version,
               "key": expected["key"], "params": expected["params"], "seed": expected["seed"],
               "result": None, "error": None, "traceback": None, "seconds": None, "worker": None,
               **outcome, "finished": now()}
        write_json(self.path(rec["key"]), rec)
        return rec

    def write_index(self, seed: int, records: list[dict]) -> None:
        counts: dict = {}
        for r in records:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        write_json(self.out / "index.json", {
            "format": FORMAT, "experiment": self.exp.name, "version": self.exp.version, "seed": seed,
            "counts": counts,
            "points": [{"key": r["key"], "status": r["status"], "params": r["params"], "seed": r["seed"],
                        "file": f"points/{r['key']}.json", **({"error": r["error"]} if r.get("error") else {})}
                       for r in records]})


def read_point(path: Path, exp, expected: dict) -> tuple[dict | None, str | None]:
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return None, None
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"unreadable ({type(exc).__name__}: {exc})"
    try:
        rec = json.loads(text)
    except ValueError as exc:
        return None, f"not valid JSON ({exc}; a truncated or hand-edited file?)"
    problem = point_problem(rec, exp, expected)
    return (None, problem) if problem else (rec, None)
