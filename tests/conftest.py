import os

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")
# `theorylab verify` run in-process by the tests: one process, so monkeypatched functions (planted bugs) reach the
# checks; tests/test_parallel.py runs the worker processes on purpose.
os.environ["THEORYLAB_JOBS"] = "1"


#: Numerics-sensitive modules: float computations compared within an error analysis (streamed vs two-pass, merged
#: vs one pass, float32 forward passes under another batching, FG float32 training against a float64 mirror, torch
#: against numpy). `make test` runs them a second time under other CPU kernels and one thread (``KERNELS`` in the
#: Makefile), so a tolerance that holds on one machine's rounding only shows up in CI.
KERNEL_MODULES = ("test_geometry_capture", "test_geometry_cka", "test_geometry_moments", "test_geometry_collapse",
                  "test_geometry_spectrum", "test_collapse_torch", "test_collapse_stats", "test_collapse_linalg",
                  "test_collapse_robust", "test_jacobian", "test_multiview", "test_gpu_fg", "test_covlasso",
                  "test_neural_dependency", "test_nd_planted_bugs")


def pytest_collection_modifyitems(config, items):
    """Tests marked ``cuda`` need a CUDA GPU: without one they skip, saying why (``make gpu-check`` runs them).
    Tests of :data:`KERNEL_MODULES` are marked ``kernels``."""
    for it in items:
        if it.module is not None and it.module.__name__.rpartition(".")[2] in KERNEL_MODULES:
            it.add_marker(pytest.mark.kernels)
    cuda = [it for it in items if "cuda" in it.keywords]
    if not cuda:
        return
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (torch.cuda.is_available() is False); run `make gpu-check` on one")
    for it in cuda:
        it.add_marker(skip)
