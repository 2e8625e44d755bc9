"""Parameter sweeps that resume after interruption: local process pool by default, a Dask cluster when given one.

A sweep is a named experiment (:mod:`verify.sweep_experiments`) and a list of points (parameter dicts), given
explicitly or as a grid / zip / replicate spec. Each point is one task; its result is one JSON file
``OUT/points/<key>.json`` written atomically (temporary file in the same folder, fsync, ``os.replace``), so a
sweep killed at any moment (SIGKILL included) loses no finished point and leaves no half-written file. At the
end: ``OUT/index.json`` (every point, its status and file), ``OUT/summary.csv``, ``OUT/summary.md`` and
``OUT/plot.png``. ``OUT/sweep.json`` records the experiment; it is written before the first task.

* Resume: rerunning the same sweep skips every point whose file exists. A point that raised is recorded
  (``status: "failed"``, the error and its traceback) and rerun only with ``retry_failed=True``.
* Reproducibility: a point's seed is derived by hashing (experiment, canonical parameters, sweep seed), so a
  point gives the same result in any order, on any worker, local or remote. Its key (the file name) hashes
  the same plus the experiment's version string.
* Schedulers: ``"local"`` (a ``concurrent.futures`` process pool with the *spawn* start method, ``workers``
  processes, default the CPU count); ``"serial"`` (in this process, for debugging); ``"tcp://HOST:PORT"`` (a
  ``dask.distributed`` scheduler: tasks go to its workers, results come back here and are written by this
  process, so workers need no shared filesystem, only the same theorylab installed).
* Bad input (unknown experiment or parameter, empty grid, duplicate points, a bad scheduler spec, an
  unreachable scheduler) raises ValueError / ConnectionError before anything is written.
"""
from __future__ import annotations

import csv
import dataclasses
import datetime as _dt
import hashlib
import io
import itertools
import json
import os
import socket
import sys
import time
import tomllib
import traceback
from pathlib import Path
from typing import Any, Iterable

from sims.cache import atomic_write_bytes, atomic_write_text
from verify import sweep_experiments as experiments

FORMAT = 1  # layout version of the files written here
SPEC_KEYS = {"grid", "zip", "fixed", "seeds", "replicates"}
CONFIG_KEYS = {"experiment", "seed", "out", "scheduler", "workers", "plot", "description"} | SPEC_KEYS


# --------------------------------------------------------------------------------------------- helpers
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


