"""The check registry: one record per claim id of CLAIMS.md.

A check is data plus one function. The function ``compare(ctx, planted)`` runs the *same
comparison* twice: once against the paper's claim (``planted=False``) and once against a planted
wrong version of it (``planted=True``, the negative control). It returns a :class:`Result` whose
``holds`` says whether the compared claim holds within the stated tolerance.

Status rules (see README):

* ``pass``      the claim holds and the negative control does not;
* ``refuted``   the claim as stated does not hold here (a finding: ``Result.finding`` says what holds
                instead, ``Result.artifacts`` point at the saved counterexample);
* ``reported``  the check is declared ``reports=True`` (a conjecture or an open law): its numbers are
                reported, never judged; the negative control must still fail;
* ``fail``      the check is broken: it raised, or its negative control passed;
* ``missing``   a catalog id with no registered check.
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import math
import pkgutil
import time
import tomllib
import traceback
from pathlib import Path
from typing import Any, Callable

import numpy as np

KINDS = ("symbolic", "numeric", "sim", "symbolic+numeric")
STATUSES = ("pass", "refuted", "reported", "fail", "missing")
CATALOG_PATH = Path(__file__).with_name("catalog.toml")


@dataclasses.dataclass
class Result:
    """What one run of a comparison measured.

    measured / expected: the headline number (or short string) and what the claim predicts for it,
    e.g. ``measured=3.1e-13, expected="<= 1e-10"``. ``holds``: the compared claim holds within the
    tolerance. ``details``: any further numbers for the report (JSON-serialisable after
    :func:`to_jsonable`). ``finding``: for a refuted or reported check, one paragraph saying what was
    measured and what holds instead. ``artifacts``: paths (relative to the report dir) of saved
    counterexamples or data. ``figures``: figure ids that illustrate this check.
    """

    measured: Any
    expected: Any
    holds: bool
    details: dict = dataclasses.field(default_factory=dict)
    finding: str | None = None
    artifacts: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Context:
    """What a check receives: run mode, seeds and places to write.

    ``rng(tag)`` gives a fresh ``numpy.random.Generator`` determined by the global seed, the check id
    and ``tag`` (never global state), so each check is reproducible on its own and independent of
    the order in which checks run. ``torch_generator(tag)`` is the torch counterpart.
    """

    check_id: str = "adhoc"
    quick: bool = False
    seed: int = 0
    report_dir: Path | None = None
    device: str = "cpu"

    def _seed_for(self, tag: str) -> int:
        h = hashlib.sha256(f"{self.seed}|{self.check_id}|{tag}".encode()).digest()
        return int.from_bytes(h[:8], "little")

    def rng(self, tag: str = "") -> np.random.Generator:
        return np.random.default_rng(self._seed_for(tag))

    def torch_generator(self, tag: str = "", device: str | None = None):
        import torch  # verify may use torch; theory never does

        g = torch.Generator(device=device or self.device)
        g.manual_seed(self._seed_for(tag) % (2**63 - 1))
        return g

    @property
    def artifact_dir(self) -> Path:
        """Folder for this check's saved counterexamples and data (created on demand)."""
        base = self.report_dir if self.report_dir is not None else Path("report")
        d = base / "artifacts" / self.check_id
        d.mkdir(parents=True, exist_ok=True)
        return d


@dataclasses.dataclass
class Check:
    id: str
    paper: str
    equation: str
    statement: str
    kind: str
    tolerance: Any
    tolerance_reason: str
    negative_control: str
    compare: Callable[[Context, bool], Result]
    reports: bool = False
    erratum: str | None = None
    figures: tuple = ()


@dataclasses.dataclass
class Outcome:
    """The registry's verdict on one check, as written to report.json."""

    id: str
    paper: str
    equation: str
    kind: str
    statement: str
    status: str
    measured: Any = None
    expected: Any = None
    tolerance: Any = None
    tolerance_reason: str = ""
    negative_control: str = ""
    negative_control_result: str = ""
    control_measured: Any = None
    seconds: float = 0.0
    erratum: str | None = None
    finding: str | None = None
    details: dict = dataclasses.field(default_factory=dict)
    artifacts: list = dataclasses.field(default_factory=list)
    figures: tuple = ()
    error: str | None = None

    def to_json(self) -> dict:
        d = dataclasses.asdict(self)
        d["negative_control_description"] = d.pop("negative_control")
        d["negative_control"] = d.pop("negative_control_result")
        return to_jsonable(d)


_CHECKS: dict[str, Check] = {}


def load_catalog() -> dict[str, dict]:
    """The catalog of claim ids (verify/catalog.toml, generated from CLAIMS.md by tools/gen_catalog.py)."""
    with open(CATALOG_PATH, "rb") as fh:
        data = tomllib.load(fh)
    return {c["id"]: c for c in data["claim"]}


