"""Former home of the sweep experiments, kept so that ``from verify import sweep_experiments`` still works.

The experiments live in :mod:`verify.sweep.experiments`; import them from there.
"""
from verify.sweep.experiments import *  # noqa: F401,F403
from verify.sweep.experiments import EXPERIMENTS, REPLICATE, Experiment, get, run  # noqa: F401
