"""VC checks on invariances: VCI and the probe loss under invertible maps (Cor 5.4, Obs 4.5), Obs 4.2's fuzziness
example and the identity behind it, and which transforms leave each metric unchanged (Obs 4.2–4.4).

``compare(ctx, planted, positive=False)``: the claim, the negative control (``planted``), the positive control.
"""
from __future__ import annotations

import numpy as np
import sympy as sp

from sims.threads import single_threaded
from theory import collapse as vc
from theory.collapse.linalg import trace_pinv
from theory.collapse.stats import pow2_exponent
from theory.symbolic import vc as sym
from verify.checks.vc._data import EPS, features, miss_exact, miss_ge, miss_le, orth, random_map, two_pass
from verify.registry import Result, check

EPS32 = float(np.finfo(np.float32).eps)


def kappa_equilibrated(H, y, K) -> float:
    """Condition number of the correlation form D^-½ Σ_T D^-½ (D = diag Σ_T) of features H, from two passes on
    columns brought to ~1 by exact powers of two: the accuracy scale of an equilibrated Tr[Σ_T†Σ_B]."""
    Hn = np.ldexp(H, -pow2_exponent(np.max(np.abs(H), axis=0))[None, :])
    St = two_pass(Hn, y, K)[2]
    s = 1.0 / np.sqrt(np.diag(St))
    w = np.linalg.eigvalsh(St * s[:, None] * s[None, :])
    return float(w[-1] / max(w[0], w[-1] * EPS))


def _vci_float32_pinv(st: vc.ClassStats) -> float:
    """The planted VCI: Σ_T† with torch.linalg.pinv's default cutoff for a float32 Σ_T (rtol = p·ε_float32),
    applied to Σ_T in the features' units — what computing VCI in float32 on a GPU does."""
    return 1.0 - trace_pinv(st.sigma_t(), st.centred_means(), st.p * EPS32)[0] / min(st.p, st.K - 1)


@check(
    "vc.vci_invariance", equation="Cor 5.4, Obs 4.5", kind="numeric", tolerance="100·κ_e·ε absolute",
    tolerance_reason="κ_e = max condition number of the correlation forms of Σ_T and Σ_T′ = UΣ_TUᵀ (what an "
                     "equilibrated backward-stable solve is accurate to, O(κ_e·ε)); measured worst ≈ 1e-2 of that. "
                     "Maps: random with κ(U) up to 1e4 (per-feature scales up to 1e±300 are in the tests: any "
                     "scale-dependent bug fails there by ~1e12 units, which says nothing about subtle ones)",
    negative_control="VCI with Σ_T† from torch.linalg.pinv's default cutoff for a float32 Σ_T (p·ε_float32 relative, "
                     "on Σ_T in the features' units): directions an ill-conditioned map shrinks are dropped",
    positive_control="orthogonal maps and isotropic scalings: Σ_T′ has the same spectrum up to scale, so VCI is "
                     "unchanged by construction",
)
@single_threaded(torch_threads=None)  # tiny matrices: BLAS threads only contend
def vci_invariance(ctx, planted, positive=False):
    rng = ctx.rng("features")
    cases = 12 if ctx.quick else 60
    worst_abs, worst_units, worst_loss, conds = 0.0, 0.0, 0.0, []
    f = _vci_float32_pinv if planted else vc.vci
    for t in range(cases):
        K, N, p = int(rng.integers(2, 10)), int(rng.integers(3, 20)), int(rng.integers(2, 30))
        H, y = features(rng, K, N, p, within=10 ** rng.uniform(-1, 0.5))
        if positive:
            U = orth(rng, p) * (10 ** rng.uniform(-3, 3) if t % 2 else 1.0)
            cond = 1.0
        else:
            cond = 10 ** rng.uniform(0, 4)
            U = random_map(rng, p, cond)
        H2 = H @ U.T
        st1, st2 = vc.ClassStats.from_features(H, y), vc.ClassStats.from_features(H2, y)
        kap = max(kappa_equilibrated(H, y, K), kappa_equilibrated(H2, y, K))
        conds.append(cond)
        d = abs(f(st1) - f(st2))
        worst_abs = max(worst_abs, d)
        worst_units = max(worst_units, d / (kap * EPS))
        if not planted:
            worst_loss = max(worst_loss, abs(vc.probe_loss(st1) - vc.probe_loss(st2)) / (kap * EPS))
    measured = max(worst_units, worst_loss)
    return Result(measured=measured, expected="<= 100 (κ_e·ε units)", holds=bool(measured <= 100),
                  miss=miss_le(measured, 100),
                  details={"maps": cases, "κ(U) range": [min(conds), max(conds)],
                           "worst |ΔVCI| (κ_e·ε units)": worst_units, "worst |ΔVCI| absolute": worst_abs,
                           "worst |Δ probe loss| (κ_e·ε units)": worst_loss})


