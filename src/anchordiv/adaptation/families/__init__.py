"""The adaptable families, one module each (:mod:`anchordiv.adaptation.family` is the protocol).
Importing a module registers its family under its kind (in this order: ``ad.adapt.KINDS``);
adding a family is one new module and one line here."""

# isort: off
from .gaussian import NIWPrior
from .latent_gaussian import BinghamPrior
from .latent_spherical import PosteriorBinghamPrior
from .mixture import DirichletNIWPrior
from .diagonal import DiagonalPrior
from .structured import StructuredPrior  # a gaussian prior with its own model
from .spectral import SpectralPrior
# isort: on

__all__ = [
    "BinghamPrior",
    "DiagonalPrior",
    "DirichletNIWPrior",
    "NIWPrior",
    "PosteriorBinghamPrior",
    "SpectralPrior",
    "StructuredPrior",
]
