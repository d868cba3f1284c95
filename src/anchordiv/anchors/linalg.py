"""Canonical signs of eigenvectors, singular vectors, bases and loadings.

LAPACK builds return either sign of a singular vector, so every basis, loading and eigenvector
the library returns, saves, or starts a chain from goes through :func:`canonical_signs`
(scikit-learn's ``svd_flip`` convention: each column's entry of largest absolute value is
positive, the first on a :data:`anchordiv._tolerance.TIE_RTOL` tie).  Flipping is exact, so
sign-invariant quantities (projectors, covariances) are bit-identical either way."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .._tolerance import first_max


def canonical_signs(v):
    """``v [..., d, k]`` with each column's largest-|entry| made positive (same type: numpy
    in, numpy out; a JAX array in, a JAX array out, traceable)."""
    xp = jnp if isinstance(v, jax.Array) else np
    if xp is np:
        v = np.asarray(v)
    i = first_max(xp.abs(v), axis=-2)
    i = xp.asarray(i)[..., None, :]  # [..., 1, k]
    pick = xp.take_along_axis(v, i, axis=-2)
    return v * xp.where(pick < 0, -1.0, 1.0).astype(v.dtype)


def eigh_descending(a) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (descending) and eigenvectors ``[..., d, d]`` in canonical signs of the
    symmetric ``a [..., d, d]`` (numpy, float64 if given float64)."""
    w, v = np.linalg.eigh(a)
    return w[..., ::-1], canonical_signs(np.ascontiguousarray(v[..., ::-1]))
