"""The mutants: small, realistic edits of one module's source, found by walking its ``ast``.

Each mutant replaces ONE span of the source text (an operator, a constant, a term, an axis, ...) and
leaves every other byte alone, so its diff is one line and the rest of the file keeps its line numbers.

Operators (the bugs a researcher really makes in numerical code):

========== ======================================================================================
binop      ``+ ↔ -``, ``* ↔ /``, ``// → /``, ``% → //``, ``** → *``, ``@ → *``, ``& ↔ |`` (also in ``+=``)
drop       a dropped term or factor: ``a + b → a``, ``a + b → b``, ``a - b → a``, ``a * b → a``,
           ``a / b → a`` (a missing normaliser)
compare    ``< ↔ <=``, ``> ↔ >=``, ``== ↔ !=``, ``is ↔ is not``, ``in ↔ not in``
boolop     ``and ↔ or``
unary      ``-x → x``, ``not x → x``
constant   integers ``n → n+1, n-1``; floats ``x → 2x, 0`` (``0.0 → 1.0``); ``True ↔ False``
axis       ``axis=k`` / ``dim=k`` → the other axis (0 ↔ 1, -1 → 0, ...); a dropped ``.T``
minmax     ``min ↔ max``, ``argmin ↔ argmax``, ``amin ↔ amax``, ``minimum ↔ maximum``, ...
return     ``return expr → return None``
raise      ``raise E(...) → pass`` (a missing input check)
========== ======================================================================================

Not mutated: docstrings and strings, f-strings, decorators (``@njit(cache=True)``), annotations, imports,
messages of ``raise``/``assert``, and ``if __name__ == "__main__"`` blocks.
"""
from __future__ import annotations

import ast
import dataclasses
import difflib
import re

BINOP_SWAP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
              ast.FloorDiv: ast.Div, ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult, ast.MatMult: ast.Mult,
              ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd}
SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
          ast.Pow: "**", ast.MatMult: "@", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
          ast.LShift: "<<", ast.RShift: ">>"}
PRECEDENCE = {ast.Add: 10, ast.Sub: 10, ast.Mult: 11, ast.Div: 11, ast.FloorDiv: 11, ast.Mod: 11,
              ast.MatMult: 11, ast.Pow: 13, ast.BitAnd: 8, ast.BitOr: 6, ast.BitXor: 7}
COMPARE_SWAP = {ast.Lt: (ast.LtE, "<", "<="), ast.LtE: (ast.Lt, "<=", "<"), ast.Gt: (ast.GtE, ">", ">="),
                ast.GtE: (ast.Gt, ">=", ">"), ast.Eq: (ast.NotEq, "==", "!="), ast.NotEq: (ast.Eq, "!=", "=="),
                ast.Is: (ast.IsNot, "is", "is not"), ast.IsNot: (ast.Is, "is not", "is"),
                ast.In: (ast.NotIn, "in", "not in"), ast.NotIn: (ast.In, "not in", "in")}
MINMAX = {"min": "max", "max": "min", "argmin": "argmax", "argmax": "argmin", "amin": "amax", "amax": "amin",
          "nanmin": "nanmax", "nanmax": "nanmin", "minimum": "maximum", "maximum": "minimum",
          "fmin": "fmax", "fmax": "fmin"}
AXIS_KEYWORDS = ("axis", "dim")


@dataclasses.dataclass(frozen=True)
class Mutant:
    """One edit of ``module``: bytes [start, end) of its UTF-8 source become ``replacement``."""

    module: str          # path relative to the repository root, e.g. "theory/rank.py"
    operator: str        # one of the operators in the module docstring
    start: int           # byte offsets into the UTF-8 source
    end: int
    original: str        # the replaced text
    replacement: str
    line: int            # 1-based line of the edit
    unit: str            # enclosing top-level function or method ("pca_dim", "ClassStats.merge"), "" = module level
    unit_line: int       # co_firstlineno of that unit (its first decorator's line), 0 at module level
    jitted: bool         # the unit is decorated by a numba jit: its calls are invisible to a profiler
    occurrence: int = 0  # disambiguates identical (module, unit, operator, original, replacement)

    @property
    def key(self) -> str:
        """Stable name: survives edits elsewhere in the file (no line numbers in it)."""
        return (f"{self.module}::{self.unit or '<module>'}::{self.operator}::"
                f"{_one_line(self.original)} -> {_one_line(self.replacement)}#{self.occurrence}")

    def apply(self, source: str) -> str:
        b = source.encode("utf-8")
        return (b[:self.start] + self.replacement.encode("utf-8") + b[self.end:]).decode("utf-8")

    def diff(self, source: str, context: int = 1) -> str:
        new = self.apply(source)
        return "".join(difflib.unified_diff(source.splitlines(True), new.splitlines(True), f"a/{self.module}",
                                            f"b/{self.module}", n=context))


