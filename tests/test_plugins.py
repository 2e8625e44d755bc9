"""Checks, claims and figures from outside the package: --plugins MODULE, a CLAIMS dict, entry points."""
from __future__ import annotations

import json
import sys
import textwrap
import uuid

import pytest

import verify
from tests.helpers import isolated_registry
from verify import cli, plugins, registry

PLUGIN = '''
import numpy as np

from paper_figs.registry import figure
from verify import Result, check, register_claim

register_claim("{p}.trace_identity", paper="MY", kind="numeric", claim="tr(AB) = tr(BA) for square A, B")


@check("{p}.trace_identity", equation="Eq 1", kind="numeric", tolerance=1e-12,
       tolerance_reason="float64 sums of 36 products agree to ~1e-15 relative",
       negative_control="tr(AB) = tr(A)tr(B), the product-of-traces slip")
def trace_identity(ctx, planted):
    a, b = ctx.rng("ab").standard_normal((2, 6, 6))
    lhs = np.trace(a @ b)
    rhs = np.trace(a) * np.trace(b) if planted else np.trace(b @ a)
    err = abs(lhs - rhs) / max(abs(lhs), 1.0)
    return Result(measured=err, expected="<= 1e-12", holds=bool(err <= 1e-12), miss=err / 1e-12)


@figure("{p}.trace_fig", answers="MY Fig 1", caption="a plugin's figure", checks=("{p}.trace_identity",))
def draw(quick):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    return fig
'''

CLAIMS_PLUGIN = '''
from verify import Result, check

CLAIMS = {{"{p}.det_product": {{"paper": "MY", "kind": "numeric", "claim": "det(AB) = det(A) det(B)"}}}}


@check("{p}.det_product", equation="Eq 2", kind="numeric", tolerance=1e-10, tolerance_reason="LU in float64",
       negative_control="det(A+B) = det(A) + det(B), additivity assumed")
def det_product(ctx, planted):
    import numpy as np

    a, b = ctx.rng("ab").standard_normal((2, 4, 4))
    lhs = np.linalg.det(a + b) if planted else np.linalg.det(a @ b)
    rhs = np.linalg.det(a) + np.linalg.det(b) if planted else np.linalg.det(a) * np.linalg.det(b)
    err = abs(lhs - rhs) / max(abs(rhs), 1.0)
    return Result(measured=err, expected="<= 1e-10", holds=bool(err <= 1e-10), miss=err / 1e-10)
'''


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """A plugin module written to a fresh folder; yields (module name, id prefix, folder)."""
    prefix = f"my{uuid.uuid4().hex[:6]}"
    name = f"{prefix}_checks"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(PLUGIN.format(p=prefix)))
    monkeypatch.setattr(sys, "path", list(sys.path))
    with isolated_registry(name, prefix):
        yield name, prefix, tmp_path


def test_plugin_from_the_current_folder_joins_list_run_and_report(plugin, monkeypatch, capsys, tmp_path):
    name, prefix, folder = plugin
    monkeypatch.chdir(folder)
    assert cli.main(["verify", "--plugins", name, "--list", prefix]) == 0
    (line,) = capsys.readouterr().out.strip().splitlines()
    assert line.startswith(f"{prefix}.trace_identity") and "implemented" in line
    out = tmp_path / "report"
    assert cli.main(["verify", "--plugins", name, prefix, "--quick", "--report", str(out)]) == 0
    data = json.loads((out / "report.json").read_text())
    (c,) = data["checks"]
    assert c["id"] == f"{prefix}.trace_identity" and c["paper"] == "MY" and c["status"] == "pass"
    assert c["negative_control"] == "failed as it should" and c["control_miss"] > 1
    assert name in data["meta"]["plugins"]
    md = (out / "REPORT.md").read_text()
    assert f"`{prefix}.trace_identity` — pass" in md and "product-of-traces slip" in md
    assert (out / "figs" / f"{prefix}.trace_fig.png").exists()          # the plugin's figure, embedded
    assert f"figs/{prefix}.trace_fig.png" in md


def test_claims_dict_and_the_python_api(tmp_path, monkeypatch):
    prefix = f"my{uuid.uuid4().hex[:6]}"
    name = f"{prefix}_claims"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(CLAIMS_PLUGIN.format(p=prefix)))
    monkeypatch.syspath_prepend(str(tmp_path))
    with isolated_registry(name):
        (entry,) = verify.list_claims(prefix, plugins=[name])
        assert entry["implemented"] and entry["source"] == "plugin" and entry["claim"].startswith("det(AB)")
        run = verify.run(prefix, quick=True, plugins=[name])
        o = run[f"{prefix}.det_product"]
        assert o.status == "pass" and o.miss <= 1 and o.control_miss > 1
    assert f"{prefix}.det_product" not in registry.load_catalog()           # isolated: gone afterwards


def _fake_distribution(site, dist, module, body):
    info = site / f"{dist}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{plugins.ENTRY_POINT_GROUP}]\n{module} = {module}\n")
    (site / f"{module}.py").write_text(body)


def test_entry_point_of_an_installed_distribution(tmp_path, monkeypatch, capsys):
    prefix = f"my{uuid.uuid4().hex[:6]}"
    module = f"{prefix}_ep"
    _fake_distribution(tmp_path / "site", f"fake-{prefix}", module, textwrap.dedent(PLUGIN.format(p=prefix)))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    with isolated_registry(module):
        assert cli.main(["verify", "--list", prefix]) == 0                   # no --plugins: found by entry point
        out = capsys.readouterr().out
        assert f"{prefix}.trace_identity" in out and "implemented" in out
        assert plugins.LOADED[module].startswith("entry point")


