"""Synthetic logit models for the neural-dependency checks (ND Sec 2.2 massive categories, Sec 2.4 two networks).

* :func:`massive_category_logits`: a linear last layer on p-dimensional features, f = W h (+ noise),
  with class prototypes as the rows of W and features h = s·w_y/‖w_y‖ + ξ, so every class has a
  high logit on its own samples (a classifier-like model). With n > p categories Cov = E[f fᵀ] has
  rank p and every error floor vanishes (ND Sec 2.2).
* :func:`two_networks`: two "networks" f and g that read the same p-dimensional features through
  different linear maps, g through a noisy view of them (ND Sec 2.4: independently trained models
  on the same data).

All take a ``numpy.random.Generator`` and return float64 arrays.
"""
from __future__ import annotations

import numpy as np


def massive_category_logits(N: int, n: int, p: int, rng: np.random.Generator, signal: float = 3.0,
                            noise: float = 0.0, feature_noise: float = 1.0, W: np.ndarray | None = None):
    """(F, labels, W): N samples of n logits f = W h + noise·e, h ∈ R^p, W (n × p) Gaussian/√p.

    Labels are uniform over the n classes; h = signal·w_y/‖w_y‖ + feature_noise·ξ (ξ standard normal).
    Pass the ``W`` of an earlier call to draw fresh samples of the same model (the same "network").
    """
    if min(N, n, p) < 1:
        raise ValueError(f"N, n, p must be >= 1, got {N}, {n}, {p}")
    if W is None:
        W = rng.standard_normal((n, p)) / np.sqrt(p)
    elif W.shape != (n, p):
        raise ValueError(f"W: expected shape ({n}, {p}), got {W.shape}")
    y = rng.integers(0, n, size=N)
    proto = W / np.linalg.norm(W, axis=1, keepdims=True)
    H = signal * proto[y] + feature_noise * rng.standard_normal((N, p))
    F = H @ W.T
    if noise > 0:
        F = F + noise * rng.standard_normal((N, n))
    return F, y, W


def two_networks(N: int, n: int, p: int, rng: np.random.Generator, signal: float = 6.0, view_noise: float = 0.1,
                 noise: float = 0.01):
    """(F, G, labels): two networks' logits on the same N samples and n classes.

    Shared features h as in :func:`massive_category_logits`; f = W_f h + noise·e, g = W_g (h + view_noise·ξ)
    + noise·e' with independent maps W_f, W_g (n × p): different linear maps of noisy views of the
    same features. The default signal gives both networks ≈ 83 % accuracy at n = 120, p = 80.
    """
    if min(N, n, p) < 1:
        raise ValueError(f"N, n, p must be >= 1, got {N}, {n}, {p}")
    Wf = rng.standard_normal((n, p)) / np.sqrt(p)
    Wg = rng.standard_normal((n, p)) / np.sqrt(p)
    y = rng.integers(0, n, size=N)
    proto = (Wf + Wg) / np.linalg.norm(Wf + Wg, axis=1, keepdims=True)  # both networks learned the classes
    H = signal * proto[y] + rng.standard_normal((N, p))
    F = H @ Wf.T + noise * rng.standard_normal((N, n))
    G = (H + view_noise * rng.standard_normal((N, p))) @ Wg.T + noise * rng.standard_normal((N, n))
    return F, G, y


# ---------------------------------------------------------------------------------------------- ND Remark 2
def mp_floors(c: np.ndarray, dps: int = 50) -> np.ndarray:
    """Reference error floors 1/(Cov⁻¹)_ii of a float64 matrix, computed with ``dps`` decimal digits (mpmath)."""
    import mpmath as mp

    with mp.workdps(dps):
        inv = mp.matrix(np.asarray(c, dtype=float).tolist()) ** -1
        return np.array([float(1 / inv[i, i]) for i in range(c.shape[0])])


