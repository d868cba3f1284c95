"""anchordiv: anchor divergences — task-specific Bregman geometry on fixed contrastive embeddings.

    import anchordiv as ad
    model = ad.fit("gaussian", anchors, tau=20.0)       # anchors [n, d], τ: encoder logit scale
    D = ad.divergence(model, queries, gallery)           # [Q, G], ascending = closer
    idx, d = ad.top_k(model, queries, gallery, k=10)

Every anchor model is defined by its cumulant ψ (``model.cumulant``); see docs/mathematics.md, "Cumulant and divergence".
"""

#: The package version: the one source (pyproject reads it, ``anchordiv --version`` prints it).
__version__ = "0.5.1"

# First: anchordiv.threads sets $XLA_FLAGS (one CPU thread) before anything imports JAX.
from . import threads as _threads  # noqa: F401

# Each layer's user-facing names; the rest live in the subpackages (ad.anchors, ...).
from .errors import AnchorDivError
from .provenance import AnchorDivWarning, Embeddings, load_embeddings, resolve_tau, save_embeddings
from .anchors import AnchorModel, Gaussian, fit, mix
from .io import bundle_digest, load_model, save_model, shipped_priors
from .retrieval.baselines import cosine, inversion
from .retrieval.divergence import divergence, top_k
from .retrieval.index import FaissIndex, GalleryIndex
from .retrieval.metrics import auprc
from .adaptation import SVI, BinghamPrior, Conjugate, Family, Projectable, DiagonalPrior
from .adaptation import DirichletNIWPrior, FactorPrior, LKJPrior, Exact, NIWPrior, NUTS, Posterior
from .adaptation import PosteriorBinghamPrior, SpectralPrior, StructuredPrior, adapt, infer
from .adaptation import load_posterior, load_prior, save_posterior
from .adaptation.registry import family
from .checks.criticism import compare_priors
from .checks.sbc import sbc
from .checks.sensitivity import prior_sensitivity
from .checks.uncertainty import inference_data, load_inference_data, retrieval_uncertainty
from .checks.uncertainty import save_inference_data
from .evaluation.curves import adaptation_curve, register_model
from .evaluation.evaluate import evaluate
from . import plots

__all__ = [
    "__version__",
    "AnchorDivError",
    "AnchorDivWarning",
    # embeddings and saved models
    "Embeddings",
    "load_embeddings",
    "save_embeddings",
    "resolve_tau",
    "bundle_digest",
    "load_model",
    "save_model",
    "shipped_priors",
    # anchor models and retrieval
    "AnchorModel",
    "Gaussian",
    "fit",
    "mix",
    "divergence",
    "top_k",
    "cosine",
    "inversion",
    "GalleryIndex",
    "FaissIndex",
    "auprc",
    # priors, inference, posteriors
    "NIWPrior",
    "BinghamPrior",
    "PosteriorBinghamPrior",
    "DirichletNIWPrior",
    "FactorPrior",
    "LKJPrior",
    "DiagonalPrior",
    "SpectralPrior",
    "StructuredPrior",
    "load_prior",
    # writing a family of one's own
    "Family",
    "family",
    "Conjugate",
    "Projectable",
    "Exact",
    "NUTS",
    "SVI",
    "infer",
    "adapt",
    "Posterior",
    "save_posterior",
    "load_posterior",
    # checks
    "inference_data",
    "save_inference_data",
    "load_inference_data",
    "retrieval_uncertainty",
    "compare_priors",
    "prior_sensitivity",
    "sbc",
    # evaluation
    "evaluate",
    "adaptation_curve",
    "register_model",
    # figures (matplotlib, imported when a figure is drawn)
    "plots",
]


def __getattr__(name):
    """Lazy submodules: ``ad.data`` (loaders and encoders) and ``ad.studies`` import on first use
    so that ``import anchordiv`` stays free of torch and nltk; any other unknown name is an
    AttributeError."""
    lazy = {"data": "anchordiv.data", "studies": "anchordiv.app.studies"}
    if name in lazy:
        import importlib

        return importlib.import_module(lazy[name])
    raise AttributeError(f"module 'anchordiv' has no attribute {name!r}")
