"""Fixtures for the study tests."""

import numpy as np
import pytest


def hashed_words(texts, d=64):
    """A deterministic unit-norm text embedding: hashed word counts (no model needed)."""
    out = np.zeros((len(texts), d))
    for i, t in enumerate(texts):
        for w in t.replace(",", " ").replace(":", " ").split():
            out[i, sum(map(ord, w.lower())) * 7919 % d] += 1.0
    return out / np.linalg.norm(out, axis=1, keepdims=True)


@pytest.fixture
def bag_of_words():
    return hashed_words
