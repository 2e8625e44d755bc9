"""The FG experiment config: every key and its default (:func:`sims.multiview.experiment.validate_config` checks a
config against these keys; :func:`sims.multiview.models.build` compares the data keys a model does not take with
their defaults). The defaults are the tuned regime (:mod:`sims.multiview.experiment`'s docstring)."""
from __future__ import annotations

DEFAULTS: dict = {
    "model": "hierarchical",      # data model: hierarchical | shared_subclass | three_level | label_noise
    "d": 100,                     # patch dimension (FG B.3 item 1: 'sufficiently large')
    "P": 16,                      # patches per sample (item 13)
    "s": 3.0,                     # expected common / subclass patches (item 10)
    "k": 8,                       # subclasses per superclass, k₊ = k₋ (item 4)
    "iota": 0.1,                  # α ∈ [1 − ι, 1 + ι] (item 7)
    "iota_lower": 0.25,           # feature-noise α′ ∈ [ι_lower, ι_upper] (item 8; see docs: ι_lower > 1/k)
    "iota_upper": 0.5,
    "noise_norm": 0.5,            # σ_ζ √d (item 11 rescaled)
    "hard_noise_norm": 2.0,       # σ_ζ* √d of the hard sample's big noise patch (item 12 rescaled)
    "dictionary": "identity",     # identity | random (orthonormal)
    "counts": "binomial",         # patch-count law: binomial (B.1 item 5 at small s) | exact (s ≥ polylog d, B.3 item 10)
    "m_coarse": 800,              # neurons per superclass (Prop 1: Θ(d^{2+2c0}))
    "m_fine": 100,                # neurons per subclass (Prop 2)
    "lucky": 8.0,                 # expected lucky neurons per feature: sets c_b via m·Q(√(c_b log d)) = lucky
    "c_b_coarse": "auto",         # or a number (the paper: 4 + 2c0)
    "c_b_fine": "auto",           # or a number (the paper: 2 + 2c0)
    "sigma0": 0.01,               # w⁽⁰⁾ ~ N(0, σ0² I) (item 14)
    "eta": 0.02,                  # step size, Θ(σ0) (item 14)
    "steps": 150,
    "batch": 32,                  # N, exactly N/(2k) per subclass (B.1 item 9)
    "eval_every": 25,
    "n_test": 256,                # easy and hard test samples each (multiple of the number of fine classes)
    "seed": 0,
    "dtype": "float32",
    "trainings": ["coarse", "fine"],
    "shared": 1,                  # shared_subclass: how many subclass features both superclasses share
    "k2": 2,                      # three_level: leaves per class
    "flip": 0.1,                  # label_noise: probability of a flipped training label
}
