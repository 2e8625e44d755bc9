"""verify/readings.toml: how each paper states each catalog claim (quote, quantifier, conditions).

Every catalog id has a reading; quantifiers come from the vocabulary; every quote is the paper's own words (a
run of at least 6 consecutive words found in the seed text after normalising, so a made-up quote fails); the
loader rejects malformed entries naming them; REPORT.md and report.json carry the reading, and a plugin's
claim without one says so.
"""
from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

import pytest

from verify import readings, report
from verify.readings import QUANTIFIERS, ReadingError, load_readings, validate
from verify.registry import Outcome, builtin_catalog

ROOT = Path(__file__).resolve().parents[1]
SEEDS = ROOT.parent / "shared" / "seeds"
# the seed text of each paper (CLAIMS.md: 000 ND, 001 VC, 002 FG, 004 RD; 003 is a reading list, no claims)
SEED_PREFIX = {"ND": "000", "VC": "001", "FG": "002", "RD": "004"}
RUN = 6  # a quote must share at least this many consecutive words with its paper

READINGS = load_readings()
CATALOG = builtin_catalog()

# ── normalising text for the quote test ───────────────────────────────────────────────────────────────────
# The seeds are PDF extractions: maths appears as LaTeX (\lambda, \mathbf{W}), as Unicode (λ, Σ, 𝑇) or both.
# Normalising maps Greek letters (either spelling) to their names, drops other LaTeX commands and accents,
# lower-cases, and turns every non-alphanumeric character into a word break.
_GREEK = {"α": "alpha", "β": "beta", "γ": "gamma", "δ": "delta", "ε": "epsilon", "ϵ": "epsilon", "ζ": "zeta",
          "η": "eta", "θ": "theta", "ϑ": "theta", "ι": "iota", "κ": "kappa", "λ": "lambda", "μ": "mu", "ν": "nu",
          "ξ": "xi", "π": "pi", "ρ": "rho", "σ": "sigma", "ς": "sigma", "τ": "tau", "φ": "phi", "ϕ": "phi",
          "χ": "chi", "ψ": "psi", "ω": "omega"}
# LaTeX commands kept as words (Greek letters, operator names); every other command (\mathbf, \hat, \leq, ...) goes
_LATEX_WORDS = {name: name for name in set(_GREEK.values())} | {
    "varepsilon": "epsilon", "vartheta": "theta", "varphi": "phi", "Sigma": "sigma", "Gamma": "gamma",
    "Theta": "theta", "Omega": "omega", "Delta": "delta", "Lambda": "lambda", "Psi": "psi", "Phi": "phi"} | {
    w: w.lower() for w in ("max", "min", "log", "ln", "exp", "det", "lim", "inf", "sup", "dim", "arg", "Pr")}


def words(text: str) -> list[str]:
    """``text`` as a list of normalised words (lower-case, whitespace collapsed, non-alphanumerics dropped)."""
    text = re.sub(r"\\([A-Za-z]+)", lambda m: f" {_LATEX_WORDS.get(m.group(1), '')} ", text)
    text = unicodedata.normalize("NFKD", text)  # math italic 𝑇 → T, ² → 2, ĵ → j + accent
    text = "".join(c for c in text if not unicodedata.combining(c)).lower()
    text = "".join(f" {_GREEK[c]} " if c in _GREEK else c for c in text)
    return "".join(c if c.isalnum() else " " for c in text).split()


def runs(ws: list[str], n: int = RUN) -> set[tuple[str, ...]]:
    return {tuple(ws[i:i + n]) for i in range(len(ws) - n + 1)}


_SEED_RUNS: dict[str, set] = {}


def seed_runs(paper: str) -> set:
    if not SEEDS.is_dir():
        pytest.skip(f"the seed papers are not here ({SEEDS}); the quote test needs ../shared/seeds next to the repo")
    if paper not in _SEED_RUNS:
        (path,) = SEEDS.glob(f"{SEED_PREFIX[paper]}_*.txt")
        _SEED_RUNS[paper] = runs(words(path.read_text(encoding="utf-8")))
    return _SEED_RUNS[paper]


