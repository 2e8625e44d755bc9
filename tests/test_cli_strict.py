"""Strict input: every pattern must match, the seed must be a non-negative integer (one-line errors, exit 2,
before any work), and ``python -m theorylab`` is the ``theorylab`` command."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import verify
from verify import cli, registry

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def no_work(monkeypatch):
    monkeypatch.setattr(registry, "run_check", lambda chk, ctx: pytest.fail(f"check {chk.id} ran"))


def _one_line(err: str) -> str:
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_an_unmatched_pattern_beside_a_matching_one_is_refused(no_work, tmp_path, capsys):
    assert cli.main(["verify", "nd.*", "zz", "--quick", "--report", str(tmp_path / "R")]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "zz" in line and "nd.*" not in line and "--list" in line
    assert not (tmp_path / "R").exists()                                  # refused before any work
    assert cli.main(["verify", "nd.lambda_max", "vc.nope*", "rd.zz"]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "vc.nope*" in line and "rd.zz" in line and "nd.lambda_max" not in line
    assert cli.main(["verify", "--list", "nd", "zz"]) == 2
    assert "zz" in _one_line(capsys.readouterr().err)
    with pytest.raises(verify.UsageError, match="no check id matches zz"):
        verify.run(["nd.*", "zz"])
    with pytest.raises(verify.UsageError, match="no check id matches zz"):
        verify.list_claims(["nd", "zz"])
    with pytest.raises(verify.UsageError, match="no figure id matches zz"):
        verify.draw_figures(tmp_path / "f", ["nd.*", "zz"])
    assert cli.main(["figs", "nd.*", "zz", "--out", str(tmp_path / "f")]) == 2
    assert "zz" in _one_line(capsys.readouterr().err)


@pytest.mark.parametrize("seed", [None, "abc", "3", 1.5, -1, True])
def test_a_bad_seed_is_a_usage_error_before_any_check(no_work, seed):
    with pytest.raises(verify.UsageError, match="seed must be a non-negative integer"):
        verify.run("nd.lambda_max", quick=True, seed=seed)


def test_bad_seed_on_the_command_line_is_one_line_exit_2(no_work, capsys):
    assert cli.main(["verify", "nd.lambda_max", "--seed", "-1"]) == 2
    assert "seed must be a non-negative integer" in _one_line(capsys.readouterr().err)
    with pytest.raises(SystemExit) as exc:
        cli.main(["verify", "nd.lambda_max", "--seed", "abc"])
    assert exc.value.code == 2
    assert "--seed" in capsys.readouterr().err


def test_integer_seeds_of_any_type_are_accepted():
    run = verify.run("nd.lambda_max", quick=True, seed=np.int64(4))
    assert run.seed == 4 and type(run.seed) is int and run["nd.lambda_max"].status == "pass"


def test_python_m_theorylab_is_the_command(tmp_path, capsys):
    """Run from another folder (the installed package, not the repository's folder, is what it finds)."""
    env = dict(os.environ, MPLBACKEND="Agg")
    env.pop("PYTHONPATH", None)

    def both(*args):
        p = subprocess.run([sys.executable, "-m", "theorylab", *args], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=120)
        code = cli.main(list(args)) if args != ("--version",) else None
        return p, code, capsys.readouterr()

    p = subprocess.run([sys.executable, "-m", "theorylab", "--version"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == f"theorylab {verify.__version__}", p.stderr
    p, code, cap = both("verify", "--list", "nd.lambda_max")
    assert p.returncode == code == 0 and p.stdout == cap.out and p.stdout.startswith("nd.lambda_max")
    p, code, cap = both("verify", "zz.nothing")
    assert p.returncode == code == 2 and p.stderr == cap.err
    p = subprocess.run([sys.executable, "-m", "theorylab"], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2 and "usage: theorylab" in p.stderr
