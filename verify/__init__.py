"""theorylab's verification package: the check registry, the checks, the report and the command line.

The Python API (:mod:`verify.api`) and the registry's names are available from here, imported on first use::

    import verify
    run = verify.run("nd.*", quick=True)
    verify.write_report(run, "report/")

and so are the names a plugin needs (``verify.check``, ``verify.Result``, ``verify.register_claim``, and
``verify.MissingDependency``, which a check raises to be ``skipped`` for lack of an optional package).
"""
from __future__ import annotations

import importlib

try:
    from importlib.metadata import PackageNotFoundError, version

    __version__ = version("theorylab")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

_API = ("run", "write_report", "draw_figure", "draw_figures", "figures", "list_claims", "load_checks", "catalog",
        "select", "load_plugins", "check_device", "Run", "Figures", "UsageError")
_REGISTRY = ("check", "register_claim", "Result", "Context", "Outcome", "Check", "run_check")
_OPTIONAL = ("MissingDependency",)
__all__ = list(_API + _REGISTRY + _OPTIONAL) + ["__version__"]


def __getattr__(name: str):
    if name in _API:
        return getattr(importlib.import_module("verify.api"), name)
    if name in _REGISTRY:
        return getattr(importlib.import_module("verify.registry"), name)
    if name in _OPTIONAL:
        return getattr(importlib.import_module("verify.optional"), name)
    raise AttributeError(f"module 'verify' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
