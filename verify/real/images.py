"""The scikit-image / scikit-learn photographs, seeded crops, user folders (implementation: :mod:`sims.real.images`)."""
from sims.real.images import (  # noqa: F401
    IMAGE_SUFFIXES, SKIMAGE_PHOTOS, SKLEARN_PHOTOS, Augmentation, ImageSet, crop_batches, crop_plan, folder,
    normalizer, photographs,
)
