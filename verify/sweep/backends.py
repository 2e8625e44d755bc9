"""Where a sweep's points run: a local process pool, this process (serial), or a Dask cluster."""
from __future__ import annotations

import sys

from verify.sweep.task import run_point


def parse_scheduler(spec) -> str:
    if spec is None:
        return "local"
    if not isinstance(spec, str):
        raise ValueError(f"scheduler: expected 'local', 'serial' or 'tcp://HOST:PORT', got {spec!r}")
    s = spec.strip()
    if s in ("local", "serial"):
        return s
    if s.startswith(("tcp://", "tls://")):
        rest = s.split("://", 1)[1]
        host, _, port = rest.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"scheduler {spec!r}: expected tcp://HOST:PORT")
        return s
    raise ValueError(f"scheduler {spec!r}: expected 'local', 'serial' or 'tcp://HOST:PORT'")


def connect_dask(address: str, timeout: float):
    try:
        from distributed import Client
    except ImportError:
        raise ValueError("scheduler tcp://...: dask.distributed is not installed "
                         "(pip install 'theorylab[dask]')") from None
    try:
        client = Client(address, timeout=f"{timeout}s", set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise ConnectionError(f"cannot reach the dask scheduler at {address} within {timeout:g} s "
                              f"({type(exc).__name__}: {exc}); start one with `dask scheduler` and "
                              f"`dask worker {address}`") from None
    try:
        n_workers = len(client.scheduler_info().get("workers", {}))
    except Exception:
        n_workers = -1
    if n_workers == 0:
        print(f"sweep: the scheduler at {address} has no workers yet; the tasks wait for "
              f"`dask worker {address}`", file=sys.stderr)
    return client


class Serial:
    """Every point in this process, one after the other (for debugging)."""

    def run(self, tasks):
        for i, _key, args in tasks:
            yield i, run_point(*args)

    def close(self, cancel: bool = False) -> None:
        pass


class Dask:
    """Points as tasks of a ``dask.distributed`` cluster; results come back here.

    A point whose worker dies is retried by the scheduler on another worker, up to its
    ``distributed.scheduler.allowed-failures`` (default 3); then its future raises ``KilledWorker`` and the
    point is reported ``crashed``. Any other error of the cluster (connection lost, a task cancelled)
    leaves the point unrecorded ("lost"): a rerun resumes it.
    """

    def __init__(self, client, imports=()):
        import distributed

        self.client, self.distributed = client, distributed
        upload_plugins(client, imports)

    def run(self, tasks):
        from distributed.scheduler import KilledWorker

        futures = {self.client.submit(run_point, *args, key=f"theorylab-sweep-{key}", pure=False): i
                   for i, key, args in tasks}
        for fut in self.distributed.as_completed(list(futures), loop=self.client.loop):
            i = futures[fut]
            try:
                yield i, fut.result()
            except KilledWorker as exc:
                yield i, {"status": "crashed", "error": f"it killed its dask worker on every try ({exc})",
                          "tries": None}
            except Exception as exc:  # noqa: BLE001 - the cluster failed, not the point: leave it unrecorded
                yield i, {"status": "lost", "error": f"{type(exc).__name__}: {exc}"}

    def close(self, cancel: bool = False) -> None:
        self.client.close()


def upload_plugins(client, modules) -> list[str]:
    """Send the plugin modules that are single files of project code (not installed packages) to the Dask
    workers (``Client.upload_file``), so a worker on another machine imports them too. A plugin package must
    be installed on the workers (``pip install``). Returns the files sent."""
    import importlib.util

    from sims.codehash import is_project_file

    sent = []
    for name in modules or ():
        spec = importlib.util.find_spec(name)
        origin = getattr(spec, "origin", None) if spec is not None else None
        if not origin or not origin.endswith(".py") or spec.submodule_search_locations is not None:
            continue
        if "." in name or not is_project_file(origin):
            continue  # a module inside a package, or installed: the workers import it from their environment
        client.upload_file(origin)
        sent.append(origin)
    return sent


def make_backend(sched: str, client, workers: int | None, n_tasks: int, tries: int, imports=()):
    """The backend for a parsed scheduler spec (see :func:`parse_scheduler`)."""
    if sched == "serial":
        return Serial()
    if sched == "local":
        import os

        from verify.sweep.pool import LocalPool

        n = workers or os.cpu_count() or 1
        return LocalPool(max(1, min(n, n_tasks)), tries=tries)
    return Dask(client, imports)
