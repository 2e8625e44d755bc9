"""Numbers on captured logits/features: ND Table 1 metrics, RD ClsDim (Eq 6), RD Eq 11–12 (numpy only).

Conventions (say so wherever these numbers are reported):

* with ground-truth ``labels`` (an ImageNet validation folder) accuracy and positive accuracy are against the
  true labels, as in ND Table 1; without them (the photographs) every "accuracy" is **agreement with the
  unmodified model's own prediction** (original accuracy 100 % by construction) and the "positive samples"
  of category i are the samples the unmodified model assigns to i;
* second moments are fitted on one half of the crops (``fit``) and every error/accuracy is computed on the
  other half (``test``): a dependency is a property of the data distribution, not of the fitted sample;
* CovLasso (ND Eq 2/6) is solved exactly for the Gram form: with Cov = Uᵀdiag(σ²)U,
  θᵀCovθ = ‖diag(σ)Uθ‖², so Eq 6 is an ordinary Lasso on the n×(n−1) design X = diag(σ)U₋ᵢ, y = diag(σ)Uᵢ,
  solved exactly by the package's homotopy (theory.covlasso); the KKT residual of Eq 6 (ND A35) is reported.
"""
from __future__ import annotations

import math

import numpy as np

from theory import dependency
from theory.dependency import error_floor
from theory.validate import as_covariance, as_float_array, check_index


def second_moment(F) -> np.ndarray:
    """E[f fᵀ] (uncentred, ND Eq 2) of the rows of F, float64, exactly symmetric: theory.dependency.second_moment
    (one implementation, read at call time, for the checks and the simulations alike)."""
    return dependency.second_moment(F)


def _design(cov: np.ndarray) -> np.ndarray:
    w, U = np.linalg.eigh(cov)
    return np.sqrt(np.clip(w, 0.0, None))[:, None] * U.T  # rows: σ_k u_kᵀ;  XᵀX = Cov


def covlasso_path(cov, i: int, lams, design: np.ndarray | None = None) -> np.ndarray:
    """θ*(λ) of ND Eq 6 for each λ in ``lams`` (any order); shape (len, n); θ_i = −1.

    Solved exactly by the package's own homotopy (:func:`theory.covlasso.covlasso_path`: one path from
    λ_max(i) down to min(lams), read off at every λ). ``design`` is accepted for backward compatibility and
    ignored (the exact path needs only Cov). scikit-learn's coordinate descent stays a test-time cross-check.
    """
    from theory.covlasso import covlasso_path as exact_path

    c = _square(cov)
    i = check_index(i, c.shape[0])
    lams = np.atleast_1d(np.asarray(lams, dtype=float))
    if lams.ndim != 1 or len(lams) == 0 or np.any(~np.isfinite(lams)) or np.any(lams < 0):
        raise ValueError("lams: must be a non-empty 1-D array of finite values >= 0")
    return exact_path(c, i, lams).thetas


def _square(cov) -> np.ndarray:
    """Shape/finiteness check only (the full PSD test, a Cholesky, is paid once by the caller's data)."""
    c = as_float_array(cov, "cov", ndim=2)
    if c.shape[0] != c.shape[1] or c.shape[0] < 2:
        raise ValueError(f"cov: must be square with n >= 2, got shape {c.shape}")
    return c


def lambda_max_i(cov, i: int) -> float:
    """λ_max(i) = 2‖Cov₋ᵢ,ᵢ‖_∞ (ND A47) for one category, without re-validating a 1000×1000 matrix."""
    c = np.asarray(cov)
    col = np.abs(c[:, i]).copy()
    col[i] = 0.0
    return 2.0 * float(col.max())


def covlasso_rho(cov, i: int, rho: float, **kw) -> np.ndarray:
    """θ*(ρ·λ_max(i)) (λ relative to the smallest λ with θ* = −e_i, ND A47)."""
    return covlasso_path(cov, i, [rho * lambda_max_i(cov, i)], **kw)[0]


