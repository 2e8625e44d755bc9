"""Batch augmentation of canonical renders, in numpy, with arithmetic that is exact on every machine.

Each sample gets eight parameters from uniform draws ``u ∈ [0, 1)`` (:func:`params_from_uniform`), with
the ranges of :data:`RANGES`:

* **affine jitter**: rotation θ (tan(θ/2) uniform, |θ| ≤ 10°), isotropic scale s ∈ [0.85, 1.15],
  horizontal shear ∈ [-0.15, 0.15], shift of the glyph by ≤ 0.08 of the image side in each direction;
  sampled bilinearly from the 2× oversampled, binomially prefiltered canonical render
  (:func:`sims.glyphs.render.prefilter`), zero outside;
* **stroke** w ∈ [-0.4, 0.6]: blend towards the 3×3 grey dilation (w > 0, bolder) or erosion (w < 0,
  lighter) by |w| (the bold cuts are faces of their own, this is a finer weight jitter);
* **blur** b ∈ [0, 1]: blend towards the ``[1,2,1]/4 ⊗ [1,2,1]/4`` smoothed image by b;
* **noise**: zero-mean uniform pixel noise of standard deviation σ ∈ [0, 0.08]; finally clipped to [0, 1].

The rotation is built from t = tan(θ/2) as cos θ = (1 − t²)/(1 + t²), sin θ = 2t/(1 + t²), so no
transcendental function is evaluated: every step is an IEEE add, multiply, divide, floor, min/max or
gather, whose results do not depend on the CPU, the library build or the batch a sample is in.
"""
from __future__ import annotations

import numpy as np

N_PARAMS = 8
RANGES = {"rotation_deg": 10.0, "scale": (0.85, 1.15), "shear": 0.15, "shift": 0.08,
          "stroke": (-0.4, 0.6), "blur": (0.0, 1.0), "noise_std": (0.0, 0.08)}
_TAN_HALF = 0.08748866352592401  # tan(5°): |θ| ≤ 10°


def _lerp(u, lo, hi):
    return lo + (hi - lo) * u


def params_from_uniform(u: np.ndarray) -> dict:
    """[N, 8] uniforms in [0, 1) → float64 parameter arrays (names of :data:`RANGES`, radians as t)."""
    u = np.asarray(u, np.float64)
    if u.ndim != 2 or u.shape[1] != N_PARAMS:
        raise ValueError(f"u must have shape [N, {N_PARAMS}], got {u.shape}")
    r = RANGES
    return {"tan_half": _lerp(u[:, 0], -_TAN_HALF, _TAN_HALF), "scale": _lerp(u[:, 1], *r["scale"]),
            "shear": _lerp(u[:, 2], -r["shear"], r["shear"]), "dx": _lerp(u[:, 3], -r["shift"], r["shift"]),
            "dy": _lerp(u[:, 4], -r["shift"], r["shift"]), "stroke": _lerp(u[:, 5], *r["stroke"]),
            "blur": _lerp(u[:, 6], *r["blur"]), "noise": _lerp(u[:, 7], *r["noise_std"])}


def identity_params(n: int) -> dict:
    """Parameters that leave the (prefiltered) canonical render as it is, only resampled: no augmentation."""
    z = np.zeros(n)
    return {"tan_half": z, "scale": z + 1.0, "shear": z, "dx": z, "dy": z, "stroke": z, "blur": z, "noise": z}


def _inverse_affine(p: dict, canvas: int, size: int):
    """Per-sample float32 coefficients mapping an output pixel (row i, col j) to padded input coordinates.

    Output pixel centre in image units (side 1, origin at the centre): (x, y) = ((j+.5)/S − .5, (i+.5)/S − .5).
    The glyph is moved by M = R(θ)·Shear·s then shifted by (dx, dy); sampling uses the inverse
    p_in = M⁻¹ (p_out − d), then input pixel X = (x_in + .5)·C − .5 + 1 (one-pixel zero border).
    """
    t = p["tan_half"]
    cos = (1 - t * t) / (1 + t * t)
    sin = 2 * t / (1 + t * t)
    h, s = p["shear"], p["scale"]
    # M = s · R · [[1, h], [0, 1]]  → M⁻¹ = (1/s) · [[1, −h], [0, 1]] · Rᵀ
    a00 = (cos - h * -sin) / s       # row 0 of [[1,-h],[0,1]] @ [[cos, sin], [-sin, cos]]
    a01 = (sin - h * cos) / s
    a10 = -sin / s
    a11 = cos / s
    c = float(canvas)
    off = 0.5 * c + 0.5  # (x + .5)·C − .5 + 1
    # X = C·(a00 (x − dx) + a01 (y − dy)) + off, with x = (j + .5)/S − .5
    cx = off - c * (a00 * p["dx"] + a01 * p["dy"])
    cy = off - c * (a10 * p["dx"] + a11 * p["dy"])
    f32 = lambda v: np.asarray(v, np.float32)[:, None, None]
    return f32(c * a00), f32(c * a01), f32(cx), f32(c * a10), f32(c * a11), f32(cy)


