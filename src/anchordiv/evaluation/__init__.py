"""Evaluation: retrieval quality of scorers against cosine and inversion with intervals
(:mod:`.evaluate`), adaptation curves — quality against the number of target anchors
(:mod:`.curves`) — whether a posterior on a curve keeps the promise: paired differences to
max(target-only, isotropic control) and cosine, the anchors it saves (:mod:`.dominance`) —
and what each geometry retrieves: the top-k of a few queries under every scorer
(:mod:`.retrieved`).  The function ``evaluate`` is ``anchordiv.evaluate`` (here the name is
the module's).
"""

from . import dominance
from .curves import Curve, CurveModel, adaptation_curve, register_model
from .evaluate import Evaluation, bootstrap_interval, mean_interval, t_interval  # noqa: F401
from .retrieved import Neighbours, neighbours

__all__ = [
    "Curve",
    "CurveModel",
    "Evaluation",
    "Neighbours",
    "adaptation_curve",
    "dominance",
    "neighbours",
    "register_model",
]
