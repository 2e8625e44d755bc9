"""VC check ``vc.decomposition``: Σ_T = Σ_B + Σ_W (Eq 7), the one-pass Σ_W, Σ_B, Σ_T (Eq 1–3) against two
passes at any offset and scale, and the values of every public metric on them (Def 5.3, Thm 5.1/5.2, Eq 4,
Sec 3.2, Fig 1) against closed forms.

``compare(ctx, planted, positive=False)``: the claim, the negative control (``planted``), the positive control.
Other VC checks: ``sec5_probe``, ``sec4_invariance``, ``sec4_stability``, ``appc_tables``.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from theory import collapse as vc
from theory.symbolic import vc as sym
from sims.threads import single_threaded
from verify.checks.vc._data import features, miss_le, orth, rel_corr, two_pass
from verify.registry import Result, check


# ----------------------------------------------------------------------------------------------------------
def _raw_moments(H, y, K, b):
    """The planted accumulator: the textbook one-pass raw moments Σhhᵀ, class sums and counts, streamed in
    batches of b, then Σ_T = Σhhᵀ/N − μ_Gμ_Gᵀ and Σ_W = Σhhᵀ/N − Σ_k π_kμ_kμ_kᵀ (exact in algebra)."""
    p = H.shape[1]
    S2, sums, cnt = np.zeros((p, p)), np.zeros((K, p)), np.zeros(K)
    for s in range(0, len(y), b):
        Hb, yb = H[s:s + b], y[s:s + b]
        S2 += Hb.T @ Hb
        np.add.at(sums, yb, Hb)
        cnt += np.bincount(yb, minlength=K)
    n = cnt.sum()
    mu, pi = sums / cnt[:, None], cnt / n
    mg = pi @ mu
    St = S2 / n - np.outer(mg, mg)
    Sw = S2 / n - (mu.T * pi) @ mu
    D = mu - mg
    return Sw, (D.T * pi) @ D, St


def _no_origin(H, y, K, b):
    """The planted accumulator: Chan et al.'s pairwise-centred update (each batch centred on its own class means,
    merged with the rank-m correction n_a n_b/(n_a+n_b) δδᵀ) *without* an origin, i.e. the class means of h
    itself: the library's earlier accumulator (before ClassStats kept an origin). Exact in algebra and free of
    raw-moment cancellation, but the means and the merge deltas carry ε·|μ| ≈ ε·offset, so Σ_B and Σ_T are off by ~c·ε at an offset c·spread."""
    p = H.shape[1]
    cnt, mu, m2 = np.zeros(K), np.zeros((K, p)), np.zeros((p, p))
    for s in range(0, len(y), b):
        Hb, yb = H[s:s + b], y[s:s + b]
        for k in np.unique(yb):
            X = Hb[yb == k]
            nb, mb = len(X), X.mean(0)
            R = X - mb
            m2 += R.T @ R
            if cnt[k]:
                d = mb - mu[k]
                m2 += (cnt[k] * nb / (cnt[k] + nb)) * np.outer(d, d)
                mu[k] += d * nb / (cnt[k] + nb)
            else:
                mu[k] = mb
            cnt[k] += nb
    n = cnt.sum()
    pi = cnt / n
    D = mu - pi @ mu
    Sw, Sb = m2 / n, (D.T * pi) @ D
    return Sw, Sb, Sw + Sb


def _reference(H, y, K):
    """Σ_W, Σ_B, Σ_T of the float data H by two passes after an exact translation by one of its rows: the
    Σ are translation-invariant, and H − h_0 is exact where the entries are within a factor 2 of h_0 (Sterbenz:
    the rows of features far from zero), else rounded to ε·|h − h_0|. Plain two passes on H would carry
    ε·|μ_k| in the class means (ε·offset in Σ_B: 1e-8 at c = 1e8), which is the reference's error, not the
    library's."""
    return two_pass(H - H[0], y, K)


