"""A --report folder is safe: an interrupted run leaves the earlier report whole (the report is built beside
the folder and swapped in at the end), a folder that is not a report is refused, and a run deletes only files
that theorylab itself wrote there."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

import verify
from tests.helpers import default_sigint, isolated_registry
from verify import api, cli, registry

ROOT = Path(__file__).resolve().parents[1]

# A plugin check that writes an artifact and has a figure; either can be made to sleep (and say it started)
# through the environment, so that a run can be interrupted in the check phase or in the figure phase.
PLUGIN = '''
import json
import os
import time
from pathlib import Path

import numpy as np

from paper_figs.registry import figure
from verify import Result, check, register_claim

register_claim("{p}.trace", paper="MY", kind="numeric", claim="tr(AB) = tr(BA) for square A, B")


def _maybe_sleep(phase):
    if os.environ.get("T26_SLEEP_IN") == phase:
        Path(os.environ["T26_STARTED"]).write_text(phase)
        time.sleep(3600)  # until interrupted: the test sends SIGINT once it sees the file


@check("{p}.trace", equation="Eq 1", kind="numeric", tolerance=1e-12, tolerance_reason="float64 sums",
       negative_control="tr(AB) = tr(A)tr(B)", figures=("{p}.fig",))
def trace(ctx, planted):
    _maybe_sleep("check")
    a, b = ctx.rng("ab").standard_normal((2, 5, 5))
    lhs = np.trace(a @ b)
    rhs = np.trace(a) * np.trace(b) if planted else np.trace(b @ a)
    err = abs(lhs - rhs) / max(abs(lhs), 1.0)
    (ctx.artifact_dir / "ab.json").write_text(json.dumps({{"seed": ctx.seed, "run": os.environ.get("T26_RUN", "")}}))
    return Result(measured=err, expected="<= 1e-12", holds=bool(err <= 1e-12), miss=err / 1e-12,
                  artifacts=["artifacts/{p}.trace/ab.json"])


@figure("{p}.fig", answers="MY Fig 1", caption="the plugin's figure", checks=("{p}.trace",))
def draw(quick):
    _maybe_sleep("figure")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([0, 1], [0, float(os.environ.get("T26_RUN", "1") or 1)])
    return fig
'''


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """The plugin written to tmp_path/plug; yields (module name, id prefix, its folder)."""
    prefix = f"rs{uuid.uuid4().hex[:6]}"
    name = f"{prefix}_checks"
    folder = tmp_path / "plug"
    folder.mkdir()
    (folder / f"{name}.py").write_text(textwrap.dedent(PLUGIN.format(p=prefix)))
    monkeypatch.syspath_prepend(str(folder))
    with isolated_registry(name, prefix):
        yield name, prefix, folder


def _snapshot(d: Path) -> dict[str, bytes]:
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _images_resolve(d: Path) -> list[str]:
    """The images REPORT.md embeds (all of them must exist)."""
    refs = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", (d / "REPORT.md").read_text())
    missing = [r for r in refs if not (d / r).is_file()]
    assert not missing, f"REPORT.md points at missing images: {missing}"
    return refs


def _no_staging_left(d: Path) -> None:
    left = [p.name for where in (d, d.parent) for p in where.iterdir() if ".theorylab-new-" in p.name]
    assert not left, f"temporary report folders left behind: {left}"


def _cli(args, cwd, env_extra=None, **kw):
    env = dict(os.environ, MPLBACKEND="Agg", THEORYLAB_CACHE=os.environ.get("THEORYLAB_CACHE", str(cwd / "cache")),
               PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    env.update(env_extra or {})
    return subprocess.Popen([sys.executable, "-m", "theorylab", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint,
                            **kw)


# Limits that only a hang reaches: the test waits for the phase itself (the file the plugin writes when it starts
# sleeping), never for a duration, so a slow or loaded machine only makes it take longer.
HANG = 600.0


def _interrupt_when_started(proc, started: Path, limit: float = HANG) -> tuple[int, str]:
    t0 = time.monotonic()
    while not started.exists():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the run ended (rc {proc.returncode}) before it was interrupted:\n{out}\n{err}")
        if time.monotonic() - t0 > limit:
            proc.kill()
            pytest.fail(f"the slow phase did not start within {limit:.0f} s (a hang)")
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=HANG)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"the run did not stop within {HANG:.0f} s of SIGINT (a hang)")
    return proc.returncode, err


def test_ctrl_c_leaves_the_previous_report_whole(tmp_path):
    """SIGINT during the checks, then during the figures: the earlier report (figures, artifacts, REPORT.md,
    report.json, marker) and the user's own files are byte for byte as before, and nothing is left beside."""
    prefix = f"rs{uuid.uuid4().hex[:6]}"
    name = f"{prefix}_checks"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(PLUGIN.format(p=prefix)))
    report = tmp_path / "R"
    args = ["verify", "--plugins", name, prefix, "--quick", "--report", "R"]
    first = _cli(args, tmp_path, {"T26_RUN": "1"})
    out, err = first.communicate(timeout=HANG)
    assert first.returncode == 0, err
    (report / "notes.txt").write_text("mine")                              # the user's files in the report
    (report / "figs" / "my_sketch.png").write_bytes(b"my own picture")
    before = _snapshot(report)
    assert {f"figs/{prefix}.fig.png", f"figs/{prefix}.fig.pdf", f"artifacts/{prefix}.trace/ab.json",
            "REPORT.md", "report.json", ".theorylab-report"} <= set(before)
    assert _images_resolve(report) == [f"figs/{prefix}.fig.png"]

    for phase in ("check", "figure"):
        started = tmp_path / f"started-{phase}"
        proc = _cli(args, tmp_path, {"T26_RUN": "2", "T26_SLEEP_IN": phase, "T26_STARTED": str(started)})
        rc, err = _interrupt_when_started(proc, started)
        assert rc == 130 and "interrupted" in err, (phase, rc, err)
        after = _snapshot(report)
        assert after.keys() == before.keys(), (phase, after.keys() ^ before.keys())
        assert after == before, phase                                       # not one byte changed
        _images_resolve(report)
        _no_staging_left(report)