def _canonical_json(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def derive_seed(sweep_seed: int, experiment: str, params: dict) -> int:
    """A point's seed in [0, 2³²): SHA-256 of (experiment, canonical params, sweep seed)."""
    blob = _canonical_json({"experiment": experiment, "params": params, "seed": int(sweep_seed)})
    return int.from_bytes(hashlib.sha256(blob.encode()).digest()[:4], "little")


def point_key(experiment: str, version: str, params: dict, seed: int) -> str:
    blob = _canonical_json({"experiment": experiment, "version": version, "params": params, "seed": seed})
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


def _check_value(name: str, v):
    try:
        json.dumps(v, allow_nan=False)
    except (TypeError, ValueError):
        raise ValueError(f"parameter {name!r}: value {v!r} is not a JSON number/string/bool/list") from None


def expand_points(spec) -> list[dict]:
    """Points from a list of dicts or a spec dict.

    Spec: ``grid`` {name: [values]} (Cartesian product, first name outermost), ``zip`` {name: [values]}
    (lists of one length, taken together), ``fixed`` {name: value}, and ``seeds`` [labels] or
    ``replicates`` N (each point repeated with parameter ``replicate`` = label / 0..N−1; the replicate only
    changes the derived seed). A dict without these keys is a grid: list values are axes, others fixed.
    """
    if isinstance(spec, (list, tuple)):
        points = [dict(p) if isinstance(p, dict) else p for p in spec]
        for p in points:
            if not isinstance(p, dict):
                raise ValueError(f"points: each point must be a dict of parameters, got {type(p).__name__}")
        if not points:
            raise ValueError("empty sweep: the list of points is empty")
        return points
    if not isinstance(spec, dict):
        raise ValueError(f"points: expected a list of dicts or a grid spec dict, got {type(spec).__name__}")
    if not SPEC_KEYS & set(spec):
        grid = {k: v for k, v in spec.items() if isinstance(v, (list, tuple))}
        fixed = {k: v for k, v in spec.items() if not isinstance(v, (list, tuple))}
        spec = {"grid": grid, "fixed": fixed}
    unknown = set(spec) - SPEC_KEYS
    if unknown:
        raise ValueError(f"grid spec: unknown key(s) {sorted(unknown)}; expected some of {sorted(SPEC_KEYS)}")
    grid = dict(spec.get("grid") or {})
    zipped = dict(spec.get("zip") or {})
    fixed = dict(spec.get("fixed") or {})
    for section, d in (("grid", grid), ("zip", zipped), ("fixed", fixed)):
        if not isinstance(d, dict):
            raise ValueError(f"grid spec: {section!r} must be a table of parameters, got {type(d).__name__}")
    names = list(grid) + list(zipped) + list(fixed)
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ValueError(f"grid spec: parameter(s) {sorted(dup)} appear in more than one of grid/zip/fixed")
    for name, values in list(grid.items()) + list(zipped.items()):
        if not isinstance(values, (list, tuple)):
            raise ValueError(f"grid spec: {name!r} must be a list of values, got {values!r}")
        if len(values) == 0:
            raise ValueError(f"empty grid: parameter {name!r} has no values")
        for v in values:
            _check_value(name, v)
    for name, v in fixed.items():
        _check_value(name, v)
    lengths = {len(v) for v in zipped.values()}
    if len(lengths) > 1:
        raise ValueError(f"grid spec: zip lists must have one length, got "
                         f"{ {k: len(v) for k, v in zipped.items()} }")
    if "seeds" in spec and "replicates" in spec:
        raise ValueError("grid spec: give either 'seeds' or 'replicates', not both")
    reps: list | None = None
    if "seeds" in spec:
        reps = list(spec["seeds"]) if isinstance(spec["seeds"], (list, tuple)) else None
        if reps is None:
            raise ValueError(f"grid spec: 'seeds' must be a list, got {spec['seeds']!r}")
        if not reps:
            raise ValueError("empty grid: 'seeds' is empty")
        for v in reps:
            _check_value("seeds", v)
    elif "replicates" in spec:
        r = spec["replicates"]
        if isinstance(r, bool) or not isinstance(r, int) or r < 1:
            raise ValueError(f"grid spec: 'replicates' must be an integer >= 1, got {r!r}")
        reps = list(range(r))
    zip_rows = ([dict(zip(zipped, row)) for row in zip(*zipped.values())] if zipped else [{}])
    points = []
    for combo in itertools.product(*grid.values()) if grid else [()]:
        for zrow in zip_rows:
            base = {**fixed, **dict(zip(grid, combo)), **zrow}
            if reps is None:
                points.append(base)
            else:
                points.extend({**base, experiments.REPLICATE: r} for r in reps)
    if not points or (not grid and not zipped and not fixed and reps is None):
        raise ValueError("empty grid: the spec defines no parameters and no seeds")
    return points


def load_config(path) -> dict:
    """Read a sweep TOML: ``experiment``, ``seed``, optional ``out``, ``scheduler``, ``workers``, a ``[plot]``
    table, and the point spec (``[grid]``, ``[zip]``, ``[fixed]``, ``seeds``/``replicates``).

    Returns ``{"experiment", "points", "seed", "out", "scheduler", "workers", "plot", "name"}`` after
    checking the experiment and every parameter (ValueError otherwise; nothing is run or written).
    """
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ValueError(f"sweep config {path} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"sweep config {path}: invalid TOML ({exc})") from None
    unknown = set(raw) - CONFIG_KEYS
    if unknown:
        raise ValueError(f"sweep config {path}: unknown key(s) {sorted(unknown)}; expected some of "
                         f"{sorted(CONFIG_KEYS)}")
    if "experiment" not in raw:
        raise ValueError(f"sweep config {path}: missing 'experiment = \"...\"' "
                         f"(one of {', '.join(sorted(experiments.EXPERIMENTS))})")
    exp = experiments.get(raw["experiment"])
    spec = {k: raw[k] for k in SPEC_KEYS if k in raw}
    if not spec:
        raise ValueError(f"sweep config {path}: empty grid: no [grid], [zip], [fixed], seeds or replicates")
    points = [exp.canonical(p) for p in expand_points(spec)]
    seed = raw.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"sweep config {path}: seed must be an integer, got {seed!r}")
    return {
        "name": path.stem,
        "experiment": exp.name,
        "points": points,
        "seed": seed,
        "out": raw.get("out"),
        "scheduler": raw.get("scheduler"),
        "workers": raw.get("workers"),
        "plot": dict(raw.get("plot") or {}),
        "description": raw.get("description", ""),
    }


# ------------------------------------------------------------------------------------------ the task
def _one_blas_thread():
    """BLAS/OpenMP pools limited to one thread while a point runs (:mod:`sims.threads`).

    A multithreaded BLAS sums in an order that depends on its thread count, which changes the last bits
    of an ill-conditioned result (measured: 1e-12 relative differences in ``massive_floors`` at n = p
    between a 2-thread local pool and 1-thread dask workers). One thread per task everywhere makes a point's
    result the same wherever it runs; the pool runs one task per core anyway.
    """
    from sims.threads import single_threaded

    return single_threaded(torch_threads=None)


def run_point(experiment: str, params: dict, seed: int) -> dict:
    """One task (runs in a worker): the experiment's result, or the error and its traceback. Never raises."""
    t0 = time.perf_counter()
    rec = {"status": "done", "result": None, "error": None, "traceback": None}
    try:
        with _one_blas_thread():
            result = experiments.run(experiment, params, seed)
        rec["result"] = to_jsonable(result)
    except Exception as exc:  # recorded, not raised: the sweep goes on and the point can be retried
        rec.update(status="failed", error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc())
    rec["seconds"] = time.perf_counter() - t0
    rec["worker"] = f"{socket.gethostname()}:{os.getpid()}"
    return rec


# ------------------------------------------------------------------------------------------ results
@dataclasses.dataclass
class SweepResult:
    """What a sweep did: one record per point in point order (params, seed, key, status, result or
    error/traceback), how many ran now / were found done / failed / were lost to a crashed worker."""

    experiment: str
    out_dir: Path
    seed: int
    records: list[dict]
    ran: int = 0
    skipped: int = 0
    lost: int = 0
    files: dict = dataclasses.field(default_factory=dict)

    @property
    def done(self) -> list[dict]:
        return [r for r in self.records if r.get("status") == "done"]

    @property
    def failed(self) -> list[dict]:
        return [r for r in self.records if r.get("status") == "failed"]

    @property
    def pending(self) -> list[dict]:
        return [r for r in self.records if r.get("status") not in ("done", "failed")]

    @property
    def ok(self) -> bool:
        return len(self.done) == len(self.records)

    def results(self) -> list:
        """The results in point order (None for a point not done)."""
        return [r.get("result") if r.get("status") == "done" else None for r in self.records]


def read_record(path: Path) -> dict | None:
    """A point file's record, or None if it is missing or does not parse (never the case with atomic writes)."""
    try:
        rec = json.loads(Path(path).read_text())
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    return rec if isinstance(rec, dict) and rec.get("status") in ("done", "failed") else None


def _write_json(path: Path, obj) -> None:
    atomic_write_text(path, json.dumps(obj, indent=1, sort_keys=False) + "\n")


# ----------------------------------------------------------------------------------------- schedulers
def _parse_scheduler(spec) -> str:
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


def _connect_dask(address: str, timeout: float):
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


class _Local:
    """concurrent.futures process pool with the spawn start method (safe with torch, numba and threads)."""

    def __init__(self, workers: int):
        import concurrent.futures as cf
        import multiprocessing as mp

        self.cf = cf
        self.pool = cf.ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"),
                                           initializer=_ignore_sigint)

    def submit(self, key, *args):
        return self.pool.submit(run_point, *args)

    def as_completed(self, futures):
        return self.cf.as_completed(futures)

    def close(self, cancel=False):
        if cancel:  # interrupted: stop the running tasks now (their points stay unrecorded and rerun later)
            procs = list(getattr(self.pool, "_processes", {}).values())  # no public API before Python 3.14
            self.pool.shutdown(wait=False, cancel_futures=True)
            for proc in procs:
                proc.terminate()
            for proc in procs:
                proc.join(5)
        else:
            self.pool.shutdown(wait=True)


