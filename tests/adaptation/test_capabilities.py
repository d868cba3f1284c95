"""The capabilities: structural (a family that defines ``exact`` is Conjugate, one that defines
``project``/``lift`` Projectable); their optional members declared on Family and read by
``optional`` (None where the family has none)."""

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.adaptation.capabilities import (
    OPTIONAL,
    Conjugate,
    Projectable,
    is_conjugate,
    no_subspace,
    optional,
)
from anchordiv.adaptation.family import Family


def test_the_library_families_capabilities():
    assert issubclass(ad.NIWPrior, ad.Conjugate) and issubclass(ad.NIWPrior, ad.Projectable)
    assert not issubclass(ad.SpectralPrior, Conjugate)
    assert not issubclass(ad.DiagonalPrior, Projectable)
    assert is_conjugate(ad.NIWPrior) and not is_conjugate(ad.SpectralPrior)
    prior = ad.NIWPrior.from_anchors(np.eye(3), kappa0=1.0, nu0=5.0)
    assert is_conjugate(prior) and isinstance(prior, Conjugate)
    assert "spectral family has no principal-subspace projection" in no_subspace(ad.SpectralPrior)


def test_a_class_that_defines_exact_is_conjugate_structurally():
    class Mine:
        def exact(self, targets):
            return None, {}, {}

    assert issubclass(Mine, Conjugate) and is_conjugate(Mine()) and not is_conjugate(object)


def test_every_optional_member_is_declared_on_family():
    for name, capability in OPTIONAL.items():
        assert name in vars(Family), name
        assert capability in (Conjugate, Projectable)


def test_optional_gives_the_member_or_the_default():
    assert optional(ad.NIWPrior, "covariance_site") == "Sigma"
    assert optional(ad.SpectralPrior, "covariance_site", "none") == "none"
    assert optional(ad.DirichletNIWPrior, "exact_chains") == ad.DirichletNIWPrior.exact_chains
    # a declared method that the family does not override answers None when called
    prior = ad.NIWPrior.from_anchors(np.eye(3), kappa0=1.0, nu0=5.0)
    assert optional(prior, "completion", lambda t: None)(np.eye(3)) is None
    with pytest.raises(KeyError, match="not an optional capability member"):
        optional(ad.NIWPrior, "exact")
