"""Which data model a config names: the built-in ones, those registered by plugins, and ``"pkg.mod:Factory"``.

A config's ``model`` key (``sims.multiview.experiment.DEFAULTS``) is one of

* a built-in name (:data:`BUILTIN`: ``hierarchical``, the paper's model of FG Def 4.1–4.4, and the sandbox
  models ``shared_subclass``, ``three_level``, ``label_noise``);
* a name registered with :func:`register_model` (by a plugin module: ``theorylab ... --plugins MODULE`` or a
  ``theorylab.checks`` entry point imports it);
* ``"pkg.mod:Factory"``: the factory ``Factory`` of the importable module ``pkg.mod`` (imported here; the
  current folder is searched too, as for ``--plugins``).

A *factory* is a class or a function returning an object that satisfies
:class:`sims.multiview.data.DataModel`. It is called as ``factory(d, P, s, k, **kw)`` (:func:`build`) where
``kw`` holds

* the data keys of the config that its signature accepts (:data:`DATA_KEYS`: ``iota``, ``iota_lower``,
  ``iota_upper``, ``noise_norm``, ``hard_noise_norm``, ``dictionary``, ``dictionary_seed`` = the config's
  ``seed``, ``counts``), all of them when it takes ``**kwargs``; a config that sets one of them to a value other
  than its default for a factory that does not take it is refused (the run would silently ignore it);
* each further keyword parameter *with a default* of its signature: a config key of that name (``shared``,
  ``k2``, ``flip`` are those of the built-in sandbox models); a name that is not a key of ``DEFAULTS`` becomes a
  new config key of this model (its default the factory's default, the type the default's type), so a sweep can
  vary it like any other key.

A plugin may not take a built-in name (refused, naming the plugin), nor register a name twice with two
different factories. Everything here raises ValueError with a one-line message naming what is wrong.
"""
from __future__ import annotations

import dataclasses
import importlib
import inspect
import numbers
import os
import sys

from sims.multiview import data as _data
from sims.multiview.defaults import DEFAULTS

BUILTIN = dict(_data.MODELS)  # name -> class; never replaced
#: config keys passed to a factory that accepts them (the config key ``seed`` as ``dictionary_seed``)
DATA_KEYS = ("iota", "iota_lower", "iota_upper", "noise_norm", "hard_noise_norm", "dictionary", "dictionary_seed",
             "counts")
#: what the trainer reads from a data model (:class:`sims.multiview.data.DataModel`)
PROTOCOL_ATTRS = ("d", "P", "n_coarse", "n_fine", "sigma_zeta", "iota")
PROTOCOL_METHODS = ("sample", "dictionary", "coarse_of_fine", "common_of_coarse", "sub_of_fine")
_POSITIONAL = ("self", "d", "P", "s", "k")


@dataclasses.dataclass(frozen=True)
class ModelEntry:
    """A resolved ``model`` value: its factory, the keyword parameters of its own (name → default), where it
    came from (``"built-in"``, ``"plugin <module>"`` or ``"<pkg.mod:Factory>"``)."""

    name: str
    factory: object
    params: dict
    source: str
    module: str = ""  # the module that registered it (a sweep's workers import it), or the factory's module

    @property
    def builtin(self) -> bool:
        return self.source == "built-in"


_REGISTERED: dict[str, ModelEntry] = {}


def _signature(factory):
    try:
        return inspect.signature(factory)
    except (TypeError, ValueError):
        return None


def own_params(factory) -> dict:
    """The factory's own keyword parameters with defaults (name → default): not d, P, s, k, not :data:`DATA_KEYS`."""
    sig = _signature(factory)
    if sig is None:
        return {}
    out = {}
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name in _POSITIONAL or p.name in DATA_KEYS:
            continue
        if p.default is p.empty:
            if p.kind == p.KEYWORD_ONLY:
                raise ValueError(f"data model factory {_label(factory)}: keyword parameter {p.name!r} needs a "
                                 f"default (it becomes a config key)")
            continue
        if p.default is not None and not isinstance(p.default, (bool, numbers.Real, str)):
            raise ValueError(f"data model factory {_label(factory)}: the default of {p.name!r} must be a number, "
                             f"a string or a bool (it becomes a config key), got {p.default!r}")
        out[p.name] = p.default
    return out


def accepted_data_keys(factory) -> tuple:
    """Which of :data:`DATA_KEYS` the factory takes (all of them with ``**kwargs``)."""
    sig = _signature(factory)
    if sig is None or any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values()):
        return DATA_KEYS
    return tuple(k for k in DATA_KEYS if k in sig.parameters)


