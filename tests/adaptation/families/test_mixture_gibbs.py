"""Mixture draws with assignment uncertainty: Gibbs over the assignments agrees with the
EM-conditional posterior where the components are well separated and is wider where they
overlap."""

import numpy as np

import anchordiv as ad
from anchordiv.adaptation.families import mixture as mixture_gibbs


def two_clusters(sep, n=30, d=3, seed=0):
    rng = np.random.default_rng(seed)
    centres = np.zeros((2, d))
    centres[:, 0] = [-sep / 2, sep / 2]
    lab = rng.integers(2, size=400)
    broad = centres[lab] + 0.5 * rng.normal(size=(400, d))
    t = centres[rng.integers(2, size=n)] + 0.5 * rng.normal(size=(n, d))
    return broad, t


def fit(sep):
    broad, t = two_clusters(sep)
    return ad.adapt("mixture", broad, t, tau=5.0, components=2, alpha0=10.0, kappa0=20.0, nu0=9.0)


def test_separated_clusters_match_the_conditional_posterior():
    post = fit(8.0)
    assert post.exact_chains(np.random.default_rng(0), 1, 2) is not None  # the Gibbs sampler
    gibbs = post.draws(0, 400)
    cond = post.exact.sample(np.random.default_rng(1), 400)
    np.testing.assert_allclose(gibbs["weights"].mean(0), cond["weights"].mean(0), atol=0.03)
    np.testing.assert_allclose(gibbs["means"].mean(0), cond["means"].mean(0), atol=0.05)


def test_overlap_widens_the_weights_and_chains_have_their_shape():
    post = fit(1.5)
    gibbs = post.draws(0, 600)
    cond = post.exact.sample(np.random.default_rng(1), 600)
    assert gibbs["weights"][:, 0].std() > 1.1 * cond["weights"][:, 0].std()
    trace = lambda c: np.trace(c[:, 0], axis1=-2, axis2=-1).std()  # noqa: E731
    assert trace(gibbs["covs"]) > 1.1 * trace(cond["covs"])
    chains = mixture_gibbs.posterior_chains(post, np.random.default_rng(2), 2, 10)
    assert chains["covs"].shape == (2, 10, 2, 3, 3)
    idata = ad.inference_data(post, num_draws=20)
    assert idata["posterior"]["weights"].shape == (2, 10, 2)
