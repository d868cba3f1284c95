"""The family protocol's base class: the required members, and every other member declared
with a default (a family that defines only the required ones has all of them), its hooks read
field by field along the MRO."""

import dataclasses
import inspect

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.adaptation.family import Family
from anchordiv.adaptation.hooks import Hooks, declared_hooks
from anchordiv.adaptation.registry import FAMILIES

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
