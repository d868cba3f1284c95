"""The spectral shrinkage prior's algebra against dense float64 references (scipy): the
low-rank-plus-isotropic log density, the collapsed marginal of the target set, the square root,
and the closed-form log joint against the model's own NumPyro density."""

import jax
import numpy as np
import pytest
import scipy.stats

import anchordiv as ad
from anchordiv.adaptation.families import spectral

D, K = 7, 3


def setup(seed=0, s=4):
    rng = np.random.default_rng(seed)
    v_basis = np.linalg.qr(rng.normal(size=(D, K)))[0]
    v = rng.uniform(0.2, 3.0, size=(s, K))
    s2 = rng.uniform(0.1, 0.5, size=s)
    mu = rng.normal(size=(s, D))
    t = rng.normal(size=(5, D))
    return rng, v_basis, v, s2, mu, t


def dense(v_basis, v, s2):
    return v_basis @ np.diag(v) @ v_basis.T + s2 * (np.eye(D) - v_basis @ v_basis.T)


def test_logpdf_matches_the_dense_multivariate_normal():
    _, vb, v, s2, mu, t = setup()
    got = spectral.gaussian_logpdf(t, mu, vb, v, s2)
    want = np.stack(
        [
            scipy.stats.multivariate_normal(mu[s], dense(vb, v[s], s2[s])).logpdf(t)
            for s in range(len(mu))
        ]
    )
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_summed_loglik_from_sufficient_statistics_matches_the_pointwise_sum():
    _, vb, v, s2, mu, t = setup()
    want = spectral.gaussian_logpdf(t, mu, vb, v, s2).sum(-1)
    np.testing.assert_allclose(spectral.gaussian_loglik_sum(t, mu, vb, v, s2), want, rtol=1e-12)


def test_square_root_squares_to_sigma():
    rng, vb, v, s2, _, _ = setup()
    root = spectral.sqrt_apply(vb, v[0], s2[0], np.eye(D), np)  # rows: Σ^{1/2} e_i
    np.testing.assert_allclose(root @ root.T, dense(vb, v[0], s2[0]), atol=1e-12)


def test_collapsed_marginal_is_the_dense_marginal_of_the_target_set():
    """T with μ ~ N(μ₀, Σ/κ₀) integrated out: vec(T) ~ N(1 ⊗ μ₀, (I + J/κ₀) ⊗ Σ)."""
    rng, vb, v, s2, _, t = setup()
    mu0, kappa0 = rng.normal(size=D), 2.5
    sigma = dense(vb, v[0], s2[0])
    n = len(t)
    cov = np.kron(np.eye(n) + np.ones((n, n)) / kappa0, sigma)
    want = scipy.stats.multivariate_normal(np.tile(mu0, n), cov).logpdf(t.reshape(-1))
    got = spectral.marginal_loglik(t, mu0, vb, v[0], s2[0], kappa0, np)
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("shrinkage", spectral.SHRINKAGE)
def test_scale_density_matches_numpyro(shrinkage):
    x = np.array([0.05, 0.7, 1.3, 6.0])
    law = spectral.scale_law(shrinkage, 1.7, 3.0)
    want = np.asarray(jax.vmap(law.log_prob)(x), np.float64)
    got = spectral.log_scale_density(shrinkage, x, 1.7, 3.0)
    np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize("free_noise", [True, False])
