"""Canonical signs (:mod:`anchordiv.anchors.linalg`): every column's largest-|entry| positive,
whatever sign LAPACK returned, for numpy and JAX arrays alike."""

import jax.numpy as jnp
import numpy as np
import pytest

import anchordiv as ad
from anchordiv.anchors.linalg import canonical_signs, eigh_descending


def random_frame(seed, d=7, k=3, batch=()):
    rng = np.random.default_rng(seed)
    return np.linalg.qr(rng.normal(size=batch + (d, k)))[0]


@pytest.mark.parametrize("batch", [(), (4,), (2, 3)])
def test_canonical_signs_is_invariant_to_column_flips(batch):
    u = random_frame(0, batch=batch)
    rng = np.random.default_rng(1)
    flips = rng.choice([-1.0, 1.0], size=batch + (1, u.shape[-1]))
    c = canonical_signs(u)
    np.testing.assert_array_equal(canonical_signs(u * flips), c)
    idx = np.argmax(np.abs(c), axis=-2)
    assert np.all(np.take_along_axis(c, idx[..., None, :], axis=-2) > 0)
    np.testing.assert_array_equal(np.abs(c), np.abs(u))  # only signs change


def test_canonical_signs_jax_matches_numpy():
    u = random_frame(2)
    got = canonical_signs(jnp.asarray(-u))
    assert isinstance(got, type(jnp.zeros(1)))
    np.testing.assert_array_equal(np.asarray(got), canonical_signs(u))


def test_eigh_descending():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(5, 5))
    a = x @ x.T
    w, v = eigh_descending(a)
    assert np.all(np.diff(w) <= 0)
    np.testing.assert_allclose(v @ np.diag(w) @ v.T, a, atol=1e-10)
    np.testing.assert_array_equal(v, canonical_signs(v))


def flipped_lapack(monkeypatch):
    """Make numpy's eigh and svd return the other sign of every other eigen/singular vector
    (what another BLAS build may return)."""
    eigh, svd = np.linalg.eigh, np.linalg.svd

    def signs(k):
        return np.where(np.arange(k) % 2 == 0, -1.0, 1.0)

    def flipped_eigh(a, *args, **kw):
        w, v = eigh(a, *args, **kw)
        return type(eigh(np.eye(1)))(w, v * signs(v.shape[-1]))

    def flipped_svd(a, *args, **kw):
        out = svd(a, *args, **kw)
        if not isinstance(out, tuple) and not hasattr(out, "U"):
            return out
        u, s, vt = out
        f = signs(s.shape[-1])
        return (
            type(out)(u[..., : f.size] * f, s, vt * f[:, None])
            if hasattr(out, "U")
            else (u[..., : f.size] * f, s, vt * f[:, None])
        )

    monkeypatch.setattr(np.linalg, "eigh", flipped_eigh)
    monkeypatch.setattr(np.linalg, "svd", flipped_svd)


def test_latent_models_and_gaussian_factors_do_not_depend_on_lapack_signs(monkeypatch):
    rng = np.random.default_rng(4)
    anchors = rng.normal(size=(30, 6)) * np.linspace(2, 0.5, 6)
    want_latent = ad.fit("latent-gaussian", anchors, tau=10.0, rank=2)
    want_gauss = ad.fit("gaussian", anchors, tau=10.0)
    flipped_lapack(monkeypatch)
    got_latent = ad.fit("latent-gaussian", anchors, tau=10.0, rank=2)
    got_gauss = ad.fit("gaussian", anchors, tau=10.0)
    np.testing.assert_array_equal(np.asarray(got_latent.basis), np.asarray(want_latent.basis))
    np.testing.assert_array_equal(np.asarray(got_gauss.factor), np.asarray(want_gauss.factor))
