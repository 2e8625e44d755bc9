"""Benchmark: CovLasso for every category of a classifier-like model, three ways, in one run (ND Eq 2, App. C).

Logits F = Z W + noise (N = 50 000 samples, n = 1000 categories, rank 150, noise 0.05 of the signal),
scaled so that the paper's setting, sklearn ``Lasso(alpha=2.5, max_iter=50000)`` i.e. λ = 2α = 5,
gives supports of about 150 (the scale is found by bisection with our solver and printed).

  (a) the paper's pipeline: sklearn ``Lasso`` on the raw logits, one category at a time (≥ 3; 1 with --quick);
  (b) sklearn ``lars_path_gram`` on the covariance (exact homotopy in Python + LAPACK), ≥ 20 categories;
  (c) ours: the covariance once (``theory.dependency.second_moment``: one dsyrk, no copy of F) +
      ``covlasso_all`` for all 1000 categories (numba, prange).

The covariance is timed against bare products of the same float64 matrix measured in the same run (best of
``--repeat``): numpy ``F.T @ F`` (GEMM), scipy ``dsyrk`` on the C-ordered F (``trans=1``: copies F first), and
``dsyrk`` on the Fortran-ordered view F.T (``trans=0``, no copy); the ratio is against the fastest of them.
Prints per-category times, the ratios, the KKT violation of every answer (units λ_max(i), ND Eq 7)
and whether our supports equal (b)'s. numba compile time is excluded (warm-up on a small problem).
``--gpu`` adds a GPU column for the covariance (torch float64 FᵀF on CUDA, with and without the transfer of F)
when CUDA is present, else prints one line saying why it was skipped.

    python benchmarks/bench_covlasso.py [--quick] [--gpu] [--device cuda] [--tiny] [--n-sklearn K] [--n-lars M]
                                        [--repeat R] [--N N] [--n n] [--rank r]
"""
import argparse
import time
import warnings

import numpy as np

from theory.covlasso import covlasso, covlasso_all, kkt_violation, kkt_violation_all
from theory.dependency import second_moment

LAM = 5.0  # the paper's alpha = 2.5 for ResNets (App. C), λ = 2α


def make_logits(N, n, rank, noise, seed=0):
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((N, rank))
    W = rng.standard_normal((rank, n)) / np.sqrt(rank)
    F = Z @ W
    F += noise * rng.standard_normal((N, n))
    return F


def covariance(F):
    """Cov = FᵀF/N (uncentred second moment, ND Eq 2): the library's ``second_moment`` (dsyrk on the view F.T)."""
    return second_moment(F)


def best_of(fn, repeat):
    ts, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t)
    return min(ts), out


def covariance_floors(F, repeat):
    """Bare FᵀF of the same float64 matrix, three ways, best of ``repeat`` each (seconds)."""
    from scipy.linalg.blas import dsyrk

    return {"numpy F.T @ F (GEMM)": best_of(lambda: F.T @ F, repeat)[0],
            "dsyrk(F, trans=1) (copies F)": best_of(lambda: dsyrk(1.0, F, trans=1), repeat)[0],
            "dsyrk(F.T, trans=0) (no copy)": best_of(lambda: dsyrk(1.0, F.T, trans=0), repeat)[0]}


def gpu_column(F, repeat, device="cuda"):
    """Covariance on ``device`` (torch float64; CUDA, or ``cpu`` for the gpu-check's dry run of this code): seconds
    with the host→device transfer of F, and without; or None, why."""
    try:
        import torch
    except ImportError as exc:
        return None, f"torch is not importable ({exc})"
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        return None, "torch.cuda.is_available() is False (no CUDA device, or a CPU-only torch build)"
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)

    def with_transfer():
        g = torch.from_numpy(F).to(dev)
        c = (g.T @ g) / g.shape[0]
        sync()
        return c

    g = torch.from_numpy(F).to(dev)

    def on_device():
        c = (g.T @ g) / g.shape[0]
        sync()
        return c

    with_transfer()  # warm-up (cuBLAS handles)
    t_tr, c = best_of(with_transfer, repeat)
    t_dev, _ = best_of(on_device, repeat)
    err = float(np.abs(c.cpu().numpy() - second_moment(F)).max() / np.abs(second_moment(F)).max())
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu (dry run of the GPU column)"
    return {"with transfer": t_tr, "on device": t_dev, "max rel. difference vs CPU": err, "device": name}, None


