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
    def refuted_claim(c, p, positive=False):
        return Result(1.0, 0.0, positive, finding="x")

    chk = make(refuted_claim)
    chk.positive_control = "data where the claim holds"
    refuted = registry.run_check(chk, Context())
    assert refuted.status == "refuted" and refuted.finding == "x"
    # a refutation that does not say what holds instead is a broken comparison (a library bug behind a positive
    # control that never runs the library reads exactly like this)
    silent = make(lambda c, p, positive=False: Result(1.0, 0.0, positive))
    silent.positive_control = "data where the claim holds"
    out = registry.run_check(silent, Context())
    assert out.status == "fail" and "without a finding" in out.error
    rep = make(lambda c, p, positive=False: Result(0.3, "rate", not p), reports=True)
    rep.positive_control = "x"
    assert registry.run_check(rep, Context()).status == "reported"


def test_a_claim_missed_outside_the_papers_stated_conditions_is_a_finding_not_a_refutation():
    """The regime rule: a run that does not hold while a condition the paper states for the claim fails in the
    setup (Result.regime) is undecided (reported), naming the condition; with every condition met it refutes."""
    def run(conds):
        def cmp(c, p, positive=False):
            return Result(1.0, 0.0, positive, finding="x", regime=conds)
        chk = make(cmp)
        chk.positive_control = "data where the claim holds"
        return registry.run_check(chk, Context())

    met = {"images per subclass not too limited (FG App A.1)": {"measured": 500, "holds": True}}
    assert run(met).status == "refuted"
    unmet = {**met, "fine labels well aligned (FG App A.1)": {"measured": "52 of 105 classes lack it",
                                                               "holds": False}}
    out = run(unmet)
    assert out.status == "reported" and "outside the paper's stated conditions" in out.finding
    assert "well aligned" in out.finding and "52 of 105" in out.finding
    bad = run({"x": {"measured": 1}})  # a condition without its verdict is a broken check, not a silent pass
    assert bad.status == "fail" and "Result.regime" in bad.error


def test_non_bool_holds_is_a_broken_check():
    out = registry.run_check(make(lambda c, p: Result(1.0, 0.0, "yes")), Context())
    assert out.status == "fail"


def test_catalog_has_every_claim_and_unique_ids():
    cat = registry.load_catalog()
    assert len(cat) == 48  # the papers' 48 claims (tools/gen_catalog.py writes the catalog)
    assert {c["paper"] for c in cat.values()} == {"ND", "VC", "FG", "RD"}
    for cid in registry.discover():
        assert cid in cat


def test_catalog_paper_titles_are_the_papers_titles():
    """The catalog names each paper by its title alone (no internal file or seed tags)."""
    import tomllib

    with open(registry.CATALOG_PATH, "rb") as fh:
        papers = tomllib.load(fh)["papers"]
    assert papers["ND"]["title"] == "Neural Dependencies Emerging from Learning Massive Categories"
    assert papers["RD"]["title"] == "Rank Diminishing in Deep Neural Networks"
    assert not [p["title"] for p in papers.values() if "seed" in p["title"] or "(" in p["title"]]


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
    assert set(data["summary"]) == {"pass", "refuted", "reported", "fail", "missing", "skipped"}
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
    assert len(lines) == 48
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


def _pos(ctx, planted, positive=False):
    """A refuted claim whose comparison says 'holds' on data where the claim holds by construction."""
    err = 0.5 if (planted or not positive) else 1e-12
    return Result(measured=err, expected=0.0, holds=err <= 1e-9, miss=err / 1e-9,
                  finding=None if err <= 1e-9 else "measured 0.5 where the claim says 0")


def test_refuted_needs_a_positive_control_that_holds():
    chk = make(_pos)
    chk.positive_control = "planted-exact data"
    out = registry.run_check(chk, Context())
    assert out.status == "refuted" and out.positive_control_result == "held as it should"
    assert out.control_miss == pytest.approx(5e8)
    # the same refutation without a positive control is a broken check
    bare = make(lambda c, p: Result(1.0, 0.0, False))
    out = registry.run_check(bare, Context())
    assert out.status == "fail" and "positive control" in out.error


def test_failing_positive_control_makes_the_check_fail():
    def never(ctx, planted, positive=False):
        return Result(measured=1.0, expected=0.0, holds=False, miss=2.0)

    chk = make(never)
    chk.positive_control = "x"
    out = registry.run_check(chk, Context())
    assert out.status == "fail" and out.positive_control_result == "FAILED"


