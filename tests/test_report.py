"""REPORT.md and report.json: table cells never cut inside a number, the controls' section, run times."""
from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from verify import report
from verify.registry import Outcome, miss_class

NUM = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _numbers_intact(short: str, full: str) -> None:
    body = short[:-1] if short.endswith("…") else short
    assert full.startswith(body.rstrip(" ,;[")) or body.startswith("[")
    full_numbers = NUM.findall(full)
    for n in NUM.findall(body):
        assert n in full_numbers, f"{n!r} of {short!r} is a cut number from {full!r}"


@pytest.mark.parametrize("text", [
    "<= 1e-12 and the sympy residual ≡ 0",
    "rate 0.123456789 over 12345678 steps, slope -3.25e-07",
    "1.2345678901234567e-300",
    "ψ(1/2) = 0.36 at n=1024, L=50",
])
@pytest.mark.parametrize("width", [4, 8, 10, 14, 20, 28])
def test_cut_never_splits_a_number(text, width):
    short = report.cut(text, width)
    _numbers_intact(short, text)
    if len(text) > width:
        assert short.endswith("…")
        first = NUM.search(text)
        assert len(short) <= width or (first and len(short) <= first.end() + 1)


def test_fmt_lists_drop_whole_items_and_arrays_are_numbers():
    s = report.fmt([1.23456789, 22.3456789, 333.456789, 4444.56789, 5.5], 28)
    assert s == "[1.235, 22.35, 333.5, …]"
    assert report.fmt(np.array([0.5, 0.25])) == "[0.5, 0.25]"
    assert report.fmt(np.float32(0.1)) == "0.1"
    assert report.fmt(None) == "—" and report.fmt(True) == "True"
    assert report.fmt({"a": 1.234567, "b": [1, 2]}) == "{a: 1.235, b: [1, 2]}"


def _outcome(cid, miss, kind="numeric", status="pass", positive=None):
    o = Outcome(id=cid, paper="ND", equation="Eq 1", kind=kind, statement="s", status=status,
                negative_control=f"the bug of {cid}", negative_control_result="failed as it should",
                control_miss=miss, measured=0.0, expected=0.0)
    if positive:
        o.positive_control, o.positive_control_result, o.positive_miss = positive, "held as it should", 0.5
    return o


def test_miss_classes():
    assert miss_class(None) == "not recorded"
    assert miss_class(0.5) == "HELD (broken control)"
    assert miss_class(1.5) == miss_class(10) == "near miss"
    assert miss_class(11) == miss_class(1e3) == "clear"
    assert miss_class(1e10).startswith("far") and miss_class(math.inf).startswith("far")
    assert miss_class(math.inf, "symbolic") == "exact (symbolic)"


def test_controls_section_sorted_by_miss_with_classes(tmp_path):
    outs = [_outcome("a.far", 1e10), _outcome("a.none", None), _outcome("a.near", 3.0),
            _outcome("a.sym", math.inf, kind="symbolic"), _outcome("a.clear", 250.0, status="refuted",
                                                                     positive="planted exact data"),
            Outcome(id="a.missing", paper="ND", equation="", kind="numeric", statement="s", status="missing")]
    meta = report.run_meta(0, True, 12.0)
    md = report.write_markdown(tmp_path, outs, meta, {}).read_text()
    section = md[md.index("## Controls"):md.index("## `a.far`")]
    rows = [ln for ln in section.splitlines() if ln.startswith("| `")]
    neg = [r for r in rows if "the bug of" in r]
    assert [r.split("`")[1] for r in neg] == ["a.near", "a.clear", "a.far", "a.sym", "a.none"]
    assert "| 3 | near miss |" in neg[0] and "| 250 | clear |" in neg[1] and "| 1e+10 | far" in neg[2]
    assert "| ∞ | exact (symbolic) |" in neg[3] and "not recorded" in neg[4]
    (pos,) = [r for r in rows if "planted exact data" in r]
    assert "`a.clear` | refuted" in pos and "held as it should" in pos
    report.write_json(tmp_path / "report.json", outs, meta)
    data = json.loads((tmp_path / "report.json").read_text())
    classes = {c["id"]: c["control_class"] for c in data["checks"]}
    assert classes["a.near"] == "near miss" and classes["a.missing"] is None
    assert data["meta"]["controls"] == {"near miss": 1, "clear": 1, "far: catches nothing subtle?": 1,
                                        "exact (symbolic)": 1, "not recorded": 1}


def test_table_keeps_seed_verdicts_whole():
    o = _outcome("nd.x", 3.0)
    o.seed_verdicts = [{"seed": s, "holds": True, "measured": 0.0, "miss": 0.1} for s in range(3)]
    o.measured = [0.000123456, 1234.5678, 3.3333333, 4.4, 5.5, 6.6]
    row = report.table_rows([o])[0]
    assert row[5] == "pass 3/3"
    _numbers_intact(row[2], "[0.0001235, 1235, 3.333, 4.4, 5.5, 6.6]")


