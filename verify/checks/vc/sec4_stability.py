"""VC checks on what collapse metrics can see: Prop 4.1 (the loss does not force Σ_W → 0) and Sec 4.3 (fuzziness is
numerically unstable, VCI is not).

``compare(ctx, planted, positive=False)``: the claim, the negative control (``planted``), the positive control.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from sims.threads import single_threaded
from theory import collapse as vc
from theory.collapse.linalg import trace_pinv
from verify.checks.vc._data import EPS, features, miss_ge, miss_le, orth, rel
from verify.registry import Result, check


def _loss(W, b, H, y, kind):
    Z = H @ W.T + b
    if kind == "mse":
        E = Z.copy()
        E[np.arange(len(y)), y] -= 1.0
        return 0.5 * float(np.mean(np.sum(E * E, axis=1)))
    Z = Z - Z.max(axis=1, keepdims=True)
    return float(np.mean(np.log(np.exp(Z).sum(axis=1)) - Z[np.arange(len(y)), y]))


def _null_vector(W, rng, planted, positive):
    if positive:  # W's last column is zero by construction: e_p is an exact null vector
        v = np.zeros(W.shape[1])
        v[-1] = 1.0
        return v
    if planted:  # from the float32 weights a trained network stores, in float32 (as torch.linalg.svd would)
        return np.linalg.svd(W.astype(np.float32))[2][-1].astype(np.float64)
    return sla.null_space(W)[:, 0]


@check(
    "vc.collapse_not_needed", equation="Prop 4.1, App A.1", kind="numeric",
    tolerance="relative loss change ≤ 1e-10, ‖ΔΣ_B‖/‖Σ_B‖ ≤ 1e-10, ‖Σ_W(H′)‖_F > C",
    tolerance_reason="W v is zero up to ε‖W‖‖v‖ for a null vector from the SVD, so the logits move by ≤ λ·ε·‖W‖; "
                     "at λ ≤ 1e4 that is ≤ 1e-11 relative",
    negative_control="the null vector computed in float32 from the float32 weights a trained network stores "
                     "(W v ≈ 1e-7‖W‖ instead of 1e-16): the loss moves by ~λ·1e-7",
    positive_control="W with an exactly zero last column and v = e_p: W v = 0 exactly, so the loss and Σ_B are "
                     "unchanged by construction",
)
@single_threaded(torch_threads=None)  # tiny matrices: BLAS threads only contend
def collapse_not_needed(ctx, planted, positive=False):
    rng = ctx.rng("features")
    Cs = (1e2, 1e4) if ctx.quick else (1e1, 1e2, 1e3, 1e4, 1e5, 1e6)
    worst_loss, worst_sb, worst_formula, rows = 0.0, 0.0, 0.0, []
    for C in Cs:
        for kind in ("mse", "ce"):
            K, N = int(rng.integers(2, 8)), int(rng.integers(2, 10))
            p = K + int(rng.integers(1, 10))
            H, y = features(rng, K, N, p, within=0.5)
            W = rng.normal(size=(K, p)).astype(np.float32).astype(np.float64)  # float32 weights, used in float64
            if positive:
                W[:, -1] = 0.0
            b = rng.normal(size=K)
            v = _null_vector(W, rng, planted, positive)
            v /= np.linalg.norm(v)
            Sw0 = vc.ClassStats.from_features(H, y).sigma_w()
            lam = np.sqrt(2 * C * N * N / (N - 1))  # λ²(N−1)/N² ‖v‖² = 2C dominates Σ_W(H′)
            first = np.array([np.flatnonzero(y == k)[0] for k in range(K)])
            H2 = H.copy()
            H2[first] += lam * v
            st1, st2 = vc.ClassStats.from_features(H, y), vc.ClassStats.from_features(H2, y)
            l1, l2 = _loss(W, b, H, y, kind), _loss(W, b, H2, y, kind)
            # regularisation terms (λ_W/2)‖W‖² + (λ_b/2)‖b‖² are the same on both sides
            dl = abs(l2 - l1) / abs(l1)
            dsb = float(np.linalg.norm(st2.sigma_b() - st1.sigma_b()) / np.linalg.norm(st1.sigma_b()))
            nw = float(np.linalg.norm(st2.sigma_w()))
            a = sum((N - 1) * H[first[k]] - H[(y == k)].sum(0) + H[first[k]] for k in range(K))
            formula = Sw0 + lam / (K * N * N) * (np.outer(v, a) + np.outer(a, v)) + lam ** 2 * (N - 1) / N ** 2 * np.outer(v, v)
            worst_formula = max(worst_formula, rel(st2.sigma_w(), formula))
            worst_loss, worst_sb = max(worst_loss, dl), max(worst_sb, dsb)
            rows.append({"C": C, "loss": kind, "K": K, "N": N, "p": p, "λ": lam, "rel. loss change": dl,
                         "‖Σ_W(H′)‖_F": nw, "> C": bool(nw > C), "‖Wv‖": float(np.linalg.norm(W @ v))})
    c_miss = max(miss_ge(r["‖Σ_W(H′)‖_F"], r["C"]) for r in rows)
    miss = max(miss_le(worst_loss, 1e-10), miss_le(worst_sb, 1e-10), c_miss)
    return Result(measured=worst_loss, expected="<= 1e-10 with ‖Σ_W(H′)‖_F > C", holds=bool(miss <= 1), miss=miss,
                  details={"cases": rows, "worst ‖ΔΣ_B‖/‖Σ_B‖": worst_sb,
                           "App A.1 closed form of Σ_W(H′) vs computed (relative)": worst_formula,
                           "C values": list(Cs)})


# ----------------------------------------------------------------------------------------------------------
def _fisher_metric(st, r):
    """The planted 'VCI': 1 − Tr[Σ_W⁻¹Σ_B]/r, Fisher's LDA criterion (within-class scatter) in place of Σ_T†."""
    return 1.0 - trace_pinv(st.sigma_w(), st.centred_means(), st.p * EPS)[0] / r


