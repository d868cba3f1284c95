"""NIW: conjugate update = closed form, marginal likelihood, exact draws, and
NUTS on the explicit model against the conjugate posterior."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.special
import scipy.stats
import scipy.stats as st
from helpers import niw_problem
from numpyro import handlers
from numpyro.infer import MCMC, NUTS
from numpyro.infer.util import log_density

from anchordiv.adaptation.families import gaussian
from anchordiv.adaptation.families.gaussian import (
    EB_BOUNDS,
    NIW,
    BartlettGaussian,
    Conditional,
    GaussianLikelihood,
    MarginalCurve,
    cov_factor,
    empirical_bayes,
    empirical_bayes_fit,
    gaussian_logpdf,
    gaussian_model,
    gaussian_predictive,
    lift_gaussian,
    log_iw,
    log_multigamma,
    log_niw,
    niw_model,
    project_niw,
)
from anchordiv.adaptation.statistics import log_hyperprior
from anchordiv.errors import AnchorDivError

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


def spd(rng, d):
    a = rng.normal(size=(d, d))
    return a @ a.T + d * np.eye(d)


def test_densities_match_scipy():
    rng = np.random.default_rng(0)
    d, t = 3, rng.normal(size=(4, 3))
    mu, cov = rng.normal(size=(2, d)), np.stack([spd(rng, d), spd(rng, d)])
    want = [st.multivariate_normal(mu[s], cov[s]).logpdf(t) for s in range(2)]
    np.testing.assert_allclose(gaussian_logpdf(t, mu, cov), want, rtol=1e-12)
    psi, nu = spd(rng, d), d + 3.5
    np.testing.assert_allclose(log_iw(cov, nu, psi), st.invwishart(nu, psi).logpdf(cov.T).T)
    kw = {"mu0": np.zeros(d), "kappa0": 2.0, "nu0": nu, "psi0": psi}
    normal = [st.multivariate_normal(np.zeros(d), cov[s] / 2.0).logpdf(mu[s]) for s in range(2)]
    np.testing.assert_allclose(log_niw(mu, cov, kw), log_iw(cov, nu, psi) + normal, rtol=1e-12)
    a = np.array([2.5, 4.0])
    np.testing.assert_allclose(log_multigamma(a, d), [scipy.special.multigammaln(x, d) for x in a])


def test_the_likelihood_object_is_the_closed_form():
    rng = np.random.default_rng(1)
    d, t = 2, rng.normal(size=(5, 2))
    draws = {"mu": rng.normal(size=(3, d)), "Sigma": np.stack([spd(rng, d)] * 3)}
    lik = GaussianLikelihood(gaussian.NIWPrior, {}, {}, d)
    np.testing.assert_array_equal(
        lik.log_density(draws, t), gaussian_logpdf(t, draws["mu"], draws["Sigma"])
    )
    assert lik.sample(draws, 7, rng).shape == (3, 7, d)
    assert gaussian_predictive(draws["mu"], draws["Sigma"], 4, rng).shape == (3, 4, d)
    assert lik.site_shapes(d, {}) == {"mu": (d,), "Sigma": (d, d)}


@pytest.mark.parametrize("rank", [2, 1])
def test_cov_factor_reproduces_the_covariance(rank):
    """Cholesky where Σ is positive definite, the eigen fallback where it is singular."""
    v = np.random.default_rng(2).normal(size=(3, rank))
    cov = v @ v.T + (np.eye(3) if rank == 2 else 0.0)
    f = cov_factor(cov)
    np.testing.assert_allclose(f @ f.T, cov, atol=1e-12)
    m = gaussian_model({"mu": np.zeros(3), "Sigma": cov}, 10.0, "float64")
    assert m.kind == "gaussian" and m.dim == 3


def test_the_names_are_importable_from_the_family_module():
    """``anchordiv.adaptation.families.gaussian`` keeps every name it had."""
    for name in ("GaussianLikelihood", "cov_factor", "gaussian_logpdf", "log_niw", "log_iw"):
        assert getattr(gaussian, name) is globals()[name]


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


def posterior(d=5, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(d, d))
    prior = NIW.from_scale(rng.normal(size=d), a @ a.T / d + np.eye(d), 3.0, d + 6.0)
    basis = np.linalg.qr(rng.normal(size=(d, d)))[0]
    return prior.update(rng.normal(size=(8, d))), basis


def test_project_niw_moves_the_hyperparameters_into_the_basis():
    post, basis = posterior()
    u = basis[:, :2]
    out = project_niw(post.model_kwargs(), u, "mu0")
    np.testing.assert_allclose(out["mu0"], post.mu @ u)
    np.testing.assert_allclose(out["psi0"], u.T @ post.psi @ u, atol=1e-12)
    assert out["nu0"] == post.nu - 3 and out["kappa0"] == post.kappa


def test_the_lift_of_the_subspace_mean_is_the_full_mean():
    """E[Σ₂₂ | Σ₁₁] is linear in Σ₁₁, so lifting the marginal's mean gives the full mean."""
    post, basis = posterior()
    r = 2
    full = post.mean()
    rot = basis.T @ full["Sigma"] @ basis
    (lifted,) = lift_gaussian(
        [{"mu": (basis.T @ full["mu"])[:r], "Sigma": rot[:r, :r]}], post, basis, r, "mean", None
    )
    np.testing.assert_allclose(lifted["mu"], full["mu"], atol=1e-12)
    np.testing.assert_allclose(lifted["Sigma"], full["Sigma"], rtol=1e-10, atol=1e-12)


def test_lifted_draws_are_covariances_and_keep_the_subspace_block():
    post, basis = posterior(seed=1)
    r = 2
    cond = Conditional(post, basis, r)
    s11 = np.array([[2.0, 0.3], [0.3, 1.0]])
    out = cond.lift(np.zeros(r), s11, "mean", np.random.default_rng(0))
    sig = out["Sigma"]
    np.testing.assert_allclose(sig, sig.T)
    assert np.linalg.eigvalsh(sig).min() > 0
    np.testing.assert_allclose((basis.T @ sig @ basis)[:r, :r], s11, atol=1e-10)
    assert gaussian.Conditional is Conditional and gaussian.lift_gaussian is lift_gaussian


@pytest.mark.parametrize("d,n", [(4, 7), (6, 3), (5, 1)])
def test_fast_marginal_curve_matches_direct_formula(d, n):
    prior, t = problem(d=d, n=n)
    cov = prior.psi / (prior.nu - d - 1)
    curve = MarginalCurve(prior.mu, cov, t)
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
    curve = MarginalCurve(mu0, cov, t)
    g = np.linspace(np.log(EB_BOUNDS[0]), np.log(EB_BOUNDS[1]), 600)
    lk, ls = np.meshgrid(g, g)
    obj = curve(np.exp(lk), np.exp(ls))
    if hyperprior:
        obj = obj + log_hyperprior(lk) + log_hyperprior(ls)
    assert r["objective"] >= obj.max() - 1e-9
    assert r["objective"] <= obj.max() + 0.05  # the grid is dense: no wild gap
