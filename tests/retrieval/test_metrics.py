"""AUPRC against scikit-learn's average_precision_score, ties included."""

import numpy as np
import pytest
from sklearn.metrics import average_precision_score

import anchordiv as ad


@pytest.mark.parametrize("levels", [None, 3, 10])
def test_auprc_matches_sklearn(levels):
    rng = np.random.default_rng(0)
    rel = rng.uniform(size=(40, 60)) < 0.2
    rel[:, 0] = True
    scores = rng.normal(size=(40, 60)) if levels is None else rng.integers(levels, size=(40, 60))
    got = ad.auprc(rel, scores)
    want = [average_precision_score(r, s) for r, s in zip(rel, scores)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert ad.auprc(rel[0], scores[0]) == pytest.approx(want[0], rel=1e-12)


def test_auprc_perfect_and_reversed():
    rel = np.array([1, 1, 0, 0, 0], bool)
    assert ad.auprc(rel, np.array([5, 4, 3, 2, 1])) == 1.0
    assert ad.auprc(rel, np.array([1, 2, 3, 4, 5])) == pytest.approx((1 / 4 + 2 / 5) / 2)
    assert ad.auprc(rel, np.zeros(5)) == pytest.approx(0.4)  # one tie group = prevalence
    assert ad.retrieval.prevalence(rel) == pytest.approx(0.4)


def test_auprc_errors():
    with pytest.raises(ad.AnchorDivError, match="no relevant item"):
        ad.auprc(np.zeros((2, 3)), np.ones((2, 3)))
    out = ad.auprc(
        np.array([[0, 0, 0], [1, 0, 0]]), np.array([[1, 2, 3], [3, 2, 1]]), no_positive="nan"
    )
    assert np.isnan(out[0]) and out[1] == 1.0
    with pytest.raises(ad.AnchorDivError, match="same shape"):
        ad.auprc(np.ones(3), np.ones(4))
    with pytest.raises(ad.AnchorDivError, match="NaN"):
        ad.auprc(np.ones(3), np.array([1.0, np.nan, 2.0]))
    with pytest.raises(ad.AnchorDivError, match="binary"):
        ad.auprc(np.array([0, 2, 1]), np.ones(3))
