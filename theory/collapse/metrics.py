"""VC collapse metrics: VCI (Def 5.3), Tr[Σ_T†Σ_B] (Thm 5.2), fuzziness, squared distance and the cosine metric
(Sec 3.2), the V_B split (Fig 1), spectra (Fig 2), and all of them at once.

Each accepts a :class:`~theory.collapse.stats.ClassStats` or ``(features, labels)``. Invariant quantities are
computed in the equilibrated frame, the others in the features' own coordinates
(:mod:`theory.collapse.linalg`); every result is right at any feature scale or raises a ValueError.
"""
from __future__ import annotations

import numpy as np

from theory.collapse.linalg import Spectra, check_rtol, rank_arg, sum_pow2
from theory.collapse.stats import as_stats, unscale


def trace_ratio(stats_or_features, labels=None, rtol: float | None = None) -> float:
    """Tr[Σ_T†Σ_B] (VC Thm 5.1/5.2); Σ_T† drops eigenvalues below rtol·λ_max (default p·ε) of the
    equilibrated Σ_T (diag ≈ 1), so the cutoff does not depend on per-feature scales."""
    return Spectra(as_stats(stats_or_features, labels), check_rtol(rtol)).trace_tb()


def _vci_rank(rank, st, sp: Spectra, rtol) -> int:
    r = rank_arg(rank, st.K, st.p, sp.inv.eig_b()[0] if rank == "exact" else None, check_rtol(rtol))
    if r == 0:
        raise ValueError("vci: Σ_B is numerically zero (all class means coincide); VCI is undefined")
    return r


def vci(stats_or_features, labels=None, rank="paper", rtol: float | None = None) -> float:
    """Variability Collapse Index, VC Def 5.3: 1 − Tr[Σ_T†Σ_B]/rank Σ_B.

    rank="paper": min(p, K−1) as in VC Sec 6.1 (the maximal rank of Σ_B); "exact": the numerical rank of
    Σ_B (eigenvalues of the equilibrated Σ_B above max(p, K)·ε·λ_max, or ``rtol``·λ_max); or an explicit int.
    With "paper" and class means spanning fewer than min(p, K−1) dimensions, VCI stays above 0 even at full
    collapse (bias (r_paper − r_exact)/r_paper); "exact" removes it. Imbalanced classes: Σ_B weights class k
    by π_k = n_k/N (VC Eq 2 when balanced); see docs/vc.md for what that means for the probe loss.
    """
    st = as_stats(stats_or_features, labels)
    sp = Spectra(st)
    r = _vci_rank(rank, st, sp, rtol)
    if sp.between_zero:
        raise ValueError("vci: Σ_B = 0 (all class means coincide exactly); VCI = 1 − 0/rank is undefined")
    return 1.0 - sp.trace_tb() / r


def _orig_rank(rank, st, sp: Spectra, rtol, who: str) -> int:
    r = rank_arg(rank, st.K, st.p, sp.orig.eig_b()[0] if rank == "exact" else None, check_rtol(rtol))
    if r == 0 or sp.between_zero:
        raise ValueError(f"{who}: Σ_B is numerically zero (all class means coincide)")
    return r


def fuzziness(stats_or_features, labels=None, rank="paper", rtol: float | None = None) -> float:
    """Fuzziness Tr[Σ_B†Σ_W] (VC Sec 3.2), with Σ_B† built from the top ``rank`` eigenpairs of Σ_B.

    rank="paper": the top min(p, K−1) eigenvalues (VC Sec 4.3's remedy for the unknown rank); "exact": those
    above max(p, K)·ε·λ_max (a pinv threshold); or an int. Raises if a kept eigenvalue is at rounding level
    (then Σ_B† is noise: the instability of VC Sec 4.3 taken to its limit).
    """
    st = as_stats(stats_or_features, labels)
    sp = Spectra(st)
    r = _orig_rank(rank, st, sp, rtol, "fuzziness")
    try:
        return _fuzz(sp, r)
    except ValueError as exc:
        raise ValueError(f"fuzziness: {exc}") from None


