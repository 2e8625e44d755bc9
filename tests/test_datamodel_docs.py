"""The data-model documentation runs as written: README's example prints what README says it prints (a real
difference between the paper's model and a weaker common feature), and the examples of docs/datamodel.md,
docs/sweep.md and examples/datamodel/ work."""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from sims.multiview import models

ROOT = Path(__file__).resolve().parents[1]


def _blocks(path: Path, heading: str, lang: str) -> list[str]:
    text = path.read_text()
    assert heading in text, f"{path.name}: no section {heading!r}"
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"```{lang}\n(.*?)```", section, flags=re.S)


@pytest.fixture
def forget_weak_common():
    yield
    models.unregister_model("weak_common")
    sys.modules.pop("weak_common", None)


def _printed(text: str) -> dict:
    """{model: {key: number}} from lines such as ``hierarchical  {'coarse_easy_err': 0.0, ...}``."""
    out = {}
    for line in text.strip().splitlines():
        name, _, rest = line.partition(" ")
        out[name] = ast.literal_eval(rest.strip())
    return out


def test_readme_example_prints_what_the_readme_shows(capsys, forget_weak_common):
    blocks = _blocks(ROOT / "README.md", "## Sandbox a new data model", "python")
    section = (ROOT / "README.md").read_text().split("## Sandbox a new data model", 1)[1]
    shown = re.search(r"\n```\n(hierarchical .*?)```", section, flags=re.S).group(1)  # the pasted output
    exec(compile(blocks[0], "README.md", "exec"), {"__name__": "readme_example"})
    got, want = _printed(capsys.readouterr().out), _printed(shown)
    assert set(got) == set(want) == {"hierarchical", "weak_common"}
    for model in want:
        for key, v in want[model].items():  # error rates on 128 test samples: a few samples of float slack
            assert abs(got[model][key] - v) <= 0.025, (model, key, got[model][key], v)
    # the point of the example: the weaker common feature changes the coarse network's hard-sample error
    assert got["hierarchical"]["coarse_hard_err"] - got["weak_common"]["coarse_hard_err"] > 0.1


def test_datamodel_doc_examples_run(forget_weak_common, tmp_path):
    doc = ROOT / "docs" / "datamodel.md"
    first = _blocks(doc, "### The shortest path", "python")[0]
    ns = {"__name__": "my_models"}
    exec(compile(first, str(doc), "exec"), ns)
    assert "weak_common" in models.model_names()
    check = _blocks(doc, "### Check your model", "python")[0]
    exec(compile(check, str(doc), "exec"), dict(ns))                 # check_data_model passes on the example
    from sims.multiview.experiment import validate_config

    cfg = validate_config({"model": "weak_common", "strength": 0.5, "d": 64, "k": 4})
    assert cfg["strength"] == 0.5 and models.build(cfg).strength == 0.5


def test_datamodel_doc_model_from_scratch_runs_through_a_config():
    doc = ROOT / "docs" / "datamodel.md"
    code = _blocks(doc, "### A model from scratch", "python")[0]
    ns = {"__name__": "scratch_doc"}
    try:
        exec(compile(code, str(doc), "exec"), ns)
        models.check_data_model(ns["Stripes"](20, 8, 3.0, 2))
        from sims.multiview import run_experiment

        r = run_experiment({"model": "stripes", "lead": 3, "d": 20, "P": 8, "k": 2, "m_coarse": 40, "m_fine": 20,
                            "lucky": 4.0, "steps": 10, "batch": 8, "eval_every": 5, "n_test": 16})
        assert r["config"]["lead"] == 3 and 0 <= r["summary"]["coarse_hard_err"] <= 1
    finally:
        models.unregister_model("stripes")


def test_sweep_doc_plugin_experiment_runs(tmp_path, monkeypatch):
    code = _blocks(ROOT / "docs" / "sweep.md", "### Experiments and data models from plugins", "python")[0]
    (tmp_path / "my_sweeps_doc.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    from verify import sweep
    from verify.sweep import experiments

    try:
        res = sweep.run_sweep("power", {"grid": {"q": [1.0, 2.0]}, "fixed": {"n": 200}}, tmp_path / "o",
                              scheduler="serial", progress=False, plugins=["my_sweeps_doc"])
        assert res.ok and res.records[1]["result"]["mean_power"] > 0.5
    finally:
        experiments.unregister_experiment("power")
        sys.modules.pop("my_sweeps_doc", None)


def test_example_plugin_and_sweep_config(monkeypatch, forget_weak_common):
    folder = ROOT / "examples" / "datamodel"
    monkeypatch.syspath_prepend(str(folder))
    from verify import plugins, sweep

    plugins.load_modules(["weak_common"])
    plugins.LOADED.pop("weak_common", None)
    cfg = sweep.load_config(folder / "compare.toml")
    exp = sweep.experiments.get(cfg["experiment"])
    points = [exp.canonical(p) for p in sweep.expand_points(cfg["points"])]
    assert [p["model"] for p in points] == ["hierarchical", "weak_common"] and points[1]["strength"] == 0.3
