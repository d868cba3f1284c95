"""Reference geometries (docs/mathematics.md, "Baselines"): cosine similarity and image–text inversion.

Both return *similarities* ``[Q, G]`` (higher = closer), the opposite orientation of a divergence.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

import numpy as np

from ..errors import AnchorDivError, as_matrix


def matched(name: str, x, ref_name: str, ref: np.ndarray) -> np.ndarray:
    """``x`` as a matrix ``[n, d]`` (:func:`~anchordiv.errors.as_matrix`) with the dimension of
    ``ref [m, d]``; a mismatch is an :class:`AnchorDivError` naming both arrays and both
    dimensions (neither is blamed: either may be the wrong one)."""
    m = as_matrix(name, x)
    if m.shape[1] != ref.shape[1]:
        raise AnchorDivError(
            f"{name} and {ref_name}: different dimensions — {name} {list(m.shape)} has d = "
            f"{m.shape[1]}, {ref_name} {list(ref.shape)} has d = {ref.shape[1]}; both must be "
            f"embedded by the same encoder"
        )
    return m


def _unit(x: jax.Array) -> jax.Array:
    return x / jnp.linalg.norm(x, axis=-1, keepdims=True)


@jax.jit
def _cosine(x, y):
    return _unit(x) @ _unit(y).T


@jax.jit
def _inversion(a, x, y):
    a = _unit(a)
    proxy = a[jnp.argmax(x @ a.T, axis=1)]
    return proxy @ _unit(y).T


def cosine(queries, gallery) -> jax.Array:
    """Cosine similarity between queries and gallery (higher = closer).

    Parameters
    ----------
    queries : array_like, shape [Q, d]
        Query embeddings.
    gallery : array_like, shape [G, d]
        Gallery embeddings.

    Returns
    -------
    jax.Array, shape [Q, G]
        cos(query_i, gallery_j).

    Examples
    --------
    >>> S = ad.cosine(np.eye(3), np.array([[1.0, 1.0, 0.0]]))
    >>> np.round(np.asarray(S).ravel(), 3)
    array([0.707, 0.707, 0.   ])
    """
    x = as_matrix("queries", queries)
    y = matched("gallery", gallery, "queries", x)
    return _cosine(jnp.asarray(x), jnp.asarray(y))


def inversion(anchors, queries, gallery) -> jax.Array:
    """Image–text inversion baseline (higher = closer).

    Each query picks its most compatible anchor (argmax_i ⟨a_i, x⟩) and the gallery is ranked by
    cosine to that single text proxy.

    Parameters
    ----------
    anchors : array_like, shape [n, d]
        The task's anchor embeddings.
    queries : array_like, shape [Q, d]
        Query embeddings.
    gallery : array_like, shape [G, d]
        Gallery embeddings.

    Returns
    -------
    jax.Array, shape [Q, G]
        Cosine of each gallery item to the query's chosen anchor.

    Examples
    --------
    >>> S = ad.inversion(np.eye(3)[:2], np.array([[0.9, 0.1, 0.0]]), np.eye(3))
    >>> int(np.asarray(S).argmax())
    0
    """
    a = as_matrix("anchors", anchors)
    x = matched("queries", queries, "anchors", a)
    y = matched("gallery", gallery, "anchors", a)
    return _inversion(jnp.asarray(a), jnp.asarray(x), jnp.asarray(y))
