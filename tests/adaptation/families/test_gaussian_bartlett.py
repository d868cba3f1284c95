"""The NIW model in whitened Bartlett coordinates has exactly the NIW law; its Gaussian
likelihood equals scipy's; the map Jacobian turns the coordinates' density into (μ, Σ)'s."""

import jax.numpy as jnp
import numpy as np
import scipy.stats as st
from numpyro import handlers
from numpyro.infer.util import log_density

from anchordiv.adaptation.families.gaussian import NIW, niw_model
from anchordiv.adaptation.families.gaussian_bartlett import BartlettGaussian

LATENT = ("bartlett_chi2", "bartlett_normal", "mu_std")


def setup(d=3, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(d, d))
    return (rng.normal(size=d), 2.5, d + 4.5, a @ a.T + d * np.eye(d), rng.normal(size=(5, d)))


def test_density_of_parameters_is_the_niw_density_up_to_a_constant():
    mu0, k, nu, psi, t = setup()
    kw = dict(mu0=mu0, kappa0=k, nu0=nu, psi0=psi, map_jacobian=True)
    diffs = []
    for seed in range(5):
        tr = handlers.trace(handlers.seed(niw_model, seed)).get_trace(jnp.asarray(t), **kw)
        lp, _ = log_density(niw_model, (jnp.asarray(t),), kw, {n: tr[n]["value"] for n in LATENT})
        s, m = np.asarray(tr["Sigma"]["value"]), np.asarray(tr["mu"]["value"])
        ref = (
            st.invwishart(nu, psi).logpdf(s)
            + st.multivariate_normal(mu0, s / k).logpdf(m)
            + st.multivariate_normal(m, s).logpdf(t).sum()
        )
        diffs.append(float(lp) - ref)
    assert np.ptp(diffs) < 1e-9


def test_prior_draws_have_the_niw_moments():
    mu0, k, nu, psi, t = setup(d=2)
    from numpyro.infer import Predictive

    draws = Predictive(niw_model, num_samples=20000, return_sites=["Sigma", "mu"])(
        __import__("jax").random.PRNGKey(0), jnp.asarray(t), mu0=mu0, kappa0=k, nu0=nu, psi0=psi
    )
    prior = NIW(mu0, k, nu, psi)
    np.testing.assert_allclose(np.asarray(draws["Sigma"]).mean(0), prior.mean()["Sigma"], rtol=0.08)
    np.testing.assert_allclose(np.asarray(draws["mu"]).mean(0), mu0, atol=0.05)


def test_bartlett_gaussian_matches_scipy():
    rng = np.random.default_rng(1)
    d = 4
    outer = np.linalg.cholesky(np.cov(rng.normal(size=(d, 3 * d)))) + 0 * np.eye(d)
    inner = np.tril(rng.normal(size=(d, d)), -1) + np.diag(rng.uniform(1, 2, d))
    loc = rng.normal(size=d)
    law = BartlettGaussian(jnp.asarray(loc), jnp.asarray(outer), jnp.asarray(inner))
    sigma = outer @ np.linalg.inv(inner @ inner.T) @ outer.T
    np.testing.assert_allclose(law.covariance(), sigma, rtol=1e-10)
    x = rng.normal(size=(6, d))
    np.testing.assert_allclose(
        law.log_prob(jnp.asarray(x)), st.multivariate_normal(loc, sigma).logpdf(x), rtol=1e-10
    )
    # batched (mixture components) agrees with one at a time
    batch = BartlettGaussian(
        jnp.stack([loc, loc + 1]), jnp.stack([outer, outer]), jnp.stack([inner, 2 * inner])
    )
    got = batch.log_prob(jnp.asarray(x)[:, None, :])
    one = BartlettGaussian(jnp.asarray(loc + 1), jnp.asarray(outer), jnp.asarray(2 * inner))
    np.testing.assert_allclose(got[:, 1], one.log_prob(jnp.asarray(x)), rtol=1e-10)
    draws = np.asarray(law.sample(__import__("jax").random.PRNGKey(0), (40000,)))
    np.testing.assert_allclose(np.cov(draws.T), sigma, rtol=0.05, atol=0.02 * sigma.max())
