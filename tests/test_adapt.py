"""ad.adapt: closed-form summaries, prior-strength limits for every kind, the isotropic control,
empirical Bayes, dtype, bad input, persistence, custom NumPyro priors, the CLI."""

import json

import arviz as az
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import anchordiv as ad
from anchordiv.anchors.gaussian import moments
from anchordiv.app.cli import main
from anchordiv.adaptation.families.gaussian import NIW

D = 4
TAU = 5.0


def anchors(seed=0, nb=300, n=12, d=D):
    rng = np.random.default_rng(seed)
    broad = rng.normal(size=(nb, d)) * np.linspace(1.5, 0.5, d)
    targets = rng.normal(size=(n, d)) * np.linspace(0.4, 1.2, d) + 0.5
    return broad, targets


def cov_of(model):
    return np.asarray(model.factor @ model.factor.T)


def projector(u):
    u = np.asarray(u)
    return u @ u.T


def test_gaussian_summaries_equal_closed_form():
    broad, t = anchors()
    post = ad.adapt("gaussian", broad, t, tau=TAU, kappa0=3.0, nu0=D + 6.0)
    mu0, c = moments(broad, 1e-3)
    n = len(t)
    tbar, s = t.mean(0), (t - t.mean(0)).T @ (t - t.mean(0))
    psi = 5.0 * c + s + 3.0 * n / (3.0 + n) * np.outer(tbar - mu0, tbar - mu0)
    mean, mode = post.point("mean"), post.point("map")
    np.testing.assert_allclose(mean.mean, (3.0 * mu0 + n * tbar) / (3.0 + n), rtol=1e-12)
    np.testing.assert_allclose(cov_of(mean), psi / (D + 6.0 + n - D - 1), rtol=1e-10)
    np.testing.assert_allclose(cov_of(mode), psi / (D + 6.0 + n + D + 2), rtol=1e-10)
    assert post.info["chosen_by"] == "user" and post.info["covariance_pseudo_anchors"] == 5.0


def test_empirical_bayes_is_available_by_name_and_reported():
    broad, t = anchors()
    post = ad.adapt("gaussian", broad, t, tau=TAU, strengths="evidence")
    assert post.info["chosen_by"].startswith("empirical Bayes")
    mu0, c = moments(broad, 1e-3)
    best = NIW.from_scale(mu0, c, post.info["kappa0"], post.info["nu0"]).log_marginal(t)
    assert post.info["log_marginal_likelihood"] == pytest.approx(best)
    for f in (0.5, 2.0):
        worse = NIW.from_scale(mu0, c, post.info["kappa0"] * f, post.info["nu0"]).log_marginal(t)
        assert worse <= best + 1e-8


WEAK = {
    "gaussian": {"kappa0": 1e-9, "nu0": D + 1 + 1e-9},
    "latent-gaussian": {"rank": 2, "beta": 1.0},
    "latent-spherical": {"rank": 2, "beta": 1.0},
    "mixture": {"components": 1, "alpha0": 1e-9, "kappa0": 1e-9, "nu0": D + 1 + 1e-9},
}
STRONG = {
    "gaussian": {"kappa0": 1e12, "nu0": 1e12},
    "latent-gaussian": {"rank": 2, "beta": 0.0},
    "latent-spherical": {"rank": 2, "beta": 0.0},
    "mixture": {"components": 1, "alpha0": 1e12, "kappa0": 1e12, "nu0": 1e12},
}


def same_geometry(a, b, rtol):
    """Two fitted models of one kind describe the same anchor distribution."""
    if a.kind in ("latent-gaussian", "latent-spherical"):
        np.testing.assert_allclose(projector(a.basis), projector(b.basis), atol=1e-8)
        if a.kind == "latent-gaussian":
            np.testing.assert_allclose(a.mean, b.mean, atol=1e-10)
        return
    if a.kind == "mixture":
        np.testing.assert_allclose(np.asarray(a.covs), np.asarray(b.covs), rtol=rtol)
        np.testing.assert_allclose(a.means, b.means, atol=1e-8)
        return
    np.testing.assert_allclose(cov_of(a), cov_of(b), rtol=rtol, atol=1e-12)
    np.testing.assert_allclose(a.mean, b.mean, atol=1e-8)


@pytest.mark.parametrize("kind", list(WEAK))
def test_weak_prior_recovers_target_only_fit(kind):
    broad, t = anchors(n=40)
    post = ad.adapt(kind, broad, t, tau=TAU, **WEAK[kind])
    opts = {k: v for k, v in WEAK[kind].items() if k in ("rank", "components")}
    if kind == "mixture":
        opts["reg"] = 0.0
    same_geometry(post.point("mean"), ad.fit(kind, t, tau=TAU, **opts), rtol=1e-6)


@pytest.mark.parametrize("kind", list(STRONG))
def test_strong_prior_recovers_broad_fit(kind):
    broad, t = anchors()
    post = ad.adapt(kind, broad, t, tau=TAU, **STRONG[kind])
    opts = {k: v for k, v in STRONG[kind].items() if k in ("rank", "components")}
    if kind in ("gaussian", "mixture"):
        opts["reg"] = 1e-3
    for which in ("mean", "map"):
        same_geometry(post.point(which), ad.fit(kind, broad, tau=TAU, **opts), rtol=1e-6)


