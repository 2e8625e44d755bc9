"""FG data models of one's own through every door: names, 'pkg.mod:Factory', plugins, the protocol and its rules,
config keys of a model's own, the cache and the sweep engine (local pool of 2 workers, Dask), plugin experiments."""
from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
import torch

from sims.multiview import models, run_experiment
from sims.multiview.data import HierarchicalMultiView
from sims.multiview.experiment import cached_experiment, validate_config
from verify import sweep
from verify.sweep import experiments as sweep_experiments

ROOT = Path(__file__).resolve().parents[1]
TINY = {"d": 20, "P": 8, "k": 2, "m_coarse": 40, "m_fine": 20, "lucky": 4.0, "steps": 10, "batch": 8,
        "eval_every": 5, "n_test": 16}

MODEL_PLUGIN = '''
import torch
from sims.multiview import HierarchicalMultiView, register_model
from sims.multiview.data import COMMON


class WeakCommon(HierarchicalMultiView):
    def __init__(self, *args, strength: float = 0.3, **kw):
        self.strength = float(strength)
        super().__init__(*args, **kw)

    def _coefficients(self, kinds, generator, device, dtype):
        coef = super()._coefficients(kinds, generator, device, dtype)
        return torch.where(kinds == COMMON, self.strength * coef, coef)


register_model("{name}", WeakCommon)
'''


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """A plugin module registering a data model, in a fresh folder on sys.path: (module, model name, folder)."""
    tag = uuid.uuid4().hex[:8]
    module, name = f"dm_{tag}", f"weak_{tag}"
    (tmp_path / f"{module}.py").write_text(MODEL_PLUGIN.format(name=name))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("THEORYLAB_CACHE", str(tmp_path / "cache"))
    yield module, name, tmp_path
    from verify import plugins

    models.unregister_model(name)
    sys.modules.pop(module, None)
    plugins.LOADED.pop(module, None)