def shared_runs(quote: str, paper: str) -> int:
    """How many of the quote's runs of 6 consecutive words occur in the paper."""
    return len(runs(words(quote)) & seed_runs(paper))


def covered(quote: str, paper: str) -> float:
    """The share of the quote's words that lie in a run of 6 consecutive words found in the paper."""
    ws, found = words(quote), seed_runs(paper)
    hit = [False] * len(ws)
    for i in range(len(ws) - RUN + 1):
        if tuple(ws[i:i + RUN]) in found:
            hit[i:i + RUN] = [True] * RUN
    return sum(hit) / max(len(ws), 1)


# ── the data ──────────────────────────────────────────────────────────────────────────────────────────────

def test_every_catalog_id_has_a_reading_and_no_other():
    assert set(READINGS) == set(CATALOG), (
        f"catalog ids without a reading: {sorted(set(CATALOG) - set(READINGS))}; "
        f"readings of unknown ids: {sorted(set(READINGS) - set(CATALOG))}")


def test_quantifiers_come_from_the_vocabulary():
    assert QUANTIFIERS == ("for all", "typical", "there exists", "on average", "asymptotic", "conjecture")
    for rid, r in READINGS.items():
        assert r["quantifier"] in QUANTIFIERS, rid
        assert all(o["quantifier"] in QUANTIFIERS for o in r["other_readings"]), rid
        # an alternative reading says something the main one does not
        assert r["quantifier"] not in {o["quantifier"] for o in r["other_readings"]}, rid


_WHERE = re.compile(r"\b(Sec|Eq|App|Thm|Theorem|Fig|Figure|Tab|Table|Def|Definition|Remark|Lemma|Prop|"
                    r"Proposition|Cor|Corollary|Obs|Observation|Conj|Abstract|Notations|item)\b|\b[A-G]\.\d")


def test_every_condition_says_where_the_paper_states_it():
    """Conditions are the paper's, each with its place (the entries here all state some; an empty list is
    allowed by the loader for a claim whose paper states none)."""
    for rid, r in READINGS.items():
        assert r["conditions"], f"{rid}: no conditions"
        for c in r["conditions"]:
            assert _WHERE.search(c), f"{rid}: condition without a place in the paper: {c!r}"
        assert _WHERE.search(r["where"]), rid


def test_the_real_model_checks_carry_their_experimental_conditions():
    """The verdicts on trained networks depend on the paper's regime: data, training, well-trained models."""
    real = {"nd.table1_metrics": "well-trained", "nd.between_networks": "independently",
            "nd.new_categories": "500 training samples", "nd.regularizer": "manually choose",
            "rd.independence_deficit": "η = 20", "rd.cls_dim": "95%", "vc.training_collapse": "test accuracy",
            "vc.transfer_correlation": "ResNet50", "fg.label_granularity": "little noise"}
    for rid, phrase in real.items():
        r = READINGS[rid]
        assert len(r["conditions"]) >= 4, rid
        assert any(phrase in c for c in r["conditions"]), f"{rid}: no condition mentions {phrase!r}"


@pytest.mark.parametrize("rid", sorted(READINGS))
def test_quote_is_the_papers_own_words(rid):
    r = READINGS[rid]
    paper = CATALOG[rid]["paper"]
    assert len(r["quote"]) <= readings.MAX_QUOTE
    n = shared_runs(r["quote"], paper)
    assert n > 0, (f"{rid}: no run of {RUN} consecutive words of the quote occurs in {paper}'s text; quote the "
                   f"paper's words (maths may be cleaned up)")
    # most of a quote is found in the paper; only cleaned-up maths may differ (the maths-heaviest quotes: ~0.4)
    assert covered(r["quote"], paper) >= 1 / 3, f"{rid}: most of the quote is not in {paper}'s text"