def calibrate(C, target=150, cats=range(0, 1000, 100)):
    """Scale s (logits × s, Cov × s²) so that the median support at λ = 5 is about ``target``.

    Support(Cov·s², λ) = support(Cov, λ/s²), so bisect on λ' = λ/s² with the raw kernel (no validation).
    """
    from theory._homotopy import _homotopy

    cats = [i for i in cats if i < C.shape[0]]

    def med(lam):
        return np.median([np.count_nonzero(_homotopy(C, i, lam / 2, False, 10**6)[0]) - 1 for i in cats])

    lo, hi = 1e-8 * np.abs(C).max(), 2 * np.abs(C).max()  # support grows as λ' decreases
    for _ in range(40):
        mid = np.sqrt(lo * hi)
        if med(mid) > target:
            lo = mid
        else:
            hi = mid
    return np.sqrt(LAM / np.sqrt(lo * hi))


def kkt(C, i, theta):
    return kkt_violation(C, i, LAM, theta)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="one sklearn Lasso category instead of three")
    ap.add_argument("--n-sklearn", type=int, default=None)
    ap.add_argument("--n-lars", type=int, default=20)
    ap.add_argument("--N", type=int, default=50_000)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--rank", type=int, default=150)
    ap.add_argument("--repeat", type=int, default=3, help="best of this many runs for the covariance timings")
    ap.add_argument("--gpu", action="store_true", help="add a GPU column for the covariance (CUDA), or say why not")
    ap.add_argument("--device", default="cuda", help="device of the GPU column (cpu: dry run of its code)")
    ap.add_argument("--tiny", action="store_true", help="smallest sizes (every code path in seconds; the gpu-check's "
                    "dry run): overrides the size options")
    args = ap.parse_args()
    if args.tiny:
        args.N, args.n, args.rank, args.n_lars, args.n_sklearn, args.repeat = 300, 40, 10, 2, 1, 1
    n_sk = args.n_sklearn if args.n_sklearn is not None else (1 if args.quick else 3)
    from sklearn.linear_model import Lasso, lars_path_gram

    # warm-up: compile / load the numba kernels (excluded from the timings)
    w = np.random.default_rng(1).standard_normal((50, 8))
    covlasso_all(w.T @ w / 50, rho=0.3)
    covlasso(w.T @ w / 50, 0, rho=0.3)

    t = time.perf_counter()
    F = make_logits(args.N, args.n, args.rank, 0.05)
    t_gen = time.perf_counter() - t
    C0 = covariance(F)
    s = calibrate(C0)
    F *= s
    print(f"logits: N={args.N}, n={args.n}, rank {args.rank} + noise 0.05, scaled by {s:.4g} so that λ = {LAM:g} "
          f"(sklearn alpha = {LAM / 2:g}) gives supports ≈ 150  (generated in {t_gen:.1f} s)")
    ev = np.linalg.eigvalsh(C0 * s * s)
    print(f"Cov eigenvalues: max {ev[-1]:.3g}, {min(150, len(ev))}th {ev[-min(150, len(ev))]:.3g}, min {ev[0]:.3g} (κ = {ev[-1] / ev[0]:.3g})")

    # the covariance against bare products of the same matrix (floors), measured now, best of --repeat
    floors = covariance_floors(F, args.repeat)
    t_cov, C = best_of(lambda: covariance(F), args.repeat)
    fastest = min(floors, key=floors.get)
    print(f"\ncovariance FᵀF/N, N={args.N}, n={args.n}, float64 (best of {args.repeat}):")
    for k, v in floors.items():
        print(f"    bare {k:32s} {v:7.3f} s")
    print(f"    ours (second_moment)                   {t_cov:7.3f} s   = {t_cov / floors[fastest]:.2f}x the fastest "
          f"bare product ({fastest}); goal ≤ 1.3x")
    ref = (F.T @ F) / F.shape[0]
    print(f"    max |ours − F.T@F/N| / max|Cov| = {np.abs(C - ref).max() / np.abs(ref).max():.1e}; symmetric: "
          f"{np.array_equal(C, C.T)}")
    if args.gpu:
        col, why = gpu_column(F, args.repeat, args.device)
        if col is None:
            print(f"    GPU column skipped: {why}")
        else:
            print(f"    GPU ({col['device']}): {col['on device']:.4f} s on device ({floors[fastest] / col['on device']:.1f}x "
                  f"faster than the CPU floor), {col['with transfer']:.3f} s with the transfer of F; max rel. difference "
                  f"{col['max rel. difference vs CPU']:.1e}")

    # (c) ours: covariance + all categories
    t1 = time.perf_counter()
    Theta = covlasso_all(C, LAM)
    t_all = time.perf_counter() - t1
    t_c = t_cov + t_all
    per_c = t_all / args.n
    kkt_c = kkt_violation_all(C, Theta, LAM)
    sup = (Theta != 0).sum(1) - 1
    print(f"\n(c) ours: covariance {t_cov:.2f} s + covlasso_all {t_all:.2f} s for {args.n} categories = {t_c:.2f} s "
          f"total; {per_c * 1e3:.2f} ms per category (solver only), {t_c / args.n * 1e3:.2f} ms incl. covariance")
    print(f"    supports: median {int(np.median(sup))}, range [{sup.min()}, {sup.max()}]; "
          f"KKT violation max {kkt_c.max():.2e}, median {np.median(kkt_c):.2e} (units λ_max(i))")

    # (b) lars_path_gram on the covariance
    rng = np.random.default_rng(2)
    cats = rng.choice(args.n, size=min(args.n_lars, args.n), replace=False)
    from theory._homotopy import _homotopy

    t_b, t_1, same, kkt_b = [], [], 0, []
    print(f"\n(b) sklearn lars_path_gram on the covariance, {len(cats)} categories:")
    for i in cats:
        rest = np.delete(np.arange(args.n), i)
        Cr = np.ascontiguousarray(C[np.ix_(rest, rest)])
        b = C[rest, i].copy()
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            alphas, _, coefs = lars_path_gram(b, Cr, n_samples=1, alpha_min=LAM / 2, method="lasso")
        dt = time.perf_counter() - t
        th = np.empty(args.n)
        th[rest] = coefs[:, -1]
        th[i] = -1.0
        t = time.perf_counter()
        ours1 = _homotopy(C, int(i), LAM / 2, False, 10**6)[0]  # ours, this category alone, one thread
        t_1.append(time.perf_counter() - t)
        assert np.array_equal(ours1, Theta[i])
        t_b.append(dt)
        kkt_b.append(kkt(C, i, th))
        eq = np.array_equal(th != 0, Theta[i] != 0)
        same += eq
        print(f"    category {i:4d}: {dt * 1e3:7.1f} ms (ours alone {t_1[-1] * 1e3:5.2f} ms), {len(alphas):4d} breakpoints, support {np.count_nonzero(coefs[:, -1]):4d}, "
              f"KKT {kkt_b[-1]:.1e}, ours KKT {kkt_c[i]:.1e}, same support: {eq}, "
              f"max|Δθ| {np.abs(th - Theta[i]).max():.1e}")
    per_b = float(np.median(t_b))
    print(f"    median {per_b * 1e3:.1f} ms per category (ours on the same categories, one at a time, one thread: "
          f"{np.median(t_1) * 1e3:.2f} ms, {per_b / np.median(t_1):.1f}x faster); supports equal to ours: {same}/{len(cats)}")

    # (a) sklearn Lasso on the raw logits (the paper's pipeline)
    print(f"\n(a) sklearn Lasso(alpha={LAM / 2:g}, max_iter=50000, fit_intercept=False) on the raw logits, {n_sk} categories:")
    t_a, kkt_a = [], []
    for i in cats[:n_sk]:
        rest = np.delete(np.arange(args.n), i)
        X = np.asfortranarray(F[:, rest])
        y = F[:, i].copy()
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = Lasso(alpha=LAM / 2, max_iter=50_000, fit_intercept=False).fit(X, y)
        dt = time.perf_counter() - t
        th = np.empty(args.n)
        th[rest] = m.coef_
        th[i] = -1.0
        t_a.append(dt)
        kkt_a.append(kkt(C, i, th))
        print(f"    category {i:4d}: {dt:7.2f} s, {m.n_iter_} iterations, support {np.count_nonzero(m.coef_)}, "
              f"KKT {kkt_a[-1]:.1e} (= {kkt_a[-1] * 2 * np.abs(C[rest, i]).max() / (LAM / 2):.2%} of λ/2), "
              f"same support as ours: {np.array_equal(th != 0, Theta[i] != 0)}")
        del X
    per_a = float(np.median(t_a)) if t_a else float("nan")

    print("\nper category (median)        time        vs ours (solver only)   vs ours (incl. covariance)")
    print(f"  (a) sklearn Lasso, logits  {per_a * 1e3:10.1f} ms  {per_a / per_c:12.0f}x  {per_a / (t_c / args.n):16.0f}x")
    print(f"  (b) lars_path_gram, Cov    {per_b * 1e3:10.2f} ms  {per_b / per_c:12.1f}x  {per_b / (t_c / args.n):16.1f}x")
    print(f"  (c) ours, covlasso_all     {per_c * 1e3:10.3f} ms  {1:12.0f}x  {per_c / (t_c / args.n):16.2f}x")
    print(f"all {args.n} categories: (c) {t_c:.2f} s (covariance {t_cov:.2f} s + solver {t_all:.2f} s; goal ≤ 3 s); "
          f"(b) would take {per_b * args.n:.0f} s; (a) {per_a * args.n / 3600:.1f} h")
    ka = f"{max(kkt_a):.1e}" if kkt_a else "not run"
    print(f"KKT violation (units λ_max): (a) max {ka}, (b) max {max(kkt_b):.1e}, (c) max {kkt_c.max():.1e}")


if __name__ == "__main__":
    main()
