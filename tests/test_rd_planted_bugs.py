"""Planted library bugs that an RD check must turn into `fail`, never `refuted` (a finding against the paper).

Each test plants one realistic bug in the library by monkeypatching the function the check calls (the library
itself is not edited) and runs the check through the registry in quick mode, in a private cache (the cache key
sees the code, not a patch). The claim fails with the bug; so must the positive control, because it now runs the
same library path (the Benettin kernel, the MP law of theory.rank, the FC built by component()) on an input whose
answer is known in closed form. Before the positive controls ran the library code, each of these ended `refuted`.
"""
import numpy as np
import torch

from sims import random_matrix as rm
from sims import rank_components as fig3
from sims.rank_nets import FC
from tests.helpers import run_quick
from theory import rank as R
from verify import registry


def _private_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("THEORYLAB_CACHE", str(tmp_path / "cache"))


def _assert_fail(out):
    assert out.status == "fail", (out.status, out.miss, out.positive_miss, out.error)
    assert out.negative_control_result == "failed as it should"
    assert out.positive_control_result != "held as it should"
    assert out.miss > 1 and out.positive_miss > 1
    assert out.finding and any(ch.isdigit() for ch in out.finding)  # a failing claim always says what it measured


def test_r4_benettin_accumulates_log_r_squared(monkeypatch, tmp_path):
    """R4: the Benettin kernel accumulating log|R_kk|² instead of log|R_kk|. Emulated exactly at the kernel that both
    benettin_sums (the claim) and benettin_given (the positive control) call: every sum it adds is doubled
    (Σ log R² = 2 Σ log|R|), so no numba recompile is needed. Before: `refuted` with z = 469 and no finding."""
    _private_cache(monkeypatch, tmp_path)
    orig = rm._benettin_block

    def doubled(mats, nlayers, qr, c, tau, work, s, frame, rec, out, tiny):
        s0 = s.copy()
        orig(mats, nlayers, qr, c, tau, work, s, frame, rec, out, tiny)
        for layer in range(nlayers):
            if rec[layer] >= 0:
                out[:, rec[layer]] = s0 + 2 * (out[:, rec[layer]] - s0)
        s[:] = s0 + 2 * (s - s0)

    monkeypatch.setattr(rm, "_benettin_block", doubled)
    assert np.allclose(rm.benettin_given(np.stack([np.diag([2.0, 0.5])] * 3)), [6 * np.log(2), -6 * np.log(2)])
    out = run_quick("rd.lyapunov_law", tmp_path=tmp_path)
    _assert_fail(out)
    assert out.miss > 50  # z ≈ 469 / 5
    # rd.general_centralization's positive control runs the same kernel (rotated diagonal layers): it fails too
    # (its claim, ratios of doubled sums, still decays; a Benettin bug that stopped the decay would end `fail`)
    checks = registry.discover()
    ctx = registry.Context(check_id="rd.general_centralization", quick=True, report_dir=tmp_path)
    pos = checks["rd.general_centralization"].compare(ctx, False, positive=True)
    assert not pos.holds and pos.miss > 1e6, pos.miss


def test_r6_marchenko_pastur_edges_without_square_root(monkeypatch, tmp_path):
    """R6: MP edges written (1 ± γ)² instead of (1 ± √γ)² in theory.rank.mp_edges (mp_cdf, and so the prediction,
    use them). Before: `refuted`, because the positive control drew its ranks from the library's own law."""
    _private_cache(monkeypatch, tmp_path)

    def wrong_edges(gamma):
        g = R._check_gamma(gamma)
        return (1 - g) ** 2, (1 + g) ** 2

    monkeypatch.setattr(R, "mp_edges", wrong_edges)
    out = run_quick("rd.marchenko_pastur", tmp_path=tmp_path)
    _assert_fail(out)