@pytest.mark.parametrize("shrinkage", spectral.SHRINKAGE)
def test_closed_form_log_joint_is_the_models_density(shrinkage, free_noise):
    """The model's log density at (g, ℓ, h, z), plus the Jacobian ``−½ log|Σ/κₙ|`` of z → μ,
    equals the generative log joint log p(g, ℓ, h) + log N(μ | μ₀, Σ/κ₀) + Σ log N(tᵢ | μ, Σ)
    at the implied μ; with ``map_jacobian`` (μ profiled at μₙ) it is the log joint at μₙ."""
    rng, vb, _, _, _, t = setup(1)
    law = spectral.SpectralLaw(
        rng.normal(size=D), vb, np.array([2.0, 1.0, 0.5]), 0.3, 1.5, shrinkage, 0.8, 3.0, free_noise
    )
    draws = law.sample(rng, 3)
    kw = law.model_kwargs()
    # the model's sites at these draws: μ through its non-centred coordinate (tests run in x64)
    mean, kn = spectral.posterior_mean(t, law.mu0, law.kappa0)
    v, s2 = spectral.variances(law, draws)
    sub = {
        "global_scale": draws["global_scale"],
        "local_scales": draws["local_scales"],
        "mu_raw": np.stack(
            [_whiten(vb, v[i], s2[i], (draws["mu"][i] - mean) * np.sqrt(kn)) for i in range(3)]
        ),
    }
    if free_noise:
        sub["noise_scale"] = draws["noise_scale"]
    got = _model_density(t, kw, sub) - 0.5 * (spectral.logdet(v, s2, D, np) - D * np.log(kn))
    want = law.log_prior(draws) + spectral.gaussian_logpdf(t, draws["mu"], vb, v, s2).sum(-1)
    np.testing.assert_allclose(got, want, rtol=1e-10)
    profiled = _model_density(
        t, {**kw, "map_jacobian": True}, {k: w for k, w in sub.items() if k != "mu_raw"}
    )
    at_mode = {**draws, "mu": np.broadcast_to(mean, draws["mu"].shape)}
    want = law.log_prior(at_mode) + spectral.gaussian_logpdf(t, at_mode["mu"], vb, v, s2).sum(-1)
    # the same up to the constant −d/2 log 2π of N(z = 0 | 0, I)
    np.testing.assert_allclose(profiled - 0.5 * D * np.log(2 * np.pi), want, rtol=1e-10)


def _whiten(vb, v, s2, x):
    """Σ^{-1/2} x."""
    p = x @ vb
    return x / np.sqrt(s2) + ((1 / np.sqrt(v) - 1 / np.sqrt(s2)) * p) @ vb.T


def _model_density(t, kw, sub):
    import jax.numpy as jnp
    from numpyro.infer.util import log_density

    def one(p):
        return log_density(spectral.spectral_model, (jnp.asarray(t),), kw, p)[0]

    return np.asarray(jax.vmap(one)({k: jnp.asarray(v) for k, v in sub.items()}), np.float64)


def test_model_on_the_targets_summary_has_the_targets_density():
    """The samplers pass the model its targets' summary (``spectral_model.model_data``): at
    any parameter point the joint log density equals the one with the targets themselves."""
    from numpyro import handlers
    from numpyro.infer.util import log_density

    rng, vb, v, s2, _, t = setup()
    kw = {
        "mu0": rng.normal(size=D),
        "directions": vb,
        "eigenvalues": rng.uniform(0.5, 2.0, size=K),
        "noise0": 0.3,
        "kappa0": 2.5,
    }
    tj = jax.numpy.asarray(t)
    summary = spectral.spectral_model.model_data(tj, kw)
    for seed in range(3):
        point = handlers.trace(handlers.seed(spectral.spectral_model, seed)).get_trace(tj, **kw)
        params = {
            k: s["value"]
            for k, s in point.items()
            if s["type"] == "sample" and not s["is_observed"]
        }
        raw, _ = log_density(spectral.spectral_model, (tj,), kw, params)
        summ, _ = log_density(spectral.spectral_model, (summary,), kw, params)
        np.testing.assert_allclose(float(summ), float(raw), rtol=1e-12)


def test_one_compiled_sampler_serves_every_target_count():
    """The summary's shapes do not depend on n: fits at n = 3 and n = 7 share one runner."""
    from anchordiv.adaptation import Runners

    rng = np.random.default_rng(0)
    broad = rng.normal(size=(60, D))
    mine = Runners()
    nuts = ad.NUTS(num_warmup=20, num_samples=20, progress=False, runners=mine)
    prior = ad.SpectralPrior.from_anchors(broad, rank=K)
    posts = [ad.infer(prior, rng.normal(size=(n, D)), nuts, tau=10.0) for n in (3, 7)]
    assert len(mine) == 1 and posts[0].raw is posts[1].raw