def kkt_residual(cov, i: int, lam: float, theta) -> float:
    """max_j KKT residual of ND Eq 6 (A35) at θ, in units of λ_max(i) (same formula as theory.covlasso.kkt_violation)."""
    c = np.asarray(cov, dtype=float)
    rest = np.delete(np.arange(c.shape[0]), i)
    t = np.asarray(theta, float)[rest]
    g = c[np.ix_(rest, rest)] @ t - c[rest, i]
    half = lam / 2.0
    r = np.where(t != 0, np.abs(g + half * np.sign(t)), np.maximum(np.abs(g) - half, 0.0))
    return float(r.max() / max(lambda_max_i(c, i), np.finfo(float).tiny))


def predict_logit(F, theta, i: int) -> np.ndarray:
    """Σ_{j≠i} θ_j f_j(x) for every row of F (ND Eq 1 / RD Eq 12)."""
    F = np.asarray(F, dtype=np.float64)
    t = np.asarray(theta, dtype=float).copy()
    t[i] = 0.0
    return F @ t


def dependency_metrics(F_test, theta, i: int, offset=None, labels=None) -> dict:
    """ND Table 1 columns for category i on held-out logits ``F_test`` (rows = samples), by the library's
    :func:`theory.neural_dependency.replaced_logit_metrics` (abs_err, rel_err, spread_rel_err, acc, pos_acc, …),
    under this module's names (``ori_acc``, ``ori_pos_acc``; a NaN pos_acc without positives) plus ``rms_rel`` =
    √(E[(θᵀf)²]/E[f_i²]). ``offset`` (e.g. the bias b of RD Eq 11, where F = W F(x) without bias) is added before the
    argmax. ``labels``: true classes (ND Table 1); without them the unmodified prediction is the label.
    """
    from theory.neural_dependency import replaced_logit_metrics

    F = np.asarray(F_test, dtype=np.float64)
    if labels is not None and np.shape(labels) != (F.shape[0],):
        raise ValueError(f"labels: expected {F.shape[0]} labels, got shape {np.shape(labels)}")
    return _table1_names(replaced_logit_metrics(F, labels, i, theta, offset=offset), F, theta, i)


def _table1_names(m: dict, F: np.ndarray, theta, i: int) -> dict:
    r = F[:, i] - predict_logit(F, theta, i)
    nan = float("nan")
    return {"ori_acc": m["orig_acc"], "ori_pos_acc": nan if m["orig_pos_acc"] is None else m["orig_pos_acc"],
            "abs_err": m["abs_err"], "rel_err": m["rel_err"], "spread_rel_err": m["spread_rel_err"],
            "rms_rel": float(np.sqrt(np.mean(r**2) / max(np.mean(F[:, i] ** 2), 1e-300))),
            "acc": m["acc"], "pos_acc": nan if m["pos_acc"] is None else m["pos_acc"], "n_pos": m["n_pos"],
            "support": m["support"]}


def frequent_categories(F, k: int, min_count: int = 2) -> np.ndarray:
    """The ``k`` categories the model predicts most often on F (each at least ``min_count`` times)."""
    y = np.asarray(F).argmax(1)
    vals, counts = np.unique(y, return_counts=True)
    order = np.argsort(-counts, kind="stable")
    vals, counts = vals[order], counts[order]
    return vals[counts >= min_count][:k]


def smallest_support(cov_fit, F_test, i: int, target_rel: float, rho_min: float = 1e-3, labels=None,
                     design=None) -> dict:
    """The smallest support whose held-out relative error reaches ``target_rel`` along the exact CovLasso path.

    Walks the breakpoints of θ*(λ) (theory.covlasso, λ from λ_max(i) down to ``rho_min``·λ_max(i)); the support
    changes only there, so the first breakpoint with rel_err ≤ target has the smallest support on the path
    (evaluated at the breakpoints). ``{"reached": False, ...}`` with the best point if none does.
    """
    from theory.covlasso import covlasso_path as exact_path

    lm = lambda_max_i(cov_fit, i)
    path = exact_path(_square(cov_fit), i, [rho_min * lm])
    best = None
    for lam, th in zip(path.breakpoints[1:], path.coefs[1:]):
        m = dependency_metrics(F_test, th, i, labels=labels)
        m["rho"] = float(lam / lm)
        if best is None or m["rel_err"] < best["rel_err"]:
            best = m
        if m["rel_err"] <= target_rel:
            return {"reached": True, **m}
    if best is None:
        best = {**dependency_metrics(F_test, -np.eye(np.asarray(cov_fit).shape[0])[i], i,
                                     labels=labels), "rho": 1.0}
    return {"reached": False, **best}


