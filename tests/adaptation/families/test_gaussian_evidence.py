"""Empirical Bayes of the NIW prior: the fast marginal-likelihood curve against the direct
formula, the maximiser against a dense grid, the hyperprior keeping it off the search bound."""

import warnings

import numpy as np
import pytest
import scipy.stats

from helpers import niw_problem
from anchordiv.adaptation.families.gaussian import NIW
from anchordiv.adaptation.families.gaussian_evidence import (
    EB_BOUNDS,
    MarginalCurve,
    empirical_bayes,
    empirical_bayes_fit,
)
from anchordiv.adaptation.recipe import log_hyperprior


problem = niw_problem


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
