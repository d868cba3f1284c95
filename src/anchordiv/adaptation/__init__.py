"""Broad → target adaptation: fit a prior to broad anchors, update it with target anchors,
summarise, and score with the adapted anchor model (docs/mathematics.md, "Adaptation: conjugate updates")::

    prior = ad.NIWPrior.from_anchors(broad [N, d], targets=targets)  # or ad.load_prior(dir)
    post = prior.update(targets [n, d], tau=20.0)                       # exact conjugate update
    post = ad.infer(prior, targets, ad.NUTS(num_samples=500), tau=20.0) # or ad.SVI(...)
    post = ad.adapt("gaussian", broad, targets, tau=20.0)              # both from flat options
    model = post.point("mean")          # or "map": an anchor model for ad.divergence / ad.top_k
    draws = post.sample(seed=0, n=20)   # posterior draws of anchor models

One prior class per family (:mod:`.families`; the protocol is :class:`.protocol.Family`);
methods are typed configuration objects (:mod:`.methods`).  Exact latent and mixture draws come
from Gibbs samplers (O(k·d³) per sweep), so keep ``n`` modest there; NUTS on the mixture model
is not protected against label switching (check ``az.rhat``).
"""

from __future__ import annotations

from . import families  # noqa: F401  (registers the families)
from .api import COMMON, DEFAULT_KIND, KINDS, METHOD_OPTIONS, OPTIONS, adapt, infer  # noqa: F401
from .api import resolve_family, split_options  # noqa: F401
from .families import BinghamPrior, DiagonalPrior, DirichletNIWPrior, FactorPrior, LKJPrior
from .families import NIWPrior, PosteriorBinghamPrior, SpectralPrior, StructuredPrior
from .families.gaussian import cov_factor  # noqa: F401
from .loading import broad_from_model, load_prior, stand_in_anchors  # noqa: F401
from .methods import METHODS, NUTS, SVI, Exact  # noqa: F401
from .model import Likelihood, Runners, with_log_density  # noqa: F401
from .posterior import ExactPosterior, Posterior, SampledPosterior, SubspacePosterior
from .posterior import load_posterior, save_posterior, to_model  # noqa: F401
from .protocol import Family  # noqa: F401
from .registry import FAMILIES, Conjugate, Projectable, unknown_kind  # noqa: F401
from .svi import GUIDES  # noqa: F401

__all__ = [
    "BinghamPrior",
    "Conjugate",
    "Likelihood",
    "Projectable",
    "DiagonalPrior",
    "DirichletNIWPrior",
    "FactorPrior",
    "LKJPrior",
    "Exact",
    "Family",
    "KINDS",
    "NIWPrior",
    "NUTS",
    "ExactPosterior",
    "Posterior",
    "PosteriorBinghamPrior",
    "SampledPosterior",
    "SubspacePosterior",
    "SVI",
    "SpectralPrior",
    "StructuredPrior",
    "adapt",
    "broad_from_model",
    "infer",
    "load_posterior",
    "load_prior",
    "save_posterior",
    "with_log_density",
]
