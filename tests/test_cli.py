"""The command line behaves: bad input refused before any work, one-line errors, exit codes, clean report folders."""
from __future__ import annotations

import json
import os
import re
import stat

import pytest

from tests.helpers import isolated_registry
from verify import api, cli, registry, report_dir


@pytest.fixture
def no_work(monkeypatch):
    """Any check that runs is a test failure: the command must stop before."""
    def ran(chk, ctx):
        raise AssertionError(f"check {chk.id} ran although the input was bad")

    monkeypatch.setattr(registry, "run_check", ran)


def _one_line(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, f"expected a one-line error, got:\n{err}"
    assert "Traceback" not in err
    return lines[0]


def test_version(capsys):
    import verify

    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"theorylab {verify.__version__}"


def test_list_honours_the_pattern(capsys):
    assert cli.main(["verify", "--list", "nd.lambda"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [ln.split()[0] for ln in lines] == ["nd.lambda_max"]
    assert cli.main(["verify", "--list", "vc.*", "rd"]) == 0
    ids = [ln.split()[0] for ln in capsys.readouterr().out.strip().splitlines()]
    cat = registry.load_catalog()
    assert ids == [i for i in cat if i.startswith(("vc.", "rd."))]
    assert cli.main(["verify", "--list", "zz"]) == 2


def test_unwritable_report_folder_is_refused_before_any_check(tmp_path, no_work, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    assert cli.main(["verify", "nd.lambda_max", "--report", str(blocker / "sub")]) == 2
    assert "--report" in _one_line(capsys.readouterr().err)
    assert cli.main(["verify", "nd.lambda_max", "--report", str(blocker)]) == 2
    assert "not a folder" in _one_line(capsys.readouterr().err)
    assert cli.main(["verify", "nd.lambda_max", "--json", str(tmp_path)]) == 2     # --json naming a folder
    assert "--json" in _one_line(capsys.readouterr().err)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_report_folder_is_refused(tmp_path, no_work, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        assert cli.main(["verify", "nd.lambda_max", "--report", str(ro)]) == 2
        assert "cannot write" in _one_line(capsys.readouterr().err)
    finally:
        ro.chmod(0o700)


def test_missing_device_is_refused_before_any_check(no_work, capsys):
    import torch

    if not torch.cuda.is_available():
        assert cli.main(["verify", "nd.lambda_max", "--device", "cuda"]) == 2
        assert "CUDA is not available" in _one_line(capsys.readouterr().err)
    assert cli.main(["verify", "nd.lambda_max", "--device", "warp-drive"]) == 2
    assert "warp-drive" in _one_line(capsys.readouterr().err)
    assert cli.main(["sim", "multiview", "--config", "x.toml", "--device", "warp-drive"]) == 2
    _one_line(capsys.readouterr().err)


@pytest.mark.cuda
def test_cuda_device_is_accepted():
    assert api.check_device("cuda") == "cuda"


def test_unexpected_error_is_one_line_exit_2_and_v_shows_the_traceback(monkeypatch, capsys):
    def boom(*a, **k):
        raise RuntimeError("planted internal error")

    monkeypatch.setattr(api, "run", boom)
    assert cli.main(["verify", "nd.lambda_max"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "RuntimeError: planted internal error" in line and "-v" in line
    for argv in (["-v", "verify", "nd.lambda_max"], ["verify", "nd.lambda_max", "-v"]):
        assert cli.main(argv) == 2
        assert "Traceback" in capsys.readouterr().err

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(api, "run", interrupted)
    assert cli.main(["verify", "nd.lambda_max"]) == 130


def test_figs_exit_status(tmp_path, capsys):
    from paper_figs.registry import figure

    with isolated_registry():
        @figure("zz.good_fig", answers="test", caption="draws")
        def good(quick):
            import matplotlib.pyplot as plt

            return plt.figure()

        @figure("zz.bad_fig", answers="test", caption="raises")
        def bad(quick):
            raise ZeroDivisionError("planted figure bug")

        assert cli.main(["figs", "zz.good_fig", "--out", str(tmp_path)]) == 0
        assert (tmp_path / "zz.good_fig.png").exists() and (tmp_path / "zz.good_fig.pdf").exists()
        capsys.readouterr()
        assert cli.main(["figs", "zz.*", "--out", str(tmp_path)]) == 1
        cap = capsys.readouterr()
        assert "zz.bad_fig failed: ZeroDivisionError: planted figure bug" in cap.err and "1 failed" in cap.out
        assert cli.main(["figs", "zz.nothing_like_it", "--out", str(tmp_path)]) == 2


def test_reused_report_folder_keeps_no_stale_files_and_deletes_none_of_yours(tmp_path, capsys):
    d = tmp_path / "report"
    assert cli.main(["verify", "nd.lambda_max", "--quick", "--report", str(d), "--no-figs"]) == 0
    marker = json.loads((d / api.REPORT_MARKER).read_text())
    (d / "figs").mkdir(exist_ok=True)                                   # an earlier run's figure, on its list
    (d / "figs" / "old_figure.png").write_bytes(b"stale")
    report_dir._write_marker(d, marker["files"] + ["figs/old_figure.png"])
    (d / "figs" / "mine.png").write_bytes(b"mine")                      # the user's own files
    (d / "artifacts" / "old.check").mkdir(parents=True)
    (d / "notes.txt").write_text("mine")
    assert cli.main(["verify", "nd.lambda_max", "--quick", "--report", str(d), "--no-figs"]) == 0
    assert not (d / "figs" / "old_figure.png").exists()
    assert (d / "notes.txt").read_text() == "mine" and (d / "figs" / "mine.png").read_bytes() == b"mine"
    assert (d / "artifacts" / "old.check").is_dir()                     # nothing else is touched
    # a folder theorylab did not write is refused, and loses nothing
    other = tmp_path / "other"
    (other / "figs").mkdir(parents=True)
    (other / "figs" / "theirs.png").write_bytes(b"x")
    assert cli.main(["verify", "nd.lambda_max", "--quick", "--report", str(other)]) == 2
    assert "not a theorylab report" in _one_line(capsys.readouterr().err)
    assert [p.name for p in other.rglob("*")] == ["figs", "theirs.png"]


def test_report_files_are_readable_by_collaborators(tmp_path, capsys):
    old = os.umask(0o022)
    try:
        assert cli.main(["verify", "nd.lambda_max", "--quick", "--report", str(tmp_path), "--no-figs",
                         "--json", str(tmp_path / "extra.json")]) == 0
    finally:
        os.umask(old)
    for name in ("REPORT.md", "report.json", "extra.json"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o644, name


def test_one_run_time_in_summary_json_and_report(tmp_path, capsys):
    assert cli.main(["verify", "nd.lambda_max", "--quick", "--report", str(tmp_path), "--no-figs"]) == 0
    printed = re.search(r"\((\d+ s in all[^)]*)\)", capsys.readouterr().out).group(1)
    assert printed in (tmp_path / "REPORT.md").read_text()
    meta = json.loads((tmp_path / "report.json").read_text())["meta"]
    assert printed.startswith(f"{meta['seconds']:.0f} s in all")
    assert meta["seconds"] == pytest.approx(meta["check_seconds"] + meta["figures_total_seconds"])


def test_sim_prints_a_readable_table():
    from verify.commands.sim import summary_table

    summary = {f"{lab}_{k}": 0.0123456 for lab in ("coarse", "fine")
               for k in ("train_loss", "easy_err", "hard_err", "growth_ratio", "response_common_lucky")}
    summary.update(fine_fine_easy_err=0.5, hard_gap=-0.25)
    text = summary_table(summary)
    lines = text.splitlines()
    assert max(map(len, lines)) < 80 and len(lines) >= 8
    assert lines[0].split() == ["final", "coarse", "fine"]
    assert any(ln.split() == ["hard_err", "0.01235", "0.01235"] for ln in lines)
    assert any(ln.split() == ["hard_gap", "-0.25"] for ln in lines)


def test_verify_exits_1_when_a_figure_fails(tmp_path, capsys):
    from paper_figs.registry import figure

    with isolated_registry():
        @figure("zz.broken_for_check", answers="test", caption="raises", checks=("nd.lambda_max",))
        def bad(quick):
            raise ValueError("planted figure bug")

        assert cli.main(["verify", "nd.lambda_max", "--quick", "--report", str(tmp_path)]) == 1
        assert "figure zz.broken_for_check failed: ValueError: planted figure bug" in capsys.readouterr().err
        assert "figure `zz.broken_for_check` failed" in (tmp_path / "REPORT.md").read_text()
        meta = json.loads((tmp_path / "report.json").read_text())["meta"]
        assert "zz.broken_for_check" in meta["figure_errors"]
