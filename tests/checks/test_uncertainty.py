"""InferenceData quantities, netCDF round trip, principal angles, retrieval uncertainty."""

import warnings

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.checks import arviz as adz
from anchordiv.errors import AnchorDivError
from anchordiv.checks.families import principal_angles

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
    from anchordiv.adaptation.posterior import Posterior
    from anchordiv.checks.uncertainty import DEFAULT_DRAWS, default_draws

    def post(family, kind="gaussian"):
        return Posterior(kind, "exact", 1.0, "<f8", {}, family=family)

    small = priors.NIW(np.zeros(4), 1.0, 6.0, np.eye(4))
    assert default_draws(post(small)) == DEFAULT_DRAWS
    big_mix = priors.DirichletNIW(
        np.ones(4), np.zeros((4, 384)), np.ones(4), np.full(4, 400.0), np.zeros((4, 384, 384))
    )
    assert default_draws(post(big_mix, "mixture")) == 56  # 256 MiB of Σ_k draws
    gibbs = priors.BinghamPosterior(np.zeros((384, 384)), 133, np.zeros(384))
    assert (
        default_draws(post(gibbs, "latent-gaussian")) == 36
    )  # 2 chains × (28 sweeps − 10 burn-in)
