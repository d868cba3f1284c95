"""Priors for broad → target adaptation (MATH.md, "Adaptation from broad to target anchors").

One module per prior, each with its explicit NumPyro model (a readable function a user can copy
and change) and its fast exact update:

* :mod:`.niw` — Normal–Inverse-Wishart (Gaussian): conjugate update, closed-form marginal
  likelihood, empirical Bayes;
* :mod:`.bingham` — matrix Bingham on the Stiefel manifold (latent Gaussian): conjugate
  ``Bₙ = B₀ + c·S_T``, MAP = top-k eigenvectors;
* :mod:`.posterior_bingham` — posterior-like Bingham (latent spherical), β ∈ [0, 1];
* :mod:`.dirichlet_niw` — Dirichlet–NIW (Gaussian mixture): MAP-EM with soft assignments;
* :mod:`.distributions` — the matrix Bingham distribution NumPyro lacks;
* :mod:`.structured` — custom covariance priors for high d (factor analysis, LKJ) to copy.

The families that turn these into prior objects (kind, sites, the explicit model, the exact
update, ...) are :mod:`anchordiv.adaptation.families`.
"""

from .bingham import BinghamPosterior, latent_gaussian_model, latent_gaussian_update
from .dirichlet_niw import DirichletNIW, dirichlet_niw_model, map_em, mixture_prior
from .distributions import MatrixBingham, stiefel_site
from .niw import NIW, empirical_bayes, niw_model
from .posterior_bingham import latent_spherical_model, latent_spherical_update
from .structured import factor_model, factor_prior, lkj_model, lkj_prior

__all__ = [
    "BinghamPosterior",
    "DirichletNIW",
    "MatrixBingham",
    "NIW",
    "dirichlet_niw_model",
    "empirical_bayes",
    "factor_model",
    "factor_prior",
    "latent_gaussian_model",
    "latent_gaussian_update",
    "latent_spherical_model",
    "latent_spherical_update",
    "lkj_model",
    "lkj_prior",
    "map_em",
    "mixture_prior",
    "niw_model",
    "stiefel_site",
]
