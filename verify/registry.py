"""The check registry: one record per claim id of the catalog (verify/catalog.toml, the list of the papers' claims).

A check is data plus one function. The function ``compare(ctx, planted)`` runs the *same
comparison* twice: once against the paper's claim (``planted=False``) and once against a planted
wrong version of it (``planted=True``, the negative control). It returns a :class:`Result` whose
``holds`` says whether the compared claim holds within the stated tolerance.

Status rules (see README):

* ``pass``      the claim holds (for every seed) and the negative control does not;
* ``refuted``   the claim as stated does not hold here, for any seed (a finding: ``Result.finding`` says
                what holds instead, ``Result.artifacts`` point at the saved counterexample);
* ``reported``  the check is declared ``reports=True`` (a conjecture or an open law: its numbers are
                reported, never judged), or the claim holds for some seeds and not others, or a seed's
                Result is ``undecided`` (it measured, but its reading cannot be a verdict: e.g. not settled);
* ``fail``      the check is broken: it raised, its negative control passed, its positive control did not
                hold, it is refuted/reported without a positive control, or refuted without a finding;
* ``missing``   a catalog id with no registered check;
* ``skipped``   the check needs an optional package that is not installed (it raised that package's
                ImportError, see :mod:`verify.optional`): the outcome names the package and the pip command
                that installs it. Like ``missing``, it does not make ``verify`` exit 1.

Controls. The *negative control* (``compare(ctx, True)``) is the same comparison against a planted
wrong claim that stands for a realistic bug; it must not hold. The *positive control*
(``compare(ctx, False, positive=True)``, declared with ``positive_control=``) is the same comparison on
data or a model where the claim holds by construction; it must hold. A check that can end ``refuted``
or ``reported`` must declare one, so that its comparison is shown able to say "holds".

Misses. ``Result.miss`` is the compared figure's distance from the claim in units of the tolerance
(≤ 1: within tolerance, so ``holds == (miss <= 1)``). The control's miss tells a near miss (a control
that catches subtle bugs) from a strawman (a miss by 10¹⁰ tolerances catches nothing subtle).

Seeds. A check runs its claim once per seed: ``seeds`` of them (default 3 for ``sim`` checks and 1
otherwise) in a full run, one in ``--quick``. Seed ``s`` runs with ``Context.seed = base + s``, so the
first seed is the run's ``--seed``. The controls run on the first seed.
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib
import inspect
import json
import math
import pkgutil
import re
import time
import tomllib
import traceback
from pathlib import Path
from typing import Any, Callable

import numpy as np

from verify import optional
from verify.verdicts import MISS_CLASSES, miss_class, outside_regime, to_jsonable  # noqa: F401 (re-exported)

KINDS = ("symbolic", "numeric", "sim", "symbolic+numeric")
STATUSES = ("pass", "refuted", "reported", "fail", "missing", "skipped")
CATALOG_PATH = Path(__file__).with_name("catalog.toml")
_ID_RE = re.compile(r"[a-z][a-z0-9_]*(\.[a-z0-9_]+)+")


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
    miss: float | None = None
    """The compared figure's distance from the claim in tolerance units (≤ 1: within tolerance), e.g.
    ``err / tol`` for ``err ≤ tol``, ``t / x`` for ``x ≥ t``, the largest of these over several conditions;
    ``inf`` for an exact (symbolic) comparison that fails. When given, ``holds`` must equal ``miss <= 1``."""
    undecided: str | None = None
    """Why this run can give no verdict although it measured (e.g. the judged quantity has not settled at the
    last horizon): a check any of whose seeds is undecided is ``reported`` with this reason, never ``pass`` or
    ``refuted`` (it still needs its positive control)."""
    regime: dict | None = None
    """The conditions the paper states for its claim, measured in this setup: {condition: {"measured": ...,
    "holds": bool}}. A claim that does not hold here while one of them fails is not refuted: it is a finding in
    this regime (the registry makes the run ``undecided``, naming the condition)."""
    readings: dict | None = None
    """Other readings of the claim (another quantifier the paper's words allow), each its own verdict line:
    {reading: {"quantifier", "holds", "measured"}}, reported beside the status (which judges the stated one)."""


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
    reports: bool | Callable[[], bool] = False
    erratum: str | None = None
    figures: tuple = ()
    positive_control: str | None = None
    seeds: int | None = None
    prepare: Callable[[Context], list] | None = None
    cost: float = 1.0
    shares: str | None = None
    reads: str | None = None

    def preparations(self, ctx: Context) -> list:
        """``prepare(ctx)``: the cached computations (:class:`verify.parallel.Prep`) a parallel run does first."""
        return list(self.prepare(ctx)) if self.prepare is not None else []

    def n_seeds(self, quick: bool) -> int:
        """How many seeds a run uses: 1 in quick mode, else ``seeds`` (default 3 for sim checks, 1 otherwise)."""
        if quick:
            return 1
        return self.seeds if self.seeds is not None else (3 if self.kind == "sim" else 1)


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
    miss: float | None = None
    control_miss: float | None = None
    positive_control: str | None = None
    positive_control_result: str | None = None
    positive_measured: Any = None
    positive_miss: float | None = None
    seed_verdicts: list = dataclasses.field(default_factory=list)
    seconds: float = 0.0
    erratum: str | None = None
    finding: str | None = None
    details: dict = dataclasses.field(default_factory=dict)
    artifacts: list = dataclasses.field(default_factory=list)
    figures: tuple = ()
    error: str | None = None
    missing_dependency: str | None = None  # skipped: what is not installed, e.g. "scikit-image (module skimage)"
    install: str | None = None  # skipped: the command that installs it (e.g. "pip install 'theorylab[real]'")
    shares: str | None = None  # the id whose computation this check's judged data also are (one piece of evidence)
    reads: str | None = None  # the shared runs this check's claim is judged on (other checks read them too)
    readings: dict | None = None
    """Other readings of the claim, each a verdict line (the first seed's :attr:`Result.readings`)."""
    regime: dict | None = None
    """The paper's stated conditions measured here (the first seed's :attr:`Result.regime`)."""

    @property
    def seeds_summary(self) -> str:
        """``"3/3"``: for how many of the seeds the claim held ("" for a single seed)."""
        if len(self.seed_verdicts) <= 1:
            return ""
        return f"{sum(v['holds'] for v in self.seed_verdicts)}/{len(self.seed_verdicts)}"

    def to_json(self) -> dict:
        d = dataclasses.asdict(self)
        d["negative_control_description"] = d.pop("negative_control")
        d["negative_control"] = d.pop("negative_control_result")
        d["positive_control_description"] = d.pop("positive_control")
        d["positive_control"] = d.pop("positive_control_result")
        d["seeds"] = self.seeds_summary
        ran = self.status not in ("missing", "skipped")
        d["control_class"] = miss_class(self.control_miss, self.kind) if ran else None
        return to_jsonable(d)


_CHECKS: dict[str, Check] = {}


_CLAIMS: dict[str, dict] = {}  # catalog entries declared outside the package (plugins)


def builtin_catalog() -> dict[str, dict]:
    """The papers' claim ids: verify/catalog.toml, the list of the papers' claims (tools/gen_catalog.py
    regenerates it from the claims document kept with the project's design notes, outside this repository)."""
    with open(CATALOG_PATH, "rb") as fh:
        data = tomllib.load(fh)
    return {c["id"]: c for c in data["claim"]}


def load_catalog() -> dict[str, dict]:
    """Every claim id: the built-in catalog, then the entries declared with :func:`register_claim`."""
    return {**builtin_catalog(), **_CLAIMS}


def register_claim(id: str, paper: str, kind: str, claim: str) -> dict:
    """Declare a catalog entry outside the package (a researcher's plugin), before its ``@check``.

    ``id`` is ``prefix.name`` (lower case, digits, ``_``), not one of the built-in ids; ``paper`` a short
    name (e.g. ``"MY"``); ``kind`` one of :data:`KINDS`; ``claim`` the statement in one line. Declaring the
    same entry again is harmless; a different entry under a taken id is an error. A module may instead
    hold a dict ``CLAIMS = {id: {"paper": ..., "kind": ..., "claim": ...}}``: :func:`check` registers it.
    """
    if not isinstance(id, str) or not _ID_RE.fullmatch(id):
        raise ValueError(f"claim id {id!r} must look like 'prefix.name' (lower case letters, digits, '_')")
    for name, v in (("paper", paper), ("claim", claim)):
        if not isinstance(v, str) or not v.strip():
            raise ValueError(f"claim {id}: {name} must be a non-empty string, got {v!r}")
    if kind not in KINDS:
        raise ValueError(f"claim {id}: kind {kind!r} is not one of {KINDS}")
    entry = {"id": id, "paper": paper, "kind": kind, "claim": claim}
    if id in builtin_catalog():
        raise ValueError(f"claim {id!r} is a built-in catalog id; choose another prefix")
    if id in _CLAIMS and _CLAIMS[id] != entry:
        raise ValueError(f"claim {id!r} is already declared differently: {_CLAIMS[id]}")
    _CLAIMS[id] = entry
    return entry


def check(
    id: str,
    *,
    equation: str,
    kind: str,
    tolerance: Any,
    tolerance_reason: str,
    negative_control: str,
    statement: str | None = None,
    reports: bool | Callable[[], bool] = False,
    erratum: str | None = None,
    figures: tuple | list = (),
    positive_control: str | None = None,
    seeds: int | None = None,
    prepare: Callable[[Context], list] | None = None,
    cost: float | None = None,
    shares: str | None = None,
    reads: str | None = None,
):
    """Register ``compare(ctx, planted) -> Result`` as the check for catalog id ``id``.

    The paper and the statement default to the catalog's. ``negative_control`` says in one line which
    realistic bug the planted wrong claim stands for. ``positive_control`` (one line: the data or model
    on which the claim holds by construction) requires ``compare(ctx, planted, positive=False)``.
    ``seeds`` overrides how many seeds a full run uses (see the module doc). ``reports`` may be a callable
    (no arguments, read at run time), e.g. "only a demonstration unless a data set is configured".
    ``prepare(ctx)`` lists the cached computations the check reads (glyph networks, grid points), which a run
    with ``--jobs N`` computes ahead of it in parallel (:mod:`verify.parallel`); ``cost`` is the check's seconds
    in a full run once those are done (2-core machine), used only to start the longest checks first (default 1).
    ``shares``: the id of a check whose computation this one's judged data are too (e.g. the same logits' second
    moment): the two are one piece of evidence, and the report counts it once. ``reads``: runs several checks judge
    their own claims on (one training sweep): the report lists the verdicts that rest on the same runs."""
    if kind not in KINDS:
        raise ValueError(f"check {id}: kind {kind!r} is not one of {KINDS}")
    if seeds is not None and (not isinstance(seeds, int) or seeds < 1):
        raise ValueError(f"check {id}: seeds must be a positive int, got {seeds!r}")
    if prepare is not None and not callable(prepare):
        raise ValueError(f"check {id}: prepare must be a function of the Context, got {prepare!r}")
    if cost is not None and (isinstance(cost, bool) or not isinstance(cost, (int, float)) or not cost >= 0):
        raise ValueError(f"check {id}: cost must be a number of seconds ≥ 0, got {cost!r}")

    def deco(fn: Callable[[Context, bool], Result]):
        if positive_control and "positive" not in inspect.signature(fn).parameters:
            raise ValueError(f"check {id!r} declares a positive control, so its compare function must "
                             "take a `positive` keyword argument")
        module = getattr(fn, "__module__", None) or "?"
        if id in builtin_catalog() and not module.startswith("verify.checks."):
            raise ValueError(f"{module}: check {id!r} is a built-in id and cannot be replaced by a plugin "
                             "(the built-in check always loads); give it your own prefix and declare it with "
                             "register_claim()")
        claims = getattr(fn, "__globals__", {}).get("CLAIMS")
        if isinstance(claims, dict):  # catalog entries declared next to the checks (a plugin module)
            for cid, entry in claims.items():
                register_claim(cid, **entry)
        catalog = load_catalog()
        if id not in catalog:
            raise ValueError(f"check {id!r} is not in the catalog {CATALOG_PATH.name} nor declared with "
                             "register_claim() or a CLAIMS dict in its module")
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
            positive_control=positive_control,
            seeds=seeds,
            prepare=prepare,
            cost=1.0 if cost is None else float(cost),
            shares=shares,
            reads=reads,
        )
        return fn

    return deco


IMPORT_ERRORS: dict[str, str] = {}


def discover() -> dict[str, Check]:
    """Import every module of ``verify.checks`` and of its sub-packages (each registers its checks; names starting
    with ``_`` are helpers and are skipped) and return the registry.

    A module that fails to import does not hide the others: its error is kept in :data:`IMPORT_ERRORS` (its name
    under ``verify.checks``, e.g. ``nd.covlasso`` -> traceback) and ``theorylab verify`` reports it and exits 1.
    """
    import verify.checks as pkg

    def walk(path, prefix: str) -> None:
        for mod in pkgutil.iter_modules(path):
            if mod.name.startswith("_"):
                continue
            name = prefix + mod.name
            try:
                module = importlib.import_module(f"verify.checks.{name}")
                IMPORT_ERRORS.pop(name, None)
            except Exception:
                IMPORT_ERRORS[name] = traceback.format_exc()
                continue
            if mod.ispkg:
                walk(module.__path__, name + ".")

    walk(pkg.__path__, "")
    return dict(_CHECKS)


def run_check(chk: Check, ctx: Context) -> Outcome:
    """Run the claim (once per seed) and its controls, and decide the status (rules in the module doc)."""
    out = Outcome(
        id=chk.id, paper=chk.paper, equation=chk.equation, kind=chk.kind, statement=chk.statement,
        status="fail", tolerance=chk.tolerance, tolerance_reason=chk.tolerance_reason,
        negative_control=chk.negative_control, erratum=chk.erratum, figures=chk.figures,
        positive_control=chk.positive_control, shares=chk.shares, reads=chk.reads,
    )
    t0 = time.perf_counter()
    try:
        claims = []
        _seeds_reach_the_streams(ctx, chk.n_seeds(ctx.quick))
        for s in range(chk.n_seeds(ctx.quick)):
            c = chk.compare(dataclasses.replace(ctx, seed=ctx.seed + s), False)
            _validate_result(c, chk.id)
            claims.append(outside_regime(c))
        control = chk.compare(ctx, True)
        _validate_result(control, chk.id)
        positive = None
        if chk.positive_control:
            positive = chk.compare(ctx, False, positive=True)
            _validate_result(positive, chk.id)
    except Exception as exc:  # a check that raises is broken (fail, with the traceback), unless what it lacks is
        out.seconds = time.perf_counter() - t0  # an optional package that is not installed (skipped)
        missing = optional.find_missing(exc)
        if missing is not None:
            out.status, out.missing_dependency, out.install = "skipped", missing.what, missing.install
            return out
        out.error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        out.details = {"traceback": traceback.format_exc()}
        out.seconds = time.perf_counter() - t0
        return out
    out.seconds = time.perf_counter() - t0
    claim = claims[0]
    out.measured, out.expected, out.miss = claim.measured, claim.expected, claim.miss
    out.details, out.finding, out.artifacts = claim.details, claim.finding, claim.artifacts
    out.readings, out.regime = claim.readings, claim.regime
    out.seed_verdicts = [{"seed": ctx.seed + s, "holds": bool(c.holds), "measured": c.measured, "miss": c.miss}
                         for s, c in enumerate(claims)]
    out.control_measured, out.control_miss = control.measured, control.miss
    out.negative_control_result = "PASSED" if control.holds else "failed as it should"
    if positive is not None:
        out.positive_measured, out.positive_miss = positive.measured, positive.miss
        out.positive_control_result = "held as it should" if positive.holds else "FAILED"
    n_held = sum(bool(c.holds) for c in claims)
    if control.holds:
        out.status = "fail"
        out.error = "negative control passed: the comparison cannot tell the claim from a wrong one"
        return out
    if positive is not None and not positive.holds:
        out.status = "fail"
        out.error = "positive control failed: the comparison does not say 'holds' where the claim holds by construction"
        return out
    undecided = [f"seed {ctx.seed + s}: {c.undecided}" for s, c in enumerate(claims) if c.undecided]
    if chk.reports() if callable(chk.reports) else chk.reports:
        out.status = "reported"
    elif undecided:
        out.status = "reported"
        note = "No verdict: " + "; ".join(undecided) + "."
        out.finding = f"{note} {out.finding}" if out.finding else note
    elif n_held == len(claims):
        out.status = "pass"
        return out
    elif n_held == 0:
        out.status = "refuted"
    else:
        out.status = "reported"
        note = f"The claim held for {n_held} of {len(claims)} seeds (no verdict: it depends on the seed)."
        out.finding = f"{note} {out.finding}" if out.finding else note
    if positive is None:
        out.error = (f"{out.status} without a positive control: nothing shows that the comparison can say 'holds'")
        out.status = "fail"
    elif out.status == "refuted" and not any(c.finding for c in claims):
        # a refutation says what was measured and what holds instead; one that cannot is a broken comparison (a
        # library bug behind a positive control that never runs the library reads exactly like this)
        out.error = "refuted without a finding: the check does not say what holds instead"
        out.status = "fail"
    return out


def _seeds_reach_the_streams(ctx: "Context", n_seeds: int) -> None:
    """A check's seeds are independent replications only if each seed gives other random streams: a ValueError (the
    check fails) when two seeds' ``rng``/``torch_generator`` seeds coincide, e.g. a seed dropped from their hash, which
    would count one computation as ``n_seeds`` agreeing ones."""
    probes = [dataclasses.replace(ctx, seed=ctx.seed + s)._seed_for("seed probe") for s in range(n_seeds)]
    if len(set(probes)) < n_seeds:
        raise ValueError(f"seeds {ctx.seed}..{ctx.seed + n_seeds - 1} give the same random streams (Context._seed_for "
                         f"ignores the seed): the replications would be one computation counted {n_seeds} times")


def _validate_result(r: Any, cid: str) -> None:
    if not isinstance(r, Result):
        raise TypeError(f"check {cid} returned {type(r).__name__}, not Result")
    if not isinstance(r.holds, (bool, np.bool_)):
        raise TypeError(f"check {cid}: Result.holds must be a bool, got {r.holds!r}")
    if r.regime is not None and not (isinstance(r.regime, dict) and all(
            isinstance(v, dict) and isinstance(v.get("holds"), (bool, np.bool_)) for v in r.regime.values())):
        raise TypeError(f"check {cid}: Result.regime must map each condition to {{'measured': ..., 'holds': bool}}")
    if r.miss is not None:
        if isinstance(r.miss, (bool, np.bool_)) or not isinstance(r.miss, (int, float, np.integer, np.floating)):
            raise TypeError(f"check {cid}: Result.miss must be a number, got {r.miss!r}")
        if math.isnan(float(r.miss)) or float(r.miss) < 0:
            raise ValueError(f"check {cid}: Result.miss must be >= 0 and not NaN, got {r.miss!r}")
        if bool(r.holds) != (float(r.miss) <= 1.0):
            raise ValueError(f"check {cid}: Result.holds={bool(r.holds)} contradicts miss={float(r.miss):.4g} "
                             "(miss <= 1 means within tolerance)")


def summarize(outcomes: list[Outcome]) -> dict[str, int]:
    return {s: sum(o.status == s for o in outcomes) for s in STATUSES}


def dumps(obj: Any) -> str:
    return json.dumps(to_jsonable(obj), indent=2)
