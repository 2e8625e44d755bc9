"""Which module of a package declares a check or a figure, read from the source text without importing anything.

A worker process of ``verify --jobs`` runs a few of a run's checks or draws a few of its figures. Importing only the
modules that declare them spares it the imports of all the others (torch, sympy, scipy.stats, matplotlib; their
cost is in docs/cost.md). A declaration is the decorator called with the id as its first
argument, a string literal — ``@check("nd.markov_bound", ...)``, ``@figure("rd.fig1_mlp50", ...)`` — and
tests/test_parallel.py pins that every built-in id is found this way. An id no declaration names (a plugin's, or one
registered some other way) falls back to importing every module, as ``discover`` does.
"""
from __future__ import annotations

import functools
import importlib
import pkgutil
import re
from pathlib import Path
from typing import Callable


@functools.lru_cache(maxsize=None)
def declarations(package: str, decorator: str) -> dict[str, str]:
    """id -> dotted name of the module of ``package`` (sub-packages included) holding ``@<decorator>("<id>"``.
    Modules whose names start with ``_`` are skipped, as the registries' ``discover`` skips them."""
    pattern = re.compile(r"@" + re.escape(decorator) + r"\(\s*\"([^\"]+)\"")
    found: dict[str, str] = {}

    def walk(paths, prefix: str) -> None:
        for mod in pkgutil.iter_modules(paths):
            if mod.name.startswith("_"):
                continue
            folder = Path(mod.module_finder.path)
            if mod.ispkg:
                walk([str(folder / mod.name)], f"{prefix}.{mod.name}")
                continue
            source = folder / f"{mod.name}.py"
            if source.is_file():
                for m in pattern.finditer(source.read_text(encoding="utf-8")):
                    found.setdefault(m.group(1), f"{prefix}.{mod.name}")

    walk(importlib.import_module(package).__path__, package)
    return found


def find(key: str, registered: dict, package: str, decorator: str, discover: Callable[[], object]):
    """``registered[key]``, importing first the module of ``package`` that declares ``key`` if it is not registered
    yet, and every module (``discover()``) if no declaration names it. KeyError if it is registered nowhere."""
    if key not in registered:
        module = declarations(package, decorator).get(key)
        if module is not None:
            importlib.import_module(module)
    if key not in registered:
        discover()
    return registered[key]
