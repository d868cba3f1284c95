"""The spectral shrinkage family (``ad.SpectralPrior``): validation, the prior object, SVI and
NUTS agreeing on a small problem, honest point summaries (a delta guide's MAP is the joint
mode; no "mean" from it), the scorer, save/load, ArviZ, and SBC of NUTS (slow)."""

import warnings

import jax
import numpy as np
import pytest

import anchordiv as ad
from anchordiv.checks import arviz as adz
from anchordiv.adaptation import load_posterior, load_prior
from anchordiv.adaptation.families.spectral import SpectralPrior
from anchordiv.checks.sbc import library_problem, sbc

D, K = 5, 2
NUTS = dict(num_warmup=300, num_samples=600, num_chains=1, progress=False)


def anchors(seed=0, n=15):
    rng = np.random.default_rng(seed)
    rot = np.linalg.qr(rng.normal(size=(D, D)))[0]
    broad = (rng.normal(size=(400, D)) * np.array([2.0, 1.2, 0.4, 0.3, 0.3])) @ rot.T
    # targets: the broad leading direction matters less, the second more
    targets = (rng.normal(size=(n, D)) * np.array([0.5, 2.0, 0.4, 0.3, 0.3])) @ rot.T + 0.1
    return broad, targets


@pytest.fixture(scope="module")
def fits():
    """SVI fits (fast: ≈ 5 s of compilation): mean-field and delta guides."""
    broad, t = anchors()
    prior = SpectralPrior.from_anchors(broad, rank=K)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        svi = ad.infer(
            prior,
            t,
            ad.SVI(guide="normal", num_steps=3000, num_samples=400, progress=False),
            tau=1.0,
        )
        delta = ad.infer(prior, t, ad.SVI(guide="delta", num_steps=3000, progress=False), tau=1.0)
    return prior, svi, delta, broad, t


@pytest.fixture(scope="module")
def nuts(fits):
    """A NUTS fit (slow tests: ≈ 13 s of compilation on one core)."""
    prior, _, _, _, t = fits
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ad.infer(prior, t, ad.NUTS(**NUTS, seed=1), tau=1.0)


@pytest.mark.parametrize(
    "opts, match",
    [
        ({"rank": 0}, "rank"),
        ({"rank": D + 1}, "rank"),
        ({"shrinkage": "lasso"}, "shrinkage"),
        ({"noise": "learnt"}, "noise"),
        ({"kappa0": -1.0}, "kappa0"),
        ({"gamma_shape": 0.0}, "gamma_shape"),
        ({"prior": "flat"}, "prior"),
    ],
)
def test_bad_hyperparameters_are_named(opts, match):
    broad, _ = anchors()
    with pytest.raises(ad.AnchorDivError, match=match):
        SpectralPrior.from_anchors(broad, **opts)


def test_the_prior_object():
    broad, _ = anchors()
    prior = SpectralPrior.from_anchors(broad, rank=K)
    cov = np.cov(broad.T, bias=True)
    w = np.linalg.eigvalsh(cov)[::-1]
    np.testing.assert_allclose(prior.eigenvalues, w[:K] + 1e-3 * w.mean(), rtol=1e-10)
    np.testing.assert_allclose(prior.noise0, w[K:].mean() + 1e-3 * w.mean(), rtol=1e-10)
    assert prior.kind == "spectral" and prior.dim == D and prior.rank == K
    iso = prior.isotropic()
    assert iso.prior == "isotropic" and np.ptp(iso.eigenvalues) == 0
    trace = lambda p: p.eigenvalues.sum() + (D - K) * p.noise0  # noqa: E731
    np.testing.assert_allclose(trace(iso), trace(prior))
    np.testing.assert_allclose(iso.directions.T @ iso.directions, np.eye(K), atol=1e-12)
    leaves, tree = jax.tree_util.tree_flatten(prior)
    assert jax.tree_util.tree_unflatten(tree, leaves).to_arrays()[1] == prior.to_arrays()[1]
    draws = prior.sample(0, 6)
    assert set(SpectralPrior.sites) <= set(draws) and draws["variances"].shape == (6, K)
    sim = prior.prior_predictive(jax.random.PRNGKey(0), 3, 4)
    assert sim.shape == (3, 4, D) and np.all(np.isfinite(sim))


