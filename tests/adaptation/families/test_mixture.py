"""Dirichlet–NIW MAP-EM: one component = the NIW joint mode; prior-strength limits."""

import numpy as np
import pytest

from anchordiv.anchors.gaussian import moments
from anchordiv.anchors.mixture import em
from anchordiv.adaptation.families.mixture import dirichlet_mode, map_em, mixture_prior
from anchordiv.adaptation.families.gaussian import NIW


def clusters(rng, n, d, centres, spread=0.2):
    lab = rng.integers(len(centres), size=n)
    return centres[lab] + spread * rng.normal(size=(n, d))


CENTRES = np.array([[2.0, 0.0], [-2.0, 0.5]])


def test_one_component_is_niw_joint_mode():
    rng = np.random.default_rng(0)
    broad, t = rng.normal(size=(100, 3)), rng.normal(size=(9, 3)) + 1.0
    prior = mixture_prior(broad, components=1, seed=0, reg=1e-3, alpha0=5.0, kappa0=2.0, nu0=7.0)
    post, resp, _ = map_em(prior, t)
    mu0, cov0 = moments(broad, 1e-3)
    niw = NIW.from_scale(mu0, cov0, 2.0, 7.0).update(t)
    mode = post.mode()
    np.testing.assert_allclose(mode["means"][0], niw.mode()["mu"], rtol=1e-10)
    np.testing.assert_allclose(mode["covs"][0], niw.mode()["Sigma"], rtol=1e-10)
    np.testing.assert_allclose(mode["weights"], [1.0])


def test_strong_prior_gives_broad_fit():
    rng = np.random.default_rng(1)
    broad = clusters(rng, 400, 2, CENTRES)
    t = clusters(rng, 30, 2, CENTRES + 0.7)
    prior = mixture_prior(broad, components=2, seed=0, reg=1e-3, alpha0=1e9, kappa0=1e9, nu0=1e9)
    fit = em(broad, 2, reg=1e-3, seed=0)
    for summary in (map_em(prior, t)[0].mean(), map_em(prior, t)[0].mode()):
        np.testing.assert_allclose(summary["means"], fit.means, atol=1e-6)
        np.testing.assert_allclose(summary["covs"], fit.covs, rtol=1e-5)
        np.testing.assert_allclose(summary["weights"], fit.weights, atol=1e-6)


def test_weak_prior_gives_target_only_fit():
    rng = np.random.default_rng(2)
    broad = clusters(rng, 400, 2, CENTRES)
    t = clusters(rng, 600, 2, CENTRES + 0.3, spread=0.15)
    prior = mixture_prior(
        broad, components=2, seed=0, reg=1e-3, alpha0=1e-6, kappa0=1e-6, nu0=3 + 1e-6
    )
    post, _, _ = map_em(prior, t)
    fit = em(t, 2, reg=0.0, seed=0)
    order = np.argsort(fit.means[:, 0])
    mean = post.mean()
    got = np.argsort(mean["means"][:, 0])
    np.testing.assert_allclose(mean["means"][got], fit.means[order], atol=1e-4)
    np.testing.assert_allclose(mean["covs"][got], fit.covs[order], rtol=1e-3, atol=1e-6)
    # the mode weights ∝ α₀π⁰ + n_k are the target-only ones; the mean carries one uniform
    # pseudo-anchor per component: (1 + n_k)/(K + n)
    np.testing.assert_allclose(post.mode()["weights"][got], fit.weights[order], atol=1e-4)
    np.testing.assert_allclose(
        mean["weights"][got], (1 + 600 * fit.weights[order]) / 602, atol=1e-4
    )


