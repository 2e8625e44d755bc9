"""sims.warmup compiles every numba entry point (the Makefile runs it at install)."""
from sims.warmup import compile_kernels


def test_every_entry_point_runs():
    seconds = compile_kernels()
    assert set(seconds) == {"covlasso", "covlasso_all", "covlasso_path", "lyapunov_spectrum", "benettin_given",
                            "log_top_singular", "mc_numerical_rank"}
    assert all(s >= 0 for s in seconds.values())
