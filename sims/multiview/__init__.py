"""FG (Why fine-grained labels in pretraining benefit generalization?): hierarchical multi-view data models,
the two-layer ReLU learner of FG Eq 14–18, its training loop, and experiments (coarse vs fine training).
A data model of one's own: docs/datamodel.md (``register_model``, ``check_data_model``)."""
from sims.multiview.data import (Batch, DataModel, HierarchicalMultiView, LabelNoise, MODELS, SharedSubclass,
                                 ThreeLevel)
from sims.multiview.experiment import (DEFAULTS, cached_experiment, granularity_sweep, run_experiment,
                                       validate_config)
from sims.multiview.learner import TwoLayerReLU, coarse_scores, lucky_mask, mistakes
from sims.multiview.models import check_data_model, model_names, register_model, unregister_model
from sims.multiview.train import train

__all__ = ["Batch", "DataModel", "HierarchicalMultiView", "SharedSubclass", "ThreeLevel", "LabelNoise", "MODELS",
           "DEFAULTS", "run_experiment", "cached_experiment", "granularity_sweep", "validate_config",
           "TwoLayerReLU", "coarse_scores", "lucky_mask", "mistakes", "train", "register_model", "unregister_model",
           "model_names", "check_data_model"]
