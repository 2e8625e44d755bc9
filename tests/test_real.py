"""Real-model hooks: capture, models, images, analysis numerics, the three real checks, analyze CLI."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest
import torch

from sims.real import analysis as A
from sims.real.capture import ClassMoments, SecondMoment, capture
from sims.real.images import Augmentation, crop_batches, crop_plan, folder, photographs
from sims.real.models import default_model, load_weights, user_model
from tests.helpers import run_quick

TINY_MODEL = '''
import torch
class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, stride=4)
        self.pool = torch.nn.AdaptiveAvgPool2d(2)
        self.head = torch.nn.Linear(16, 5)
    def forward(self, x):
        return self.head(self.pool(torch.relu(self.conv(x))).flatten(1))
class Flat(Tiny):
    def forward(self, x):
        return super().forward(x)[:, 0]
def make():
    torch.manual_seed(0)
    return Tiny()
def make_flat():
    return Flat()
'''


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    """A tiny user classifier module (importable as tinymod:make), its weights, and a folder of 6 PNGs."""
    from PIL import Image

    (tmp_path / "tinymod.py").write_text(TINY_MODEL)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("tinymod", None)
    import tinymod

    w = tmp_path / "tiny.pt"
    torch.save(tinymod.make().state_dict(), w)
    imgs = tmp_path / "imgs"
    imgs.mkdir()
    rng = np.random.default_rng(0)
    for k in range(6):
        Image.fromarray(rng.integers(0, 256, (40 + k, 50, 3), dtype=np.uint8)).save(imgs / f"im{k}.png")
    (imgs / "notes.txt").write_text("not an image")
    return {"weights": w, "images": imgs, "dir": tmp_path}


def _batches(n=24, bs=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    for b0 in range(0, n, bs):
        yield torch.randn(bs, 3, 32, 32, generator=g), torch.arange(b0, b0 + bs) % 3


# ------------------------------------------------------------------------------------------------ capture
def test_capture_streams_moments_that_match_the_kept_rows(tiny):
    spec = user_model("tinymod:make", tiny["weights"], input_size=32)
    res = capture(spec.module, _batches(), {"logits": "output", "feat": "head:input", "pool": "pool"},
                  keep=("logits", "feat"), progress=False)
    L, Fh = res.kept["logits"].astype(float), res.kept["feat"].astype(float)
    assert L.shape == (24, 5) and Fh.shape == (24, 16) and res.n == 24
    np.testing.assert_allclose(res.moments["logits"].second_moment, L.T @ L / 24, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(res.moments["feat"].mean, Fh.mean(0), rtol=1e-5, atol=1e-7)
    W, b = spec.linear()
    np.testing.assert_allclose(L, Fh @ W.T + b, atol=1e-5)  # the input hook sees exactly the classifier's input
    np.testing.assert_array_equal(res.predictions, L.argmax(1))
    # class statistics: Σ_W + Σ_B = total covariance (VC Eq 1–2), against a direct computation
    sw, sb = res.classes["feat"].scatter(res.moments["feat"])
    np.testing.assert_allclose(sw + sb, np.cov(Fh, rowvar=False, bias=True), atol=1e-6)
    y = res.labels
    direct = sum(((Fh[y == c] - Fh[y == c].mean(0)).T @ (Fh[y == c] - Fh[y == c].mean(0))) for c in range(3)) / 24
    np.testing.assert_allclose(sw, direct, atol=1e-6)


def test_capture_streams_vc_class_stats(tiny):
    """VCI from the streamed ClassStats (no activations kept) equals VCI of the kept features (VC Eq 3)."""
    from theory.collapse import vci

    import tinymod

    res = capture(tinymod.make(), _batches(48), {"feat": "head:input"}, keep=("feat",), n_classes=3, progress=False)
    assert np.isclose(vci(res.classes["feat"]), vci(res.kept["feat"].astype(float), res.labels), rtol=1e-5)


def test_second_moment_merge_equals_one_pass():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50, 4))
    a, b = SecondMoment().update(X[:20]), SecondMoment().update(X[20:])
    one = SecondMoment().update(X)
    np.testing.assert_allclose(a.merge(b).second_moment, one.second_moment)
    with pytest.raises(ValueError, match="no samples"):
        SecondMoment().mean
    with pytest.raises(ValueError, match="2 classes"):
        ClassMoments().update(X, np.zeros(50)).scatter(one)


def test_capture_bad_input(tiny):
    import tinymod

    m = tinymod.make()
    with pytest.raises(ValueError, match="does not exist.*closest names.*head"):
        capture(m, _batches(), ["heda"], progress=False)
    with pytest.raises(ValueError, match="2-D logits"):
        capture(tinymod.make_flat(), _batches(), progress=False)
    with pytest.raises(ValueError, match="empty"):
        capture(m, iter([]), progress=False)
    with pytest.raises(ValueError, match="keep"):
        capture(m, _batches(), keep=("feat",), progress=False)
    with pytest.raises(ValueError, match="torch.nn.Module"):
        capture(lambda x: x, _batches(), progress=False)


# ------------------------------------------------------------------------------------------------ models
def test_checkpoint_that_is_not_plain_weights_is_refused(tmp_path, tiny):
    bad = tmp_path / "pickled.pt"
    torch.save({"model": torch.nn.Linear(2, 2)}, bad)  # a pickled Module: not loadable with weights_only
    with pytest.raises(ValueError, match="not a plain weights file"):
        load_weights(bad)
    with pytest.raises(ValueError, match="does not exist"):
        load_weights(tmp_path / "missing.pt")
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="not a plain weights file|cannot read"):
        load_weights(junk)
    wrong = tmp_path / "wrong.pt"
    torch.save({"head.weight": torch.zeros(3, 3)}, wrong)
    with pytest.raises(ValueError, match="do not fit"):
        user_model("tinymod:make", wrong)
    with pytest.raises(ValueError, match="package.module:factory"):
        user_model("tinymod.make")
    with pytest.raises(ValueError, match="cannot import"):
        user_model("no_such_module_xyz:make")


def test_default_model_on_32_crops_hooks_are_exact():
    spec = default_model("lite0")
    ims = photographs()
    assert len(ims) == 17 and {"chelsea", "coffee", "astronaut", "rocket", "china", "flower"} <= set(ims.names)
    aug = Augmentation(size=224)
    plan = crop_plan(ims, 32, aug, seed=3)
    np.testing.assert_array_equal(plan, crop_plan(ims, 32, aug, seed=3))  # seeded
    res = capture(spec.module, crop_batches(ims, plan, aug, batch_size=16), {"logits": "output",
                  "features": "_fc:input"}, keep=("logits", "features"), progress=False)
    L, Fh = res.kept["logits"], res.kept["features"]
    assert L.shape == (32, 1000) and Fh.shape == (32, 1280)
    W, b = spec.linear()
    np.testing.assert_allclose(L, Fh.astype(float) @ W.T + b, atol=2e-3)
    # the cat photograph is a cat (ImageNet 281–285) on most of its crops: the weights are loaded right
    cat = res.labels == ims.names.index("chelsea")
    assert np.mean(np.isin(res.predictions[cat], range(281, 286))) >= 0.5


# ------------------------------------------------------------------------------------------------ images
def test_folder_errors_and_reading(tiny, tmp_path):
    ims = folder(tiny["images"])
    assert len(ims) == 6 and all(im.shape[2] == 3 for im in ims.images)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="empty"):
        folder(empty)
    txt = tmp_path / "txt"
    txt.mkdir()
    (txt / "a.txt").write_text("x")
    (txt / "b.png").write_text("not really a png")
    with pytest.raises(ValueError, match="no readable image"):
        folder(txt)
    with pytest.raises(ValueError, match="not a folder"):
        folder(tmp_path / "nope")


# ------------------------------------------------------------------------------------------------ analysis
def test_covlasso_path_matches_the_reference_solver():
    from theory.covlasso import covlasso_cd

    rng = np.random.default_rng(2)
    F = rng.normal(size=(60, 4)) @ rng.normal(size=(4, 12)) + 0.1 * rng.normal(size=(60, 12))
    C = A.second_moment(F)
    for i in (0, 5):
        lm = A.lambda_max_i(C, i)
        for rho in (0.5, 0.1):
            ref = covlasso_cd(C, i, rho * lm)
            for design in (None, F / np.sqrt(60)):
                th = A.covlasso_path(C, i, [rho * lm], design=design)[0]
                np.testing.assert_allclose(th, ref, atol=1e-6)
                assert A.kkt_residual(C, i, rho * lm, th) < 1e-6
    np.testing.assert_array_equal(A.covlasso_path(C, 0, [1.01 * A.lambda_max_i(C, 0)])[0], -np.eye(12)[0])
    from theory.covlasso import covlasso

    np.testing.assert_allclose(A.covlasso_rho(C, 3, 0.2), covlasso(C, 3, rho=0.2), atol=1e-7)


def test_dependency_metrics_on_an_exact_dependency():
    rng = np.random.default_rng(3)
    F = rng.normal(size=(200, 6))
    F[:, 0] = 2 * F[:, 1] - F[:, 2]
    th = np.array([-1, 2, -1, 0, 0, 0.0])
    m = A.dependency_metrics(F, th, 0)
    assert m["abs_err"] < 1e-12 and m["acc"] == 1.0 and m["support"] == 2


def test_cls_dim_on_planted_low_dimensional_features():
    rng = np.random.default_rng(4)
    Z = rng.normal(size=(400, 3)) * [5, 3, 2]
    F = Z @ rng.normal(size=(3, 40)) + 1e-3 * rng.normal(size=(400, 40))
    W, b = rng.normal(size=(10, 40)), np.zeros(10)
    pc = A.ProjectedClassifier(F, F, W, b)
    r = A.cls_dim(pc, 0.95)
    assert r["cls_dim"] <= 3 and r["agreement_at_d"] == 1.0
    assert A.cls_dim(pc, 0.95, against=rng.permutation(pc.y_full))["cls_dim"] is None
    with pytest.raises(ValueError, match="threshold"):
        A.cls_dim(pc, 0)


# ------------------------------------------------------------------------------------------------ checks
@pytest.mark.slow
@pytest.mark.parametrize("cid", ["nd.table1_metrics", "rd.cls_dim", "rd.independence_deficit"])
def test_real_checks(cid, monkeypatch):
    """Without THEORYLAB_IMAGENET_VAL the checks judge the glyph networks (sims/glyphs/networks.py; quick: 100 code
    points): pass or refuted with their controls, never the photographs' 'reported' (tests/test_checks_glyph_real.py
    has the cheap tests on stand-in networks)."""
    monkeypatch.delenv("THEORYLAB_IMAGENET_VAL", raising=False)
    out = run_quick(cid)
    if cid != "rd.cls_dim" and out.status == "reported":  # the quick nets' 100 code points are not massive (d = 128)
        assert out.regime and ("massive categories" in out.finding or "a finding about that choice" in out.finding)
    else:
        assert out.status in ("pass", "refuted"), (out.error, out.measured, out.details)
    assert "glyph network lenet-s0" in out.details["inputs"]
    assert out.negative_control_result == "failed as it should"
    if cid != "rd.cls_dim":  # the existential scan: every category, every ρ of the grid, counts and the closest
        scan = out.details["existential scan"]
        assert scan["scanned (category, ρ) pairs with support ≤ 4 (every category, ρ in the grid)"] > 0
        best = scan["closest to the picture (smallest miss on both sets, among the selected, else among all)"]
        assert best is None or best["support"] <= 4
    if cid == "nd.table1_metrics":  # the typical reading: a reported line of its own
        (line,) = out.readings.values()
        assert line["quantifier"] == "typical"
        rows = out.details["typical reading: per category (Table 1 columns)"]
        assert all("≈" in r["dependency"] for r in rows.values())


def test_existential_scan_finds_a_planted_dependency_and_not_a_random_one():
    """ND Sec 2.1's 'there exist' reading on synthetic logits with an exact planted dependency (category 0, support 3)
    and a shared per-image offset: category 0 is selected on one half and confirmed on the other; the same scan with
    every dependency replaced by random categories (the negative control's wrong solver) confirms nothing."""
    L, truth = A.planted_logits(seed=0)
    h = len(L) // 2
    C = A.second_moment(L[:h])
    rows = A.dependency_scan(C, (0.2, 0.05, 0.02, 0.005), (L[:h], None), (L[h:], None))
    ex = A.existential(rows)
    assert ex["holds"] and {r["category"] for r in ex["confirmed"]} == {0}
    assert min(r["support"] for r in ex["confirmed"]) <= 3
    rng = np.random.default_rng(0)
    bad = A.existential(A.dependency_scan(C, (0.2, 0.05, 0.02, 0.005), (L[:h], None), (L[h:], None),
                                          thetas_for=lambda i, th: A.random_support_theta(
                                              C, i, int(np.count_nonzero(np.delete(th, i))), rng)))
    assert not bad["holds"] and bad["miss"] > 1


def test_picture_miss_reads_each_part_of_table_1():
    m = {"support": 4, "spread_rel_err": 0.3, "acc": 0.95, "orig_acc": 1.0, "pos_acc": 0.85, "orig_pos_acc": 1.0}
    assert max(A.picture_miss(m).values()) == pytest.approx(1.0)
    assert A.picture_miss({**m, "support": 5})["support"] > 1
    assert A.picture_miss({**m, "pos_acc": None, "orig_pos_acc": None})["pos_acc"] == float("inf")  # no positives
    assert A.picture_miss({**m, "orig_pos_acc": 0.0})["pos_acc"] == float("inf")  # nothing to keep


@pytest.mark.slow
def test_real_checks_are_judged_on_an_imagenet_folder(tmp_path, monkeypatch):
    """With THEORYLAB_IMAGENET_VAL=DIR (a generated synset folder) the checks judge (never 'reported')."""
    from PIL import Image

    from sims.real.imagenet import synsets
    from verify.checks.real import trained_networks as R

    rng = np.random.default_rng(0)
    ims = photographs()
    for c, photo in ((285, "chelsea"), (967, "coffee"), (409, "clock"), (812, "rocket")):
        d = tmp_path / "val" / synsets()[c]
        d.mkdir(parents=True)
        im = ims.images[ims.names.index(photo)]
        h, w = im.shape[:2]
        for k in range(12):  # random crops of the photograph, so that predictions vary
            t, l = rng.integers(0, h // 3), rng.integers(0, w // 3)
            Image.fromarray(im[t:t + 2 * h // 3, l:l + 2 * w // 3]).save(d / f"{k}.JPEG")
    monkeypatch.setenv("THEORYLAB_IMAGENET_VAL", str(tmp_path / "val"))
    monkeypatch.setenv("THEORYLAB_CACHE", str(tmp_path / "cache"))
    R._SOLVED.clear()
    try:
        for cid in ("nd.table1_metrics", "rd.cls_dim"):
            out = run_quick(cid)
            assert out.status in ("pass", "refuted"), (cid, out.status, out.error)
            assert "ImageNet validation folder" in out.details["inputs"]
            if cid == "nd.table1_metrics":  # the existential scan over every category, and the typical line
                assert out.details["existential scan"]["ρ grid"] and len(out.readings) == 1
    finally:
        R._SOLVED.clear()


# ------------------------------------------------------------------------------------------------ analyze CLI
def test_analyze_cli_on_a_tiny_user_model(tiny, tmp_path, monkeypatch):
    from verify.cli import main

    monkeypatch.setenv("THEORYLAB_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "an"
    rc = main(["analyze", "--model", "tinymod:make", "--weights", str(tiny["weights"]), "--images",
               str(tiny["images"]), "--crops", "48", "--input-size", "32", "--categories", "3", "--out", str(out)])
    assert rc == 0
    text = (out / "ANALYZE.md").read_text()
    assert "Table 1" in text and "ClsDim" in text and "agreement with the unmodified model" in text
    assert (out / "figs" / "cls_dim.png").exists()
    # bad input: clear errors, exit code 2
    assert main(["analyze", "--model", "tinymod:make", "--images", str(tmp_path / "nope"), "--out", str(out)]) == 2
    bad = tmp_path / "bad.pt"
    torch.save({"m": torch.nn.Linear(2, 2)}, bad)
    assert main(["analyze", "--model", "tinymod:make", "--weights", str(bad), "--images", str(tiny["images"]),
                 "--out", str(out)]) == 2
    assert main(["analyze", "--model", "tinymod:make_flat", "--images", str(tiny["images"]), "--crops", "16",
                 "--input-size", "32", "--out", str(out)]) == 2


def test_user_model_is_found_in_the_current_folder(tmp_path, monkeypatch):
    """`--model mod:factory` finds mod.py in the current folder, as `python -m` would (not via sys.path)."""
    name = "cwdmod_" + os.urandom(4).hex()
    (tmp_path / f"{name}.py").write_text(TINY_MODEL)
    monkeypatch.chdir(tmp_path)
    sys.modules.pop(name, None)
    before = list(sys.path)
    try:
        spec = user_model(f"{name}:make", input_size=32)
        assert spec.module is not None
    finally:
        sys.modules.pop(name, None)
    assert sys.path == before          # the folder is not left on sys.path


def test_existential_miss_is_above_one_whenever_nothing_is_confirmed():
    """An unselected pair that shows the picture on the test images alone is no confirmation: the existential miss is
    the larger of its two misses, so holds False never comes with a miss ≤ 1 (an independent review hit that
    contradiction)."""
    from sims.real import analysis as A

    rows = [{"category": 0, "rho": 0.1, "support": 2, "select_miss": 1.4, "test_miss": 0.9},
            {"category": 1, "rho": 0.1, "support": 3, "select_miss": 2.0, "test_miss": 1.1}]
    ex = A.existential(rows)
    assert not ex["holds"] and ex["miss"] == 1.4 and ex["best"]["category"] == 0
    rows.append({"category": 2, "rho": 0.2, "support": 1, "select_miss": 0.8, "test_miss": 0.95})
    ex = A.existential(rows)
    assert ex["holds"] and ex["miss"] == 0.95