def test_broken_entry_point_is_reported_and_fails_the_run(tmp_path, monkeypatch, capsys):
    prefix = f"my{uuid.uuid4().hex[:6]}"
    module = f"{prefix}_bad"
    _fake_distribution(tmp_path / "site", f"bad-{prefix}", module, "raise RuntimeError('planted plugin bug')\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    with isolated_registry(module):
        assert cli.main(["verify", "nd.lambda_max", "--quick"]) == 1
        err = capsys.readouterr().err
        assert "planted plugin bug" in err and f"entry point {module}" in err and "Traceback" not in err


def test_missing_or_broken_plugin_module_is_one_line_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.chdir(tmp_path)
    with isolated_registry("zz_broken_plugin", "zz_needs_dep"):
        assert cli.main(["verify", "--plugins", "zz_no_such_plugin", "nd.lambda_max"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "zz_no_such_plugin" in err and "not found" in err
        (tmp_path / "zz_needs_dep.py").write_text("import zz_needs\n")      # its own import is missing
        assert cli.main(["verify", "--plugins", "zz_needs_dep", "nd.lambda_max"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "does not import" in err and "zz_needs" in err
        (tmp_path / "zz_broken_plugin.py").write_text("import numpy\nraise RuntimeError('planted')\n")
        assert cli.main(["verify", "--plugins", "zz_broken_plugin", "nd.lambda_max"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "zz_broken_plugin" in err and "planted" in err


def test_register_claim_rejects_bad_entries():
    with isolated_registry():
        with pytest.raises(ValueError, match="prefix.name"):
            registry.register_claim("NoDot", paper="MY", kind="numeric", claim="x")
        with pytest.raises(ValueError, match="built-in"):
            registry.register_claim("nd.lambda_max", paper="MY", kind="numeric", claim="x")
        with pytest.raises(ValueError, match="kind"):
            registry.register_claim("my.a", paper="MY", kind="proof", claim="x")
        with pytest.raises(ValueError, match="claim"):
            registry.register_claim("my.a", paper="MY", kind="numeric", claim=" ")
        registry.register_claim("my.a", paper="MY", kind="numeric", claim="x")
        registry.register_claim("my.a", paper="MY", kind="numeric", claim="x")        # same again: harmless
        with pytest.raises(ValueError, match="already declared"):
            registry.register_claim("my.a", paper="MY", kind="numeric", claim="y")
        with pytest.raises(ValueError, match="register_claim"):
            registry.check("my.undeclared", equation="", kind="numeric", tolerance=0, tolerance_reason="",
                           negative_control="")(lambda ctx, planted: None)


HIJACK = '''
from verify import Result, check


@check("nd.lambda_max", equation="Eq 1", kind="numeric", tolerance=1e-12, tolerance_reason="-",
       negative_control="-")
def impostor(ctx, planted):
    return Result(measured=0.0, expected="<= 1e-12", holds=not planted, miss=0.0 if not planted else 2.0)
'''


def _fresh_cli(args, cwd, pythonpath=()):
    """The command in a fresh interpreter: the plugin loads before the built-in check modules import."""
    import os
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=os.pathsep.join([*map(str, pythonpath), str(root)]))
    return subprocess.run([sys.executable, "-m", "theorylab", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_a_plugin_cannot_replace_a_built_in_check(tmp_path, capsys):
    """--plugins: refused in one line naming the plugin (exit 2); as an entry point: the run goes on with the
    real built-in check, nd.py imports, and the error names the entry point (exit 1)."""
    (tmp_path / "zz_hijack.py").write_text(textwrap.dedent(HIJACK))
    p = _fresh_cli(["verify", "--plugins", "zz_hijack", "nd.lambda_max", "--quick"], tmp_path)
    err = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert p.returncode == 2 and len(err) == 1, p.stderr
    assert "zz_hijack" in err[0] and "nd.lambda_max" in err[0] and "built-in" in err[0] and "nd.py" not in err[0]
    module = f"zz_hijack_ep{uuid.uuid4().hex[:6]}"
    _fake_distribution(tmp_path / "site", "fake-hijack", module, textwrap.dedent(HIJACK))
    p = _fresh_cli(["verify", "nd.lambda_max", "--quick"], tmp_path, [tmp_path / "site"])
    assert p.returncode == 1, p.stderr
    assert f"entry point {module}" in p.stderr and "built-in" in p.stderr and "nd.py" not in p.stderr
    (row,) = [ln for ln in p.stdout.splitlines() if ln.startswith("nd.lambda_max")]
    assert " pass" in row and "1 pass, 0 refuted, 0 reported, 0 fail, 0 missing" in p.stdout
    # in process: the registration itself is refused, naming the module it comes from
    with isolated_registry():
        with pytest.raises(ValueError, match=r"test_plugins: check 'nd\.lambda_max' is a built-in id"):
            registry.check("nd.lambda_max", equation="", kind="numeric", tolerance=0, tolerance_reason="",
                           negative_control="")(lambda ctx, planted: None)
        assert registry.discover()["nd.lambda_max"].compare.__module__ == "verify.checks.nd.closed_forms"


def test_sim_and_sweep_take_plugins_and_refuse_a_missing_one_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.toml").write_text('experiment = "toy"\n[grid]\nx = [1.0]\n')
    for args in (["sweep", "c.toml", "--plugins", "zz_missing_plugin"],
                 ["sim", "multiview", "--config", "c.toml", "--plugins", "zz_missing_plugin", "--out", "o"]):
        assert cli.main(args) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "zz_missing_plugin" in err and "not found" in err
    assert not (tmp_path / "o").exists()