@check(
    "vc.numerical_stability", equation="Sec 4.3", kind="numeric", figures=("vc.fig2_spectra",),
    tolerance="fuzziness grows ≥ 1e6× while |ΔVCI| ≤ 1/rank Σ_B and VCI's float32 sensitivity ≤ 1e-4",
    tolerance_reason="shrinking one Σ_B direction by δ multiplies fuzziness by ~δ⁻² (1e10 at δ = 1e-5) but can move "
                     "Tr[Σ_T†Σ_B] by at most 1 (Thm 5.2), i.e. VCI by ≤ 1/r; float32 rounding of the features "
                     "moves VCI by ≤ 1e-8 relative at every δ, fuzziness by ~2e-4 at δ = 1e-5 (growing as δ⁻¹)",
    negative_control="Fisher's LDA criterion 1 − Tr[Σ_W⁻¹Σ_B]/r in place of VCI (within-class instead of total "
                     "scatter, a plausible slip: both appear in the paper), which is not bounded by Thm 5.2",
    positive_control="class means along orthogonal directions with equal spread and isotropic within-class noise: "
                     "fuzziness = Σ_j σ²/λ_j grows as δ⁻² and VCI moves by ≤ 1/r, both by construction",
)
@single_threaded(torch_threads=None)
def numerical_stability(ctx, planted, positive=False):
    rng = ctx.rng("features")
    K, N, p = (10, 30, 32) if ctx.quick else (20, 40, 64)
    r = min(p, K - 1)
    deltas = np.array([1.0, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5])
    y = np.repeat(np.arange(K), N)
    if positive:
        Ub = np.linalg.qr(np.vstack([np.ones(K), rng.normal(size=(K - 1, K))]).T)[0][:, 1:]  # columns ⊥ 1
        sb, Vbt = np.full(K - 1, 3.0 * np.sqrt(K)), orth(rng, p)[:K - 1]
        noise = rng.normal(size=(K * N, p))
    else:
        mu = 3.0 * rng.normal(size=(K, p)) @ orth(rng, p)[:p]
        mu -= mu.mean(0)
        # the (K−1)-th direction of the class means is shrunk by δ: a tiny trailing eigenvalue of Σ_B (cf. Fig 2)
        Ub, sb, Vbt = np.linalg.svd(mu, full_matrices=False)
        noise = rng.normal(size=(K * N, p)) @ (rng.normal(size=(p, p)) / np.sqrt(p))
    noise -= np.repeat(noise.reshape(K, N, p).mean(axis=1), N, axis=0)  # class means exactly as designed
    fz, vv, f32_f, f32_v = [], [], [], []
    stable = _fisher_metric if planted else (lambda st, r_: vc.vci(st, rank=r_))
    for d in deltas:
        s = sb.copy()
        s[r - 1] *= d
        H = ((Ub * s) @ Vbt)[y] + noise
        st = vc.ClassStats.from_features(H, y)
        st32 = vc.ClassStats.from_features(H.astype(np.float32), y)
        f, f3 = vc.fuzziness(st, rank=r), vc.fuzziness(st32, rank=r)
        v, v3 = stable(st, r), stable(st32, r)
        fz.append(f)
        vv.append(v)
        f32_f.append(abs(f3 - f) / abs(f))
        f32_v.append(abs(v3 - v) / max(abs(v), 1e-300))
    growth = fz[-1] / fz[0]
    dv = max(vv) - min(vv)
    miss = max(miss_ge(growth, 1e6), miss_le(dv, 1.0 / r), miss_le(max(f32_v), 1e-4))
    return Result(measured=f"fuzziness ×{growth:.2g}; |ΔVCI| = {dv:.3g}", expected=f"≥ 1e6×; ≤ 1/r = {1 / r:.3g}",
                  holds=bool(miss <= 1), miss=miss,
                  details={"δ (scale of the r-th class-mean direction)": deltas, "fuzziness (rank = min(p, K−1))": fz,
                           "VCI" if not planted else "Fisher criterion metric": vv,
                           "fuzziness relative change from float32 features": f32_f,
                           "VCI relative change from float32 features": f32_v, "K, N, p": [K, N, p],
                           "misses (tolerance units): growth, |ΔVCI|, float32":
                               [miss_ge(growth, 1e6), miss_le(dv, 1.0 / r), miss_le(max(f32_v), 1e-4)]})
