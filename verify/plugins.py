"""Checks and catalog entries from outside the package: ``--plugins MODULE`` and the ``theorylab.checks`` entry points.

A plugin is an ordinary Python module that, when imported, declares its claims and registers its checks
(and, if it likes, figures) exactly as the built-in modules do::

    # my_checks.py  (in the current folder, or any importable package)
    from verify import Result, check, register_claim

    register_claim("my.trace_identity", paper="MY", kind="numeric", claim="tr(AB) = tr(BA)")

    @check("my.trace_identity", equation="Eq 1", kind="numeric", tolerance=1e-12, tolerance_reason="...",
           negative_control="tr(AB) = tr(A)tr(B), the product-of-traces slip")
    def trace_identity(ctx, planted): ...

(``CLAIMS = {"my.trace_identity": {"paper": "MY", "kind": "numeric", "claim": "..."}}`` at the top of the
module does the same as ``register_claim``.) Load it with ``theorylab verify --plugins my_checks``, or let
a distribution announce it, so that it loads whenever it is installed::

    # pyproject.toml of the researcher's package
    [project.entry-points."theorylab.checks"]
    my_checks = "my_package.checks"

Its checks then appear in ``theorylab verify --list``, run with the built-in ones and get their own lines
and sections in the report.

The same module (or another one loaded the same way) may also bring

* FG data models: ``sims.multiview.register_model("weak_common", WeakCommon)``; a config then names it with
  ``model = "weak_common"`` in ``theorylab sim``, ``theorylab sweep`` and ``run_experiment`` (docs/datamodel.md);
* sweep experiments: ``verify.sweep.register_experiment(Experiment(...))`` (docs/sweep.md).

``theorylab sim`` and ``theorylab sweep`` take ``--plugins MODULE`` as ``verify`` does; a sweep's worker
processes import the plugin modules that registered its experiment or data models before running a point
(:func:`import_in_worker`), and a Dask sweep uploads those that are single files of project code. Neither may replace a built-in name:
that is refused with an error naming the plugin.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import os
import sys
import traceback

from verify import registry

ENTRY_POINT_GROUP = "theorylab.checks"
LOADED: dict[str, str] = {}  # plugin name -> where it came from ("--plugins" or "entry point <dist>")


class PluginError(ValueError):
    """A plugin named on the command line cannot be imported (the message names it)."""


def load_modules(modules) -> list[str]:
    """Import each named module (``pkg.mod``; the current folder is searched too, as ``python -c`` does).

    A module that is not found or raises on import is a :class:`PluginError` naming it (the caller asked
    for it by name, so nothing runs without it).
    """
    if modules and os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    done = []
    for name in modules:
        name = name.strip()
        if not name:
            continue
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name and (exc.name == name or name.startswith(exc.name + ".")):
                raise PluginError(f"plugin {name!r} not found (looked in the current folder and sys.path)") from None
            raise PluginError(f"plugin {name!r} does not import: {type(exc).__name__}: {exc}") from exc
        except Exception as exc:
            raise PluginError(f"plugin {name!r} does not import: {type(exc).__name__}: {exc}") from exc
        LOADED[name] = "--plugins"
        done.append(name)
    return done


def load_entry_points() -> list[str]:
    """Import every ``theorylab.checks`` entry point of the installed distributions.

    One that fails to import does not stop the others: its traceback goes to
    :data:`verify.registry.IMPORT_ERRORS` (as for a built-in check module), so ``theorylab verify``
    reports it and exits 1.
    """
    done = []
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        label = f"entry point {ep.name} ({ep.value})"
        try:
            ep.load()
        except Exception:
            registry.IMPORT_ERRORS[label] = traceback.format_exc()
            continue
        registry.IMPORT_ERRORS.pop(label, None)
        dist = getattr(getattr(ep, "dist", None), "name", None)
        LOADED[ep.value] = f"entry point of {dist}" if dist else "entry point"
        done.append(ep.value)
    return done


def load(modules=(), entry_points: bool = True) -> list[str]:
    """Load the entry-point plugins (unless ``entry_points=False``), then the named modules."""
    done = load_entry_points() if entry_points else []
    return done + load_modules(list(modules or ()))


def import_in_worker(modules) -> None:
    """Import the sweep's plugin modules in a worker process (once; each registers its models and experiments
    there as it did in the sweep process). A module that does not import is a :class:`PluginError`."""
    todo = [m for m in modules or () if m not in sys.modules]
    if todo:
        load_modules(todo)
