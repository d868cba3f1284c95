"""Matrix Bingham (latent Gaussian) and posterior-like Bingham (latent spherical) updates:
closed forms, limits, and NUTS on the explicit models against the exact Gibbs sampler."""

import jax
import numpy as np
import pytest
from numpyro.infer import MCMC, NUTS

from helpers import normed
from anchordiv.anchors.gaussian import moments
from anchordiv.adaptation.statistics import gaussian_strengths
from anchordiv.adaptation.families.latent_gaussian import (
    BinghamPrior,
    latent_gaussian_model,
    latent_gaussian_update,
    latent_options,
    ppca_noise,
    ppca_scale,
    recipe_rank,
)
from anchordiv.adaptation.distributions import bingham_gibbs
from anchordiv.adaptation.families.latent_spherical import (
    latent_spherical_model,
    latent_spherical_update,
    normalised_covariance,
)


def data(d=3, nb=200, n=10, seed=0):
    rng = np.random.default_rng(seed)
    broad = rng.normal(size=(nb, d)) * np.linspace(2.0, 0.5, d)
    targets = rng.normal(size=(n, d)) * np.linspace(0.5, 2.0, d)
    return broad, targets


def projector(u):
    return np.einsum("...ik,...jk->...ij", u, u)


def test_latent_gaussian_update_is_conjugate():
    broad, t = data(d=4)
    n, n0 = len(t), 15.0
    beta = n / (n + n0)
    post, info = latent_gaussian_update(broad, t, rank=2, beta=beta)
    _, cov_b = moments(broad)
    c, _, _ = ppca_scale(np.linalg.eigvalsh(cov_b)[::-1], 2)
    s_t = (t - t.mean(0)).T @ (t - t.mean(0))
    np.testing.assert_allclose(post.parameter, c * (n0 * cov_b + s_t), rtol=1e-10)
    assert info["model_kwargs"]["target_weight"] == pytest.approx(1.0)
    w, v = np.linalg.eigh(post.parameter)
    np.testing.assert_allclose(projector(post.mode()["U"]), projector(v[:, -2:]), atol=1e-10)
    np.testing.assert_allclose(post.location, (1 - beta) * broad.mean(0) + beta * t.mean(0))


@pytest.mark.parametrize("update", ["gaussian", "spherical"])
def test_beta_limits(update):
    broad, t = data(d=4)

    def run(beta):
        if update == "gaussian":
            return latent_gaussian_update(broad, t, rank=2, beta=beta)[0].mode()["U"]
        return latent_spherical_update(broad, t, rank=2, beta=beta, concentration=5.0)[0].mode()[
            "U"
        ]

    def top(x):
        _, v = np.linalg.eigh(moments(x)[1])
        return v[:, -2:]

    np.testing.assert_allclose(projector(run(0.0)), projector(top(broad)), atol=1e-8)
    np.testing.assert_allclose(projector(run(1.0)), projector(top(t)), atol=1e-8)


def test_posterior_like_parameter():
    broad, t = data(d=4)
    post, _ = latent_spherical_update(broad, t, rank=2, beta=0.3, concentration=7.0)
    _, v = np.linalg.eigh(moments(broad)[1])
    c = normalised_covariance(t, 2)
    assert np.trace(c) == pytest.approx(2.0)
    np.testing.assert_allclose(
        post.parameter, 7.0 * (0.7 * projector(v[:, -2:]) + 0.3 * c), atol=1e-10
    )


def nuts_projector(model, kwargs, targets, seed=0):
    mcmc = MCMC(NUTS(model), num_warmup=300, num_samples=600, num_chains=1, progress_bar=False)
    mcmc.run(jax.random.PRNGKey(seed), targets, **kwargs)
    return projector(np.asarray(mcmc.get_samples()["U"])).mean(0)


@pytest.mark.slow
def test_nuts_latent_gaussian_agrees_with_exact():
    """d = 3, k = 1: E[UUᵀ] under NUTS on the explicit model = under the exact posterior."""
    broad, t = data(d=3, n=6, seed=1)
    post, info = latent_gaussian_update(broad, t, rank=1, beta=6 / 10)
    exact = projector(bingham_gibbs(post.parameter, 1, 3000, np.random.default_rng(0))).mean(0)
    np.testing.assert_allclose(
        nuts_projector(latent_gaussian_model, info["model_kwargs"], t), exact, atol=0.06
    )


@pytest.mark.slow
def test_nuts_latent_spherical_agrees_with_exact():
    broad, t = data(d=3, n=8, seed=2)
    post, info = latent_spherical_update(broad, t, rank=2, beta=0.5, concentration=4.0)
    exact = projector(bingham_gibbs(post.parameter, 2, 3000, np.random.default_rng(0))).mean(0)
    np.testing.assert_allclose(
        nuts_projector(latent_spherical_model, info["model_kwargs"], t), exact, atol=0.06
    )


def embeddings(rng, rot, n, decay=0.7):
    """Unit rows with a power-law spectrum (like text embeddings), shifted off the origin."""
    d = rot.shape[0]
    x = (rng.normal(size=(n, d)) * np.arange(1, d + 1) ** -decay) @ rot.T + 0.3
    return normed(x)