def _label(factory) -> str:
    return f"{getattr(factory, '__module__', '?')}.{getattr(factory, '__qualname__', repr(factory))}"


def register_model(name: str, factory, *, params: dict | None = None) -> ModelEntry:
    """Make ``model = name`` in a config build its data model with ``factory`` (module docstring).

    ``params``: the model's own config keys and their defaults, if not its signature's (:func:`own_params`).
    Registering the same factory again is harmless; a built-in name or a name taken by another factory is a
    ValueError naming the plugin (the module that calls this).
    """
    where = sys._getframe(1).f_globals.get("__name__") or getattr(factory, "__module__", "?")  # the plugin
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"plugin {where}: data model name must be an identifier (letters, digits, _), got {name!r}")
    if name in BUILTIN:
        raise ValueError(f"plugin {where}: {name!r} is a built-in data model and cannot be replaced; register "
                         f"yours under another name")
    if not callable(factory):
        raise ValueError(f"plugin {where}: the factory of data model {name!r} is not callable: {factory!r}")
    own = own_params(factory) if params is None else dict(params)
    _check_params(name, own)
    entry = ModelEntry(name, factory, own, f"plugin {where}", where)
    old = _REGISTERED.get(name)
    if old is not None and old.factory is not factory and _label(old.factory) != _label(factory):
        raise ValueError(f"plugin {where}: data model {name!r} is already registered by {old.source} "
                         f"({_label(old.factory)}); choose another name")
    _REGISTERED[name] = entry
    return entry


def unregister_model(name: str) -> None:
    """Forget a registered (plugin) data model; a built-in name is a ValueError."""
    if name in BUILTIN:
        raise ValueError(f"{name!r} is a built-in data model")
    _REGISTERED.pop(name, None)


def _check_params(name, params):
    for key in params:
        if key == "model":
            raise ValueError(f"data model {name!r}: a parameter may not be called 'model' (the config key naming "
                             f"the data model); rename it")


def model_names() -> list[str]:
    """The built-in names, then the registered ones."""
    return list(BUILTIN) + sorted(n for n in _REGISTERED if n not in BUILTIN)


def resolve(spec) -> ModelEntry:
    """The data model a config's ``model`` value names; ValueError listing the known names otherwise."""
    if not isinstance(spec, str):
        raise ValueError(f"config key 'model' must be a string (a model name or 'pkg.mod:Factory'), got {spec!r}")
    if spec in BUILTIN:
        cls = BUILTIN[spec]
        return ModelEntry(spec, cls, own_params(cls), "built-in")
    if spec in _REGISTERED:
        return _REGISTERED[spec]
    if ":" in spec:
        return _import_factory(spec)
    raise ValueError(f"config key 'model': unknown data model {spec!r}; known: {', '.join(model_names())} "
                     f"(or 'pkg.mod:Factory'; a plugin's model needs --plugins MODULE)")


