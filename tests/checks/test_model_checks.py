"""Diagnostics over everything the user wrote: a custom model's own sites reach inference_data
under every method (subspace= included) and diagnose's headline; posterior predictive checks on
statistics that can fail; warnings for fits that are not what they look like."""

import warnings

import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import anchordiv as ad
from anchordiv.errors import AnchorDivError
from anchordiv.provenance import AnchorDivWarning
from helpers import clustered_anchors

TAU = 20.0


def global_scale_model(targets, *, mu0, psi0, nu0, **_):
    """A user's prior: the broad covariance times a global scale of its own."""
    d = targets.shape[1]
    scale = numpyro.sample("global_scale", dist.LogNormal(0.0, 0.5))
    sigma = numpyro.deterministic("Sigma", scale * psi0 / (nu0 - d - 1))
    mu = numpyro.sample("mu", dist.MultivariateNormal(mu0, sigma))
    with numpyro.plate("anchors", targets.shape[0]):
        numpyro.sample("targets", dist.MultivariateNormal(mu, sigma), obs=targets)


def data(d=12, n=10):
    return (
        clustered_anchors(np.random.default_rng(0), 300, d),
        clustered_anchors(np.random.default_rng(1), n, d),
    )


@pytest.mark.parametrize("method", [pytest.param("nuts", marks=pytest.mark.slow), "svi"])
def test_a_custom_models_sites_reach_inference_data_under_subspace(method):
    broad, t = data()
    opts = (
        {"num_warmup": 100, "num_samples": 100}
        if method == "nuts"
        else {"guide": "normal", "num_steps": 300}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = ad.adapt(
            "gaussian",
            broad,
            t,
            tau=TAU,
            kappa0=2.0,
            nu0=30.0,
            method=method,
            model=global_scale_model,
            subspace=4,
            progress=False,
            **opts,
        )
    idata = ad.inference_data(post, num_draws=40)
    # SVI guide draws are one chain (no R-hat of a fit against itself), NUTS keeps its two
    assert idata["posterior"]["global_scale"].shape == ((1, 40) if method == "svi" else (2, 40))
    assert idata["posterior"]["cov_trace"].shape[:2] == idata["posterior"]["global_scale"].shape
    if method == "nuts":
        from anchordiv.app.commands.diagnose import headline
        from anchordiv.checks import arviz as adz

        summary = adz.summary(idata)
        worst = headline(summary)
        assert "global_scale" in summary.index
        assert worst["min_ess_bulk"] <= summary.loc["global_scale", "ess_bulk"]
        assert worst["max_r_hat"] >= summary.loc["global_scale", "r_hat"]


def test_ppc_statistics_can_fail_and_plot(tmp_path):
    from anchordiv.checks import arviz as adz

    broad, t = data(d=8, n=12)
    post = ad.adapt("gaussian", broad, t, tau=TAU, kappa0=2.0, nu0=20.0)
    idata = adz.ppc_data(ad.inference_data(post, num_draws=60, targets=t))
    for g in ("observed_data", "posterior_predictive", "prior_predictive"):
        assert {"norm", "cosine_to_mean", "projection"} <= set(idata[g].data_vars)
    assert idata["posterior_predictive"]["projection"].shape == (2, 30, 12, 3)
    np.testing.assert_allclose(idata["observed_data"]["norm"], np.linalg.norm(t, axis=1))
    # a wrong model fails the norm check: its predictive norms miss the unit-norm targets
    far = ad.adapt("gaussian", broad * 5.0, t, tau=TAU, kappa0=1000.0, nu0=1000.0)
    bad = adz.ppc_data(ad.inference_data(far, num_draws=60, targets=t))
    p_good = float(
        (
            idata["posterior_predictive"]["norm"].mean("anchor")
            >= idata["observed_data"]["norm"].mean()
        ).mean()
    )
    p_bad = float(
        (
            bad["posterior_predictive"]["norm"].mean("anchor")
            >= bad["observed_data"]["norm"].mean()
        ).mean()
    )
    assert 0.02 < p_good < 0.98 and p_bad > 0.99
    # (the unit-norm targets' norms are one constant: no density to draw)
    adz.plot_ppc(idata, ["cosine_to_mean", "projection"], tmp_path / "ppc.png")
    assert (tmp_path / "ppc.png").stat().st_size > 1000


def prior_only_model(targets, *, mu0, psi0, nu0, **_):
    d = targets.shape[1]
    sigma = numpyro.deterministic("Sigma", psi0 / (nu0 - d - 1))
    numpyro.sample("mu", dist.MultivariateNormal(mu0, sigma))


def test_a_model_that_never_observes_the_targets_warns():
    broad, t = data(d=3, n=5)
    with pytest.warns(AnchorDivWarning, match="prior"):
        ad.adapt(
            "gaussian",
            broad,
            t,
            tau=TAU,
            kappa0=2.0,
            nu0=8.0,
            method="svi",
            model=prior_only_model,
            num_steps=50,
            progress=False,
        )


def test_num_samples_zero_is_an_error():
    broad, t = data(d=3, n=5)
    for method in ("nuts", "svi"):
        with pytest.raises(AnchorDivError, match="num_samples"):
            ad.adapt("gaussian", broad, t, tau=TAU, method=method, num_samples=0, progress=False)


def test_target_only_fit_with_n_much_below_d_warns():
    broad, t = data(d=16, n=4)
    with pytest.warns(AnchorDivWarning, match="target-only"):
        ad.adapt("gaussian", broad, t, tau=TAU, kappa0=1e-6, nu0=16 + 1 + 1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error", AnchorDivWarning)
        ad.adapt(
            "gaussian",
            broad,
            t / np.linalg.norm(t, axis=1, keepdims=True),
            tau=TAU,
            kappa0=1.0,
            nu0=30.0,
        )


def test_approximate_draws_and_likelihoods_psis_cannot_use_are_labelled():
    broad, t = data(d=6, n=8)
    post = ad.adapt("latent-spherical", broad, t, tau=TAU, rank=2)
    attrs = ad.inference_data(post, num_draws=4, targets=t, prior=False)["posterior"].attrs
    assert attrs["calibration"].startswith("approximate")
    assert "benchmarks/results/bench_sbc.md" in attrs["calibration"]
    assert "posterior-like" in attrs["log_likelihood_note"]
    exact = ad.adapt("gaussian", broad, t, tau=TAU, kappa0=2.0, nu0=20.0)
    assert "calibration" not in ad.inference_data(exact, num_draws=4)["posterior"].attrs
    svi = ad.adapt(
        "gaussian",
        broad,
        t,
        tau=TAU,
        kappa0=2.0,
        nu0=20.0,
        method="svi",
        guide="normal",
        num_steps=50,
        progress=False,
    )
    assert (
        ad.inference_data(svi, num_draws=4)
        .posterior.attrs["calibration"]
        .startswith("variational approximation")
    )
    # the latent Gaussian likelihood is leave-one-out-correct: nothing to flag at the default β
    lat = ad.adapt("latent-gaussian", broad, t, tau=TAU, rank=2)
    assert (
        "log_likelihood_note"
        not in ad.inference_data(lat, num_draws=4, targets=t, prior=False)["posterior"].attrs
    )
