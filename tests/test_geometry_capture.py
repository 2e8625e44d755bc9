"""sims.geometry: one streaming pass over a torch model's named layers → the metrics of theory.geometry, equal to
the metrics computed on the kept activations; merges in any order equal one pass; CKA of a model with itself is 1
and with a random network well below 1; clear errors (unknown layers, misaligned streams, n < 4 debiased CKA);
float32 activations at a large offset; inputs not mutated."""
from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch

from sims.geometry import all_metrics, capture, cka_matrix, compare_models, merge_all
from sims.geometry.metrics import layer_metrics
from theory.collapse import ClassStats, vci
from theory.geometry import (cdnv, effective_rank, linear_cka, nc1, nc2, participation_ratio, rankme,
                             stable_rank)

LAYERS = ["0", "2", "4"]


def net(seed=0, width=24):
    g = torch.Generator().manual_seed(seed)
    m = torch.nn.Sequential(torch.nn.Linear(6, width), torch.nn.Tanh(), torch.nn.Linear(width, 12), torch.nn.ReLU(),
                            torch.nn.Linear(12, 4))
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.7)
    return m


def data(n=240, seed=1, offset=0.0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, 6, generator=g) + offset
    y = torch.randint(0, 4, (n,), generator=g)
    return X, y


def batches(X, y, b=32):
    return [(X[i:i + b], y[i:i + b], torch.arange(i, min(i + b, len(X)))) for i in range(0, len(X), b)]


def acts(m, X):
    with torch.no_grad():
        return {"0": m[0](X).double().numpy(), "2": m[:3](X).double().numpy(), "4": m(X).double().numpy()}


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-300)


def test_streamed_metrics_equal_the_metrics_of_the_kept_activations():
    m = net()
    X, y = data()
    st = capture(m, batches(X, y), LAYERS, n_classes=4, progress=False)
    H = acts(m, X)
    res = all_metrics(st)
    yy = y.numpy()
    for k in LAYERS:
        r = res[k]
        assert r["n"] == 240 and r["p"] == H[k].shape[1]
        assert rel(r["effective_rank"], effective_rank(H[k])) < 1e-10
        assert rel(r["stable_rank"], stable_rank(H[k])) < 1e-10
        assert rel(r["participation_ratio"], participation_ratio(H[k])) < 1e-10
        assert rel(r["rankme"], rankme(H[k])) < 1e-7  # σ from the eigenvalues of ZᵀZ: √ε resolution
        assert rel(r["nc1"], nc1(H[k], yy, weighting="sample")) < 1e-9
        assert rel(r["vci"], vci(ClassStats.from_features(H[k], yy, 4))) < 1e-9
        assert rel(r["cdnv"], cdnv(H[k], yy)["mean"]) < 1e-10
        assert rel(r["nc2"]["etf_distance"], nc2(H[k], yy, weighting="class")["etf_distance"]) < 1e-10
    for deb in (False, True):
        ck = cka_matrix(st, debiased=deb)
        assert ck["layers"] == LAYERS
        for i in range(3):
            for j in range(3):
                assert rel(ck["matrix"][i][j], linear_cka(H[LAYERS[i]], H[LAYERS[j]], debiased=deb)) < 1e-10


