"""The glyph CNNs (sims.glyphs.nets), their trainer and cache (sims.glyphs.train), and their read-out
(sims.glyphs.features). Training runs on a small stand-in task with the glyph task's interface (random class
templates plus noise), so the tests take seconds; one test trains on the real glyph task when it is installed."""
from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from sims.glyphs import features as gf
from sims.glyphs import nets, train
from theory import collapse as vc


@dataclasses.dataclass(frozen=True)
class StandInConfig:
    n_classes: int = 12
    size: int = 16
    seed: int = 0


class StandInTask:
    """The glyph task's interface: labels(level), images(split, per_class, seed) -> (X, y, face), faces."""

    faces = ("A", "B", "C", "D", "E")
    train_faces = (0, 1, 2)
    test_faces = (3, 4)

    def __init__(self, cfg):
        self.cfg = cfg
        rng = np.random.default_rng(cfg.seed)
        self.templates = rng.random((cfg.n_classes, 1, cfg.size, cfg.size)) > 0.6

    def labels(self, level):
        k = np.arange(self.cfg.n_classes)
        return {"fine": k, "base": k // 2, "script": k // 6}[level]

    def images(self, split, per_class, seed, classes=None):
        rng = np.random.default_rng([seed, {"train": 0, "aug_test": 1, "face_test": 2}[split]])
        y = np.repeat(np.arange(self.cfg.n_classes), per_class)
        faces = self.train_faces if split != "face_test" else self.test_faces
        face = rng.choice(faces, size=len(y))
        X = 0.8 * self.templates[y] + 0.3 * rng.random((len(y), 1, self.cfg.size, self.cfg.size))
        keep = np.ones(len(y), bool) if classes is None else np.isin(y, classes)  # the whole draw's bytes
        return X[keep].astype(np.float32).clip(0, 1), y[keep].astype(np.int64), face[keep].astype(np.int64)


@pytest.fixture()
def stand_in(tmp_path, monkeypatch):
    monkeypatch.setenv("THEORYLAB_CACHE", str(tmp_path / "cache"))
    calls = []

    def load(cfg):
        calls.append(cfg)
        return StandInTask(cfg)

    monkeypatch.setattr(train, "_load_task", load)
    return calls


TINY = dict(epochs=2, per_class=6, batch_size=16, progress=False, device="cpu")


def _weights(net):
    return {k: v.detach().cpu().clone() for k, v in net.state_dict().items()}


@pytest.mark.parametrize("arch", nets.ARCHS)
def test_same_seed_gives_identical_weights_and_other_seed_does_not(stand_in, arch):
    a = train.train_glyph_net(StandInConfig(), arch=arch, seed=3, **TINY)
    b = train.train_glyph_net(StandInConfig(), arch=arch, seed=3, refresh=True, **TINY)
    c = train.train_glyph_net(StandInConfig(), arch=arch, seed=4, **TINY)
    assert not a.from_cache and not b.from_cache
    wa, wb, wc = _weights(a.model), _weights(b.model), _weights(c.model)
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    assert any(not torch.equal(wa[k], wc[k]) for k in wa if wa[k].is_floating_point())
    assert np.array_equal(a.history["loss"], b.history["loss"])


class _TextbookLeNet(torch.nn.Module):
    """LeNet in the textbook layout, written out here on its own: conv-BN-ReLU-pool, out-of-place ReLUs (the same
    parameter names as nets.LeNet, so its state dict loads strictly)."""

    def __init__(self, n_classes, size, feat_dim=128, width=16, hidden=256):
        super().__init__()
        nn_ = torch.nn
        c1, c2 = width, 2 * width
        self.conv1 = nn_.Sequential(nn_.Conv2d(1, c1, 5, padding=2, bias=False), nn_.BatchNorm2d(c1), nn_.ReLU(),
                                    nn_.MaxPool2d(2))
        self.conv2 = nn_.Sequential(nn_.Conv2d(c1, c2, 5, padding=2, bias=False), nn_.BatchNorm2d(c2), nn_.ReLU(),
                                    nn_.MaxPool2d(2))
        self.fc1 = nn_.Sequential(nn_.Flatten(), nn_.Linear(c2 * (size // 4) ** 2, hidden, bias=False),
                                  nn_.BatchNorm1d(hidden), nn_.ReLU())
        self.fc2 = nn_.Sequential(nn_.Linear(hidden, feat_dim), nn_.ReLU())
        self.classifier = nn_.Linear(feat_dim, n_classes)
        self.stages = ("conv1", "conv2", "fc1", "fc2")

    def forward(self, x):
        return self.classifier(self.fc2(self.fc1(self.conv2(self.conv1(x)))))


def _textbook(net):
    """The reference for ``net``: the LeNet written out above with ``net``'s weights; for the ResNet (whose layout
    did not change) a copy with out-of-place ReLUs."""
    import copy

    if isinstance(net, nets.LeNet):
        ref = _TextbookLeNet(net.classifier.out_features, 16).to(memory_format=torch.channels_last)
        ref.load_state_dict(net.state_dict(), strict=True)
        return ref
    ref = copy.deepcopy(net)
    for m in ref.modules():
        if isinstance(m, torch.nn.ReLU):
            m.inplace = False
    return ref


@pytest.mark.parametrize("arch", nets.ARCHS)
def test_pooling_before_relu_and_in_place_relus_change_no_bit(arch):
    """The nets pool before the ReLU and use in-place ReLUs (faster): outputs, per-stage features and gradients
    equal the textbook layout's bit for bit, in training mode (batch statistics) and in eval mode."""
    net = nets.build_net(arch, 7, size=16, seed=3).to(memory_format=torch.channels_last)
    ref = _textbook(net)
    x = torch.randn(6, 1, 16, 16, generator=torch.Generator().manual_seed(0)).contiguous(
        memory_format=torch.channels_last)
    x[:, :, :4] = -1.0  # whole pooling windows of negative values
    y = torch.arange(6) % 7
    for mode in ("train", "eval"):
        net.train(mode == "train")
        ref.train(mode == "train")
        outs = []
        for m in (net, ref):
            m.zero_grad(set_to_none=True)
            feats = {}
            hooks = [getattr(m, s).register_forward_hook(lambda mod, i, o, s=s: feats.__setitem__(s, o.clone()))
                     for s in m.stages]
            z = m(x)
            for h in hooks:
                h.remove()
            F.cross_entropy(z, y).backward()
            outs.append((z.detach(), feats, {k: p.grad.clone() for k, p in m.named_parameters()}))
        (z1, f1, g1), (z2, f2, g2) = outs
        assert torch.equal(z1, z2)
        assert all(torch.equal(f1[s], f2[s]) for s in net.stages)
        assert g1.keys() == g2.keys() and all(torch.equal(g1[k], g2[k]) for k in g1)


def test_initialisation_depends_only_on_the_generator():
    g1, g2 = torch.Generator().manual_seed(7), torch.Generator().manual_seed(7)
    torch.manual_seed(0)
    a = nets.build_net("resnet", 10, 32, generator=g1)
    torch.manual_seed(123)  # the global RNG must not matter
    b = nets.build_net("resnet", 10, 32, generator=g2)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


def test_cache_hit_then_miss_on_a_parameter_or_code_change(stand_in, monkeypatch):
    a = train.train_glyph_net(StandInConfig(), **TINY)
    b = train.train_glyph_net(StandInConfig(), **TINY)
    assert not a.from_cache and b.from_cache and len(stand_in) == 1
    assert all(torch.equal(x, y) for x, y in zip(_weights(a.model).values(), _weights(b.model).values()))
    assert np.array_equal(a.history["train_acc"], b.history["train_acc"]) and b.seconds == a.seconds
    assert not b.model.training
    # a parameter change retrains
    assert not train.train_glyph_net(StandInConfig(), tau=0.5, **TINY).from_cache
    assert not train.train_glyph_net(StandInConfig(seed=1), **TINY).from_cache
    # the key holds the fingerprint of the trainer's code and of the nets it imports
    from sims.codehash import code_fingerprint

    assert {"sims.glyphs.train", "sims.glyphs.nets"} <= set(code_fingerprint(train.train_glyph_net)[1])
    import sims.cache as cache

    real = cache.code_fingerprint
    monkeypatch.setattr(cache, "code_fingerprint", lambda *o: ("edited" + real(*o)[0], real(*o)[1]))
    assert not train.train_glyph_net(StandInConfig(), **TINY).from_cache
    assert train.train_glyph_net(StandInConfig(), **TINY).from_cache


def test_checkpoints_are_saved_at_the_requested_epochs(stand_in):
    r = train.train_glyph_net(StandInConfig(), epochs=3, checkpoints=(0, 2, 3), per_class=6, batch_size=16,
                              progress=False, device="cpu")
    assert sorted(r.checkpoints) == [0, 2, 3] and len(r.history["loss"]) == 3
    init = nets.build_net("lenet", 12, 16, seed=0)
    assert all(torch.equal(v, r.checkpoints[0][k]) for k, v in init.state_dict().items())
    final = _weights(r.model)
    assert all(torch.equal(final[k], r.checkpoints[3][k]) for k in final)
    assert any(not torch.equal(final[k], r.checkpoints[2][k]) for k in final)
    again = train.train_glyph_net(StandInConfig(), epochs=3, checkpoints=(3, 2, 0), per_class=6, batch_size=16,
                                  progress=False, device="cpu")
    assert again.from_cache and sorted(again.checkpoints) == [0, 2, 3]  # same set, same key
    m2 = r.at_checkpoint(2)
    assert all(torch.equal(v.cpu(), r.checkpoints[2][k]) for k, v in m2.state_dict().items())
    with pytest.raises(ValueError, match="no checkpoint at 1"):
        r.at_checkpoint(1)


def _direct_regulariser(h, y):
    """VC Sec 6.3's term as read in train.py, by loops: mean over classes with n ≥ 2 of (mean cos over i ≠ j)/n."""
    terms = []
    for k in np.unique(y):
        idx = np.flatnonzero(y == k)
        n = len(idx)
        if n < 2:
            continue
        sims = [h[i] @ h[j] / (np.linalg.norm(h[i]) * np.linalg.norm(h[j])) for i, j in itertools.permutations(idx, 2)]
        terms.append(np.mean(sims) / n)
    return np.mean(terms) if terms else 0.0


def test_loss_is_ce_of_logits_over_tau_plus_lambda_times_the_regulariser():
    g = torch.Generator().manual_seed(0)
    z = torch.randn(12, 5, generator=g, dtype=torch.float64)
    h = torch.rand(12, 7, generator=g, dtype=torch.float64)
    y = torch.tensor([0, 0, 0, 1, 1, 2, 3, 3, 3, 3, 4, 1])
    zn, yn = z.numpy(), y.numpy()
    for tau in (1.0, 0.3):
        s = zn / tau
        ce = np.mean(np.log(np.exp(s).sum(1)) - s[np.arange(12), yn])
        total, ce_t, reg = train.glyph_loss(z, h, y, tau=tau, cos_reg=0.0)
        assert abs(float(total) - ce) < 1e-12 and float(reg) == 0.0
    r = _direct_regulariser(h.numpy(), yn)
    assert abs(float(train.cosine_regulariser(h, y)) - r) < 1e-12 and r > 0
    total, ce_t, reg = train.glyph_loss(z, h, y, tau=0.5, cos_reg=2.5)
    assert abs(float(total) - float(F.cross_entropy(z / 0.5, y)) - 2.5 * r) < 1e-12
    # singletons only: no pair, R = 0
    assert float(train.cosine_regulariser(h[:4], torch.arange(4))) == 0.0
    # on a balanced batch (n per class) R is affine in theory.collapse's d̄_within (Sec 3.2's double sum, i = j
    # included): mean pair similarity s_k = ((1 − d_k)·n − 1)/(n − 1), so R = ((1 − d̄_within)·n − 1)/((n − 1)·n)
    yb = torch.tensor([0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3])
    d_within = vc.cosine_distances(h.numpy(), yb.numpy())["d_within"]
    assert abs(float(train.cosine_regulariser(h, yb)) - ((1 - d_within) * 3 - 1) / 6) < 1e-12


def test_regulariser_lowers_within_class_similarity_as_in_vc_table2():
    """VC Table 2: the "Cos Sim" column falls as λ grows, and it is a similarity (1 − d̄_within: in the τ group it
    rises while Fuzziness, Sqr Dist and VCI fall; vc.paper_tables). Gradient steps on R alone raise d̄_within of the
    features (similarity falls); the opposite sign (reading the column as Sec 3.2's distance d̄_within, a plausible
    misreading of its name) lowers it."""
    g = torch.Generator().manual_seed(3)
    y = torch.arange(6).repeat_interleave(4)
    for sign, falls in ((-1.0, True), (1.0, False)):
        h = torch.rand(24, 8, generator=g, dtype=torch.float64).requires_grad_(True)
        d0 = vc.cosine_distances(h.detach().numpy(), y.numpy())["d_within"]
        for _ in range(200):
            r = sign * train.cosine_regulariser(h, y)
            (gr,) = torch.autograd.grad(r, h)
            with torch.no_grad():
                h -= 20.0 * gr   # R carries 1/n_k³ weights: a step of 20 moves unit vectors by ≈ 1 %
        d1 = vc.cosine_distances(h.detach().numpy(), y.numpy())["d_within"]
        assert (d1 < 0.5 * d0) if falls else (d1 > d0), (sign, d0, d1)


def test_tau_and_cos_reg_change_the_training(stand_in):
    base = train.train_glyph_net(StandInConfig(), **TINY)
    hot = train.train_glyph_net(StandInConfig(), tau=0.2, **TINY)
    reg = train.train_glyph_net(StandInConfig(), cos_reg=5.0, **TINY)
    assert not np.allclose(base.history["loss"], hot.history["loss"])
    assert not np.allclose(base.history["loss"], reg.history["loss"])
    assert np.all(reg.history["loss"] > reg.history["ce"])   # the regulariser is in the loss
    assert np.array_equal(base.history["loss"], base.history["ce"])


def test_epoch_order_is_a_grouped_permutation():
    y = torch.tensor(np.repeat(np.arange(7), [9, 4, 1, 8, 8, 5, 3]))
    g = torch.Generator().manual_seed(0)
    o = train.epoch_order(y, g)
    assert sorted(o.tolist()) == list(range(len(y)))
    ys = y[o].tolist()
    runs = [len(list(grp)) for _, grp in itertools.groupby(ys)]
    assert max(runs) <= 2 * train.GROUP and np.mean(runs) >= 2.5  # same-class groups, not one block per class
    assert not torch.equal(o, train.epoch_order(y, g))             # a new order each epoch
    assert torch.equal(train.epoch_order(y, torch.Generator().manual_seed(0)), o)


@pytest.mark.parametrize("arch", nets.ARCHS)
def test_features_shapes_and_logits_equal_w_f_plus_b(arch):
    net = nets.build_net(arch, 10, 32, seed=1)
    net.train()
    X = torch.rand(37, 1, 32, 32, generator=torch.Generator().manual_seed(2))
    out = gf.features(net, X, layers="all", batch_size=16)
    assert net.training  # mode restored
    assert out["features"].shape == (37, 128) and out["W"].shape == (10, 128) and out["b"].shape == (10,)
    assert out["logits"].dtype == np.float64 and out["logits"].shape == (37, 10)
    assert np.max(np.abs(out["logits"] - (out["features"] @ out["W"].T + out["b"]))) < 1e-10
    assert np.all(out["features"] >= 0)  # after a ReLU / pool of a ReLU
    net.eval()
    with torch.no_grad():
        direct = net(X).double().numpy()
    assert np.allclose(out["logits"], direct, atol=1e-5)
    assert list(out["layers"]) == list(nets.LAYERS[arch])
    assert all(v.shape[0] == 37 and v.dtype == np.float64 for v in out["layers"].values())
    avg = gf.features(net, X, layers=nets.LAYERS[arch][:1], reduce="avg")["layers"]
    first = nets.LAYERS[arch][0]
    assert avg[first].shape[1] * (out["layers"][first].shape[1] // avg[first].shape[1]) == out["layers"][first].shape[1]
    assert np.array_equal(out["layers"][nets.LAYERS[arch][-1]], out["features"])  # the last stage is F(x)
    with pytest.raises(ValueError, match="not stages"):
        gf.features(net, X, layers=["nope"])
    with pytest.raises(ValueError, match=r"\[N, 1, S, S\]"):
        gf.features(net, X[:, 0])


def test_heldout_accuracy_by_face_and_on_the_augmentation_split(stand_in):
    r = train.train_glyph_net(StandInConfig(), epochs=6, per_class=8, batch_size=16, progress=False, device="cpu")
    acc = gf.heldout_accuracy(r, StandInTask(StandInConfig()), per_class=5)
    assert set(acc["face_test"]) == {"D", "E"} and 0 <= acc["aug_test"] <= 1
    assert acc["n"] == {"face_test": 60, "aug_test": 60}
    assert acc["aug_test"] > 0.5  # well above chance (1/12) on this easy stand-in
    # a coarse-level net on a subset of classes: its outputs are the subset's base labels
    sub = train.train_glyph_net(StandInConfig(), level="base", classes=[0, 1, 2, 3, 8, 9], **TINY)
    assert list(sub.label_values) == [0, 1, 4] and sub.model.classifier.out_features == 3
    assert gf.heldout_accuracy(sub, StandInTask(StandInConfig()), per_class=5)["n"]["aug_test"] == 30


@pytest.mark.parametrize("kwargs, match", [
    (dict(arch="vgg"), "arch"), (dict(level="genus"), "level"), (dict(tau=0.0), "tau"), (dict(tau=-1.0), "tau"),
    (dict(tau=float("nan")), "tau"), (dict(cos_reg=-0.1), "cos_reg"), (dict(epochs=0), "epochs"),
    (dict(checkpoints=(5,)), "checkpoints"), (dict(classes=[1, 1]), "classes"), (dict(classes=[0, 99]), "classes"),
    (dict(level="script", classes=[0, 1]), "level='script'"), (dict(device="gpu0"), "device"),
])
def test_bad_input_is_a_clear_value_error(stand_in, kwargs, match):
    args = dict(TINY, **kwargs)
    with pytest.raises(ValueError, match=match):
        train.train_glyph_net(StandInConfig(), **args)


def test_real_glyph_task_trains_when_installed(tmp_path, monkeypatch):
    glyphs = pytest.importorskip("sims.glyphs")
    if not hasattr(glyphs, "glyph_task"):
        pytest.skip("sims.glyphs.glyph_task is not there yet")
    monkeypatch.setenv("THEORYLAB_CACHE", str(tmp_path / "cache"))
    cfg = glyphs.GlyphTaskConfig(n_classes=20, size=32, seed=0)
    r = train.train_glyph_net(cfg, arch="resnet", epochs=2, per_class=4, batch_size=32, progress=False, device="cpu")
    assert r.model.classifier.out_features == 20 and len(r.history["loss"]) == 2
    acc = gf.heldout_accuracy(r, per_class=2)
    assert set(acc["face_test"]) and 0 <= acc["aug_test"] <= 1


@pytest.mark.cuda
def test_trains_and_reads_out_on_cuda(stand_in):
    """The device-agnostic path: training, the cache (its key holds the device type) and the read-out on CUDA."""
    r = train.train_glyph_net(StandInConfig(), **dict(TINY, device="cuda"), checkpoints=(1,))
    assert next(r.model.parameters()).is_cuda and r.device.startswith("cuda")
    assert not train.train_glyph_net(StandInConfig(), **TINY).from_cache  # the CPU entry is another one
    assert train.train_glyph_net(StandInConfig(), **dict(TINY, device="cuda"), checkpoints=(1,)).from_cache
    X = torch.rand(9, 1, 16, 16)
    out = gf.features(r.model, X, layers="all")
    assert np.max(np.abs(out["logits"] - (out["features"] @ out["W"].T + out["b"]))) < 1e-10
    assert next(r.at_checkpoint(1).parameters()).is_cuda
    assert 0 <= gf.heldout_accuracy(r, StandInTask(StandInConfig()), per_class=2)["aug_test"] <= 1


def test_progress_bar_reports_images_per_second_on_stderr(stand_in, capsys):
    train.train_glyph_net(StandInConfig(), **dict(TINY, progress=True))
    err = capsys.readouterr().err
    assert "img/s" in err and "lenet fine K=12" in err
    assert "\r" not in err and len([ln for ln in err.splitlines() if "lenet fine K=12" in ln]) == 1  # a log: one line
    train.train_glyph_net(StandInConfig(), **dict(TINY, progress=False, seed=9))
    assert "img/s" not in capsys.readouterr().err


def test_the_training_set_is_drawn_once_per_task_size_and_seed():
    class Counting(StandInTask):
        calls = 0

        def images(self, split, per_class, seed, classes=None):
            Counting.calls += 1
            return super().images(split, per_class, seed, classes)

    task = Counting(StandInConfig())
    a = train._train_images(task, 4, 0)
    b = train._train_images(task, 4, 0)
    assert Counting.calls == 1 and a[0] is b[0]
    train._train_images(task, 4, 1)
    train._train_images(Counting(StandInConfig()), 4, 1)  # another task object: drawn again
    assert Counting.calls == 3
    c = train._train_images(task, 4, 1, (2, 5))  # a class subset: drawn again, those classes only
    assert Counting.calls == 4 and set(c[1].tolist()) == {2, 5}


def test_benchmark_runs_tiny_and_reports_the_ratio(tmp_path):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_glyph_train.py"
    spec = importlib.util.spec_from_file_location("bench_glyph_train", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    threads = torch.get_num_threads()
    try:
        out = bench.main(["--tiny", "--json", str(tmp_path / "b.json")])
    finally:
        torch.set_num_threads(threads)  # the benchmark sets one thread, as the trainer does
    rows = out["cpu"]["rows"]
    assert {r["arch"] for r in rows} == set(nets.ARCHS)
    assert all(r["ratio"] > 0 and r["train_img_s"] > 0 and r["bare_img_s"] > 0 for r in rows)
    assert (tmp_path / "b.json").exists()
