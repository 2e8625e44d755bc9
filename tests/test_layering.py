"""Imports point downward only: verify, paper_figs → sims → theory; theory has no torch.

Scans every module's import statements with ``ast`` (nothing is imported), so a violation is named
with its file and line.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# package → top-level modules it must not import
FORBIDDEN = {
    "theory": {"torch", "sims", "verify", "paper_figs"},
    "sims": {"verify", "paper_figs"},
    "paper_figs": {"verify"},
}


def _imports(path: Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name.split(".")[0], node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module.split(".")[0], node.lineno


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_imports_point_downward(package):
    bad = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for top, line in _imports(path):
            if top in FORBIDDEN[package]:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {top}")
    assert not bad, "layering violated:\n" + "\n".join(bad)


def test_scanner_catches_a_planted_violation(tmp_path):
    """Negative control: the scanner sees an upward import."""
    f = tmp_path / "m.py"
    f.write_text("import numpy\nfrom verify.registry import check\n")
    assert ("verify", 2) in list(_imports(f))
