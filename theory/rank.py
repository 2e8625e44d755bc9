"""RD: numerical rank, PCA dimension, Weyl margin, the ψ-law of Lyapunov exponents, Marchenko–Pastur.

Rank Diminishing in Deep Neural Networks (RD):

* :func:`numerical_rank`  — RD Eq 4: ``Rank_ε(W) = #{i : σ_i ≥ ε‖W‖₂}``;
* :func:`float32_eps_rule` — RD Sec 4.3: ε = eps_float32 × N, N the number of singular values;
* :func:`pca_dim`         — RD Sec 4.3 ("Structural Impetus"): number of PCA eigenvalues
  λ_i ≥ ε·λ_max, ε = 1.19e−7 × N by default;
* :func:`weyl_delta_max`  — RD Thm 1: a certified δ_max(ε) from Weyl's inequality;
* :func:`lyapunov_law`    — RD Thm 5 (its proof): the Lyapunov exponents of products of standard
  Gaussian n×n matrices, λ_k = ½(log 2 + ψ((n−k+1)/2)), k = 1..n;
* :func:`ratio_law`       — RD Eq 10: lim (σ_k/σ_1)^{1/L} = exp(½(ψ((n−k+1)/2) − ψ(n/2)));
* :func:`gradient_explosion_rate` — RD Cor 1: log σ_1 / L → ½(log 2 + ψ(n/2));
* Marchenko–Pastur (RD Sec 3.1): density, CDF, and the numerical rank it predicts for an N×d
  Gaussian matrix, optionally with a planted low-rank signal (BBP top singular value).

The seed text writes ψ = Γ/Γ' in Thm 5; the digamma function is ψ = Γ'/Γ (the law below is the
classical one of Newman 1986 and matches simulation), so we use the digamma function.

Mathematics only: numpy/scipy, no torch, no I/O.
"""
from __future__ import annotations

import numpy as np
from scipy import integrate, special

import os

from theory.validate import as_float_array

#: float32 machine epsilon as the paper writes it (RD Sec 4.3: "1.19e−7").
FLOAT32_EPS = float(np.finfo(np.float32).eps)  # 1.1920929e-07


def _check_real_number(x, name: str) -> float:
    if isinstance(x, (bool, np.bool_, complex, np.complexfloating)) or isinstance(x, str):
        raise ValueError(f"{name}: must be a real number, got {x!r}")
    try:
        return float(x)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: must be a real number, got {x!r}") from None


def _check_eps(eps, name="eps") -> float:
    e = _check_real_number(eps, name)
    if not np.isfinite(e) or e <= 0:
        raise ValueError(f"{name}: must be finite and > 0, got {eps!r}")
    return e


def _real_array(x, name: str, ndim: int | None = None) -> np.ndarray:
    """A validated float64 array: complex, boolean and object input are errors, not silently converted."""
    a = np.asarray(x) if not isinstance(x, np.ndarray) else x
    if np.iscomplexobj(a):
        raise ValueError(f"{name}: must be real, got a complex array (dtype {a.dtype})")
    if a.dtype.kind not in "fiu":
        raise ValueError(f"{name}: must be a real numeric array, got dtype {a.dtype}")
    return as_float_array(a, name, ndim=ndim)


def _unit_scale(a: np.ndarray) -> tuple[np.ndarray, int]:
    """(a·2^−e, e) with max|a·2^−e| in [½, 1): an exact rescaling, so ranks and ratios at any scale
    (1e±300) are computed on O(1) numbers (no overflow in squares, no underflow to subnormals)."""
    m = float(np.max(np.abs(a)))
    if m == 0.0:
        return a, 0
    e = int(np.frexp(m)[1])
    return np.ldexp(a, -e), e


def _check_alloc(nbytes: int, what: str) -> None:
    """MemoryError naming ``what`` when ``nbytes`` exceeds the physical memory (never a swap-storm or an OOM kill)."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return
    if nbytes > 0.5 * total:
        raise MemoryError(f"{what} needs about {nbytes / 2**30:.3g} GiB; this machine has {total / 2**30:.3g} GiB")


def singular_values(W) -> np.ndarray:
    """Singular values of a validated real 2-D matrix, descending (ValueError on NaN/Inf/empty/complex).

    Computed on the matrix rescaled by a power of two and scaled back, so they are right at any scale."""
    a, e = _unit_scale(_real_array(W, "W", ndim=2))
    return np.ldexp(np.linalg.svd(a, compute_uv=False), e)


def float32_eps_rule(n_values: int) -> float:
    """RD Sec 4.3: the tolerance ε = 1.19e−7 × N, N the number of singular (or PCA) values measured.

    "This threshold represents the minimum digital accuracy of numerical rank we can capture in data
    stored as float32."
    """
    if isinstance(n_values, bool) or not isinstance(n_values, (int, np.integer)) or n_values < 1:
        raise ValueError(f"n_values: must be a positive integer, got {n_values!r}")
    return FLOAT32_EPS * int(n_values)


def rank_from_singular_values(s, eps) -> int:
    """Eq 4 on given singular values: #{i : σ_i ≥ ε·max σ}; 0 for the zero matrix."""
    e = _check_eps(eps)
    s = _real_array(s, "singular values", ndim=1)
    if np.any(s < 0):
        raise ValueError("singular values: must be >= 0")
    s, _ = _unit_scale(s)  # exact: the count is scale-invariant and e·top must not underflow
    top = float(s.max())
    if top == 0.0:
        return 0
    return int(np.count_nonzero(s >= e * top))


