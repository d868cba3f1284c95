"""Checks of posteriors: ArviZ conversion (:mod:`.uncertainty`), SBC (:mod:`.sbc`), model
criticism (:mod:`.criticism`), prior sensitivity (:mod:`.sensitivity`) and prior–target
diagnostics (:mod:`.diagnostics`); it imports :mod:`anchordiv.adaptation`, never the reverse.
The SBC function is ``anchordiv.sbc`` (``anchordiv.checks.sbc`` is its module).
"""

from .criticism import PriorComparison, compare_priors
from .diagnostics import diagnose, loo_predictive
from .families import register_checks
from .sbc import SBCResult
from .sensitivity import PriorInfluence, PriorSensitivity, prior_influence, prior_sensitivity
from .uncertainty import RetrievalUncertainty, inference_data, load_inference_data
from .uncertainty import retrieval_uncertainty, save_inference_data

__all__ = [
    "PriorComparison",
    "PriorInfluence",
    "PriorSensitivity",
    "RetrievalUncertainty",
    "SBCResult",
    "compare_priors",
    "diagnose",
    "inference_data",
    "load_inference_data",
    "loo_predictive",
    "prior_influence",
    "prior_sensitivity",
    "register_checks",
    "retrieval_uncertainty",
    "save_inference_data",
]
