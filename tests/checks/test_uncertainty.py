"""InferenceData quantities, netCDF round trip, principal angles, retrieval uncertainty."""

import warnings

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.checks import arviz as adz
from anchordiv.errors import AnchorDivError
from anchordiv.adaptation.protocol import principal_angles

TAU = 5.0


def anchors(seed=0, nb=300, n=10, d=4):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(nb, d)), rng.normal(size=(n, d)) * 0.5 + 0.3


def test_principal_angles():
    e = np.eye(3)
    rot = np.array([[1.0, 0], [0, np.cos(0.3)], [0, np.sin(0.3)]])
    np.testing.assert_allclose(principal_angles(e[:, :2], rot), [0.0, np.degrees(0.3)], atol=1e-6)
    np.testing.assert_allclose(principal_angles(e[:, :1], e[:, 1:2]), [90.0])


VARS = {
    "gaussian": {"mean_cosine", "cov_eigenvalues", "leading_axis_angle", "mu", "Sigma"},
    "latent-gaussian": {"principal_angles", "max_principal_angle"},
    "latent-spherical": {"principal_angles", "max_principal_angle"},
    "mixture": {"weights", "mean_cosine", "cov_trace"},
}
OPTS = {
    "gaussian": {},
    "latent-gaussian": {"rank": 2},
    "latent-spherical": {"rank": 2},
    "mixture": {"components": 2},
}


@pytest.mark.parametrize("kind", list(VARS))
def test_inference_data_quantities_and_round_trip(tmp_path, kind):
    broad, t = anchors()
    post = ad.adapt(kind, broad, t, tau=TAU, **OPTS[kind])
    idata = ad.inference_data(post, num_draws=40, seed=1)
    assert VARS[kind] <= set(idata["posterior"].data_vars)
    if "principal_angles" in idata["posterior"]:
        ang = idata["posterior"]["principal_angles"].values
        assert np.all(np.diff(ang, axis=-1) >= 0)
        np.testing.assert_array_equal(
            idata["posterior"]["max_principal_angle"].values, ang[..., -1]
        )
    assert idata["posterior"].sizes["chain"] == 2 and idata["posterior"].sizes["draw"] == 20
    summary = adz.summary(idata)
    assert np.all(np.isfinite(summary[["mean", "ess_bulk"]].values))
    ad.save_inference_data(idata, tmp_path / "idata", encoder="e")
    back = ad.load_inference_data(tmp_path / "idata")
    for name, var in idata["posterior"].data_vars.items():
        np.testing.assert_array_equal(back["posterior"][name].values, var.values)
    assert back["posterior"].attrs["kind"] == kind == back.attrs["kind"]


