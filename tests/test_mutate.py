"""The mutation harness (tools/mutate) itself: its mutants, targets, sample and report. No mutant is run here."""
from __future__ import annotations

import ast
import dataclasses
import json
import os
import subprocess
from pathlib import Path

import pytest

from tools.mutate import report, run
from tools.mutate import targets as tg
from tools.mutate.mutants import Mutant, generate

ROOT = Path(__file__).resolve().parents[1]

SNIPPET = '''"""Docstring: a + b must not be mutated."""
import numpy as np
from numba import njit


def f(a, b, x: int = 3):
    """σ_k docstring, 2 * x."""
    s = np.sum(a * b, axis=0) + x     # ψ in a comment, + - * /
    if a.ndim != 2 or s < 0.5:
        raise ValueError(f"bad {a.ndim + 1}")
    return max(s, x.T) / (b ** 2)


@njit(cache=True)
def kernel(v):
    return -v


class Stats:
    def merge(self, other):
        self.n += other.n
        return self
'''


def mutants_of(text=SNIPPET):
    return generate("pkg/mod.py", text)


def edits(ms, op):
    return {(m.original, m.replacement) for m in ms if m.operator == op}


def test_every_operator_makes_the_realistic_edit():
    ms = mutants_of()
    assert ("a * b", "a / b") in edits(ms, "binop")
    assert ("self.n += other.n", "self.n -= other.n") in edits(ms, "binop")
    assert ("b ** 2", "(b * 2)") in edits(ms, "binop")                      # lower precedence: parenthesised
    assert {("a * b", "a"), ("a * b", "b"), ("np.sum(a * b, axis=0) + x", "np.sum(a * b, axis=0)"),
            ("np.sum(a * b, axis=0) + x", "x")} <= edits(ms, "drop")
    assert (" != ", " == ") in edits(ms, "compare") and (" < ", " <= ") in edits(ms, "compare")
    assert ("a.ndim != 2 or s < 0.5", "a.ndim != 2 and s < 0.5") in edits(ms, "boolop")
    assert ("-v", "v") in edits(ms, "unary")
    assert {("2", "3"), ("2", "1"), ("0.5", "1.0"), ("0.5", "0.0")} <= edits(ms, "constant")
    assert {("0", "1"), ("x.T", "x")} <= edits(ms, "axis")
    assert ("max", "min") in edits(ms, "minmax")
    assert ("self", "None") in edits(ms, "return")
    assert any(o.startswith("raise ValueError") and r == "pass" for o, r in edits(ms, "raise"))


def test_mutants_parse_differ_and_change_one_place_only():
    for m in mutants_of():
        new = m.apply(SNIPPET)
        assert ast.dump(ast.parse(new)) != ast.dump(ast.parse(SNIPPET)), m.key
        old_lines, new_lines = SNIPPET.splitlines(), new.splitlines()
        assert len(old_lines) == len(new_lines) and \
            [i for i, (x, y) in enumerate(zip(old_lines, new_lines)) if x != y] == [m.line - 1], m.key


def test_docstrings_decorators_fstrings_annotations_and_messages_are_left_alone():
    ms = mutants_of()
    assert not {m.line for m in ms} & {1, 2, 3, 7, 14}   # docstrings, imports, the @njit(cache=True) line
    assert all("ndim + 1" not in m.original for m in ms if m.operator != "raise")  # the message (an f-string)
    assert {(m.original, m.replacement) for m in ms if m.line == 6} == {("3", "4"), ("3", "2")}  # not `int`
    on_axis = [m for m in ms if m.line == 8 and m.original == "0"]
    assert [m.operator for m in on_axis] == ["axis"]      # an axis is mutated once, as an axis


def test_precedence_is_kept_when_an_operator_binds_looser():
    text = "r = c / a ** b\nq = x | y & z\n"
    got = {}
    for m in generate("m.py", text):
        if m.operator == "binop" and m.original in ("a ** b", "y & z"):
            ns = {"a": 3.0, "b": 2.0, "c": 5.0, "x": 6, "y": 3, "z": 5}
            exec(m.apply(text), ns)
            got[m.original] = ns["r"] if m.original == "a ** b" else ns["q"]
    assert got == {"a ** b": 5.0 / (3.0 * 2.0), "y & z": 6 | (3 | 5)}


