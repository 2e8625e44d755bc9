"""ImageNet validation folders: labels and names read offline, streaming resumable capture, analyze.

Generated JPEG folders under tmp_path in both layouts (flat ILSVRC2012_val_*.JPEG, one sub-folder per synset),
each with one unreadable file (policy: skipped with a warning naming it); a tiny 1000-class model keeps it fast.
"""
from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest
import torch

from sims.real import analysis as A
from sims.real.imagenet import capture_folder, class_names, scan, synsets, val_labels
from sims.real.models import user_model

TINY1K = '''
import torch
class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, stride=4)
        self.pool = torch.nn.AdaptiveAvgPool2d(2)
        self.head = torch.nn.Linear(32, 1000)
    def forward(self, x):
        return self.head(self.pool(torch.relu(self.conv(x))).flatten(1))
def make():
    torch.manual_seed(0)
    return Tiny()
'''
N_FLAT = 160
PER_SYNSET = 40


def _jpeg(path, rng, shape=(40, 52)):
    from PIL import Image

    Image.fromarray(rng.integers(0, 256, (*shape, 3), dtype=np.uint8)).save(path, quality=70)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    rng = np.random.default_rng(0)
    root = tmp_path_factory.mktemp("imagenet")
    flat = root / "flat"
    flat.mkdir()
    names = sorted(val_labels())[:N_FLAT]
    for k, n in enumerate(names):
        _jpeg(flat / n, rng, (36 + k % 9, 48))
    (flat / names[3]).write_bytes(b"\xff\xd8 truncated, not a JPEG")  # unreadable, labelled name
    (flat / "LOC_val_solution.csv").write_text("ImageId,PredictionString\n")  # not an image: ignored
    syn = root / "synset"
    syn.mkdir()
    wn = synsets()
    for c in (1, 281, 285, 999):
        (syn / wn[c]).mkdir()
        for k in range(PER_SYNSET):
            _jpeg(syn / wn[c] / f"img{k:03d}.JPEG", rng)
    (syn / wn[281] / "broken.JPEG").write_bytes(b"garbage")
    return {"flat": flat, "synset": syn, "names": names}


@pytest.fixture
def tiny1k(tmp_path, monkeypatch):
    (tmp_path / "tiny1k.py").write_text(TINY1K)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("THEORYLAB_CACHE", str(tmp_path / "cache"))
    sys.modules.pop("tiny1k", None)
    import tiny1k

    w = tmp_path / "tiny1k.pt"
    torch.save(tiny1k.make().state_dict(), w)
    return user_model("tiny1k:make", w, input_size=32), w


def test_labels_and_names_come_from_the_package():
    names = class_names()
    assert len(names) == len(set(names)) == 1000 and names[0] == "tench" and names[285] == "Egyptian cat"
    assert synsets()[0] == "n01440764" and len(set(synsets())) == 1000
    table = val_labels()
    assert len(table) == 50_000 and all(0 <= v < 1000 for v in list(table.values())[:100])


def test_scan_both_layouts(folders):
    f = scan(folders["flat"])
    assert f.layout == "flat" and len(f) == N_FLAT  # the .csv is not an image
    table = val_labels()
    assert [table[n] for n in folders["names"]] == f.labels.tolist()
    s = scan(folders["synset"])
    assert s.layout == "synset" and len(s) == 4 * PER_SYNSET + 1
    assert sorted(set(s.labels.tolist())) == [1, 281, 285, 999]
    with pytest.raises(ValueError, match="not a folder"):
        scan(folders["flat"] / "nope")


def test_capture_skips_the_unreadable_file_and_resumes(folders, tiny1k):
    spec, _ = tiny1k
    files = scan(folders["flat"])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        part = capture_folder(spec, files, batch_size=16, chunk=64, workers=0, progress=False, max_chunks=1)
    assert not part["complete"] and len(part["logits"]) == 63  # one chunk done, its unreadable file skipped
    assert any(folders["names"][3] in str(x.message) for x in w)
    with pytest.warns(UserWarning, match=folders["names"][3]):
        full = capture_folder(spec, files, batch_size=16, chunk=64, workers=2, progress=False)  # resumes
    assert full["complete"] and len(full["logits"]) == N_FLAT - 1 and full["skipped"] == [folders["names"][3]]
    np.testing.assert_array_equal(full["logits"][:63], part["logits"])  # chunk 0 was reused, not recomputed
    assert 3 not in full["index"].tolist()
    np.testing.assert_array_equal(full["labels"], files.labels[full["index"]])
    L = full["logits"].astype(float)
    np.testing.assert_allclose(full["cov"], L.T @ L / len(L), rtol=1e-4, atol=1e-6)  # merged chunk moments
    W, b = spec.linear()
    np.testing.assert_allclose(L, full["features"].astype(float) @ W.T + b, atol=1e-4)


@pytest.mark.parametrize("layout", ["flat", "synset"])
def test_analyze_on_an_imagenet_folder(folders, tiny1k, tmp_path, layout):
    from verify.cli import main

    _, w = tiny1k
    out = tmp_path / f"an-{layout}"
    with pytest.warns(UserWarning, match="unreadable"):
        rc = main(["analyze", "--model", "tiny1k:make", "--weights", str(w), "--images", str(folders[layout]),
                   "--input-size", "32", "--categories", "3", "--workers", "1", "--batch-size", "32",
                   "--out", str(out)])
    assert rc == 0
    text = (out / "ANALYZE.md").read_text()
    assert "ImageNet ground-truth labels" in text and "against the ImageNet ground-truth labels" in text
    assert "skipped 1 unreadable file(s)" in text
    if layout == "synset":  # the categories with most positives are named, not numbered
        assert "Egyptian cat" in text or "tabby" in text or "goldfish" in text or "toilet tissue" in text  # noqa
    assert "≈" in text and (out / "figs" / "cls_dim.png").exists()


