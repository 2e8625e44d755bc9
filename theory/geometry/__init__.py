"""Representation geometry: neural collapse, spectral dimension, CKA, CCA, RSA — exact, with one-pass mergeable
statistics where a metric allows it. Definitions, variants and tests: docs/geometry.md.

Modules (this package re-exports their public names: ``from theory.geometry import linear_cka``):

* :mod:`~theory.geometry.collapse_nc` :func:`nc1` (both class weightings; streamed from a ClassStats),
  :func:`nc2`, :func:`nc3` (bias included), :func:`nc4` (bias included), :func:`cdnv`
* :mod:`~theory.geometry.spectrum`    :func:`rankme` (σ and σ² variants), :func:`effective_rank`,
  :func:`stable_rank`, :func:`participation_ratio`, :func:`numerical_rank` (dtype-aware ε), :func:`alpha_req`
* :mod:`~theory.geometry.mp`          :func:`mp_edge`, :func:`spike_count` (Marchenko–Pastur bulk and spikes)
* :mod:`~theory.geometry.cka`         :func:`linear_cka`, :func:`linear_hsic` (biased / debiased, from data),
  :func:`cka_from_moments`, :func:`hsic_from_moments`
* :mod:`~theory.geometry.moments`     :class:`CrossMoments`, the one-pass mergeable cross-moment accumulator
* :mod:`~theory.geometry.kernel`      :func:`kernel_cka`, :func:`kernel_hsic` (RBF or linear; Gretton, Song and
  Lange estimators; exact, n×n kernels in row blocks), :func:`median_bandwidth`
* :mod:`~theory.geometry.kernel_approx` :class:`RBFFeatureCKA`, :func:`rbf_cka_rff` (RBF CKA streamed with random
  Fourier features)
* :mod:`~theory.geometry.cca`         :func:`canonical_correlations`, :func:`mean_cca`, :func:`svcca`, :func:`pwcca`
  (from streamed cross-moments)
* :mod:`~theory.geometry.rdms`        :func:`rdm`, :func:`compare_rdms`, :func:`rsa`, :func:`rsa_from_moments`
* :mod:`~theory.geometry.lidar_rank`  :func:`lidar` (the effective rank of the LDA matrix of a surrogate task)

The variability-collapse metrics of VC (Xu & Liu 2023) live in :mod:`theory.collapse` and are re-exported
here: :func:`vci`, :func:`fuzziness`, :func:`squared_distance`, :func:`cosine_similarity`, :func:`probe_loss`,
with their streaming accumulator :class:`ClassStats`.
"""
from theory.collapse import ClassStats, cosine_similarity, fuzziness, probe_loss, squared_distance, vci
from theory.geometry.cca import canonical_correlations, mean_cca, pwcca, svcca
from theory.geometry.cka import cka_from_moments, hsic_from_moments, linear_cka, linear_hsic
from theory.geometry.collapse_nc import cdnv, nc1, nc2, nc3, nc4
from theory.geometry.kernel_approx import RBFFeatureCKA, rbf_cka_rff
from theory.geometry.kernel import kernel_cka, kernel_hsic, median_bandwidth
from theory.geometry.lidar_rank import lidar
from theory.geometry.moments import CrossMoments
from theory.geometry.mp import mp_edge, spike_count, tw_threshold
from theory.geometry.rdms import compare_rdms, rdm, rsa, rsa_from_moments
from theory.geometry.spectrum import (alpha_req, covariance_eigenvalues, effective_rank, numerical_rank,
                                      participation_ratio, rankme, singular_values, stable_rank)

CrossMoments.__module__ = "theory.geometry"  # pickles name the package's public face, not the file
RBFFeatureCKA.__module__ = "theory.geometry"

__all__ = ["linear_cka", "linear_hsic", "cka_from_moments", "hsic_from_moments", "CrossMoments",
           "nc1", "nc2", "nc3", "nc4", "cdnv",
           "rankme", "effective_rank", "stable_rank", "participation_ratio", "numerical_rank", "alpha_req",
           "singular_values", "covariance_eigenvalues", "mp_edge", "spike_count", "tw_threshold",
           "ClassStats", "vci", "fuzziness", "squared_distance", "cosine_similarity", "probe_loss",
           "kernel_cka", "kernel_hsic", "median_bandwidth", "RBFFeatureCKA", "rbf_cka_rff",
           "canonical_correlations", "mean_cca", "svcca", "pwcca", "rdm", "compare_rdms", "rsa", "rsa_from_moments",
           "lidar"]
