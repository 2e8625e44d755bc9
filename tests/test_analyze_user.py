"""``theorylab analyze`` on a researcher's own model and data: labels from class sub-folders or a CSV file, held-out
VCI / probe loss where N ≤ d, rank-deficient features (dead channels), --classifier, one crop policy, strict input,
progress bars, JSON output, no torch/functorch warnings.

Tiny CNNs and a few 24×28 PNGs written to tmp_path keep every run to a few seconds; the CLI runs through
subprocesses where stdout/stderr matter (JSON on stdout only, progress bars, tracebacks)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from sims.real import collapse as VC

ROOT = Path(__file__).resolve().parents[1]

DEAD_CNN = '''
import torch
class Dead(torch.nn.Module):
    """8 conv channels, 3 (6 with bn) of them dead (bias -100: ReLU output 0 for every image)."""
    def __init__(self, bn=False, n_out=3):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, stride=4)
        self.pool = torch.nn.AdaptiveAvgPool2d(2)
        self.bn = torch.nn.BatchNorm1d(32) if bn else torch.nn.Identity()
        self.fc = torch.nn.Linear(32, n_out)
        with torch.no_grad():
            self.conv.bias[:6 if bn else 3] = -100.0
            if bn:  # dead channels through BatchNorm: a constant nonzero feature, Σ_B rank-deficient
                self.bn.bias.uniform_(0.5, 1.0)
    def forward(self, x):
        return self.fc(self.bn(self.pool(torch.relu(self.conv(x))).flatten(1)))
class ConvHead(torch.nn.Module):
    """The last layer is a 1×1 Conv2d, not an nn.Linear."""
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, stride=4), torch.nn.ReLU(),
                                        torch.nn.AdaptiveAvgPool2d(1))
        self.cls = torch.nn.Conv2d(8, 3, 1)
    def forward(self, x):
        return self.cls(self.body(x)).flatten(1)
def make():
    torch.manual_seed(0)
    return Dead()
def make_bn():
    torch.manual_seed(0)
    return Dead(bn=True)
def make_five():
    torch.manual_seed(0)
    return Dead(n_out=5)
def make_head():
    torch.manual_seed(0)
    return ConvHead()
'''
CLASSES = ("cat", "dog", "fish")
PER_CLASS = 6  # N = 18 samples ≤ 20 live features + 1: the in-sample probe interpolates


@pytest.fixture
def own(tmp_path, monkeypatch):
    """deadcnn.py + weights, and an ImageFolder layout root/<class>/<img>.png (3 classes × 6 tinted images)."""
    from PIL import Image

    (tmp_path / "deadcnn.py").write_text(DEAD_CNN)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("THEORYLAB_CACHE", str(tmp_path / "cache"))
    sys.modules.pop("deadcnn", None)
    import deadcnn

    w = tmp_path / "dead.pt"
    torch.save(deadcnn.make().state_dict(), w)
    wbn = tmp_path / "deadbn.pt"
    torch.save(deadcnn.make_bn().state_dict(), wbn)
    rng = np.random.default_rng(0)
    root = tmp_path / "imgs"
    for c, name in enumerate(CLASSES):
        (root / name).mkdir(parents=True)
        for k in range(PER_CLASS):
            a = rng.integers(0, 136, (24, 28, 3))
            a[..., c] += 120  # each class tinted by one colour: separable
            Image.fromarray(a.astype(np.uint8)).save(root / name / f"{name}{k}.png")
    return {"dir": tmp_path, "images": root, "weights": w, "weights_bn": wbn}


def _cli(args, cwd, env_extra=None, timeout=240):
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{cwd}", **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "verify.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


# ------------------------------------------------------------------------------------------- held-out VC numerics
def test_the_probe_fitted_and_scored_on_the_same_samples_is_thm_5_1():
    """probe_transfer with A = B is theory.collapse's optimal probe loss (balanced and imbalanced classes)."""
    from theory.collapse import probe_loss

    rng = np.random.default_rng(1)
    everything = np.arange(300)
    for y in (np.repeat(np.arange(4), 75), rng.integers(0, 4, 300)):
        F = rng.normal(size=(300, 20)) + 2 * np.eye(20)[y]
        assert VC.probe_transfer(F, y, everything, everything, 4)[0] == pytest.approx(probe_loss(F, y), rel=1e-9)


