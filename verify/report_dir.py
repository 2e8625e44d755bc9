"""Output folders and report folders: writable-folder probes, and a report folder that is never lost or taken over.

A report is built in a temporary folder beside ``--report R`` and swapped in at the end (:func:`_install_report`),
so an interrupted run leaves the previous report whole; a non-empty folder that is not a theorylab report is
refused (:func:`prepare_report_dir`); the marker file ``.theorylab-report`` lists the files the report wrote, and
only those are ever deleted. Used by :mod:`verify.api`.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import tempfile
import threading
from pathlib import Path, PurePosixPath

from verify.errors import UsageError

REPORT_MARKER = ".theorylab-report"


def _probe(d: Path, what: str) -> None:
    try:
        with tempfile.NamedTemporaryFile(dir=d, prefix=".theorylab-probe-"):
            pass
    except OSError as exc:
        raise UsageError(f"{what} {d}: cannot write there ({exc.strerror or exc})") from None


def prepare_dir(path, what: str = "output folder") -> Path:
    """Create ``path`` if needed and make sure a file can be written there (else :class:`UsageError`)."""
    d = Path(path)
    if d.exists() and not d.is_dir():
        raise UsageError(f"{what} {d}: exists and is not a folder")
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{what} {d}: cannot create the folder ({exc.strerror or exc})") from None
    _probe(d, what)
    return d


def prepare_file(path, what: str = "output file") -> Path:
    """Make sure ``path`` can be written (its folder exists or can be made, it is not a folder)."""
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"{what} {p}: is a folder")
    prepare_dir(p.parent if str(p.parent) else Path("."), what)
    return p


def _safe_rel(rel) -> bool:
    p = PurePosixPath(rel) if isinstance(rel, str) else None
    return bool(p and rel and not p.is_absolute() and ".." not in p.parts and rel != REPORT_MARKER)


def is_report_dir(path) -> bool:
    """``path`` holds a theorylab report: its marker ``.theorylab-report``, or a theorylab ``report.json``."""
    d = Path(path)
    if (d / REPORT_MARKER).is_file():
        return True
    try:
        data = json.loads((d / "report.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "meta" in data and "checks" in data


def written_files(path) -> set[str]:
    """The files (paths relative to ``path``, with ``/``) that theorylab wrote in the report folder ``path``.

    Read from the marker's list; a report from before that list (a plain-text marker, or report.json alone)
    counts REPORT.md, report.json and the figures and artifacts its report.json names.
    """
    d = Path(path)
    try:
        files = json.loads((d / REPORT_MARKER).read_text())["files"]
        if not isinstance(files, list):
            raise ValueError
    except (OSError, ValueError, KeyError, TypeError):
        files = ["REPORT.md", "report.json"]
        try:
            data = json.loads((d / "report.json").read_text())
            files += [f"figs/{fid}.{ext}" for fid in data["meta"].get("figure_seconds") or {} for ext in ("png", "pdf")]
            files += [a for c in data["checks"] for a in c.get("artifacts") or () if str(a).startswith("artifacts/")]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass
    return {f for f in files if _safe_rel(f)}


def prepare_report_dir(path) -> Path:
    """Check the report folder before any work (nothing in it is changed: the report is built beside it).

    The folder may be new, empty, or an earlier report (see :func:`is_report_dir`); a non-empty folder that
    is not a report is refused, so that a report never mixes with files it did not write.
    """
    d = Path(path)
    if d.is_dir() and not is_report_dir(d):
        try:
            entries = sorted(e.name for e in d.iterdir())
        except OSError as exc:
            raise UsageError(f"--report {d}: cannot read the folder ({exc.strerror or exc})") from None
        if entries:
            shown = ", ".join(entries[:3]) + (", …" if len(entries) > 3 else "")
            raise UsageError(f"--report {d}: the folder holds files ({shown}) and is not a theorylab report "
                             f"(no {REPORT_MARKER} or report.json); choose a new or empty folder")
    return prepare_dir(d, "--report")


def adopt_report_dir(path) -> bool:
    """Make ``path`` a theorylab report folder that holds no report yet (created if needed), so that
    ``--report path`` accepts it although theorylab's other outputs (e.g. the tests' controls_quick.md) sit
    there too. Only a new or empty folder is adopted (an earlier report is left as it is): True if ``path`` is
    a report folder afterwards. No file of the folder is ever listed as the report's by this."""
    d = Path(path)
    if is_report_dir(d):
        return True
    d.mkdir(parents=True, exist_ok=True)
    if any(d.iterdir()):
        return False
    _write_marker(d, [])
    return True


