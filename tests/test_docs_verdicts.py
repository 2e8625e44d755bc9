"""Numbers in docs come from the report: docs/verdicts.md is docs/verdicts.json (the committed extract of a full run)
rendered again, the extract is of a full run, and no doc states a status for a check that the run did not give."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import verdict_docs  # noqa: E402

STATUS = ("pass", "refuted", "reported", "fail", "missing", "skipped")


def test_verdicts_md_is_the_committed_extract_rendered():
    ext = json.loads(verdict_docs.JSON.read_text())
    assert verdict_docs.MD.read_text() == verdict_docs.render(ext) + "\n"
    assert ext["meta"].get("quick") is False  # a full run, not --quick


def test_the_extract_names_every_catalog_id():
    from verify.registry import builtin_catalog

    ext = json.loads(verdict_docs.JSON.read_text())
    assert set(ext["checks"]) == set(builtin_catalog())


def _claims(text: str):
    """(check id, status) for each place a doc states a check's status: `id` … `status` within one sentence, unless
    the words between say it is what a planted bug or another setting gives (``under the same bug is `fail```)."""
    for m in re.finditer(r"`([a-z]{2}\.[a-z0-9_]+)`([^.`\n]{0,60}?)(?:status|is|:|—|→)\s*`(" + "|".join(STATUS) + r")`",
                         text):
        if not re.search(r"\b(bug|planted|plant|under|mutant|mutation|if|when|would|before)\b", m.group(2)):
            yield m.group(1), m.group(3)


def test_no_doc_states_a_status_the_run_did_not_give():
    ext = json.loads(verdict_docs.JSON.read_text())["checks"]
    bad = []
    for doc in sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]:
        for cid, st in _claims(doc.read_text()):
            if cid in ext and ext[cid]["status"] != st:
                bad.append(f"{doc.name}: {cid} stated {st}, the run gave {ext[cid]['status']}")
    assert not bad, "\n".join(bad)


def test_the_status_scanner_sees_a_planted_wrong_status():
    assert list(_claims("and `nd.table1_metrics` is `pass` here")) == [("nd.table1_metrics", "pass")]
    assert list(_claims("`vc.transfer_correlation` → `refuted`")) == [("vc.transfer_correlation", "refuted")]
    assert list(_claims("and `rd.lyapunov_law` under the same bug is `fail` too")) == []


def test_extract_refuses_a_quick_report():
    with pytest.raises(ValueError, match="quick"):
        verdict_docs.extract({"meta": {"quick": True}, "checks": []})
