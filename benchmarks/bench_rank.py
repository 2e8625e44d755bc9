"""Benchmark: RD numerical tools, each against anchors measured in the same run.

(1) Lyapunov spectrum, n = 256, L = 2000 (one trial): ours (layers drawn in blocks by numpy's Generator, the
    Benettin step as LAPACK dormqr + dgeqrf on an implicit Q, numba) vs a plain numpy loop (np.linalg.qr of
    J_l Q_{l−1}) vs the floor: the bare blocked LAPACK QR (dgeqrf + dorgqr, optimal lwork) of L matrices of the
    same size. Goal: ours ≤ 1.5× the floor and faster than the numpy loop.
(2) Partial Jacobian (RD Eq 5) of a 10-block CNN (8 channels, 32×32 input) on the central 16×16×3 patch
    (K = 768 columns, d = 8192 outputs): vmap'd forward mode (jvp) and vmap'd reverse mode (vjp) vs a loop of
    one autograd call per output (timed on a slice of the outputs and scaled), goal ≥ 10×. ``--gpu`` adds a
    CUDA column (forward and reverse on the GPU, and their agreement with the CPU result).
(3) Monte Carlo numerical rank (RD Eq 4), 10 000 trials of 64×64: numba-parallel vs a numpy loop.

    python benchmarks/bench_rank.py [--only 1|2|3] [--n 256] [--L 2000] [--trials 10000] [--repeat 3] [--gpu]
                                    [--device cuda] [--tiny]

Compile time is excluded (every numba kernel is called once first). (1) and (3) run with single-threaded BLAS for
every contestant (numba's kernels always do inside prange). Each time is the best of ``--repeat`` runs: on a
shared machine the minimum is the least contended one, and the ratios within one run are the fair numbers.
"""
import argparse
import os
import time

import numpy as np
from scipy.linalg import lapack  # load scipy's OpenBLAS now, so the thread limit below covers it too

os.environ.setdefault("NUMBA_CACHE_DIR", os.path.join(os.getcwd(), ".theorylab_cache", "numba"))

from sims import marchenko_pastur as mp  # noqa: E402
from sims import random_matrix as rm  # noqa: E402


def best_of(fn, repeat=1, cpu=False):
    """Best wall time of ``repeat`` runs (and, with ``cpu=True``, the best process CPU time, all threads)."""
    ts, cs, out = [], [], None
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        ts.append(time.perf_counter() - t)
        cs.append(time.process_time() - c)
    return ((min(ts), min(cs)) if cpu else min(ts)), out


