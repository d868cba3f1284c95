"""Reference geometries (MATH.md "Baselines"): cosine similarity and image–text inversion.

Both return *similarities* ``[Q, G]`` (higher = closer), the opposite orientation of a divergence.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ..errors import as_matrix


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
    """Cosine similarity ``[Q, G]`` between ``queries [Q, d]`` and ``gallery [G, d]``."""
    x = as_matrix("queries", queries)
    y = as_matrix("gallery", gallery, dim=x.shape[1])
    return _cosine(jnp.asarray(x), jnp.asarray(y))


def inversion(anchors, queries, gallery) -> jax.Array:
    """Image–text inversion ``[Q, G]``: each query picks its most compatible anchor
    (argmax_i ⟨a_i, x⟩) and the gallery is ranked by cosine to that single text proxy."""
    a = as_matrix("anchors", anchors)
    x = as_matrix("queries", queries, dim=a.shape[1])
    y = as_matrix("gallery", gallery, dim=a.shape[1])
    return _inversion(jnp.asarray(a), jnp.asarray(x), jnp.asarray(y))