def test_no_exact_update_and_no_subspace():
    broad, t = anchors()
    prior = SpectralPrior.from_anchors(broad, rank=K)
    with pytest.raises(ad.AnchorDivError, match="no closed-form update; use ad.SVI"):
        prior.update(t, tau=1.0)
    with pytest.raises(ad.AnchorDivError, match="subspace: the spectral family"):
        ad.infer(prior, t, ad.SVI(subspace=3, progress=False), tau=1.0, broad=broad)


@pytest.mark.slow
def test_svi_and_nuts_agree(fits, nuts):
    _, svi, _, _, _ = fits
    a, b = nuts.params("mean"), svi.params("mean")
    np.testing.assert_allclose(np.log(b["variances"]), np.log(a["variances"]), atol=0.25)
    np.testing.assert_allclose(np.log(b["noise"]), np.log(a["noise"]), atol=0.15)
    np.testing.assert_allclose(b["mu"], a["mu"], atol=0.15 * np.abs(a["mu"]).max() + 0.05)
    assert nuts.info["divergences"] == 0


def test_the_targets_move_the_scales(fits):
    """Leading direction shrunk, second one grown (the targets' own spread, set in anchors)."""
    prior, svi, _, _, t = fits
    v = svi.params("mean")["variances"]
    proj = (t - t.mean(0)) @ prior.directions
    target_var = (proj**2).mean(0)
    assert v[0] < prior.eigenvalues[0] and v[1] > prior.eigenvalues[1]
    np.testing.assert_allclose(np.log(v), np.log(target_var), atol=0.6)


def test_delta_guide_is_the_joint_mode_and_offers_no_mean(fits):
    prior, svi, delta, _, t = fits
    with pytest.raises(ad.AnchorDivError, match="no closed-form posterior mean"):
        delta.point("mean")
    assert "joint mode of (μ, g, ℓ, h)" in delta.info["point_map"]
    lik = prior.likelihood()
    best = delta.params("map")
    keys = ("mu", "global_scale", "local_scales", "noise_scale")
    at = lambda p: lik.log_joint(t, {k: np.asarray(p[k])[None] for k in keys})[0]  # noqa
    top = at(best)
    rng = np.random.default_rng(0)
    for _ in range(20):  # a local maximum of the closed-form log joint
        p = {
            k: np.asarray(best[k]) * np.exp(0.02 * rng.normal(size=np.shape(best[k])))
            for k in keys[1:]
        }
        p["mu"] = np.asarray(best["mu"]) + 0.01 * rng.normal(size=D)
        assert at(p) <= top + 1e-6
    draws = svi.flat_samples()
    assert top >= lik.log_joint(t, {k: draws[k] for k in keys}).max() - 1e-6


def test_the_point_model_is_the_low_rank_covariance(fits):
    prior, svi, _, _, t = fits
    p = svi.params("mean")
    want = prior.directions @ np.diag(p["variances"]) @ prior.directions.T + p["noise"] * (
        np.eye(D) - prior.directions @ prior.directions.T
    )
    model = svi.point("mean")
    np.testing.assert_allclose(np.asarray(model.cov), want, rtol=1e-10, atol=1e-12)
    draws = svi.flat_samples()
    mean_cov = np.mean(
        [
            prior.directions @ np.diag(v) @ prior.directions.T
            + s * (np.eye(D) - prior.directions @ prior.directions.T)
            for v, s in zip(draws["variances"], draws["noise"])
        ],
        axis=0,
    )
    np.testing.assert_allclose(want, mean_cov, rtol=1e-10)  # "mean" is E[Σ]
    q = t[:3]
    d = np.asarray(ad.divergence(model, q, t))
    diff = t[None] - q[:, None]
    np.testing.assert_allclose(
        d, 0.5 * np.einsum("qgi,ij,qgj->qg", diff, want, diff), rtol=1e-8, atol=1e-10
    )


