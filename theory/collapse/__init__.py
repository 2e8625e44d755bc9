"""VC: one-pass class statistics, Σ_W / Σ_B / Σ_T, VCI and the older variability-collapse metrics.

Paper: Xu & Liu, "Quantifying the Variability Collapse of Neural Networks" (VC). Notation as in VC Sec 3.1:
features h ∈ R^p, K classes, class means μ_k, global mean μ_G, class priors π_k = n_k/N, and

* Σ_W = (1/N) Σ_k Σ_i (h_{k,i} − μ_k)(h_{k,i} − μ_k)ᵀ          (VC Eq 1; 1/(KN) for a balanced set)
* Σ_B = Σ_k π_k (μ_k − μ_G)(μ_k − μ_G)ᵀ                        (VC Eq 2; (1/K) Σ_k for a balanced set)
* Σ_T = (1/N) Σ_k Σ_i (h_{k,i} − μ_G)(h_{k,i} − μ_G)ᵀ = Σ_B + Σ_W  (VC Eq 3, Eq 7)

The paper assumes a balanced set (n_k = N/K); the weights π_k are the extension it mentions ("readily extended
to imbalanced datasets") and keep Σ_T = Σ_B + Σ_W exact. Every metric reduces to the paper's formula when the
classes are balanced; the probe loss then weights classes by π_k² (:mod:`theory.collapse.probe`).

Modules (this package re-exports their public names, so ``from theory.collapse import vci`` works):

* :mod:`~theory.collapse.stats`    :class:`ClassStats`, the mergeable accumulator (Eq 1–3), scale-safe store
* :mod:`~theory.collapse.linalg`   Σ_T† traces, Σ_B eigenpairs, the invariant and original frames
* :mod:`~theory.collapse.metrics`  :func:`vci` (Def 5.3), :func:`trace_ratio` (Thm 5.2), :func:`fuzziness`,
  :func:`squared_distance` (Eq 4), :func:`cosine_similarity` / :func:`class_separation` (Sec 3.2),
  :func:`vb_split` / :func:`vb_basis` (Fig 1), :func:`spectra` (Fig 2), :func:`metrics` (all at once)
* :mod:`~theory.collapse.probe`    :func:`probe_loss` (Thm 5.1, with priors), :func:`probe_loss_lstsq`
* :mod:`~theory.collapse.transfer` :func:`mlog` (Eq 6)
"""
from theory.collapse.metrics import (class_separation, cosine_distances, cosine_similarity, fuzziness, metrics,
                                     spectra, squared_distance, trace_ratio, vb_basis, vb_split, vci)
from theory.collapse.probe import probe_loss, probe_loss_balanced, probe_loss_lstsq, weighted_trace
from theory.collapse.stats import EPS, ClassStats, as_stats
from theory.collapse.transfer import mlog

ClassStats.__module__ = "theory.collapse"  # pickles name the package's public face, not the file

__all__ = ["ClassStats", "as_stats", "EPS", "vci", "trace_ratio", "fuzziness", "squared_distance",
           "cosine_distances", "cosine_similarity", "class_separation", "vb_split", "vb_basis", "spectra",
           "metrics", "probe_loss", "probe_loss_balanced", "probe_loss_lstsq", "weighted_trace", "mlog"]
