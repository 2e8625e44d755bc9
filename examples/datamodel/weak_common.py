"""A data model of one's own, as a plugin: the paper's model (FG Def 4.1–4.4, App B.1) with a weaker common
feature. Every common-feature patch α·v_y + ζ becomes strength·α·v_y + ζ (α ~ U[1 − ι, 1 + ι], B.1 item 7), the
rest of the sample as in the paper.

    theorylab sweep examples/datamodel/compare.toml --plugins weak_common      # from examples/datamodel, see docs/datamodel.md
    theorylab sim multiview --config my.toml --plugins weak_common             # my.toml: model = "weak_common"

or, without registering it, ``model = "weak_common:WeakCommon"`` in a config (the module on sys.path). Its
keyword parameter ``strength`` becomes a config key of this model (default 0.3), so a sweep can vary it.
"""
import torch

from sims.multiview import HierarchicalMultiView, register_model
from sims.multiview.data import COMMON


class WeakCommon(HierarchicalMultiView):
    """The paper's model with every common-feature patch's coefficient α scaled by ``strength``."""

    def __init__(self, *args, strength: float = 0.3, **kw):
        if not 0 < strength <= 1:
            raise ValueError(f"strength must lie in (0, 1], got {strength}")
        self.strength = float(strength)
        super().__init__(*args, **kw)

    def _coefficients(self, kinds, generator, device, dtype):
        coef = super()._coefficients(kinds, generator, device, dtype)
        return torch.where(kinds == COMMON, self.strength * coef, coef)


register_model("weak_common", WeakCommon)
