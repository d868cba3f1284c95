"""Every bad input to fit/mix gets a clear error naming the problem."""

import numpy as np
import pytest

import anchordiv as ad
from helpers import clustered_anchors

A = clustered_anchors(np.random.default_rng(0), 20, 4)


def fit(kind, anchors, tau=20.0, **options):
    return ad.fit(kind, anchors, tau=tau, **options)


@pytest.mark.parametrize("call, message", [
    (lambda: fit("cosine", A), "unknown kind 'cosine'"),
    (lambda: fit("gaussian", A, tau=0), "tau: must be a finite positive"),
    (lambda: fit("gaussian", A, tau=-3), "tau: must be a finite positive"),
    (lambda: fit("gaussian", A, tau=float("nan")), "tau: must be a finite positive"),
    (lambda: fit("gaussian", np.where(np.eye(20, 4) > 0, np.nan, A)), "anchors: contains NaN"),
    (lambda: fit("gaussian", A[:1]), "anchors: a single anchor"),
    (lambda: fit("softmax", A[:0]), "anchors: is empty"),
    (lambda: fit("gaussian", A[None]), r"anchors: expected shape \[n, d\]"),
    (lambda: fit("latent-gaussian", A, rank=5), "rank: 5 is larger than possible"),
    (lambda: fit("latent-gaussian", A[:3], rank=3), "rank: 3 is larger than possible"),
    (lambda: fit("latent-gaussian", A, rank=0), r"rank: must be >= 1"),
    (lambda: fit("latent-spherical", A, rank=1), "k >= 2"),
    (lambda: fit("latent-gaussian", A, variance=1.5), r"variance: must lie in \[0, 1\]"),
    (lambda: fit("mixture", A, components=11), "too few anchors for 11 components"),
    (lambda: fit("mixture", A, components=0), r"components: must be >= 1"),
    (lambda: fit("mixture", A, components=2, reg=-1), "reg: must be a finite non-negative"),
    (lambda: fit("softmax", A, weights=-np.ones(20)), "weights: must be finite and non-negative"),
    (lambda: fit("softmax", A, weights=np.ones(3)), r"weights: expected shape \[20\]"),
    (lambda: fit("softmax", A, weights=np.zeros(20)), "at least one weight must be positive"),
    (lambda: fit("gaussian", A, rank=2), "gaussian: unknown option"),
    (lambda: ad.mix(fit("gaussian", A), fit("gaussian", A[:, :3]), 0.5), "dimension mismatch"),
    (lambda: ad.mix(fit("gaussian", A), fit("gaussian", A), 1.5), r"p: must lie in \[0, 1\]"),
    (lambda: ad.mix(fit("gaussian", A), fit("latent-spherical", A, rank=2), 0.5),
     "latent-spherical model"),
])
def test_bad_input_raises_clear_error(call, message):
    with pytest.raises(ad.AnchorDivError, match=message):
        call()


def test_singular_mixture_covariance_says_increase_reg():
    a = np.repeat(A[:6], 2, axis=0)  # 12 anchors on 6 points: singular covariances
    with pytest.raises(ad.AnchorDivError, match="increase `reg`"):
        fit("mixture", a, components=2, reg=0.0)
