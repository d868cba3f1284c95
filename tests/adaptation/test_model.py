"""Densities of posterior draws: the log joint at constrained parameters (the NUTS MAP) and the
pointwise log-likelihood per kind, against scipy references."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.stats

import anchordiv as ad
from anchordiv.adaptation import FAMILIES
from anchordiv.adaptation import model as model_module
from anchordiv.adaptation.model import log_joint, with_log_density
from anchordiv.adaptation.posterior import SampledPosterior
from anchordiv.errors import AnchorDivError

DEFAULT_MODELS = {kind: fam.model for kind, fam in FAMILIES.items()}

D = 2


def centred_niw_model(targets, *, mu0, kappa0, nu0, psi0, **_):
    """The NIW in its textbook centred form (sites ``Sigma``, ``mu`` sampled directly): the
    library's model has the same law in Bartlett coordinates, where ``mu`` and ``Sigma`` are
    deterministic, so densities *of the parameters* are checked against this one."""
    import numpyro
    import numpyro.distributions as dist

    sigma = numpyro.sample("Sigma", dist.InverseWishart(nu0, scale_matrix=psi0))
    mu = numpyro.sample("mu", dist.MultivariateNormal(mu0, sigma / kappa0))
    with numpyro.plate("anchors", targets.shape[0]):
        numpyro.sample("targets", dist.MultivariateNormal(mu, sigma), obs=targets)


MODELS = {**DEFAULT_MODELS, "gaussian": centred_niw_model}


def problem(n=8, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(100, D)), rng.normal(size=(n, D)) * 0.5 + 0.3


def test_log_joint_is_the_niw_density():
    broad, t = problem()
    post = ad.adapt("gaussian", broad, t, tau=5.0, kappa0=2.0, nu0=D + 3.0)
    kw = post.model_kwargs
    draws = post.draws(0, 5)
    got = log_joint(MODELS["gaussian"], t, kw, draws)
    for i in range(5):
        mu, sig = draws["mu"][i], draws["Sigma"][i]
        ref = (
            scipy.stats.invwishart(kw["nu0"], kw["psi0"]).logpdf(sig)
            + scipy.stats.multivariate_normal(kw["mu0"], sig / kw["kappa0"]).logpdf(mu)
            + scipy.stats.multivariate_normal(mu, sig).logpdf(t).sum()
        )
        assert got[i] == pytest.approx(ref, rel=1e-10)


def potential_energy(model, t, kwargs, draws):
    """NUTS's potential energy (−log density of the unconstrained coordinates) of each draw."""
    import jax
    from numpyro.infer.util import potential_energy as pe
    from numpyro.infer.util import unconstrain_fn

    def one(p):
        return pe(model, (t,), kwargs, unconstrain_fn(model, (t,), kwargs, p))

    return np.asarray(jax.vmap(one)({k: np.asarray(v) for k, v in draws.items()}))


def test_map_picks_the_constrained_density_not_the_potential_energy():
    """Draws as a sampler would hold them (exact posterior draws plus their potential energy):
    the highest-density draw is nearer the exact joint mode than the lowest-energy one."""
    broad, t = problem()
    exact = ad.adapt("gaussian", broad, t, tau=5.0, kappa0=2.0, nu0=D + 3.0)
    kw = exact.model_kwargs
    draws = exact.draws(0, 2000)
    sampled = SampledPosterior(
        "gaussian",
        "nuts",
        5.0,
        "<f8",
        dict(exact.info),
        fixed={},
        samples={k: v[None] for k, v in draws.items()},
        stats={"potential_energy": potential_energy(MODELS["gaussian"], t, kw, draws)[None]},
        model_kwargs=kw,
    )
    mode = exact.params("map")["Sigma"]
    with pytest.warns(UserWarning, match="potential energy"):
        err_old = np.abs(sampled.params("map")["Sigma"] - mode).max()
    err_new = np.abs(with_log_density(sampled, t).params("map")["Sigma"] - mode).max()
    assert err_new < 0.5 * err_old