def _exact_stats(H, y, K):
    """Σ_W, Σ_B, Σ_T of integer features in exact rational arithmetic (the positive control's reference)."""
    n, p = H.shape
    F = [[Fraction(int(v)) for v in row] for row in H]
    cnt = [int(np.sum(y == k)) for k in range(K)]
    mu = [[sum(F[i][j] for i in range(n) if y[i] == k) / cnt[k] for j in range(p)] for k in range(K)]
    mg = [sum(cnt[k] * mu[k][j] for k in range(K)) / n for j in range(p)]

    def outer_sum(vecs, weights):
        return np.array([[float(sum(w * v[a] * v[b] for v, w in zip(vecs, weights))) for b in range(p)]
                         for a in range(p)])

    Sw = outer_sum([[F[i][j] - mu[y[i]][j] for j in range(p)] for i in range(n)], [Fraction(1, n)] * n)
    Sb = outer_sum([[mu[k][j] - mg[j] for j in range(p)] for k in range(K)], [Fraction(c, n) for c in cnt])
    St = outer_sum([[F[i][j] - mg[j] for j in range(p)] for i in range(n)], [Fraction(1, n)] * n)
    return Sw, Sb, St


def _designed(rng, K, p, counts, offset):
    """Features whose Σ_B, Σ_W, Σ_T — hence every metric — are known in closed form (the metric part's data).

    With r = min(p, K − 1), an orthogonal basis Q of R^p (V = Q[:, :r]) and a K×r matrix U with orthonormal
    columns orthogonal to √π, the class means are μ_k = μ_G + M_k/√π_k, M = U Λ^½ Vᵀ, so Σ_k π_k(μ_k − μ_G) =
    Mᵀ√π = 0 and Σ_B = MᵀM = V Λ Vᵀ (VC Eq 2). Class k's deviations are √n_k · S_k diag(√w) Qᵀ with S_k an n_k×p
    matrix of orthonormal columns orthogonal to 1 (n_k > p), so each class has mean μ_k and covariance
    C = Q diag(w) Qᵀ, and Σ_W = C (VC Eq 1). Hence Σ_T = Q diag(λ ⊕ 0 + w) Qᵀ, and

    Tr[Σ_T†Σ_B] = Σ_{j≤r} λ_j/(λ_j + w_j) (Thm 5.2), VCI = 1 − that/r (Def 5.3), fuzziness Tr[Σ_B†Σ_W] =
    Σ_{j≤r} w_j/λ_j (Sec 3.2), squared distance Tr Σ_W / Tr Σ_B = Σw/Σλ (Eq 4), V_B split Σ_{j≤r} w_j and
    Σ_{j>r} w_j (Fig 1), probe loss ½(1 − Σπ_k²) − ½ Σ_k π_k Σ_j U_kj² λ_j/(λ_j + w_j) (Thm 5.1 with priors;
    −Tr/(2K) + ½ − 1/(2K) when balanced, since the columns of U are unit vectors).
    """
    n = int(np.sum(counts))
    pi = counts / n
    r = min(p, K - 1)
    Q = orth(rng, p)
    U = np.linalg.qr(np.column_stack([np.sqrt(pi), rng.normal(size=(K, K - 1))]))[0][:, 1:r + 1]
    lam, w = 10 ** rng.uniform(-0.5, 0.5, size=r), 10 ** rng.uniform(-1.0, 0.3, size=p)
    mu = offset + (U * np.sqrt(lam)) @ Q[:, :r].T / np.sqrt(pi)[:, None]
    y = np.repeat(np.arange(K), counts)
    H = np.empty((n, p))
    for k in range(K):
        S = np.linalg.qr(np.column_stack([np.ones(counts[k]), rng.normal(size=(counts[k], p))]))[0][:, 1:]
        H[y == k] = mu[k] + np.sqrt(counts[k]) * (S * np.sqrt(w)) @ Q.T
    tt = lam / (lam + w[:r])
    exact = {"vci": 1.0 - tt.sum() / r, "trace_ratio": tt.sum(), "fuzziness": float(np.sum(w[:r] / lam)),
             "squared_distance": w.sum() / lam.sum(), "within_vb": w[:r].sum(), "within_vb_perp": w[r:].sum(),
             "probe_loss": 0.5 * (1.0 - pi @ pi) - 0.5 * float(pi @ ((U * U) @ tt))}
    return H, y, exact


def _pairwise_cosine(H, y, K):
    """d̄_within and class separation 1 − d̄_within/d̄_total from the explicit double sums over pairs of VC
    Sec 3.2 (Kornblith et al.; i = j included), O(N²): independent of the library's class sums of h/‖h‖."""
    U = H / np.linalg.norm(H, axis=1)[:, None]
    within = np.mean([np.mean(1.0 - U[y == k] @ U[y == k].T) for k in range(K)])
    total = np.mean(1.0 - U @ U.T)
    return {"cosine_similarity": float(within), "class_separation": float(1.0 - within / total)}