def test_map_keeps_small_broad_components():
    """Audit: with Dir(α₀π⁰) a broad component of weight < 1/α₀ got MAP weight 0 when no target
    was near it.  Now its MAP weight is (α₀π⁰_k + n_k)/(α₀ + n)."""
    rng = np.random.default_rng(4)
    centres = np.array([[2.0, 0.0], [-2.0, 0.5], [0.0, -3.0]])
    lab = np.r_[np.zeros(190, int), np.ones(190, int), np.full(20, 2)]  # third: 5 % weight
    broad = centres[lab] + 0.2 * rng.normal(size=(400, 2))
    t = clusters(rng, 10, 2, centres[:2])
    prior = mixture_prior(broad, components=3, seed=0, reg=1e-3, alpha0=10.0, kappa0=10.0, nu0=13.0)
    post, resp, _ = map_em(prior, t)
    fit = em(broad, 3, reg=1e-3, seed=0)
    small = int(np.argmin(fit.weights))
    expect = (10.0 * fit.weights + resp.sum(0)) / 20.0
    assert fit.weights[small] < 0.1
    np.testing.assert_allclose(post.mode()["weights"], expect, rtol=1e-9)
    assert post.mode()["weights"][small] > 0.02


def test_dirichlet_mode():
    np.testing.assert_allclose(
        dirichlet_mode(np.array([3.0, 2.0, 1.0])), [2 / 3, 1 / 3, 1e-12], rtol=1e-6, atol=1e-12
    )
    np.testing.assert_allclose(dirichlet_mode(np.array([0.5, 0.5])), [0.5, 0.5])


def test_isotropic_prior_keeps_trace():
    rng = np.random.default_rng(3)
    broad = clusters(rng, 200, 2, CENTRES)
    kw = dict(components=2, seed=0, reg=1e-3, alpha0=5.0, kappa0=5.0, nu0=8.0)
    b, i = mixture_prior(broad, **kw), mixture_prior(broad, prior="isotropic", **kw)
    np.testing.assert_allclose(np.trace(i.psi, axis1=1, axis2=2), np.trace(b.psi, axis1=1, axis2=2))
    np.testing.assert_allclose(i.psi[:, 0, 1], 0.0)
    with pytest.raises(Exception, match="prior"):
        mixture_prior(broad, prior="flat", **kw)


@pytest.mark.slow
def test_nuts_on_explicit_model_agrees_with_map_em():
    """d = 2, K = 2, separated clusters: NUTS posterior means of the component means and
    weights agree with the exact posterior given the MAP-EM responsibilities."""
    import jax
    from numpyro.infer import MCMC, NUTS

    from anchordiv.adaptation.families.mixture import dirichlet_niw_model

    rng = np.random.default_rng(4)
    broad = clusters(rng, 400, 2, CENTRES)
    t = clusters(rng, 40, 2, CENTRES + 0.2)
    prior = mixture_prior(broad, components=2, seed=0, reg=1e-3, alpha0=10.0, kappa0=5.0, nu0=8.0)
    post, _, _ = map_em(prior, t)
    mcmc = MCMC(
        NUTS(dirichlet_niw_model), num_warmup=400, num_samples=800, num_chains=1, progress_bar=False
    )
    mcmc.run(jax.random.PRNGKey(0), t, **prior.model_kwargs())
    s = mcmc.get_samples()
    exact = post.mean()
    np.testing.assert_allclose(np.asarray(s["means"]).mean(0), exact["means"], atol=0.05)
    np.testing.assert_allclose(np.asarray(s["weights"]).mean(0), exact["weights"], atol=0.05)


def test_map_em_with_no_iterations_is_a_clear_error():
    """A loaded prior's ``max_iter = 0`` was an UnboundLocalError (issue 45)."""
    import anchordiv as ad

    rng = np.random.default_rng(0)
    prior = mixture_prior(rng.normal(size=(30, 3)), components=2, seed=0, reg=1e-3, alpha0=5.0,
                          kappa0=2.0, nu0=7.0)  # fmt: skip
    with pytest.raises(ad.AnchorDivError, match="max_iter"):
        map_em(prior, rng.normal(size=(5, 3)), max_iter=0)