def test_timing_is_one_string_for_summary_and_report():
    meta = report.run_meta(0, False, 100.4, check_seconds=70.2, figure_seconds={"f": 30.0},
                           figures_total_seconds=30.2)
    assert report.timing(meta) == "100 s in all: checks 70 s, figures 30 s"
    line = report.summary_line([_outcome("nd.x", 3.0)], meta)
    assert line.endswith("(100 s in all: checks 70 s, figures 30 s)")


def test_skipped_checks_and_figures_name_the_install_command(tmp_path):
    """A skipped check (an optional package is missing) is counted, streamed with its install command, listed in
    REPORT.md's Skipped section with the skipped figures, and kept out of the controls' table."""
    real = "pip install 'theorylab[real]'"
    skipped = Outcome(id="nd.table1_metrics", paper="ND", equation="Tab 1", kind="sim", statement="s",
                      status="skipped", missing_dependency="scikit-image (module skimage)", install=real)
    outcomes = [_outcome("nd.x", 3.0), skipped]
    meta = report.run_meta(0, True, 5.0, figure_skipped={"vc.fig2_spectra": {
        "missing_dependency": "scikit-learn (module sklearn)", "install": real}})
    row = report.stream_row(skipped)
    assert row.splitlines()[0].split()[-2] == "skipped"
    assert row.splitlines()[1].strip() == ("skipped: scikit-image (module skimage) is not installed; "
                                           f"install it with: {real}")
    line = report.summary_line(outcomes, meta)
    assert "0 fail" in line and "1 skipped" in line and "1 figure skipped" in line and f"(to run them: {real})" in line
    md = report.write_markdown(tmp_path, outcomes, meta, {}).read_text()
    skipped_section = md[md.index("## Skipped"):md.index("## Controls")]
    assert f"| `nd.table1_metrics` | scikit-image (module skimage) | `{real}` |" in skipped_section
    assert f"| figure `vc.fig2_spectra` | scikit-learn (module sklearn) | `{real}` |" in skipped_section
    assert "`nd.table1_metrics`" not in md[md.index("## Controls"):md.index("## `nd.x`")]
    assert f"Skipped: scikit-image (module skimage) is not installed. Install it with `{real}`." in md
    report.write_json(tmp_path / "report.json", outcomes, meta)
    data = json.loads((tmp_path / "report.json").read_text())
    assert data["summary"]["skipped"] == 1 and data["checks"][1]["install"] == real
    assert data["checks"][1]["control_class"] is None and data["meta"]["figure_skipped"]["vc.fig2_spectra"]


def test_a_shared_computation_is_one_piece_of_evidence_in_every_summary():
    """rd.independence_deficit shares nd.table1_metrics's scan: the summary line, REPORT.md's summary and report.json
    say so (two refutations, one piece of evidence)."""
    a = Outcome(id="nd.table1_metrics", paper="ND", equation="Tab 1", kind="sim", statement="s", status="refuted")
    b = Outcome(id="rd.independence_deficit", paper="RD", equation="Eq 12", kind="sim", statement="s",
                status="refuted", shares="nd.table1_metrics")
    text = report.shared_text([a, b])
    assert "rd.independence_deficit shares nd.table1_metrics's computation" in text
    assert "1 independent pieces of evidence" in text
    assert report.summary_record([a, b], {})["meta"]["shared_evidence"] == {
        "rd.independence_deficit": "nd.table1_metrics"}
    assert report.shared_text([a]) == ""


def test_claims_judged_on_shared_runs_are_listed():
    """Checks that judge different claims on the same runs (``reads``) keep their verdicts, and the summary and
    report.json say which verdicts rest on the same runs; a run read by one check alone is not listed."""
    mk = lambda cid, reads: Outcome(id=cid, paper="FG", equation="-", kind="sim", statement="s", status="pass",  # noqa: E731
                                    reads=reads)
    outs = [mk("fg.coarse_training", "the sweep"), mk("fg.fine_training", "the sweep"), mk("x.y", "its own runs"),
            mk("x.z", None)]
    assert "claims judged on shared runs: 2 on the sweep" in report.shared_text(outs)
    assert "its own runs" not in report.shared_text(outs)
    assert report.summary_record(outs, {})["meta"]["shared_runs"] == {
        "the sweep": ["fg.coarse_training", "fg.fine_training"]}
    from verify import registry

    checks = registry.discover()
    fg = [c for c in checks.values() if c.reads and "FG training sweep" in c.reads]
    assert {c.id for c in fg} == {"fg.coarse_training", "fg.fine_training", "fg.growth_ratio",
                                  "fg.activation_scale", "fg.granularity_sweep"}
