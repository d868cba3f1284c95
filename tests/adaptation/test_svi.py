"""SVI through ad.adapt: MAP equals the exact joint mode, guides by name, user models, the ELBO
trace, convergence reporting, clear errors, persistence, no retrace on refits."""

from __future__ import annotations

import numpy as np
import numpyro
import numpyro.distributions as dist
import optax
import pytest
from helpers import compilations

import anchordiv as ad

TAU = 5.0


def data(d=4, nb=200, n=10, seed=0):
    rng = np.random.default_rng(seed)
    broad = rng.normal(size=(nb, d)) * np.linspace(1.5, 0.5, d)
    targets = rng.normal(size=(n, d)) * np.linspace(0.4, 1.2, d) + 0.5
    return broad, targets


def rel(a, b):
    return np.abs(np.asarray(a) - np.asarray(b)).max() / np.abs(np.asarray(b)).max()


def test_delta_guide_finds_the_exact_joint_mode():
    broad, t = data()
    opts = dict(tau=TAU, kappa0=3.0, nu0=12.0)
    exact = ad.adapt("gaussian", broad, t, **opts)
    post = ad.adapt(
        "gaussian", broad, t, method="svi", guide="delta", num_steps=1500, progress=False, **opts
    )
    assert post.method == "svi" and post.info["elbo_converged"]
    for name in ("mu", "Sigma"):
        assert rel(post.params("map")[name], exact.params("map")[name]) < 1e-5
    q = np.vstack([broad[:5], t])
    assert (
        rel(ad.divergence(post.point("map"), q, q), ad.divergence(exact.point("map"), q, q)) < 1e-3
    )


@pytest.mark.parametrize("guide,extra", [("normal", {}), ("lowrank", {"guide_rank": 2})])
def test_gaussian_guides_approximate_the_exact_posterior(guide, extra):
    broad, t = data(d=3)
    opts = dict(tau=TAU, kappa0=5.0, nu0=20.0)
    exact = ad.adapt("gaussian", broad, t, **opts)
    post = ad.adapt(
        "gaussian",
        broad,
        t,
        method="svi",
        guide=guide,
        num_steps=3000,
        learning_rate=0.02,
        num_samples=400,
        progress=False,
        **opts,
        **extra,
    )
    assert post.samples["Sigma"].shape == (1, 400, 3, 3)
    ref = exact.draws(0, 2000)
    for k in ("mu", "Sigma"):  # within a quarter of a posterior standard deviation
        err = np.abs(post.params("mean")[k] - exact.params("mean")[k])
        assert np.all(err < 0.25 * ref[k].std(0) + 1e-12), k
    # the guide's spread is a real spread: draws differ
    assert np.ptp(post.samples["Sigma"][0, :, 0, 0]) > 0
    if guide == "lowrank":
        assert post.info["guide_rank"] == 2


def test_user_guide_and_optax_optimizer():
    from numpyro.infer import autoguide

    broad, t = data(d=3)
    guide = autoguide.AutoDelta(ad.adaptation.families.niw_model)
    post = ad.adapt(
        "gaussian",
        broad,
        t,
        tau=TAU,
        method="svi",
        guide=guide,
        optimizer=optax.adam(0.01),
        num_steps=300,
        progress=False,
    )
    assert post.info["guide"] == "AutoDelta" and np.isfinite(post.elbo).all()
    assert isinstance(post.point("map"), ad.Gaussian)


@pytest.mark.parametrize(
    "kind,opts",
    [
        ("latent-gaussian", {"rank": 1}),
        ("latent-spherical", {"rank": 2}),
        ("mixture", {"components": 2}),
    ],
)
def test_every_kind_runs_through_svi(kind, opts):
    broad, t = data(d=3, n=8)
    post = ad.adapt(kind, broad, t, tau=TAU, method="svi", num_steps=200, progress=False, **opts)
    model = post.point("map")
    assert np.all(np.isfinite(ad.divergence(model, t, t)))
    assert post.info["method"] == "svi" and len(post.elbo) == 200


def test_elbo_trace_is_kept_and_plotted(tmp_path):
    broad, t = data(d=2)
    post = ad.adapt("gaussian", broad, t, tau=TAU, method="svi", num_steps=100, progress=False)
    assert post.elbo.shape == (100,) and post.elbo[-1] > post.elbo[0]
    png = post.plot_elbo(tmp_path / "elbo.png")
    assert png.stat().st_size > 1000


