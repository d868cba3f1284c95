"""The adaptable families, one module each (:mod:`anchordiv.adapt.family` is the protocol).
Importing a module registers its family under its kind; adding a family is one new module and
one line here."""

from .gaussian import NIWPrior
from .latent_gaussian import BinghamPrior
from .latent_spherical import PosteriorBinghamPrior
from .mixture import DirichletNIWPrior

__all__ = ["BinghamPrior", "DirichletNIWPrior", "NIWPrior", "PosteriorBinghamPrior"]