def block_covariance(n: int, block: int, kappa_max: float, scale: float, rng: np.random.Generator, ref_for=None):
    """(Cov, floors): block-diagonal ``scale``·blocks of size ``block`` (κ of each ≤ ``kappa_max``), permuted,
    with the floors of the categories ``ref_for`` (default all) from :func:`mp_floors` of their block (a
    block-diagonal Cov's floors are its blocks'); NaN for the others."""
    from sims.spd import spd_with_condition

    if n % block:
        raise ValueError(f"n = {n} must be a multiple of block = {block}")
    p = rng.permutation(n)
    want = np.zeros(n, bool)
    want[p[np.arange(n) if ref_for is None else np.asarray(ref_for)]] = True  # in unpermuted positions
    c = np.zeros((n, n))
    ref = np.full(n, np.nan)
    for b in range(n // block):
        s = slice(b * block, (b + 1) * block)
        blk = spd_with_condition(block, 10 ** rng.uniform(0, np.log10(kappa_max)), rng, scale=scale)
        c[s, s] = blk
        if want[s].any():
            ref[s] = mp_floors(blk)
    return c[np.ix_(p, p)], ref[p]


def _det_ratio_failed(dr: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """NaN/inf/0 or more than 1 % off the reference: what Remark 2 calls not computable accurately."""
    with np.errstate(all="ignore"):
        return ~np.isfinite(dr) | (dr <= 0) | (np.abs(dr - ref) > 1e-2 * ref)


def remark2_regimes(quick: bool, seed: int = 0) -> dict:
    """ND Remark 2 on two axes, every route against a high-precision reference (cached).

    * conditioning at small size: n = 10, κ from 1 to 1e12 (singular values of Cov₋ᵢ₋ᵢ down to ~1e-12; Remark 2's
      "tiny singular values (smaller than 1e-3)"), every category against 50-digit mpmath floors: worst relative
      error of the LU det ratio, exp(slogdet difference), the Cholesky floor (``error_floor``) and the eigen form;
    * size at condition number ≤ 10: block-diagonal covariances (blocks of 10, κ ≤ 10, mpmath floors per block)
      at scale 0.01 and 100 (a logit's second moment is seldom exactly 1) for n from 10 to 1000, plus 0.01·I_n:
      share of categories whose det ratio fails (NaN/inf/0 or > 1 % off) and the stable floor's worst error;
    * both: logit-like covariances (rank n/5 + noise 1e-3, κ ≈ 1e6–1e9) for n ≥ 200: det-ratio failures, and the
      stable floor against a bordered-KKT LU solve (independent of Cholesky) in units of κ·ε.
    """
    from sims.cache import cached
    from sims.spd import gram, lowrank_logits, spd_with_condition
    from sims.threads import single_threaded
    from theory import dependency as dep

    params = {"version": 2, "quick": bool(quick), "seed": int(seed), "n_small": 10,
              "kappas": 7 if quick else 13, "reps": 2,
              "sizes": [10, 50, 100, 200, 400] if quick else [10, 50, 100, 200, 500, 1000],
              "logit_sizes": [200, 400] if quick else [200, 500, 1000], "per_size": 8}

    @single_threaded(torch_threads=None, user_api="blas")  # small dense algebra: BLAS threads only contend
    def compute():
        rng = np.random.default_rng([seed, 2])
        kappas = np.geomspace(1.0, 1e12, params["kappas"])
        errs = {k: np.zeros(len(kappas)) for k in ("det", "slogdet", "cholesky", "eigen")}
        fail_small = np.zeros(len(kappas))
        min_sv = np.zeros(len(kappas))
        m = params["n_small"]
        for a, kappa in enumerate(kappas):
            for _ in range(params["reps"]):
                c = spd_with_condition(m, kappa, rng)
                ref = mp_floors(c)
                dr = np.array([dep.det_ratio(c, i, "det", raw=True) for i in range(m)])
                routes = {"det": dr, "slogdet": np.array([dep.det_ratio(c, i, "slogdet", raw=True) for i in range(m)]),
                          "cholesky": dep.error_floor(c), "eigen": dep.error_floor_eigen(c)}
                for k, v in routes.items():
                    with np.errstate(all="ignore"):
                        e = np.abs(v - ref) / ref
                    errs[k][a] = max(errs[k][a], float(np.max(np.where(np.isfinite(e), e, np.inf))))
                fail_small[a] += _det_ratio_failed(dr, ref).sum()
                min_sv[a] = min(min_sv[a] or np.inf, min(np.linalg.eigvalsh(np.delete(np.delete(c, i, 0), i, 1))[0]
                                                      for i in range(m)))
        out = {"kappas": kappas, "fail_small": fail_small / (params["reps"] * m), "min_sv": min_sv}
        out.update({f"err_{k}": v for k, v in errs.items()})
        sizes = params["sizes"]
        for tag, scale in (("blocks_0.01", 0.01), ("blocks_100", 100.0), ("identity_0.01", 0.01)):
            fails, stable = [], []
            for n in sizes:
                idx = rng.choice(n, size=min(params["per_size"], n), replace=False)
                if tag.startswith("identity"):
                    c, ref = scale * np.eye(n), np.full(n, scale)
                else:
                    c, ref = block_covariance(n, 10, 10.0, scale, rng, ref_for=idx)
                dr = _det_ratios(c, idx)
                fails.append(float(_det_ratio_failed(dr, ref[idx]).mean()))
                stable.append(float(np.max(np.abs(dep.error_floor(c)[idx] - ref[idx]) / ref[idx])))
            out[f"fail_{tag}"] = np.array(fails)
            out[f"stable_err_{tag}"] = np.array(stable)
        out["sizes"] = np.array(sizes)
        lfail, lstable, lkappa = [], [], []
        for n in params["logit_sizes"]:
            c = gram(lowrank_logits(2 * n, n, n // 5, 1e-3, rng))
            stable = dep.error_floor(c)
            w = np.linalg.eigvalsh(c)
            kappa = w[-1] / w[0]
            idx = rng.choice(n, size=params["per_size"], replace=False)
            dr = _det_ratios(c, idx)
            lfail.append(float(_det_ratio_failed(dr, stable[idx]).mean()))
            worst = 0.0
            for i in idx[:3]:
                ref = kkt_floor(c, int(i))
                worst = max(worst, abs(stable[i] - ref) / ref / (kappa * np.finfo(float).eps))
            lstable.append(worst)
            lkappa.append(kappa)
        out.update({"logit_sizes": np.array(params["logit_sizes"]), "fail_logit": np.array(lfail),
                    "stable_kkt_logit": np.array(lstable), "kappa_logit": np.array(lkappa)})
        return out

    return cached("nd_remark2_regimes", params, compute)


def _det_ratios(c: np.ndarray, idx) -> np.ndarray:
    """det Cov / det Cov₋ᵢ₋ᵢ (LU, ``numpy.linalg.det``) for the categories ``idx``; det Cov computed once."""
    with np.errstate(all="ignore"):
        full = np.float64(np.linalg.det(c))
        return np.array([full / np.float64(np.linalg.det(np.delete(np.delete(c, i, 0), i, 1))) for i in idx])


def kkt_floor(c: np.ndarray, i: int) -> float:
    """min θᵀCθ s.t. θ_i = −1 solved as the bordered KKT system [[2C, e_i], [e_iᵀ, 0]] by LU (η/2, ND A27):
    an independent route to the floor (no Cholesky, no inverse)."""
    import scipy.linalg as sla

    n = c.shape[0]
    k = np.zeros((n + 1, n + 1))
    k[:n, :n] = 2 * c
    k[i, n] = k[n, i] = 1.0
    rhs = np.zeros(n + 1)
    rhs[n] = -1.0
    return float(sla.solve(k, rhs, assume_a="gen")[n] / 2.0)