def _metric_values(rng, quick):
    """Each public VC metric, through the library's public functions, against its closed form (or, for the
    cosine metric, the explicit pair sums) on :func:`_designed` data; balanced and imbalanced classes, p ≥ K
    and p < K − 1, streamed in batches and from (features, labels). Returns the worst relative error per
    metric, the cases, and what realistic formula slips would miss by on the same data (tolerance units)."""
    shapes = [(4, 9, False), (5, 7, True), (7, 3, False), (6, 4, True)]
    if not quick:
        shapes += [(2, 5, False), (3, 11, True), (9, 5, True), (8, 12, False)]
    worst, slips, rows = {}, {}, []

    def slip(name, value, ref):
        slips[name] = max(slips.get(name, 0.0), float(abs(value - ref) / abs(ref)) / 1e-12)

    for K, p, imb in shapes:
        counts = rng.integers(p + 1, 3 * p + 6, size=K) if imb else np.full(K, int(rng.integers(p + 1, 2 * p + 4)))
        H, y, exact = _designed(rng, K, p, counts, rng.normal(size=p))
        perm = rng.permutation(len(y))
        H, y = H[perm], y[perm]
        exact.update(_pairwise_cosine(H, y, K))
        st = vc.ClassStats(p, K)
        b = int(rng.integers(1, 20))
        for s in range(0, len(y), b):
            st.update(H[s:s + b], y[s:s + b])
        split = vc.vb_split(st)
        got = {"vci": [vc.vci(st), vc.vci(H, y)], "trace_ratio": [vc.trace_ratio(st)],
               "fuzziness": [vc.fuzziness(st)], "squared_distance": [vc.squared_distance(st)],
               "cosine_similarity": [vc.cosine_similarity(st)], "class_separation": [vc.class_separation(st)],
               "probe_loss": [vc.probe_loss(st), vc.probe_loss(H, y)],
               "within_vb": [split["within_vb"]], "within_vb_perp": [split["within_vb_perp"]]}
        allm = vc.metrics(H, y)
        for key in got:
            got[key].append(allm[key])
        for key, vals in got.items():
            ref = exact[key]  # the V_B parts relative to Tr Σ_W, which they split (the V_B⊥ part is 0 when p ≤ K − 1)
            scale = exact["within_vb"] + exact["within_vb_perp"] if key.startswith("within_vb") else abs(ref)
            e = float(max(abs(v - ref) / scale for v in vals))
            worst[key] = max(worst.get(key, 0.0), e)
        r, T = min(p, K - 1), exact["trace_ratio"]
        if p >= K:  # with p < K the two ranks coincide: the slip is invisible there
            slip("VCI with rank min(p, K) instead of min(p, K − 1)", 1.0 - T / min(p, K), exact["vci"])
        slip("VCI complemented (Tr[Σ_T†Σ_B]/rank)", T / r, exact["vci"])
        slip("fuzziness Tr[Σ_B†Σ_T] (Σ_T for Σ_W)", exact["fuzziness"] + r, exact["fuzziness"])
        slip("squared distance Tr Σ_W/Tr Σ_T", exact["squared_distance"] / (1 + exact["squared_distance"]),
             exact["squared_distance"])
        if imb:
            slip("probe loss by Thm 5.1 as printed on imbalanced classes", 0.5 - 0.5 / K - T / (2 * K),
                 exact["probe_loss"])
        n = len(y)
        slip("Σ_T with N−1 in the trace ratio", T * (n - 1) / n, T)
        if len(rows) < 4:
            rows.append({"K": K, "p": p, "class sizes": counts.tolist(), **{k: float(exact[k]) for k in
                                                                            ("vci", "fuzziness", "probe_loss")}})
    return worst, slips, rows