def numerical_rank(W, eps=None) -> int:
    """RD Eq 4: Rank_ε(W) = #{i ≤ min(n, d) : σ_i ≥ ε‖W‖₂}, relative to the spectral norm.

    ``eps=None`` uses the float32 rule of Sec 4.3 (ε = 1.19e−7 × min(n, d)). The zero matrix has rank 0.
    Raises ValueError for NaN/Inf, empty matrices, eps ≤ 0.
    """
    a, _ = _unit_scale(_real_array(W, "W", ndim=2))  # Rank_ε is scale-invariant: compute at scale 1
    e = float32_eps_rule(min(a.shape)) if eps is None else _check_eps(eps)
    return rank_from_singular_values(np.linalg.svd(a, compute_uv=False), e)


def pca_dim(features, eps=None, method: str = "auto") -> int:
    """RD Sec 4.3 (Structural Impetus): number of PCA eigenvalues λ_i ≥ ε·λ_max.

    ``features``: (N samples, d). ``eps=None``: ε = 1.19e−7 × (number of PCA eigenvalues,
    min(N−1, d)) as in the paper. ``method``: "svd" (λ_i = s_i²/(N−1) from the singular values of the
    centred data: accurate down to ~1e−16 relative in λ), "cov" (eigvalsh of the d×d covariance:
    absolute error ~d·1e−16·λ_max, several times faster for N ≫ d), "auto" ("cov" when ε ≥ 1e−10 and
    N > 2d, else "svd"). Needs N ≥ 2.
    """
    x, _ = _unit_scale(_real_array(features, "features", ndim=2))  # scale-invariant: no overflow in the mean/squares
    if x.shape[0] < 2:
        raise ValueError(f"features: need at least 2 samples (rows) for a covariance, got {x.shape[0]}")
    if method not in ("auto", "svd", "cov"):
        raise ValueError(f"method: 'auto', 'svd' or 'cov', got {method!r}")
    nvals = min(x.shape[0] - 1, x.shape[1])
    e = float32_eps_rule(nvals) if eps is None else _check_eps(eps)
    xc = x - x.mean(axis=0, keepdims=True)
    if _pca_route(x.shape[0], x.shape[1], e, method) == "cov":
        lam = np.clip(np.linalg.eigvalsh(xc.T @ xc / (x.shape[0] - 1)), 0.0, None)[::-1]
    else:
        lam = np.linalg.svd(xc, compute_uv=False) ** 2 / (x.shape[0] - 1)
    return rank_from_singular_values(lam[:nvals], e)


def _pca_route(n_samples: int, n_features: int, eps: float, method: str = "auto") -> str:
    """The spectrum route :func:`pca_dim` takes: ``method`` itself unless "auto", which is "cov" when
    ε ≥ 1e−10 (the covariance's absolute eigenvalue error ~d·1e−16·λ_max is then far below ε·λ_max) and
    N > 2d (the d×d covariance is the cheaper matrix), else "svd"."""
    if method != "auto":
        return method
    return "cov" if eps >= 1e-10 and n_samples > 2 * n_features else "svd"