def mean_angle_to_mode(d, n, seed=0, **opts):
    """(mean principal angle of 6 exact draws to the mode, of a uniform subspace, info)."""
    import anchordiv as ad
    from anchordiv.adaptation.protocol import principal_angles

    rng = np.random.default_rng(seed)
    rot = np.linalg.qr(rng.normal(size=(d, d)))[0]
    broad, t = embeddings(rng, rot, 3000), embeddings(np.random.default_rng(n), rot, n)
    post = ad.adapt("latent-spherical", broad, t, tau=20.0, **opts)
    mode = post.params("map")["U"]
    uniform = np.linalg.qr(rng.normal(size=mode.shape))[0]
    return (
        principal_angles(post.draws(0, 6)["U"], mode).mean(),
        principal_angles(uniform, mode).mean(),
        post.info,
    )


def test_spherical_default_concentration_comes_from_the_likelihood():
    """Audit: κ = n₀ + n gave draws no closer to the mode than uniform subspaces.  The derived
    κ = m ℓ²/(2σ²(σ² + ℓ)) carries information and tightens as targets are added."""
    few, uniform, info = mean_angle_to_mode(48, 2)
    many, _, info_many = mean_angle_to_mode(48, 200)
    assert many < few < 0.8 * uniform
    assert info_many["concentration"] > 5 * (200 + 10)  # information factor > 5 here
    signal, noise = 3.0, 0.5  # κ/m = c ℓ = ℓ²/(2σ²(σ² + ℓ))
    c, _, _ = ppca_scale(np.array([signal + noise] * 2 + [noise] * 3), 2)
    assert c * signal == pytest.approx(signal**2 / (2 * noise * (noise + signal)))


@pytest.mark.slow
def test_spherical_draws_carry_information_at_d384():
    few, uniform, _ = mean_angle_to_mode(384, 5)
    many, _, _ = mean_angle_to_mode(384, 100)
    assert many < few < 0.8 * uniform


def test_exact_latent_inference_data_has_independent_chains():
    """Audit: one Gibbs chain split in two read as r_hat 1.15.  Now two independent chains."""
    import arviz as az

    import anchordiv as ad

    broad, t = data(d=4, n=12)
    post = ad.adapt("latent-gaussian", broad, t, tau=5.0, rank=2)
    idata = ad.inference_data(post, num_draws=400, seed=0)
    assert idata["posterior"].sizes["chain"] == 2
    assert float(az.rhat(idata)["max_principal_angle"]) < 1.05
    u = post.exact.sample_chains(np.random.default_rng(0), 2, 3)["U"]
    assert not np.allclose(u[0, 0], u[1, 0])  # different seeds, not one chain split
    # the posterior's chains (its parameters' sample) are these very Gibbs chains, bit for bit
    np.testing.assert_array_equal(post.chain_draws(0, 2, 3)["U"], u)


@pytest.mark.filterwarnings("ignore:target_anchors.*not unit-norm")
def test_recipe_rank_is_recovered_on_a_planted_low_rank_problem():
    """The latent kinds' recipe (moved from ``recipe``): the planted rank, β = n/(n + s)."""
    d, rng = 12, np.random.default_rng(5)
    planted = np.linalg.qr(rng.normal(size=(d, d)))[0][:, :5]
    targets = 0.3 + rng.normal(size=(80, 5)) @ planted.T + 0.01 * rng.normal(size=(80, d))
    broad = rng.normal(size=(300, d)) * np.r_[5.0, np.full(d - 1, 0.2)]  # one leading dir.
    g = gaussian_strengths(broad, targets)
    opts = latent_options(broad, targets, strengths=g)
    assert opts["rank"] == 5
    assert opts["beta"] == pytest.approx(80 / (80 + g["strength"]))
    assert latent_options(broad, targets) == opts
    assert recipe_rank(broad, None, novelty=1.0) == 1  # the broad stable rank here
    assert BinghamPrior.from_anchors(broad).rank == recipe_rank(broad, None, novelty=1.0)


def test_ppca_noise_is_the_floored_mean_discarded_eigenvalue():
    w = np.array([4.0, 2.0, 1.0, 0.0])
    assert ppca_noise(w, 2) == pytest.approx(0.5)
    assert ppca_noise(w, 3) == pytest.approx(1e-3 * w.mean())  # floored
    assert ppca_noise(w, 4) == pytest.approx(1e-3 * w.mean())  # nothing discarded


def test_a_latent_prior_draw_is_one_chain_burnt_in_longer():
    """SBC's truth (``Likelihood.prior_draw``): one Gibbs chain of PRIOR_BURN_IN sweeps, not the
    first of ``prior_draws`` (BURN_IN sweeps)."""
    import anchordiv as ad
    from anchordiv.adaptation.distributions import bingham_chains
    from anchordiv.adaptation.families.latent_gaussian import PRIOR_BURN_IN

    broad, t = data(d=4, n=12)
    lik = ad.adapt("latent-gaussian", broad, t, tau=5.0, rank=2).likelihood()
    b0 = lik.prior_parameter()
    want = bingham_chains(b0, 2, 1, np.random.default_rng(3), chains=1, burn_in=PRIOR_BURN_IN)
    np.testing.assert_array_equal(lik.prior_draw(np.random.default_rng(3))["U"], want[0, 0])
    assert not np.array_equal(want[0, 0], lik.prior_draws(np.random.default_rng(3), 1)["U"][0])