@pytest.mark.parametrize("N,d,K", [(72, 1280, 3), (40, 1280, 2), (60, 512, 4)])
def test_held_out_vci_of_noise_is_at_chance_where_in_sample_is_zero(N, d, K):
    """Gaussian features, random labels, N ≤ d: in-sample VCI and probe loss are 0 (the probe interpolates);
    the held-out versions sit at chance (VCI 1, probe loss ½(1 − Σπ²)), not at 0."""
    from theory.collapse import metrics

    rng = np.random.default_rng(N + d)
    F, y = rng.normal(size=(N, d)), rng.integers(0, K, N)
    met = metrics(F, y)
    assert abs(met["vci"]) < 1e-9 and abs(met["probe_loss"]) < 1e-9 and VC.interpolates(F)
    ho = VC.held_out(F, y, met["rank"], seed=0)
    assert 0.85 < ho["vci"] < 1.2, ho
    assert abs(ho["probe_loss"] - ho["chance_probe_loss"]) < 0.15 * ho["chance_probe_loss"], ho
    assert ho["probe_acc"] < ho["chance_acc"] + 0.25


def test_held_out_probe_near_the_interpolation_threshold_is_worse_than_chance():
    """N/2 fit samples close to d: the interpolating probe over-fits; held out it scores worse than the constant
    probe (VCI above 1), never the in-sample 0."""
    rng = np.random.default_rng(7)
    F, y = rng.normal(size=(60, 64)), rng.integers(0, 4, 60)
    ho = VC.held_out(F, y, 3, seed=0)
    assert ho["vci"] > 1.1 and ho["probe_loss"] > ho["chance_probe_loss"]


def test_held_out_vci_of_separated_classes_is_near_the_in_sample_value():
    from theory.collapse import metrics

    rng = np.random.default_rng(2)
    y = np.repeat(np.arange(3), 200)
    F = rng.normal(size=(600, 16)) + 3 * np.eye(16)[y]
    met = metrics(F, y)
    ho = VC.held_out(F, y, met["rank"], seed=0)
    assert not VC.interpolates(F)
    assert abs(ho["vci"] - met["vci"]) < 0.05 and abs(ho["probe_loss"] - met["probe_loss"]) < 0.02
    assert ho["probe_acc"] > 0.9


def test_held_out_probe_is_not_swamped_by_near_dead_channels():
    """Separable classes at N ≤ d plus 200 near-dead columns (noise of size 1e-4, as real CNN features have): the
    held-out probe still separates the classes (in the features' own coordinates; standardising each column
    would blow those columns' noise up to the size of the signal: accuracy 0.54, VCI 0.85)."""
    rng = np.random.default_rng(5)
    y = np.repeat(np.arange(3), 24)
    F = np.c_[rng.normal(size=(72, 100)) + 5 * np.eye(100)[y], 1e-4 * rng.normal(size=(72, 200))]
    assert VC.interpolates(F)
    ho = VC.held_out(F, y, 2, seed=0)
    assert ho["probe_acc"] > 0.9 and ho["vci"] < 0.4 and ho["probe_loss"] < 0.4 * ho["chance_probe_loss"]


def test_vc_heading_names_the_class_the_metrics_use():
    """One place decides the class: labels, else the source image of each crop, else the predicted class."""
    from verify.real.vc_section import vc_section

    rng = np.random.default_rng(4)
    L = rng.normal(size=(60, 3))
    F = rng.normal(size=(60, 8)) + 3 * np.eye(8)[L.argmax(1)]
    src = np.arange(60) % 5
    cases = [({"labels": src % 2, "per_image": True}, "the true class", 2),
             ({"labels": None, "per_image": False, "groups": src}, "the source image", 5),
             ({"labels": None, "per_image": True, "groups": np.arange(60)}, "the model's predicted class", 3)]
    for d, what, K in cases:
        md, out = vc_section(F, {**d, "logits": L}, "auto", 0)
        assert md[0].startswith(f"## Variability collapse of the final features (VC), class = {what}")
        assert out["classes"] == K and out["class"].startswith(what)


def test_stratified_halves_keep_groups_apart():
    y = np.repeat([0, 1], 12)
    g = np.repeat(np.arange(6), 4)  # 3 source images per class, 4 crops each
    A, B = VC.stratified_halves(y, np.random.default_rng(0), g)
    assert not set(g[A]) & set(g[B]) and set(y[A]) == set(y[B]) == {0, 1}


