"""Evaluation: retrieval quality of scorers against cosine and inversion with intervals
(:mod:`.evaluate`), adaptation curves — quality against the number of target anchors
(:mod:`.curves`) — and whether a posterior on a curve keeps the promise: paired differences to
max(target-only, isotropic control) and cosine, the anchors it saves (:mod:`.dominance`).  The function ``evaluate`` is ``anchordiv.evaluate`` (here the name is the
module's).
"""

from .curves import Curve, CurveModel, adaptation_curve, register_model
from .evaluate import Evaluation, bootstrap_interval, mean_interval, t_interval

__all__ = [
    "Curve",
    "CurveModel",
    "Evaluation",
    "adaptation_curve",
    "bootstrap_interval",
    "mean_interval",
    "register_model",
    "t_interval",
]