def test_isotropic_control_has_same_strength_and_trace():
    broad, t = anchors()
    b = ad.adapt("gaussian", broad, t, tau=TAU, kappa0=1e12, nu0=1e12)
    i = ad.adapt("gaussian", broad, t, tau=TAU, kappa0=1e12, nu0=1e12, prior="isotropic")
    ci = cov_of(i.point())
    assert np.trace(ci) == pytest.approx(np.trace(cov_of(b.point())), rel=1e-8)
    np.testing.assert_allclose(ci, np.trace(ci) / D * np.eye(D), atol=1e-9)
    li = ad.adapt("latent-spherical", broad, t, tau=TAU, rank=2, beta=0.0, prior="isotropic")
    np.testing.assert_allclose(li.exact.parameter, li.info["concentration"] * 0.5 * np.eye(D))


def test_float32_in_float32_out_and_draws():
    broad, t = anchors()
    for kind, opts in [
        ("gaussian", {}),
        ("latent-gaussian", {"rank": 2}),
        ("latent-spherical", {"rank": 2}),
        ("mixture", {"components": 2}),
    ]:
        post = ad.adapt(kind, broad.astype(np.float32), t.astype(np.float32), tau=TAU, **opts)
        model = post.point()
        assert model.tau.dtype == np.float32
        assert (
            ad.divergence(model, t[:3].astype(np.float32), t.astype(np.float32)).dtype == np.float32
        )
        draws = post.sample(0, 3)
        assert len(draws) == 3 and all(type(m) is type(model) for m in draws)


BAD = [
    ("gaussian", {"nu0": D + 1}, "nu0"),
    ("gaussian", {"kappa0": -1.0}, "kappa0"),
    ("gaussian", {"reg": -1.0}, "reg"),
    ("latent-gaussian", {"beta": 1.5}, "beta"),
    ("latent-spherical", {"beta": -0.1}, "beta"),
    ("latent-gaussian", {"rank": D}, "rank"),
    ("latent-spherical", {"rank": 1}, "rank"),
    ("latent-gaussian", {"rank": 3, "beta": 1.0}, "target anchors allow"),
    ("latent-spherical", {"concentration": 0.0}, "concentration"),
    ("mixture", {"alpha0": -2.0}, "alpha0"),
    ("mixture", {"nu0": 2.0}, "nu0"),
    ("mixture", {"components": 500}, "too few"),
    ("gaussian", {"rank": 2}, "unknown option"),
    ("gaussian", {"method": "vi"}, "method"),
    ("gaussian", {"prior": "flat"}, "prior"),
    ("gaussian", {"model": lambda t: None}, "method='nuts'"),
]


@pytest.mark.parametrize("kind,opts,match", BAD)
def test_bad_options(kind, opts, match):
    broad, t = anchors(n=3)
    with pytest.raises(ad.AnchorDivError, match=match):
        ad.adapt(kind, broad, t, tau=TAU, **opts)


def test_bad_anchors():
    broad, t = anchors()
    with pytest.raises(ad.AnchorDivError, match="empty"):
        ad.adapt("gaussian", broad, np.zeros((0, D)), tau=TAU)
    with pytest.raises(ad.AnchorDivError, match="dimension mismatch"):
        ad.adapt("gaussian", broad, t[:, :3], tau=TAU)
    with pytest.raises(ad.AnchorDivError, match="rank.*broad"):
        ad.adapt("latent-gaussian", broad[:2, :], t, tau=TAU, rank=2)
    with pytest.raises(ad.AnchorDivError, match="kind"):
        ad.adapt("softmax", broad, t, tau=TAU)
    with pytest.raises(ad.AnchorDivError, match="tau"):
        ad.adapt("gaussian", broad, t, tau=0.0)


@pytest.mark.parametrize(
    "kind,opts",
    [
        ("gaussian", {}),
        ("latent-gaussian", {"rank": 2}),
        ("latent-spherical", {"rank": 2}),
        ("mixture", {"components": 2}),
    ],
)
def test_posterior_round_trip(tmp_path, kind, opts):
    broad, t = anchors()
    post = ad.adapt(kind, broad, t, tau=TAU, **opts)
    post.save(tmp_path / "p", encoder="test-encoder")
    back = ad.load_posterior(tmp_path / "p")
    assert back.info["kind"] == kind and back.tau == TAU
    for which in ("mean", "map"):
        a, b = post.point(which), back.point(which)
        q = t[:3]
        np.testing.assert_array_equal(ad.divergence(a, q, t), ad.divergence(b, q, t))
    ad.save_model(post.point(), tmp_path / "m")
    np.testing.assert_array_equal(
        ad.divergence(ad.load_model(tmp_path / "m"), t[:2], t),
        ad.divergence(post.point(), t[:2], t),
    )
    card = json.loads((tmp_path / "p" / "card.json").read_text())
    assert card["type"] == "posterior" and card["encoder"] == "test-encoder" and card["dim"] == D


