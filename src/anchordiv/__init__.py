"""anchordiv: anchor divergences — task-specific Bregman geometry on fixed contrastive embeddings.

    import anchordiv as ad
    model = ad.fit("gaussian", anchors, tau=20.0)       # anchors [n, d], τ: encoder logit scale
    D = ad.divergence(model, queries, gallery)           # [Q, G], ascending = closer
    idx, d = ad.top_k(model, queries, gallery, k=10)

Every anchor model is defined by its cumulant ψ (``model.cumulant``); see MATH.md.
"""

__version__ = "0.1.0"

from .anchors import (KINDS, AnchorMixture, AnchorModel, Gaussian, GaussianMixture,
                      LatentGaussian, LatentSpherical, Softmax, fit, mix)
from .adapt import Posterior, adapt, load_posterior, save_posterior
from .retrieval.baselines import cosine, inversion
from .retrieval.divergence import bregman, divergence, mips_keys, mips_offset, mips_queries, top_k
from .errors import AnchorDivError
from .evaluation.evaluate import Evaluation, evaluate  # ad.evaluate is the function
from .evaluation.curves import adaptation_curve, register_model
from .retrieval.index import FaissIndex, GalleryIndex, merge_results, recall_at_k
from .io import load_model, save_model
from .retrieval.metrics import auprc, prevalence
from .provenance import (AnchorDivWarning, Embeddings, load_embeddings, resolve_tau,
                         save_embeddings)
from .checks.sbc import sbc
from .checks.uncertainty import (inference_data, load_inference_data, retrieval_uncertainty,
                                save_inference_data)
from .checks.criticism import PriorComparison, compare_priors

__all__ = ["KINDS", "AnchorDivError", "AnchorMixture", "AnchorModel", "Gaussian",
           "GaussianMixture", "LatentGaussian", "LatentSpherical", "Softmax", "__version__",
           "auprc", "bregman", "cosine", "divergence", "fit", "inversion", "load_model",
           "mips_keys", "mips_offset", "mips_queries", "mix", "prevalence", "save_model",
           "top_k"]
__all__ += ["Evaluation", "adaptation_curve", "evaluate", "register_model"]
__all__ += ["Posterior", "adapt", "load_inference_data", "load_posterior", "retrieval_uncertainty",
            "save_inference_data", "save_posterior"]
__all__ += ["FaissIndex", "GalleryIndex", "merge_results", "recall_at_k"]
__all__ += ["AnchorDivWarning", "Embeddings", "load_embeddings", "resolve_tau", "save_embeddings"]
__all__ += ["PriorComparison", "compare_priors", "inference_data", "sbc"]


def __getattr__(name):
    """Lazy submodules: ``ad.data`` (loaders and encoders) and ``ad.studies`` import on first use
    so that ``import anchordiv`` stays free of torch and nltk."""
    if name in ("data", "studies"):
        import importlib

        return importlib.import_module({"data": ".data", "studies": ".app.studies"}[name], __name__)
    raise AttributeError(f"module 'anchordiv' has no attribute {name!r}")
