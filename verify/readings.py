"""How each paper states each catalog claim: verify/readings.toml, one ``[[reading]]`` per catalog id.

A reading records the paper's own sentence or equation that a check judges (``quote``, at most
:data:`MAX_QUOTE` characters, with ``where`` it stands), the ``quantifier`` the paper's words give it (one of
:data:`QUANTIFIERS`, with ``quantifier_why``: the words that fix it), the ``conditions`` the paper itself states
for the claim (each a short string saying where it is stated), and optionally ``other_readings``: other
quantifiers the text supports, each ``{quantifier, why}``. A check may only be ``refuted`` when the conditions
the paper states hold in its setup. The report shows the reading in each check's section and in report.json.

Plugins' claims have no reading (:func:`reading_for` returns None); the report then says so.
"""
from __future__ import annotations

import functools
import tomllib
from pathlib import Path

READINGS_PATH = Path(__file__).with_name("readings.toml")

QUANTIFIERS = ("for all", "typical", "there exists", "on average", "asymptotic", "conjecture")
"""``for all``: a theorem, an identity, 'for all x / every'; ``typical``: what most cases or a randomly chosen
case show; ``there exists``: illustrations the paper picked ('we can find', 'for the cases in Fig. 2');
``on average``: an expectation, a mean over runs or a grid; ``asymptotic``: a limit (d → ∞, L → ∞, o(1));
``conjecture``: the paper states it as open."""

MAX_QUOTE = 400

_FIELDS = {"id": str, "where": str, "quote": str, "quantifier": str, "quantifier_why": str, "conditions": list}
_OPTIONAL = {"other_readings": list}


class ReadingError(ValueError):
    """readings.toml (or a table given to :func:`validate`) is malformed; the message names the entry."""


def _text(value, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ReadingError(f"{what} must be a non-empty string, got {value!r}")
    return value


def _quantifier(value, what: str) -> str:
    _text(value, what)
    if value not in QUANTIFIERS:
        raise ReadingError(f"{what} {value!r} is not one of: " + ", ".join(repr(q) for q in QUANTIFIERS))
    return value


def _entry(raw, n: int, source: str) -> dict:
    """One ``[[reading]]`` table checked field by field; the error names the entry by number and id."""
    if not isinstance(raw, dict):
        raise ReadingError(f"{source}: reading #{n} is not a table")
    rid = raw.get("id")
    if rid is None:
        raise ReadingError(f"{source}: reading #{n} has no 'id' (every [[reading]] names its catalog id)")
    where = f"{source}: reading #{n} ({rid!r})"
    _text(rid, f"{where}: 'id'")
    missing = [k for k in _FIELDS if k not in raw]
    if missing:
        raise ReadingError(f"{where}: missing field(s) " + ", ".join(repr(k) for k in missing))
    unknown = sorted(set(raw) - set(_FIELDS) - set(_OPTIONAL))
    if unknown:
        raise ReadingError(f"{where}: unknown field(s) " + ", ".join(repr(k) for k in unknown)
                           + "; allowed: " + ", ".join([*_FIELDS, *_OPTIONAL]))
    for key in ("where", "quote", "quantifier_why"):
        _text(raw[key], f"{where}: {key!r}")
    if len(raw["quote"]) > MAX_QUOTE:
        raise ReadingError(f"{where}: 'quote' is {len(raw['quote'])} characters, at most {MAX_QUOTE}")
    _quantifier(raw["quantifier"], f"{where}: 'quantifier'")
    conditions = raw["conditions"]
    if not isinstance(conditions, list):
        raise ReadingError(f"{where}: 'conditions' must be a list of strings (empty only if the paper states none)")
    for i, c in enumerate(conditions):
        _text(c, f"{where}: conditions[{i}]")
    others = raw.get("other_readings", [])
    if not isinstance(others, list):
        raise ReadingError(f"{where}: 'other_readings' must be a list of {{quantifier, why}} tables")
    for i, o in enumerate(others):
        if not isinstance(o, dict) or set(o) != {"quantifier", "why"}:
            raise ReadingError(f"{where}: other_readings[{i}] must be a table with exactly 'quantifier' and 'why', "
                               f"got {o!r}")
        _quantifier(o["quantifier"], f"{where}: other_readings[{i}].quantifier")
        _text(o["why"], f"{where}: other_readings[{i}].why")
    return {"id": rid, "where": raw["where"], "quote": raw["quote"], "quantifier": raw["quantifier"],
            "quantifier_why": raw["quantifier_why"], "conditions": list(conditions),
            "other_readings": [dict(o) for o in others]}


def validate(data, source: str = "readings.toml", known_ids=None) -> dict[str, dict]:
    """The readings of ``data`` (readings.toml's parsed form, ``{"reading": [...]}``) as ``{id: reading}``.

    Raises :class:`ReadingError` naming the entry for a missing or unknown field, an empty string, a quote over
    :data:`MAX_QUOTE` characters, a quantifier outside :data:`QUANTIFIERS`, a duplicate id, or (with
    ``known_ids``) an id that is not in the catalog."""
    if not isinstance(data, dict) or not isinstance(data.get("reading"), list):
        raise ReadingError(f"{source}: expected [[reading]] tables")
    extra = sorted(set(data) - {"reading"})
    if extra:
        raise ReadingError(f"{source}: unknown top-level key(s) " + ", ".join(repr(k) for k in extra))
    out: dict[str, dict] = {}
    for n, raw in enumerate(data["reading"], 1):
        r = _entry(raw, n, source)
        if r["id"] in out:
            raise ReadingError(f"{source}: reading #{n}: id {r['id']!r} appears twice")
        if known_ids is not None and r["id"] not in known_ids:
            raise ReadingError(f"{source}: reading #{n}: {r['id']!r} is not a catalog id (verify/catalog.toml)")
        out[r["id"]] = r
    return out


def load_readings(path=None, known_ids=None) -> dict[str, dict]:
    """``{id: reading}`` from ``path`` (default: the package's readings.toml, whose ids must be catalog ids).

    Each reading is a dict with ``id``, ``where``, ``quote``, ``quantifier``, ``quantifier_why``, ``conditions``
    (list of str) and ``other_readings`` (list of ``{quantifier, why}``, possibly empty). A malformed file
    raises :class:`ReadingError` (a ``ValueError``) naming the entry."""
    if path is None and known_ids is None:
        return {k: _copy(v) for k, v in _default().items()}
    path = Path(path) if path is not None else READINGS_PATH
    with open(path, "rb") as fh:
        try:
            data = tomllib.load(fh)
        except tomllib.TOMLDecodeError as e:
            raise ReadingError(f"{path.name}: not valid TOML: {e}") from None
    return validate(data, path.name, known_ids)


@functools.lru_cache(maxsize=1)
def _default() -> dict[str, dict]:
    from verify.registry import builtin_catalog

    return load_readings(READINGS_PATH, known_ids=set(builtin_catalog()))


def _copy(r: dict) -> dict:
    return dict(r, conditions=list(r["conditions"]), other_readings=[dict(o) for o in r["other_readings"]])


def reading_for(check_id: str) -> dict | None:
    """The package's reading of ``check_id``, or None (a plugin's claim, or an id without a reading yet)."""
    r = _default().get(check_id)
    return _copy(r) if r is not None else None


def reading_json(check_id: str) -> dict | None:
    """report.json's ``reading`` of a check: {where, quote, quantifier, quantifier_why, conditions,
    other_readings}, or None when no reading is recorded."""
    r = reading_for(check_id)
    if r is None:
        return None
    return {k: r[k] for k in ("where", "quote", "quantifier", "quantifier_why", "conditions", "other_readings")}