# ----------------------------------------------------------------------------------------------------------
def _counterexample_features():
    """Features realising Σ_B = diag(1, 0), Σ_W = I exactly (2 classes, 4 points each)."""
    s2 = np.sqrt(2.0)
    offs = np.array([[s2, 0], [-s2, 0], [0, s2], [0, -s2]])
    return np.vstack([np.array([1.0, 0]) + offs, np.array([-1.0, 0]) + offs]), np.repeat([0, 1], 4)


def _identity_error(rng, coupled: bool) -> float:
    """‖(UΣ_BUᵀ)† − U⁻ᵀΣ_B†U⁻¹‖/‖(UΣ_BUᵀ)†‖ on features (K = 4, p = 7, V_B of dimension 3) with U block-diagonal
    on V_B ⊕ V_B⊥ in a random orientation, or (``coupled``) keeping V_B but mixing V_B⊥ into it."""
    H, y = features(rng, 4, 12, 7, within=0.7)
    Q1 = vc.vb_basis(H, y)
    Q = np.linalg.qr(np.hstack([Q1, rng.normal(size=(7, 4))]))[0]
    A = np.zeros((7, 7))
    A[:3, :3], A[3:, 3:] = random_map(rng, 3, 10.0), random_map(rng, 4, 10.0)
    if coupled:
        A[:3, 3:] = rng.normal(size=(3, 4))
    U = Q @ A @ Q.T
    Sb = vc.ClassStats.from_features(H, y).sigma_b()
    w, V = np.linalg.eigh(Sb)
    keep = w > 1e-12 * w[-1]
    Sb_pinv = (V[:, keep] / w[keep]) @ V[:, keep].T  # Σ_B† at its exact rank 3
    true = np.linalg.pinv(U @ Sb @ U.T, rcond=1e-12, hermitian=True)
    Ui = np.linalg.inv(U)
    return float(np.linalg.norm(true - Ui.T @ Sb_pinv @ Ui) / np.linalg.norm(true))


