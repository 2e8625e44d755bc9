"""sims.jacobian: forward = reverse = autograd loop; Eq 5 zero-padding; sub-network ranks; bad input."""
import numpy as np
import pytest
import torch

from sims import jacobian as J
from sims import rank_nets as N


@pytest.fixture(autouse=True)
def _one_thread():
    with J.single_threaded():
        yield


@pytest.fixture
def cnn():
    g = torch.Generator().manual_seed(0)
    blocks = N.cnn_blocks([3, 4, 4], g)
    x = torch.randn(2, 3, 6, 6, generator=g, dtype=torch.float64)
    f = lambda z: torch.nn.Sequential(*blocks)(z.unsqueeze(0))[0]  # noqa: E731
    return blocks, x, f


def test_full_jacobian_modes_agree(cnn):
    _, x, f = cnn
    jf, jr = J.jacobian(f, x[0], mode="forward"), J.jacobian(f, x[0], mode="reverse")
    assert jf.shape == (144, 108)
    assert torch.allclose(jf, jr, atol=1e-13)
    assert torch.allclose(jf, J.jacobian_loop(f, x[0]), atol=1e-13)
    assert torch.allclose(jf, J.jacobian(f, x[0], chunk_size=7), atol=1e-13)


def test_partial_jacobian_is_sub_matrix(cnn):
    _, x, f = cnn
    idx = J.patch_indices((3, 6, 6), 2)
    assert len(idx) == 12
    full = J.jacobian(f, x[0])
    for mode in ("forward", "reverse"):
        assert torch.allclose(J.partial_jacobian(f, x[0], idx, mode=mode), full[:, idx], atol=1e-13)
    # Eq 5 literally: J_{f∘ψ} at Sub(x) = Sub(J_f) at ψ(Sub(x))
    u = x[0].reshape(-1)[idx]
    jg = torch.func.jacrev(lambda v: f(J.pad(v, idx, (3, 6, 6))))(u).reshape(-1, 12)
    assert torch.allclose(J.partial_jacobian(f, x[0], idx, at="padded"), jg, atol=1e-13)
    mask = np.zeros((3, 6, 6), dtype=bool)
    mask.reshape(-1)[idx] = True
    assert torch.allclose(J.partial_jacobian(f, x[0], mask), full[:, idx], atol=1e-13)


def test_subnetwork_jacobians_and_ranks(cnn):
    blocks, x, f = cnn
    js = J.subnetwork_jacobians(blocks, x, sample=1)
    assert torch.allclose(js[-1], J.jacobian(f, x[1]), atol=1e-13)
    r = J.subnetwork_ranks(blocks, x)
    assert len(r) == 2 and r[1] <= r[0] <= 108
    # a linear bottleneck: rank 3 after the 3-wide layer, then it cannot come back
    g = torch.Generator().manual_seed(1)
    lin = [torch.nn.Linear(8, 3).double(), torch.nn.Linear(3, 8).double()]
    assert J.subnetwork_ranks(lin, torch.randn(2, 8, dtype=torch.float64, generator=g)) == [3, 3]


def test_sample_coupling_batchnorm():
    """BatchNorm couples samples: the per-sample Jacobian holds the others fixed (checked by autograd)."""
    g = torch.Generator().manual_seed(2)
    bn = N.component("bn", 2, 3, g)
    x = torch.randn(5, 2, 3, 3, generator=g, dtype=torch.float64)

    def f(u):
        return bn(torch.cat([x[:1], u.unsqueeze(0), x[2:]]))[1]

    ref = torch.func.jacrev(f)(x[1]).reshape(18, 18)
    assert torch.allclose(J.subnetwork_jacobians([bn], x, sample=1)[0], ref, atol=1e-12)


def test_bad_input(cnn):
    blocks, x, f = cnn
    bad = x.clone()
    bad[0, 1, 2, 3] = float("nan")
    with pytest.raises(ValueError, match="non-finite"):
        J.jacobian(f, bad[0])
    with pytest.raises(ValueError):
        J.jacobian(f, torch.zeros(0, dtype=torch.float64))
    with pytest.raises(ValueError):
        J.subnetwork_ranks(blocks, x, eps=0.0)
    with pytest.raises(ValueError):
        J.subnetwork_ranks(blocks, x, eps=-1.0)
    with pytest.raises(ValueError, match="do not compose"):
        J.subnetwork_ranks(blocks + N.mlp_blocks([5, 2], torch.Generator()), x)
    with pytest.raises(ValueError):
        J.subnetwork_ranks([], x)
    with pytest.raises(ValueError):
        J.partial_jacobian(f, x[0], [1, 1])
    with pytest.raises(ValueError):
        J.partial_jacobian(f, x[0], [10_000])
    with pytest.raises(ValueError):
        J.patch_indices((3, 6, 6), 7)