def test_shards_merged_in_any_order_equal_one_pass():
    """8 shards of 50 samples (batches of 16, so each shard ends in a batch of 2) merged in 4 random orders and as a
    tree equal one pass over the same batches, within the float64 rounding bound of tests/rounding.py (the sums'
    condition κ measured on the data; merges add 4ε each).

    The one pass reads the *same batches* as the shards: torch's float32 forward pass may give a batch of 1–3 rows
    activations a few ulps away from the same rows inside a batch of 400 (another kernel: measured 2 ulps on an AMD
    EPYC with AVX2, none elsewhere), and that difference (a relative 3e-9 in CKA here) is the network's arithmetic,
    not the merge's; the same function on the same arrays gives the same activations on every machine."""
    import rounding

    m = net()
    X, y = data(n=400, offset=5.0)
    parts = [batches(X[i:i + 50], y[i:i + 50], 16) for i in range(0, 400, 50)]
    whole = capture(m, [b for part in parts for b in part], LAYERS, n_classes=4, progress=False)
    shards = [capture(m, part, LAYERS, n_classes=4, progress=False) for part in parts]
    rng = np.random.default_rng(0)
    keys = ("effective_rank", "stable_rank", "participation_ratio", "nc1", "vci", "cdnv")

    def read(st):
        out = {}
        for deb in (False, True):
            M = cka_matrix(st, debiased=deb)["matrix"]
            out.update({("cka", deb, i, j): M[i][j] for i in range(3) for j in range(3)})
        mm = all_metrics(st)
        out.update({(k, key): mm[k][key] for k in LAYERS for key in keys})
        return out

    ref = read(whole)
    kappa = rounding.condition(whole, read)
    tol = {k: rounding.tolerance(kappa[k], 400, merges=len(shards)) for k in ref}
    assert max(tol.values()) < 1e-9  # the bound itself is tight: a merge bug misses it by orders of magnitude
    for trial in range(5):
        if trial < 4:
            order = rng.permutation(len(shards))
            st = shards[order[0]]
            for i in order[1:]:
                st = st.merge(shards[i])
        else:
            order = rng.permutation(len(shards))
            st = merge_all([shards[i] for i in order])
        assert st.n == 400
        got = read(st)
        worst = max(ref, key=lambda k: rounding.rel(got[k], ref[k]) / tol[k])
        print(f"8 shards, order {order.tolist()}: worst {worst} within {rounding.rel(got[worst], ref[worst]):.1e} "
              f"of one pass (bound {tol[worst]:.1e}, kappa {kappa[worst]:.1f})")
        for k in ref:
            assert rounding.rel(got[k], ref[k]) <= tol[k], (k, got[k], ref[k], tol[k])
    # the state pickles (Dask ships it between workers) and merging does not change its operands
    a = pickle.loads(pickle.dumps(shards[0]))
    before = a.layers["2"]["C"].copy()
    a.merge(shards[1])
    assert np.array_equal(a.layers["2"]["C"], before)


def test_a_merge_that_drops_a_shift_term_misses_the_rounding_bound(monkeypatch):
    """The bound of the test above can fail: a merge whose shift forgets n·c·cᵀ (a real slip in the identities of
    theory.geometry.moments.shift) moves the statistics far past it."""
    import rounding

    from theory.geometry import moments

    m = net()
    X, y = data(n=400, offset=5.0)
    parts = [batches(X[i:i + 50], y[i:i + 50], 16) for i in range(0, 400, 50)]
    whole = capture(m, [b for part in parts for b in part], LAYERS, n_classes=4, progress=False)
    shards = [capture(m, part, LAYERS, n_classes=4, progress=False) for part in parts]
    read = lambda st: {"cka": cka_matrix(st)["matrix"][0][1], "nc1": all_metrics(st)["2"]["nc1"]}  # noqa: E731
    ref, kappa = read(whole), rounding.condition(whole, read)
    good = shift = moments.shift

    def slipped(mm, n, cx, cy):
        out = good(mm, n, cx, cy)
        out["cxx"] = out["cxx"] - n * np.outer(cx, cx)
        return out

    from sims.geometry import stats
    monkeypatch.setattr(stats, "shift", slipped)
    got = read(merge_all(shards))
    monkeypatch.setattr(stats, "shift", shift)
    misses = {k: rounding.rel(got[k], ref[k]) / rounding.tolerance(kappa[k], 400, merges=8) for k in ref}
    assert max(misses.values()) > 1e3, misses