def check(
    id: str,
    *,
    equation: str,
    kind: str,
    tolerance: Any,
    tolerance_reason: str,
    negative_control: str,
    statement: str | None = None,
    reports: bool = False,
    erratum: str | None = None,
    figures: tuple | list = (),
):
    """Register ``compare(ctx, planted) -> Result`` as the check for catalog id ``id``.

    The paper and the statement default to the catalog's. ``negative_control`` says in one line what
    the planted wrong claim is.
    """
    if kind not in KINDS:
        raise ValueError(f"check {id}: kind {kind!r} is not one of {KINDS}")

    def deco(fn: Callable[[Context, bool], Result]):
        catalog = load_catalog()
        if id not in catalog:
            raise ValueError(f"check {id!r} is not in the catalog {CATALOG_PATH.name}")
        if id in _CHECKS and _CHECKS[id].compare.__qualname__ != fn.__qualname__:
            raise ValueError(f"check {id!r} is registered twice")
        entry = catalog[id]
        _CHECKS[id] = Check(
            id=id,
            paper=entry["paper"],
            equation=equation,
            statement=statement or entry["claim"],
            kind=kind,
            tolerance=tolerance,
            tolerance_reason=tolerance_reason,
            negative_control=negative_control,
            compare=fn,
            reports=reports,
            erratum=erratum,
            figures=tuple(figures),
        )
        return fn

    return deco


IMPORT_ERRORS: dict[str, str] = {}


def discover() -> dict[str, Check]:
    """Import every module of ``verify.checks`` (each registers its checks) and return the registry.

    A module that fails to import does not hide the others: its error is kept in
    :data:`IMPORT_ERRORS` (module name -> traceback) and ``theorylab verify`` reports it and exits 1.
    """
    import verify.checks as pkg

    for mod in pkgutil.iter_modules(pkg.__path__):
        if not mod.name.startswith("_"):
            try:
                importlib.import_module(f"verify.checks.{mod.name}")
                IMPORT_ERRORS.pop(mod.name, None)
            except Exception:
                IMPORT_ERRORS[mod.name] = traceback.format_exc()
    return dict(_CHECKS)


def run_check(chk: Check, ctx: Context) -> Outcome:
    """Run the claim and its negative control, and decide the status (rules in the module doc)."""
    out = Outcome(
        id=chk.id, paper=chk.paper, equation=chk.equation, kind=chk.kind, statement=chk.statement,
        status="fail", tolerance=chk.tolerance, tolerance_reason=chk.tolerance_reason,
        negative_control=chk.negative_control, erratum=chk.erratum, figures=chk.figures,
    )
    t0 = time.perf_counter()
    try:
        claim = chk.compare(ctx, False)
        control = chk.compare(ctx, True)
        _validate_result(claim, chk.id)
        _validate_result(control, chk.id)
    except Exception as exc:  # a check that raises is broken: status fail, with the traceback
        out.error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        out.details = {"traceback": traceback.format_exc()}
        out.seconds = time.perf_counter() - t0
        return out
    out.seconds = time.perf_counter() - t0
    out.measured, out.expected = claim.measured, claim.expected
    out.details, out.finding, out.artifacts = claim.details, claim.finding, claim.artifacts
    out.control_measured = control.measured
    out.negative_control_result = "PASSED" if control.holds else "failed as it should"
    if control.holds:
        out.status = "fail"
        out.error = "negative control passed: the comparison cannot tell the claim from a wrong one"
    elif chk.reports:
        out.status = "reported"
    elif claim.holds:
        out.status = "pass"
    else:
        out.status = "refuted"
    return out


def _validate_result(r: Any, cid: str) -> None:
    if not isinstance(r, Result):
        raise TypeError(f"check {cid} returned {type(r).__name__}, not Result")
    if not isinstance(r.holds, (bool, np.bool_)):
        raise TypeError(f"check {cid}: Result.holds must be a bool, got {r.holds!r}")


def to_jsonable(x: Any) -> Any:
    """numpy scalars/arrays, paths, tuples and non-finite floats to plain JSON values."""
    if isinstance(x, dict):
        return {str(k): to_jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [to_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return to_jsonable(x.tolist())
    if isinstance(x, (np.bool_, bool)):
        return bool(x)
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating, float)):
        v = float(x)
        return v if math.isfinite(v) else str(v)
    if isinstance(x, Path):
        return str(x)
    if x is None or isinstance(x, (str, int)):
        return x
    return str(x)


def summarize(outcomes: list[Outcome]) -> dict[str, int]:
    return {s: sum(o.status == s for o in outcomes) for s in STATUSES}


def dumps(obj: Any) -> str:
    return json.dumps(to_jsonable(obj), indent=2)
