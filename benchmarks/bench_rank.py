"""Benchmark: RD numerical tools, each against anchors measured in the same run.

(1) Lyapunov spectrum, n = 256, L = 2000 (one trial): numba Benettin QR loop vs a plain numpy loop vs the
    bare LAPACK QR (dgeqrf + dorgqr) time of L matrices of the same size (the floor: QR is the work).
(2) Partial Jacobian (RD Eq 5) of a 10-block CNN (8 channels, 32×32 input) on the central 16×16×3 patch
    (K = 768 columns, d = 8192 outputs): vmap'd forward mode (jvp) and vmap'd reverse mode (vjp) vs a loop of
    one autograd call per output (timed on a slice of the outputs and scaled), goal ≥ 10×.
(3) Monte Carlo numerical rank (RD Eq 4), 10 000 trials of 64×64: numba-parallel vs a numpy loop.

    python benchmarks/bench_rank.py [--n 256] [--L 2000] [--trials 10000]

Compile time is excluded (every numba kernel is warmed up first). (1) and (3) run with single-threaded BLAS
for every contestant (numba's kernels always do inside prange). Timings on a shared machine are inflated by
contention; the ratios within one run are the fair numbers.
"""
import argparse
import os
import time

import numpy as np
from scipy.linalg import lapack  # load scipy's OpenBLAS now, so the thread limit below covers it too

os.environ.setdefault("NUMBA_CACHE_DIR", os.path.join(os.getcwd(), ".theorylab_cache", "numba"))

from sims import random_matrix as rm  # noqa: E402


def best_of(fn, repeat=1):
    ts, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t)
    return min(ts), out


def bench_lyapunov(n, L):
    pool = [np.asfortranarray(np.random.default_rng(i).standard_normal((n, n))) for i in range(8)]
    lw = 64 * n  # blocked Householder (f2py's default lwork = 3n would force the unblocked level-2 code)

    def floor():
        for i in range(L):
            qr, tau, work, info = lapack.dgeqrf(pool[i % 8], lwork=lw)
            lapack.dorgqr(qr, tau, lwork=lw)

    t_fl, _ = best_of(floor)  # first: nothing else has run yet
    t_np, s_np = best_of(lambda: rm.lyapunov_spectrum_numpy(n, L, np.random.default_rng(1)))
    rm.lyapunov_spectrum(n, 3, trials=1)  # warm-up (compile or load the cache)
    t_nb, s_nb = best_of(lambda: rm.lyapunov_spectrum(n, L, trials=1, seed=1))
    t_mm, _ = best_of(lambda: [pool[i % 8] @ pool[(i + 1) % 8] for i in range(L)])
    print(f"(1) Lyapunov spectrum n = {n}, L = {L}, one trial")
    print(f"    numba Benettin loop:        {t_nb:8.2f} s")
    print(f"    numpy loop:                 {t_np:8.2f} s   numpy / numba = {t_np / t_nb:5.2f}x")
    print(f"    bare LAPACK QR (floor):     {t_fl:8.2f} s   numba / floor = {t_nb / t_fl:5.2f}x "
          f"(+ the L products J_l Q: {t_mm:.2f} s)")
    print(f"    λ_1, λ_n numba {s_nb[0, 0]:.4f}, {s_nb[0, -1]:.4f}; numpy {s_np[0]:.4f}, {s_np[-1]:.4f}")


