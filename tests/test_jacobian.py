"""sims.jacobian: forward = reverse = autograd loop; Eq 5 zero-padding; sub-network ranks; bad input."""
import numpy as np
import pytest
import torch

from sims import jacobian as J
from sims import rank_components as fig3
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
    bn = fig3.component("bn", 2, 3, g)
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


def test_bad_input_more(cnn):
    blocks, x, f = cnn
    with pytest.raises(ValueError, match="chunk_size"):
        J.jacobian(f, x[0], chunk_size=0)
    with pytest.raises(ValueError, match="chunk_size"):
        J.subnetwork_jacobians(blocks, x, chunk_size=2.5)
    with pytest.raises(ValueError, match="sample"):
        J.subnetwork_jacobians(blocks, x, sample=1.0)
    with pytest.raises(ValueError, match="eps"):
        J.subnetwork_ranks(blocks, x, eps="0.1")
    with pytest.raises(ValueError, match="eps"):
        J.subnetwork_ranks(blocks, x, eps=float("nan"))
    with pytest.raises(ValueError):
        J.jacobian(f, x[0].to(torch.complex128))
    with pytest.raises(ValueError, match="patch"):
        J.patch_indices((3, 6, 6), 2.5)
    with pytest.raises(ValueError, match="shape"):
        J.patch_indices((3, 6.0, 6), 2)
    with pytest.raises(ValueError, match="channels"):
        N.cnn_blocks([3, 4.5], torch.Generator())
    with pytest.raises(ValueError, match="component"):
        fig3.component("dropout", 4, 8, torch.Generator())
    for kw in (dict(seed=-1), dict(seed=None), dict(seed=1.5), dict(components=["dropout"]), dict(jac_batch=0),
               dict(batch=1)):
        with pytest.raises(ValueError):
            fig3.structural_impetus(**{**dict(channels=2, batch=20, jac_batch=2), **kw})
    for kw in (dict(seed=-1), dict(n=0), dict(depths=[3, 2]), dict(depths=[60]), dict(samples=1)):
        with pytest.raises(ValueError):
            N.mlp50_decay(**{**dict(n=4, depth=5, draws=1, samples=10), **kw})


@pytest.mark.parametrize("scale", [1e-150, 1e150])
def test_ranks_are_scale_invariant(scale):
    """Rank of a Jacobian scaled by 1e±150 (a linear map, so J scales exactly): the same numerical rank."""
    g = torch.Generator().manual_seed(3)
    lin = [torch.nn.Linear(8, 3, bias=False).double(), torch.nn.Linear(3, 8, bias=False).double()]
    x = torch.randn(2, 8, dtype=torch.float64, generator=g)
    base = J.subnetwork_ranks(lin, x)
    with torch.no_grad():
        lin[1].weight.mul_(scale)
    assert J.subnetwork_ranks(lin, x) == base == [3, 3]
    assert np.allclose(J.singular_values(scale * torch.eye(3, dtype=torch.float64)) / scale, 1.0, rtol=1e-14)


# ----------------------------------------------------------------------------- CUDA (make gpu-check)

@pytest.mark.cuda
def test_jacobians_on_cuda_agree_with_cpu(cnn):
    """float64 on the GPU: every Jacobian entry within 1e-12 of the CPU's (entries O(1); cuDNN and the CPU
    convolution differ by summation order only, ~1e-15)."""
    import copy

    blocks, x, f = cnn
    blocks_g = [copy.deepcopy(b).to("cuda") for b in blocks]
    seq_g = torch.nn.Sequential(*blocks_g)
    fg = lambda z: seq_g(z.unsqueeze(0))[0]  # noqa: E731
    xg = x.to("cuda")
    idx = J.patch_indices((3, 6, 6), 2)
    for mode in ("forward", "reverse"):
        jg = J.jacobian(fg, xg[0], mode=mode)
        assert jg.device.type == "cuda"
        assert torch.allclose(jg.cpu(), J.jacobian(f, x[0], mode=mode), rtol=0, atol=1e-12)
        pg = J.partial_jacobian(fg, xg[0], idx, mode=mode, at="padded")
        assert torch.allclose(pg.cpu(), J.partial_jacobian(f, x[0], idx, mode=mode, at="padded"), rtol=0, atol=1e-12)
    assert J.subnetwork_ranks(blocks_g, xg) == J.subnetwork_ranks(blocks, x)
    for a, b in zip(J.subnetwork_jacobians(blocks_g, xg, sample=1), J.subnetwork_jacobians(blocks, x, sample=1)):
        assert torch.allclose(a.cpu(), b, rtol=0, atol=1e-12)


@pytest.mark.cuda
def test_float32_jacobian_on_cuda_within_float32_roundoff(cnn):
    """float32 with TF32 off: within 1e-5 of max|J| of the CPU (float32 roundoff over a few layers; TF32 would
    give ~1e-3)."""
    import copy

    blocks, x, _ = cnn
    old = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        b32 = [copy.deepcopy(b).float() for b in blocks]
        seq, seq_g = torch.nn.Sequential(*b32), torch.nn.Sequential(*[copy.deepcopy(b).cuda() for b in b32])
        jc = J.jacobian(lambda z: seq(z.unsqueeze(0))[0], x[0].float())
        jg = J.jacobian(lambda z: seq_g(z.unsqueeze(0))[0], x[0].float().cuda())
        assert float((jg.cpu() - jc).abs().max() / jc.abs().max()) <= 1e-5
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


@pytest.mark.cuda
def test_rank_nets_are_device_agnostic(tmp_path, monkeypatch):
    """The zoo and the Fig 3 experiment on CUDA give the CPU's ranks (same weights: drawn on the CPU)."""
    monkeypatch.setenv("THEORYLAB_CACHE", str(tmp_path))
    for make, x in ((lambda dev: N.mlp_blocks([12, 12, 6, 12], torch.Generator().manual_seed(0), device=dev),
                     torch.randn(2, 12, dtype=torch.float64)),
                    (lambda dev: N.residual_blocks(3, 2, torch.Generator().manual_seed(0), device=dev),
                     torch.randn(2, 3, 6, 6, dtype=torch.float64)),
                    (lambda dev: N.attention_blocks(8, 2, torch.Generator().manual_seed(0), device=dev),
                     torch.randn(2, 4, 8, dtype=torch.float64))):
        assert J.subnetwork_ranks(make("cuda"), x.cuda(), eps=1e-9) == J.subnetwork_ranks(make(None), x, eps=1e-9)
    comps = fig3.COMPONENTS + fig3.CONTROLS
    cpu = fig3.structural_impetus(4, 300, 4, seed=1, components=comps, device="cpu")
    gpu = fig3.structural_impetus(4, 300, 4, seed=1, components=comps, device="cuda")
    for c in comps:
        for key in ("jac", "pca"):
            assert (gpu[c][key]["before"], gpu[c][key]["after"]) == (cpu[c][key]["before"], cpu[c][key]["after"])
            assert gpu[c][key]["margin"] == pytest.approx(cpu[c][key]["margin"], rel=1e-6, abs=1e-9)
