"""The family protocol's base class: the required members, and every other member declared
with a default (a family that defines only the required ones has all of them), its hooks read
field by field along the MRO."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.adaptation.protocol import (
    FAMILIES,
    Family,
    Hooks,
    cosine,
    declared_hooks,
    own_sites,
    principal_angles,
    unit_vector,
)
from anchordiv.adaptation.registry import (
    OPTIONAL,
    Conjugate,
    Projectable,
    is_conjugate,
    no_subspace,
)

#: the members a family may define beyond the required ones, each declared on Family
DECLARED = (
    "likelihood_type",
    "static_fields",
    "descriptions",
    "hooks",
    "needs_anchors",
    "covariance_site",
    "prior",
    "origin",
    "dim",
    "model_inputs",
    "model_extras",
    "predictive_fixed",
    "broad_count",
    "exact_chains",
    "power_scaled_posterior",
    "completion",
    "project_mean",
    "subspace_mode",
)


@pytest.fixture
def bare():
    """A registered family with only the required members (no origin, no prior field)."""

    @ad.family("test-family-bare")
    class Bare(Family):
        mu0: np.ndarray

        sites = ("mu",)
        model = staticmethod(lambda targets, **kw: None)

        @classmethod
        def from_anchors(cls, broad, targets=None):
            return cls(np.mean(broad, 0))

        def isotropic(self):
            return self

        def prior_kwargs(self):
            return {"mu0": self.mu0}

        @classmethod
        def to_model(cls, p, tau, dtype, fixed):
            return None

    yield Bare
    FAMILIES.pop("test-family-bare", None)


def test_the_required_members():
    assert Family.required_members() == (
        "sites",
        "model",
        "from_anchors",
        "isotropic",
        "prior_kwargs",
        "to_model",
    )


def test_every_optional_member_is_declared_on_the_base_class():
    for name in DECLARED:
        assert hasattr(Family, name), name
    assert not set(DECLARED) & set(Family.required_members())


def test_a_bare_family_has_every_declared_default(bare):
    prior = bare.from_anchors(np.eye(3))
    assert prior.prior == "broad" and prior.origin == "" and prior.card == {}
    assert prior.needs_anchors is None and prior.covariance_site is None
    assert prior.broad_count() is None and prior.completion(np.eye(3)) is None
    assert bare.exact_chains(None, None, 1, 1) is None
    assert bare.model_extras({"mu0": prior.mu0}, map_density=True) == {}
    assert prior.power_scaled_posterior(1.0, np.eye(3)) is None
    assert bare.project_mean({}, np.eye(3)) is None and bare.subspace_mode({}, None, 1) is None
    assert prior.dim == 3 and prior.model_inputs(np.eye(3)) == ({"mu0": prior.mu0}, {}, {})
    assert bare.hooks is Family.hooks and declared_hooks(bare) == Hooks()
    assert [f.name for f in dataclasses.fields(bare)] == ["mu0", "origin"]


def test_the_declared_defaults_are_not_dataclass_fields():
    """``prior`` and ``origin`` become fields only where a family declares them; the others
    are class attributes or methods."""
    assert "prior" in {f.name for f in dataclasses.fields(ad.NIWPrior)}
    assert ad.NIWPrior.from_anchors(np.eye(3), kappa0=1.0, nu0=5.0).broad_count() is None
    latent = ad.BinghamPrior.from_anchors(np.random.default_rng(0).normal(size=(30, 4)), rank=2)
    assert latent.broad_count() == 30 == latent.n_broad


def test_the_library_families_declare_their_own_knowledge():
    assert ad.NIWPrior.covariance_site == "Sigma" and ad.DirichletNIWPrior.covariance_site == "covs"
    assert "EM" in ad.DirichletNIWPrior.needs_anchors
    assert ad.DirichletNIWPrior.exact_chains is not Family.exact_chains
    assert ad.StructuredPrior.completion is not Family.completion
    assert ad.NIWPrior.hooks.student_t_predictive is True
    # a subclass declares only what differs: FactorPrior's own SBC options over the structured
    # priors' quantities
    merged = declared_hooks(ad.FactorPrior)
    assert merged.sbc_options(5) == {"rank": 1}
    assert merged.quantities is ad.StructuredPrior.hooks.quantities


def test_the_optional_methods_have_the_signatures_the_capabilities_name():
    assert list(inspect.signature(Family.exact_chains).parameters) == [
        "post",
        "rng",
        "chains",
        "per_chain",
    ]
    assert list(inspect.signature(Family.completion).parameters) == ["self", "targets"]


def test_chosen_on_targets_says_whether_the_strengths_came_from_the_targets():
    rng = np.random.default_rng(0)
    broad = rng.normal(size=(30, 4))
    targets = broad[:5] + 0.1
    recipe = ad.NIWPrior.from_anchors(broad, targets)
    assert recipe.chosen_by.startswith("held-out") and recipe.chosen_on_targets()
    assert recipe.isotropic().chosen_on_targets()
    evidence = ad.NIWPrior.from_anchors(broad, targets, strengths="evidence")
    assert evidence.chosen_on_targets()
    assert not ad.NIWPrior.from_anchors(broad, kappa0=5.0, nu0=9.0).chosen_on_targets()


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


def test_every_field_defaults_to_none():
    assert all(getattr(Hooks(), f.name) is None for f in dataclasses.fields(Hooks))


def test_declared_hooks_merge_along_the_mro():
    class Base:
        hooks = Hooks(dims={"a": ["x"]}, psis_caveat=lambda post: "base")

    class Child(Base):
        hooks = Hooks(psis_caveat=lambda post: "child")

    class Grandchild(Child):
        pass

    merged = declared_hooks(Grandchild)
    assert merged.dims == {"a": ["x"]} and merged.psis_caveat(None) == "child"
    assert declared_hooks(object) == Hooks()
    latent = ad.BinghamPrior.__mro__[1].hooks  # LatentFamily's, which both latent kinds share
    assert declared_hooks(ad.PosteriorBinghamPrior).quantities is latent.quantities


def test_the_helpers():
    np.testing.assert_allclose(principal_angles(np.eye(3)[:, :2], np.eye(3)[:, 1:3]), [0.0, 90.0])
    assert float(cosine(np.array([1.0, 0.0]), np.array([0.0, 2.0]))) == 0.0
    v = unit_vector(5, np.random.default_rng(0))
    assert v.shape == (5,) and abs(np.linalg.norm(v) - 1) < 1e-12
    draws = {"mu": np.zeros((1, 2, 3)), "scale": np.ones((1, 2)), "x_raw": np.ones((1, 2))}
    assert set(own_sites(("mu",), draws, {})) == {"scale"}


@pytest.fixture
def registry():
    """The registry as it was, restored after the test."""
    before = dict(FAMILIES)
    yield FAMILIES
    FAMILIES.clear()
    FAMILIES.update(before)


def complete(**drop):
    """A class with every required member but those named in ``drop`` (a fresh class)."""
    members = {
        "__annotations__": {"mu0": np.ndarray},
        "sites": ("mu",),
        "model": staticmethod(lambda targets, **kw: None),
        "from_anchors": classmethod(lambda cls, broad, targets=None: cls(np.mean(broad, 0))),
        "isotropic": lambda self: self,
        "prior_kwargs": lambda self: {"mu0": self.mu0},
        "to_model": classmethod(lambda cls, p, tau, dtype, fixed: None),
    }
    for name in drop:
        members.pop(name)
    return type("Mine", (ad.Family,), members)


def test_a_complete_family_registers_with_an_origin_field(registry):
    cls = ad.family("reg-complete")(complete())
    assert registry["reg-complete"] is cls and cls.kind == "reg-complete"
    assert [f.name for f in dataclasses.fields(cls)] == ["mu0", "origin"]
    assert "origin" in cls.static_fields
    prior = cls(np.zeros(3))
    assert prior.origin == "" and prior.card == {}
    arrays, meta = prior.to_arrays()
    assert set(arrays) == {"mu0"} and meta["origin"] == ""


def test_a_class_that_is_not_a_family_is_refused(registry):
    class NotAFamily:
        sites = ("mu",)

    with pytest.raises(ad.AnchorDivError, match="NotAFamily is not a subclass of anchordiv.Family"):
        ad.family("reg-not-a-family")(NotAFamily)
    assert "reg-not-a-family" not in registry


@pytest.mark.parametrize("missing", ["sites", "model", "to_model", "prior_kwargs"])
def test_a_missing_required_member_is_named(registry, missing):
    with pytest.raises(ad.AnchorDivError, match=rf"Mine does not define {missing} \(required"):
        ad.family("reg-missing")(complete(**{missing: None}))
    assert "reg-missing" not in registry


def test_sites_must_be_a_tuple_of_names(registry):
    cls = complete()
    cls.sites = "mu"
    with pytest.raises(ad.AnchorDivError, match="sites \\(a tuple of site names, got 'mu'\\)"):
        ad.family("reg-sites")(cls)


def test_a_built_in_kind_is_replaced_only_when_asked(registry):
    gaussian = registry["gaussian"]
    with pytest.raises(ad.AnchorDivError, match="'gaussian': the kind of the built-in NIWPrior"):
        ad.family("gaussian")(complete())
    assert registry["gaussian"] is gaussian
    mine = ad.family("gaussian", replace=True)(complete())
    assert registry["gaussian"] is mine


def test_a_users_kind_registers_again(registry):
    first = ad.family("reg-again")(complete())
    second = ad.family("reg-again")(complete())  # e.g. the user's module imported anew
    assert first is not second and registry["reg-again"] is second


def test_the_kind_must_be_a_string(registry):
    with pytest.raises(ad.AnchorDivError, match="kind must be a non-empty string"):
        ad.family("")(complete())
