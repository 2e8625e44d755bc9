"""Benchmark: sims.geometry's one-pass statistics against their floors, in the same run, on the same device.

1. Per layer (width p, N samples in batches, 10 classes): the whole metric set's accumulation (shifted float64
   sums: C, Σ‖x‖²x, Σ‖x‖⁴, class sums, class ‖x‖² sums, unit-vector sums — ``sims.geometry.stats.Accumulator``)
   against the bare GEMM floor Σ HᵀH (``addmm_`` of the same features, already float64 on the device). Goal ≤ 2×.
   The read-out of every metric from the state (eigendecompositions, O(p³), independent of N) is timed apart.
2. Debiased linear CKA of two layers at N = 20 000: one pass (the Accumulator's cross-moments, then
   ``CrossMoments.cka``) against the n×n Gram implementation (Song et al.'s unbiased HSIC from K̃ = XXᵀ, L̃ = YYᵀ with
   zeroed diagonals, in row blocks so that it fits in memory). Goal ≥ 10× and equal to 1e-10 relative.
3. Peak memory of a capture of N and 2N samples (data generated batch by batch), each in a fresh process:
   resident set size on the CPU, ``torch.cuda.max_memory_allocated`` on CUDA. Goal: flat.
4. The metrics theorylab shares with its peers (kernel CKA, Lange's HSIC, the CCA family, RSA, LiDAR, α-ReQ,
   linear CKA from arrays), each against the fastest installed peer on the same data in the same run (repsim,
   ckatorch, rsatoolbox, reptrix: ``pip install repsim ckatorch rsatoolbox reptrix``; a peer that is not installed
   is replaced by a dense numpy n×n reference written here), with the ratio peer/theorylab and the difference;
   the random-feature RBF CKA against the exact one; and the peak memory (tracemalloc) of ``linear_cka`` from
   arrays against ``CrossMoments.from_data`` and one input. numpy code on the host CPU: not run for the CUDA
   column (``--device cuda``).

    python benchmarks/bench_geometry.py [--n 20000] [--widths 128,512,1024] [--batch 256] [--threads 1]
                                        [--metrics-n 2000] [--metrics-p 256] [--mem-n 50000] [--mem-p 512]
                                        [--only 1,2,3,4] [--device cpu] [--gpu] [--tiny] [--json PATH]

Compile/warm-up is excluded (one untimed batch first); times are the best of ``--repeat``. On the shared 2-core
machine quote ``uptime``'s load with the numbers.
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _sync(dev):
    import torch

    if torch.device(dev).type == "cuda":
        torch.cuda.synchronize()


def _best(fn, repeat, dev):
    best = float("inf")
    for _ in range(repeat):
        _sync(dev)
        t = time.perf_counter()
        fn()
        _sync(dev)
        best = min(best, time.perf_counter() - t)
    return best


def per_layer(n, widths, batch, dev, repeat):
    import torch

    from sims.geometry.metrics import layer_metrics
    from sims.geometry.stats import Accumulator

    g = torch.Generator(device="cpu").manual_seed(0)
    rows = []
    for p in widths:
        nb = max(1, n // batch)
        mix = torch.randn(p, p, generator=g) / p ** 0.5
        H = [(torch.randn(batch, p, generator=g) @ mix + 3.0).float().to(dev) for _ in range(nb)]
        y = [torch.randint(0, 10, (batch,), generator=g).to(dev) for _ in range(nb)]
        H64 = [h.double() for h in H]
        C = torch.zeros(p, p, dtype=torch.float64, device=dev)

        def floor():
            C.zero_()
            for h in H64:
                C.addmm_(h.T, h)

        def full():
            acc = Accumulator({"h": p}, 10, (), dev)
            for h, yy in zip(H, y):
                acc.update({"h": h}, yy)
            return acc

        floor()
        full()  # warm-up
        t_floor = t_full = float("inf")
        for _ in range(repeat):  # interleaved: a load change on a shared machine hits both alike
            t_floor = min(t_floor, _best(floor, 1, dev))
            t_full = min(t_full, _best(full, 1, dev))
        st = full().state()
        t = time.perf_counter()
        layer_metrics(st, "h")
        t_read = time.perf_counter() - t
        rows.append({"p": p, "n": nb * batch, "floor_s": t_floor, "metric_set_s": t_full, "ratio": t_full / t_floor,
                     "readout_s": t_read})
    return rows


def gram_debiased_hsic_terms(X, Y, block=2048):
    """Song et al.'s unbiased HSIC(X, Y), HSIC(X, X), HSIC(Y, Y) from the n×n Gram matrices K = XXᵀ, L = YYᵀ with
    zeroed diagonals (torch float64 on the data's device, in row blocks of ``block`` so that it fits in memory)."""
    import torch

    n = X.shape[0]
    K1 = X @ X.sum(0) - (X * X).sum(1)  # K̃1
    L1 = Y @ Y.sum(0) - (Y * Y).sum(1)
    tr = {"xy": 0.0, "xx": 0.0, "yy": 0.0}
    for s in range(0, n, block):
        Kb, Lb = X[s:s + block] @ X.T, Y[s:s + block] @ Y.T
        idx = torch.arange(s, min(s + block, n), device=X.device)
        Kb[idx - s, idx] = 0.0
        Lb[idx - s, idx] = 0.0
        tr["xy"] += float((Kb * Lb).sum())
        tr["xx"] += float((Kb * Kb).sum())
        tr["yy"] += float((Lb * Lb).sum())

    def h(t, a1, b1):
        return (t + float(a1.sum()) * float(b1.sum()) / ((n - 1) * (n - 2)) - 2.0 / (n - 2) * float(a1 @ b1)) \
            / (n * (n - 3))
    return h(tr["xy"], K1, L1), h(tr["xx"], K1, K1), h(tr["yy"], L1, L1)


def cka_vs_gram(n, p, q, batch, dev):
    import numpy as np
    import torch

    from sims.geometry.stats import Accumulator

    rng = np.random.default_rng(1)
    Z = rng.standard_normal((n, 32))
    X = Z @ rng.standard_normal((32, p)) + 0.5 * rng.standard_normal((n, p)) + 5.0
    Y = np.tanh(Z @ rng.standard_normal((32, q))) + 0.5 * rng.standard_normal((n, q)) - 2.0
    Xt, Yt = torch.as_tensor(X, device=dev), torch.as_tensor(Y, device=dev)

    def one_pass():
        acc = Accumulator({"x": p, "y": q}, None, [("x", "y")], dev)
        for s in range(0, n, batch):
            acc.update({"x": Xt[s:s + batch], "y": Yt[s:s + batch]})
        return acc.state().cross_moments("x", "y").cka(debiased=True)

    one_pass()
    _sync(dev)
    t = time.perf_counter()
    v1 = one_pass()
    _sync(dev)
    t1 = time.perf_counter() - t
    # HSIC₁ is translation-invariant; centring (outside the timing) keeps the Gram sums small
    Xc, Yc = torch.as_tensor(X - X.mean(0), device=dev), torch.as_tensor(Y - Y.mean(0), device=dev)
    gram_debiased_hsic_terms(Xc[:512], Yc[:512])  # warm-up
    _sync(dev)
    t = time.perf_counter()
    hxy, hxx, hyy = gram_debiased_hsic_terms(Xc, Yc)
    v2 = hxy / np.sqrt(hxx * hyy)
    _sync(dev)
    t2 = time.perf_counter() - t
    return {"n": n, "p": p, "q": q, "one_pass_s": t1, "gram_s": t2, "speedup": t2 / t1, "cka_one_pass": v1,
            "cka_gram": v2, "rel_diff": abs(v1 - v2) / abs(v2)}


CHILD = r"""
import json, resource, sys, torch
sys.path.insert(0, {root!r})
from sims.geometry import capture
n, p, batch, dev = {n}, {p}, {batch}, {dev!r}
net = torch.nn.Sequential(torch.nn.Linear(p, p), torch.nn.ReLU(), torch.nn.Linear(p, p)).to(dev)
def gen():
    g = torch.Generator().manual_seed(0)
    for s in range(0, n, batch):
        yield torch.randn(batch, p, generator=g), torch.randint(0, 10, (batch,), generator=g)
st = capture(net, gen(), ["0", "1", "2"], n_classes=10, device=dev, progress=False)
cuda = torch.cuda.max_memory_allocated() if torch.device(dev).type == "cuda" else None
def hwm():  # this process's own peak (ru_maxrss would carry the parent's peak across fork + exec)
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"n": st.n, "rss_mib": hwm(),
                  "cuda_mib": None if cuda is None else cuda / 2 ** 20}}))
"""


def peak_memory(n, p, batch, dev):
    """[{n, rss_mib, cuda_mib}] for N and 2N: on CUDA in this process (peak allocated, reset before each), on the
    CPU in a fresh process each (peak resident set)."""
    import torch

    if torch.device(dev).type == "cuda":
        from sims.geometry import capture

        net = torch.nn.Sequential(torch.nn.Linear(p, p), torch.nn.ReLU(), torch.nn.Linear(p, p)).to(dev)
        res = []
        for m in (n, 2 * n):
            def gen(m=m):
                g = torch.Generator().manual_seed(0)
                for s in range(0, m, batch):
                    yield torch.randn(batch, p, generator=g), torch.randint(0, 10, (batch,), generator=g)
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            st = capture(net, gen(), ["0", "1", "2"], n_classes=10, device=dev, progress=False)
            res.append({"n": st.n, "rss_mib": None, "cuda_mib": torch.cuda.max_memory_allocated() / 2 ** 20})
        return res
    out = []
    for m in (n, 2 * n):
        code = CHILD.format(root=str(ROOT), n=m, p=p, batch=batch, dev=dev)
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
        if r.returncode:
            raise RuntimeError(r.stderr[-2000:])
        out.append(json.loads(r.stdout.strip().splitlines()[-1]))
    return out


def _peer(name):
    import importlib

    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 — any import failure means "not installed here"
        return None


def _time(fn, repeat):
    best, v = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        v = fn()
        best = min(best, time.perf_counter() - t)
    return best, v


def _dense_hsic(K, L, estimator):
    import numpy as np

    n = K.shape[0]
    H = np.eye(n) - 1.0 / n
    Kc, Lc = H @ K @ H, H @ L @ H
    if estimator == "gretton":
        return float(np.sum(Kc * Lc)) / (n - 1) ** 2
    w = float(np.diag(Kc) @ np.diag(Lc))
    if estimator == "lange":
        return (float(np.sum(Kc * Lc)) - w) / (n * (n - 3))
    f = float(np.sum(Kc * Lc))
    return (f + np.trace(Kc) * np.trace(Lc) / ((n - 1) * (n - 2)) - n / (n - 2) * w) / (n * (n - 3))


def _dense_rbf(A, sigma):
    import numpy as np
    from scipy.spatial.distance import pdist, squareform

    return np.exp(-squareform(pdist(A, "sqeuclidean")) / (2 * sigma ** 2))


def new_metrics(n, p, repeat, components=(256, 1024)):
    """Section 4: [{metric, ours_s, peer, peer_s, ratio, diff}] on one data set (n samples, p and p // 2 features)."""
    import numpy as np
    import torch

    import theory.geometry as g

    rng = np.random.default_rng(4)
    Z = rng.standard_normal((n, 32))
    X = Z @ rng.standard_normal((32, p)) + 0.5 * rng.standard_normal((n, p)) + 5.0
    Y = np.tanh(Z @ rng.standard_normal((32, p // 2))) + 0.5 * rng.standard_normal((n, p // 2)) - 2.0
    repsim, ckatorch, rsatb, reptrix = _peer("repsim"), _peer("ckatorch.core"), _peer("rsatoolbox"), _peer("reptrix")
    sx, sy = g.median_bandwidth(X), g.median_bandwidth(Y)
    rows = []

    def row(metric, ours, candidates):
        """candidates: [(peer name, fn[, theorylab fn with that peer's option])] of installed peers, or a numpy
        stand-in; the fastest is the anchor, and the difference is taken against theorylab's matching option."""
        t_ours, v_ours = _time(ours, repeat)
        best = None
        for name, fn, *match in candidates:
            t, v = _time(fn, 1)
            if best is None or t < best[1]:
                best = (name, t, float(v), float(match[0]()) if match else float(v_ours))
        rows.append({"metric": metric, "ours_s": t_ours, "peer": best[0], "peer_s": best[1],
                     "ratio": best[1] / t_ours, "ours": best[3], "peer_value": best[2],
                     "diff": abs(best[3] - best[2])})

    Xt, Yt = torch.as_tensor(X), torch.as_tensor(Y)
    lin = [("ckatorch", lambda: ckatorch.cka_base(Xt, Yt, kernel="linear").item())] if ckatorch else []
    lin = lin or [("dense numpy n×n", lambda: (lambda K, L: _dense_hsic(K, L, "gretton") / np.sqrt(
        _dense_hsic(K, K, "gretton") * _dense_hsic(L, L, "gretton")))(X @ X.T, Y @ Y.T))]
    row("linear CKA (biased), from arrays", lambda: g.linear_cka(X, Y), lin)
    cands = []
    if repsim:
        cands.append(("repsim", lambda: repsim.cka([X, Y], kernel_type="rbf")[0, 1], lambda: g.kernel_cka(X, Y)))
    if ckatorch:
        sxk, syk = g.median_bandwidth(X, "ckatorch"), g.median_bandwidth(Y, "ckatorch")
        cands.append(("ckatorch", lambda: ckatorch.cka_base(Xt, Yt, kernel="rbf").item(),
                      lambda: g.kernel_cka(X, Y, sigma="ckatorch")))
    else:
        sxk, syk = sx, sy
    if not cands:
        cands.append(("dense numpy n×n", lambda: (lambda K, L: _dense_hsic(K, L, "gretton") / np.sqrt(
            _dense_hsic(K, K, "gretton") * _dense_hsic(L, L, "gretton")))(_dense_rbf(X, sx), _dense_rbf(Y, sy))))
    row("RBF CKA (biased, median σ)", lambda: g.kernel_cka(X, Y), cands)
    row("RBF CKA (debiased)", lambda: g.kernel_cka(X, Y, sigma=(sxk, syk), estimator="song"),
        [("ckatorch", lambda: ckatorch.cka_base(Xt, Yt, kernel="rbf", unbiased=True).item())] if ckatorch else
        [("dense numpy n×n", lambda: (lambda K, L: _dense_hsic(K, L, "song") / np.sqrt(
            _dense_hsic(K, K, "song") * _dense_hsic(L, L, "song")))(_dense_rbf(X, sxk), _dense_rbf(Y, syk)))])
    row("HSIC, Lange's estimator (RBF)", lambda: g.kernel_hsic(X, Y, estimator="lange"),
        [("repsim", lambda: repsim.hsic([X, Y], kernel_type="rbf", estimator="lange")[0, 1])] if repsim else
        [("dense numpy n×n", lambda: _dense_hsic(_dense_rbf(X, sx), _dense_rbf(Y, sy), "lange"))])
    exact = g.kernel_cka(X, Y, sigma=(sx, sy))
    for D in components:
        row(f"RBF CKA by random features, D = {D}", lambda D=D: g.rbf_cka_rff(X, Y, sx, sy, D),
            [("exact kernel_cka (theorylab)", lambda: exact)])
        rows[-1]["peer_s"], _ = _time(lambda: g.kernel_cka(X, Y, sigma=(sx, sy)), 1)
        rows[-1]["ratio"] = rows[-1]["peer_s"] / rows[-1]["ours_s"]

    def qr_cca():
        qx, _ = np.linalg.qr(X - X.mean(0))
        qy, _ = np.linalg.qr(Y - Y.mean(0))
        return np.linalg.svd(qx.T @ qy, compute_uv=False)
    row("mean CCA (pillai)", lambda: g.mean_cca(X, Y),
        [("repsim", lambda: repsim.cca([X, Y], summary_type="pillai")[0, 1])] if repsim else
        [("numpy QR + SVD", lambda: qr_cca().mean())])
    row("PWCCA (both sides)", lambda: g.pwcca(X, Y, side="both"),
        [("repsim", lambda: repsim.pwcca([X, Y])[0, 1])] if repsim else
        [("numpy QR + SVD (mean ρ)", lambda: qr_cca().mean())])
    row("SVCCA (99 %; repsim's differs by definition)", lambda: g.svcca(X, Y),
        [("repsim", lambda: repsim.svcca([X, Y], summary_type="pillai")[0, 1])] if repsim else
        [("numpy QR + SVD (mean ρ)", lambda: qr_cca().mean())])
    if rsatb:
        from rsatoolbox.rdm.compare import compare

        def rsatb_run(method, metric_x="euclidean", metric_y="euclidean"):
            ra = rsatb.rdm.calc_rdm(rsatb.data.Dataset(X), method=metric_x)
            rb = rsatb.rdm.calc_rdm(rsatb.data.Dataset(Y), method=metric_y)
            return compare(ra, rb, method=method)[0, 0]
    from scipy.spatial.distance import pdist
    for method in ("corr", "corr_cov"):
        row(f"RSA, squared Euclidean RDMs, {method} (moments)", lambda method=method: g.rsa(X, Y, method=method),
            [("rsatoolbox", lambda method=method: rsatb_run(method))] if rsatb else
            [("scipy pdist + numpy", lambda method=method: g.compare_rdms(pdist(X, "sqeuclidean"),
                                                                          pdist(Y, "sqeuclidean"), method))])
    row("RSA, correlation RDMs, spearman", lambda: g.rsa(X, Y, "correlation", "spearman"),
        [("rsatoolbox", lambda: rsatb_run("spearman", "correlation", "correlation"))] if rsatb else
        [("scipy pdist + spearmanr", lambda: __import__("scipy.stats").stats.spearmanr(
            pdist(X, "correlation"), pdist(Y, "correlation"))[0])])
    q = 10
    Zl = (rng.standard_normal((n // q, 1, p)) * 2 + rng.standard_normal((n // q, q, p))).astype(np.float32)
    row("LiDAR (reptrix convention)", lambda: g.lidar(Zl, convention="reptrix"),
        [("reptrix", lambda: __import__("reptrix.lidar").lidar.get_lidar(torch.as_tensor(Zl), n // q, q))]
        if reptrix else [("numpy eig (definition)", lambda: g.lidar(Zl, eps=1e-7))])
    row("α-ReQ, weighted fit (reptrix's)", lambda: g.alpha_req(X, fit="weighted")["alpha"],
        [("reptrix", lambda: __import__("reptrix.alpha").alpha.get_alpha(
            torch.as_tensor(X), fit_range=np.arange(*(lambda r: (r[0] - 1, r[1]))(g.alpha_req(X)["fit_range"])))[0])]
        if reptrix else [("numpy SVD + polyfit", lambda: g.alpha_req(X, fit="weighted")["alpha"])])
    row("RankMe (reptrix's = rankme σ², centred, eps 1e-7)", lambda: g.rankme(X, "sigma2", center=True, eps=1e-7),
        [("reptrix", lambda: __import__("reptrix.rankme").rankme.get_rankme(torch.as_tensor(X)))] if reptrix else
        [("numpy SVD", lambda: g.rankme(X, "sigma2", center=True, eps=1e-7))])
    return rows


def memory_rows(n, p):
    """Peak traced memory (MiB) of linear_cka and effective_rank from float64 arrays, against CrossMoments.from_data."""
    import tracemalloc

    import numpy as np

    import theory.geometry as g

    rng = np.random.default_rng(5)
    X, Y = rng.standard_normal((n, p)), rng.standard_normal((n, p))
    out = {"n": n, "p": p, "input_mib": X.nbytes / 2**20}
    for key, fn in (("linear_cka", lambda: g.linear_cka(X, Y)), ("moments", lambda: g.CrossMoments.from_data(X, Y)),
                    ("effective_rank", lambda: g.effective_rank(X))):
        tracemalloc.start()
        t = time.perf_counter()
        fn()
        out[key + "_s"] = time.perf_counter() - t
        out[key + "_mib"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--widths", default="128,512,1024")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--cka-width", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--device", default=None, help="torch device (default: cuda when present, else cpu)")
    ap.add_argument("--gpu", action="store_true", help="run on CUDA (skipped with a note if there is none)")
    ap.add_argument("--tiny", action="store_true", help="seconds: N = 512, widths 16, 32")
    ap.add_argument("--threads", type=int, default=1, help="torch and BLAS threads on the CPU (default 1: on a "
                    "loaded machine thread pools spin; both sides of every ratio use the same setting)")
    ap.add_argument("--metrics-n", type=int, default=2000, help="samples of section 4 (the peers hold n×n matrices)")
    ap.add_argument("--metrics-p", type=int, default=256)
    ap.add_argument("--mem-n", type=int, default=50000, help="samples of the memory row (float64, p = --mem-p)")
    ap.add_argument("--mem-p", type=int, default=512)
    ap.add_argument("--only", default="1,2,3,4", help="comma-separated sections to run (default all)")
    ap.add_argument("--json", metavar="PATH")
    a = ap.parse_args()
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(a.threads)
    threadpool_limits(a.threads)

    if a.tiny:
        a.n, a.widths, a.batch, a.cka_width, a.repeat = 512, "16,32", 64, 16, 1
        a.metrics_n, a.metrics_p, a.mem_n, a.mem_p = 200, 16, 2000, 16
    dev = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if a.gpu and torch.device(dev).type == "cuda" and not torch.cuda.is_available():
        print("bench_geometry: --gpu given but CUDA is not available; skipped")
        return
    widths = [int(w) for w in a.widths.split(",")]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"bench_geometry on {dev} ({torch.cuda.get_device_name() if torch.device(dev).type == 'cuda' else 'CPU'}, "
          f"{os.cpu_count()} cores, {a.threads} thread(s), load {load:.1f}), N = {a.n}, batch {a.batch}, "
          f"torch {torch.__version__}")
    only = {x.strip() for x in a.only.split(",")}
    rows = ck = mem = None
    if "1" in only:
        rows = per_layer(a.n, widths, a.batch, dev, a.repeat)
        print("1. per layer: whole metric set's one-pass accumulation vs the bare GEMM floor Σ HᵀH (goal <= 2x)")
        print(f"   {'p':>6} {'floor s':>9} {'metric set s':>13} {'ratio':>6} {'read-out s':>11}")
        for r in rows:
            print(f"   {r['p']:6d} {r['floor_s']:9.4f} {r['metric_set_s']:13.4f} {r['ratio']:6.2f} "
                  f"{r['readout_s']:11.4f}")
    if "2" in only:
        ck = cka_vs_gram(a.n, a.cka_width, a.cka_width, a.batch, dev)
        print(f"2. debiased CKA, N = {ck['n']}, p = q = {ck['p']}: one pass {ck['one_pass_s']:.3f} s, n×n Gram "
              f"{ck['gram_s']:.3f} s, speed-up {ck['speedup']:.1f}x (goal >= 10x); CKA {ck['cka_one_pass']:.15f} vs "
              f"{ck['cka_gram']:.15f}, relative difference {ck['rel_diff']:.2e} (goal <= 1e-10)")
    if "3" in only:
        mem = peak_memory(a.n, widths[0], a.batch, dev)
        key = "cuda_mib" if mem[0]["cuda_mib"] is not None else "rss_mib"
        print(f"3. peak memory of a 3-layer capture (p = {widths[0]}): N = {mem[0]['n']}: {mem[0][key]:.1f} MiB, "
              f"2N = {mem[1]['n']}: {mem[1][key]:.1f} MiB ({key}); ratio {mem[1][key] / mem[0][key]:.3f} (goal: flat)")
    new, memr = None, None
    if "4" not in only:
        pass
    elif torch.device(dev).type == "cuda":
        print("4. skipped on CUDA: theory.geometry's metrics are numpy code on the host CPU (run with --device cpu)")
    else:
        new = new_metrics(a.metrics_n, a.metrics_p, a.repeat, (32, 64) if a.tiny else (256, 1024))
        print(f"4. metrics shared with the peers, N = {a.metrics_n}, p = {a.metrics_p}, q = {a.metrics_p // 2}: "
              "theorylab vs the fastest installed peer (ratio = peer s / theorylab s)")
        print(f"   {'metric':<52} {'theorylab s':>11} {'anchor s':>9} {'ratio':>7} {'|difference|':>12}  anchor")
        for r in new:
            print(f"   {r['metric']:<52} {r['ours_s']:11.4f} {r['peer_s']:9.4f} {r['ratio']:7.2f} {r['diff']:12.2e}  "
                  f"{r['peer']}")
        memr = memory_rows(a.mem_n, a.mem_p)
        print(f"   peak traced memory from float64 arrays, N = {memr['n']}, p = q = {memr['p']} (one input "
              f"{memr['input_mib']:.1f} MiB): linear_cka {memr['linear_cka_mib']:.1f} MiB "
              f"({memr['linear_cka_s']:.2f} s), CrossMoments.from_data {memr['moments_mib']:.1f} MiB (anchor; ratio "
              f"{memr['linear_cka_mib'] / memr['moments_mib']:.2f}), effective_rank "
              f"{memr['effective_rank_mib']:.1f} MiB; "
              f"linear_cka / one input = {memr['linear_cka_mib'] / memr['input_mib']:.2f}")
    if a.json:
        Path(a.json).write_text(json.dumps({"device": dev, "load": load, "per_layer": rows, "cka": ck,
                                            "memory": mem, "shared_metrics": new, "array_memory": memr}, indent=1))


if __name__ == "__main__":
    main()