@pytest.mark.slow
def test_nuts_map_is_the_constrained_mode():
    """Audit: the lowest potential energy (unconstrained coordinates) was 0.047 off the joint
    mode Ψₙ/(νₙ + d + 2) here; the highest constrained density is within half of that, and no
    draw beats the exact mode's density."""
    broad, t = problem()
    opts = {"kappa0": 2.0, "nu0": D + 3.0}
    exact = ad.adapt("gaussian", broad, t, tau=5.0, **opts)
    nuts = ad.adapt(
        "gaussian",
        broad,
        t,
        tau=5.0,
        method="nuts",
        num_samples=600,
        num_warmup=300,
        num_chains=1,
        progress=False,
        **opts,
    )
    mode = exact.params("map")
    flat = nuts.flat_samples()  # the old "map": the lowest potential energy
    i = int(np.argmin(np.asarray(nuts.stats["potential_energy"]).reshape(-1)))
    old = {k: v[i] for k, v in flat.items()}
    post = with_log_density(nuts, t, model_kwargs=exact.model_kwargs)
    new = post.params("map")
    err_old = np.abs(old["Sigma"] - mode["Sigma"]).max()
    err_new = np.abs(new["Sigma"] - mode["Sigma"]).max()
    assert err_new < 0.5 * err_old
    at_mode = log_joint(
        MODELS["gaussian"], t, exact.model_kwargs, {k: v[None] for k, v in mode.items()}
    )[0]
    assert post.stats["log_density"].max() <= at_mode


def gaussian_reference(t, mu, cov):
    return scipy.stats.multivariate_normal(mu, cov).logpdf(t)