def test_quote_test_rejects_made_up_and_misattributed_quotes():
    """Negative controls of the quote test: plausible invented sentences, a real quote with its words
    shuffled, and a real quote checked against the wrong paper all fail."""
    made_up = ["The logits of every category are an exact linear combination of all other categories' logits.",
               "Theorem 5.3. VCI is monotone in the training epoch for every network trained with SGD.",
               "Pretraining with fine-grained labels always improves the accuracy on every downstream task."]
    assert shared_runs(made_up[0], "ND") == 0
    assert shared_runs(made_up[1], "VC") == 0
    assert shared_runs(made_up[2], "FG") == 0
    real = READINGS["vc.trace_bound"]["quote"]
    assert shared_runs(real, "VC") > 0
    shuffled = " ".join(sorted(words(real)))
    assert shared_runs(shuffled, "VC") == 0
    assert shared_runs(READINGS["rd.monotone_depth"]["quote"], "ND") == 0


def test_normalising_ignores_latex_unicode_and_layout():
    assert words(r"Let $\lambda_{\max}$ be   the \textbf{Supremum}, i.e.,") == \
        words("Let λ_max be the Supremum, i.e.") == ["let", "lambda", "max", "be", "the", "supremum", "i", "e"]
    assert words("Σ_𝑇 and ĵ") == ["sigma", "t", "and", "j"]


# ── the loader ────────────────────────────────────────────────────────────────────────────────────────────

GOOD = {"id": "vc.trace_bound", "where": "VC Thm 5.2", "quote": "Tr[Σ_T†Σ_B] ≤ rank(Σ_B).",
        "quantifier": "for all", "quantifier_why": "a theorem", "conditions": ["balanced dataset (Sec 3.1)"]}


def _toml_value(v) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + "}"
    return json.dumps(v, ensure_ascii=False)


def _write(tmp_path, *entries) -> Path:
    p = tmp_path / "readings.toml"
    p.write_text("".join("[[reading]]\n" + "".join(f"{k} = {_toml_value(v)}\n" for k, v in e.items()) + "\n"
                         for e in entries), encoding="utf-8")
    return p


def test_loader_accepts_a_good_entry(tmp_path):
    got = load_readings(_write(tmp_path, GOOD, dict(GOOD, id="vc.probe_loss", other_readings=[
        {"quantifier": "typical", "why": "w"}])), known_ids=set(CATALOG))
    assert got["vc.trace_bound"]["other_readings"] == [] and got["vc.trace_bound"]["conditions"] == GOOD["conditions"]
    assert got["vc.probe_loss"]["other_readings"] == [{"quantifier": "typical", "why": "w"}]


@pytest.mark.parametrize("bad, message", [
    (dict(GOOD, quantifier="always"), r"reading #1 \('vc.trace_bound'\): 'quantifier' 'always' is not one of: "
                                      r"'for all', 'typical', 'there exists', 'on average', 'asymptotic', 'conjecture'"),
    ({k: v for k, v in GOOD.items() if k != "id"}, r"reading #1 has no 'id'"),
    ({k: v for k, v in GOOD.items() if k != "conditions"}, r"\('vc.trace_bound'\): missing field\(s\) 'conditions'"),
    (dict(GOOD, quote=""), r"'quote' must be a non-empty string"),
    (dict(GOOD, quote="x" * 401), r"'quote' is 401 characters, at most 400"),
    (dict(GOOD, conditions="balanced"), r"'conditions' must be a list of strings"),
    (dict(GOOD, verdict="pass"), r"unknown field\(s\) 'verdict'"),
    (dict(GOOD, other_readings=[{"quantifier": "mostly", "why": "w"}]),
     r"other_readings\[0\].quantifier 'mostly' is not one of"),
    (dict(GOOD, other_readings=[{"quantifier": "typical"}]), r"other_readings\[0\] must be a table with exactly"),
    (dict(GOOD, id="nd.no_such_claim"), r"'nd.no_such_claim' is not a catalog id"),
])
def test_loader_rejects_a_bad_entry_naming_it(tmp_path, bad, message):
    with pytest.raises(ReadingError, match=message):
        load_readings(_write(tmp_path, bad), known_ids=set(CATALOG))