def random_support_theta(cov_fit, i: int, support: int, rng) -> np.ndarray:
    """Negative control: θ on ``support`` random other categories, least squares on the fit second moment."""
    c = np.asarray(cov_fit)
    n = c.shape[0]
    others = np.delete(np.arange(n), i)
    S = rng.choice(others, size=max(1, support), replace=False)
    th = np.zeros(n)
    th[S] = np.linalg.lstsq(c[np.ix_(S, S)], c[S, i], rcond=None)[0]
    th[i] = -1.0
    return th


# ---------------------------------------------------------------- RD Eq 6: classification dimension
class ProjectedClassifier:
    """Cls(Pro_k(F(x))) of RD Eq 6 for every k, cheaply: PCA of the fit features, logits of the projected test ones.

    Pro_k(F) = μ + Q_k Q_kᵀ(F − μ) with (μ, Q) the mean and the eigenvectors of the fit features' covariance
    (RD Sec 3.3; the mean is kept: projecting uncentred features through the origin would also remove the
    offset every class shares). logits_k = (μWᵀ + b) + Z[:, :k] V[:k], Z = (F − μ)Q, V = QᵀWᵀ.
    """

    def __init__(self, F_fit, F_test, W, b):
        F_fit = as_float_array(F_fit, "features_fit", ndim=2)
        F_test = as_float_array(F_test, "features_test", ndim=2)
        W = as_float_array(W, "W", ndim=2)
        if W.shape[1] != F_fit.shape[1] or F_test.shape[1] != F_fit.shape[1]:
            raise ValueError(f"shapes: W {W.shape}, fit {F_fit.shape}, test {F_test.shape} do not match")
        self.mu = F_fit.mean(0)
        Xc = F_fit - self.mu
        if Xc.shape[0] < Xc.shape[1]:  # N < d: thin SVD; directions beyond the fit span carry no fit variance
            _, sv, Vt = np.linalg.svd(Xc, full_matrices=False)
            w, Q = sv**2 / Xc.shape[0], Vt.T
        else:
            w, Q = np.linalg.eigh(Xc.T @ Xc / Xc.shape[0])
        order = np.argsort(-w, kind="stable")
        self.eigvals, Q = w[order], Q[:, order]
        Dt = F_test - self.mu
        self.Z = Dt @ Q
        self.V = Q.T @ W.T
        self.residual = (Dt - self.Z @ Q.T) @ W.T  # the part of the test features outside span(Q): used at k = d
        self.base = self.mu @ W.T + np.asarray(b, dtype=float)
        self.full = F_test @ W.T + b
        self.y_full = self.full.argmax(1)
        self.d = F_fit.shape[1]
        self.rank_bound = min(F_fit.shape[0] - 1, self.d)

    def agreement(self, k: int, against=None) -> float:
        """Share of test rows whose Cls(Pro_k F) equals ``against`` (default: the full model's prediction)."""
        k = int(k)
        y = self.y_full if against is None else against
        logits = self.base + self.Z[:, :k] @ self.V[:k]
        if k >= self.d:
            logits = logits + self.residual
        return float(np.mean(logits.argmax(1) == y))


