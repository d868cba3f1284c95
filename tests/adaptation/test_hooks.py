"""A family's hooks: every field optional, merged along the MRO (a subclass's own fields over its
bases'), and the helpers its quantities are built from."""

import dataclasses

import numpy as np

import anchordiv as ad
from anchordiv.adaptation.hooks import (
    Hooks,
    cosine,
    declared_hooks,
    own_sites,
    principal_angles,
    unit_vector,
)


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
