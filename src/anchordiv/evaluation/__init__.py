"""Evaluation: retrieval quality of scorers against cosine and inversion with intervals
(:mod:`.evaluate`), and adaptation curves — quality against the number of target anchors
(:mod:`.curves`).
"""

from .curves import Curve, CurveModel, adaptation_curve, register_model
from .evaluate import Evaluation, bootstrap_interval, evaluate, mean_interval, t_interval

__all__ = ["Curve", "CurveModel", "Evaluation", "adaptation_curve", "bootstrap_interval",
           "evaluate", "mean_interval", "register_model", "t_interval"]