def test_units_name_the_enclosing_function_its_first_line_and_jit():
    ms = mutants_of()
    by_unit = {m.unit: m for m in ms}
    assert by_unit["kernel"].jitted and by_unit["kernel"].unit_line == 14      # the decorator's line
    assert by_unit["Stats.merge"].unit_line == 20 and not by_unit["Stats.merge"].jitted
    ns = {}
    exec(compile("def deco(g): return g\n\n@deco\ndef h():\n    return 1\n", "m.py", "exec"), ns)
    m = [m for m in generate("m.py", "def deco(g): return g\n\n@deco\ndef h():\n    return 1\n") if m.unit == "h"][0]
    assert m.unit_line == ns["h"].__code__.co_firstlineno                     # what cProfile reports


def test_keys_are_unique_and_survive_an_edit_elsewhere():
    a = {m.key for m in mutants_of()}
    b = {m.key for m in mutants_of("# a new first line\n" + SNIPPET)}
    assert len(a) == len(mutants_of()) and a == b


def test_recheck_finds_survivors_after_a_renumbering_and_names_the_gone_ones(tmp_path):
    """--recheck: a survivor of an old report is today's mutant with the same edit, even when an edit of its unit
    renumbered its key (#k); a survivor whose edited line no longer exists is reported as gone."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg/mod.py").write_text(SNIPPET)
    old = {m.key: m for m in mutants_of()}
    pick = next(m for m in old.values() if m.key.endswith("#1") and m.unit == "f")  # a key that will move
    gone = next(m for m in old.values() if "0.5" in m.original)
    rep = [{"key": k.key, "module": "pkg/mod.py", "unit": k.unit, "operator": k.operator, "outcome": o,
            "diff": k.diff(SNIPPET)} for k, o in ((pick, "survived"), (gone, "uncovered"))]
    rep.append({**rep[0], "key": "pkg/mod.py::f::x::killed#0", "outcome": "killed"})  # killed ones are not rechecked
    # today: one more same-text mutant ahead of `pick` in f (renumbers it) and the 0.5 test rewritten
    first = pick.original
    edited = SNIPPET.replace("    s = np.sum(", f"    _ = {first}\n    s = np.sum(", 1).replace("s < 0.5", "s < 1")
    (tmp_path / "pkg/mod.py").write_text(edited)
    found, lost = run.match_survivors(rep, tmp_path)
    assert lost == [gone.key]
    assert len(found) == 1 and found[0].key != pick.key
    assert run._edit(found[0].diff(edited)) == run._edit(pick.diff(SNIPPET))


@pytest.mark.parametrize("module", ["theory/rank.py", "theory/validate.py", "theory/symbolic/vc.py"])
def test_sampled_mutants_of_the_real_theory_parse(module):
    text = (ROOT / module).read_text(encoding="utf-8")
    ms = run.sample(ROOT, [module], 25, seed=0)
    assert len(ms) == 25 and ms == run.sample(ROOT, [module], 25, seed=0)
    assert ms != run.sample(ROOT, [module], 25, seed=1) and ms[:10] == run.sample(ROOT, [module], 10, seed=0)
    for m in ms:
        assert ast.dump(ast.parse(m.apply(text))) != ast.dump(ast.parse(text))


def test_sample_is_round_robin_over_modules():
    ms = run.sample(ROOT, ["theory/rank.py", "theory/validate.py"], 3, seed=0)
    assert [m.module for m in ms] == ["theory/rank.py", "theory/validate.py"] * 3


def test_default_modules_are_theory_and_the_numerical_sims():
    mods = run.default_modules(ROOT)
    assert "theory/rank.py" in mods and "theory/symbolic/vc.py" in mods and "sims/random_matrix.py" in mods
    assert not any(m.endswith("__init__.py") for m in mods) and "sims/cache.py" not in mods


def _baseline():
    u = "theory/rank.py:{}"
    return {"tests": {"tests/test_rank.py::test_a": {"outcome": "passed", "seconds": 1, "units": [u.format(10)],
                                                      "requested": []},
                      "tests/test_rank.py::test_broken": {"outcome": "failed", "seconds": 1,
                                                           "units": [u.format(10)], "requested": []},
                      "tests/test_checks_rd.py::test_c": {"outcome": "passed", "seconds": 0, "units": [],
                                                           "requested": ["rd.x"]}},
            "checks": {"rd.x": {"verdict": ["pass", "", ""], "seconds": 5, "units": [u.format(20)],
                                "file": "verify/checks/rd/rank.py"},
                       "rd.y": {"verdict": ["pass", "", ""], "seconds": 1, "units": [u.format(10)],
                                "file": "verify/checks/rd/rank.py"}}}


def _mutant(unit_line, unit="f", jitted=False):
    return Mutant("theory/rank.py", "binop", 0, 1, "a", "b", 2, unit, unit_line, jitted)


def test_targets_are_what_executed_the_mutated_function():
    base = _baseline()
    tests, checks = tg.targets(_mutant(10), base, ROOT)
    assert tests == ["tests/test_rank.py::test_a"] and checks == ["rd.y"]     # failing-at-baseline test left out
    tests, checks = tg.targets(_mutant(20), base, ROOT)
    assert tests == ["tests/test_checks_rd.py::test_c"] and checks == ["rd.x"]  # through run_quick
    assert tg.targets(_mutant(99), base, ROOT) == ([], [])                     # uncovered
    tests, checks = tg.targets(_mutant(30, unit="kern", jitted=True), base, ROOT)  # a kernel: what ran the module
    assert tests == ["tests/test_rank.py::test_a", "tests/test_checks_rd.py::test_c"] and checks == ["rd.y", "rd.x"]


def test_module_level_mutants_reach_every_importer():
    tests, checks = tg.targets(_mutant(0, unit=""), _baseline(), ROOT)
    assert "tests/test_rank.py::test_a" in tests and checks == ["rd.y", "rd.x"]   # cheapest check first
    assert "tests/test_rank.py" in tg.importers(ROOT, "theory/rank.py")
    assert "verify/checks/rd/rank.py" in tg.importers(ROOT, "theory/validate.py")     # transitively
    assert "tests/test_layering.py" not in tg.importers(ROOT, "theory/rank.py")


def test_report_rates_leave_equivalent_mutants_out():
    rs = [{"module": "theory/a.py", "outcome": o, "seconds": 1.0, "by": b} for o, b in
          [("killed", "test x"), ("killed", "timeout after 9 s"), ("survived", None), ("equivalent", "why")]]
    s = report.summarize(rs)
    assert s["theory/a.py"]["kill_rate"] == pytest.approx(2 / 3, abs=1e-3) and s["theory/a.py"]["timeouts"] == 1
    assert s["TOTAL"]["equivalent"] == 1


def test_sync_tree_copies_the_project_and_leaves_the_source_alone(tmp_path):
    src = tmp_path / "src"
    (src / "theory").mkdir(parents=True)
    (src / "theory" / "m.py").write_text("X = 1\n")
    (src / ".gitignore").write_text("ignored/\n")
    (src / "ignored").mkdir()
    (src / "ignored" / "big.bin").write_text("no")
    subprocess.run(["git", "init", "-q"], cwd=src, check=True)
    tree = tmp_path / "tree"
    run.sync_tree(src, tree)
    assert (tree / "theory" / "m.py").read_text() == "X = 1\n" and not (tree / "ignored").exists()
    assert (tree / ".mutate-copy").exists() and not (src / ".mutate-copy").exists()
    assert os.stat(tree / "theory" / "m.py").st_mtime_ns == os.stat(src / "theory" / "m.py").st_mtime_ns
    (tree / "theory" / "m.py").write_text("X = 2\n")                            # a mutant left behind ...
    run.sync_tree(src, tree)
    assert (tree / "theory" / "m.py").read_text() == "X = 1\n"                 # ... is undone by the next run


def test_numba_cache_copy_drops_the_kernels_that_could_be_stale(tmp_path):
    work = tmp_path / "work"
    homotopy = {"theory_0123/_homotopy._homotopy-139.py311.nbi", "theory_0123/_homotopy._homotopy-139.py311.1.nbc"}
    layer, mp = "sims_4567/random_matrix._layer-73.py311.nbi", "sims_4567/marchenko_pastur._ranks-40.py311.nbi"
    files = homotopy | {layer, mp}
    for f in files:
        (work / "numba" / f).parent.mkdir(parents=True, exist_ok=True)
        (work / "numba" / f).write_text("x")

    def left(module, unit):
        m = dataclasses.replace(_mutant(5, unit=unit), module=module)
        d = run._numba_dir(work, ROOT, m)
        return {p.relative_to(d).as_posix() for p in d.rglob("*.nb*")}

    assert left("theory/_homotopy.py", "_homotopy") == {layer, mp}   # a kernel's module: its importers' go too
    assert left("theory/rank.py", "pca_dim") == files               # a plain function: no kernel can see it
    # module level: the kernels of every importer go (marchenko_pastur imports theory.validate; the
    # homotopy and random_matrix kernels do not import it, so they cannot have frozen its constants)
    assert left("theory/validate.py", "") == homotopy | {layer}
    assert all((work / "numba" / f).exists() for f in files)   # the warm cache itself is untouched


def test_judge_refuses_to_run_outside_a_copy(tmp_path):
    out = subprocess.run([os.sys.executable, "-m", "tools.mutate.judge", "run", "x", "y"], cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode != 0 and "refusing" in out.stderr


def test_list_mode_prints_diffs(capsys):
    from tools.mutate.__main__ import main

    assert main(["theory/validate.py", "--sample", "2", "--list"]) == 0
    out = capsys.readouterr().out
    assert out.count("--- a/theory/validate.py") == 2 and "2 mutants in 1 modules" in out
    json.dumps(out)


def test_fingerprints_split_code_from_each_test_file(tmp_path):
    for rel, text in {"theory/m.py": "X = 1\n", "tests/test_a.py": "A\n", "tests/test_b.py": "B\n",
                      "tests/helpers.py": "H\n", "tests/test_mutate.py": "M\n", "pyproject.toml": "P\n"}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    code, tests = run.fingerprints(tmp_path)
    assert set(tests) == {"tests/test_a.py", "tests/test_b.py", "<common>"}      # test_mutate.py is not traced
    (tmp_path / "tests" / "test_a.py").write_text("A2\n")
    code2, tests2 = run.fingerprints(tmp_path)
    assert code2 == code and tests2["tests/test_a.py"] != tests["tests/test_a.py"] and \
        tests2["tests/test_b.py"] == tests["tests/test_b.py"]                   # only test_a.py is traced again
    assert run.state(code2, tests2) != run.state(code, tests)                   # and stored results are not reused
    (tmp_path / "theory" / "m.py").write_text("X = 2\n")
    assert run.fingerprints(tmp_path)[0] != code


def test_a_baseline_is_reused_while_nothing_changed(tmp_path):
    hashes = {"tests/test_a.py": "1", "<common>": "2"}
    kept = {"checks": {}, "tests": {}, "test_hashes": hashes}
    (tmp_path / "baseline-abc.json").write_text(json.dumps(kept))
    assert run.run_baseline(tmp_path / "tree-that-is-never-used", tmp_path, "abc", hashes) == kept


def test_rescore_and_the_population_weighted_rate():
    """A survivor argued equivalent after the run leaves the rate (rescore); the weighted TOTAL weights each
    module's rate by its number of mutants, not by the (equal) sample sizes."""
    res = [{"module": "a.py", "key": "a1", "outcome": "killed"}, {"module": "a.py", "key": "a2", "outcome": "survived"},
           {"module": "b.py", "key": "b1", "outcome": "killed"}, {"module": "b.py", "key": "b2", "outcome": "killed"}]
    s = report.summarize(res, {"a.py": 30, "b.py": 10})
    assert s["TOTAL"]["kill_rate"] == 0.75 and s["TOTAL"]["weighted_kill_rate"] == pytest.approx((30 * 0.5 + 10) / 40,
                                                                                                   abs=1e-3)
    re = report.rescore(res, {"a2": "the same output"})
    assert [r["outcome"] for r in re] == ["killed", "equivalent", "killed", "killed"]
    assert report.summarize(re)["TOTAL"]["kill_rate"] == 1.0


def test_every_equivalence_entry_names_a_mutant_of_todays_source_on_its_line():
    """equivalent.toml: each key names a mutant that exists now, and its `line` is that mutant's source line —
    so an edit that moves a key's #k onto another mutant (or removes it) fails here instead of silently
    excusing a different mutant."""
    import tomllib

    entries = tomllib.loads(run.EQUIVALENT_FILE.read_text(encoding="utf-8"))["mutant"]
    keys = [e["key"] for e in entries]
    assert len(set(keys)) == len(keys), f"keys argued twice: {sorted({k for k in keys if keys.count(k) > 1})}"
    root = Path(__file__).resolve().parents[1]
    by_module: dict[str, dict] = {}
    for e in entries:
        mod = e["key"].split("::")[0]
        if mod not in by_module:
            src = (root / mod).read_text(encoding="utf-8")
            by_module[mod] = (src, {m.key: m for m in generate(mod, src)})
        src, ms = by_module[mod]
        assert e["key"] in ms, f"no such mutant today: {e['key']}"
        assert "line" in e and run.equivalent_applies(ms[e["key"]], src, e["line"]), \
            f"{e['key']} now mutates `{src.splitlines()[ms[e['key']].line - 1].strip()}`, not `{e.get('line')}`"