def _ignore_sigint():
    """Pool workers ignore Ctrl-C: the sweep process handles it (and terminates them)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


class _Serial:
    class _Done:
        def __init__(self, fn, args):
            self.fn, self.args = fn, args

        def result(self):
            return self.fn(*self.args)

    def submit(self, key, *args):
        return self._Done(run_point, args)

    def as_completed(self, futures):
        return iter(futures)

    def close(self, cancel=False):
        pass


class _Dask:
    def __init__(self, client):
        import distributed

        self.client, self.distributed = client, distributed

    def submit(self, key, *args):
        return self.client.submit(run_point, *args, key=f"theorylab-sweep-{key}", pure=False)

    def as_completed(self, futures):
        return self.distributed.as_completed(futures, loop=self.client.loop)

    def close(self, cancel=False):
        self.client.close()


# ------------------------------------------------------------------------------------------ the sweep
def run_sweep(experiment: str, points, out_dir, scheduler: str = "local", seed: int = 0,
              retry_failed: bool = False, workers: int | None = None, progress: bool = True,
              plot: dict | None = None, connect_timeout: float = 5.0, name: str | None = None) -> SweepResult:
    """Run (or resume) a sweep of ``experiment`` over ``points`` into ``out_dir``.

    ``points``: a list of parameter dicts or a grid spec (see :func:`expand_points`). ``scheduler``:
    ``"local"`` (process pool of ``workers``), ``"serial"`` or ``"tcp://HOST:PORT"`` (dask). Points whose
    file exists are skipped (failed ones rerun with ``retry_failed``). ``plot``: ``{"x", "y", "hue"}`` for
    the summary plot (default: the experiment's). Returns a :class:`SweepResult`.
    """
    exp = experiments.get(experiment)
    pts = [exp.canonical(p) for p in expand_points(points)]
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an integer, got {seed!r}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
    sched = _parse_scheduler(scheduler)
    records = []
    seen = {}
    for p in pts:
        for k, v in p.items():
            _check_value(k, v)
        s = derive_seed(seed, exp.name, p)
        key = point_key(exp.name, exp.version, p, s)
        if key in seen:
            raise ValueError(f"duplicate point {p} (points #{seen[key]} and #{len(records)})")
        seen[key] = len(records)
        records.append({"key": key, "params": p, "seed": s, "status": "pending"})

    client = _connect_dask(sched, connect_timeout) if sched.startswith(("tcp://", "tls://")) else None
    try:
        return _execute(exp, records, Path(out_dir), sched, client, seed, retry_failed, workers, progress,
                        plot, name)
    finally:
        if client is not None:
            client.close()


def _execute(exp, records, out, sched, client, seed, retry_failed, workers, progress, plot, name):
    from tqdm import tqdm

    manifest_path = out / "sweep.json"
    if manifest_path.exists():
        try:
            old = json.loads(manifest_path.read_text())
        except json.JSONDecodeError:
            old = {}
        if old.get("experiment") not in (None, exp.name):
            raise ValueError(f"{out} holds a sweep of experiment {old.get('experiment')!r}, not {exp.name!r}; "
                             f"choose another output folder")
    points_dir = out / "points"
    points_dir.mkdir(parents=True, exist_ok=True)
    for stale in points_dir.glob(".*.tmp"):  # a temp file of a write that was killed before its rename
        stale.unlink(missing_ok=True)
    _write_json(manifest_path, {"format": FORMAT, "experiment": exp.name, "version": exp.version, "seed": seed,
                                "name": name, "points": len(records),
                                "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")})
    todo, skipped = [], 0
    for i, rec in enumerate(records):
        old = read_record(points_dir / f"{rec['key']}.json")
        if old is not None and (old["status"] == "done" or not retry_failed):
            records[i] = {**rec, **old}
            skipped += 1
        else:
            todo.append(i)

    result = SweepResult(experiment=exp.name, out_dir=out, seed=seed, records=records, skipped=skipped)
    last_index = [0.0]

    def write_index(force=False):
        now = time.monotonic()
        if force or now - last_index[0] > 2.0:
            last_index[0] = now
            _write_index(out, exp, seed, records)

    write_index(force=True)
    bar = tqdm(total=len(records), initial=skipped, desc=f"sweep {exp.name}", unit="pt", file=sys.stderr,
               disable=None if progress else True, dynamic_ncols=True)
    backend = None
    try:
        if todo:
            if sched == "serial":
                backend = _Serial()
            elif sched == "local":
                n = workers or os.cpu_count() or 1
                backend = _Local(max(1, min(n, len(todo))))
            else:
                backend = _Dask(client)
            futures = {}
            for i in todo:
                r = records[i]
                futures[backend.submit(r["key"], exp.name, r["params"], r["seed"])] = i
            for fut in backend.as_completed(list(futures)):
                i = futures[fut]
                try:
                    outcome = fut.result()
                except Exception as exc:  # the worker died (crash, OOM kill): nothing recorded, rerun resumes it
                    result.lost += 1
                    records[i]["status"] = "lost"
                    records[i]["error"] = f"{type(exc).__name__}: {exc}"
                    bar.update(1)
                    continue
                rec = {"format": FORMAT, "experiment": exp.name, "version": exp.version, "key": records[i]["key"],
                       "params": records[i]["params"], "seed": records[i]["seed"], **outcome,
                       "finished": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
                _write_json(points_dir / f"{rec['key']}.json", rec)
                records[i] = rec
                result.ran += 1
                bar.update(1)
                if rec["status"] == "failed":
                    bar.set_postfix_str(f"{len(result.failed)} failed")
                write_index()
    except BaseException:
        if backend is not None:
            backend.close(cancel=True)
            backend = None
        write_index(force=True)
        raise
    finally:
        bar.close()
        if backend is not None:
            backend.close()
    write_index(force=True)
    result.files = _write_summary(out, exp, records, plot)
    result.files["index"] = out / "index.json"
    return result


def _write_index(out: Path, exp, seed: int, records: list[dict]) -> None:
    counts = {}
    for r in records:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    _write_json(out / "index.json", {
        "format": FORMAT, "experiment": exp.name, "version": exp.version, "seed": seed, "counts": counts,
        "points": [{"key": r["key"], "status": r["status"], "params": r["params"], "seed": r["seed"],
                    "file": f"points/{r['key']}.json", **({"error": r["error"]} if r.get("error") else {})}
                   for r in records]})


# -------------------------------------------------------------------------------------------- summary
def _scalar(v) -> bool:
    return v is None or isinstance(v, (int, float, str, bool))


def flat_result(result) -> dict:
    """The scalar fields of a result; nested dicts flattened with dotted names (``summary.hard_gap``)."""
    out = {}

    def walk(prefix, d):
        for k, v in d.items():
            name = f"{prefix}{k}"
            if isinstance(v, dict):
                walk(name + ".", v)
            elif _scalar(v):
                out[name] = v

    if isinstance(result, dict):
        walk("", result)
    return out


def summary_rows(records: list[dict]) -> tuple[list[str], list[dict]]:
    """Columns (parameters, then seed/status, then scalar result fields) and one row per point."""
    pcols, rcols = [], []
    for r in records:
        for k in r["params"]:
            if k not in pcols:
                pcols.append(k)
        if r.get("status") == "done":
            for k in flat_result(r.get("result")):
                if k not in rcols:
                    rcols.append(k)
    cols = pcols + ["seed", "status"] + rcols + ["seconds"]
    rows = []
    for r in records:
        row = {k: r["params"].get(k) for k in pcols}
        row.update(seed=r["seed"], status=r["status"], seconds=r.get("seconds"))
        res = flat_result(r.get("result"))
        for k in rcols:
            row[k] = res.get(k)
        rows.append(row)
    return cols, rows


def _fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _write_summary(out: Path, exp, records: list[dict], plot: dict | None) -> dict:
    cols, rows = summary_rows(records)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    for row in rows:
        w.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in cols})
    atomic_write_text(out / "summary.csv", buf.getvalue())
    lines = [f"# sweep `{exp.name}`", "", f"{len([r for r in records if r['status'] == 'done'])} done, "
             f"{len([r for r in records if r['status'] == 'failed'])} failed, {len(records)} points", "",
             "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_fmt(row.get(k)) for k in cols) + " |" for row in rows]
    failed = [r for r in records if r["status"] == "failed"]
    if failed:
        lines += ["", "## failed points", ""]
        lines += [f"- `{r['key']}` {r['params']}: {r.get('error')}" for r in failed]
    atomic_write_text(out / "summary.md", "\n".join(lines) + "\n")
    files = {"summary_csv": out / "summary.csv", "summary_md": out / "summary.md"}
    spec = {**exp.plot, **(plot or {})}
    png = _plot(out, exp, records, spec)
    if png is not None:
        files["plot"] = png
    return files


def _plot(out: Path, exp, records: list[dict], spec: dict) -> Path | None:
    """y (mean ± std over the points sharing x and hue) against x, one line per hue value."""
    x, y, hue = spec.get("x"), spec.get("y"), spec.get("hue")
    done = [r for r in records if r["status"] == "done" and isinstance(r.get("result"), dict)]
    if not x or not y or not done:
        return None

    def num(v):
        return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    groups: dict = {}
    for r in done:
        flat = flat_result(r["result"])
        xv = num(r["params"].get(x, flat.get(x)))
        yv = num(flat.get(y, r["params"].get(y)))
        if xv is None or yv is None:
            continue
        hv = r["params"].get(hue) if hue else None
        groups.setdefault(_fmt(hv), {}).setdefault(xv, []).append(yv)
    if not groups:
        return None
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for hv, by_x in sorted(groups.items()):
        xs = sorted(by_x)
        m = np.array([np.mean(by_x[v]) for v in xs])
        s = np.array([np.std(by_x[v]) for v in xs])
        ax.errorbar(xs, m, yerr=s if any(len(by_x[v]) > 1 for v in xs) else None, marker="o", capsize=3,
                    label=f"{hue}={hv}" if hue else None)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title(f"sweep {exp.name}")
    if hue:
        ax.legend(fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    atomic_write_bytes(out / "plot.png", buf.getvalue())
    return out / "plot.png"


def load_sweep(out_dir) -> SweepResult:
    """The records of a finished or interrupted sweep from its ``index.json`` and point files."""
    out = Path(out_dir)
    index = json.loads((out / "index.json").read_text())
    records = []
    for p in index["points"]:
        rec = read_record(out / p["file"])
        records.append(rec if rec is not None else {**p, "status": "pending"})
    return SweepResult(experiment=index["experiment"], out_dir=out, seed=index["seed"], records=records)


def sweep_runner(out_dir, experiment: str = "multiview", scheduler: str = "local", seed: int = 0,
                 workers: int | None = None, progress: bool = True, retry_failed: bool = False):
    """A ``runner(configs) -> results`` callable that runs each config as one sweep point (resumable,
    local or on a Dask cluster) and returns the experiment's results in the configs' order.

    Meant for functions in ``sims`` that loop over configs (e.g. ``granularity_sweep(..., runner=...)``):
    they cannot import ``verify``, so they take the runner as a parameter. Raises RuntimeError naming the
    first failed point (its traceback is in the point file).
    """

    def runner(configs: Iterable[dict]) -> list:
        configs = [dict(c) for c in configs]
        res = run_sweep(experiment, configs, out_dir, scheduler=scheduler, seed=seed, workers=workers,
                        progress=progress, retry_failed=retry_failed)
        bad = [r for r in res.records if r["status"] != "done"]
        if bad:
            r = bad[0]
            where = (f"traceback in {Path(out_dir) / 'points' / (r['key'] + '.json')}" if r["status"] == "failed"
                     else "its worker died: rerun to resume (a script using the local pool needs "
                          "`if __name__ == '__main__':`)")
            raise RuntimeError(f"{len(bad)} of {len(configs)} sweep point(s) did not finish; first: {r['params']}: "
                               f"{r.get('error')} ({where})")
        return res.results()

    return runner