def _env(folder: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env["THEORYLAB_CACHE"] = str(folder / "cache")
    return env


def _cli(args, cwd, timeout=300):
    return subprocess.run([sys.executable, "-m", "verify.cli", *args], cwd=cwd, env=_env(Path(cwd)),
                          capture_output=True, text=True, timeout=timeout)


# --------------------------------------------------------------------------------------------------- names
def test_unknown_model_names_the_known_ones_and_a_registered_one_resolves(plugin):
    module, name, _ = plugin
    with pytest.raises(ValueError, match=r"unknown data model 'nope'; known: hierarchical, shared_subclass, "
                                         r"three_level, label_noise.*pkg.mod:Factory.*--plugins"):
        validate_config({"model": "nope"})
    __import__(module)
    assert name in models.model_names()
    cfg = validate_config({**TINY, "model": name})
    assert cfg["strength"] == 0.3                                   # the factory's own parameter: a config key
    assert validate_config({**TINY, "model": name, "strength": 1})["strength"] == 1.0
    assert "strength" not in validate_config(TINY)                  # built-in configs are unchanged


def test_a_plugin_cannot_replace_a_builtin_or_anothers_name(tmp_path, monkeypatch):
    tag = uuid.uuid4().hex[:8]
    (tmp_path / f"hijack_{tag}.py").write_text("from sims.multiview import HierarchicalMultiView, register_model\n"
                                              "register_model('hierarchical', HierarchicalMultiView)\n")
    (tmp_path / f"twice_{tag}.py").write_text(
        "from sims.multiview import register_model\nfrom sims.multiview.data import LabelNoise, ThreeLevel\n"
        f"register_model('m_{tag}', LabelNoise)\nregister_model('m_{tag}', ThreeLevel)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from verify import plugins

    try:
        with pytest.raises(plugins.PluginError, match=rf"plugin hijack_{tag}: 'hierarchical' is a built-in data "
                                                      rf"model and cannot be replaced"):
            plugins.load_modules([f"hijack_{tag}"])
        with pytest.raises(plugins.PluginError, match=rf"m_{tag}' is already registered by plugin twice_{tag}"):
            plugins.load_modules([f"twice_{tag}"])
        assert models.resolve("hierarchical").factory is HierarchicalMultiView
    finally:
        models.unregister_model(f"m_{tag}")
        for m in (f"hijack_{tag}", f"twice_{tag}"):
            sys.modules.pop(m, None)
            plugins.LOADED.pop(m, None)


def test_pkg_mod_factory_form_and_its_errors():
    cfg = validate_config({**TINY, "model": "sims.multiview.data:LabelNoise", "flip": 0.2})
    dm = models.build(cfg)
    assert type(dm).__name__ == "LabelNoise" and dm.flip == 0.2
    for spec, match in (("zz_no_such_module:X", "module 'zz_no_such_module' not found"),
                        ("sims.multiview.data:Nope", "has no attribute 'Nope'"),
                        ("sims.multiview.data:COMMON", "is not callable"),
                        (":X", "expected 'pkg.mod:Factory'"), (3, "must be a string")):
        with pytest.raises(ValueError, match=match):
            validate_config({**TINY, "model": spec})


# --------------------------------------------------------------------------------------- the protocol
class _Scratch:
    """A data model written from docs/datamodel.md, without subclassing: common patches first, subclass last."""

    def __init__(self, d, P, s, k, *, iota=0.1, noise_norm=0.5, lead: int = 2):
        self.d, self.P, self.k, self.iota, self.lead = d, P, k, iota, lead
        self.sigma_zeta = noise_norm / d ** 0.5
        self.n_coarse, self.n_fine = 2, 2 * k

    def dictionary(self, device="cpu", dtype=torch.float32):
        return torch.eye(self.d, device=device, dtype=dtype)

    def coarse_of_fine(self):
        return torch.arange(self.n_fine) // self.k

    def common_of_coarse(self):
        return torch.arange(2)

    def sub_of_fine(self):
        return 2 + torch.arange(self.n_fine)

    def sample(self, n, *, hard=False, train=False, generator, device="cpu", dtype=torch.float32):
        from sims.multiview.data import COMMON, SUBCLASS, Batch

        y_fine = torch.arange(self.n_fine, device=device).repeat_interleave(n // self.n_fine)
        y = self.coarse_of_fine().to(device)[y_fine]
        X = self.sigma_zeta * torch.randn(n, self.P, self.d, generator=generator, device=device, dtype=dtype)
        kinds = torch.zeros(n, self.P, dtype=torch.int8, device=device)
        V = self.dictionary(device, dtype)
        if not hard:
            X[:, : self.lead] += V[self.common_of_coarse().to(device)[y]][:, None, :]
            kinds[:, : self.lead] = COMMON
        X[:, -1] += V[self.sub_of_fine().to(device)[y_fine]]
        kinds[:, -1] = SUBCLASS
        return Batch(X=X, y_coarse=y, y_fine=y_fine, kinds=kinds)


def test_a_model_from_scratch_runs_through_a_config():
    models.check_data_model(_Scratch(20, 8, 3.0, 2))
    r = run_experiment({**TINY, "model": f"{__name__}:_Scratch", "lead": 3})
    assert r["config"]["lead"] == 3 and 0 <= r["summary"]["coarse_hard_err"] <= 1
    with pytest.raises(ValueError, match="sets counts = 'exact' but data model .* does not take 'counts'"):
        validate_config({**TINY, "model": f"{__name__}:_Scratch", "counts": "exact"})
    with pytest.raises(ValueError, match="'lead' .* must be an integer, got 'two'"):
        validate_config({**TINY, "model": f"{__name__}:_Scratch", "lead": "two"})
    with pytest.raises(ValueError, match=r"unknown config key\(s\) \['lead'\]"):
        validate_config({**TINY, "lead": 3})                        # a key of another model


def _broken(**attrs):
    class Broken(_Scratch):
        pass

    for k, v in attrs.items():
        setattr(Broken, k, v)
    return Broken(20, 8, 3.0, 2)


def test_missing_protocol_members_are_named_on_both_routes():
    class NoSub(_Scratch):
        sub_of_fine = None

    def factory(d, P, s, k, **kw):
        obj = NoSub(d, P, s, k)
        del obj.sigma_zeta
        return obj

    with pytest.raises(ValueError, match=r"lacks sigma_zeta, sub_of_fine\(\)"):
        run_experiment(TINY, data_model=factory(20, 8, 3.0, 2))
    with pytest.raises(ValueError, match=r"'nosub' \(NoSub\) does not satisfy the DataModel protocol: it lacks "
                                         r"sigma_zeta, sub_of_fine\(\)"):
        models.build(validate_config(TINY), models.ModelEntry("nosub", factory, {}, "test", ""))


@pytest.mark.parametrize("attrs, match", [
    ({"sample": lambda self, n, **kw: _Scratch.sample(self, n, **{**kw, "generator": torch.Generator().manual_seed(
        int(torch.randint(10 ** 6, (1,))))})}, "take all randomness from the `generator`"),
    ({"sample": lambda self, n, dtype=torch.float32, **kw: _Scratch.sample(self, n, dtype=torch.float64, **kw)},
     "must have the requested dtype"),
    ({"sample": lambda self, n, hard=False, **kw: _Scratch.sample(self, n, hard=False, **kw)},
     "hard samples must carry no common-feature patch"),
    ({"coarse_of_fine": lambda self: (torch.arange(self.n_fine) // self.k).int()}, "torch.long tensor of shape"),
    ({"common_of_coarse": lambda self: torch.tensor([0, 99])}, r"values must lie in \[0, 20\)"),
    ({"dictionary": lambda self, device="cpu", dtype=torch.float32: torch.eye(self.d + 1, dtype=dtype)},
     r"must return a \(20, 20\) tensor"),
])
def test_check_data_model_names_the_broken_rule(attrs, match):
    with pytest.raises(ValueError, match=match):
        models.check_data_model(_broken(**attrs))


def test_counts_and_clean_test_labels_are_rules():
    def skewed(self, n, **kw):
        b = _Scratch.sample(self, n, **kw)
        b.y_fine = torch.zeros_like(b.y_fine)
        return b

    with pytest.raises(ValueError, match="exactly n/n_fine = 2 samples per fine class"):
        models.check_data_model(_broken(sample=skewed))


def test_a_factory_must_keep_the_sizes_it_is_given():
    with pytest.raises(ValueError, match=r"built with d = 20 but has d = 24"):
        models.build(validate_config(TINY), models.ModelEntry(
            "grow", lambda d, P, s, k, **kw: HierarchicalMultiView(d + 4, P, s, k), {}, "test", ""))


def test_register_model_params_and_bad_parameters():
    tag = uuid.uuid4().hex[:6]
    seen = []

    def hidden(d, P, s, k, **kw):  # its own parameter is not in its signature: declared with params=
        seen.append(kw.pop("zeta_scale"))
        return HierarchicalMultiView(d, P, s, k, **kw)

    try:
        models.register_model(f"p_{tag}", hidden, params={"zeta_scale": 2})
        cfg = validate_config({**TINY, "model": f"p_{tag}"})
        assert cfg["zeta_scale"] == 2 and seen == [2]
        with pytest.raises(ValueError, match="must be an integer"):
            validate_config({**TINY, "model": f"p_{tag}", "zeta_scale": 2.5})
    finally:
        models.unregister_model(f"p_{tag}")

    def needs(d, P, s, k, *, what):
        return None

    with pytest.raises(ValueError, match="keyword parameter 'what' needs a default"):
        models.register_model(f"q_{tag}", needs)
    with pytest.raises(ValueError, match="must be an identifier"):
        models.register_model("a b", HierarchicalMultiView)
    with pytest.raises(ValueError, match="built-in"):
        models.unregister_model("hierarchical")


# ----------------------------------------------------------------------------------------------- cache
def test_cached_experiment_keys_on_the_plugins_code(plugin):
    module, name, folder = plugin
    __import__(module)
    cache = folder / "cache" / "results"
    a = cached_experiment({**TINY, "model": name})
    n1 = len(list(cache.glob("fg_experiment-*.npz")))
    assert cached_experiment({**TINY, "model": name}) == a and len(list(cache.glob("*.npz"))) == n1  # a hit
    path = folder / f"{module}.py"
    path.write_text(path.read_text() + "\n_EDITED = 1\n")  # a code edit (a comment or docstring keeps the key)
    with pytest.warns(RuntimeWarning, match="changed on disk"):  # the key names the new code; this process runs the
        cached_experiment({**TINY, "model": name})                # old one: recomputed, not stored under that key
    assert len(list(cache.glob("fg_experiment-*.npz"))) == n1
    importlib.reload(sys.modules[module])
    cached_experiment({**TINY, "model": name})
    assert len(list(cache.glob("fg_experiment-*.npz"))) == n1 + 1                                   # rerun, stored
    cached_experiment(TINY)
    cached_experiment(TINY)
    assert len(list(cache.glob("fg_experiment-*.npz"))) == n1 + 2


# ------------------------------------------------------------------------------------------------- CLI
def _tiny_toml(path: Path, **extra) -> Path:
    cfg = {**TINY, **extra}
    path.write_text("".join(f'{k} = "{v}"\n' if isinstance(v, str) else f"{k} = {v!r}\n" for k, v in cfg.items()))
    return path


def test_sim_with_a_plugin_model_shows_progress_and_prints_json(plugin):
    module, name, folder = plugin
    toml = _tiny_toml(folder / "c.toml", model=name, strength=0.5, steps=40)
    p = _cli(["sim", "multiview", "--config", "c.toml", "--plugins", module, "--out", "o", "--no-figs",
              "--json", "-"], folder)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)                                         # stdout: the JSON object and nothing else
    assert out["config"]["model"] == name and out["config"]["strength"] == 0.5
    assert {"coarse_hard_err", "fine_hard_err", "hard_gap"} <= set(out["summary"])
    assert out["written"] == ["curves.json", "curves.npz"] and Path(out["out"]).name == "o"
    assert "step/s" in p.stderr and "80/80" in p.stderr                # the bar: 2 trainings x 40 steps
    assert "coarse_hard_err" not in p.stdout.split("\n", 1)[1] and "hard_err" in p.stderr  # table on stderr
    q = _cli(["sim", "multiview", "--config", str(toml), "--plugins", module, "--out", "o2", "--no-figs", "-q",
              "--json", "run.json"], folder)
    assert q.returncode == 0 and q.stderr == "" and "hard_err" in q.stdout
    assert json.loads((folder / "run.json").read_text())["summary"] == out["summary"]
    bad = _cli(["sim", "multiview", "--config", str(toml), "--out", "o3"], folder)  # no --plugins
    assert bad.returncode == 2 and f"unknown data model '{name}'" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


SWEEP = '''experiment = "multiview"
seed = 0

[zip]
model = ["hierarchical", "{name}"]

[fixed]
{fixed}
'''


def test_sweep_runs_a_plugin_model_on_two_local_workers_and_reruns_it_when_edited(plugin):
    module, name, folder = plugin
    fixed = "".join(f"{k} = {v!r}\n" for k, v in TINY.items())
    (folder / "s.toml").write_text(SWEEP.format(name=name, fixed=fixed))
    args = ["sweep", "s.toml", "--plugins", module, "--workers", "2", "--out", "sw", "--json", "-"]
    p = _cli(args, folder)
    assert p.returncode == 0, p.stderr
    first = json.loads(p.stdout)
    assert first["counts"] == {"points": 2, "done": 2, "failed": 0, "crashed": 0, "lost": 0, "ran": 2, "skipped": 0}
    assert [q["params"]["model"] for q in first["points"]] == ["hierarchical", name]
    assert first["points"][1]["params"]["strength"] == 0.3 and "summary.coarse_hard_err" in first["points"][1]["result"]
    workers = {json.loads((folder / "sw" / "points" / f"{q['key']}.json").read_text())["worker"] for q in first["points"]}
    assert all(w.rsplit(":", 1)[1] != str(os.getpid()) for w in workers)   # run by the pool's workers
    again = json.loads(_cli(args, folder).stdout)
    assert again["counts"]["ran"] == 0 and again["counts"]["skipped"] == 2
    path = folder / f"{module}.py"
    path.write_text(path.read_text() + "\n_EDITED = 1\n")  # a code edit of the plugin (comments keep the key)
    edited = json.loads(_cli(args, folder).stdout)
    assert edited["counts"]["ran"] == 1 and edited["counts"]["skipped"] == 1      # only the plugin's point
    assert edited["points"][0]["key"] == first["points"][0]["key"] != first["points"][1]["key"] != \
        edited["points"][1]["key"]


def test_sweep_experiment_from_a_plugin(tmp_path, monkeypatch):
    tag = uuid.uuid4().hex[:6]
    module = f"exp_{tag}"
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(f'''
        from verify.sweep import Experiment, Param, register_experiment


        def _square(params, seed):
            return {{"y": params["x"] ** 2, "seed_mod": seed % 7}}


        register_experiment(Experiment("sq_{tag}", _square, "x squared", params={{"x": Param("float", 1.0)}},
                                       required=("y",), results=("y",), plot={{"x": "x", "y": "y"}}))
    '''))
    (tmp_path / f"bad_{tag}.py").write_text("from verify.sweep import Experiment, register_experiment\n"
                                            "register_experiment(Experiment('toy', print, 'no'))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        res = sweep.run_sweep(f"sq_{tag}", {"x": [1.0, 2.0, 3.0]}, tmp_path / "o", workers=2, progress=False,
                              plugins=[module])
        assert res.ok and [r["result"]["y"] for r in res.records] == [1.0, 4.0, 9.0]
        from verify import plugins

        with pytest.raises(plugins.PluginError, match=rf"plugin bad_{tag}: 'toy' is a built-in sweep experiment"):
            plugins.load_modules([f"bad_{tag}"])
        with pytest.raises(ValueError, match=r"unknown experiment 'nope'; known: .*massive_floors.*--plugins"):
            sweep.run_sweep("nope", {"x": [1]}, tmp_path / "n", progress=False)
    finally:
        sweep_experiments.unregister_experiment(f"sq_{tag}")
        for m in (module, f"bad_{tag}"):
            sys.modules.pop(m, None)


def test_dask_workers_import_the_plugin_model(plugin):
    distributed = pytest.importorskip("distributed")
    module, name, folder = plugin
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        res = sweep.run_sweep("multiview", [{**TINY, "model": name}], folder / "dask",
                              scheduler=cluster.scheduler_address, progress=False, plugins=[module])
    assert res.ok, res.records[0].get("error")
    assert res.records[0]["worker"].rsplit(":", 1)[1] != str(os.getpid())
    assert res.records[0]["result"]["config"]["strength"] == 0.3


def test_the_compatibility_module_is_gone():
    with pytest.raises(ImportError):
        __import__("verify.sweep_experiments")
    assert not (ROOT / "verify" / "sweep_experiments.py").exists()


def test_sim_json_of_a_d_sweep_config(tmp_path, capsys):
    from verify.cli import main

    toml = tmp_path / "c.toml"
    toml.write_text("".join(f"{k} = {v!r}\n" for k, v in TINY.items() if k != "d") + "\n[sweep]\nd = [20, 24]\n")
    assert main(["sim", "multiview", "--config", str(toml), "--out", str(tmp_path / "o"), "--json", "-", "-q"]) == 0
    io = capsys.readouterr()
    out = json.loads(io.out)
    assert [r["d"] for r in out["sweep"]["rows"]] == [20, 24] and out["sweep"]["ds"] == [20, 24]
    assert "hard_gap" in out["sweep"]["rows"][0]["summary"] and "sweep.json" in out["written"]
    assert "coarse hard" in io.err                                      # the table went to stderr


def test_pkg_mod_factory_is_found_in_the_current_folder_by_the_console_script(plugin):
    """``model = "mod:Factory"`` in a config read by ``theorylab`` (whose sys.path[0] is its bin folder, not
    the current one) imports mod from the current folder, as ``--plugins`` does."""
    module, name, folder = plugin
    exe = Path(sys.executable).with_name("theorylab")
    if not exe.exists():
        pytest.skip("no theorylab console script next to this interpreter")
    _tiny_toml(folder / "c.toml", model=f"{module}:WeakCommon", strength=0.4)
    p = subprocess.run([str(exe), "sim", "multiview", "--config", "c.toml", "--out", "o", "--no-figs", "-q",
                        "--json", "-"], cwd=folder, env=_env(folder), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["config"]["strength"] == 0.4


def test_sweep_list_names_the_plugin_models_and_their_keys(plugin, capsys):
    from verify.cli import main

    module, name, _ = plugin
    assert main(["sweep", "--list", "--plugins", module]) == 0
    out = capsys.readouterr().out
    assert f"three_level, label_noise, {name} or 'pkg.mod:Factory'" in out
    assert f"model '{name}' also takes: strength (default 0.3)" in out