def _fuzz(sp: Spectra, r: int) -> float:
    """Fuzziness at rank r: for r = p (K − 1 ≥ p) Σ_B is invertible and Tr[Σ_B⁻¹Σ_W] is invariant to invertible
    maps, so the equilibrated frame resolves it whatever the per-feature scales; otherwise the features' frame."""
    if r == sp.st.p:
        try:
            return sp.inv.fuzz_vb(r)[0]
        except ValueError:
            pass  # Σ_B numerically singular even when equilibrated: let the original frame say so
    return sp.orig.fuzz_vb(r)[0]


def _sq_distance(M, Sw, e) -> float:
    mw, ew = sum_pow2(np.diag(Sw), 2 * e)
    mb, eb = sum_pow2(np.einsum("ij,ij->j", M, M), 2 * e)
    if mb == 0:
        raise ValueError("squared_distance: Tr Σ_B = 0 (all class means coincide)")
    return unscale(mw / mb, ew - eb, "squared_distance")


def squared_distance(stats_or_features, labels=None) -> float:
    """Squared Distance, VC Eq 4 (Hui et al.): Σ‖h − μ_k‖² / (N_class Σ_k ‖μ_k − μ_G‖²) = Tr Σ_W / Tr Σ_B.

    For a balanced set Eq 4 equals Tr Σ_W/Tr Σ_B exactly; for an imbalanced one this ratio (with Σ_B
    weighted by n_k/N) is the definition used here. Both traces are summed with per-column powers of two,
    so the ratio is right whatever the features' scales.
    """
    return _sq_distance(*as_stats(stats_or_features, labels).scaled())


def cosine_distances(stats_or_features, labels=None) -> dict:
    """d̄_within and d̄_total of VC Sec 3.2 (Kornblith et al. 2021) from class sums of h/‖h‖, O(Kp), no pairs.

    d̄_within = (1/K) Σ_k (1 − ‖s_k‖²/n_k²), d̄_total = 1 − ‖Σ_k s_k‖²/N², s_k = Σ_i h_{k,i}/‖h_{k,i}‖
    (the paper's double sums over pairs, i = j included; for a balanced set they are its formulas exactly).
    """
    st = as_stats(stats_or_features, labels)
    within = float(np.mean(1.0 - np.sum(st.unit_sums ** 2, axis=1) / st.counts.astype(float) ** 2))
    tot = st.unit_sums.sum(axis=0)
    total = float(1.0 - tot @ tot / float(st.n) ** 2)
    return {"d_within": within, "d_total": total}


def cosine_similarity(stats_or_features, labels=None) -> float:
    """The paper's "Cosine Similarity" metric: d̄_within of VC Sec 3.2 (a mean within-class cosine *distance*)."""
    return cosine_distances(stats_or_features, labels)["d_within"]


def class_separation(stats_or_features, labels=None) -> float:
    """Kornblith et al.'s class separation 1 − d̄_within/d̄_total (VC Sec 3.2)."""
    d = cosine_distances(stats_or_features, labels)
    if d["d_total"] <= 0:
        raise ValueError("class_separation: d̄_total = 0 (all features point the same way)")
    return 1.0 - d["d_within"] / d["d_total"]


def vb_split(stats_or_features, labels=None, rank="paper", rtol: float | None = None) -> dict:
    """VC Fig 1: (1/N) Σ ‖Proj_{V_B}(h − μ_k)‖² and the V_B⊥ part; they sum to Tr Σ_W.

    V_B is spanned by the top ``rank`` eigenvectors of Σ_B ("paper": min(p, K−1); "exact": tolerance rank).
    In the features' units (a ValueError if those values leave float64).
    """
    st = as_stats(stats_or_features, labels)
    sp = Spectra(st)
    r = _orig_rank(rank, st, sp, rtol, "vb_split")
    return _split(sp, r)


