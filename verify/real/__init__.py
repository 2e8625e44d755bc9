"""``theorylab analyze`` (:mod:`verify.real.analyze`): the report on a real classifier.

The torch side (models, photographs, ImageNet folders, capture, numerics) is :mod:`sims.real`; import it from
there (``from sims.real.capture import capture``; ``from sims.real.models import default_model``); nothing is
re-exported here (one place per thing).
"""
