"""Typed inference (ad.Exact / ad.NUTS / ad.SVI), the object API (priors from anchors and from
disk, ad.infer), the convenience ad.adapt refusing options that do not apply, precision left to
the caller, and a user's model checked site by site."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import anchordiv as ad
from anchordiv.adaptation.families import niw_model

D = 4


def anchors(seed=0, n=10):
    rng = np.random.default_rng(seed)
    broad = rng.normal(size=(200, D)) * np.linspace(1.5, 0.4, D)
    t = rng.normal(size=(n, D)) + 0.3
    return broad, t / np.linalg.norm(t, axis=1, keepdims=True)


@pytest.mark.parametrize(
    "make, name, hint",
    [
        (lambda: ad.Exact(num_warmup=5), "num_warmup", "NUTS"),
        (lambda: ad.NUTS(guide="normal"), "guide", "SVI"),
        (lambda: ad.SVI(num_chains=2), "num_chains", "NUTS"),
        (lambda: ad.NUTS(num_samples=0), "num_samples", None),
        (lambda: ad.NUTS(target_accept_prob=1.5), "target_accept_prob", None),
        (lambda: ad.NUTS(chain_method="threads"), "chain_method", None),
        (lambda: ad.SVI(guide="bogus"), "guide", None),
        (lambda: ad.SVI(learning_rate=-1.0), "learning_rate", None),
        (lambda: ad.SVI(subspace=0), "subspace", None),
        (lambda: ad.NUTS(init_strategy="nope"), "init_strategy", None),
        (lambda: ad.NUTS(500), "positional", None),
    ],
)
def test_methods_are_validated_when_built(make, name, hint):
    with pytest.raises(ad.AnchorDivError, match=name) as err:
        make()
    if hint:
        assert hint in str(err.value)


def test_methods_are_frozen_and_seeds_say_what_they_seed():
    m = ad.NUTS(num_samples=10, seed=3)
    with pytest.raises(AttributeError):  # dataclasses.FrozenInstanceError
        m.seed = 4
    prior = ad.DirichletNIWPrior.from_anchors(anchors()[0], components=2, em_seed=1)
    assert prior.em_seed == 1


@pytest.mark.parametrize(
    "opts, name",
    [
        ({"guide": "lowrank"}, "guide"),
        ({"num_warmup": 5}, "num_warmup"),
        ({"subspace": 2}, "subspace"),
        ({"seed": 1}, "seed"),
    ],
)
def test_adapt_refuses_options_that_do_not_apply(opts, name):
    broad, t = anchors()
    with pytest.raises(ad.AnchorDivError, match=rf"^{name}: runs with method="):
        ad.adapt("gaussian", broad, t, tau=5.0, method="exact", **opts)
    with pytest.raises(ad.AnchorDivError, match="guide"):
        ad.adapt("gaussian", broad, t, tau=5.0, method="nuts", guide="normal")


def test_object_api_equals_the_convenience():
    broad, t = anchors()
    prior = ad.NIWPrior.from_anchors(broad, targets=t)
    assert prior.chosen_by.startswith("held-out recipe")  # the default since issue 17
    assert ad.NIWPrior.from_anchors(broad, targets=t, strengths="evidence").chosen_by.startswith(
        "empirical Bayes"
    )
    a = ad.infer(prior, t, ad.Exact(), tau=5.0)
    b = ad.adapt("gaussian", broad, t, tau=5.0)
    for k, v in b.params("mean").items():
        np.testing.assert_array_equal(a.params("mean")[k], v)
    c = prior.update(t, tau=5.0)
    np.testing.assert_array_equal(c.params("map")["Sigma"], b.params("map")["Sigma"])
    assert a.info["kappa0"] == prior.kappa0 and a.prior is prior
    with pytest.raises(ad.AnchorDivError, match="pass targets"):
        ad.NIWPrior.from_anchors(broad)  # 'auto' strengths need targets
    with pytest.raises(ad.AnchorDivError, match="prior object"):
        ad.infer("gaussian", t)


def test_precision_is_the_callers(monkeypatch):
    broad, t = anchors()
    prior = ad.NIWPrior.from_anchors(broad, kappa0=3.0, nu0=D + 5.0)
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", False)
    try:
        with pytest.raises(ad.AnchorDivError, match="jax_enable_x64"):
            ad.infer(prior, t, ad.SVI(x64=True, num_steps=5, progress=False), tau=5.0)
        assert jax.config.jax_enable_x64 is False  # never flipped by the library
    finally:
        jax.config.update("jax_enable_x64", before)


def model_with(sigma):
    def model(targets, *, mu0):
        mu = numpyro.sample("mu", dist.Normal(mu0, 1.0).to_event(1))
        s = numpyro.deterministic("Sigma", sigma(targets.shape[1]))
        with numpyro.plate("anchors", targets.shape[0]):
            numpyro.sample("targets", dist.Normal(mu, 1.0).to_event(1), obs=targets)
        return s

    return model


@pytest.mark.parametrize(
    "sigma, what",
    [(lambda d: jnp.eye(d + 1), "shape"), (lambda d: jnp.ones((d, d)), "positive-definite")],
)
def test_a_user_models_sites_are_checked_by_name(sigma, what):
    broad, t = anchors()
    with pytest.raises(ad.AnchorDivError, match=rf"site 'Sigma' .*{what}|site 'Sigma' has {what}"):
        ad.adapt(
            "gaussian",
            broad,
            t,
            tau=5.0,
            method="svi",
            model=model_with(sigma),
            model_kwargs={"mu0": np.zeros(D)},
            num_steps=5,
            progress=False,
        )


def scaled_niw(targets, *, mu0, kappa0, nu0, psi0):
    """The default NIW model with a user's global scale on Ψ₀."""
    s = numpyro.sample("global_scale", dist.LogNormal(0.0, 0.3))
    niw_model(targets, mu0=mu0, kappa0=kappa0, nu0=nu0, psi0=psi0 * s)


