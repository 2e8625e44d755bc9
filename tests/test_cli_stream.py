"""`verify` prints each check's row as it finishes (-q: none), `--json -` is newline-delimited JSON on stdout,
and `verify --list --json -` gives the catalog entries as NDJSON. Tiny plugin checks keep it fast."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid

import pytest

import verify
from tests.helpers import isolated_registry
from verify import cli, registry

PLUGIN = '''
import numpy as np

from verify import Result, check, register_claim

register_claim("{p}.trace", paper="MY", kind="numeric", claim="tr(AB) = tr(BA)")
register_claim("{p}.det", paper="MY", kind="numeric", claim="det(AB) = det(A) det(B)")
register_claim("{p}.broken", paper="MY", kind="numeric", claim="a check that raises")


@check("{p}.trace", equation="Eq 1", kind="numeric", tolerance=1e-12, tolerance_reason="float64",
       negative_control="tr(AB) = tr(A)tr(B)")
def trace(ctx, planted):
    a, b = ctx.rng("ab").standard_normal((2, 5, 5))
    rhs = np.trace(a) * np.trace(b) if planted else np.trace(b @ a)
    err = abs(np.trace(a @ b) - rhs) / max(abs(rhs), 1.0)
    return Result(measured=err, expected="<= 1e-12", holds=bool(err <= 1e-12), miss=err / 1e-12)


@check("{p}.det", equation="Eq 2", kind="numeric", tolerance=1e-10, tolerance_reason="LU in float64",
       negative_control="det(A+B) = det(A) + det(B)")
def det(ctx, planted):
    a, b = ctx.rng("ab").standard_normal((2, 4, 4))
    lhs = np.linalg.det(a + b) if planted else np.linalg.det(a @ b)
    rhs = np.linalg.det(a) + np.linalg.det(b) if planted else np.linalg.det(a) * np.linalg.det(b)
    err = abs(lhs - rhs) / max(abs(rhs), 1.0)
    return Result(measured=err, expected="<= 1e-10", holds=bool(err <= 1e-10), miss=err / 1e-10)


@check("{p}.broken", equation="Eq 3", kind="numeric", tolerance=1e-10, tolerance_reason="-",
       negative_control="-")
def broken(ctx, planted):
    raise ZeroDivisionError("planted check bug")
'''


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """A plugin module with two quick passing checks and a broken one; yields (module, [ids that pass], broken id)."""
    prefix = f"st{uuid.uuid4().hex[:6]}"
    name = f"{prefix}_checks"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(PLUGIN.format(p=prefix)))
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.chdir(tmp_path)
    with isolated_registry(name, prefix):
        yield name, [f"{prefix}.trace", f"{prefix}.det"], f"{prefix}.broken"


@pytest.fixture
def stdout_at_each_start(monkeypatch, capsys):
    """What stdout held (all of it so far) when each check started."""
    seen, printed = [], []
    real = registry.run_check

    def spy(chk, ctx):
        printed.append(capsys.readouterr().out)
        seen.append("".join(printed))
        return real(chk, ctx)

    monkeypatch.setattr(registry, "run_check", spy)
    return seen, printed


def _rows(out: str, ids) -> list[str]:
    return [ln for ln in out.splitlines() if ln.split() and ln.split()[0] in ids]


def test_rows_stream_as_each_check_finishes_then_the_summary(plugin, stdout_at_each_start, capsys):
    name, ids, _ = plugin
    seen, printed = stdout_at_each_start
    assert cli.main(["verify", "--plugins", name, *ids, "--quick"]) == 0
    out = "".join(printed) + capsys.readouterr().out
    assert _rows(seen[0], ids) == []                                   # nothing before the first check
    (row,) = _rows(seen[1], ids)                                       # the first row, before the second check
    assert row.split()[0] == ids[0] and " pass" in row
    rows = _rows(out, ids)                                             # each row once: no table repeated at the end
    assert [r.split()[0] for r in rows] == ids and all(" pass" in r for r in rows)
    assert out.splitlines()[0].split()[:3] == ["id", "kind", "measured"]
    assert out.strip().splitlines()[-1].startswith("2 pass, 0 refuted, 0 reported, 0 fail, 0 missing")


def test_the_api_calls_on_outcome_as_each_check_finishes(plugin, monkeypatch):
    name, ids, _ = plugin
    got, started = [], []
    real = registry.run_check

    def spy(chk, ctx):
        started.append((chk.id, [o.id for o in got]))
        return real(chk, ctx)

    monkeypatch.setattr(registry, "run_check", spy)
    run = verify.run(ids, quick=True, plugins=[name], on_outcome=got.append)
    assert got == run.outcomes and [o.id for o in got] == ids
    assert started == [(ids[0], []), (ids[1], [ids[0]])]


def test_quiet_prints_only_the_summary_and_the_errors(plugin, capsys):
    name, ids, bad = plugin
    assert cli.main(["verify", "--plugins", name, *ids, "--quick", "-q"]) == 0
    (line,) = [ln for ln in capsys.readouterr().out.splitlines() if ln.strip()]
    assert line.startswith("2 pass, 0 refuted")
    assert cli.main(["verify", "--plugins", name, ids[0], bad, "--quick", "--quiet"]) == 1
    cap = capsys.readouterr()
    (line,) = [ln for ln in cap.out.splitlines() if ln.strip()]
    assert line.startswith("1 pass, 0 refuted, 0 reported, 1 fail")
    assert f"FAIL {bad}: ZeroDivisionError: planted check bug" in cap.err


def test_json_dash_is_ndjson_on_stdout_and_nothing_else(plugin, stdout_at_each_start, tmp_path, capsys):
    name, ids, bad = plugin
    seen, printed = stdout_at_each_start
    assert cli.main(["verify", "--plugins", name, *ids, "--quick", "--json", "-"]) == 0
    cap = capsys.readouterr()
    lines = ("".join(printed) + cap.out).splitlines()
    objs = [json.loads(ln) for ln in lines]                            # every stdout line is one JSON object
    assert [o["id"] for o in objs[:-1]] == ids and all(o["status"] == "pass" for o in objs[:-1])
    assert json.loads(seen[1].splitlines()[0])["id"] == ids[0]         # the first object came before check 2
    assert objs[-1]["summary"] == {"pass": 2, "refuted": 0, "reported": 0, "fail": 0, "missing": 0,
                                  "skipped": 0}
    assert objs[-1]["meta"]["quick"] is True
    assert "2 pass, 0 refuted" in cap.err                              # the human summary goes to stderr
    assert not (tmp_path / "-").exists()
    # the fields of the checks' entries in report.json (--json PATH keeps writing the file), plus the typed
    # display of measured / expected that every record has whatever the check's measured value is
    assert cli.main(["verify", "--plugins", name, *ids, "--quick", "--json", str(tmp_path / "r.json")]) == 0
    capsys.readouterr()
    data = json.loads((tmp_path / "r.json").read_text())
    typed = {"measured_type", "measured_text", "expected_text"}
    assert [set(c) | typed for c in data["checks"]] == [set(o) for o in objs[:-1]]
    assert all(o["measured_type"] == "number" and o["measured_text"] for o in objs[:-1])
    assert [c["measured"] for c in data["checks"]] == [o["measured"] for o in objs[:-1]]
    assert set(objs[-1]) == {"meta", "summary"} and set(data["meta"]) == set(objs[-1]["meta"])
    # a failing check: its object says so, the error goes to stderr, exit 1
    assert cli.main(["verify", "--plugins", name, bad, "--quick", "--json", "-"]) == 1
    cap = capsys.readouterr()
    first, last = [json.loads(ln) for ln in cap.out.splitlines()]
    assert first["status"] == "fail" and "planted check bug" in first["error"] and last["summary"]["fail"] == 1
    assert f"FAIL {bad}" in cap.err


def test_json_dash_in_a_real_process_keeps_stdout_pure(plugin, tmp_path):
    name, ids, _ = plugin
    env = dict(os.environ, MPLBACKEND="Agg")
    env.pop("PYTHONPATH", None)
    p = subprocess.run([sys.executable, "-m", "theorylab", "verify", "--plugins", name, *ids, "--quick", "--json",
                        "-"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    objs = [json.loads(ln) for ln in p.stdout.splitlines()]
    assert [o.get("id") for o in objs] == [*ids, None] and objs[-1]["summary"]["pass"] == 2
    assert "2 pass, 0 refuted" in p.stderr and not (tmp_path / "-").exists()


def test_list_json_dash_is_the_catalog_as_ndjson(tmp_path, capsys):
    assert cli.main(["verify", "--list", "nd.lambda", "vc", "--json", "-"]) == 0
    objs = [json.loads(ln) for ln in capsys.readouterr().out.splitlines()]
    assert objs == verify.list_claims(["nd.lambda", "vc"])
    assert objs[0]["id"] == "nd.lambda_max" and objs[0]["implemented"] is True
    # --list --json PATH writes the same lines to the file, and prints the list as usual
    assert cli.main(["verify", "--list", "nd.lambda", "vc", "--json", str(tmp_path / "cat.ndjson")]) == 0
    assert capsys.readouterr().out.startswith("nd.lambda_max")
    text = (tmp_path / "cat.ndjson").read_text()
    assert [json.loads(ln) for ln in text.splitlines()] == objs


@pytest.mark.parametrize("value, kind, text", [
    (0.0123456, "number", "0.01235"), (float("nan"), "number", "nan"), (3, "integer", "3"), (True, "bool", "True"),
    ([1.0, 2.5], "list", "[1, 2.5]"), ({"a": 1.5}, "object", None), ("12/16", "text", "12/16"), (None, "none", "—"),
])
def test_every_stream_record_has_one_schema_for_measured(value, kind, text):
    """Whatever a check measures (a float, an int, a list, a dict, text), its --json - record carries the JSON type
    and the display string beside the raw value; a planted wrong type is told apart."""
    import numpy as np

    o = registry.Outcome(id="x.y", paper="X", equation="Eq 1", kind="numeric", statement="s", status="pass",
                         measured=value, expected="<= 1")
    rec = cli.stream_record(o)
    assert rec["measured_type"] == kind and rec["expected_text"] == "<= 1"
    assert isinstance(rec["measured_text"], str) and (text is None or rec["measured_text"] == text)
    json.dumps(rec)
    assert cli.measured_type(np.float32(1.5)) == "number" and cli.measured_type(np.int64(2)) == "integer"
    assert cli.measured_type(np.arange(3)) == "list" and cli.measured_type(1.5) != "integer"