def cls_dim(pc: ProjectedClassifier, threshold: float = 0.95, against=None) -> dict:
    """ClsDim = min{k : agreement(k) ≥ threshold} (RD Eq 6) by bisection over k ∈ [1, d].

    Bisection assumes agreement grows with k; ``monotone_violations`` counts grid points (k = 1, 2, 4, ...)
    where it does not, so a non-monotone curve is visible. ``None`` when even k = d stays below threshold.
    """
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold: must be in (0, 1], got {threshold}")
    hi = pc.d
    evals = {}

    def acc(k):
        if k not in evals:
            evals[k] = pc.agreement(k, against)
        return evals[k]

    if acc(hi) < threshold:
        return {"cls_dim": None, "agreement_at_d": acc(hi), "evaluations": len(evals)}
    lo = 0  # acc(0) is treated as below threshold
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if acc(mid) >= threshold:
            hi = mid
        else:
            lo = mid
    grid = sorted({int(v) for v in np.unique(np.geomspace(1, pc.d, 12).astype(int))})
    curve = [acc(k) for k in grid]
    viol = sum(1 for a, b2 in zip(curve, curve[1:]) if b2 < a - 1e-12)
    return {"cls_dim": hi, "agreement_at_cls_dim": acc(hi), "agreement_at_d": acc(pc.d),
            "evaluations": len(evals), "monotone_violations": viol, "grid": grid, "curve": curve}