def test_the_subspace_lift_keeps_every_site_of_a_users_model():
    """Fast: a subspace posterior's stored draws (the family's sites in r = 2 coordinates plus a
    user's scalar site) lift to full d with the user's site kept, into ArviZ as well."""
    from anchordiv.adaptation import Posterior
    from anchordiv.adaptation.subspace import principal_basis

    broad, t = anchors()
    exact = ad.NIWPrior.from_anchors(broad, kappa0=3.0, nu0=D + 5.0).update(t, tau=5.0)
    basis, rng = principal_basis(broad), np.random.default_rng(0)
    fam = exact.family_class
    sub_kwargs = fam.project(exact.model_kwargs, basis[:, :2])
    sub = fam.likelihood_type(fam, sub_kwargs, {}, 2).exact_prior().sample(rng, 8)
    samples = {
        "mu": sub["mu"][None],
        "Sigma": sub["Sigma"][None],
        "global_scale": rng.lognormal(size=(1, 8)),
    }
    post = Posterior(
        "gaussian",
        "svi",
        5.0,
        "<f8",
        {**exact.info, "subspace": 2, "custom_model": True},
        samples=samples,
        fixed={"basis": basis, "targets": t},
        completion=exact.family,
    )
    draws = post.draws(0, 3)
    assert draws["Sigma"].shape == (3, D, D) and draws["global_scale"].shape == (3,)
    assert "global_scale" in ad.inference_data(post, num_draws=4, prior=False)["posterior"]


@pytest.mark.slow
def test_a_custom_model_under_subspace_keeps_its_sites():
    broad, t = anchors()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = ad.adapt(
            "gaussian",
            broad,
            t,
            tau=5.0,
            method="svi",
            guide="normal",
            model=scaled_niw,
            subspace=2,
            num_steps=100,
            num_samples=20,
            kappa0=3.0,
            nu0=D + 5.0,
            progress=False,
        )
        idata = ad.inference_data(post, num_draws=10)
    draws = post.draws(0, 4)
    assert draws["Sigma"].shape == (4, D, D) and draws["global_scale"].shape == (4,)
    assert "global_scale" in idata["posterior"]
    # the NIW strengths describe the default model, not the user's: reported apart
    assert "kappa0" not in post.info and post.info["default_prior"]["kappa0"] == 3.0
    assert post.info["custom_model"] and post.info["subspace"] == 2


