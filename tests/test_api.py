"""The Python API (verify.api, re-exported from verify): the same calls the command line makes."""
from __future__ import annotations

import json

import pytest

import verify
from tests.helpers import isolated_registry
from verify import registry


def test_run_by_pattern_returns_outcome_objects(tmp_path):
    run = verify.run(["nd.lambda_max", "vc.decomposition"], quick=True)
    assert isinstance(run, verify.Run) and [o.id for o in run] == ["nd.lambda_max", "vc.decomposition"]
    o = run["nd.lambda_max"]
    assert isinstance(o, verify.Outcome) and o.status == "pass"
    assert o.negative_control_result == "failed as it should" and isinstance(o.details, dict)
    assert o.measured is not None and o.expected is not None
    assert run.summary["pass"] == 2 and run.ok and run.seconds >= run.check_seconds > 0
    with pytest.raises(KeyError):
        run["nd.nothing"]
    md = verify.write_report(run, tmp_path / "rep", figures=False, json_path=tmp_path / "r.json")
    assert md.name == "REPORT.md" and "## Controls" in md.read_text()
    assert json.loads((tmp_path / "r.json").read_text())["summary"]["pass"] == 2


def test_bad_input_raises_usage_error_before_any_check(monkeypatch, tmp_path):
    monkeypatch.setattr(registry, "run_check", lambda *a: pytest.fail("a check ran"))
    with pytest.raises(verify.UsageError, match="no check id matches"):
        verify.run("zz.none")
    with pytest.raises(verify.UsageError, match="torch device"):
        verify.run("nd.lambda_max", device="warp-drive")
    (tmp_path / "f").write_text("")
    with pytest.raises(verify.UsageError, match="not a folder"):
        verify.run("nd.lambda_max", report_dir=tmp_path / "f")


def test_missing_ids_are_outcomes_too(monkeypatch):
    real = registry.discover()
    monkeypatch.setattr(registry, "discover", lambda: {k: v for k, v in real.items() if k != "nd.lambda_max"})
    run = verify.run("nd.lambda_max", quick=True)
    assert run["nd.lambda_max"].status == "missing" and run.ok


def test_draw_figure_and_figures(tmp_path):
    from paper_figs.registry import figure

    with isolated_registry():
        @figure("zz.api_fig", answers="test", caption="a line")
        def draw(quick):
            import matplotlib.pyplot as plt

            fig, ax = plt.subplots()
            ax.plot([0, 1], [1, 0] if quick else [0, 1])
            return fig

        out = verify.draw_figure("zz.api_fig", tmp_path, quick=True)
        assert out["png"].exists() and out["pdf"].exists()
        fr = verify.draw_figures(tmp_path / "all", ["zz.api"], quick=True)
        assert list(fr.done) == ["zz.api_fig"] and not fr.failed
        with pytest.raises(verify.UsageError):
            verify.draw_figure("zz.nothing", tmp_path)


def test_list_claims_and_catalog():
    rows = verify.list_claims("rd.")
    assert rows and all(r["id"].startswith("rd.") and r["source"] == "built-in" for r in rows)
    assert {"id", "paper", "kind", "claim", "implemented"} <= set(rows[0])
    assert len(verify.catalog()) >= 45


def test_package_reexports_and_version():
    assert verify.check is registry.check and verify.Result is registry.Result
    assert verify.register_claim is registry.register_claim
    assert verify.__version__ and verify.__version__ != "0+unknown"
    with pytest.raises(AttributeError):
        verify.no_such_name