def test_loader_rejects_duplicates_and_bad_files(tmp_path):
    with pytest.raises(ReadingError, match=r"reading #2: id 'vc.trace_bound' appears twice"):
        load_readings(_write(tmp_path, GOOD, GOOD))
    bad = tmp_path / "broken.toml"
    bad.write_text("[[reading]]\nid = \n")
    with pytest.raises(ReadingError, match="not valid TOML"):
        load_readings(bad)
    with pytest.raises(ReadingError, match=r"expected \[\[reading\]\] tables"):
        validate({"claim": []})
    assert issubclass(ReadingError, ValueError)


def test_the_package_file_is_package_data():
    text = (ROOT / "pyproject.toml").read_text()
    block = text[text.index("[tool.setuptools.package-data]"):]
    verify_line = next(ln for ln in block.splitlines() if ln.startswith("verify ="))
    assert '"readings.toml"' in verify_line and readings.READINGS_PATH.parent == ROOT / "verify"


# ── the report ────────────────────────────────────────────────────────────────────────────────────────────

def test_report_quotes_the_paper_for_a_real_run(tmp_path):
    """A tiny run through the public API: REPORT.md's section and report.json's entry carry the reading."""
    import verify

    run = verify.run("vc.fuzziness_counterexample", quick=True)
    md = verify.write_report(run, tmp_path / "rep", figures=False).read_text()
    r = READINGS["vc.fuzziness_counterexample"]
    section = md[md.index("## `vc.fuzziness_counterexample`"):]
    assert f"- Paper's claim (quoted, {r['where']}): “{r['quote']}”" in section
    assert f"- Quantifier: **{r['quantifier']}** — {r['quantifier_why']}" in section
    assert "- Conditions the paper states:" in section and all(f"  - {c}" in section for c in r["conditions"])
    assert "other reading: **for all**" in section
    data = json.loads((tmp_path / "rep" / "report.json").read_text())
    (entry,) = data["checks"]
    assert entry["reading"] == {k: r[k] for k in ("where", "quote", "quantifier", "quantifier_why", "conditions",
                                                  "other_readings")}


def test_a_claim_without_a_reading_says_so(tmp_path):
    """A plugin's claim (declared with register_claim, not in readings.toml) keeps working: no reading recorded."""
    outs = [Outcome(id="my.trace_identity", paper="MY", equation="", kind="numeric", statement="tr(AB) = tr(BA)",
                    status="pass", negative_control="a transposed factor", negative_control_result="failed as it should",
                    control_miss=3.0, measured=0.0, expected=0.0),
            Outcome(id="vc.trace_bound", paper="VC", equation="Thm 5.2", kind="numeric", statement="s",
                    status="missing")]
    meta = report.run_meta(0, True, 1.0)
    md = report.write_markdown(tmp_path, outs, meta, {}).read_text()
    plugin = md[md.index("## `my.trace_identity`"):md.index("## `vc.trace_bound`")]
    assert "- Paper's claim: no reading recorded" in plugin and "Quantifier" not in plugin
    missing = md[md.index("## `vc.trace_bound`"):]
    assert "Theorem 5.2" in missing and "Not implemented yet." in missing  # the paper's claim, even unimplemented
    report.write_json(tmp_path / "report.json", outs, meta)
    checks = json.loads((tmp_path / "report.json").read_text())["checks"]
    assert checks[0]["reading"] is None and checks[1]["reading"]["quantifier"] == "for all"
    assert report.check_record(outs[0])["id"] == "my.trace_identity"
