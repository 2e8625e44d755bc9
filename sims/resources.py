"""Memory before allocation: what this process may still allocate, and a refusal that states the estimate.

Every entry point that sizes arrays from user input (``theorylab sim``, sweep points, ``analyze``, ``geometry``,
the FG data models, the glyph task) estimates the bytes it needs from the sizes alone and calls
:func:`require` before it allocates anything. :func:`require` compares the estimate with :func:`available`:

* ``MemAvailable`` of ``/proc/meminfo`` (else ``os.sysconf`` free pages × page size);
* the address-space limit (``ulimit -v``, ``RLIMIT_AS``) minus the process's current ``VmSize``;
* the cgroup (v2 ``memory.max`` − ``memory.current``, v1 ``memory.limit_in_bytes`` − ``memory.usage_in_bytes``);

the smallest of those that is known. When the estimate does not fit it raises :class:`InsufficientMemory` (a
``ValueError``: one line at the command line, exit 2) with the estimate, what was measured and how to proceed
anyway. ``force=True``, the context :func:`forced` or the environment variable ``THEORYLAB_FORCE=1`` (which
:func:`forced` sets, so that spawned worker processes inherit it) turn the refusal off; the command lines set it
with ``--force``.
"""
from __future__ import annotations

import contextlib
import os
import resource

FORCE_ENV = "THEORYLAB_FORCE"
SMALL = 64 * 2 ** 20  # estimates below this are not measured against the machine (no system files are read)


class InsufficientMemory(ValueError):
    """An estimate larger than the memory this process can still get (``needed``, ``available`` in bytes)."""

    def __init__(self, message: str, needed: float, available: float):
        super().__init__(message)
        self.needed, self.available = needed, available


def fmt_bytes(n: float) -> str:
    """``n`` bytes in binary units (``1.5 GiB``, ``364 TiB``, ``512 B``)."""
    n = float(n)
    for unit, size in (("PiB", 2 ** 50), ("TiB", 2 ** 40), ("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if abs(n) >= size:
            v = n / size
            return f"{v:.3g} {unit}" if v < 1000 else f"{v:,.0f} {unit}"
    return f"{n:.0f} B"


def _meminfo() -> dict:
    out = {}
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                name, _, rest = line.partition(":")
                parts = rest.split()
                if parts and parts[0].isdigit():
                    out[name] = int(parts[0]) * (1024 if parts[1:2] == ["kB"] else 1)
    except OSError:
        pass
    return out


def _vm_size() -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _read_int(path: str) -> int | None:
    try:
        with open(path) as fh:
            text = fh.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _cgroup_room() -> int | None:
    for limit, usage in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                         ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        lim, use = _read_int(limit), _read_int(usage)
        if lim is not None and use is not None and lim < 2 ** 60:
            return max(0, lim - use)
    return None


def available() -> tuple[int | None, str]:
    """(bytes this process can still allocate, where that number comes from); (None, reason) when unknown."""
    found = []
    info = _meminfo()
    if "MemAvailable" in info:
        found.append((info["MemAvailable"], "MemAvailable in /proc/meminfo"))
    else:
        try:
            found.append((os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"), "free physical pages"))
        except (ValueError, OSError, AttributeError):
            pass
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        used = _vm_size() or 0
        found.append((max(0, soft - used), f"address-space limit (ulimit -v) {fmt_bytes(soft)} less the "
                                           f"{fmt_bytes(used)} this process maps"))
    room = _cgroup_room()
    if room is not None:
        found.append((room, "the cgroup's memory limit less its usage"))
    if not found:
        return None, "unknown (no /proc/meminfo)"
    return min(found)


def is_forced() -> bool:
    """True inside :func:`forced` or with ``THEORYLAB_FORCE=1`` in the environment."""
    return os.environ.get(FORCE_ENV, "") not in ("", "0")


@contextlib.contextmanager
def forced(flag: bool = True):
    """Within the block, :func:`require` never refuses (``flag=False``: no change). Sets ``THEORYLAB_FORCE`` so
    that worker processes started inside the block inherit it; restores the old value afterwards."""
    if not flag:
        yield
        return
    old = os.environ.get(FORCE_ENV)
    os.environ[FORCE_ENV] = "1"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(FORCE_ENV, None)
        else:
            os.environ[FORCE_ENV] = old


def require(needed: float, what: str, *, force: bool | None = None, hint: str = "", seconds: float | None = None,
            fraction: float = 0.9) -> dict:
    """Refuse (:class:`InsufficientMemory`) when ``needed`` bytes exceed ``fraction`` of :func:`available`
    (estimates up to :data:`SMALL` pass without reading the system's numbers).

    ``what`` names the work ("sim multiview d = 10000000: W, W₀, the dictionary, …"); ``hint`` says what to
    change; ``seconds``: an estimated time, quoted in the message. ``force`` (None: :func:`is_forced`) skips
    the refusal. Returns ``{"needed_bytes", "available_bytes", "source"}``.
    """
    if not (needed >= 0):
        raise ValueError(f"{what}: memory estimate {needed!r} is not a number of bytes >= 0")
    if needed <= SMALL:
        return {"needed_bytes": float(needed), "available_bytes": None, "source": "not measured (small)"}
    have, source = available()
    out = {"needed_bytes": float(needed), "available_bytes": have, "source": source}
    if force is None:
        force = is_forced()
    if have is None or force or needed <= fraction * have:
        return out
    when = f", estimated time {_fmt_seconds(seconds)}" if seconds is not None else ""
    raise InsufficientMemory(
        f"refused: {what} needs an estimated {fmt_bytes(needed)} of memory{when}, but this machine has "
        f"{fmt_bytes(have)} available ({source})" + (f"; {hint}" if hint else "")
        + "; --force (THEORYLAB_FORCE=1) tries anyway", needed, have)


def _fmt_seconds(s: float) -> str:
    return f"{s / 3600:.1f} h" if s >= 3600 else f"{s / 60:.1f} min" if s >= 60 else f"{s:.0f} s"