def test_plot_posterior_writes_png(tmp_path):
    broad, t = anchors()
    idata = ad.inference_data(ad.adapt("latent-gaussian", broad, t, tau=TAU, rank=2), num_draws=40)
    adz.plot_posterior(idata, ["max_principal_angle"], tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 1000


def test_retrieval_uncertainty():
    rng = np.random.default_rng(3)
    broad, t = anchors(n=6)
    q, g = rng.normal(size=(5, 4)), rng.normal(size=(40, 4))
    rel = rng.integers(0, 2, size=(5, 40))
    post = ad.adapt("gaussian", broad, t, tau=TAU, kappa0=1.0, nu0=7.0)
    r = ad.retrieval_uncertainty(post, q, g, k=5, relevance=rel, num_draws=6, seed=0)
    assert r.topk_overlap.shape == (6, 5) and r.auprc.shape == (6, 5)
    assert np.all((r.topk_overlap >= 0) & (r.topk_overlap <= 1))
    s = r.summary()
    assert s["auprc"]["low"] <= s["auprc"]["mean"] <= s["auprc"]["high"]
    np.testing.assert_allclose(
        r.point_auprc, ad.auprc(rel, -np.asarray(ad.divergence(post.point(), q, g)))
    )
    # a (numerically) certain posterior: every draw ranks like the point summary
    sure = ad.adapt("gaussian", broad, t, tau=TAU, kappa0=1e12, nu0=1e12)
    r = ad.retrieval_uncertainty(sure, q, g, k=5, num_draws=3)
    np.testing.assert_allclose(r.topk_overlap, 1.0)
    with pytest.raises(ad.AnchorDivError, match="relevance"):
        ad.retrieval_uncertainty(post, q, g, relevance=rel[:, :3])


def test_boolean_info_flags_survive_netcdf(tmp_path):
    """NUTS posteriors of custom models carry ``custom_model=True``; netCDF has no booleans."""
    broad, t = anchors()
    post = ad.adapt("gaussian", broad, t, tau=TAU)
    post.info["custom_model"] = True
    idata = ad.inference_data(post, num_draws=10)
    ad.save_inference_data(idata, tmp_path / "idata")
    assert ad.load_inference_data(tmp_path / "idata")["posterior"].attrs["custom_model"] == 1


def test_retrieval_uncertainty_repr_is_compact():
    """Issue 11: the repr dumped whole arrays."""
    from anchordiv.checks.uncertainty import RetrievalUncertainty

    rng = np.random.default_rng(0)
    unc = RetrievalUncertainty(rng.random((50, 400)), rng.random((50, 400)), rng.random(400), 0.95)
    text = repr(unc)
    assert (
        text.startswith("RetrievalUncertainty(draws=50, queries=400, interval=0.95, topk_overlap=")
        and "point_auprc=" in text
    )
    assert len(text) < 200


# ---- model criticism: prior / log_likelihood / predictive groups, PSIS-LOO, compare_priors ----

CRITICISM = {
    "gaussian": {},
    "latent-gaussian": {"rank": 2},
    "latent-spherical": {"rank": 2},
    "mixture": {"components": 2},
}


def criticism_data(d=4, n=12):
    rng = np.random.default_rng(0)
    return rng.normal(size=(200, d)), rng.normal(size=(n, d)) + 0.3


@pytest.mark.parametrize("kind", list(CRITICISM))
def test_inference_data_supports_loo_and_ppc(kind, tmp_path):
    broad, t = criticism_data()
    post = ad.adapt(kind, broad, t, tau=5.0, **CRITICISM[kind])
    idata = ad.inference_data(post, num_draws=60, targets=t)
    for g in ("prior", "log_likelihood", "observed_data", "posterior_predictive"):
        assert g in idata
    assert idata["log_likelihood"]["targets"].shape == (2, 30, len(t))
    assert idata["posterior_predictive"]["targets"].shape == (2, 30, len(t), 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        elpd_i, pareto_k, p_loo = adz.loo(idata)
    assert np.all(np.isfinite(elpd_i)) and np.isfinite(p_loo)
    assert elpd_i.shape == pareto_k.shape == (len(t),)
    adz.plot_ppc(idata, ["targets"], tmp_path / "ppc.png")
    ad.save_inference_data(idata, tmp_path / "idata")
    assert "log_likelihood" in ad.load_inference_data(tmp_path / "idata")


def test_log_likelihood_is_the_pointwise_density():
    """Gaussian kind, d = 2: the group's values are log N(t_i | μ_s, Σ_s) of the drawn params."""
    import scipy.stats

    broad, t = criticism_data(d=2, n=5)
    post = ad.adapt("gaussian", broad, t, tau=5.0, kappa0=1.0, nu0=5.0)
    idata = ad.inference_data(post, num_draws=4, targets=t)
    mu, sig = idata["posterior"]["mu"].values, idata["posterior"]["Sigma"].values
    ll = idata["log_likelihood"]["targets"].values
    for c, s in [(0, 0), (1, 1)]:
        ref = scipy.stats.multivariate_normal(mu[c, s], sig[c, s]).logpdf(t)
        np.testing.assert_allclose(ll[c, s], ref, rtol=1e-10)


def test_nuts_posterior_gets_the_same_groups():
    broad, t = criticism_data(d=2, n=6)
    post = ad.adapt(
        "gaussian",
        broad,
        t,
        tau=5.0,
        method="nuts",
        num_samples=100,
        num_warmup=100,
        progress=False,
    )
    idata = ad.inference_data(post, targets=t)
    assert idata["log_likelihood"]["targets"].shape == (2, 100, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert np.all(np.isfinite(adz.loo(idata)[0]))


def test_compare_priors_reports_table_pareto_k_and_plot(tmp_path):
    broad, t = criticism_data(d=3, n=15)
    result = ad.compare_priors(
        {
            "broad": broad,
            "isotropic": {"broad": broad, "prior": "isotropic"},
            "target-only": {"broad": broad, "kappa0": 1e-6, "nu0": 4 + 1e-6},
        },
        t,
        kind="gaussian",
        tau=5.0,
        num_draws=100,
        plot=tmp_path / "compare.png",
    )
    assert set(result.table.index) == {"broad", "isotropic", "target-only"}
    assert {"elpd_loo", "p_loo", "weight", "warning"} <= set(result.table.columns)
    assert result.estimators == dict.fromkeys(("broad", "isotropic", "target-only"), "exact")
    assert set(result.high_k) == set(result.pareto_k)
    assert (tmp_path / "compare.png").stat().st_size > 1000
    with pytest.raises(AnchorDivError, match="broad"):
        ad.compare_priors({"x": {"prior": "isotropic"}}, t)


def test_retrieval_uncertainty_plot_words_and_report(tmp_path):
    from anchordiv.app.report import Report
    from anchordiv.checks.uncertainty import RetrievalUncertainty

    overlap = np.array([[1.0, 0.4, 0.8], [0.8, 0.2, 1.0], [1.0, 0.4, 0.6]])
    auprc = np.array([[0.5, 0.7, 0.9], [0.4, 0.6, 0.8], [0.6, 0.8, 1.0]])
    r = RetrievalUncertainty(overlap, auprc, np.array([0.5, 0.7, 0.9]), 0.9)
    words = r.describe()
    assert "3 posterior draws" in words and "1 of 3 queries keep under half" in words
    assert "0.700 for the point model" in words and "AUPRC over queries is 0.700" in words
    report = Report("adaptation", tmp_path)
    r.to_report(report)
    text = report.write().read_text()
    assert "Retrieval uncertainty" in text and (tmp_path / "retrieval_uncertainty.png").is_file()
    no_rel = RetrievalUncertainty(overlap, None, None, 0.9)
    assert "AUPRC" not in no_rel.describe()
    no_rel.plot(tmp_path / "overlap.png")
    assert (tmp_path / "overlap.png").stat().st_size > 1000


def test_default_draws_scale_with_cost():
    from anchordiv.adaptation import families as priors
    from anchordiv.adaptation.posterior import ExactPosterior, SampledPosterior
    from anchordiv.checks.uncertainty import DEFAULT_DRAWS, default_draws

    def post(family, kind="gaussian"):
        return ExactPosterior(kind, "exact", 1.0, "<f8", {}, exact=family)

    small = priors.NIW(np.zeros(4), 1.0, 6.0, np.eye(4))
    assert default_draws(post(small)) == DEFAULT_DRAWS
    big_mix = priors.DirichletNIW(
        np.ones(4), np.zeros((4, 384)), np.ones(4), np.full(4, 400.0), np.zeros((4, 384, 384))
    )
    assert default_draws(post(big_mix, "mixture")) == 56  # 256 MiB of Σ_k draws
    # draws of a posterior given by draws are resampled, whatever their size: the default
    sampled = SampledPosterior(
        "mixture", "nuts", 1.0, "<f8", {"d": 384}, samples={"mu": np.zeros((1, 2, 4, 384))}
    )
    assert default_draws(sampled) == DEFAULT_DRAWS
    gibbs = priors.BinghamPosterior(np.zeros((384, 384)), 133, np.zeros(384))
    assert (
        default_draws(post(gibbs, "latent-gaussian")) == 36
    )  # 2 chains × (28 sweeps − 10 burn-in)


def student_t_model(targets, *, mu0, psi0, nu0, **_):
    """A user's model under kind gaussian: the same sites, a Student-t likelihood (df 3)."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    d = targets.shape[1]
    sigma = numpyro.deterministic("Sigma", psi0 / (nu0 - d - 1))
    mu = numpyro.sample("mu", dist.MultivariateNormal(mu0, sigma))
    with numpyro.plate("anchors", targets.shape[0]):
        chol = jnp.linalg.cholesky(sigma)
        numpyro.sample("targets", dist.MultivariateStudentT(3.0, mu, chol), obs=targets)


@pytest.mark.slow
def test_log_likelihood_is_the_users_own_model(tmp_path):
    """A Student-t model under kind gaussian: ``log_likelihood`` is its own (scipy's
    multivariate t at each draw), not the family's Gaussian; the attributes say which; a saved
    and reloaded posterior, whose model is gone, leaves the groups out and says why.  SVI guide
    draws are one chain, and the calibration text names the run's guide."""
    import scipy.stats

    broad, t = anchors(d=3, n=6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = ad.adapt(
            "gaussian",
            broad,
            t,
            tau=20.0,
            kappa0=2.0,
            nu0=9.0,
            method="svi",
            model=student_t_model,
            guide="normal",
            num_steps=200,
            num_samples=20,
            progress=False,
        )
    idata = ad.inference_data(post, num_draws=8, prior=False)
    ll = np.asarray(idata["log_likelihood"]["targets"]).reshape(-1, len(t))
    flat = post.flat_samples()
    assert idata["posterior"].sizes["chain"] == 1 and "R-hat" in idata.attrs["chains_note"]
    mu, sigma = post.chain_draws(0, 1, 8)["mu"][0], flat["Sigma"][0]
    ref = np.stack([scipy.stats.multivariate_t(m, sigma, df=3.0).logpdf(t) for m in mu])
    np.testing.assert_allclose(ll, ref, rtol=1e-6)
    gauss = post.likelihood().log_density({"mu": mu, "Sigma": np.broadcast_to(sigma, (8, 3, 3))}, t)
    assert np.max(np.abs(gauss - ll)) > 0.1  # the family's Gaussian is another model
    assert "student_t_model" in idata.attrs["log_likelihood_model"]
    assert "normal guide" in idata.attrs["calibration"]
    assert "not measured by SBC for this guide" in idata.attrs["calibration"]
    post.save(tmp_path / "p")
    loaded = ad.inference_data(ad.load_posterior(tmp_path / "p"), num_draws=8, prior=False)
    assert "log_likelihood" not in adz.groups(loaded) and "observed_data" in adz.groups(loaded)
    assert loaded.attrs["log_likelihood_model"].startswith("none: the draws come from a user's")


def test_arviz_data_where_a_posterior_or_embeddings_go_is_named():
    broad, t = anchors()
    post = ad.adapt("gaussian", broad, t, tau=20.0, kappa0=5.0, nu0=10.0)
    idata = ad.inference_data(post, num_draws=4, prior=False)
    with pytest.raises(AnchorDivError, match="inference_data: takes an adapted Posterior.*ArviZ"):
        ad.inference_data(idata)
    with pytest.raises(AnchorDivError, match="retrieval_uncertainty: takes an adapted Posterior"):
        ad.retrieval_uncertainty(idata, broad[:3], broad, k=3, num_draws=2)
    with pytest.raises(AnchorDivError, match="queries: expected embeddings.*ArviZ data"):
        ad.retrieval_uncertainty(post, idata, broad, k=3, num_draws=2)
    # prior_sensitivity and compare_priors say what they take (issue 51: raw errors before)
    with pytest.raises(AnchorDivError, match="prior_sensitivity: takes an adapted Posterior.*Arv"):
        ad.prior_sensitivity(idata)
    with pytest.raises(AnchorDivError, match=r"priors\['a'\]: ArviZ data .* not a candidate"):
        ad.compare_priors({"a": idata}, t, kind="gaussian", tau=20.0)


def test_queries_of_the_wrong_dimension_are_blamed_on_the_queries():
    """Queries of d = 5 against a d = 4 posterior and gallery: the queries are named, with
    both dimensions — not the gallery, with the queries' d (issue 51)."""
    broad, t = anchors()
    post = ad.adapt("gaussian", broad, t, tau=20.0, kappa0=5.0, nu0=10.0)
    wide = np.ones((3, 5))
    with pytest.raises(AnchorDivError, match=r"queries: dimension mismatch: .* 5 .* d=4"):
        ad.retrieval_uncertainty(post, wide, broad, k=3, num_draws=2)
    with pytest.raises(AnchorDivError, match=r"gallery: dimension mismatch: .* 5 .* d=4"):
        ad.retrieval_uncertainty(post, broad[:3], wide, k=3, num_draws=2)


@pytest.mark.slow
def test_a_short_nuts_run_notes_the_draws_it_lacks():
    broad, t = anchors(d=3, n=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = ad.adapt(
            "gaussian",
            broad,
            t,
            tau=20.0,
            kappa0=2.0,
            nu0=9.0,
            method="nuts",
            num_warmup=20,
            num_samples=5,
            num_chains=1,
            progress=False,
        )
    with pytest.warns(UserWarning, match="num_draws=200 asked, the nuts run holds 5"):
        idata = ad.inference_data(post, num_draws=200, prior=False)
    assert idata["posterior"].sizes["draw"] == 5
    assert idata.attrs["num_draws_note"] == "num_draws=200 asked; the run holds 5 per chain"
    summary = adz.summary(idata)
    interval = ["hdi_3%", "hdi_97%"] if adz.major() == 0 else ["eti89_lb", "eti89_ub"]
    assert set(interval) <= set(summary.columns)  # the installed ArviZ's own terms