@check(
    "vc.decomposition", equation="Eq 1–3, Eq 7 (and the metrics on them: Eq 4, Def 5.3, Thm 5.1/5.2, Sec 3.2)",
    kind="symbolic+numeric", tolerance="1e-12 relative",
    tolerance_reason="entries compared in units of the features' own scales (|ΔΣ_ij|/√(Σ_T,ii Σ_T,jj)); sums of "
                     "N·p² products agree to ~√N·ε, and the accumulator works relative to an origin inside the "
                     "data, so a common offset c·spread (c up to 1e8 here, per feature) costs nothing (≤ 2e-15 "
                     "measured), where class means of h itself cost ~c·ε (4e-8 at c = 1e8) and raw moments ~c²·ε; "
                     "1e-12 sees an O(1/N) normalisation slip (≥ 2e-4 here) and offset-driven rounding above "
                     "c ≈ 1e4. The metric part: each public metric against its closed form on data built with "
                     "known Σ_B, Σ_W, relative error ≤ 1e-12 (measured ≤ 3e-15: the data's rounding times "
                     "λ_max/λ_min ≤ 10); a formula slip moves a metric by O(1/K) or more",
    negative_control="the pairwise-centred accumulator without an origin (Chan et al.'s update on the class means "
                     "of h itself, the library's earlier accumulator): exact in algebra, so the sympy side holds, but "
                     "its means carry ε·offset, so Σ_B and Σ_T drift at features far from zero (post-ReLU "
                     "activations); the same data also measure raw moments, the N−1 normaliser and the "
                     "unweighted Σ_B, and the closed-form data measure each metric's formula slips",
    positive_control="integer features (3 imbalanced classes) streamed and merged, against Σ_W, Σ_B, Σ_T in exact "
                     "rational arithmetic; the metric part's designed data (values known by construction)",
)
@single_threaded(torch_threads=None)  # tiny matrices: BLAS threads only contend
def decomposition(ctx, planted, positive=False):
    """Σ_T = Σ_B + Σ_W (VC Eq 7) and the one-pass Σ_W, Σ_B, Σ_T (Eq 1–3) against two passes, then every public
    metric built on them against its closed form.

    Part 1: sympy's residual ≡ 0, and :class:`ClassStats` streamed in batches and merged against a two-pass
    reference (:func:`_reference`), balanced and imbalanced, at offsets c = 1e0 … 1e8 times each feature's
    spread and 2^±400 scales. Part 2 (the metrics' values, each pinned): VCI (Def 5.3), Tr[Σ_T†Σ_B] (Thm 5.2),
    fuzziness and the cosine metric (Sec 3.2), squared distance (Eq 4), the probe loss (Thm 5.1) and the V_B
    split (Fig 1), each through the library's public functions (``vci``, ``metrics`` …) on data whose Σ_B and
    Σ_W are chosen (:func:`_designed`). It belongs here because this claim is the one that fixes what Σ_W, Σ_B
    and Σ_T *are* (Eq 1–3): every metric is a fixed formula in them, and the other checks compare metrics only
    with each other (invariances, bounds, the probe) — there a complemented VCI (Tr/rank) or the rank
    min(p, K) leaves every relation true. Pinning the values on data whose Σ's are known is the last step of
    "the statistics are right": the number reported is the paper's quantity of these Σ's.
    """
    sizes = [(2, 2, 2)] if ctx.quick or positive else [(2, 2, 2), (2, 3, 2), (3, 2, 2)]
    sym_ok = {f"K={K} N={N} p={p}": all(e == 0 for e in sym.decomposition_residual(K, N, p)) for K, N, p in sizes}
    rng = ctx.rng("features")
    names = ("Σ_W, Σ_B, Σ_T (sigma_t()) streaming vs two-pass", "Σ_T − Σ_B − Σ_W (streaming)",
             "merge of 3 parts vs one pass")
    worst = dict.fromkeys(names, 0.0)
    per_kind = {"balanced": 0.0, "imbalanced": 0.0, "2^±400 overall scale": 0.0, "2^±400 per-column scales": 0.0}
    per_offset = {}  # worst error by decade of the offset c (in units of the feature's spread)
    others = {"N−1 normaliser in Σ_W (np.cov's ddof=1)": 0.0, "Σ_B unweighted (balanced formula, imbalanced data)": 0.0,
              "raw one-pass moments Σhhᵀ/N − μμᵀ (textbook streaming)": 0.0}
    cases = 1 if positive else (8 if ctx.quick else 24)
    n_off = 0
    for t in range(cases):
        if positive:
            K, p = 3, 3
            counts = np.array([5, 2, 7])
            y = np.repeat(np.arange(K), counts)
            H = rng.integers(-8, 9, size=(len(y), p)).astype(float)
            kind, scale, band = "imbalanced", np.ones(p), "c = 0"
        else:
            K, p = int(rng.integers(2, 12)), int(rng.integers(2, 40))
            imb = t % 2 == 1
            counts = rng.integers(1, 60, size=K) if imb else np.full(K, int(rng.integers(2, 40)))
            H, y = features(rng, K, 0, p, within=10 ** rng.uniform(-3, 1), counts=counts)
            if t % 3 != 1:  # an offset c = 1e0–1e8 times each feature's spread (activations far from 0)
                lo = 2 * (n_off % 4)  # bands in turn, so quick mode too covers 1e0 … 1e8
                n_off += 1
                c = 10 ** rng.uniform(lo, lo + 2) * rng.uniform(0.5, 2, size=p)
                H = H + c * np.std(H, axis=0)
                band = f"c in 1e{lo}–1e{lo + 2}"
            else:
                band = "c = 0"
            kind = ("balanced", "imbalanced", "2^±400 overall scale", "2^±400 per-column scales")[t % 4]
            if kind == "2^±400 overall scale":
                scale = np.full(p, 2.0 ** (400 * (1 if t % 8 < 4 else -1)))
            elif kind == "2^±400 per-column scales":
                scale = np.ldexp(1.0, rng.integers(-400, 401, size=p))
            else:
                scale = np.ones(p)
        perm = rng.permutation(len(y))
        H, y = H[perm], y[perm]
        if positive:
            Sw, Sb, St = _exact_stats(H, y, K)
        else:
            Sw, Sb, St = _reference(H, y, K)
        D = np.outer(scale, scale)  # exact: powers of two
        Sw, Sb, St, Hs = Sw * D, Sb * D, St * D, H * scale
        b = int(rng.integers(1, 50))
        if planted:
            sw, sb, stt = _no_origin(Hs, y, K, b)
            parts_w, parts_b = sw, sb
        else:
            st = vc.ClassStats(p, K)
            for s in range(0, len(y), b):
                st.update(Hs[s:s + b], y[s:s + b])
            sw, sb, stt = st.sigma_w(), st.sigma_b(), st.sigma_t()
            cut = np.sort(rng.choice(len(y), size=2, replace=False))
            parts = [vc.ClassStats(p, K).update(Hs[a:b_], y[a:b_]) for a, b_ in zip((0, *cut), (*cut, len(y)))]
            m = parts[0].merge(parts[1]).merge(parts[2])
            parts_w, parts_b = m.sigma_w(), m.sigma_b()
        d = np.diag(St)
        e = (max(rel_corr(sw, Sw, d), rel_corr(sb, Sb, d), rel_corr(stt, St, d)), rel_corr(St - sb - sw, 0 * St, d),
             max(rel_corr(parts_w, Sw, d), rel_corr(parts_b, Sb, d)))
        for nm, v in zip(names, e):
            worst[nm] = max(worst[nm], v)
        per_kind[kind] = max(per_kind[kind], max(e))
        per_offset[band] = max(per_offset.get(band, 0.0), max(e))
        if not planted and not positive:  # what other realistic bugs would miss by, on the same data
            n = len(y)
            nm_w, nm_b, nm_r = list(others)
            rw, rb, rt = _raw_moments(Hs, y, K, b)
            others[nm_r] = max(others[nm_r], max(rel_corr(rw, Sw, d), rel_corr(rt, St, d)) / 1e-12)
            others[nm_w] = max(others[nm_w], rel_corr(Sw * n / (n - K), Sw, d) / 1e-12) if n > K else others[nm_w]
            if kind == "imbalanced":
                mu = np.stack([Hs[y == k].mean(0) for k in range(K)])
                Dm = mu - mu.mean(0)
                others[nm_b] = max(others[nm_b], rel_corr(Dm.T @ Dm / K, Sb, d) / 1e-12)
    metric_err, slips, metric_rows = _metric_values(ctx.rng("metrics"), ctx.quick or planted or positive)
    measured = max(max(worst.values()), max(metric_err.values()))
    holds = bool(all(sym_ok.values()) and measured <= 1e-12)
    miss = max(miss_le(measured, 1e-12), 0.0 if all(sym_ok.values()) else float("inf"))
    details = {"sympy Σ_T − Σ_B − Σ_W ≡ 0": sym_ok, "data sets": cases,
               "worst errors (units of √(Σ_T,ii Σ_T,jj))": worst, "worst by kind": per_kind,
               "worst by offset c (units of each feature's spread)": dict(sorted(per_offset.items()))}
    details["metrics vs closed form: worst relative error (vci, trace_ratio, fuzziness, squared_distance, "
            "probe_loss, V_B split; cosine vs pair sums)"] = metric_err
    details["metric data (closed-form values)"] = metric_rows
    if not planted and not positive:
        details["misses of other realistic bugs on the same data (tolerance units)"] = others
        details["misses of metric formula slips on the closed-form data (tolerance units)"] = slips
    return Result(measured=measured, expected="<= 1e-12 and the sympy residual ≡ 0", holds=holds, miss=miss,
                  details=details)
