"""Read-out cross-checks of the VC glyph networks (vc.transfer_correlation): a value a read-out reports is read again
by another path of the library, so a read-out that scored other images or weights fails the check."""
from __future__ import annotations

from sims.glyphs import networks as nw
from sims.glyphs import vc_experiments as ve


def p_pretrain_cross_check(pts: dict, quick: bool, seed: int, device) -> dict:
    """Each point's p_pretrain read again by the registry (sims.glyphs.networks.accuracy: the network's own held-out
    aug_test images, another forward pass): they may differ by float32 near-ties only (≤ 2 images), else the
    read-out scored other images or other weights (ValueError: the check fails)."""
    grids = {"tau": [(t, 0.0) for t in ve.TAU_GRID[bool(quick)]],
             "lambda": [(1.0, lam) for lam in ve.LAMBDA_GRID[bool(quick)]]}
    worst = 0.0
    for g, pairs in grids.items():
        for (t, lam), p in zip(pairs, pts[g]):
            ref = nw.accuracy(nw.pretrain(quick, "fine", t, lam, seed), quick, device)
            n = ref["n"]["aug_test"]
            diff = abs(float(p["p_pretrain"]) - ref["aug_test"])
            worst = max(worst, diff * n)
            if diff * n > 2 + 1e-9:
                raise ValueError(f"vc.transfer_correlation: p_pretrain of the (τ = {t:g}, λ = {lam:g}) network is "
                                 f"{float(p['p_pretrain']):.4f}, its held-out aug_test accuracy {ref['aug_test']:.4f} "
                                 f"({n} images): the read-out scored other images or weights")
    return {"largest |p_pretrain − registry's aug_test accuracy| in images (≤ 2)": worst}
