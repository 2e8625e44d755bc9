"""Forward-hook capture with streaming accumulators (implementation: :mod:`sims.real.capture`)."""
from sims.real.capture import CaptureResult, ClassMoments, SecondMoment, capture  # noqa: F401