def lkj_gaussian(targets, *, mu0, kappa0, nu0, psi0):
    """A user's prior: LKJ correlations and half-normal scales instead of the inverse Wishart."""
    d = targets.shape[1]
    scale = numpyro.sample("scale", dist.HalfNormal(1.0).expand([d]).to_event(1))
    corr = numpyro.sample("corr", dist.LKJCholesky(d, 2.0))
    chol = scale[:, None] * corr
    sigma = numpyro.deterministic("Sigma", chol @ chol.T)
    mu = numpyro.sample("mu", dist.MultivariateNormal(mu0, sigma / kappa0))
    with numpyro.plate("anchors", targets.shape[0]):
        numpyro.sample("targets", dist.MultivariateNormal(mu, scale_tril=chol), obs=targets)


@pytest.mark.slow  # ~19 s: NUTS on a user model; the fast tier covers custom models by SVI
def test_custom_numpyro_prior_runs_with_nuts(tmp_path):
    broad, t = anchors(d=2, n=20)
    post = ad.adapt(
        "gaussian",
        broad,
        t,
        tau=TAU,
        method="nuts",
        model=lkj_gaussian,
        kappa0=1.0,
        nu0=6.0,
        num_warmup=100,
        num_samples=100,
        num_chains=2,
        progress=False,
    )
    assert post.method == "nuts" and post.info["custom_model"]
    model = post.point("mean")
    assert isinstance(model, ad.Gaussian)
    assert np.all(np.isfinite(ad.divergence(model, t, t)))
    np.testing.assert_allclose(model.mean, post.samples["mu"].mean((0, 1)))
    idata = ad.inference_data(post, num_draws=100)
    assert {"lp", "diverging", "acceptance_rate"} <= set(idata["sample_stats"].data_vars)
    assert idata["posterior"].sizes["chain"] == 2
    assert np.all(np.isfinite(az.rhat(idata)["mean_cosine"].values))
    post.save(tmp_path / "nuts")
    back = ad.load_posterior(tmp_path / "nuts")
    np.testing.assert_array_equal(back.samples["Sigma"], post.samples["Sigma"])
    np.testing.assert_array_equal(back.point("map").mean, post.point("map").mean)


def test_custom_model_missing_site_is_an_error():
    broad, t = anchors(d=2)

    def no_sigma(targets, **kw):
        numpyro.sample("mu", dist.Normal(0.0, 1.0).expand([2]).to_event(1))

    with pytest.raises(ad.AnchorDivError, match="Sigma"):
        ad.adapt("gaussian", broad, t, tau=TAU, method="nuts", model=no_sigma)


def test_cli_adapt(tmp_path, capsys):
    broad, t = anchors()
    np.save(tmp_path / "b.npy", broad)
    np.save(tmp_path / "t.npy", t)
    rc = main(
        [
            "adapt",
            "gaussian",
            str(tmp_path / "b.npy"),
            str(tmp_path / "t.npy"),
            "-o",
            str(tmp_path / "m"),
            "--tau",
            "5",
            "--kappa0",
            "2",
            "--nu0",
            "auto",
            "--strengths",
            "evidence",
            "--posterior-out",
            str(tmp_path / "p"),
            "--encoder",
            "e",
            "--json",
        ]
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kappa0"] == 2.0 and out["chosen_by"] == "empirical Bayes (nu0)"
    expect = ad.adapt("gaussian", broad, t, tau=5.0, kappa0=2.0, strengths="evidence").point()
    np.testing.assert_allclose(
        ad.divergence(ad.load_model(tmp_path / "m"), t, t), ad.divergence(expect, t, t), rtol=1e-12
    )
    assert ad.load_posterior(tmp_path / "p").kind == "gaussian"
    rc = main(
        [
            "adapt",
            "gaussian",
            str(tmp_path / "b.npy"),
            str(tmp_path / "t.npy"),
            "-o",
            str(tmp_path / "x"),
            "--tau",
            "5",
            "--rank",
            "2",
        ]
    )
    assert rc == 2 and "unknown option" in capsys.readouterr().err


@pytest.mark.slow
def test_nuts_through_adapt_latent_gaussian_matches_exact_subspace():
    from anchordiv.adaptation.protocol import principal_angles

    broad, t = anchors(d=3, n=8)
    exact = ad.adapt("latent-gaussian", broad, t, tau=TAU, rank=1, beta=0.5)
    nuts = ad.adapt(
        "latent-gaussian",
        broad,
        t,
        tau=TAU,
        rank=1,
        beta=0.5,
        method="nuts",
        num_warmup=300,
        num_samples=500,
        progress=False,
    )
    for which in ("mean", "map"):
        angle = principal_angles(
            np.asarray(nuts.point(which).basis), np.asarray(exact.point("map").basis)
        )
        assert angle.max() < 10.0
    idata = ad.inference_data(nuts, num_draws=200)
    assert "principal_angles" in idata["posterior"] and "diverging" in idata["sample_stats"]
