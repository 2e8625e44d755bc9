"""The ND closed-form checks in quick mode: status, misses in tolerance units, controls; the symbolic statements."""
import math

import numpy as np
import pytest

from tests.helpers import run_quick


@pytest.mark.parametrize("cid", ["nd.floor_closed_form", "nd.lambda_max", "nd.relative_floor", "nd.det_ratio_unstable"])
def test_nd_closed_form_checks(cid, tmp_path):
    out = run_quick(cid, tmp_path=tmp_path)
    assert out.status == "pass", (out.error, out.details)
    assert out.negative_control_result == "failed as it should"
    assert out.miss is not None and 0 <= out.miss <= 1
    assert out.control_miss is not None and out.control_miss > 1


def test_floor_check_includes_singular_heterogeneous_cases(tmp_path):
    out = run_quick("nd.floor_closed_form", tmp_path=tmp_path)
    zeros, nonzeros = out.details["categories with floor 0 / > 0"]
    assert out.details["singular covariances"] >= 40 and zeros > 200 and nonzeros > 20
    worst = out.details["worst error per route (κε units; singular: κ_r·ε)"]
    assert worst["singular: planted floors"] <= 100 and worst["singular: lstsq on sampled logits"] <= 100


def test_lambda_max_control_is_the_sklearn_convention(tmp_path):
    out = run_quick("nd.lambda_max", tmp_path=tmp_path)
    assert out.control_measured == pytest.approx(1.0, rel=1e-2)  # λ_true = 2·‖b̂‖∞: off by a factor 2
    assert out.control_miss == pytest.approx(1000, rel=1e-2)


def test_det_ratio_separates_under_overflow_from_conditioning(tmp_path):
    out = run_quick("nd.det_ratio_unstable", tmp_path=tmp_path)
    d = out.details
    size = d["under/overflow axis: n grows at κ ≤ 10 (blocks of 10, mpmath reference per block)"]
    n = np.array(size["n"])
    for key in ("det ratio failing, scale 0.01", "scale 100", "0.01·I_n (κ = 1)"):
        assert np.all(np.array(size[key])[n >= 200] == 1.0) and np.all(np.array(size[key])[n <= 100] == 0.0)
    cond = d["conditioning axis (n = 10, 50-digit mpmath reference)"]
    assert max(cond["det ratio failing (> 1 % or NaN)"]) == 0.0
    assert float(cond["det ratio (LU) worst relative error"][-1]) < 1e-3  # κ = 1e12, σ_min ≈ 1e-12: still accurate
    assert "under/overflow" in out.erratum and "mechanism" in out.erratum and "size" not in out.erratum
    det, slog = d["under/overflow at n = 400: worst relative error of LU det ratio, exp(slogdet difference)"]
    assert not det < 1e-2 and slog < 1e-8  # the same LU without the product of eigenvalues works at n = 400
    assert 1 < out.control_miss < 1e5  # the paper's mechanism misses by a modest, finite factor


def test_symbolic_statements_fail_when_planted():
    from theory.symbolic import nd as sym

    assert all(sym.vanishes(e) for e in sym.floor_residuals(3, 1).values())
    assert not all(sym.vanishes(e) for e in sym.floor_residuals(3, 1, planted=True).values())
    assert all(sym.vanishes(e) for e in sym.relative_floor_residual(3, 0).values())
    assert not all(sym.vanishes(e) for e in sym.relative_floor_residual(3, 0, planted=True).values())
    # the centred formula is right when the means vanish: the planted statements differ only through μ
    import sympy as sp

    res = sym.relative_floor_residual(2, 0, planted=True)
    assert all(sym.vanishes(e.subs({sp.Symbol("mu0"): 0, sp.Symbol("mu1"): 0})) for e in res.values())


def test_vanishes_is_exact_both_ways():
    import sympy as sp

    from theory.symbolic import nd as sym

    x, y = sp.symbols("c00 c01")
    assert sym.vanishes((x**2 - y**2) / (x - y) - (x + y))
    assert not sym.vanishes((x**2 - y**2) / (x - y) - (x + y) + sp.Rational(1, 10**30))
    assert not math.isnan(float(sym.vanishes(x - x)))