def test_float32_activations_at_a_large_offset_keep_two_pass_accuracy():
    """Features 1e5 away from zero in float32: the shifted sums give the float64 two-pass numbers of the same
    float32 activations; raw Σhhᵀ − nμμᵀ (the negative control) loses most digits."""
    g = torch.Generator().manual_seed(3)
    base = torch.randn(2000, 8, generator=g) @ torch.randn(8, 8, generator=g)
    lin = torch.nn.Identity()
    Xf = (base + 1e5).float()
    st = capture(torch.nn.Sequential(lin), [Xf[i:i + 100] for i in range(0, 2000, 100)], ["0"], pairs=None,
                 progress=False)
    H = Xf.double().numpy()
    assert rel(layer_metrics(st, "0")["effective_rank"], effective_rank(H)) < 1e-10
    S2, s1 = H.T @ H, H.sum(0)
    naive = (S2 - np.outer(s1, s1) / len(H))
    C = np.cov(H.T, bias=True) * len(H)
    lam_naive = np.clip(np.linalg.eigvalsh(naive), 0, None)
    lam = np.linalg.eigvalsh(C)
    assert np.max(np.abs(lam_naive - lam)) / lam.max() > 1e-9  # the raw sums lose at least 1e-9


def test_model_compared_with_itself_is_one_and_with_a_random_network_well_below():
    X, y = data(n=300)
    a, b = net(0), net(7, width=24)
    same = compare_models(a, net(0), batches(X, y), ["0", "2"], progress=False)["block"]
    for i in range(2):
        assert abs(same["matrix"][i][i] - 1.0) < 1e-12
    other = compare_models(a, b, batches(X, y), ["2"], progress=False)["block"]
    assert other["matrix"][0][0] < 0.8
    # two streams aligned by sample id give the same numbers as one shared stream
    two = compare_models(a, b, None, ["2"], streams=(batches(X, y), batches(X, y)), progress=False)["block"]
    assert rel(two["matrix"][0][0], other["matrix"][0][0]) < 1e-14


def test_misaligned_streams_are_an_error():
    X, y = data(n=64)
    a = net(0)
    bs = batches(X, y, 16)
    shuffled = [(x, yy, ids.flip(0)) for x, yy, ids in bs]
    with pytest.raises(ValueError, match="sample ids differ at sample 0"):
        compare_models(a, net(1), None, ["2"], streams=(bs, shuffled), progress=False)
    with pytest.raises(ValueError, match="ended after 48 samples"):
        compare_models(a, net(1), None, ["2"], streams=(bs, bs[:3]), progress=False)


def test_unknown_layer_names_list_the_available_ones():
    with pytest.raises(ValueError, match=r"layer '9' does not exist in Sequential.*available: 0, 1, 2, 3, 4"):
        capture(net(), [torch.zeros(4, 6)], ["9"], progress=False)
    with pytest.raises(ValueError, match="closest names"):
        capture(torch.nn.Sequential(torch.nn.Sequential(torch.nn.Linear(2, 2))), [torch.zeros(4, 2)], ["0.1"],
                progress=False)


class Blocks(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 5, 3, padding=1)
        self.act = torch.nn.ReLU()  # shared: called twice per pass
        self.attn = torch.nn.MultiheadAttention(5, 1, batch_first=True)
        self.head = torch.nn.Linear(5, 3)

    def forward(self, x):
        h = self.act(self.conv(x))
        t = h.flatten(2).transpose(1, 2)
        a, _ = self.attn(t, t, t)
        return self.head(self.act(a).mean(1))


