"""Docstrings say what the code does, its contract and the paper/equation it implements; lab notes
(timings, load, commit hashes, the history of rule changes) go in docs/*.md.

Scans every module, class and function docstring of the package (theory, sims, verify, paper_figs, tools)
with ``ast`` (nothing is imported) and names each offending line with its file and line.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("theory", "sims", "verify", "paper_figs", "tools")

# What marks a lab note rather than a description of the code.
LAB_NOTES = [
    ("commit hash", re.compile(r"\bcommits?\s+[0-9a-f]{7,40}\b", re.I)),
    ("load average", re.compile(r"\bload averages?\b|\bat load\b", re.I)),
    ("measured on", re.compile(r"\bmeasured on\b", re.I)),
    ("CPU-seconds", re.compile(r"\bCPU-s\b")),
    ("stop number", re.compile(r"\bstop \d+\b", re.I)),
]


def lab_notes(text: str) -> list[tuple[int, str, str]]:
    """(line offset in ``text``, kind, the line) for every line of ``text`` that reads as a lab note."""
    out = []
    for k, line in enumerate(text.splitlines()):
        for kind, pat in LAB_NOTES:
            if pat.search(line):
                out.append((k, kind, line.strip()))
                break
    return out


def _docstrings(path: Path):
    """(first line of the docstring in the file, docstring) for the module and every class and function."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        body = getattr(node, "body", None)
        doc = ast.get_docstring(node, clean=False)
        if doc and body:
            yield body[0].lineno, doc


def test_docstrings_carry_no_lab_notes():
    bad = []
    for package in PACKAGES:
        root = ROOT / package
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*.py")):
            for line, doc in _docstrings(path):
                for k, kind, text in lab_notes(doc):
                    bad.append(f"{path.relative_to(ROOT)}:{line + k}: {kind}: {text}")
    assert not bad, ("docstrings with lab notes (move them to the matching docs/*.md page, section "
                     "'Measurements and history (moved from the docstrings)'):\n" + "\n".join(bad))


def test_scanner_flags_planted_lab_notes():
    """Negative control: each kind of lab note, planted in a docstring, is flagged; plain descriptions are not."""
    planted = {
        "commit hash": "Since commit 8a77bf2 the floor is cut at 1e-12.",
        "load average": "Takes 41 s at load 3.2 (load average 3.1).",
        "measured on": "Speed-up measured on the 2-core machine: 2.5x.",
        "CPU-seconds": "The full run costs 3 916 CPU-s.",
        "stop number": "Rule tightened at stop 41 after the review.",
    }
    for kind, line in planted.items():
        doc = f"Fits the CovLasso path (ND Eq 5).\n\n{line}\nReturns theta."
        assert [(k, kd) for k, kd, _ in lab_notes(doc)] == [(2, kind)], (kind, lab_notes(doc))
    clean = ("The error floor of ND A15: err_i = det Cov / det Cov_-i-i. Returns (floor, rank); a draw stops "
             "when max|J_L| < 1.19e-7. Errors are computed on the held-out half. See commit messages in git.")
    assert lab_notes(clean) == []


def test_scanner_reads_the_docstrings_of_a_planted_module(tmp_path):
    f = tmp_path / "m.py"
    f.write_text('"""A module.\n\nMeasured on the shared box: 12 s."""\n\n\ndef g():\n    """Since commit deadbeef1."""\n')
    found = [(line + k, kind) for line, doc in _docstrings(f) for k, kind, _ in lab_notes(doc)]
    assert sorted(found) == [(3, "measured on"), (7, "commit hash")]
