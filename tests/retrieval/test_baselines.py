"""Cosine and image–text inversion against numpy."""

import numpy as np
import pytest

import anchordiv as ad
from helpers import normed, unit


def test_cosine_and_inversion_match_numpy():
    rng = np.random.default_rng(0)
    a, x, y = unit(rng, 7, 4), 3 * unit(rng, 5, 4), unit(rng, 9, 4)
    xn = normed(x)
    np.testing.assert_allclose(np.asarray(ad.cosine(x, y)), xn @ y.T, rtol=1e-12)
    proxy = a[np.argmax(x @ a.T, axis=1)]
    np.testing.assert_allclose(np.asarray(ad.inversion(a, x, y)), proxy @ y.T, rtol=1e-12)


def test_baselines_reject_bad_input():
    # neither array is blamed: either may be the wrong one; both dimensions are named
    with pytest.raises(ad.AnchorDivError, match=r"gallery and queries: different dimensions"):
        ad.cosine(np.ones((2, 3)), np.ones((2, 4)))
    with pytest.raises(ad.AnchorDivError, match=r"queries \[2, 5\] has d = 5, anchors .* d = 3"):
        ad.inversion(np.ones((2, 3)), np.ones((2, 5)), np.ones((2, 3)))
    with pytest.raises(ad.AnchorDivError, match="anchors: contains NaN"):
        ad.inversion(np.full((2, 3), np.nan), np.ones((2, 3)), np.ones((2, 3)))
