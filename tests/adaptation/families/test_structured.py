"""Structured priors: each recovers a known covariance from simulated targets through SVI,
builds its hyperparameters from broad anchors, and runs with NUTS where that is affordable."""

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.adaptation.families import factor_model, factor_prior, lkj_model, lkj_prior


def truth(d=6, r=2, seed=1):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(d, r))
    sigma = w @ w.T + np.diag(rng.uniform(0.2, 0.5, d))
    mu = rng.normal(size=d)
    return mu, sigma, rng.multivariate_normal(mu, sigma, size=2000), rng.normal(size=(300, d))


@pytest.mark.parametrize(
    "model,builder",
    [
        (factor_model, factor_prior(rank=2)),
        pytest.param(lkj_model, lkj_prior(), marks=pytest.mark.slow),
    ],
)  # ~11 s
def test_svi_recovers_a_known_covariance(model, builder):
    mu, sigma, targets, broad = truth()
    post = ad.adapt(
        "gaussian",
        broad,
        targets,
        tau=1.0,
        method="svi",
        model=model,
        model_kwargs=builder,
        num_steps=1500,
        progress=False,
    )
    got = post.params("map")
    assert np.linalg.norm(got["Sigma"] - sigma) / np.linalg.norm(sigma) < 0.12
    assert np.abs(got["mu"] - mu).max() < 0.1
    assert post.info["custom_model"]


def test_factor_prior_is_centred_on_the_broad_principal_directions():
    rng = np.random.default_rng(0)
    d, r = 8, 2
    u, _ = np.linalg.qr(rng.normal(size=(d, r)))
    broad = rng.normal(size=(4000, r)) * [3.0, 2.0] @ u.T + 0.1 * rng.normal(size=(4000, d))
    kw = factor_prior(rank=r)(broad)
    w0 = kw["loadings0"]
    assert w0.shape == (d, r) and kw["noise0"].shape == (d,)
    np.testing.assert_allclose(
        np.linalg.svd(u.T @ np.linalg.qr(w0)[0], compute_uv=False), 1.0, atol=1e-3
    )
    prior_cov = w0 @ w0.T + np.diag(kw["noise0"])
    np.testing.assert_allclose(prior_cov, np.cov(broad.T), atol=0.05)


def test_builders_reject_bad_settings():
    with pytest.raises(ad.AnchorDivError, match="rank"):
        factor_prior(rank=0)
    with pytest.raises(ad.AnchorDivError, match="must be < d"):
        factor_prior(rank=5)(np.random.default_rng(0).normal(size=(20, 5)))
    with pytest.raises(ad.AnchorDivError, match="concentration"):
        lkj_prior(concentration=-1.0)


@pytest.mark.slow  # ~13 s
def test_nuts_runs_on_the_factor_prior_in_a_subspace():
    mu, sigma, targets, broad = truth(d=6)
    post = ad.adapt(
        "gaussian",
        broad,
        targets[:40],
        tau=1.0,
        method="nuts",
        model=factor_model,
        model_kwargs=factor_prior(rank=1),
        subspace=3,
        num_warmup=150,
        num_samples=100,
        num_chains=1,
        progress=False,
    )
    assert post.samples["loadings"].shape == (1, 100, 3, 1)
    assert post.params("mean")["Sigma"].shape == (6, 6)
