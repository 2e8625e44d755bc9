"""Real trained networks: default models, photographs, forward-hook capture, cached logits and features.

This is the torch side of the real-model validation hooks. It lives in ``sims`` so that both
``verify`` (checks, ``theorylab analyze``) and ``paper_figs`` (figures) can use it; ``verify.real``
re-exports it as the user-facing entry point.

* :mod:`sims.real.images`   the scikit-image / scikit-learn photographs, seeded random-resized crops, folders
* :mod:`sims.real.models`   EfficientNet-Lite0/Lite1 from the installed wheels; user models ``pkg.mod:factory``
* :mod:`sims.real.capture`  ``capture(model, batches, layers=..., device=...)`` with streaming accumulators
* :mod:`sims.real.data`     cached logits/features of a model on a crop set (keyed by model, images, augmentation, seed)
* :mod:`sims.real.analysis` ND Table 1 metrics, RD ClsDim and Eq 11–12 on captured logits (numpy only)
* :mod:`sims.real.labels`   labels of one's own folder: class sub-folders (ImageFolder order) or a CSV file
* :mod:`sims.real.collapse` VC on real features: rank policy, dead channels, held-out VCI and probe loss
"""