def test_tuple_outputs_pooling_flattening_and_reused_modules():
    torch.manual_seed(0)
    m = Blocks()
    xs = [torch.randn(8, 3, 6, 6) for _ in range(3)]
    with pytest.warns(UserWarning, match="ran 2 times"):
        st = capture(m, xs, ["conv", "attn", "attn@1", "act", "head:input"], pool={"conv": "flatten"},
                     progress=False)
    assert st.dims == {"conv": 5 * 36, "attn": 5, "attn@1": 36, "act": 5, "head:input": 5}
    assert st.reused == {"act": 2}
    assert layer_metrics(st, "act")["reused_calls"] == 2
    # the pooled attention output is the mean over tokens of the first element of the tuple
    with torch.no_grad():
        t = m.act(m.conv(xs[0])).flatten(2).transpose(1, 2)
        want = m.attn(t, t, t)[0].mean(1)
    one = capture(m, xs[:1], ["attn"], pairs=None, progress=False)
    assert torch.allclose(torch.as_tensor(one.cross_moments("attn").mean_x), want.double().mean(0), atol=1e-6)
    with pytest.raises(ValueError, match="exceed max_features = 100.*pool it"):
        capture(m, xs, ["conv"], pool="flatten", max_features=100, progress=False)
    with pytest.raises(ValueError, match="@5 is not an index"):
        capture(m, xs, ["attn@5"], progress=False)


def test_undefined_metrics_are_errors_never_nan():
    m = net()
    X, y = data(n=3)
    st = capture(m, [(X, y)], LAYERS, n_classes=4, progress=False)
    ck = cka_matrix(st, debiased=True)
    assert ck["matrix"][0][1] is None and "at least 4 samples" in ck["errors"]["0|2"]
    r = layer_metrics(st, "2")
    assert "error" in r["nc1"] and "class" in r["nc1"]["error"]  # with 3 samples a class is empty
    flat = [v for v in r.values() if isinstance(v, float)]
    assert all(np.isfinite(flat))
    one = capture(m, [X[:1]], LAYERS, progress=False)
    with pytest.raises(ValueError, match="at least 2"):
        layer_metrics(one, "2")
    with pytest.raises(ValueError, match="empty"):
        capture(m, [], LAYERS, progress=False)
    with pytest.raises(ValueError, match="non-finite"):
        capture(m, [torch.full((4, 6), float("nan"))], LAYERS, progress=False)


def test_inputs_are_not_mutated_and_labels_are_checked():
    m = net()
    X, y = data(n=64)
    X0, y0 = X.clone(), y.clone()
    w0 = [p.detach().clone() for p in m.parameters()]
    capture(m, batches(X, y), LAYERS, n_classes=4, progress=False)
    assert torch.equal(X, X0) and torch.equal(y, y0)
    assert all(torch.equal(a, b) for a, b in zip(w0, m.parameters()))
    with pytest.raises(ValueError, match=r"label 3 is outside \[0, 3\)"):
        capture(m, batches(X, y), LAYERS, n_classes=3, progress=False)


def test_n_below_p_and_batches_of_one_row():
    """10 samples of 24-wide layers, one row per batch: the streamed metrics and CKA equal the two-pass ones."""
    m = net()
    X, y = data(n=10)
    st = capture(m, [(X[i:i + 1], y[i:i + 1]) for i in range(10)], LAYERS, n_classes=4, progress=False)
    rows = [acts(m, X[i:i + 1]) for i in range(10)]  # float32 layers: the same one-row forward passes
    H = {k: np.concatenate([r[k] for r in rows]) for k in LAYERS}
    r = layer_metrics(st, "0")
    assert r["p"] == 24 and rel(r["effective_rank"], effective_rank(H["0"])) < 1e-9
    assert rel(cka_matrix(st, debiased=True)["matrix"][0][1], linear_cka(H["0"], H["2"], debiased=True)) < 1e-9


def test_tiny_features_keep_their_fourth_powers():
    """Activations of size 1e-120 (fourth powers below float64's range) give the CKA of the rescaled data."""
    X, _ = data(n=50)
    Xs = X.double() * 1e-120
    lin = torch.nn.Sequential(torch.nn.Identity(), torch.nn.Tanh())
    st = capture(lin.double(), [Xs[:1], Xs[1:20], Xs[20:]], ["0"], pairs=None, progress=False)
    assert rel(layer_metrics(st, "0")["participation_ratio"], participation_ratio(X.double().numpy())) < 1e-9