def test_r7_fc_layer_initialised_orthogonal(monkeypatch, tmp_path):
    """R7: the FC layer of Fig 3 initialised orthogonal (after the Gaussian init) wherever the components are built:
    the FC then keeps rank. Before: `refuted`, because the positive control (a rank-C/2 1×1 bottleneck) still lost
    rank; now the positive control also tests the FC the library built against the quarter-circle law."""
    _private_cache(monkeypatch, tmp_path)
    orig = fig3._init_

    def orthogonal_fc(module, g, gain=1.0):
        m = orig(module, g, gain)
        if isinstance(m, FC):
            with torch.no_grad():
                torch.nn.init.orthogonal_(m.lin.weight, generator=g)
        return m

    monkeypatch.setattr(fig3, "_init_", orthogonal_fc)
    out = run_quick("rd.structural_impetus", tmp_path=tmp_path)
    _assert_fail(out)
    assert "CONTRADICTS" in out.details["per component"]["fc"]


def test_p3_psi_law_rank_with_half_log_eps(monkeypatch, tmp_path):
    """P3 (a reviewer's plant): the ψ-law rank counted against ½ log ε. Only rd.mlp50_decay's comparison and the
    Fig 1 overlay read psi_law_rank, and neither judges it; rd.lyapunov_law's positive control pins it against the
    count from the closed-form law, so the plant ends `fail` there (before: every status unchanged)."""
    _private_cache(monkeypatch, tmp_path)
    orig = R.psi_law_rank

    def half(n, L, eps):
        return orig(n, L, np.sqrt(eps))  # L·gap ≥ log √ε = ½ log ε

    monkeypatch.setattr(R, "psi_law_rank", half)
    out = run_quick("rd.lyapunov_law", tmp_path=tmp_path)
    assert out.status == "fail", (out.status, out.positive_miss)
    assert out.positive_control_result != "held as it should" and out.positive_miss >= 2


def test_fan_in_scaled_gaussian_layers_fail_thm5_and_cor1(monkeypatch, tmp_path):
    """A referee's plant: Gaussian layers drawn N(0, 1/n) (fan-in scaling) instead of RD's N(0, 1). Every exponent
    shifts by −½ log n, so the Benettin z-test and Cor 1's rate miss by far — before, both checks published that
    as `refuted`. The guard on the library's own layers (mean 0, variance 1 within 6 SE) makes them `fail`."""
    _private_cache(monkeypatch, tmp_path)
    orig = rm.draw_layers

    def fan_in(gens, dist, out):
        orig(gens, dist, out)
        if dist == "gaussian":
            out /= np.sqrt(out.shape[1])

    monkeypatch.setattr(rm, "draw_layers", fan_in)
    for cid in ("rd.lyapunov_law", "rd.gradient_explosion"):
        out = run_quick(cid, tmp_path=tmp_path)
        assert out.status == "fail", (cid, out.status, out.error)
        assert "not N(0, 1)" in (out.error or ""), out.error


def test_feature_eigenvalues_thresholded_as_singular_values_fail_mlp50(monkeypatch, tmp_path):
    """A referee's plant (P5): the PCA eigenvalues of F_L(x) counted as if they were singular values (√λ against
    ε·√λ_max, i.e. λ against ε²·λ_max): the feature dimension comes out far too high, and the check, which reads the
    curves' shape, did not notice. The check now recounts draw 0 at L = 1, 10, 50 from float64 SVDs: `fail`.
    Emulated at the count the library calls (every second call of a depth is the features')."""
    _private_cache(monkeypatch, tmp_path)
    orig = R.rank_from_singular_values
    calls = {"n": 0}

    def sqrt_for_features(s, eps):
        calls["n"] += 1
        return orig(np.sqrt(s), eps) if calls["n"] % 2 == 0 else orig(s, eps)

    monkeypatch.setattr(R, "rank_from_singular_values", sqrt_for_features)
    out = run_quick("rd.mlp50_decay", tmp_path=tmp_path)
    assert out.status == "fail", (out.status, out.error)
    assert "float64-SVD recount" in (out.error or ""), out.error