def bench_lyapunov(n, L, repeat):
    pool = [np.asfortranarray(np.random.default_rng(i).standard_normal((n, n))) for i in range(8)]
    lw = rm._lwork(n)  # blocked Householder (f2py's default lwork = 3n would force the unblocked level-2 code)

    def floor():
        for i in range(L):
            qr, tau, work, info = lapack.dgeqrf(pool[i % 8], lwork=lw)
            lapack.dorgqr(qr, tau, lwork=lw)

    rm.lyapunov_spectrum(n, 3, trials=1)  # warm-up (compile or load the cache)
    t_fl = t_np = t_nb = c_fl = c_np = c_nb = np.inf
    for _ in range(repeat):  # interleaved, so that a burst of contention hits every contestant alike
        (t, c), _ = best_of(floor, cpu=True)
        t_fl, c_fl = min(t_fl, t), min(c_fl, c)
        (t, c), s_np = best_of(lambda: rm.lyapunov_spectrum_numpy(n, L, np.random.default_rng(1)), cpu=True)
        t_np, c_np = min(t_np, t), min(c_np, c)
        (t, c), s_nb = best_of(lambda: rm.lyapunov_spectrum(n, L, trials=1, seed=1), cpu=True)
        t_nb, c_nb = min(t_nb, t), min(c_nb, c)
    buf = np.empty((16, n, n))
    g = np.random.default_rng(0)
    t_rng, _ = best_of(lambda: [g.standard_normal(out=buf) for _ in range(L // 16)], repeat)
    t_mm, _ = best_of(lambda: [pool[i % 8] @ pool[(i + 1) % 8] for i in range(L)], repeat)
    print(f"(1) Lyapunov spectrum n = {n}, L = {L}, one trial, single-threaded BLAS, best of {repeat} "
          f"(wall; CPU = all threads of the process)")
    print(f"    ours (numpy blocks + dormqr/dgeqrf): {t_nb:8.2f} s wall {c_nb:7.2f} s CPU   ours / floor = "
          f"{t_nb / t_fl:5.2f}x wall, {c_nb / c_fl:5.2f}x CPU (goal <= 1.5)")
    print(f"    numpy loop (np.linalg.qr):          {t_np:8.2f} s wall {c_np:7.2f} s CPU   numpy / ours = "
          f"{t_np / t_nb:5.2f}x wall, {c_np / c_nb:5.2f}x CPU (goal > 1)")
    print(f"    floor: bare dgeqrf + dorgqr:         {t_fl:8.2f} s wall {c_fl:7.2f} s CPU")
    print(f"    parts: drawing the L Gaussian layers {t_rng:.2f} s; the L products J_l Q that the numpy loop "
          f"also pays: {t_mm:.2f} s")
    print(f"    λ_1, λ_n ours {np.max(s_nb):.4f}, {np.min(s_nb):.4f}; numpy {s_np[0]:.4f}, {s_np[-1]:.4f}; "
          f"ψ-law {rm_law(n)[0]:.4f}, {rm_law(n)[-1]:.4f}")


def rm_law(n):
    from theory.rank import lyapunov_law

    return lyapunov_law(n)


def _cnn(device, dtype, blocks=10, size=32):
    import torch

    from sims import rank_nets as nets

    g = torch.Generator().manual_seed(0)
    blocks = nets.cnn_blocks([3] + [8] * blocks, g, dtype=dtype, device=device)
    seq = torch.nn.Sequential(*blocks)
    x = torch.randn(3, size, size, generator=g, dtype=dtype).to(device)
    return (lambda z: seq(z.unsqueeze(0))[0]), x


def bench_partial_jacobian(repeat, gpu, out_slice=512, device="cuda", tiny=False):
    import torch

    from sims import jacobian as J

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    blocks, size, patch = (2, 8, 4) if tiny else (10, 32, 16)
    f, x = _cnn("cpu", torch.float32, blocks, size)
    idx = J.patch_indices((3, size, size), patch)
    J.partial_jacobian(f, x, idx[:8], mode="forward")  # warm-up
    t_fw, jf = best_of(lambda: J.partial_jacobian(f, x, idx, mode="forward", chunk_size=256), repeat)
    t_rv, jr = best_of(lambda: J.partial_jacobian(f, x, idx, mode="reverse", chunk_size=512), repeat)
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
    print(f"(2) partial Jacobian, {blocks}-block CNN (8 ch, {size}×{size}), central {patch}×{patch}×3 patch: {d} × {len(idx)}, float32, "
          f"{torch.get_num_threads()} CPU threads, best of {repeat}")
    print(f"    CPU vmap forward (jvp):      {t_fw:8.2f} s")
    print(f"    CPU vmap reverse (vjp):      {t_rv:8.2f} s")
    print(f"    CPU loop, one autograd call per output (scaled from {out_slice} of {d}): {t_loop:8.2f} s   "
          f"loop / forward = {t_loop / t_fw:6.1f}x, loop / reverse = {t_loop / t_rv:6.1f}x (goal >= 10)")
    print(f"    max |forward − reverse| = {float((jf - jr).abs().max()):.1e}, forward vs loop = {err:.1e}")
    if not gpu:
        return
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        print("    GPU column skipped: torch.cuda.is_available() is False (no CUDA device, or a CPU-only torch build)")
        return
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False  # fp32, comparable with the CPU
    fg, xg = _cnn(dev, torch.float32, blocks, size)

    def timed(mode, chunk):
        sync()
        t = time.perf_counter()
        out = J.partial_jacobian(fg, xg, idx, mode=mode, chunk_size=chunk)
        sync()
        return time.perf_counter() - t, out

    timed("forward", 256)  # warm-up (cuDNN autotuning, kernel loading)
    g_fw = min(timed("forward", 768)[0] for _ in range(max(3, repeat)))
    g_rv, jg = min((timed("reverse", 2048) for _ in range(max(3, repeat))), key=lambda r: r[0])
    diff = float((jg.cpu() - jf).abs().max() / jf.abs().max())
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu, dry run"
    print(f"    GPU ({name}) vmap forward: {g_fw:8.4f} s   CPU forward / GPU forward = "
          f"{t_fw / g_fw:7.1f}x")
    print(f"    GPU vmap reverse:             {g_rv:8.4f} s   CPU reverse / GPU reverse = {t_rv / g_rv:7.1f}x; "
          f"loop (CPU) / GPU forward = {t_loop / g_fw:8.0f}x")
    print(f"    max |J_GPU − J_CPU| / max |J| = {diff:.1e} (float32, TF32 off)")


def bench_mc_rank(trials, repeat):
    mp.mc_numerical_rank(64, 64, 0.05, trials=4)  # warm-up
    t_nb, o = best_of(lambda: mp.mc_numerical_rank(64, 64, 0.05, trials=trials, seed=2), repeat)
    t_sv, o2 = best_of(lambda: mp.mc_numerical_rank(64, 64, 0.05, trials=trials, seed=2, method="svd"), repeat)
    t_np, r = best_of(lambda: mp.mc_numerical_rank_numpy(64, 64, 0.05, trials, np.random.default_rng(2)), repeat)
    import numba

    nt = numba.get_num_threads()
    numba.set_num_threads(1)
    t_1, _ = best_of(lambda: mp.mc_numerical_rank(64, 64, 0.05, trials=trials, seed=2), repeat)
    numba.set_num_threads(nt)
    print(f"(3) Monte Carlo Rank_ε, {trials} trials of 64×64, ε = 0.05 ({nt} numba threads), best of {repeat}")
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
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", choices=["1", "2", "3"], default=None)
    ap.add_argument("--gpu", action="store_true", help="add a CUDA column to (2) when CUDA is present")
    ap.add_argument("--device", default="cuda", help="device of the GPU column (cpu: dry run of its code)")
    ap.add_argument("--tiny", action="store_true", help="smallest sizes (n=16, L=20, 50 trials, 8 Jacobian "
                    "outputs timed by the loop, best of 1): every code path in seconds")
    a = ap.parse_args()
    if a.tiny:
        a.n, a.L, a.trials, a.repeat = 16, 20, 50, 1
    from sims.random_matrix import _blas_single_thread

    if a.only in (None, "1"):
        with _blas_single_thread():
            bench_lyapunov(a.n, a.L, a.repeat)
    if a.only in (None, "2"):
        bench_partial_jacobian(a.repeat, a.gpu, out_slice=8 if a.tiny else 512, device=a.device,
                               tiny=a.tiny)
    elif a.gpu:
        print("GPU column: only benchmark (2) has one; run with --only 2 or without --only")
    if a.only in (None, "3"):
        with _blas_single_thread():
            bench_mc_rank(a.trials, a.repeat)


if __name__ == "__main__":
    main()
