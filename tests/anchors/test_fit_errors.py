"""Every bad input to fit/mix gets a clear error naming the problem."""

import numpy as np
import pytest

import anchordiv as ad
from helpers import clustered_anchors

A = clustered_anchors(np.random.default_rng(0), 20, 4)


def fit(kind, anchors, tau=20.0, **options):
    return ad.fit(kind, anchors, tau=tau, **options)


@pytest.mark.parametrize(
    "call, message",
    [
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
        (
            lambda: fit("softmax", A, weights=-np.ones(20)),
            "weights: must be finite and non-negative",
        ),
        (lambda: fit("softmax", A, weights=np.ones(3)), r"weights: expected shape \[20\]"),
        (lambda: fit("softmax", A, weights=np.zeros(20)), "at least one weight must be positive"),
        (lambda: fit("gaussian", A, rank=2), "gaussian: unknown option"),
        (lambda: ad.mix(fit("gaussian", A), fit("gaussian", A[:, :3]), 0.5), "dimension mismatch"),
        (lambda: ad.mix(fit("gaussian", A), fit("gaussian", A), 1.5), r"p: must lie in \[0, 1\]"),
        (
            lambda: ad.mix(fit("gaussian", A), fit("latent-spherical", A, rank=2), 0.5),
            "latent-spherical model",
        ),
    ],
)
def test_bad_input_raises_clear_error(call, message):
    with pytest.raises(ad.AnchorDivError, match=message):
        call()


def test_singular_mixture_covariance_says_increase_reg():
    a = np.repeat(A[:6], 2, axis=0)  # 12 anchors on 6 points: singular covariances
    with pytest.raises(ad.AnchorDivError, match="increase `reg`"):
        fit("mixture", a, components=2, reg=0.0)


@pytest.mark.parametrize(
    "kind", ["softmax", "gaussian", "latent-gaussian", "latent-spherical", "mixture"]
)
def test_identical_anchors_are_zero_variance_for_every_kind(kind):
    """Issue 11: identical anchors gave a model whose divergences are all 0."""
    with pytest.raises(ad.AnchorDivError, match="identical .*zero variance"):
        fit(kind, np.repeat(A[:1], 12, axis=0))


@pytest.mark.parametrize(
    "anchors, message",
    [
        ([], "anchors: is empty"),  # gave a Softmax with anchors[1, 0]
        (np.zeros((0, 4)), "anchors: is empty"),
        (np.zeros((5, 0)), "anchors: is empty"),
        (np.eye(20, dtype=bool), "expected floating-point embeddings, got dtype=bool"),
        (np.eye(20, dtype=np.int64), "got dtype=int64"),
    ],
)
def test_empty_and_non_float_anchors(anchors, message):
    for kind in ("softmax", "gaussian"):
        with pytest.raises(ad.AnchorDivError, match=message):
            fit(kind, anchors)


def test_empty_or_boolean_inputs_at_other_entry_points():
    model = fit("gaussian", A)
    for call in (
        lambda: ad.divergence(model, np.zeros((0, 4)), A),
        lambda: ad.top_k(model, A, np.zeros((0, 4)), 1),
        lambda: ad.adapt("gaussian", A, np.zeros((0, 4)), tau=20.0),
        lambda: ad.evaluate(model, A[:2] > 0, A, np.ones((2, 20))),
    ):
        with pytest.raises(ad.AnchorDivError):
            call()


def test_duplicated_anchors_beyond_the_tolerance():
    from anchordiv.errors import MAX_DUPLICATE_FRACTION

    assert MAX_DUPLICATE_FRACTION == 0.5
    fit("gaussian", np.concatenate([A, A[:10]]))  # 10 of 30 repeat: fine
    with pytest.raises(ad.AnchorDivError, match="repeat another anchor exactly"):
        fit("gaussian", np.concatenate([A[:5]] * 4))  # 15 of 20 repeat


def test_non_unit_norm_anchors_warn_and_normalize_fixes_them():
    """Issue 11: anchors x10 were taken as they are (softmax AUPRC 0.512 -> 0.457)."""
    with pytest.warns(ad.AnchorDivWarning, match="not unit-norm.*normalize=True"):
        scaled = fit("softmax", 10 * A)
    assert float(np.max(np.abs(np.asarray(scaled.anchors[:20]) - 10 * A))) == 0.0
    fixed = fit("softmax", 10 * A, normalize=True)
    np.testing.assert_allclose(np.asarray(fixed.anchors[:20]), A, atol=1e-12)
    with pytest.warns(ad.AnchorDivWarning, match="target_anchors"):
        ad.adapt("gaussian", A, 3 * A[:4], tau=20.0)
