"""NIW: conjugate update = closed form, marginal likelihood, exact draws, and
NUTS on the explicit model against the conjugate posterior."""

import jax
import numpy as np
import pytest
import scipy.stats
from numpyro.infer import MCMC, NUTS

from helpers import niw_problem
from anchordiv.errors import AnchorDivError

from anchordiv.adaptation.families.gaussian import (
    NIW,
    niw_model,
)


problem = niw_problem


def test_update_is_closed_form():
    prior, t = problem()
    post = prior.update(t)
    n, d = t.shape
    tbar = t.mean(0)
    s = (t - tbar).T @ (t - tbar)
    kn, nun = prior.kappa + n, prior.nu + n
    psin = prior.psi + s + prior.kappa * n / kn * np.outer(tbar - prior.mu, tbar - prior.mu)
    np.testing.assert_allclose(post.mu, (prior.kappa * prior.mu + n * tbar) / kn, rtol=1e-12)
    np.testing.assert_allclose(post.psi, psin, rtol=1e-12)
    np.testing.assert_allclose(post.mean()["Sigma"], psin / (nun - d - 1), rtol=1e-12)
    np.testing.assert_allclose(post.mode()["Sigma"], psin / (nun + d + 2), rtol=1e-12)
    assert post.kappa == kn and post.nu == nun


def test_prior_mean_covariance_is_scale():
    prior, _ = problem()
    np.testing.assert_allclose(prior.mean()["Sigma"] * 1, prior.psi / (prior.nu - 4), rtol=1e-12)


def test_log_marginal_is_product_of_predictive_student_t():
    prior, t = problem(n=6)
    d = t.shape[1]
    total, p = 0.0, prior
    for x in t:
        scale = p.psi * (p.kappa + 1) / (p.kappa * (p.nu - d + 1))
        total += scipy.stats.multivariate_t(p.mu, scale, df=p.nu - d + 1).logpdf(x)
        p = p.update(x[None])
    assert prior.log_marginal(t) == pytest.approx(total, rel=1e-10)


def test_exact_draws_match_moments():
    prior, t = problem()
    post = prior.update(t)
    s = post.sample(np.random.default_rng(0), 4000)
    m = post.mean()
    se = np.sqrt(np.var(s["Sigma"], axis=0) / 4000)
    assert np.all(np.abs(s["Sigma"].mean(0) - m["Sigma"]) < 5 * se + 1e-12)
    np.testing.assert_allclose(
        m["Sigma"], scipy.stats.invwishart(post.nu, post.psi).mean(), rtol=1e-10
    )
    se_mu = np.sqrt(np.var(s["mu"], axis=0) / 4000)
    assert np.all(np.abs(s["mu"].mean(0) - post.mu) < 5 * se_mu)


def test_bad_nu0():
    with pytest.raises(AnchorDivError, match="nu0"):
        NIW.from_scale(np.zeros(3), np.eye(3), 1.0, 4.0)
    with pytest.raises(AnchorDivError, match="kappa0"):
        NIW.from_scale(np.zeros(3), np.eye(3), -1.0, 8.0)


def test_nuts_on_explicit_model_agrees_with_conjugate_posterior():
    """d = 3: NUTS posterior means of μ and Σ within Monte Carlo error of the closed form."""
    prior, t = problem(d=3, n=15, seed=3)
    post = prior.update(t)
    mcmc = MCMC(NUTS(niw_model), num_warmup=200, num_samples=600, num_chains=1, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(0), t, **prior.model_kwargs())
    s = {k: np.asarray(v) for k, v in mcmc.get_samples().items()}
    exact = post.sample(np.random.default_rng(1), 4000)
    for site, ref in [("mu", post.mu), ("Sigma", post.mean()["Sigma"])]:
        sd = exact[site].std(0)
        # NUTS draws are autocorrelated: allow an effective sample size of ~100
        np.testing.assert_array_less(np.abs(s[site].mean(0) - ref), 4 * sd / np.sqrt(100) + 1e-9)