def test_the_gpu_class_sum_path_equals_the_cpu_one():
    """The index_add_ path used on a GPU (run here on the CPU) accumulates the same class sums as the sparse one."""
    from sims.geometry.stats import Accumulator

    X, y = data(n=100)
    accs = []
    for sparse in (True, False):
        acc = Accumulator({"a": 6}, 4, (), "cpu")
        acc.sparse = sparse
        with torch.inference_mode():
            for i in range(0, 100, 30):
                acc.update({"a": X[i:i + 30]}, y[i:i + 30])
        accs.append(acc.state())
    for key in ("counts", "S", "T", "U"):
        assert np.allclose(accs[0].layers["a"][key], accs[1].layers["a"][key], rtol=1e-14, atol=1e-12), key
    assert accs[0].layers["a"]["counts"].sum() == 100


def test_accumulators_that_would_not_fit_are_refused_at_the_first_batch():
    wide = torch.nn.Sequential(*[torch.nn.Linear(64, 64) for _ in range(4)])
    with pytest.raises(ValueError, match=r"accumulators would take .* GiB.*6 layer pairs.*pairs=None"):
        capture(wide, [torch.zeros(4, 64)], ["0", "1", "2", "3"], max_memory=1e6, progress=False)
    capture(wide, [torch.randn(4, 64)], ["0", "1", "2", "3"], pairs=None, max_memory=2e8, progress=False)


def test_dense_and_sparse_class_sums_agree(monkeypatch):
    """Few classes (dense one-hot GEMM) and many (scipy.sparse) give the same class statistics on the CPU."""
    import sims.geometry.stats as S

    m = net()
    X, y = data(n=90)
    st = [None, None]
    for i, limit in enumerate((256, 0)):
        monkeypatch.setattr(S, "DENSE_CLASSES", limit)
        st[i] = capture(m, batches(X, y, 16), ["2"], n_classes=4, pairs=None, progress=False)
    for key in ("counts", "S", "T", "U"):
        assert np.allclose(st[0].layers["2"][key], st[1].layers["2"][key], rtol=1e-13, atol=1e-12), key


def test_in_place_operations_after_a_hooked_module_do_not_change_its_rows():
    """Conv → ReLU(inplace=True): the conv's captured rows are its own output (negative values included), pooled or
    flattened."""
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.ReLU(inplace=True), torch.nn.Flatten(),
                            torch.nn.Linear(3 * 16, 2))
    x = torch.randn(20, 2, 6, 6)
    with torch.no_grad():
        pre = m[0](x)
    for pool, want in (("flatten", pre.reshape(20, -1)), ("mean", pre.mean(dim=(2, 3)))):
        st = capture(m, [x], ["0"], pool=pool, pairs=None, progress=False)
        assert torch.allclose(torch.as_tensor(st.cross_moments("0").mean_x), want.double().mean(0), atol=1e-6)
        assert (want < 0).any()


def test_a_glyph_network_layer_by_layer():
    """The glyph task's small CNN (sims.glyphs, trained briefly and cached) on held-out faces: every block's metric
    set and the CKA matrix, labels = the glyph classes."""
    from sims.glyphs import GlyphTaskConfig, glyph_task
    from sims.glyphs.train import train_glyph_net

    cfg = GlyphTaskConfig(n_classes=6)
    g = train_glyph_net(cfg, arch="lenet", epochs=1, per_class=8, progress=False, device="cpu")
    X, y, _ = glyph_task(cfg).images("face_test", 8, 0)
    X, y = torch.as_tensor(X), torch.as_tensor(y)
    layers = ["conv1", "conv2", "fc1", "fc2", "classifier:input", "output"]
    st = capture(g.model, [(X[i:i + 16], y[i:i + 16]) for i in range(0, len(X), 16)], layers, n_classes=6,
                 progress=False)
    res = all_metrics(st)
    assert st.n == len(X) and list(res) == layers and res["output"]["p"] == 6
    assert all(isinstance(res[k]["effective_rank"], float) for k in layers)
    ck = cka_matrix(st)["matrix"]
    assert all(0 <= v <= 1 + 1e-12 for row in ck for v in row)
