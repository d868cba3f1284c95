"""Priors from disk (adaptation/loading.py): a saved prior, a saved Gaussian model as the broad
distribution of a prior, and the moment points that stand in for its anchors."""

import dataclasses
import json

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.adaptation import loading
from anchordiv.errors import AnchorDivError
from anchordiv.provenance import provenance_of

from ..helpers import unit


@pytest.fixture
def saved_model(tmp_path):
    broad = unit(np.random.default_rng(0), 30, 5)
    return ad.save_model(ad.fit("gaussian", broad, tau=20.0), tmp_path / "broad"), broad


def test_a_saved_model_becomes_a_prior_with_its_origin(saved_model):
    path, broad = saved_model
    prior = loading.load_prior(path, kappa0=5.0, nu0=10.0)
    assert isinstance(prior, ad.NIWPrior) and prior.dim == 5
    assert prior.card["path"] == str(path) and prior.card["card"]["tau"] == 20.0
    np.testing.assert_allclose(prior.mu0, broad.mean(0), atol=1e-6)


def test_a_saved_prior_reads_back_bit_exact(saved_model, tmp_path):
    path, _ = saved_model
    prior = loading.load_prior(path, kappa0=5.0, nu0=10.0)
    back = loading.load_prior(prior.save(tmp_path / "prior"))
    for f in dataclasses.fields(prior):
        a, b = getattr(prior, f.name), getattr(back, f.name)
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b


def test_check_loaded_prior_refuses_unusable_arrays(saved_model):
    path, _ = saved_model
    prior = loading.load_prior(path, kappa0=5.0, nu0=10.0)
    card = {"dim": prior.dim}
    with pytest.warns(ad.AnchorDivWarning, match="tau=10"):  # the probe update's own τ
        loading.check_loaded_prior(prior, card)
    with pytest.raises(AnchorDivError, match="dimension 5, the card says 6"):
        loading.check_loaded_prior(prior, {"dim": 6})
    bad = object.__new__(type(prior))
    for f in dataclasses.fields(prior):
        object.__setattr__(bad, f.name, getattr(prior, f.name))
    object.__setattr__(bad, "mu0", np.full(5, np.nan))
    with pytest.raises(AnchorDivError, match="mu0 is not finite"):
        loading.check_loaded_prior(bad, card)


def test_stand_in_anchors_carry_the_cards_encoder_and_tau(saved_model):
    path, broad = saved_model
    card = json.loads((path / "card.json").read_text())
    points = loading.stand_in_anchors(ad.load_model(path), {**card, "encoder": "enc"})
    p = provenance_of(points)
    assert p["encoder"] == "enc" and p["logit_scale"] == 20.0 and p["stand_in"]
    np.testing.assert_allclose(points.mean(0), broad.mean(0), atol=1e-6)


def test_broad_from_model_refuses_a_model_that_is_not_gaussian():
    model = ad.fit("softmax", unit(np.random.default_rng(2), 5, 4), tau=1.0)
    with pytest.raises(AnchorDivError, match="expected a saved gaussian model"):
        loading.broad_from_model(model)


def test_a_saved_prior_of_an_unimported_family_names_its_module(tmp_path):
    import sys
    import warnings
    from pathlib import Path

    from anchordiv.adaptation.protocol import FAMILIES

    sys.path.insert(0, str(Path(__file__).parent))
    from userfam import user_family

    before = FAMILIES.get(user_family.KIND)
    user_family.register()
    rng = np.random.default_rng(0)
    broad = rng.normal(size=(20, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = FAMILIES[user_family.KIND].from_anchors(broad).save(tmp_path / "prior")
    assert type(ad.load_prior(path)).kind == user_family.KIND
    user_family.unregister()
    try:
        with pytest.raises(ad.AnchorDivError, match=r"unknown 'user-mean'.*import userfam"):
            ad.load_prior(path)
    finally:
        if before is not None:
            FAMILIES[user_family.KIND] = before