def bench_partial_jacobian(out_slice=512):
    import torch

    from sims import jacobian as J
    from sims import rank_nets as nets

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    g = torch.Generator().manual_seed(0)
    blocks = nets.cnn_blocks([3] + [8] * 10, g, dtype=torch.float32)
    seq = torch.nn.Sequential(*blocks)
    f = lambda z: seq(z.unsqueeze(0))[0]  # noqa: E731
    x = torch.randn(3, 32, 32, generator=g)
    idx = J.patch_indices((3, 32, 32), 16)
    J.partial_jacobian(f, x, idx[:8], mode="forward")  # warm-up
    t_fw, jf = best_of(lambda: J.partial_jacobian(f, x, idx, mode="forward", chunk_size=256))
    t_rv, jr = best_of(lambda: J.partial_jacobian(f, x, idx, mode="reverse", chunk_size=512))
    xr = x.clone().requires_grad_(True)
    y = f(xr).reshape(-1)
    d = y.numel()
    t0 = time.perf_counter()
    rows = []
    for i in range(out_slice):
        (gr,) = torch.autograd.grad(y[i], xr, retain_graph=True)
        rows.append(gr.reshape(-1)[torch.as_tensor(idx)])
    t_loop = (time.perf_counter() - t0) * d / out_slice
    err = float((torch.stack(rows) - jf[:out_slice]).abs().max())
    print(f"(2) partial Jacobian, 10-block CNN (8 ch, 32×32), central 16×16×3 patch: {d} × {len(idx)}")
    print(f"    vmap forward (jvp):          {t_fw:8.2f} s")
    print(f"    vmap reverse (vjp):          {t_rv:8.2f} s")
    print(f"    loop, one autograd call per output (scaled from {out_slice} of {d}): {t_loop:8.2f} s   "
          f"loop / forward = {t_loop / t_fw:6.1f}x, loop / reverse = {t_loop / t_rv:6.1f}x")
    print(f"    max |forward − reverse| = {float((jf - jr).abs().max()):.1e}, forward vs loop = {err:.1e} (float32)")


def bench_mc_rank(trials):
    rm.mc_numerical_rank(64, 64, 0.05, trials=4)  # warm-up
    t_nb, o = best_of(lambda: rm.mc_numerical_rank(64, 64, 0.05, trials=trials, seed=2))
    t_sv, o2 = best_of(lambda: rm.mc_numerical_rank(64, 64, 0.05, trials=trials, seed=2, method="svd"))
    t_np, r = best_of(lambda: rm.mc_numerical_rank_numpy(64, 64, 0.05, trials, np.random.default_rng(2)))
    import numba

    nt = numba.get_num_threads()
    numba.set_num_threads(1)
    t_1, _ = best_of(lambda: rm.mc_numerical_rank(64, 64, 0.05, trials=trials, seed=2))
    numba.set_num_threads(nt)

    print(f"(3) Monte Carlo Rank_ε, {trials} trials of 64×64, ε = 0.05 ({numba.get_num_threads()} numba threads)")
    print(f"    numba parallel (Gram + eigvalsh): {t_nb:8.2f} s   numpy / numba = {t_np / t_nb:5.2f}x")
    print(f"    numba, 1 thread (Gram + eigvalsh): {t_1:7.2f} s   parallel speed-up {t_1 / t_nb:4.2f}x on {nt} threads")
    print(f"    numba parallel (SVD with U, V):   {t_sv:8.2f} s   numpy / numba = {t_np / t_sv:5.2f}x")
    print(f"    numpy loop (SVD, values only):    {t_np:8.2f} s")
    print(f"    mean rank numba {o['ranks'].mean():.2f} / {o2['ranks'].mean():.2f}, numpy {r.mean():.2f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--L", type=int, default=2000)
    ap.add_argument("--trials", type=int, default=10_000)
    ap.add_argument("--only", choices=["1", "2", "3"], default=None)
    a = ap.parse_args()
    # (1) and (3) run with single-threaded BLAS for all contestants (numba's kernels always do, inside prange):
    # the same per-core work; multi-threaded OpenBLAS on a loaded 2-core machine stalls (we saw the bare QR
    # floor take 20x longer than the whole single-threaded numba loop).
    from sims.random_matrix import _blas_single_thread

    if a.only in (None, "1"):
        with _blas_single_thread():
            bench_lyapunov(a.n, a.L)
    if a.only in (None, "2"):
        bench_partial_jacobian()
    if a.only in (None, "3"):
        with _blas_single_thread():
            bench_mc_rank(a.trials)


if __name__ == "__main__":
    main()