def weyl_delta_max(W, eps, D) -> float:
    """RD Thm 1: a δ_max(ε) > 0 with Rank_ε(W + δD) = Rank_ε(W) for all δ ∈ [0, δ_max).

    By Weyl, |σ_i(W + δD) − σ_i(W)| ≤ δ‖D‖₂ and the same for ‖·‖₂ = σ_1. A singular value above the
    threshold stays above if σ_i − δ‖D‖ ≥ ε(σ_1 + δ‖D‖), one below stays below if
    σ_i + δ‖D‖ < ε(σ_1 − δ‖D‖); so δ_max = min_i |σ_i − εσ_1| / ((1 + ε)‖D‖₂) works. It is 0 exactly
    at the (measure-zero) ε = σ_i/σ_1 that Thm 1's "almost every ε" excludes; ∞ for D = 0.
    """
    e = _check_eps(eps)
    w, ew = _unit_scale(_real_array(W, "W", ndim=2))
    d, ed = _unit_scale(_real_array(D, "D", ndim=2))
    if d.shape != w.shape:
        raise ValueError(f"D: shape {d.shape} differs from W's {w.shape}")
    s = np.linalg.svd(w, compute_uv=False)
    dn = float(np.linalg.norm(d, 2))
    if dn == 0.0:
        return float("inf")
    if s[0] == 0.0:
        raise ValueError("W: the zero matrix has no relative threshold ε‖W‖₂")
    margin = float(np.min(np.abs(s - e * s[0])))
    with np.errstate(over="ignore", under="ignore"):
        out = float(np.ldexp(margin / ((1.0 + e) * dn), ew - ed))  # δ_max scales as scale(W)/scale(D)
    if not np.isfinite(out) or (out == 0.0 and margin > 0.0):
        raise ValueError(f"δ_max = 2^{ew - ed}·{margin / ((1 + e) * dn):.3g} is outside the float64 range: W and D "
                         "differ in scale by more than 1e±300")
    return out


def eps_max_low_rank(W, rank_tol=None) -> float:
    """RD Thm 1, second part: for a low-rank W (no noise) every ε < ε_max = σ_r/σ_1 gives Rank_ε = Rank.

    r is the exact rank (numpy's default tolerance max(n, d)·eps64·σ_1 unless ``rank_tol``).
    """
    s = singular_values(W)
    if rank_tol is None:
        tol = s[0] * max(np.shape(W)) * np.finfo(float).eps
    else:
        tol = _check_real_number(rank_tol, "rank_tol")
        if not np.isfinite(tol) or tol < 0:
            raise ValueError(f"rank_tol: must be finite and >= 0, got {rank_tol!r}")
    r = int(np.count_nonzero(s > tol))
    if r == 0:
        raise ValueError("W: is (numerically) zero" + ("" if rank_tol is None else
                                                        f" (no singular value above rank_tol = {rank_tol!r})"))
    return float(s[r - 1] / s[0])


# ----------------------------------------------------------------------------- Lyapunov ψ-law

def _check_n(n, name="n") -> int:
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"{name}: must be a positive integer, got {n!r}")
    _check_alloc(24 * int(n), f"{name} = {n} exponents (three float64 arrays of length {name})")
    return int(n)


def lyapunov_law(n: int) -> np.ndarray:
    """RD Thm 5 (proof): exponents λ_k = ½(log 2 + ψ((n−k+1)/2)), k = 1..n (descending).

    For products J_L ⋯ J_1 of iid n×n matrices with standard Gaussian N(0, 1) entries,
    (1/L) log σ_k(J_L ⋯ J_1) → λ_k almost surely. (Per layer, in the Benettin QR recursion,
    log R_kk = ½ log χ²_{n−k+1}, whose mean is λ_k.)
    """
    n = _check_n(n)
    k = np.arange(1, n + 1)
    return 0.5 * (np.log(2.0) + special.digamma((n - k + 1) / 2.0))


def lyapunov_law_sd(n: int) -> np.ndarray:
    """Per-layer standard deviation of ½ log χ²_{n−k+1}: ½√ψ'((n−k+1)/2) (ψ' the trigamma).

    The Benettin estimate of λ_k after L Gaussian layers has standard deviation lyapunov_law_sd/√L:
    the O(1/√L) finite-L fluctuation that sets the tolerance of rd.lyapunov_law.
    """
    n = _check_n(n)
    k = np.arange(1, n + 1)
    return 0.5 * np.sqrt(special.polygamma(1, (n - k + 1) / 2.0))


def ratio_law(n: int) -> np.ndarray:
    """RD Eq 10: lim_L (σ_k/‖J_F‖₂)^{1/L} = exp(½(ψ((n−k+1)/2) − ψ(n/2))), k = 1..n (k = 1 gives 1)."""
    lam = lyapunov_law(n)
    return np.exp(lam - lam[0])


def gradient_explosion_rate(n: int) -> float:
    """RD Cor 1: log ‖J_F‖₂ = log σ_1 ~ (L/2)(log 2 + ψ(n/2)); returns the per-layer rate."""
    n = _check_n(n)
    return float(0.5 * (np.log(2.0) + special.digamma(n / 2.0)))


def psi_law_rank(n: int, L, eps) -> np.ndarray:
    """The numerical rank the ψ-law predicts after L Gaussian layers: #{k : L(λ_k − λ_1) ≥ log ε}.

    (Eq 10 read at finite L: σ_k/σ_1 ≈ ratio_law(n)_k^L.) ``L`` may be an array of depths.
    """
    e = _check_eps(eps)
    gaps = lyapunov_law(n) - lyapunov_law(n)[0]  # ≤ 0
    L = np.atleast_1d(_real_array(L, "L"))
    if L.ndim != 1 or np.any(L < 0):
        raise ValueError(f"L: depths must be a 1-D sequence of finite numbers >= 0, got {L}")
    return np.array([int(np.count_nonzero(l * gaps >= np.log(e))) for l in L])