@pytest.mark.parametrize(
    "kind, opts",
    [
        ("gaussian", {}),
        ("latent-gaussian", {"rank": 1}),
        ("latent-spherical", {"rank": 1 + 1}),
        ("mixture", {"components": 2}),
    ],
)
def test_family_log_likelihood_matches_scipy(kind, opts):
    rng = np.random.default_rng(1)
    broad, t = rng.normal(size=(60, 3)), rng.normal(size=(6, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = ad.adapt(kind, broad, t, tau=5.0, **opts)
    draws = post.draws(0, 3)
    ll = post.likelihood().log_density(draws, t)
    assert ll.shape == (3, 6)
    for s in range(3):
        if kind == "gaussian":
            ref = gaussian_reference(t, draws["mu"][s], draws["Sigma"][s])
        elif kind == "mixture":
            w, m, c = draws["weights"][s], draws["means"][s], draws["covs"][s]
            ref = np.log(
                sum(w[j] * np.exp(gaussian_reference(t, m[j], c[j])) for j in range(len(w)))
            )
        else:  # leave-one-out: each target given the others' mean, covariance n/(n−1)·C
            u, f = draws["U"][s], post.fixed
            cov = f["ppca_noise"] * np.eye(3) + f["ppca_signal"] * u @ u.T
            ref = [
                scipy.stats.multivariate_normal(np.delete(t, i, 0).mean(0), 6 / 5 * cov).logpdf(
                    t[i]
                )
                for i in range(6)
            ]
        np.testing.assert_allclose(ll[s], ref, rtol=1e-10)


def mean_marginal(t, cov):
    """``log ∫ Π_i N(t_i | m, C) dm`` (flat prior on m) for ``t [n, d]``: the latent kinds'
    likelihood of U with the PPCA mean integrated out (closed form)."""
    n, d = t.shape
    scatter = (t - t.mean(0)).T @ (t - t.mean(0))
    return (
        -0.5 * (n - 1) * d * np.log(2 * np.pi)
        - 0.5 * d * np.log(n)
        - 0.5 * (n - 1) * np.linalg.slogdet(cov)[1]
        - 0.5 * np.trace(np.linalg.solve(cov, scatter))
    )


@pytest.mark.parametrize("kind", ["latent-gaussian", "latent-spherical"])
def test_latent_pointwise_likelihood_is_leave_one_out(kind):
    """``log p(t_i | T₋ᵢ, U) = log p(T | U) − log p(T₋ᵢ | U)`` of the mean-marginalised
    likelihood for the fit's targets, ``log p(T ∪ {t} | U) − log p(T | U)`` for new anchors; the
    plug-in (mean of all targets) was above it."""
    rng = np.random.default_rng(3)
    broad, t, new = rng.normal(size=(80, 4)), rng.normal(size=(7, 4)), rng.normal(size=(3, 4))
    post = ad.adapt(kind, broad, t, tau=5.0, rank=2)
    draws = post.draws(0, 2)
    own = post.likelihood().log_density(draws, t[::-1])[:, ::-1]  # any order
    held = post.likelihood().log_density(draws, new)
    f = post.fixed
    for s in range(2):
        u = draws["U"][s]
        cov = f["ppca_noise"] * np.eye(4) + f["ppca_signal"] * u @ u.T
        whole = mean_marginal(t, cov)
        ref = [whole - mean_marginal(np.delete(t, i, 0), cov) for i in range(7)]
        np.testing.assert_allclose(own[s], ref, rtol=1e-10)
        ref = [mean_marginal(np.vstack([t, x]), cov) - whole for x in new]
        np.testing.assert_allclose(held[s], ref, rtol=1e-10)
        assert np.all(gaussian_reference(t, t.mean(0), cov) > own[s])
    with pytest.raises(AnchorDivError, match="at least 2"):
        one = ad.adapt(kind, broad, t[:1], tau=5.0, rank=2)
        one.likelihood().log_density(one.draws(0, 1), t[:1])


def test_latent_log_joint_uses_the_frame():
    rng = np.random.default_rng(2)
    broad, t = rng.normal(size=(60, 4)), rng.normal(size=(7, 4))
    post = ad.adapt("latent-gaussian", broad, t, tau=5.0, rank=2)
    kw = post.model_kwargs
    draws = post.draws(0, 3)
    got = log_joint(MODELS["latent-gaussian"], t, kw, draws)
    for s in range(3):
        u = draws["U"][s]
        cov = kw["noise"] * np.eye(4) + kw["signal"] * u @ u.T
        ref = (
            np.trace(u.T @ kw["prior_parameter"] @ u)
            + kw["target_weight"] * gaussian_reference(t, kw["mean"], cov).sum()
        )
        assert got[s] == pytest.approx(ref, rel=1e-10)


@pytest.mark.parametrize(
    "kind, opts",
    [
        ("gaussian", {"kappa0": 2.0, "nu0": 6.0}),
        ("latent-gaussian", {"rank": 2}),
        ("latent-spherical", {"rank": 2}),
        ("mixture", {"components": 2}),
    ],
)
def test_closed_form_log_joint_equals_the_model(kind, opts):
    """The closed form (used for the default models, whatever their NumPyro parametrisation)
    equals the explicit model's log joint at the same constrained parameters."""

    rng = np.random.default_rng(3)
    broad, t = rng.normal(size=(80, 3)), rng.normal(size=(7, 3))
    post = ad.adapt(kind, broad, t, tau=5.0, **opts)
    kw, draws = post.model_kwargs, post.draws(0, 3)
    np.testing.assert_allclose(
        post.likelihood().log_joint(t, draws), log_joint(MODELS[kind], t, kw, draws), rtol=1e-9
    )


def test_the_traced_likelihood_names_draws_it_cannot_read():
    """Exact latent-spherical draws hold ``U`` only (no auxiliary ``U_raw``): the generic
    traced likelihood says so in an AnchorDivError, not numpyro's bare AssertionError."""
    from anchordiv.adaptation.model import Likelihood

    rng = np.random.default_rng(0)
    broad, t = rng.normal(size=(60, 4)), rng.normal(size=(6, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = ad.adapt("latent-spherical", broad, t, tau=20.0, rank=2)
    lik = Likelihood(post.family_class, post.model_kwargs, post.fixed, 4)
    with pytest.raises(AnchorDivError, match=r"cannot score these draws \(sites U \(5, 4, 2\)"):
        lik.log_density(post.draws(0, 5), t)


def lkj_float32_draws(d=6, n=5):
    """Cholesky factors of correlation matrices rounded to float32 (rows off unit norm by
    ~1e-7), as a float32 NUTS or SVI run leaves them, stored in float64."""
    rng = np.random.default_rng(0)
    chol = np.tril(rng.normal(size=(n, d, d)))
    chol[:, np.arange(d), np.arange(d)] = np.abs(chol[:, np.arange(d), np.arange(d)]) + 0.1
    chol /= np.linalg.norm(chol, axis=-1, keepdims=True)
    return chol.astype(np.float32).astype(np.float64)


def test_float32_lkj_draws_are_rescored_on_their_support_not_at_minus_infinity():
    """Issue 51: re-scored in float64, where NumPyro's support check is stricter, float32
    Cholesky draws were −∞ at every draw; they are moved onto the support (by ~1e-7) first —
    and a value that is not a rounding (far off the support) still scores −∞."""
    import jax
    from anchordiv.adaptation.families.structured import lkj_model

    d, chol = 6, lkj_float32_draws(n=2)
    assert np.abs(np.linalg.norm(chol, axis=-1) - 1).max() > 1e-8  # off the float64 support
    chol[1] *= 1.5  # not a rounding: far off the support
    kw = dict(mu0=np.zeros(d), mean_scale=np.ones(d), scale0=np.ones(d), scale_spread=0.3)
    draws = {"mu_std": np.zeros((2, d)), "scales_std": np.zeros((2, d)), "corr_cholesky": chol}
    with jax.enable_x64(True):
        kw = {k: jax.numpy.asarray(v) for k, v in kw.items()} | {"concentration": 2.0}
        t = jax.numpy.zeros((1, d))
        lp = log_joint(lkj_model, t, kw, draws)
        assert np.isfinite(lp[0]) and lp[1] == -np.inf
        names = model_module.nonfinite_density_sites(lkj_model, t, kw, draws, 1)
        assert names == ["corr_cholesky"]


def test_a_non_finite_log_prior_is_an_error_naming_the_site():
    from anchordiv.checks.uncertainty import log_prior

    rng = np.random.default_rng(0)
    broad, t = rng.normal(size=(40, 3)), rng.normal(size=(5, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = ad.adapt("gaussian", broad, t, tau=20.0, kappa0=5.0, nu0=10.0)
    draws = post.draws(0, 4)
    assert np.all(np.isfinite(log_prior(post, draws)))
    draws["mu"][2] = np.inf
    with pytest.raises(AnchorDivError, match=r"log prior: not finite at 1 of 4 draws.*'mu'"):
        log_prior(post, draws)


@pytest.mark.slow
def test_nuts_on_lkj_gaussian_has_a_finite_log_prior_at_every_draw():
    """Issue 51's case: NUTS on lkj-gaussian at d = 6 (float32): log prior and log density
    finite at every draw (the "map" draw is the one of highest density, not draw 0 of all −∞),
    ArviZ's log_prior group finite, ad.prior_sensitivity runs."""
    import jax

    from anchordiv.checks import arviz as adz

    rng = np.random.default_rng(0)
    d = 6
    broad = rng.normal(size=(80, d))
    broad /= np.linalg.norm(broad, axis=1, keepdims=True)
    t = broad[:8] + 0.1 * rng.normal(size=(8, d))
    t /= np.linalg.norm(t, axis=1, keepdims=True)
    nuts = dict(num_warmup=60, num_samples=40, num_chains=1, seed=0, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with jax.enable_x64(False):  # the user's default: JAX in float32 (the tests run in x64)
            post = ad.adapt("lkj-gaussian", broad, t, tau=20.0, method="nuts", **nuts)
        chol = post.samples["corr_cholesky"]
        assert np.abs(np.linalg.norm(chol, axis=-1) - 1).max() > 1e-9  # float32 draws
        lp = post.stats["log_density"]
        assert np.all(np.isfinite(lp))
        best = int(np.argmax(lp.reshape(-1)))
        np.testing.assert_array_equal(
            post.params("map")["mu"], post.samples["mu"].reshape(-1, d)[best]
        )
        idata = ad.inference_data(post, num_draws=40, prior=False)
        assert np.all(np.isfinite(adz.dataset(idata, "log_prior")["theta"].values))
        res = ad.prior_sensitivity(post, num_draws=40)
    assert np.all(np.isfinite(res.table()["prior"].to_numpy(float)))


def test_a_float32_lkj_draw_is_moved_onto_its_support_in_float64():
    """A loaded lkj-gaussian SVI posterior (float32 draws) raised a raw ``TypeError: lax.scatter
    requires arguments to have the same dtypes`` in its log prior (the fuzz with use)."""
    import jax.numpy as jnp
    import numpyro.distributions as dist

    fn = dist.LKJCholesky(3, concentration=2.0)
    value = np.linalg.cholesky(np.array([[1, 0.3, 0], [0.3, 1, 0.2], [0, 0.2, 1]])).astype("f4")
    moved = model_module.on_support(fn, jnp.asarray(value))
    assert moved.dtype == jnp.result_type(float)
    np.testing.assert_allclose(np.asarray(moved), value, atol=1e-6)
    assert np.isfinite(float(fn.log_prob(moved)))
