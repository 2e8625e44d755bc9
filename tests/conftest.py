import os

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")
# `theorylab verify` run in-process by the tests: one process, so monkeypatched functions (planted bugs) reach the
# checks; tests/test_parallel.py runs the worker processes on purpose.
os.environ["THEORYLAB_JOBS"] = "1"


def pytest_collection_modifyitems(config, items):
    """Tests marked ``cuda`` need a CUDA GPU: without one they skip, saying why (``make gpu-check`` runs them)."""
    cuda = [it for it in items if "cuda" in it.keywords]
    if not cuda:
        return
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (torch.cuda.is_available() is False); run `make gpu-check` on one")
    for it in cuda:
        it.add_marker(skip)
