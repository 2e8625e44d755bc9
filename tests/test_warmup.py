"""sims.warmup compiles every numba entry point (the Makefile runs it at install)."""
from sims.warmup import compile_kernels


def test_every_entry_point_runs():
    seconds = compile_kernels()
    assert set(seconds) == {"covlasso", "covlasso_all", "covlasso_path", "lyapunov_spectrum", "benettin_given",
                            "log_top_singular", "mc_numerical_rank"}
    assert all(s >= 0 for s in seconds.values())


def test_the_two_install_groups_cover_every_entry_point():
    from sims.warmup import GROUPS

    names = [n for g in GROUPS for n in g]
    assert len(names) == len(set(names))                          # each kernel compiled by one process
    assert set(compile_kernels(only=("covlasso",))) == {"covlasso"}  # a group compiles only its own
    assert set(names) == {"covlasso", "covlasso_all", "covlasso_path", "lyapunov_spectrum", "benettin_given",
                          "log_top_singular", "mc_numerical_rank"}