# ----------------------------------------------------------------------------- Marchenko–Pastur

def _check_gamma(gamma) -> float:
    g = _check_real_number(gamma, "gamma")
    if not np.isfinite(g) or not 0 < g <= 1:
        raise ValueError(f"gamma: aspect ratio d/N must be in (0, 1], got {gamma!r}")
    return g


def mp_edges(gamma: float) -> tuple[float, float]:
    """Support [(1−√γ)², (1+√γ)²] of the MP law of the eigenvalues of WᵀW/N, W N×d iid N(0,1), γ = d/N ≤ 1."""
    g = _check_gamma(gamma)
    return (1 - np.sqrt(g)) ** 2, (1 + np.sqrt(g)) ** 2


def mp_density(x, gamma: float) -> np.ndarray:
    """Marchenko–Pastur density √((b−x)(x−a)) / (2πγx) on [a, b] (γ = d/N ≤ 1, unit variance)."""
    g = _check_gamma(gamma)
    a, b = mp_edges(g)
    x = np.asarray(_real_array(np.atleast_1d(x), "x")).reshape(np.shape(x))
    out = np.zeros_like(x)
    inside = (x > a) & (x < b) & (x > 0)
    xi = x[inside]
    out[inside] = np.sqrt((b - xi) * (xi - a)) / (2 * np.pi * g * xi)
    return out


def mp_cdf(x: float, gamma: float) -> float:
    """P(λ ≤ x) under the Marchenko–Pastur law (quadrature with the algebraic end-point weights)."""
    g = _check_gamma(gamma)
    a, b = mp_edges(g)
    x = _check_real_number(x, "x")
    if np.isnan(x):
        raise ValueError("x: is NaN")
    if x <= a:
        return 0.0
    if x >= b:
        return 1.0
    if a == 0.0:  # γ = 1: density √(4−x)/(2π√x): weight x^{-1/2}(4−x)^{1/2} on [0, 4]
        val, _ = integrate.quad(lambda t: np.sqrt(4 - t) / (2 * np.pi), 0.0, x, weight="alg", wvar=(-0.5, 0.0))
        return float(min(max(val, 0.0), 1.0))
    val, _ = integrate.quad(lambda t: np.sqrt(b - t) / (2 * np.pi * g * t), a, x, weight="alg", wvar=(0.5, 0.0))
    return float(min(max(val, 0.0), 1.0))


def spiked_top_singular(theta: float, gamma: float) -> float:
    """Top singular value of (S + G)/√N for a rank-one signal S with ‖S‖₂ = θ√N and G N×d iid N(0,1).

    BBP transition (Benaych-Georges & Nadakuditi 2012), γ = d/N: σ = √((1+θ²)(γ+θ²))/θ for θ > γ^{1/4},
    else the bulk edge 1 + √γ.
    """
    g = _check_gamma(gamma)
    t = _check_real_number(theta, "theta")
    if not np.isfinite(t) or t < 0:
        raise ValueError(f"theta: must be finite and >= 0, got {theta!r}")
    if t <= g**0.25:
        return 1 + np.sqrt(g)
    return float(np.sqrt((1 + t**2) * (g + t**2)) / t)


def mp_numerical_rank(N: int, d: int, eps: float, signal_rank: int = 0, theta: float = 0.0) -> float:
    """RD Sec 3.1: the numerical rank of an N×d Gaussian matrix (plus ``signal_rank`` planted
    directions of strength θ√N) predicted by the Marchenko–Pastur law.

    Noise singular values σ = √(Nλ), λ ~ MP(γ = min/max); the top one is the bulk edge (no signal) or
    the BBP spike. Rank_ε = r + (min(N, d) − r)·P_MP(λ ≥ ε²·σ_top²).
    """
    N, d = _check_n(N, "N"), _check_n(d, "d")
    if isinstance(signal_rank, (bool, np.bool_)) or not isinstance(signal_rank, (int, np.integer)) \
            or not 0 <= signal_rank <= min(N, d):
        raise ValueError(f"signal_rank: must be an integer in [0, min(N, d) = {min(N, d)}], got {signal_rank!r}")
    e = _check_eps(eps)
    m, M = min(N, d), max(N, d)
    g = m / M
    top = spiked_top_singular(theta, g) if signal_rank > 0 else 1 + np.sqrt(g)
    frac_above = 1.0 - mp_cdf((e * top) ** 2, g)
    return float(signal_rank + (m - signal_rank) * frac_above)
