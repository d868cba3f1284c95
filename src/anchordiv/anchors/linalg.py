"""Canonical signs of eigenvectors, singular vectors, bases and loadings.

An eigenvector (a singular vector, a column of an orthonormal basis or of a loading matrix) is
defined only up to its sign, and LAPACK builds (OpenBLAS, MKL, Accelerate, their versions and
thread counts) return either one.  Every basis, loading and eigenvector the library returns,
saves, or starts a chain from goes through :func:`canonical_signs` first, so that outputs and
saved files do not depend on the BLAS build.

**The convention** (scikit-learn's ``svd_flip``): each column is multiplied by ±1 so that its
entry of largest absolute value is positive (the first such entry on a tie, where entries within
:data:`anchordiv._tolerance.TIE_RTOL` of the largest tie: the pivot must not hang on a last bit
where two entries are equal in exact arithmetic, as in a symmetric design's eigenvectors).  Flipping a sign is
exact in floating point, so quantities that do not depend on the sign (projectors U Uᵀ,
covariances F Fᵀ, squared projections) are bit-identical with or without it.

Call sites that only use sign-invariant quantities of a decomposition (squared projections, a
span's projector, eigenvalues) need not canonicalise; see ``tests/anchors/test_linalg.py`` for
the helper's invariance.
"""

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


__all__ = ["canonical_signs", "eigh_descending"]
