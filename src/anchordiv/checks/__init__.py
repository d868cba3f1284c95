"""Checks of posteriors: ArviZ conversion (:mod:`.uncertainty`), simulation-based calibration
(:mod:`.sbc`), model criticism and comparison (:mod:`.criticism`), prior–target diagnostics
(:mod:`.diagnostics`).  This layer imports :mod:`anchordiv.adaptation`, never the reverse.
The SBC function is ``anchordiv.sbc`` (``anchordiv.checks.sbc`` is its module).
"""

from .criticism import PriorComparison, compare_priors
from .diagnostics import diagnose, loo_predictive
from .sbc import SBCResult
from .uncertainty import (
    RetrievalUncertainty,
    inference_data,
    load_inference_data,
    retrieval_uncertainty,
    save_inference_data,
)

__all__ = [
    "PriorComparison",
    "RetrievalUncertainty",
    "SBCResult",
    "compare_priors",
    "diagnose",
    "inference_data",
    "load_inference_data",
    "loo_predictive",
    "retrieval_uncertainty",
    "save_inference_data",
    "sbc",
]
