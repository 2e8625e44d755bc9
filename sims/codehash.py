"""A fingerprint of the code a computation depends on, so that cached results go stale with their code.

:func:`code_fingerprint` hashes the source of the module that defines a function plus, transitively, every
module it imports that is *project code*: a module whose file lies outside the interpreter's prefixes and
``site-packages`` (so ``theory``, ``sims``, ``verify``, ``paper_figs``, a researcher's own package or a
script's sibling modules; not numpy, torch or the standard library). Imports are found by parsing the
sources with :mod:`ast` (nothing is imported), including imports inside functions and relative imports;
importing a submodule runs its parent packages' ``__init__``, so those count too. Editing any of these
files changes the fingerprint; editing a module that the computation does not import does not.

The hash covers module names and each file's code (not paths): its syntax tree with docstrings and comments
removed, so two checkouts of the same code share cache entries and editing a docstring or a comment keeps them
(a file that does not parse is hashed byte for byte). The caching machinery itself (this module and ``sims.cache``) is left out: it does not
change what a computation returns.
"""
from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import inspect
import os
import sys
import types
from pathlib import Path

IGNORED = frozenset({"sims.cache", "sims.codehash"})
_T0 = __import__("time").time()
_LOADED_AT: dict[str, float] = {}  # source file -> when this process executed it as a module (audit event "exec")


def _on_exec(event: str, args) -> None:
    """A module's code object executed (every import path runs ``exec(code, module.__dict__)``): note when."""
    if event == "exec" and args:
        code = args[0]
        if getattr(code, "co_name", None) == "<module>":
            _LOADED_AT[os.path.realpath(code.co_filename)] = __import__("time").time()


sys.addaudithook(_on_exec)


def stale(modules) -> list[str]:
    """The modules among ``modules`` that this process imported *before* their source file last changed: it runs
    older code than the file holds, so a fingerprint read from the files now would not be the code that computed a
    result. A module imported before this one was is taken as imported when this module was (a sub-second window)."""
    out = []
    for name in modules:
        mod = sys.modules.get(name)
        f = getattr(mod, "__file__", None) if mod is not None else None
        if not f:
            continue
        try:
            mtime = os.stat(f).st_mtime
        except OSError:
            continue
        if mtime > _LOADED_AT.get(os.path.realpath(f), _T0):
            out.append(name)
    return sorted(out)
_IMPORTS: dict[str, tuple] = {}  # content sha256 -> imported module names (parsing memoised by content)
_CODE: dict[str, str] = {}  # content sha256 -> sha256 of the code without docstrings


def _strip_docstrings(tree: ast.AST) -> ast.AST:
    """``tree`` with the docstring of the module and of every class and function removed (in place)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                node.body = body[1:] or [ast.Pass()]
    return tree


def code_digest(source: bytes, digest: str | None = None) -> str:
    """sha256 of the source's code: its syntax tree (no line numbers) without docstrings; comments never reach
    the tree. A source that does not parse is hashed as bytes. Memoised by the content's sha256 ``digest``."""
    digest = digest or hashlib.sha256(source).hexdigest()
    if digest not in _CODE:
        try:
            dump = ast.dump(_strip_docstrings(ast.parse(source)), include_attributes=False)
            _CODE[digest] = hashlib.sha256(dump.encode()).hexdigest()
        except (SyntaxError, ValueError):
            _CODE[digest] = digest
    return _CODE[digest]


@functools.cache
def _external_roots() -> tuple[str, ...]:
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    return tuple(sorted(os.path.realpath(r) + os.sep for r in roots if r))


def is_project_file(path: str | Path) -> bool:
    """True for a source file that is neither in the interpreter's prefixes nor in a site-packages folder."""
    p = os.path.realpath(path)
    if "site-packages" in Path(p).parts or "dist-packages" in Path(p).parts:
        return False
    return not any(p.startswith(r) for r in _external_roots())


