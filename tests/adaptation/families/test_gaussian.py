"""NIW: conjugate update = closed form, marginal likelihood, empirical Bayes, exact draws, and
NUTS on the explicit model against the conjugate posterior."""

import jax
import numpy as np
import pytest
import scipy.stats
from numpyro.infer import MCMC, NUTS

from anchordiv.errors import AnchorDivError
import warnings

from anchordiv.adaptation.families.gaussian import (
    EB_BOUNDS,
    NIW,
    _MarginalCurve,
    empirical_bayes,
    empirical_bayes_fit,
    log_hyperprior,
    niw_model,
)


def problem(d=3, n=12, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(d, d))
    cov = a @ a.T / d + 0.5 * np.eye(d)
    targets = rng.multivariate_normal(np.arange(d) * 0.5, np.eye(d) * 0.3, size=n)
    return NIW.from_scale(rng.normal(size=d), cov, 2.0, d + 4.0), targets


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


@pytest.mark.parametrize("d,n", [(4, 7), (6, 3), (5, 1)])
def test_fast_marginal_curve_matches_direct_formula(d, n):
    prior, t = problem(d=d, n=n)
    cov = prior.psi / (prior.nu - d - 1)
    curve = _MarginalCurve(prior.mu, cov, t)
    for kappa0, s in [(0.5, 1.0), (3.0, 20.0), (100.0, 0.1)]:
        direct = NIW.from_scale(prior.mu, cov, kappa0, d + 1 + s).log_marginal(t)
        assert curve(kappa0, s) == pytest.approx(direct, rel=1e-10)


def test_empirical_bayes_finds_the_maximum():
    prior, t = problem(d=3, n=30)
    cov = prior.psi / (prior.nu - 4)
    k0, nu0, best = empirical_bayes(prior.mu, cov, t, hyperprior=False)
    assert best == pytest.approx(NIW.from_scale(prior.mu, cov, k0, nu0).log_marginal(t), rel=1e-9)
    for dk, dn in [(1.3, 1.0), (0.7, 1.0), (1.0, 1.3), (1.0, 0.7)]:
        other = NIW.from_scale(prior.mu, cov, k0 * dk, 4 + (nu0 - 4) * dn).log_marginal(t)
        assert other <= best + 1e-8
    k1, nu1, _ = empirical_bayes(prior.mu, cov, t, kappa0=5.0)
    assert k1 == 5.0 and nu1 > 4


def shifted_problem(seed, d=4, n=1):
    """Broad anchors N(0, I); n targets from a shifted, rotated, anisotropic distribution (the
    audit's setting in which empirical Bayes ran to its bound)."""
    rng = np.random.default_rng(seed)
    broad = rng.normal(size=(200, d))
    rot = scipy.stats.special_ortho_group.rvs(d, random_state=seed)
    t = (rng.normal(size=(n, d)) * np.linspace(2.0, 0.3, d)) @ rot.T + 0.7
    return broad.mean(0), np.cov(broad.T, bias=True), t


def test_empirical_bayes_cannot_collapse_at_one_target():
    """Audit: without a hyperprior 30 of 30 cases at n = 1 ran to 10⁶ pseudo-anchors and the
    Σ₁₁ interval collapsed.  Now every choice is interior and the posterior sd stays sizeable."""
    for seed in range(30):
        mu0, cov, t = shifted_problem(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a bound would warn
            r = empirical_bayes_fit(mu0, cov, t)
        assert r["at_bound"] == [] and max(r["kappa0"], r["nu0"] - 5) < 1e3
        post = NIW.from_scale(mu0, cov, r["kappa0"], r["nu0"]).update(t)
        s11 = post.sample(np.random.default_rng(seed), 400)["Sigma"][:, 0, 0]
        assert s11.std() > 0.05 * s11.mean()


def test_empirical_bayes_bound_is_reported_and_warned():
    mu0, cov, t = shifted_problem(0)
    with pytest.warns(UserWarning, match="bound"):
        r = empirical_bayes_fit(mu0, cov, t, hyperprior=False)
    assert "nu0" in r["at_bound"]


@pytest.mark.parametrize(
    "n, hyperprior", [(1, True), (2, True), (3, True), (3, False), (20, False)]
)
def test_empirical_bayes_reaches_the_grid_maximum(n, hyperprior):
    """Against a dense 2-D grid (600² log-spaced points) of the same objective."""
    mu0, cov, t = shifted_problem(3, n=n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = empirical_bayes_fit(mu0, cov, t, hyperprior=hyperprior)
    curve = _MarginalCurve(mu0, cov, t)
    g = np.linspace(np.log(EB_BOUNDS[0]), np.log(EB_BOUNDS[1]), 600)
    lk, ls = np.meshgrid(g, g)
    obj = curve(np.exp(lk), np.exp(ls))
    if hyperprior:
        obj = obj + log_hyperprior(lk) + log_hyperprior(ls)
    assert r["objective"] >= obj.max() - 1e-9
    assert r["objective"] <= obj.max() + 0.05  # the grid is dense: no wild gap


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