def test_report_is_built_beside_and_swapped_in(plugin, tmp_path, monkeypatch):
    name, prefix, _ = plugin
    d = tmp_path / "R"
    monkeypatch.setenv("T26_RUN", "1")
    verify.write_report(verify.run(prefix, quick=True, plugins=[name], report_dir=d), d)
    before = _snapshot(d)
    monkeypatch.setenv("T26_RUN", "2")
    run = verify.run(prefix, quick=True, plugins=[name], report_dir=d)
    assert _snapshot(d) == before                                          # the checks ran: nothing changed yet
    assert run.staging.parent == d.parent and (run.staging / "artifacts" / f"{prefix}.trace" / "ab.json").exists()
    verify.write_report(run, d)
    after = _snapshot(d)
    assert json.loads(after[f"artifacts/{prefix}.trace/ab.json"])["run"] == "2"
    assert after["report.json"] != before["report.json"]
    _no_staging_left(d)
    # a run whose report is never written leaves no temporary folder either
    run = verify.run(prefix, quick=True, plugins=[name], report_dir=d)
    staging = run.staging
    del run
    assert not staging.exists() and _snapshot(d) == after


def test_a_failing_report_write_leaves_the_previous_report(plugin, tmp_path, monkeypatch):
    name, prefix, _ = plugin
    d = tmp_path / "R"
    verify.write_report(verify.run(prefix, quick=True, plugins=[name], report_dir=d), d)
    before = _snapshot(d)
    run = verify.run(prefix, quick=True, plugins=[name], report_dir=d)

    def broken(*a, **k):
        raise RuntimeError("disk full (planted)")

    monkeypatch.setattr(api.report, "write_markdown", broken)
    with pytest.raises(RuntimeError, match="planted"):
        verify.write_report(run, d)
    assert _snapshot(d) == before
    _no_staging_left(d)