def _import_factory(spec: str) -> ModelEntry:
    mod_name, _, attr = spec.partition(":")
    if not mod_name or not attr:
        raise ValueError(f"config key 'model' = {spec!r}: expected 'pkg.mod:Factory'")
    if os.getcwd() not in sys.path and "" not in sys.path:  # the current folder is searched, as by `python -c`
        sys.path.insert(0, os.getcwd())
    try:
        mod = importlib.import_module(mod_name)
    except ModuleNotFoundError as exc:
        if exc.name and (exc.name == mod_name or mod_name.startswith(exc.name + ".")):
            raise ValueError(f"config key 'model' = {spec!r}: module {mod_name!r} not found (on sys.path: run "
                             f"from its folder or install it)") from None
        raise ValueError(f"config key 'model' = {spec!r}: module {mod_name!r} does not import "
                         f"({type(exc).__name__}: {exc})") from None
    except Exception as exc:
        raise ValueError(f"config key 'model' = {spec!r}: module {mod_name!r} does not import "
                         f"({type(exc).__name__}: {exc})") from None
    obj = mod
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(f"config key 'model' = {spec!r}: module {mod_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ValueError(f"config key 'model' = {spec!r} is not callable (a class or a function building a "
                         f"data model)")
    own = own_params(obj)
    _check_params(spec, own)
    return ModelEntry(spec, obj, own, spec, mod_name)


def missing_protocol(obj) -> list[str]:
    """The attributes and methods of :class:`sims.multiview.data.DataModel` that ``obj`` lacks."""
    miss = [a for a in PROTOCOL_ATTRS if not hasattr(obj, a)]
    miss += [f"{m}()" for m in PROTOCOL_METHODS if not callable(getattr(obj, m, None))]
    return miss


def check_protocol(obj, what: str | None = None) -> None:
    """ValueError naming every missing attribute/method of the DataModel protocol."""
    miss = missing_protocol(obj)
    if miss:
        what = what or type(obj).__name__
        raise ValueError(f"data model {what} does not satisfy the DataModel protocol: it lacks {', '.join(miss)} "
                         f"(docs/datamodel.md)")


def build(cfg: dict, entry: ModelEntry | None = None):
    """The data model of a validated config: ``factory(d, P, s, k, **kw)`` (module docstring)."""
    entry = entry or resolve(cfg["model"])
    values = {k: cfg[k] for k in DATA_KEYS if k != "dictionary_seed"}
    values["dictionary_seed"] = cfg["seed"]
    accepted = accepted_data_keys(entry.factory)
    kw = {k: v for k, v in values.items() if k in accepted}
    for k in DATA_KEYS:
        if k in accepted or k == "dictionary_seed":
            continue
        if cfg[k] != DEFAULTS[k]:
            raise ValueError(f"config sets {k} = {cfg[k]!r} but data model {entry.name!r} does not take {k!r} "
                             f"(its factory's parameters: {list(_signature(entry.factory).parameters)})")
    kw.update({k: cfg[k] for k in entry.params})
    try:
        obj = entry.factory(cfg["d"], cfg["P"], cfg["s"], cfg["k"], **kw)
    except ValueError as exc:
        raise ValueError(f"config: {exc}") from None
    except TypeError as exc:
        if entry.builtin:
            raise
        raise ValueError(f"data model {entry.name!r}: calling its factory as factory(d, P, s, k, **{sorted(kw)}) "
                         f"failed: {exc}") from None
    if not entry.builtin:
        check_protocol(obj, f"{entry.name!r} ({type(obj).__name__})")
        for key in ("d", "P", "k"):  # the config sizes the network: the model must draw what it says
            have = getattr(obj, key, None)
            if have is not None and have != cfg[key]:
                raise ValueError(f"data model {entry.name!r} was built with {key} = {cfg[key]} but has "
                                 f"{key} = {have!r}; its factory must keep the d, P, s, k it is given")
        try:
            check_data_model(obj)
        except ValueError as exc:
            raise ValueError(f"model {entry.name!r}: {exc}") from None
    return obj


def check_data_model(model, *, device="cpu", dtype=None, seed: int = 0) -> None:
    """Check that ``model`` keeps every rule of docs/datamodel.md on small samples; ValueError naming the first
    rule broken. Run for every data model a config builds that is not built in; call it on yours while writing it.

    It checks the protocol (:func:`check_protocol`), the types and ranges of ``d``, ``P``, ``n_coarse``,
    ``n_fine``, ``sigma_zeta``, ``iota``, the index maps (shapes, integer dtype, ranges), the dictionary (shape,
    dtype, device), and ``sample`` for easy/hard and test/train draws of 2·n_fine samples: a
    :class:`sims.multiview.data.Batch`, shapes (n, P, d) / (n,) / (n,) / (n, P), X in the requested dtype on the
    requested device, integer labels in range, exactly n/n_fine test samples per fine class with
    y_coarse = coarse_of_fine()[y_fine], finite X, common-feature patches (kind COMMON) in easy samples and none
    in hard ones, and the same draw again from an equally seeded generator (all randomness from ``generator``).
    """
    import torch

    from sims.multiview.data import COMMON, Batch

    name = type(model).__name__
    check_protocol(model)
    dtype = dtype or torch.float32
    dev = torch.device(device)

    def fail(msg):
        raise ValueError(f"data model {name}: {msg} (docs/datamodel.md)")

    for a in ("d", "P", "n_coarse", "n_fine"):
        v = getattr(model, a)
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
            fail(f"{a} must be a positive int, got {v!r}")
    if model.n_coarse < 2 or model.n_fine < model.n_coarse:
        fail(f"need n_coarse >= 2 and n_fine >= n_coarse, got n_coarse = {model.n_coarse}, n_fine = {model.n_fine}")
    if isinstance(model.sigma_zeta, bool) or not isinstance(model.sigma_zeta, numbers.Real) or not model.sigma_zeta > 0:
        fail(f"sigma_zeta must be a number > 0, got {model.sigma_zeta!r}")
    if isinstance(model.iota, bool) or not isinstance(model.iota, numbers.Real) or not 0 <= model.iota < 1:
        fail(f"iota must be a number in [0, 1), got {model.iota!r}")
    maps = {"coarse_of_fine": (model.n_fine, model.n_coarse), "common_of_coarse": (model.n_coarse, model.d),
            "sub_of_fine": (model.n_fine, model.d)}
    got = {}
    for meth, (length, hi) in maps.items():
        t = getattr(model, meth)()
        if not isinstance(t, torch.Tensor) or t.shape != (length,) or t.dtype != torch.long or t.device.type != "cpu":
            fail(f"{meth}() must return a torch.long tensor of shape ({length},) on the CPU, got "
                 f"{type(t).__name__} {tuple(getattr(t, 'shape', ()))} {getattr(t, 'dtype', '')} "
                 f"{getattr(t, 'device', '')}")
        if length and (int(t.min()) < 0 or int(t.max()) >= hi):
            fail(f"{meth}() values must lie in [0, {hi}), got {t.tolist()}")
        got[meth] = t
    if sorted(set(got["coarse_of_fine"].tolist())) != list(range(model.n_coarse)):
        fail(f"coarse_of_fine() must give every superclass at least one fine class, got {got['coarse_of_fine'].tolist()}")
    V = model.dictionary(dev, dtype)
    if not isinstance(V, torch.Tensor) or V.shape != (model.d, model.d) or V.dtype != dtype or V.device.type != dev.type:
        fail(f"dictionary({dev}, {dtype}) must return a ({model.d}, {model.d}) tensor of that dtype on that device, "
             f"got {type(V).__name__} {tuple(getattr(V, 'shape', ()))} {getattr(V, 'dtype', '')}")
    n = 2 * model.n_fine
    for hard in (False, True):
        for train in (False, True):
            what = f"sample(n={n}, hard={hard}, train={train})"
            b = model.sample(n, hard=hard, train=train, generator=torch.Generator(dev).manual_seed(seed),
                             device=dev, dtype=dtype)
            if not isinstance(b, Batch):
                fail(f"{what} must return a sims.multiview.data.Batch, got {type(b).__name__}")
            shapes = {"X": (n, model.P, model.d), "y_coarse": (n,), "y_fine": (n,), "kinds": (n, model.P)}
            for f, shape in shapes.items():
                t = getattr(b, f)
                if not isinstance(t, torch.Tensor) or tuple(t.shape) != shape or t.device.type != dev.type:
                    fail(f"{what}.{f} must be a tensor of shape {shape} on {dev}, got {type(t).__name__} "
                         f"{tuple(getattr(t, 'shape', ()))} on {getattr(t, 'device', '?')}")
            if b.X.dtype != dtype:
                fail(f"{what}.X must have the requested dtype {dtype}, got {b.X.dtype}")
            for f, hi in (("y_coarse", model.n_coarse), ("y_fine", model.n_fine)):
                t = getattr(b, f)
                if t.dtype != torch.long or int(t.min()) < 0 or int(t.max()) >= hi:
                    fail(f"{what}.{f} must be torch.long in [0, {hi}), got {t.dtype} {t.unique().tolist()}")
            if b.kinds.dtype.is_floating_point:
                fail(f"{what}.kinds must be an integer tensor of patch kinds, got {b.kinds.dtype}")
            if not bool(torch.isfinite(b.X).all()):
                fail(f"{what}.X holds non-finite values (NaN or inf)")
            if not train:
                counts = torch.bincount(b.y_fine.cpu(), minlength=model.n_fine)
                if not bool((counts == n // model.n_fine).all()):
                    fail(f"{what}: a test batch must hold exactly n/n_fine = {n // model.n_fine} samples per fine "
                         f"class (FG B.1 item 9), got {counts.tolist()}")
                if not torch.equal(b.y_coarse, got["coarse_of_fine"].to(dev)[b.y_fine]):
                    fail(f"{what}: y_coarse must be coarse_of_fine()[y_fine] (clean test labels)")
            has_common = bool((b.kinds == COMMON).any())
            if hard and has_common:
                fail(f"{what}: hard samples must carry no common-feature patch (kind COMMON; FG B.1 item 6)")
            if not hard and not has_common:
                fail(f"{what}: easy samples must carry common-feature patches (kind COMMON; FG B.1 item 5)")
            again = model.sample(n, hard=hard, train=train, generator=torch.Generator(dev).manual_seed(seed),
                                 device=dev, dtype=dtype)
            if not (torch.equal(b.X, again.X) and torch.equal(b.y_fine, again.y_fine)):
                fail(f"{what} gives another draw from an equally seeded generator: take all randomness from the "
                     f"`generator` argument (torch.rand(..., generator=generator)), never from torch's global RNG")