def split_halves(n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """A seeded random split of range(n) into fit and test halves."""
    p = rng.permutation(n)
    return np.sort(p[: n // 2]), np.sort(p[n // 2:])


def floors(cov) -> dict:
    """ND A15/A31 floors for every category: absolute err_i(θ*(0)) and relative R(Cov, i)."""
    fl = error_floor(cov)
    return {"floor": fl, "relative": fl / np.diag(cov)}


def dependency_text(i: int, theta, names=None, top: int = 4) -> str:
    """"Egyptian cat ≈ 0.56·tiger cat + 0.20·tabby": category i from its largest coefficients (ND Eq 1)."""
    def nm(j):
        return str(names[j]) if names is not None and 0 <= j < len(names) else str(j)

    t = np.asarray(theta, dtype=float).copy()
    t[i] = 0.0
    js = [int(j) for j in np.argsort(-np.abs(t), kind="stable")[:top] if t[j] != 0]
    if not js:
        return f"{nm(i)} ≈ 0 (no dependency)"
    terms = " ".join(("− " if t[j] < 0 else "+ ") + f"{abs(t[j]):.2f}·{nm(j)}" for j in js)
    more = np.count_nonzero(t) - len(js)
    terms = terms[2:] if terms.startswith("+ ") else "−" + terms[2:]
    return f"{nm(i)} ≈ {terms}" + (f" (+ {more} more)" if more > 0 else "")


def grouped_halves(groups, rng) -> tuple[np.ndarray, np.ndarray]:
    """A seeded split of the rows into two halves by group (e.g. source photograph): no group in both."""
    g = np.asarray(groups)
    u = rng.permutation(np.unique(g))
    a = np.isin(g, u[: len(u) // 2])
    return np.flatnonzero(a), np.flatnonzero(~a)


def planted_logits(n: int = 1500, classes: int = 40, seed: int = 0) -> tuple[np.ndarray, dict]:
    """Positive control for ND Table 1 / RD Eq 12: Gaussian logits where logit 0 is exactly
    1.064·f_1 + 0.38·f_2 + 0.4·f_3, with f_3 ≡ 2 (a category whose weights are zero: its logit is its bias).

    Every logit carries a shared per-sample offset and categories 1, 2 a mean of their own, as a trained
    classifier's do; the dependency goes through a constant logit, which ND's raw second moment E[f fᵀ] (Eq 2)
    represents and a centred covariance cannot (centring removes f_3 and the 0.8 it contributes): a centring slip
    in the library makes this control fail. Category 0 is predicted often (it has positives). Returns (F, truth).
    """
    rng = np.random.default_rng(seed)
    F = rng.normal(size=(n, classes)) + 2.0 * rng.normal(size=(n, 1))
    F[:, 1] += 1.5
    F[:, 2] += 1.0
    F[:, 3] = 2.0
    F[:, 0] = 1.9 * (0.56 * F[:, 1] + 0.20 * F[:, 2]) + 0.4 * F[:, 3]  # ≈ 1.064·f_1 + 0.38·f_2 + 0.4·f_3
    return F, {"category": 0, "support": [1, 2, 3]}


# ---------------------------------------------------------------- ND Sec 2.1 / Tab 1: which categories show it
#: ND Sec 2.1's picture of a neural dependency (Tab 1 and its text): "a small number of other categories (3 or 4 in
#: the illustrated cases)"; the logit predicted within Table 1's worst relative error (29.7 %, ViT-S), here relative
#: to the logit's spread across images (spread_rel_err: able to fail whatever the logits' offset); accuracy and
#: positive accuracy with the replaced logit within Table 1's losses (worst 60.9 vs 61.0; 72.0 vs 84.0 = 0.857).
PICTURE = {"support": 4, "spread_rel_err": 0.30, "acc_ratio": 0.95, "pos_ratio": 0.85, "specificity": 0.5,
           "recognised": 0.5}
#: Random supports drawn per selected dependency for its specificity (:func:`dependency_scan`).
SPECIFICITY_DRAWS = 8


def picture_miss(m: dict, limits: dict = PICTURE) -> dict:
    """Each part of the picture in tolerance units (≤ 1 holds): support, spread_rel_err, acc, pos_acc, recognised.
    A category without positives, or whose unmodified positive accuracy is 0, cannot show Table 1's positive column:
    inf. ``recognised``: the network's own positive accuracy on the category ≥ PICTURE["recognised"] (ND Sec 2: "the
    network is well-trained and produce[s] meaningful outputs for each category"; Table 1's originals are 70–90 %).
    ``limits["error"]`` names the error column judged against ``limits["spread_rel_err"]`` (default
    ``spread_rel_err``; ``rel_err`` is Table 1's |f|-relative column)."""
    def at_least(x, t):
        return 0.0 if t <= 0 else (math.inf if x is None or not np.isfinite(x) else t / max(x, t / 100))

    pos, ori_pos = m.get("pos_acc"), m.get("orig_pos_acc", m.get("ori_pos_acc"))
    ori = m.get("orig_acc", m.get("ori_acc"))
    err = limits.get("error", "spread_rel_err")  # which error column is judged (the paper's own: "rel_err")
    return {"support": m["support"] / limits["support"],
            "spread_rel_err": m[err] / limits["spread_rel_err"],
            "acc": at_least(m["acc"], limits["acc_ratio"] * ori),
            "pos_acc": (math.inf if pos is None or ori_pos is None or not ori_pos > 0 or not np.isfinite(ori_pos)
                        else at_least(pos, limits["pos_ratio"] * ori_pos)),
            "recognised": at_least(ori_pos, limits["recognised"]) if "recognised" in limits else 0.0}


def dependency_scan(cov, rhos, select, test, offset=None, max_support: int = PICTURE["support"],
                    thetas_for=None, thetas_at=None, specificity_cov=None, rng=None, twins=None,
                    limits: dict = PICTURE) -> list:
    """Every category's CovLasso dependency at each λ = ρ·λ_max(i) of ``rhos`` with support ≤ ``max_support``,
    scored on two sets of images: ``select`` and ``test`` are (logits, labels) or (logits, labels, evaluated)
    tuples (labels None: agreement with the unmodified prediction; ``evaluated``: between networks, g's logits
    whose column i is replaced). θ*(λ) for all categories at once by :func:`theory.covlasso.covlasso_all` on
    ``cov``, or ``thetas_at(ρ) -> Θ`` (e.g. :func:`theory.neural_dependency.between_all`); the metrics by
    :func:`theory.neural_dependency.replaced_logit_metrics_many`. ``thetas_for(i, θ) -> θ'`` replaces each
    dependency (the negative control's random supports). ``specificity_cov`` (the selection images' second moment)
    (or i -> the second moment target i is solved on) with ``rng``: a dependency is selected only when it is
    specific (:func:`_specificity`). ``twins`` {i: categories drawn identically to i (homoglyphs)}: a dependency on
    one of them is the same drawing under two labels, not a dependency between categories: left out. Rows: category, rho,
    support, theta (its nonzero entries: indices, values), select, test (the metrics), select_miss / test_miss
    (:func:`picture_miss` under ``limits``, the largest part)."""
    from theory.covlasso import covlasso_all
    from theory.neural_dependency import replaced_logit_metrics_many

    c = None if cov is None else _square(cov)
    stack = covlasso_all(c, rho=[float(r) for r in rhos]) if thetas_at is None else None  # Cov validated once
    pairs = []
    for k, rho in enumerate(rhos):
        Theta = thetas_at(float(rho)) if thetas_at is not None else stack[k]
        for i in range(Theta.shape[0]):
            th = Theta[i]
            k = int(np.count_nonzero(th)) - int(th[i] != 0)  # #{θ_j ≠ 0, j ≠ i}
            if twins and twins.get(i) and any(th[j] != 0 for j in twins[i] if j != i):
                continue
            if 1 <= k <= max_support:
                pairs.append((i, float(rho), th if thetas_for is None else thetas_for(i, th)))
    rows = [{"category": i, "rho": rho, "support": int(np.count_nonzero(th)) - int(th[i] != 0),
             "theta": (np.flatnonzero(th), th[np.flatnonzero(th)])} for i, rho, th in pairs]
    for name, sets in (("select", select), ("test", test)):
        F, y = sets[0], sets[1]
        E = sets[2] if len(sets) > 2 else None
        ms = replaced_logit_metrics_many(F, y, [(i, th) for i, _, th in pairs], offset=offset, evaluated=E)
        for r, m in zip(rows, ms):
            r[name] = m
            r[f"{name}_miss"] = max(picture_miss(m, limits).values())
    if specificity_cov is not None:
        _specificity(rows, specificity_cov, select, offset, rng, limits)
    return rows


def _specificity(rows, C, select, offset, rng, limits: dict = PICTURE) -> None:
    """For each dependency showing the picture on the selection images: the median selection error of
    SPECIFICITY_DRAWS supports of the same size drawn at random (least squares on the same second moment). ND's
    dependency names the categories that decide the target (Def 1: "nearly purely decided by" them); where any
    other categories do as well (logits sharing one dominant mode) the named ones are not a dependency, so the
    picture also needs the dependency's error ≤ PICTURE["specificity"] × that median (``select_miss`` grows)."""
    from theory.neural_dependency import replaced_logit_metrics_many

    F, y = select[0], select[1]
    E = select[2] if len(select) > 2 else None
    C_for = C if callable(C) else (lambda i: C)  # between networks: each target's own mixed second moment
    for r in rows:
        if r["select_miss"] > 1:
            continue
        i, k = r["category"], r["support"]
        Ci = C_for(i)
        rand = [random_support_theta(Ci, i, k, rng) for _ in range(SPECIFICITY_DRAWS)]
        err = limits.get("error", "spread_rel_err")
        errs = [m[err] for m in replaced_logit_metrics_many(F, y, [(i, t) for t in rand], offset=offset, evaluated=E)]
        med = float(np.median(errs))
        r["random supports: median spread rel err"] = med
        r["select_miss"] = max(r["select_miss"], r["select"][err] / max(limits["specificity"] * med, 1e-300))


def existential(rows: list) -> dict:
    """ND Sec 2.1's "there exist" reading of a scan: categories showing the picture on the selection images, and
    those among them that show it on the held-out test images too (the verdict: at least one)."""
    selected = [r for r in rows if r["select_miss"] <= 1]
    confirmed = [r for r in selected if r["test_miss"] <= 1]
    on_test = [r for r in rows if r["test_miss"] <= 1]
    # a pair counts when it shows the picture on both sets: its miss is the larger of the two (an unselected pair
    # that shows it on the test images alone is no confirmation, so the miss stays above 1 whenever nothing holds)
    best = min(selected or rows, key=lambda r: max(r["select_miss"], r["test_miss"]), default=None)
    return {"scanned pairs (category, ρ) with support ≤ 4": len(rows), "selected": selected,
            "confirmed": confirmed, "showing it on the test images (any, unselected)": on_test,
            "holds": bool(confirmed), "miss": float(max(best["select_miss"], best["test_miss"])) if best else math.inf,
            "best": best}
