"""sims.threads: one place that limits torch and BLAS thread pools, restored afterwards."""
import torch
from threadpoolctl import threadpool_info

from sims.threads import single_threaded


def _blas_threads():
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


def test_limits_inside_and_restores_after():
    before_t, before_b = torch.get_num_threads(), _blas_threads()
    torch.set_num_threads(2)
    try:
        with single_threaded():
            assert torch.get_num_threads() == 1
            assert all(n == 1 for n in _blas_threads())
        assert torch.get_num_threads() == 2 and _blas_threads() == before_b
    finally:
        torch.set_num_threads(before_t)


def test_none_leaves_a_pool_alone_and_works_as_decorator():
    torch.set_num_threads(2)

    @single_threaded(torch_threads=None, user_api="blas")  # the OpenMP limit would reach torch's pool too
    def inside():
        return torch.get_num_threads(), _blas_threads()

    t, b = inside()
    assert t == 2 and all(n == 1 for n in b)
    assert inside() == (t, b)  # reusable: a fresh context each call


def test_restored_when_the_block_raises():
    torch.set_num_threads(2)
    try:
        with single_threaded():
            raise KeyError("planted")
    except KeyError:
        pass
    assert torch.get_num_threads() == 2