def _pad1(x: np.ndarray) -> np.ndarray:
    p = np.zeros((x.shape[0], x.shape[1] + 2, x.shape[2] + 2), x.dtype)
    p[:, 1:-1, 1:-1] = x
    return p


def _sep3(x: np.ndarray, op) -> np.ndarray:
    """3×3 neighbourhood reduction (``np.maximum``/``np.minimum``), separable, zero outside."""
    p = _pad1(x)
    r = op(p[:, :, :-2], p[:, :, 1:-1])
    op(r, p[:, :, 2:], out=r)
    out = op(r[:, :-2, :], r[:, 1:-1, :])
    return op(out, r[:, 2:, :], out=out)


def _binomial(x: np.ndarray) -> np.ndarray:
    """``[1,2,1]/4`` in each direction, zero outside."""
    p = _pad1(x)
    h = p[:, :, :-2] + p[:, :, 2:]
    h *= np.float32(0.25)
    h += p[:, :, 1:-1] * np.float32(0.5)
    v = h[:, :-2, :] + h[:, 2:, :]
    v *= np.float32(0.25)
    v += h[:, 1:-1, :] * np.float32(0.5)
    return v


def _blend(img: np.ndarray, target: np.ndarray, w: np.ndarray) -> np.ndarray:
    """img + w · (target − img), per sample (w [n] float32)."""
    target -= img
    target *= w[:, None, None]
    target += img
    return target


def augment(padded: np.ndarray, which: np.ndarray, params: dict, size: int,
            noise_u: np.ndarray | None) -> np.ndarray:
    """float32 [N, size, size] in [0, 1]: sample ``padded[which[n]]`` (uint8 [P, C+2, C+2]) under ``params``.

    ``noise_u`` [N, size, size] uniforms in [0, 1) drive the pixel noise (None: no noise). Each sample is
    computed independently of the others (any split of a batch gives the same bytes).
    """
    padded = np.asarray(padded)
    cp2 = padded.shape[-1]
    canvas = cp2 - 2
    f32 = np.float32
    g = (np.arange(size, dtype=f32) + f32(0.5)) / f32(size) - f32(0.5)
    gx, gy = g[None, None, :], g[None, :, None]
    a00, a01, cx, a10, a11, cy = _inverse_affine(params, canvas, size)
    lo, hi = f32(0), f32(cp2 - 1)

    def coord(a, b, c):
        v = (a * gx + c) + b * gy                  # [n, S, S]
        np.maximum(v, lo, out=v)
        np.minimum(v, hi, out=v)
        v0 = np.floor(v)
        np.minimum(v0, f32(cp2 - 2), out=v0)
        v -= v0                                    # the fraction
        return v, v0
    fx, x0 = coord(a00, a01, cx)
    fy, y0 = coord(a10, a11, cy)
    itype = np.int64 if padded.size >= 2 ** 31 else np.int32
    idx = y0.astype(itype)
    idx *= itype(cp2)
    idx += x0.astype(itype)
    idx += (np.asarray(which, itype) * itype(cp2 * cp2))[:, None, None]
    flat = padded.reshape(-1)
    top = flat[idx].astype(f32)
    p01 = flat[idx + 1].astype(f32)
    p01 -= top
    p01 *= fx
    top += p01                                     # p00 + fx (p01 − p00)
    idx += itype(cp2)
    bot = flat[idx].astype(f32)
    p11 = flat[idx + 1].astype(f32)
    p11 -= bot
    p11 *= fx
    bot += p11
    bot -= top
    bot *= fy
    top += bot                                     # top + fy (bot − top)
    img = top
    img *= f32(1 / 255)
    w = np.asarray(params["stroke"], f32)
    for sel, op in ((np.flatnonzero(w > 0), np.maximum), (np.flatnonzero(w < 0), np.minimum)):
        if len(sel):
            img[sel] = _blend(img[sel], _sep3(img[sel], op), np.abs(w[sel]))
    b = np.asarray(params["blur"], f32)
    sel = np.flatnonzero(b != 0)
    if len(sel):
        img[sel] = _blend(img[sel], _binomial(img[sel]), b[sel])
    if noise_u is not None:
        sd = np.asarray(params["noise"], f32) * f32(np.sqrt(12.0))
        noise = np.asarray(noise_u, f32) - f32(0.5)
        noise *= sd[:, None, None]
        img += noise
    np.maximum(img, f32(0), out=img)
    return np.minimum(img, f32(1), out=img)