def _one_line(s: str) -> str:
    return " ".join(s.split())


class _Source:
    """Byte offsets of ``ast`` positions (``col_offset`` counts UTF-8 bytes)."""

    def __init__(self, text: str):
        self.bytes = text.encode("utf-8")
        self.line_start = [0]
        for line in self.bytes.splitlines(True):
            self.line_start.append(self.line_start[-1] + len(line))

    def start(self, node) -> int:
        return self.line_start[node.lineno - 1] + node.col_offset

    def end(self, node) -> int:
        return self.line_start[node.end_lineno - 1] + node.end_col_offset

    def text(self, a: int, b: int) -> str:
        return self.bytes[a:b].decode("utf-8")


def _find_token(gap: str, token: str) -> int:
    """Index of operator ``token`` in the text between two operands (skipping comments), or -1."""
    pattern = r"\b" + re.escape(token).replace(r"\ ", r"\s+") + r"\b" if token[0].isalpha() else (
        r"(?<![*/<>=!&|^%@+-])" + re.escape(token) + r"(?![*/<>=&|^%@])")
    code = re.sub(r"#[^\n]*", lambda m: " " * len(m.group()), gap)
    m = re.search(pattern, code)
    return m.start() if m else -1


def _is_jit(decorator: ast.expr) -> bool:
    return "jit" in ast.unparse(decorator)


