"""The adaptable families, one module each (:mod:`anchordiv.adaptation.protocol` is the protocol):
a family's module holds its explicit NumPyro model, its exact posterior (where it has one), its
closed forms and its prior object.  Importing a module registers its family under its kind (in
this order: ``anchordiv.adaptation.KINDS``); adding a family is one new module and one line here.

The explicit models and exact posteriors are exported here too, to copy and change::

    from anchordiv.adaptation.families import NIW, niw_model, factor_model, factor_prior
"""

# isort: off
from .gaussian import NIW, NIWPrior, empirical_bayes, niw_model
from .latent_gaussian import (
    BinghamPosterior,
    BinghamPrior,
    latent_gaussian_model,
    latent_gaussian_update,
)
from .latent_spherical import (
    PosteriorBinghamPrior,
    latent_spherical_model,
    latent_spherical_update,
)
from .mixture import DirichletNIW, DirichletNIWPrior, dirichlet_niw_model, map_em, mixture_prior
from .diagonal import DiagonalPrior, NormalInverseGamma
from .spectral import SpectralPrior, spectral_model
from .structured import (
    FactorPrior,
    LKJPrior,
    StructuredPrior,
    factor_model,
    factor_prior,
    lkj_model,
    lkj_prior,
)
from ..distributions import MatrixBingham, stiefel_site
# isort: on

__all__ = [
    "BinghamPosterior",
    "BinghamPrior",
    "DiagonalPrior",
    "DirichletNIW",
    "DirichletNIWPrior",
    "FactorPrior",
    "LKJPrior",
    "MatrixBingham",
    "NIW",
    "NIWPrior",
    "NormalInverseGamma",
    "PosteriorBinghamPrior",
    "SpectralPrior",
    "StructuredPrior",
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
    "spectral_model",
    "stiefel_site",
]