def test_unconverged_run_warns_with_numbers():
    broad, t = data(d=2)
    with pytest.warns(UserWarning, match=r"not converged after 20 steps.*changed by"):
        post = ad.adapt(
            "gaussian",
            broad,
            t,
            tau=TAU,
            method="svi",
            num_steps=20,
            convergence_window=5,
            progress=False,
        )
    assert not post.info["elbo_converged"]
    assert post.info["elbo_relative_change"] > 1e-4


def test_bad_guide_name_is_an_error():
    broad, t = data(d=2)
    with pytest.raises(ad.AnchorDivError, match="guide: unknown 'laplace'"):
        ad.adapt("gaussian", broad, t, tau=TAU, method="svi", guide="laplace")
    with pytest.raises(ad.AnchorDivError, match="optimizer"):
        ad.adapt("gaussian", broad, t, tau=TAU, method="svi", optimizer="adam")


def nan_model(targets, **_):
    mu = numpyro.sample("mu", dist.Normal(0.0, 1.0).expand([targets.shape[1]]).to_event(1))
    numpyro.deterministic("Sigma", np.eye(targets.shape[1]))
    numpyro.sample("broken", dist.Normal(mu.sum() * np.nan, 1.0), obs=0.0)
    numpyro.sample("targets", dist.Normal(mu, 1.0).to_event(1), obs=targets)  # the named site


def test_nan_loss_is_a_clear_error_naming_the_site():
    broad, t = data(d=2)
    with pytest.raises(
        ad.AnchorDivError,
        match=r"svi: .*not finite at site\(s\) broken.*"
        r"subspace=",
    ):
        ad.adapt(
            "gaussian",
            broad,
            t,
            tau=TAU,
            method="svi",
            model=nan_model,
            num_steps=10,
            progress=False,
        )


def test_svi_posterior_round_trips(tmp_path):
    broad, t = data(d=3)
    post = ad.adapt(
        "gaussian",
        broad,
        t,
        tau=TAU,
        method="svi",
        guide="normal",
        num_steps=200,
        num_samples=20,
        progress=False,
    )
    back = ad.load_posterior(post.save(tmp_path / "svi"))
    assert back.method == "svi"
    assert back.info == {k: v for k, v in post.info.items() if k != "model_kwargs"}
    np.testing.assert_array_equal(back.elbo, post.elbo)
    for which in ("mean", "map"):
        for k, v in post.params(which).items():
            np.testing.assert_array_equal(back.params(which)[k], v)
    np.testing.assert_array_equal(back.draws(1, 5)["Sigma"], post.draws(1, 5)["Sigma"])


def test_refit_with_same_shapes_does_not_retrace():
    broad, t = data(d=3)
    opts = dict(tau=TAU, method="svi", num_steps=60, progress=False)
    ad.adapt("gaussian", broad, t, **opts)
    # new targets and new prior strengths (traced arguments): the compiled step is reused, and
    # the guide draws compile nothing either (one vmap, not a fresh lax.map per call)
    with compilations(names=None) as c:
        ad.adapt("gaussian", broad + 0.1, t[::-1] * 1.1, kappa0=2.0, nu0=9.0, **opts)
    assert c.count == 0


def test_svi_runner_table_is_bounded_and_can_be_the_users():
    """A user-held table keeps its own compiled steps, at most ``max_size``; the library's
    default table is untouched by those fits."""
    from anchordiv.adaptation import Runners
    from anchordiv.adaptation.methods import SVI_RUNNERS

    mine, held = Runners(max_size=2), len(SVI_RUNNERS)
    broad, t = data(d=3)
    for steps in (20, 22, 24):  # num_steps is part of a runner's key
        method = ad.SVI(num_steps=steps, progress=False, runners=mine)
        ad.adapt("gaussian", broad, t, tau=TAU, method=method)
    assert len(mine) == 2 and len(SVI_RUNNERS) == held
    mine.clear()
    assert len(mine) == 0
    with pytest.raises(ad.AnchorDivError, match="runners: an anchordiv.adaptation.Runners"):
        ad.SVI(runners={})
