"""Closed forms of the Gaussian likelihood and the NIW density against scipy; the likelihood
object and the anchor model of one parameter set."""

import numpy as np
import pytest
import scipy.special
import scipy.stats as st

from anchordiv.adaptation.families import gaussian
from anchordiv.adaptation.families.gaussian_likelihood import (
    GaussianLikelihood,
    cov_factor,
    gaussian_logpdf,
    gaussian_model,
    gaussian_predictive,
    log_iw,
    log_multigamma,
    log_niw,
)


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