def _stage_dir(d: Path) -> Path:
    """A fresh temporary folder beside ``d`` (inside it when its parent cannot be written) for a new report."""
    full = Path(os.path.abspath(d))
    for where in (full.parent, full):
        try:
            return Path(tempfile.mkdtemp(prefix=f".{full.name or 'report'}.theorylab-new-", dir=where))
        except OSError:
            continue
    raise UsageError(f"--report {d}: cannot create a temporary folder beside it or in it")


def _remove_stage(stage) -> None:
    """Remove a staging folder (everything in it was written by this run)."""
    if stage is not None:
        shutil.rmtree(stage, ignore_errors=True)


@contextlib.contextmanager
def _interrupts_deferred():
    """Ctrl-C waits until the block is done (then is raised), so that a report is never left half swapped."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught = []
    try:
        old = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    except (ValueError, OSError):
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
        if caught and callable(old):
            old(signal.SIGINT, None)


def _move(src: Path, dst: Path) -> None:
    try:
        os.replace(src, dst)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        tmp = dst.with_name(f".{dst.name}.theorylab-tmp")  # another file system: copy, then swap in
        shutil.copy2(src, tmp)
        os.replace(tmp, dst)


def _write_marker(d: Path, files) -> None:
    from sims.cache import atomic_write_text

    atomic_write_text(d / REPORT_MARKER, json.dumps({
        "about": "written by `theorylab verify --report`; the files below are the report's own: a new run "
                 "replaces them and deletes only those of them it does not write again",
        "files": sorted(files)}, indent=1) + "\n")


def _set_aside(p: Path) -> None:
    """A file theorylab did not write stands where the report writes: keep it under a new name."""
    n = 0
    while True:
        alt = p.with_name(f"{p.name}.mine" + (f"{n}" if n else ""))
        if not os.path.lexists(alt):
            os.rename(p, alt)
            return
        n += 1


def _install_report(stage: Path, d: Path, keep=()) -> list[str]:
    """Swap the report built in ``stage`` into ``d``: move its files in (REPORT.md last), then delete the
    files of the earlier report that the new one does not have. Only files listed by the earlier report's
    marker (or named by its report.json) are ever deleted; ``keep`` (paths) stay as they are. Returns the
    report's files."""
    new = sorted(p.relative_to(stage).as_posix() for p in stage.rglob("*")
                 if (p.is_file() or p.is_symlink()) and p.name != REPORT_MARKER
                 and not p.name.startswith(".theorylab-probe-"))
    new.sort(key=lambda rel: (rel == "REPORT.md", rel == "report.json", rel))
    old = written_files(d) if is_report_dir(d) else set()
    keep = {k for k in keep if k in old and os.path.lexists(d / k)}
    with _interrupts_deferred():
        _write_marker(d, old | set(new))  # a kill from here on still leaves a list of every file ours
        for rel in new:
            dst = d / rel
            if os.path.lexists(dst) and rel not in old:
                _set_aside(dst)
            dst.parent.mkdir(parents=True, exist_ok=True)
            _move(stage / rel, dst)
        for rel in sorted(old - set(new) - keep):
            p = d / rel
            if p.is_file() and not p.is_symlink():
                p.unlink()
            parent = p.parent
            while parent != d and parent.is_dir() and not any(parent.iterdir()):
                parent.rmdir()
                parent = parent.parent
        files = sorted(set(new) | keep)
        _write_marker(d, files)
    return files