def test_a_folder_that_is_not_a_report_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(registry, "run_check", lambda *a: pytest.fail("a check ran"))
    d = tmp_path / "mine"
    (d / "figs").mkdir(parents=True)
    (d / "figs" / "holiday.png").write_bytes(b"x")
    (d / "thesis.tex").write_text("x")
    before = _snapshot(d)
    assert cli.main(["verify", "nd.lambda_max", "--quick", "--report", str(d)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not a theorylab report" in err and str(d) in err
    with pytest.raises(verify.UsageError, match="not a theorylab report"):
        verify.run("nd.lambda_max", report_dir=d)
    with pytest.raises(verify.UsageError, match="not a theorylab report"):
        api.prepare_report_dir(d)
    # a report.json that is not theorylab's does not make a report either
    (d / "report.json").write_text('{"title": "quarterly numbers"}')
    before["report.json"] = (d / "report.json").read_bytes()
    with pytest.raises(verify.UsageError, match="not a theorylab report"):
        verify.run("nd.lambda_max", report_dir=d)
    assert _snapshot(d) == before and not (d / ".theorylab-report").exists()
    _no_staging_left(d)


def test_a_new_or_empty_folder_is_accepted(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    for d in (empty, tmp_path / "new" / "sub"):
        assert cli.main(["verify", "nd.lambda_max", "--quick", "--report", str(d), "--no-figs"]) == 0
        marker = json.loads((d / ".theorylab-report").read_text())
        assert marker["files"] == ["REPORT.md", "report.json"]


def test_only_files_the_package_wrote_are_ever_deleted(plugin, tmp_path, monkeypatch):
    name, prefix, _ = plugin
    d = tmp_path / "R"
    verify.write_report(verify.run(prefix, quick=True, plugins=[name], report_dir=d), d)
    ours = set(json.loads((d / ".theorylab-report").read_text())["files"])
    assert ours == {"REPORT.md", "report.json", f"figs/{prefix}.fig.png", f"figs/{prefix}.fig.pdf",
                    f"artifacts/{prefix}.trace/ab.json"}
    mine = {"notes.txt": b"n", "figs/my_sketch.png": b"s", "artifacts/my_data/x.csv": b"1,2",
            f"artifacts/{prefix}.trace/my_note.txt": b"m"}
    for rel, data in mine.items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_bytes(data)
    # a run without figures: the earlier report's figures go, the user's files stay
    verify.write_report(verify.run(prefix, quick=True, plugins=[name], report_dir=d), d, figures=False)
    snap = _snapshot(d)
    assert f"figs/{prefix}.fig.png" not in snap and f"figs/{prefix}.fig.pdf" not in snap
    assert all(snap[rel] == data for rel, data in mine.items())
    assert set(json.loads(snap[".theorylab-report"])["files"]) == ours - {f"figs/{prefix}.fig.png",
                                                                          f"figs/{prefix}.fig.pdf"}
    _images_resolve(d)
    # a file of the user's standing where the report writes is kept under another name, never overwritten
    (d / "figs" / f"{prefix}.fig.png").write_bytes(b"my version")
    verify.write_report(verify.run(prefix, quick=True, plugins=[name], report_dir=d), d)
    assert (d / "figs" / f"{prefix}.fig.png.mine").read_bytes() == b"my version"
    assert (d / "figs" / f"{prefix}.fig.png").read_bytes()[:4] == b"\x89PNG"
    assert all((d / rel).read_bytes() == data for rel, data in mine.items())
    # writing the same run's report twice keeps its artifacts
    run = verify.run(prefix, quick=True, plugins=[name], report_dir=d)
    verify.write_report(run, d, figures=False)
    verify.write_report(run, d, figures=False)
    assert (d / "artifacts" / f"{prefix}.trace" / "ab.json").exists()
    _no_staging_left(d)


def test_a_report_from_before_the_file_list(tmp_path, capsys):
    """An older report (plain-text marker, no list): only what its report.json names is the package's."""
    d = tmp_path / "R"
    (d / "figs").mkdir(parents=True)
    (d / ".theorylab-report").write_text("written by `theorylab verify --report`\n")
    (d / "report.json").write_text(json.dumps({"meta": {"figure_seconds": {"nd.old_fig": 1.0}}, "checks": [
        {"id": "nd.x", "artifacts": ["artifacts/nd.x/cex.json"]}]}))
    (d / "REPORT.md").write_text("old")
    for rel in ("figs/nd.old_fig.png", "figs/nd.old_fig.pdf", "artifacts/nd.x/cex.json", "figs/theirs.png"):
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_bytes(b"x")
    assert cli.main(["verify", "nd.lambda_max", "--quick", "--report", str(d), "--no-figs"]) == 0
    snap = _snapshot(d)
    assert "figs/nd.old_fig.png" not in snap and "artifacts/nd.x/cex.json" not in snap
    assert snap["figs/theirs.png"] == b"x" and snap["REPORT.md"] != b"old"


def test_adopted_folder_takes_a_report_beside_other_theorylab_outputs(tmp_path, capsys):
    d = tmp_path / "report"
    assert api.adopt_report_dir(d)                     # new: adopted (as the tests do for report/)
    (d / "controls_quick.md").write_text("table")
    assert cli.main(["verify", "nd.lambda_max", "--quick", "--report", str(d), "--no-figs"]) == 0
    assert (d / "controls_quick.md").read_text() == "table"
    assert json.loads((d / ".theorylab-report").read_text())["files"] == ["REPORT.md", "report.json"]
    other = tmp_path / "other"
    other.mkdir()
    (other / "x.txt").write_text("x")
    assert not api.adopt_report_dir(other) and not (other / ".theorylab-report").exists()