def _skipped_regions(tree: ast.Module):
    """Nodes whose subtrees are never mutated."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield from node.decorator_list
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns:
                yield node.returns
            if node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
                yield node.body[0]
        elif isinstance(node, ast.arg) and node.annotation:
            yield node.annotation
        elif isinstance(node, ast.AnnAssign):
            yield node.annotation
        elif isinstance(node, (ast.Import, ast.ImportFrom, ast.JoinedStr)):
            yield node
        elif isinstance(node, ast.Raise):
            yield from (n for n in (node.exc, node.cause) if n is not None)
        elif isinstance(node, ast.Assert) and node.msg is not None:
            yield node.msg
        elif isinstance(node, ast.If) and "__name__" in ast.unparse(node.test):
            yield node
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            yield node


def _units(tree: ast.Module):
    """(node, qualname, first line, jitted) of every top-level function and method."""
    def walk(body, prefix):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                yield node, prefix + node.name, first, any(_is_jit(d) for d in node.decorator_list)
            elif isinstance(node, ast.ClassDef):
                yield from walk(node.body, prefix + node.name + ".")
    yield from walk(tree.body, "")


def generate(module: str, source: str) -> list[Mutant]:
    """Every mutant of ``source`` (the text of ``module``), in source order."""
    tree = ast.parse(source)
    src = _Source(source)
    skipped = {id(n) for region in _skipped_regions(tree) for n in ast.walk(region)}
    axis_values = {id(n) for kw in ast.walk(tree) if isinstance(kw, ast.keyword) and kw.arg in AXIS_KEYWORDS
                   and _int_value(kw.value) is not None for n in ast.walk(kw.value)}  # mutated as an axis only
    owner = {}
    for unit, name, first, jitted in _units(tree):
        for n in ast.walk(unit):
            owner[id(n)] = (name, first, jitted)
    out: list[Mutant] = []
    seen: dict[tuple, int] = {}

    def add(node, operator, a, b, replacement):
        original = src.text(a, b)
        if replacement == original:
            return
        name, first, jitted = owner.get(id(node), ("", 0, False))
        ident = (name, operator, _one_line(original), _one_line(replacement))
        k = seen[ident] = seen.get(ident, -1) + 1
        line = src.bytes[:a].count(b"\n") + 1
        out.append(Mutant(module, operator, a, b, original, replacement, line, name, first, jitted, k))

    for node in ast.walk(tree):
        if id(node) in skipped or id(node) in axis_values:
            continue
        for operator, a, b, replacement in _edits(node, src):
            add(node, operator, a, b, replacement)
    out.sort(key=lambda m: (m.start, m.end, m.operator, m.replacement))
    return out


def _paren(text: str, needed: bool) -> str:
    return f"({text})" if needed else text


def _edits(node, src: _Source):
    """(operator, start, end, replacement) for every mutation of this one node."""
    if isinstance(node, (ast.BinOp, ast.AugAssign)):
        left, right = (node.left, node.right) if isinstance(node, ast.BinOp) else (node.target, node.value)
        a, b = src.start(node), src.end(node)
        la, rb = src.end(left), src.start(right)
        sym = SYMBOL.get(type(node.op))
        gap = src.text(la, rb)
        i = _find_token(gap, sym + ("=" if isinstance(node, ast.AugAssign) else "")) if sym else -1
        if i < 0:
            return
        op_a = la + len(gap[:i].encode("utf-8"))
        op_b = op_a + len(sym.encode("utf-8"))
        new = BINOP_SWAP.get(type(node.op))
        if new is not None:
            text = src.text(a, op_a) + SYMBOL[new] + src.text(op_b, b)
            lower = isinstance(node, ast.BinOp) and PRECEDENCE[new] < PRECEDENCE[type(node.op)]
            yield "binop", a, b, _paren(text, lower)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
            yield "drop", a, b, src.text(a, op_a).rstrip()                 # keep the left operand
            if isinstance(node.op, (ast.Add, ast.Mult)):
                yield "drop", a, b, src.text(op_b, b).lstrip()             # keep the right operand
    elif isinstance(node, ast.Compare):
        items = [node.left] + node.comparators
        for k, op in enumerate(node.ops):
            new, old_sym, new_sym = COMPARE_SWAP.get(type(op), (None, None, None))
            if new is None:
                continue
            la, rb = src.end(items[k]), src.start(items[k + 1])
            gap = src.text(la, rb)
            i = _find_token(gap, old_sym)
            if i >= 0:
                # the one token changes, so the edit is the gap only
                j = re.search(re.escape(old_sym).replace(r"\ ", r"\s+"), gap[i:])
                yield "compare", la, rb, gap[:i] + new_sym + gap[i + j.end():]
    elif isinstance(node, ast.BoolOp):
        a, b = src.start(node), src.end(node)
        old, new = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
        out = src.bytes[a:b]
        for prev, v in reversed(list(zip(node.values, node.values[1:]))):
            gap_a = src.end(prev)
            gap = src.text(gap_a, src.start(v))
            i = _find_token(gap, old)
            if i < 0:
                return
            at = gap_a + len(gap[:i].encode("utf-8")) - a
            out = out[:at] + new.encode() + out[at + len(old):]
        yield "boolop", a, b, _paren(out.decode("utf-8"), isinstance(node.op, ast.And))  # or binds looser
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)):
        if isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
            return  # -1 is a constant: mutated as one (its operand 1 -> 2, 0)
        yield "unary", src.start(node), src.end(node), src.text(src.start(node.operand), src.end(node.operand))
    elif isinstance(node, ast.Constant) and not isinstance(node.value, str) and node.value is not None:
        a, b = src.start(node), src.end(node)
        v = node.value
        if isinstance(v, bool):
            yield "constant", a, b, str(not v)
        elif isinstance(v, int):
            for w in (v + 1, v - 1):
                yield "constant", a, b, _paren(repr(w), w < 0)
        elif isinstance(v, float):
            for w in ((2 * v, 0.0) if v != 0 else (1.0,)):
                yield "constant", a, b, repr(w)
    elif isinstance(node, ast.keyword) and node.arg in AXIS_KEYWORDS:
        k = _int_value(node.value)
        if k is not None:
            a, b = src.start(node.value), src.end(node.value)
            yield "axis", a, b, str(1 if k == 0 else 0 if k in (1, -1) else k + 1 if k < 0 else k - 1)
    elif isinstance(node, ast.Attribute) and node.attr == "T" and isinstance(node.ctx, ast.Load):
        yield "axis", src.start(node), src.end(node), src.text(src.start(node.value), src.end(node.value))
    elif isinstance(node, ast.Call):
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
        if name in MINMAX:
            b = src.end(f)
            a = b - len(name.encode())
            yield "minmax", a, b, MINMAX[name]
    elif isinstance(node, ast.Return) and node.value is not None:
        if not (isinstance(node.value, ast.Constant) and node.value.value is None):
            yield "return", src.start(node.value), src.end(node.value), "None"
    elif isinstance(node, ast.Raise) and node.exc is not None:
        yield "raise", src.start(node), src.end(node), "pass"


def _int_value(node) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and type(node.operand.value) is int:
        return -node.operand.value
    return None
