"""The registry's ``family`` decorator checks what it registers: an ``ad.Family`` subclass with
every required member, a built-in kind replaced only when asked; it gives every family the
static ``origin`` field ``load_prior`` records a saved model in."""

import dataclasses

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.adaptation.registry import FAMILIES


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