def test_rank_policy_on_rank_deficient_features():
    """Zero columns (dead channels) are dropped; a constant nonzero column leaves Σ_B short of min(p, K − 1):
    'paper' is refused by theory, 'auto' takes the exact rank and says so."""
    rng = np.random.default_rng(3)
    y = np.repeat(np.arange(8), 10)
    F = rng.normal(size=(80, 6)) + 2 * np.eye(6)[y % 6]
    F = np.c_[F, np.zeros((80, 2)), np.full((80, 1), 0.7)]  # 2 dead columns, 1 constant column
    r = VC.vc_metrics(F, y, "auto")
    assert r["dead"] == 2 and r["features"].shape[1] == 7
    assert r["rank_policy"] == "exact" and r["metrics"]["rank"] == 6 and "not resolved" in r["rank_note"]
    with pytest.raises(ValueError, match="Σ_B"):
        VC.vc_metrics(F, y, "paper")
    assert VC.vc_metrics(F, y, 5)["metrics"]["rank"] == 5


# ------------------------------------------------------------------------------------------- labels
def test_labels_from_class_folders_and_from_a_mapping_file(own, tmp_path):
    from sims.real.imagenet import scan

    f = scan(own["images"], labels="auto")
    assert f.layout == "folders" and f.classes == list(CLASSES) and len(f) == 3 * PER_CLASS
    assert [Path(p).parts[0] for p in f.files] == [CLASSES[k] for k in f.labels]
    assert "class sub-folders" in f.source and "0 = cat" in f.source
    assert scan(own["images"], labels="none").layout == "unlabelled"
    assert scan(own["images"]).layout == "unlabelled"  # the checks' default: ImageNet labels only
    csv = tmp_path / "labels.csv"
    rows = "".join(f"{p},{'odd' if k % 2 else 'even'}\n" for k, p in enumerate(f.files[:10]))
    csv.write_text("filename,label\n" + rows)
    g = scan(own["images"], labels=str(csv))
    assert g.layout == "csv" and g.classes == ["even", "odd"] and "mapping file" in g.source
    assert g.labels[:10].tolist() == [k % 2 for k in range(10)] and (g.labels[10:] == -1).all()
    csv.write_text("nothere.png,1\n")
    with pytest.raises(ValueError, match="match no image"):
        scan(own["images"], labels=str(csv))
    csv.write_text("cat/cat0.png\n")
    with pytest.raises(ValueError, match="not 'filename,label'"):
        scan(own["images"], labels=str(csv))


def test_labels_that_cannot_be_logits_are_refused_and_a_class_count_mismatch_is_stated(own, tmp_path):
    from verify.cli import main

    csv = tmp_path / "l.csv"
    csv.write_text("".join(f"{c}/{c}0.png,{k * 3}\n" for k, c in enumerate(CLASSES)))  # label 6 > 3 logits
    base = ["analyze", "--images", str(own["images"]), "--input-size", "32", "--categories", "2", "-q"]
    assert main(base + ["--model", "deadcnn:make", "--labels", str(csv), "--out", str(tmp_path / "a")]) == 2
    assert main(base + ["--model", "deadcnn:make_five", "--out", str(tmp_path / "b"), "--json",
                        str(tmp_path / "b.json")]) == 0
    res = json.loads((tmp_path / "b.json").read_text())
    # 3 class sub-folders are not the 5 logits: read unlabelled (no accuracy against sub-folder k = logit k), saying
    # so, and the VC section groups the features by the folders' classes
    assert "3 classes (cat, dog, fish) are not the model's 5 classes" in res["label_note"]
    assert res["labelled"] is False and res["top1_accuracy"] is None
    assert res["vc"]["class"].startswith("the folder's class") and res["vc"]["classes"] == 3
    md = (tmp_path / "b" / "ANALYZE.md").read_text()
    assert "the logits are read unlabelled" in md and "not the model's classes" in md


# ------------------------------------------------------------------------------------------- strict input
@pytest.mark.parametrize("args,match", [
    (["--categories", "0"], "--categories"), (["--crops", "3"], "--crops"), (["--batch-size", "0"], "--batch-size"),
    (["--rank", "half"], "--rank"), (["--seed", "-1"], "--seed"), (["--classifier", "fc"], "--classifier needs"),
    (["--labels", "nope.csv", "--images", "."], "--labels"), (["--workers", "-2"], "--workers")])
