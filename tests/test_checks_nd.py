"""The foundation's ND checks pass in quick mode and their negative controls fail."""
import pytest

from tests.helpers import run_quick


@pytest.mark.parametrize("cid", ["nd.floor_closed_form", "nd.lambda_max", "nd.relative_floor", "nd.det_ratio_unstable"])
def test_nd_closed_form_checks(cid, tmp_path):
    out = run_quick(cid, tmp_path=tmp_path)
    assert out.status == "pass", (out.error, out.details)
    assert out.negative_control_result == "failed as it should"


def test_symbolic_statements_fail_when_planted():
    from theory.symbolic import nd as sym

    assert all(sym.vanishes(e) for e in sym.floor_residuals(3, 1).values())
    assert not all(sym.vanishes(e) for e in sym.floor_residuals(3, 1, planted=True).values())
    assert not all(sym.vanishes(e) for e in sym.relative_floor_residual(3, 0, planted=True).values())