def test_positive_control_requires_the_keyword():
    with pytest.raises(ValueError, match="positive"):
        registry.check("nd.lambda_max", equation="", kind="numeric", tolerance=0, tolerance_reason="",
                       negative_control="", positive_control="x")(honest)


def test_miss_must_agree_with_holds():
    out = registry.run_check(make(lambda c, p: Result(0.0, 0.0, not p, miss=5.0)), Context())
    assert out.status == "fail" and "contradicts" in out.error


def test_sim_checks_run_three_seeds_in_full_mode_and_report_mixed_seeds():
    seen = []

    def by_seed(ctx, planted, positive=False):
        seen.append((ctx.seed, planted, positive))
        ok = positive or (not planted and ctx.seed != 11)
        return Result(measured=ctx.seed, expected=0, holds=ok)

    chk = make(by_seed)
    chk.kind, chk.positive_control = "sim", "x"
    out = registry.run_check(chk, Context(seed=10))
    assert [s for s, p, q in seen if not p and not q] == [10, 11, 12]
    assert out.status == "reported" and out.seeds_summary == "2/3" and "2 of 3 seeds" in out.finding
    seen.clear()
    out = registry.run_check(chk, Context(seed=10, quick=True))
    assert [s for s, p, q in seen if not p and not q] == [10] and out.status == "pass"


@pytest.mark.slow
def test_every_negative_control_misses_by_a_recorded_amount(tmp_path):
    """Run every registered check's negative control (quick mode) and record by how much it misses.

    Each control must return a numeric ``miss`` > 1 (finite, or inf for an exact comparison). The table,
    sorted by miss with its class (near miss ≤ 10, clear ≤ 10³, far > 10³), goes to
    ``report/controls_quick.md`` and is printed (``pytest -s``); the assertion lists offenders by name.
    """
    import math
    from pathlib import Path

    from tests.helpers import run_negative_control
    from verify.report import cut, fmt_miss, text_table

    rows, no_miss, held, broken = [], [], [], []
    for cid, chk in sorted(registry.discover().items()):
        try:
            r = run_negative_control(cid, tmp_path=tmp_path)
        except Exception as exc:
            broken.append(f"{cid}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
            continue
        if r.miss is None:
            no_miss.append(cid)
        elif not float(r.miss) > 1:
            held.append(f"{cid} (miss {r.miss})")
        rows.append((r.miss, cid, chk))
    rows.sort(key=lambda t: (t[0] is None, float(t[0] or 0)))
    table = text_table([[cid, fmt_miss(m), registry.miss_class(m, chk.kind), cut(chk.negative_control, 70)]
                        for m, cid, chk in rows], ["check", "miss", "class", "negative control"])
    out = Path(__file__).resolve().parents[1] / "report" / "controls_quick.md"
    from verify import api

    api.adopt_report_dir(out.parent)  # report/ stays a folder that `make verify` (--report report/) accepts
    out.write_text("# Negative controls, quick mode: miss in tolerance units\n\n```\n" + table + "\n```\n")
    print("\n" + table)
    problems = []
    if no_miss:
        problems.append(f"{len(no_miss)} check(s) set no Result.miss on the negative control: {', '.join(no_miss)}")
    if held:
        problems.append(f"negative control within tolerance (miss <= 1): {', '.join(held)}")
    if broken:
        problems.append("negative control raised:\n  " + "\n  ".join(broken))
    assert not problems, "\n".join(problems) + f"\n(table in {out})"
    assert all(math.isinf(float(m)) or math.isfinite(float(m)) for m, _, _ in rows)


def test_seeds_that_do_not_reach_the_random_streams_are_a_fail(monkeypatch):
    """A planted bug that drops the seed from Context._seed_for makes three seeds one computation: the check fails
    (named), never 'pass 3/3'. One seed, or seeds that reach the streams, run as before."""
    import dataclasses

    def noisy(ctx, planted):
        x = float(ctx.rng("x").standard_normal()) * 1e-12
        return Result(measured=0.5 if planted else abs(x), expected=0.0, holds=not planted)

    chk = dataclasses.replace(make(noisy), seeds=3)
    assert registry.run_check(chk, Context()).status == "pass"
    orig = Context._seed_for
    monkeypatch.setattr(Context, "_seed_for", lambda self, tag: orig(dataclasses.replace(self, seed=0), tag))
    out = registry.run_check(chk, Context())
    assert out.status == "fail" and "same random streams" in out.error, (out.status, out.error)
    assert registry.run_check(dataclasses.replace(chk, seeds=1), Context()).status == "pass"
