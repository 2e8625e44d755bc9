"""Real-model validation hooks (issue 7): the user-facing entry point.

The implementation lives in :mod:`sims.real` (so that the figures in ``paper_figs`` may use it without
importing ``verify``); this package re-exports it and adds :mod:`verify.real.analyze` (``theorylab analyze``).

    from verify.real import capture, default_model, photographs, crop_plan, crop_batches, Augmentation
    spec = default_model("lite0")
    ims = photographs()
    plan = crop_plan(ims, 512, Augmentation(), seed=0)
    res = capture(spec.module, crop_batches(ims, plan, Augmentation()),
                  layers={"logits": "output", "features": "_fc:input"})
    res.moments["logits"].second_moment      # ND Eq 2's Cov = E[f fᵀ]
"""
from verify.real.capture import CaptureResult, ClassMoments, SecondMoment, capture  # noqa: F401
from verify.real.images import Augmentation, crop_batches, crop_plan, folder, photographs  # noqa: F401
from verify.real.models import ModelSpec, default_model, load_weights, user_model  # noqa: F401