def test_save_load_is_exact(fits, tmp_path):
    prior, svi, delta, _, t = fits
    for post in (svi, delta):
        loaded = load_posterior(post.save(tmp_path / post.info["guide"]))
        assert loaded.prior.to_arrays()[1] == prior.to_arrays()[1]
        for which in post.points or {}:
            for k, v in post.params(which).items():
                np.testing.assert_array_equal(loaded.params(which)[k], v)
        np.testing.assert_array_equal(
            ad.divergence(loaded.point("map"), t[:3], t), ad.divergence(post.point("map"), t[:3], t)
        )
    loaded = load_posterior(svi.save(tmp_path / "again"))
    np.testing.assert_array_equal(
        loaded.params("mean")["variances"], svi.params("mean")["variances"]
    )
    again = load_prior(prior.save(tmp_path / "prior"))
    for k, v in prior.to_arrays()[0].items():
        np.testing.assert_array_equal(again.to_arrays()[0][k], v)
    assert again.to_arrays()[1] == prior.to_arrays()[1]


def test_from_a_saved_gaussian_model(tmp_path):
    """``ad.load_prior(models/…, "spectral")``: the stand-in anchors carry the broad moments."""
    broad, _ = anchors()
    path = ad.save_model(ad.fit("gaussian", broad, tau=1.0), tmp_path / "broad")
    got = load_prior(path, "spectral", rank=K, reg=0.0)
    want = SpectralPrior.from_anchors(broad, rank=K, reg=0.0)
    np.testing.assert_allclose(got.eigenvalues, want.eigenvalues, rtol=1e-5)
    np.testing.assert_allclose(np.abs(got.directions.T @ want.directions), np.eye(K), atol=1e-5)


def check_inference_data(post):
    idata = ad.inference_data(post, num_draws=50)
    for name in (
        "variances",
        "local_scales",
        "global_scale",
        "noise",
        "cov_trace",
        "relative_scales",
    ):
        assert name in idata["posterior"], name
    assert idata["posterior"]["variances"].dims[-1] == "spectral_direction"
    assert {"log_likelihood", "observed_data", "posterior_predictive", "prior"} <= set(
        adz.groups(idata)
    )
    return idata


def test_inference_data_has_every_site(fits):
    check_inference_data(fits[1])


@pytest.mark.slow
def test_inference_data_of_nuts(nuts):
    idata = check_inference_data(nuts)
    assert "sample_stats" in idata


@pytest.mark.slow
@pytest.mark.parametrize("shrinkage", ["gamma", "horseshoe"])
def test_nuts_sbc_passes(shrinkage):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        problem = library_problem(
            "spectral",
            method="nuts",
            d=3,
            n=5,
            num_draws=19,
            seed=0,
            options={"shrinkage": shrinkage},
        )
        result = sbc(**problem, num_simulations=80, seed=1, progress=False)
    for name, row in result.summary().items():
        assert row["chi2_p"] > 1e-3 and row["ks_p"] > 1e-3, (shrinkage, name, row)
        assert 0.75 <= row["coverage90"] <= 1.0, (shrinkage, name, row)


def test_sbc_refuses_an_exact_run():
    with pytest.raises(ad.AnchorDivError, match="no exact update"):
        library_problem("spectral", method="exact")


@pytest.mark.slow
def test_compare_priors_ranks_the_broad_directions_above_the_control():
    broad, t = anchors()
    nuts = {
        "rank": K,
        "method": "nuts",
        "num_warmup": 200,
        "num_samples": 200,
        "num_chains": 1,
        "progress": False,
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = ad.compare_priors(
            {
                "broad": {"broad": broad, **nuts},
                "control": {"broad": broad, "prior": "isotropic", **nuts},
            },
            t,
            kind="spectral",
            tau=1.0,
        )
    assert result.loo["broad"].elpd > result.loo["control"].elpd