@check(
    "vc.fuzziness_counterexample", equation="Obs 4.2", kind="symbolic+numeric",
    tolerance="exact (sympy rationals); numeric cross-checks 1e-9 relative",
    tolerance_reason="exact arithmetic for the example and for the identity (Penrose conditions); the numeric "
                     "cross-checks use maps with κ ≤ 100, so pseudo-inverses agree to ≲ 1e-12",
    negative_control="Obs 4.2's hypothesis misread as 'U maps V_B into itself' (the paper's U does): the identity "
                     "(UΣ_BUᵀ)† = U⁻ᵀΣ_B†U⁻¹ claimed for such U too, which is how an erratum came to blame the "
                     "display",
    positive_control="a block-diagonal U = diag(2, 3) in the same example: inside the hypothesis, fuzziness stays "
                     "1 by construction",
)
@single_threaded(torch_threads=None)
def fuzziness_counterexample(ctx, planted, positive=False):
    U = sp.diag(2, 3) if positive else None
    ex = sym.fuzziness_counterexample(U)
    want_after = 1 if positive else 2
    sizes = [(1, 2)] if ctx.quick else [(1, 2), (1, 3), (2, 3)]
    claimed = {"block-diagonal on V_B ⊕ V_B⊥ (Obs 4.2's hypothesis)": "none"}
    if planted:
        claimed["V_B invariant, V_B⊥ mixed into V_B (the paper's U)"] = "upper"
    observed = {f"{name}, r={r} p={p}": sym.obs42_identity_holds(r, p, kind)
                for name, kind in claimed.items() for r, p in sizes}
    rng = ctx.rng("maps")
    num_identity = {"block-diagonal": max(_identity_error(rng, False) for _ in range(3))}
    if planted:
        num_identity["V_B-invariant, coupled"] = max(_identity_error(rng, True) for _ in range(3))
    H, y = _counterexample_features()
    Un = np.array([[1.0, 1.0], [0.0, 1.0]]) if U is None else np.array(U.tolist(), dtype=float)
    num_before, num_after = vc.fuzziness(H, y), vc.fuzziness(H @ Un.T, y)
    exact_ok = bool(ex["before"] == 1 and ex["after"] == want_after and all(observed.values()))
    num_err = max(abs(num_before - 1), abs(num_after - want_after), *num_identity.values())
    miss = max(miss_exact(exact_ok), miss_le(num_err, 1e-9))
    coupled_fails = not sym.obs42_identity_holds(1, 2, "upper")
    return Result(
        measured=f"{ex['after']} vs {ex['before']}", expected=f"{want_after} vs 1; identity ≡ on the hypothesis",
        holds=bool(miss <= 1), miss=miss,
        details={"identity (UΣ_BUᵀ)† = U⁻ᵀΣ_B†U⁻¹ as Penrose conditions (sympy)": observed,
                 "numeric identity error, random V_B orientation (relative)": num_identity,
                 "numeric fuzziness before / after": [num_before, num_after],
                 "(UΣ_BUᵀ)† exact": str(ex["true_pinv"].tolist()),
                 "U⁻ᵀΣ_B†U⁻¹ exact": str(ex["claimed_pinv"].tolist()),
                 "identity for U keeping V_B but mixing V_B⊥ into it (sympy, r=1 p=2)":
                     "fails" if coupled_fails else "holds"},
        finding=None if (planted or positive) else (
            "Obs 4.2 is consistent: its identity (UΣ_BUᵀ)† = U⁻ᵀΣ_B†U⁻¹ holds exactly for U block-diagonal on "
            "V_B ⊕ V_B⊥ (sympy, all four Penrose conditions) and is only used there; the counterexample's "
            "U = [[1,1],[0,1]] keeps V_B = span(e₁) but maps e₂ ∈ V_B⊥ to e₁ + e₂, outside that hypothesis, where "
            "the identity fails ([[1,0],[0,0]] vs [[1,−1],[−1,1]]) and fuzziness goes 1 → 2 as the paper says."),
    )


# ----------------------------------------------------------------------------------------------------------
METRICS = {"fuzziness": vc.fuzziness, "squared_distance": vc.squared_distance,
           "cosine_similarity": vc.cosine_similarity, "vci": vc.vci}
# which transforms the paper says (or its arguments imply) leave each metric unchanged (Obs 4.2–4.4, Cor 5.4)
EXPECTED = {
    "isotropic scaling": {"fuzziness": True, "squared_distance": True, "cosine_similarity": True, "vci": True},
    "orthogonal map": {"fuzziness": True, "squared_distance": True, "cosine_similarity": True, "vci": True},
    "per-sample scaling": {"fuzziness": False, "squared_distance": False, "cosine_similarity": True, "vci": False},
    "V_B ⊕ V_B⊥ block map": {"fuzziness": True, "squared_distance": False, "cosine_similarity": False, "vci": True},
    "V_B-invariant map mixing V_B⊥ into V_B (as Obs 4.2's U)":
        {"fuzziness": False, "squared_distance": False, "cosine_similarity": False, "vci": True},
    "general invertible map": {"fuzziness": False, "squared_distance": False, "cosine_similarity": False, "vci": True},
}
# positive control: outcomes fixed by construction for all four metrics
BY_CONSTRUCTION = {
    "identity": dict.fromkeys(METRICS, True),
    "scaling by 2^5 (exact)": dict.fromkeys(METRICS, True),
    "orthogonal map": dict.fromkeys(METRICS, True),
    "independent noise added to every sample": dict.fromkeys(METRICS, False),
}


