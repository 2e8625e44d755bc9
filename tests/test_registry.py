"""The registry's own machinery: statuses, negative controls, catalog, JSON report, CLI exit codes."""
import json

import pytest

from verify import cli, registry
from verify.registry import Check, Context, Result


def make(compare, reports=False, cid="nd.markov_bound"):
    return Check(id=cid, paper="ND", equation="Eq 3", statement="s", kind="numeric", tolerance=1e-9,
                 tolerance_reason="r", negative_control="planted", compare=compare, reports=reports)


def honest(ctx, planted):
    err = 0.5 if planted else 1e-12
    return Result(measured=err, expected=0.0, holds=err <= 1e-9)


def test_pass_when_claim_holds_and_control_fails():
    out = registry.run_check(make(honest), Context())
    assert out.status == "pass" and out.negative_control_result == "failed as it should"


def test_planted_wrong_check_is_reported_as_failing():
    # a check whose comparison cannot tell the claim from a wrong one: its negative control passes
    out = registry.run_check(make(lambda ctx, planted: Result(0.0, 0.0, True)), Context())
    assert out.status == "fail" and out.negative_control_result == "PASSED"
    assert "negative control passed" in out.error


def test_raising_check_fails_with_traceback():
    def boom(ctx, planted):
        raise ZeroDivisionError("planted bug")

    out = registry.run_check(make(boom), Context())
    assert out.status == "fail" and "ZeroDivisionError" in out.error and "traceback" in out.details


def test_refuted_and_reported():
    refuted = registry.run_check(make(lambda c, p: Result(1.0, 0.0, False, finding="x")), Context())
    assert refuted.status == "refuted" and refuted.finding == "x"
    rep = registry.run_check(make(lambda c, p: Result(0.3, "rate", not p), reports=True), Context())
    assert rep.status == "reported"


def test_non_bool_holds_is_a_broken_check():
    out = registry.run_check(make(lambda c, p: Result(1.0, 0.0, "yes")), Context())
    assert out.status == "fail"


def test_catalog_has_every_claim_and_unique_ids():
    cat = registry.load_catalog()
    assert len(cat) == 45
    assert {c["paper"] for c in cat.values()} == {"ND", "VC", "FG", "RD"}
    for cid in registry.discover():
        assert cid in cat


def test_unknown_id_cannot_register():
    with pytest.raises(ValueError, match="not in the catalog"):
        registry.check("nd.no_such_claim", equation="", kind="numeric", tolerance=0, tolerance_reason="",
                       negative_control="")(honest)


def test_rng_is_deterministic_and_check_specific():
    a, b = Context(check_id="x", seed=1), Context(check_id="y", seed=1)
    assert a.rng("t").random() == Context(check_id="x", seed=1).rng("t").random()
    assert a.rng("t").random() != b.rng("t").random()


def test_cli_json_and_exit_code(tmp_path, monkeypatch, capsys):
    out = tmp_path / "r.json"
    assert cli.main(["verify", "nd.lambda_max", "--quick", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    (c,) = data["checks"]
    assert c["id"] == "nd.lambda_max" and c["status"] == "pass"
    assert c["negative_control"] == "failed as it should"
    assert set(data["summary"]) == {"pass", "refuted", "reported", "fail", "missing"}
    for key in ("paper", "equation", "kind", "measured", "expected", "tolerance", "seconds", "erratum"):
        assert key in c
    # a planted broken check makes the whole run exit 1
    broken = make(lambda ctx, planted: Result(0.0, 0.0, True), cid="nd.lambda_max")
    monkeypatch.setattr(registry, "discover", lambda: {"nd.lambda_max": broken})
    assert cli.main(["verify", "nd.lambda_max", "--quick", "--json", str(out)]) == 1
    assert json.loads(out.read_text())["checks"][0]["negative_control"] == "PASSED"


def test_cli_list_shows_every_catalog_id(capsys):
    assert cli.main(["verify", "--list"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 45
    assert all(("implemented" in ln) or ("missing" in ln) for ln in lines)
    assert any(ln.startswith("nd.floor_closed_form") and "implemented" in ln for ln in lines)


def test_cli_unknown_pattern(capsys):
    assert cli.main(["verify", "zz.nothing"]) == 2


def test_report_markdown_written(tmp_path):
    assert cli.main(["verify", "nd.lambda_max", "--quick", "--report", str(tmp_path), "--no-figs"]) == 0
    md = (tmp_path / "REPORT.md").read_text()
    assert "nd.lambda_max" in md and "failed as it should" in md
    assert (tmp_path / "report.json").exists()


def test_broken_check_module_does_not_hide_the_others(tmp_path, monkeypatch):
    import sys

    import verify.checks as pkg

    bad = tmp_path / "zz_broken.py"
    bad.write_text("raise RuntimeError('planted import error')\n")
    monkeypatch.setattr(pkg, "__path__", list(pkg.__path__) + [str(tmp_path)])
    try:
        checks = registry.discover()
        assert "zz_broken" in registry.IMPORT_ERRORS and "planted import error" in registry.IMPORT_ERRORS["zz_broken"]
        assert "nd.lambda_max" in checks
    finally:
        registry.IMPORT_ERRORS.pop("zz_broken", None)
        sys.modules.pop("verify.checks.zz_broken", None)
