"""Shared test data: random unit embeddings and one fitted model of every kind."""

from __future__ import annotations

import numpy as np

import anchordiv as ad


def unit(rng, n, d, dtype=np.float64):
    x = rng.normal(size=(n, d))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(dtype)


def clustered_anchors(rng, n, d, dtype=np.float64):
    """Unit anchors concentrated around a few directions (like text anchors of one topic)."""
    centres = unit(rng, 3, d)
    a = centres[rng.integers(3, size=n)] + 0.4 * rng.normal(size=(n, d)) / np.sqrt(d)
    return (a / np.linalg.norm(a, axis=1, keepdims=True)).astype(dtype)


def hashed_words(texts, d=64):
    """A deterministic unit-norm text embedding: hashed word counts (no model needed)."""
    out = np.zeros((len(texts), d))
    for i, t in enumerate(texts):
        for w in t.replace(",", " ").replace(":", " ").split():
            out[i, sum(map(ord, w.lower())) * 7919 % d] += 1.0
    return out / np.linalg.norm(out, axis=1, keepdims=True)


#: kind -> fit options used by the table-driven tests
OPTIONS = {
    "softmax": {},
    "gaussian": {},
    "latent-gaussian": {"rank": 3},
    "latent-spherical": {"rank": 3},
    "mixture": {"components": 2, "seed": 0},
}
ALL_KINDS = list(OPTIONS) + ["mix"]


def make_model(kind, anchors, tau=5.0):
    if kind == "mix":
        half = len(anchors) // 2
        return ad.mix(ad.fit("softmax", anchors[:half], tau=tau),
                      ad.fit("gaussian", anchors[half:], tau=tau), 0.3)
    return ad.fit(kind, anchors, tau=tau, **OPTIONS[kind])