def _transform(name, H, y, rng):
    p = H.shape[1]
    if name == "identity":
        return H.copy()
    if name == "scaling by 2^5 (exact)":
        return H * 32.0
    if name == "independent noise added to every sample":
        return H + 0.5 * rng.normal(size=H.shape)
    if name == "isotropic scaling":
        return 3.7 * H
    if name == "orthogonal map":
        return H @ orth(rng, p).T
    if name == "per-sample scaling":
        return H * np.exp(rng.normal(size=(H.shape[0], 1)))
    if name.startswith("V_B"):
        Q1 = vc.vb_basis(H, y)
        Q = np.linalg.qr(np.hstack([Q1, rng.normal(size=(p, p - Q1.shape[1]))]))[0]
        r = Q1.shape[1]
        A = np.zeros((p, p))
        A[:r, :r] = random_map(rng, r, 30.0)
        A[r:, r:] = random_map(rng, p - r, 30.0)
        if name.startswith("V_B-invariant"):
            A[:r, r:] = rng.normal(size=(r, p - r)) / np.sqrt(p)  # entries on the scale of the blocks' entries
        return H @ (Q @ A @ Q.T).T
    return H @ random_map(rng, p, 30.0).T


@check(
    "vc.metric_invariances", equation="Obs 4.2–4.4, Cor 5.4", kind="numeric",
    tolerance="unchanged: relative change ≤ 1e-8; changed: ≥ 1e-3",
    tolerance_reason="invariant metrics move by rounding only (≤ 1e-12 relative at κ ≤ 30); non-invariant ones move "
                     "by O(1) on generic data; anything in between would count as a disagreement",
    negative_control="the planted table claims Fuzziness is invariant under maps that keep V_B but mix V_B⊥ into "
                     "it (Obs 4.2's hypothesis misread, the paper's own U)",
    positive_control="identity, an exact power-of-two scaling and an orthogonal map (every metric unchanged by "
                     "construction) and independent noise added to the samples (every metric changes)",
)
@single_threaded(torch_threads=None)
def metric_invariances(ctx, planted, positive=False):
    rng = ctx.rng("features")
    datasets = 2 if ctx.quick else 5
    expected = {t: dict(v) for t, v in (BY_CONSTRUCTION if positive else EXPECTED).items()}
    if planted:
        expected["V_B-invariant map mixing V_B⊥ into V_B (as Obs 4.2's U)"]["fuzziness"] = True
    table = {t: {m: [] for m in METRICS} for t in expected}
    for _ in range(datasets):
        K, N, p = 5, 15, 9  # p > K − 1: V_B⊥ is not empty
        H, y = features(rng, K, N, p, within=0.7)
        H = H + 2.0  # away from the origin, so that per-sample scaling moves class means
        base = {m: f(H, y) for m, f in METRICS.items()}
        for t in expected:
            H2 = _transform(t, H, y, rng)
            for m, f in METRICS.items():
                table[t][m].append(abs(f(H2, y) - base[m]) / abs(base[m]))
    disagreements, observed, misses = [], {}, []
    for t in expected:
        observed[t] = {}
        for m in METRICS:
            ch, lo = max(table[t][m]), min(table[t][m])
            observed[t][m] = f"{'unchanged' if ch <= 1e-8 else 'changed' if lo >= 1e-3 else 'ambiguous'} " \
                             f"(rel. change {lo:.1e}–{ch:.1e})"
            cell = miss_le(ch, 1e-8) if expected[t][m] else miss_ge(lo, 1e-3)
            misses.append(cell)
            if cell > 1:
                disagreements.append(f"{m} under {t}: expected {'invariant' if expected[t][m] else 'changed'}, "
                                     f"got {observed[t][m]} ({cell:.3g} tolerance units)")
    n = len(expected) * len(METRICS)
    return Result(measured=f"{len(disagreements)}/{n} disagreements", expected=f"0/{n}", holds=not disagreements,
                  miss=max(misses), details={"observed": observed, "disagreements": disagreements,
                                             "data sets": datasets})