def _module_file(name: str) -> tuple[Path, bool] | None:
    """(source file, is_package) of a dotted module name, found without importing it; None if not a file."""
    mod = sys.modules.get(name)
    f = getattr(mod, "__file__", None) if mod is not None else None
    if f and f.endswith(".py"):
        return Path(f), Path(f).name == "__init__.py"
    try:
        if "." in name:
            parent = _module_file(name.rpartition(".")[0])
            dirs = [parent[0].parent] if parent and parent[1] else []
        else:
            spec = importlib.util.find_spec(name)  # a top-level name: nothing is imported
            if spec is not None and spec.origin and spec.origin.endswith(".py"):
                return Path(spec.origin), bool(spec.submodule_search_locations)
            return None
    except (ImportError, ValueError, AttributeError):
        return None
    leaf = name.rpartition(".")[2]
    for d in dirs:
        if (d / leaf / "__init__.py").is_file():
            return d / leaf / "__init__.py", True
        if (d / f"{leaf}.py").is_file():
            return d / f"{leaf}.py", False
    return None


def _imported_names(source: bytes, digest: str, module: str, is_package: bool) -> tuple:
    """Every module name an import statement of this source may load (absolute names)."""
    key = f"{digest}|{module}|{is_package}"
    if key in _IMPORTS:
        return _IMPORTS[key]
    try:
        tree = ast.parse(source)
    except SyntaxError:
        _IMPORTS[key] = ()
        return ()
    names = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                names.update(".".join(parts[: i + 1]) for i in range(len(parts)))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            if not stem:
                continue
            parts = stem.split(".")
            names.update(".".join(parts[: i + 1]) for i in range(len(parts)))
            names.update(f"{stem}.{a.name}" for a in node.names if a.name != "*")
    _IMPORTS[key] = tuple(sorted(names))
    return _IMPORTS[key]


def _root_module(obj) -> tuple[str, Path | None]:
    """The module name and source file defining a function, partial, method or module."""
    if isinstance(obj, types.ModuleType):
        return obj.__name__, Path(obj.__file__) if getattr(obj, "__file__", None) else None
    while isinstance(obj, functools.partial):
        obj = obj.func
    obj = inspect.unwrap(obj)
    name = getattr(obj, "__module__", None) or type(obj).__module__
    mod = sys.modules.get(name)
    f = getattr(mod, "__file__", None)
    return name, (Path(f) if f else None)


def code_fingerprint(*objs) -> tuple[str, list[str]]:
    """(sha256 hex digest, sorted module names) of the project code that ``objs`` (functions or modules) import.

    A function defined in a module without a source file (an interactive session) is hashed by its
    bytecode and constants instead, so a redefinition still changes the fingerprint.
    """
    seen: dict[str, str] = {}
    todo: list[tuple[str, Path, bool]] = []
    extra = []
    local_top: dict[str, bool] = {}  # top-level package -> is project code (numpy, torch, stdlib: False)
    for obj in objs:
        name, path = _root_module(obj)
        if path is not None and path.suffix == ".py" and path.is_file():
            todo.append((name, path, path.name == "__init__.py"))
        else:
            code = getattr(inspect.unwrap(obj), "__code__", None)
            blob = repr((code.co_code, code.co_consts, code.co_names)) if code is not None else repr(obj)
            extra.append(f"{name}:{hashlib.sha256(blob.encode()).hexdigest()}")
    while todo:
        name, path, is_pkg = todo.pop()
        if name in seen:
            continue
        try:
            src = path.read_bytes()
        except OSError:
            seen[name] = "unreadable"
            continue
        digest = hashlib.sha256(src).hexdigest()
        seen[name] = code_digest(src, digest)
        for dep in _imported_names(src, digest, name, is_pkg):
            if dep in seen or dep in IGNORED:
                continue
            top = dep.partition(".")[0]
            if top not in local_top:
                found = _module_file(top)
                local_top[top] = found is not None and is_project_file(found[0])
            if not local_top[top]:
                continue
            found = _module_file(dep)
            if found is not None and is_project_file(found[0]):
                todo.append((dep, found[0], found[1]))
    for name in IGNORED:
        seen.pop(name, None)
    h = hashlib.sha256()
    for name in sorted(seen):
        h.update(f"{name}={seen[name]}\n".encode())
    for e in sorted(extra):
        h.update(f"{e}\n".encode())
    return h.hexdigest(), sorted(seen)
