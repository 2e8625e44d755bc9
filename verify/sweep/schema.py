"""What a sweep experiment declares: its parameters (type, range, default), its result fields, its version.

A point's parameters are checked against the declaration before anything runs or is written, and the value
recorded is the value the experiment runs with: ``n = 4.5`` for an integer parameter is a ValueError naming
``n``, ``sort = "false"`` for a boolean is a ValueError. An integral float for an integer parameter (``n = 4.0``) is recorded
as the integer it runs with, an integer for a float parameter as the float.
"""
from __future__ import annotations

import dataclasses
import fnmatch
import math
import numbers
from typing import Any, Callable

# a parameter every experiment accepts: the replicate index of a ``seeds``/``replicates`` sweep. It only
# enters the point's derived seed (so replicates differ), never the experiment function.
REPLICATE = "replicate"
KINDS = ("int", "float", "bool", "str")


@dataclasses.dataclass(frozen=True)
class Param:
    """One parameter: ``kind`` (int | float | bool | str), ``default``, inclusive bounds ``lo``/``hi`` for
    numbers, ``choices`` for strings."""

    kind: str
    default: Any
    lo: float | None = None
    hi: float | None = None
    choices: tuple | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"Param kind must be one of {KINDS}, got {self.kind!r}")

    def check(self, experiment: str, name: str, v):
        """``v`` as the experiment will run it, or ValueError naming the experiment and the parameter."""
        where = f"experiment {experiment!r}: parameter {name!r}"
        if self.kind == "bool":
            if not isinstance(v, bool):
                raise ValueError(f"{where} must be true or false, got {v!r} ({type(v).__name__})")
            return v
        if self.kind == "str":
            if not isinstance(v, str):
                raise ValueError(f"{where} must be a string, got {v!r} ({type(v).__name__})")
            if self.choices is not None and v not in self.choices:
                raise ValueError(f"{where} must be one of {', '.join(map(repr, self.choices))}; got {v!r}")
            return v
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise ValueError(f"{where} must be {'an integer' if self.kind == 'int' else 'a number'}, "
                             f"got {v!r} ({type(v).__name__})")
        if not math.isfinite(v):
            raise ValueError(f"{where} must be finite, got {v!r}")
        if self.kind == "int":
            if not float(v).is_integer():
                raise ValueError(f"{where} must be an integer, got {v!r}")
            v = int(v)
        else:
            v = float(v)
        if self.lo is not None and v < self.lo:
            raise ValueError(f"{where} must be >= {self.lo:g}, got {v!r}")
        if self.hi is not None and v > self.hi:
            raise ValueError(f"{where} must be <= {self.hi:g}, got {v!r}")
        return v

    def describe(self) -> str:
        text = self.kind
        if self.choices is not None:
            text += " in {" + ", ".join(self.choices) + "}"
        if self.lo is not None and self.hi is not None:
            text += f" in [{self.lo:g}, {self.hi:g}]"
        elif self.lo is not None:
            text += f" >= {self.lo:g}"
        elif self.hi is not None:
            text += f" <= {self.hi:g}"
        return f"{text} (default {self.default!r})"


def suggest(name, choices) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices`` to a misspelled ``name``, else ``''``."""
    import difflib

    close = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_replicate(experiment: str, v):
    if isinstance(v, bool) or not isinstance(v, (numbers.Integral, str)):
        raise ValueError(f"experiment {experiment!r}: {REPLICATE!r} (a seeds label) must be an integer or a "
                         f"string, got {v!r}")
    return v if isinstance(v, str) else int(v)


@dataclasses.dataclass(frozen=True)
class Experiment:
    """A named experiment: ``run(params, seed) -> dict`` of JSON-able numbers/lists/strings.

    Parameters are declared either as ``params`` (name → :class:`Param`) or, where the implementation
    owns its config, by ``validate(given) -> complete config`` (raises ValueError) and ``names(point) -> list``.
    ``required``: top-level keys every result has (a point file without them is corrupt). ``results``:
    the scalar result fields a plot may name (fnmatch patterns, dotted for nested dicts:
    ``summary.*``). ``plot``: default summary plot axes ``x``, ``y`` and optional ``hue``. ``seed_param``:
    the implementation's own seed parameter, not filled in by default, so a point without it runs with its
    derived seed and a point that sets it (a caller owning its seeds) keeps it. ``estimate(params) -> {"bytes",
    "flops" (optional)}``: the memory (and work) of one point from its parameters alone, checked before any point
    runs (:mod:`verify.sweep.budget`; None: not estimated). ``summary``: the headline result fields of
    summary.md (fnmatch patterns, dotted; empty: every scalar field of ``results``).
    """

    name: str
    run: Callable[[dict, int], dict]
    description: str
    params: dict | None = None
    validate: Callable[[dict], dict] | None = None
    names: Callable[[], list] | None = None
    required: tuple = ()
    results: tuple = ()
    version: str = "1"
    plot: dict = dataclasses.field(default_factory=dict)
    seed_param: str | None = None
    estimate: Callable[[dict], dict] | None = None
    summary: tuple = ()

    def param_names(self, point: dict | None = None) -> list[str]:
        """The parameter names (``names(point)``: they may depend on the point, e.g. on its data model)."""
        return list(self.params) if self.params is not None else list(self.names(point or {}))

    def canonical(self, point: dict) -> dict:
        """The point as it runs: every value checked and normalised, the defaults filled in (so ``n=100``
        given or defaulted is the same point). ValueError naming an unknown or bad parameter."""
        if not isinstance(point, dict):
            raise ValueError(f"{self.name}: a point must be a dict of parameters, got {type(point).__name__}")
        given = {k: v for k, v in point.items() if k != REPLICATE}
        names = self.param_names(given)
        unknown = [k for k in given if k not in names]
        if unknown:
            raise ValueError(f"experiment {self.name!r} has no parameter {unknown[0]!r}{suggest(unknown[0], names)}; "
                             f"its parameters are: {', '.join(sorted(names))} (and {REPLICATE!r})")
        if self.params is not None:
            out = {k: p.default for k, p in self.params.items() if k != self.seed_param}
            out.update({k: self.params[k].check(self.name, k, v) for k, v in given.items()})
        else:
            try:
                out = self.validate(given)
            except ValueError as exc:
                raise ValueError(f"experiment {self.name!r}: {exc}") from None
            if self.seed_param is not None and self.seed_param not in given:
                out.pop(self.seed_param, None)
        if REPLICATE in point:
            out[REPLICATE] = check_replicate(self.name, point[REPLICATE])
        return out

    def is_result_field(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, pat) for pat in self.results)

    def result_problem(self, result) -> str | None:
        """Why ``result`` is not a result of this experiment (None if it is one)."""
        if not isinstance(result, dict):
            return f"result is {type(result).__name__}, not an object"
        missing = [k for k in self.required if k not in result]
        return f"result lacks field(s) {missing}" if missing else None