def test_load_prior_from_a_saved_model_keeps_card_and_tau(tmp_path):
    broad, t = anchors()
    ad.save_model(ad.fit("gaussian", broad, tau=7.0), tmp_path / "m", encoder="enc-x")
    prior = ad.load_prior(tmp_path / "m", kappa0=3.0, nu0=D + 5.0)
    assert prior.card["card"]["encoder"] == "enc-x" and prior.card["path"].endswith("m")
    post = ad.infer(prior, t)  # τ from the saved model's card
    assert post.tau == 7.0
    latent = ad.load_prior(tmp_path / "m", "latent-gaussian", rank=2)
    assert latent.kind == "latent-gaussian" and latent.update(t).tau == 7.0
    with pytest.raises(ad.AnchorDivError, match="tau"):
        ad.infer(ad.NIWPrior.from_anchors(broad, kappa0=3.0, nu0=D + 5.0), t)


@pytest.mark.slow
def test_structured_priors_are_objects_run_by_nuts_or_svi(tmp_path):
    broad, t = anchors()
    prior = ad.StructuredPrior.factor(broad, rank=2)
    assert prior.kind == "factor-gaussian" and isinstance(prior, ad.FactorPrior)
    assert isinstance(prior, ad.Projectable) and not isinstance(prior, ad.Conjugate)
    draws = prior.sample(0, 3)
    assert draws["Sigma"].shape == (3, D, D) and draws["loadings"].shape == (3, D, 2)
    assert prior.prior_predictive(0, 2, 5).shape == (2, 5, D)
    with pytest.raises(ad.AnchorDivError, match="no closed-form update"):
        ad.infer(prior, t, tau=5.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = ad.infer(
            prior,
            t,
            ad.SVI(guide="lowrank", num_steps=150, num_samples=10, subspace=3, progress=False),
            tau=5.0,
            broad=broad,
        )
    assert post.prior is prior and not post.info.get("custom_model")
    assert {"loadings", "noise"} <= set(post.samples)  # the model's own sites
    assert post.draws(0, 2)["Sigma"].shape == (2, D, D)
    assert np.all(np.isfinite(np.asarray(ad.divergence(post.point(), t, t))))
    loaded = ad.load_posterior(post.save(tmp_path / "p"))  # the structured prior itself
    assert loaded.prior.kind == "factor-gaussian" and loaded.prior.rank == 2
    np.testing.assert_array_equal(loaded.draws(0, 2)["Sigma"], post.draws(0, 2)["Sigma"])
    iso = prior.isotropic()  # the same structure on the isotropic covariance
    np.testing.assert_allclose(np.diag(iso.cov), np.trace(prior.cov) / D)
    assert iso.prior_kwargs()["loadings0"].shape == (D, 2)
    lkj = ad.StructuredPrior.lkj(broad)
    assert lkj.sample(1, 2)["corr_cholesky"].shape == (2, D, D)


def test_adapt_takes_a_method_configuration_and_names_where_a_loose_option_goes():
    rng = np.random.default_rng(0)
    broad, targets = rng.normal(size=(30, 3)), rng.normal(size=(4, 3))
    nuts = ad.NUTS(num_warmup=30, num_samples=30, num_chains=1, progress=False)
    by_object = ad.adapt("gaussian", broad, targets, tau=10.0, method=nuts, kappa0=3.0, nu0=8.0)
    by_name = ad.adapt(
        "gaussian", broad, targets, tau=10.0, method="nuts", kappa0=3.0, nu0=8.0,
        num_warmup=30, num_samples=30, num_chains=1, progress=False,
    )  # fmt: skip
    for site in ("mu", "Sigma"):
        np.testing.assert_array_equal(by_object.samples[site], by_name.samples[site])
    with pytest.raises(
        ad.AnchorDivError, match=r"num_warmup: .*method=ad\.NUTS\(num_warmup=\.\.\.\)"
    ):
        ad.adapt("gaussian", broad, targets, tau=10.0, method=nuts, num_warmup=10)
    with pytest.raises(ad.AnchorDivError, match="method: one of exact, nuts, svi or ad.Exact"):
        ad.adapt("gaussian", broad, targets, tau=10.0, method="hmc")
