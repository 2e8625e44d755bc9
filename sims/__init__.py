"""Experiments that generate data and train (torch, numba).

``import theory`` first: it sets numba's cache folder before ``sims.random_matrix`` imports numba.
"""
import theory  # noqa: F401