def _split(sp: Spectra, r: int) -> dict:
    f = sp.orig
    on = f.fuzz_vb(r)[1]
    total = float(np.trace(f.Sw))
    return {"within_vb": unscale(on, f.e2, "within_vb"), "within_vb_perp": unscale(total - on, f.e2, "within_vb_perp"),
            "trace_sigma_w": unscale(total, f.e2, "trace_sigma_w"), "rank": r}


def vb_basis(stats_or_features, labels=None, rank="paper") -> np.ndarray:
    """Orthonormal basis (p, r) of V_B: the top r eigenvectors of Σ_B (in the features' coordinates)."""
    st = as_stats(stats_or_features, labels)
    sp = Spectra(st)
    r = _orig_rank(rank, st, sp, None, "vb_basis")
    sp.orig.check_kept(r)
    return sp.orig.eig_b()[1][:, :r]


def spectra(stats_or_features, labels=None) -> dict:
    """Eigenvalues (descending) of Σ_B and Σ_T (VC Fig 2), in the features' units."""
    st = as_stats(stats_or_features, labels)
    f = Spectra(st).orig
    wb = np.linalg.eigvalsh(f.M.T @ f.M)[::-1]
    wt = np.linalg.eigvalsh(f.sigma_t())[::-1]
    return {"sigma_b": unscale(wb, f.e2, "spectra: Σ_B eigenvalues"),
            "sigma_t": unscale(wt, f.e2, "spectra: Σ_T eigenvalues")}


def metrics(stats_or_features, labels=None, rank="paper") -> dict:
    """Every metric of the paper from one set of factorisations: one Cholesky of the equilibrated Σ_T (with a
    condition estimate) and, for the paper's rank K − 1 ≤ p, one K×K Cholesky of the deflated Gram matrix —
    no eigendecomposition unless a matrix is too ill-conditioned for those (or rank="exact").

    Keys: vci, trace_ratio, probe_loss (Thm 5.1; priors-weighted when imbalanced), fuzziness,
    squared_distance, cosine_similarity (d̄_within), class_separation, within_vb, within_vb_perp (in the
    features' units; None when those values are outside float64, e.g. features of size 1e200), within_vb_share
    (the V_B part of Tr Σ_W, dimensionless), rank
    (of fuzziness and the V_B split; VCI's exact rank is taken in the equilibrated frame), sigma_t_route
    ("cholesky" or "eigh").
    """
    from theory.collapse.probe import loss_from

    st = as_stats(stats_or_features, labels)
    sp = Spectra(st)
    r = _orig_rank(rank, st, sp, None, "metrics")
    r_vci = r if rank != "exact" else _vci_rank(rank, st, sp, None)
    t = sp.trace_tb()
    try:
        fz = _fuzz(sp, r)
        on = sp.orig.fuzz_vb(r)[1]
    except ValueError as exc:
        raise ValueError(f"metrics: {exc}") from None
    total = float(np.trace(sp.orig.Sw))
    try:
        split = _split(sp, r)
    except ValueError:  # Tr Σ_W itself is outside float64 in the features' units: only the share is reported
        split = {"within_vb": None, "within_vb_perp": None}
    cd = cosine_distances(st)
    if cd["d_total"] <= 0:
        raise ValueError("metrics: d̄_total = 0 (all features point the same way): class separation undefined")
    return {
        "vci": 1.0 - t / r_vci,
        "trace_ratio": t,
        "probe_loss": loss_from(sp),
        "fuzziness": fz,
        "squared_distance": _sq_distance(sp.M, sp.Sw, sp.e),
        "cosine_similarity": cd["d_within"],
        "class_separation": 1.0 - cd["d_within"] / cd["d_total"],
        "within_vb": split["within_vb"],
        "within_vb_perp": split["within_vb_perp"],
        "within_vb_share": on / total if total > 0 else 0.0,
        "rank": r,
        "sigma_t_route": sp.route,
    }