def test_analyze_checks_device_and_output_before_work(tmp_path, capsys):
    from verify.cli import main

    f = tmp_path / "file"
    f.write_text("x")
    assert main(["analyze", "--out", str(f)]) == 2
    assert "not a folder" in capsys.readouterr().err
    assert main(["analyze", "--device", "nonsense", "--out", str(tmp_path / "o")]) == 2
    if not torch.cuda.is_available():
        assert main(["analyze", "--device", "cuda", "--out", str(tmp_path / "o")]) == 2
        assert "CUDA is not available" in capsys.readouterr().err


def test_report_rounds_at_rounding_level():
    from verify.real.analyze import _fmt

    assert _fmt(-6.7e-16) == "0" and _fmt(0.1234) == "0.123" and _fmt(float("nan")) == "—"


def test_dependency_text_names_categories():
    th = np.zeros(1000)
    th[285], th[282], th[281] = -1, 0.56, 0.2
    t = A.dependency_text(285, th, class_names())
    assert t == "Egyptian cat ≈ 0.56·tiger cat + 0.20·tabby"


def test_grouped_halves_share_no_group():
    g = np.repeat(np.arange(17), 5)
    a, b = A.grouped_halves(g, np.random.default_rng(0))
    assert not set(g[a]) & set(g[b]) and len(a) + len(b) == len(g)


def test_exact_solver_agrees_with_scikit_learn():
    """theory.covlasso (used by sims.real.analysis) against scikit-learn's coordinate descent (test-time only)."""
    from sklearn.linear_model import Lasso

    rng = np.random.default_rng(5)
    F = rng.normal(size=(80, 5)) @ rng.normal(size=(5, 15)) + 0.1 * rng.normal(size=(80, 15))
    C = A.second_moment(F)
    lam = 0.1 * A.lambda_max_i(C, 2)
    th = A.covlasso_path(C, 2, [lam])[0]
    w, U = np.linalg.eigh(C)
    X = np.sqrt(np.clip(w, 0, None))[:, None] * U.T
    rest = np.delete(np.arange(15), 2)
    m = Lasso(alpha=lam / (2 * X.shape[0]), fit_intercept=False, tol=1e-12, max_iter=100_000).fit(X[:, rest], X[:, 2])
    np.testing.assert_allclose(th[rest], m.coef_, atol=1e-6)


# ------------------------------------------------------------------------------------------------ layer by layer
class _Attn(torch.nn.Module):
    """A block returning a tuple (out, weights), like torch.nn.MultiheadAttention."""

    def __init__(self):
        super().__init__()
        self.mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, x):
        return self.mha(x, x, x)


class _Dicty(torch.nn.Module):
    def forward(self, x):
        return {"last_hidden_state": x * 2, "note": "not a tensor"}


class _TokenNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Conv2d(3, 8, 8, stride=8)
        self.attn = _Attn()
        self.dicty = _Dicty()
        self.head = torch.nn.Linear(8, 6)

    def forward(self, x):
        t = self.embed(x).flatten(2).transpose(1, 2)  # (B, tokens, 8)
        t = self.attn(t)[0]
        t = self.dicty(t)["last_hidden_state"]
        return self.head(t.mean(1))


def test_capture_any_named_modules_tuple_and_dict_outputs_in_one_pass():
    from sims.real.blocks import block_curves, block_features

    torch.manual_seed(0)
    net = _TokenNet()

    class Spec:
        module = net

    def batches():
        g = torch.Generator().manual_seed(1)
        for b0 in range(0, 96, 32):
            yield torch.randn(32, 3, 32, 32, generator=g), torch.arange(b0, b0 + 32) % 4

    layers = {"embed": "embed", "attn": "attn", "dicty": "dicty", "features": "head:input"}
    feats = block_features(Spec(), batches(), layers)
    assert feats["embed"].shape == (96, 8) and feats["features"].shape == (96, 8)  # conv output pooled over space
    assert feats["attn"].shape == (96, 8) and feats["dicty"].shape == (96, 8)  # tokens (B, 16, 8) averaged
    np.testing.assert_allclose(feats["dicty"], 2 * feats["attn"], rtol=1e-5, atol=1e-6)
    c = block_curves({k: feats[k] for k in ("logits", "embed", "features")}, ["embed", "features"],
                     feats["source"])
    assert c["width"].tolist() == [8, 8] and np.all(c["pca_dim"] <= 8) and np.all(np.isfinite(c["vci"]))


def test_patch_budget():
    from sims.real.blocks import choose_patch

    dims = [401_408, 200_704] + [75_264] * 4 + [1280]
    assert choose_patch(dims, "cuda") == 16 and choose_patch(dims, "cpu") < 16


@pytest.mark.cuda
def test_capture_folder_on_cuda_matches_cpu(folders, tiny1k):
    if not torch.cuda.is_available():
        pytest.skip("no CUDA GPU")
    spec, w = tiny1k
    files = scan(folders["synset"])
    with pytest.warns(UserWarning, match="broken"):
        cpu = capture_folder(spec, files, batch_size=32, chunk=64, workers=1, progress=False)
    g = user_model("tiny1k:make", w, input_size=32, device="cuda")
    g.key += ":cuda"  # a separate cache entry
    with pytest.warns(UserWarning, match="broken"):
        gpu = capture_folder(g, files, batch_size=32, chunk=64, workers=1, device="cuda", progress=False)
    np.testing.assert_allclose(gpu["logits"], cpu["logits"], rtol=1e-3, atol=1e-3)