def test_bad_arguments_are_refused_before_any_work(tmp_path, capsys, args, match):
    from verify.cli import main

    assert main(["analyze", "--out", str(tmp_path / "o"), *args]) == 2
    err = capsys.readouterr().err
    assert match in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_verbose_prints_the_traceback_and_categories_zero_does_no_work(tmp_path):
    r = _cli(["analyze", "--categories", "0", "--out", str(tmp_path / "o")], tmp_path)
    assert r.returncode == 2 and "--categories: must be an integer >= 1" in r.stderr and "Traceback" not in r.stderr
    assert "capture" not in r.stderr and r.stdout == ""
    v = _cli(["-v", "analyze", "--categories", "0", "--out", str(tmp_path / "o")], tmp_path)
    assert v.returncode == 2 and "Traceback (most recent call last)" in v.stderr and "ValueError" in v.stderr


def test_verbose_after_the_subcommand_also_prints_the_traceback(tmp_path, capsys):
    from verify.cli import main

    assert main(["analyze", "-v", "--crops", "3", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "--crops: must be an integer >= 8" in err


def test_a_classifier_that_is_not_linear(own, tmp_path):
    from verify.cli import main

    base = ["analyze", "--model", "deadcnn:make_head", "--images", str(own["images"]), "--input-size", "32",
            "--categories", "2", "-q", "--out", str(tmp_path / "h")]
    assert main(base) == 2  # no nn.Linear: the error names --classifier
    assert main(base + ["--classifier", "body"]) == 2  # a Sequential is not an affine map
    assert main(base + ["--classifier", "cls", "--json", str(tmp_path / "h.json")]) == 0
    res = json.loads((tmp_path / "h.json").read_text())
    assert res["feature_dim"] == 8 and res["logits_affine_gap"] < 1e-5 and res["vc"]["classes"] == 3


# ------------------------------------------------------------------------------------------- the CLI end to end
def test_own_folder_json_on_stdout_labels_caveat_and_no_warnings(own):
    """ImageFolder labels are used and named; N = 24 ≤ d: the caveat and held-out values; --json - is JSON only."""
    r = _cli(["analyze", "--model", "deadcnn:make", "--weights", str(own["weights"]), "--images", str(own["images"]),
              "--input-size", "32", "--categories", "3", "--out", str(own["dir"] / "an"), "--json", "-", "-q"],
             own["dir"])
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)  # stdout holds the JSON object and nothing else
    assert r.stdout.strip().startswith("{") and r.stdout.strip().endswith("}")
    assert "class sub-folders" in res["labelling"] and res["labelled"]
    assert "one ImageNet evaluation crop" in res["crops"]
    assert res["n_samples"] == 3 * PER_CLASS and res["top1_accuracy"] is not None
    vc = res["vc"]
    assert vc["class"].startswith("the true class") and vc["dead_columns"] == 12 and vc["interpolates"]
    assert abs(vc["in_sample"]["vci"]) < 1e-9 and vc["held_out"]["vci"] is not None
    assert "analysis:" in r.stderr and "%|" not in r.stderr  # -q: no bars
    assert "not writable" not in r.stderr and "as_strided" not in r.stderr and "Warning" not in r.stderr
    text = (own["dir"] / "an" / "ANALYZE.md").read_text()
    assert "Labels: labels from the 3 class sub-folders" in text and "class = the true class" in text
    assert "the in-sample linear probe interpolates any labels" in text and "| vci | 0 |" in text


def test_random_crops_rank_deficient_features_progress_and_headings(own):
    """--crops N on a user model (random crops, class = source image): dead channels through BatchNorm make Σ_B
    rank-deficient; the VC section is computed with the exact rank and says so. Progress bars count img/s."""
    r = _cli(["analyze", "--model", "deadcnn:make_bn", "--weights", str(own["weights_bn"]), "--images",
              str(own["images"]), "--labels", "none", "--crops", "96", "--input-size", "32", "--categories", "2",
              "--out", str(own["dir"] / "rc"), "--json", str(own["dir"] / "rc.json")], own["dir"])
    assert r.returncode == 0, r.stderr
    assert "img/s" in r.stderr and "analyze (" in r.stderr  # capture bar with its rate, the steps bar
    for inner in ("ND Table 1 (CovLasso)", "ClsDim (PCA, k)", "VC (metrics, rank, held-out probe)"):
        assert inner in r.stderr  # the longer steps have bars of their own
    res = json.loads((own["dir"] / "rc.json").read_text())
    vc = res["vc"]
    assert "error" not in vc and vc["rank_policy"] == "exact" and vc["rank"] < 32
    assert vc["class"].startswith("the source image") and "96 seeded random-resized crops" in res["crops"]
    text = (own["dir"] / "rc" / "ANALYZE.md").read_text()
    assert "class = the source image of each crop" in text and "rank 'exact'" in text and "not computed" not in text
    assert "not writable" not in r.stderr and "as_strided" not in r.stderr


def test_capture_and_block_jacobians_emit_no_torch_warning(own):
    """The causes are fixed (own copies of read-only pixels; the pool as a mean under vmap), not filtered: a fresh
    process (torch warns once per process) turns every UserWarning into an error."""
    code = (
        "import torch\n"
        "from sims.real.blocks import block_jacobian_ranks\n"
        "from sims.real.images import Augmentation, crop_batches, crop_plan, folder\n"
        "from sims.real.models import default_model\n"
        f"ims = folder({str(own['images'])!r})\n"
        "aug = Augmentation(size=32)\n"
        "x, _ = next(crop_batches(ims, crop_plan(ims, 4, aug, 0), aug))\n"
        "r = block_jacobian_ranks(default_model('lite0'), torch.randn(1, 3, 64, 64), patch=2)\n"
        "print(tuple(x.shape), len(r['ranks']))\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-W", "error::UserWarning", "-c", code], cwd=own["dir"], env=env,
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["(4,", "3,", "32,", "32)", "19"]


# ------------------------------------------------------------------------------------------------- issue 37, §2
def test_changing_only_the_labels_reuses_the_capture_and_the_report_links_resolve(own, monkeypatch):
    """The capture is cached by model, weights and images: a second run that changes only --labels reads no image
    (the forward pass is not called again); ANALYZE.md links only to figures it wrote."""
    import sims.real.capture as cap
    from tests.test_user_path import assert_links_resolve, markdown_links
    from verify.real.analyze import run

    calls, real = [], cap.capture

    def counted(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(cap, "capture", counted)
    kw = dict(model="deadcnn:make", weights=own["weights"], images=own["images"], input_size=32, k=2, workers=0,
              progress=False)
    first = run(own["dir"] / "l1", labels="auto", **kw)
    assert calls and first["labelled"] is True
    n = len(calls)
    second = run(own["dir"] / "l2", labels="none", **kw)
    assert len(calls) == n and second["labelled"] is False            # the same capture, read from the cache
    assert second["n_samples"] == first["n_samples"]
    for res in (first, second):
        assert markdown_links(res["markdown"]) and assert_links_resolve(res["markdown"]) is None


def test_cls_dim_is_never_printed_as_an_impossible_number(own, monkeypatch):
    """When no k reaches the threshold (the model's accuracy against the labels is 0 %), ClsDim is 'undefined here'
    with the reason, null in the JSON: never −1 or a negative ratio."""
    import paper_figs.real as figs
    from verify.real.analyze import run

    real = figs.cls_dim_curve

    def nothing_to_keep(*a, **k):
        return {**real(*a, **k), "cls_dim": -1, "full_acc": 0.0, "threshold": 0.0}

    monkeypatch.setattr(figs, "cls_dim_curve", nothing_to_keep)
    res = run(own["dir"] / "cd", model="deadcnn:make", weights=own["weights"], images=own["images"], input_size=32,
              k=2, workers=0, progress=False)
    assert res["rd"]["cls_dim"] is None and res["rd"]["cls_dim_ratio"] is None
    md = Path(res["markdown"]).read_text()
    (line,) = [ln for ln in md.splitlines() if ln.startswith("ClsDim")]
    assert "undefined here" in line and "accuracy against the labels is 0 %" in line
    assert "-1" not in line and "ratio -" not in md


def test_a_failing_model_factory_leaves_no_output_folder(own):
    (own["dir"] / "failing.py").write_text("def make():\n    raise RuntimeError('planted: no model')\n")
    r = _cli(["analyze", "--model", "failing:make", "--images", str(own["images"]), "--out", "never"], own["dir"])
    assert r.returncode == 2 and "planted: no model" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (own["dir"] / "never").exists()
