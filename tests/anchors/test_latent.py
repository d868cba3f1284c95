"""Latent spherical constant c = τ r A_k(τ r) in float64 against arbitrary-precision Bessel
functions (mpmath), at sizes the quadrature cannot reach."""

import warnings

import jax
import mpmath
import numpy as np
import pytest

from anchordiv.anchors.latent import LatentSpherical, bessel_ratio_f64


def reference_ratio(k, s):
    mpmath.mp.dps = 40
    return float(mpmath.besseli(k / 2, s) / mpmath.besseli(k / 2 - 1, s))


@pytest.mark.parametrize(
    "k, s", [(2, 0.3), (8, 5.0), (300, 1000.0), (159, 2000.0), (400, 1.0), (3, 1e5), (600, 50.0)]
)
def test_bessel_ratio_matches_arbitrary_precision(k, s):
    assert bessel_ratio_f64(k, s) == pytest.approx(reference_ratio(k, s), rel=1e-12)


def test_scale_is_exact_beyond_the_quadrature_range():
    """Audit: the quadrature constant was 4.5 % off at k = 300, τ r = 1000."""
    basis = np.linalg.qr(np.random.default_rng(0).normal(size=(320, 300)))[0]
    with pytest.warns(UserWarning, match="quadrature"):
        model = LatentSpherical.from_basis(basis, tau=100.0, radius=10.0)
    expect = 1000.0 * reference_ratio(300, 1000.0)
    assert float(model.scale) == pytest.approx(expect, rel=1e-10)
    assert float(jax.jit(lambda m: m.scale)(model)) == pytest.approx(expect, rel=1e-10)


def test_no_warning_in_the_quadrature_range():
    basis = np.linalg.qr(np.random.default_rng(0).normal(size=(6, 3)))[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = LatentSpherical.from_basis(basis, tau=20.0)
    assert float(model.scale) == pytest.approx(20.0 * reference_ratio(3, 20.0), rel=1e-12)
    assert float(model.bessel_ratio(model.tau)) == pytest.approx(
        reference_ratio(3, 20.0), rel=1e-10
    )


def test_principal_subspace_is_remembered_without_sharing_arrays():
    """A target set decomposed twice (a latent fit and the recipe's rank) gives equal results,
    in arrays of the caller's own."""
    from anchordiv.anchors.latent import principal_subspace

    x = np.random.default_rng(0).normal(size=(12, 6))
    mu, u, w = principal_subspace(x)
    want = [a.copy() for a in (mu, u, w)]
    for a in (mu, u, w):
        a[...] = 0.0
    assert all(np.array_equal(a, b) for a, b in zip(principal_subspace(x), want))
    assert principal_subspace(x, rank=2)[1].shape == (6, 2)
    mu2, _, w2 = principal_subspace(x.astype(np.float32))  # another set: decomposed anew
    assert not np.array_equal(mu2, want[0]) or not np.array_equal(w2, want[2])
