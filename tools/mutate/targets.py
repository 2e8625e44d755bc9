"""Which tests and checks can see a mutant: the targeted kill criterion.

Running the whole suite and every check per mutant would cost minutes (docs/mutation.md); instead each mutant runs only the
tests and checks that EXECUTED the code it changes, as recorded by the traced baseline run (``judge.py``):

* a mutant inside a plain function or method: the tests and checks whose profile contains that
  function (``cProfile``: file and first line of each code object called), a test counting also the
  functions of the checks it ran through ``run_quick``;
* a mutant inside a numba-jitted function (its calls are compiled, invisible to a profiler): everything
  that executed any function of its module, plus the test files and check modules that name it;
* a mutant at module level (a constant, a class attribute): every test file and check module that imports
  the module, directly or through others (the static import graph below).

A mutant that nothing executes is not run at all: it is reported as ``uncovered`` (a survivor): it
sits in a function that nothing uses or checks.
"""
from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

PACKAGES = ("theory", "sims", "verify", "paper_figs", "tests")


def module_name(rel: str) -> str:
    parts = Path(rel).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_files(root: Path) -> dict[str, str]:
    """Module name -> path relative to ``root`` for every Python file of the project's packages."""
    out = {}
    for pkg in PACKAGES:
        for p in sorted((root / pkg).rglob("*.py")):
            rel = p.relative_to(root).as_posix()
            out[module_name(rel)] = rel
    return out


def imports_of(root: Path, rel: str, modules: dict[str, str]) -> set[str]:
    """Project modules that ``rel`` imports anywhere in its body (also inside functions), with their parents."""
    tree = ast.parse((root / rel).read_text(encoding="utf-8"))
    here = module_name(rel).split(".")
    package = here if rel.endswith("__init__.py") else here[:-1]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else node.module
            if base:
                found.add(base)
                found.update(f"{base}.{a.name}" for a in node.names)
    out = set()
    for name in found:
        parts = name.split(".")
        out.update(".".join(parts[:k]) for k in range(1, len(parts) + 1) if ".".join(parts[:k]) in modules)
    return out


@functools.lru_cache(maxsize=None)
def importers(root: Path, rel: str) -> frozenset[str]:
    """Paths of every project file that imports ``rel`` directly or transitively (``rel`` itself included)."""
    modules = project_files(root)
    graph = {r: imports_of(root, r, modules) for r in modules.values()}
    target, out, changed = module_name(rel), {rel}, True
    reached = {target}
    while changed:
        changed = False
        for r, imps in graph.items():
            if r not in out and imps & reached:
                out.add(r)
                reached.add(module_name(r))
                changed = True
    return frozenset(out)


def targets(mutant, baseline: dict, root: Path) -> tuple[list[str], list[str]]:
    """(test node ids, check ids) that can kill ``mutant``, cheapest first.

    ``baseline``: the JSON written by ``judge.py baseline``: ``tests`` (node id -> outcome, seconds, units,
    requested check ids) and ``checks`` (id -> verdict, seconds, units, module).
    """
    tests, checks = baseline["tests"], baseline["checks"]
    usable = {n: t for n, t in tests.items() if t["outcome"] == "passed"}

    def test_units(t):
        units = set(t["units"])
        for cid in t["requested"]:
            units.update(checks.get(cid, {}).get("units", ()))
        return units

    if mutant.unit and not mutant.jitted:
        unit = f"{mutant.module}:{mutant.unit_line}"
        hit_tests = [n for n, t in usable.items() if unit in test_units(t)]
        hit_checks = [c for c, v in checks.items() if unit in v["units"]]
    else:
        files = importers(root, mutant.module)
        ran: set[str] = set()
        if mutant.jitted:  # whatever ran this module's Python code, or the files that name the kernel
            name = mutant.unit.split(".")[-1]
            files = {r for r in files if re.search(rf"\b{re.escape(name)}\b", (root / r).read_text(encoding="utf-8"))}
            ran = {u for t in [*usable.values(), *checks.values()] for u in t["units"]
                   if u.startswith(f"{mutant.module}:")}
        hit_checks = [c for c, v in checks.items() if v["file"] in files or ran & set(v["units"])]
        hit_tests = [n for n, t in usable.items() if n.split("::")[0] in files or ran & test_units(t)
                     or set(t["requested"]) & set(hit_checks)]
    # cheapest first, so that pytest -x stops early: plain tests, then those that run checks; checks by time
    hit_tests.sort(key=lambda n: (bool(usable[n]["requested"]), usable[n]["seconds"]))
    return hit_tests, sorted(hit_checks, key=lambda c: checks[c]["seconds"])
