"""sims.collapse_torch: the torch accumulator equals theory.collapse.ClassStats (CPU here; CUDA with make gpu-check)."""
import numpy as np
import pytest
import torch

from sims.collapse_torch import TorchClassStats
from theory import collapse as vc


def _check(device):
    rng = np.random.default_rng(0)
    K, p = 6, 9
    counts = np.array([1, 4, 30, 7, 12, 2])
    y = rng.permutation(np.repeat(np.arange(K), counts))
    H = 2 * rng.normal(size=(K, p))[y] + rng.normal(size=(len(y), p)) + 40.0
    ts = TorchClassStats(p, K, device)
    for s in range(0, len(y), 5):
        ts.update(torch.tensor(H[s:s + 5], dtype=torch.float32, device=device), torch.tensor(y[s:s + 5], device=device))
    st = ts.to_class_stats()
    ref = vc.ClassStats.from_features(H.astype(np.float32), y, batch=5)
    np.testing.assert_allclose(st.sigma_t(), ref.sigma_t(), rtol=0, atol=1e-11 * np.abs(ref.sigma_t()).max())
    np.testing.assert_allclose(st.unit_sums, ref.unit_sums, atol=1e-12)
    m, m0 = vc.metrics(st), vc.metrics(ref)
    for k in ("vci", "fuzziness", "squared_distance", "cosine_similarity", "probe_loss"):
        assert m[k] == pytest.approx(m0[k], rel=1e-10), k
    st.update(H[:3], y[:3])  # the host ClassStats carries on
    assert st.n == len(y) + 3


def test_torch_accumulator_matches_classstats_cpu():
    _check("cpu")


@pytest.mark.cuda
def test_torch_accumulator_matches_classstats_cuda():
    _check("cuda")


@pytest.mark.parametrize("call, exc, match", [
    (lambda t: t.update(torch.ones(2, 3, dtype=torch.complex64), [0, 1]), TypeError, "real numeric"),
    (lambda t: t.update(torch.ones(2, 4), [0, 1]), ValueError, "shape"),
    (lambda t: t.update(torch.ones(2, 3), [0.0, 1.0]), ValueError, "integer labels"),
    (lambda t: t.update(torch.ones(2, 3), [0, 5]), ValueError, r"\[0, 2\)"),
    (lambda t: t.update(torch.full((2, 3), float("nan")), [0, 1]), ValueError, "non-finite"),
    (lambda t: t.update(torch.full((2, 3), 1e300, dtype=torch.float64), [0, 1]), ValueError, "2\\^250"),
])
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call(TorchClassStats(3, 2))


def _bench():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_collapse.py"
    spec = importlib.util.spec_from_file_location("bench_collapse", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_bench_gpu_path_runs_on_cpu_and_agrees():
    """The benchmark's GPU column code, on the CPU device: the device accumulator gives the host's VCI."""
    bench = _bench()
    *_, m = bench.run_gpu(600, 16, 10, 200, device="cpu")
    *_, m_host, _ = bench.run(600, 16, 10, 200)
    assert m["vci"] == pytest.approx(m_host["vci"], rel=1e-12)


@pytest.mark.cuda
def test_bench_gpu_column_cuda(capsys):
    _bench().gpu_column(2000, 64, 20, 500)
    assert "TorchClassStats.update" in capsys.readouterr().out
