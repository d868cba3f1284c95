"""InferenceData quantities, netCDF round trip, principal angles, retrieval uncertainty."""

import arviz as az
import numpy as np
import pytest

import anchordiv as ad
from anchordiv.uncertainty import principal_angles

TAU = 5.0


def anchors(seed=0, nb=300, n=10, d=4):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(nb, d)), rng.normal(size=(n, d)) * 0.5 + 0.3


def test_principal_angles():
    e = np.eye(3)
    rot = np.array([[1.0, 0], [0, np.cos(0.3)], [0, np.sin(0.3)]])
    np.testing.assert_allclose(principal_angles(e[:, :2], rot), [0.0, np.degrees(0.3)],
                               atol=1e-6)
    np.testing.assert_allclose(principal_angles(e[:, :1], e[:, 1:2]), [90.0])


VARS = {"gaussian": {"mean_cosine", "cov_eigenvalues", "leading_axis_angle", "mu", "Sigma"},
        "latent-gaussian": {"principal_angles", "max_principal_angle"},
        "latent-spherical": {"principal_angles", "max_principal_angle"},
        "mixture": {"weights", "mean_cosine", "cov_trace"}}
OPTS = {"gaussian": {}, "latent-gaussian": {"rank": 2}, "latent-spherical": {"rank": 2},
        "mixture": {"components": 2}}


@pytest.mark.parametrize("kind", list(VARS))
def test_inference_data_quantities_and_round_trip(tmp_path, kind):
    broad, t = anchors()
    post = ad.adapt(kind, broad, t, tau=TAU, **OPTS[kind])
    idata = post.inference_data(num_draws=40, seed=1)
    assert VARS[kind] <= set(idata.posterior.data_vars)
    if "principal_angles" in idata.posterior:
        ang = idata.posterior["principal_angles"].values
        assert np.all(np.diff(ang, axis=-1) >= 0)
        np.testing.assert_array_equal(idata.posterior["max_principal_angle"].values, ang[..., -1])
    assert idata.posterior.sizes["chain"] == 2 and idata.posterior.sizes["draw"] == 20
    summary = az.summary(idata)
    assert np.all(np.isfinite(summary["mean"].values))
    assert np.all(np.isfinite(az.ess(idata).to_array().values))
    ad.save_inference_data(idata, tmp_path / "idata", encoder="e")
    back = ad.load_inference_data(tmp_path / "idata")
    for name, var in idata.posterior.data_vars.items():
        np.testing.assert_array_equal(back.posterior[name].values, var.values)
    assert back.posterior.attrs["kind"] == kind


def test_plot_posterior_writes_png(tmp_path):
    import matplotlib.pyplot as plt

    broad, t = anchors()
    idata = ad.adapt("latent-gaussian", broad, t, tau=TAU, rank=2).inference_data(num_draws=40)
    az.plot_posterior(idata, var_names=["max_principal_angle"])
    plt.savefig(tmp_path / "p.png")
    plt.close("all")
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
    np.testing.assert_allclose(r.point_auprc, ad.auprc(rel, -np.asarray(ad.divergence(
        post.point(), q, g))))
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
    idata = post.inference_data(num_draws=10)
    ad.save_inference_data(idata, tmp_path / "idata")
    assert ad.load_inference_data(tmp_path / "idata").posterior.attrs["custom_model"] == 1


def test_retrieval_uncertainty_repr_is_compact():
    """Issue 11: the repr dumped whole arrays."""
    from anchordiv.uncertainty import RetrievalUncertainty

    rng = np.random.default_rng(0)
    unc = RetrievalUncertainty(rng.random((50, 400)), rng.random((50, 400)),
                               rng.random(400), 0.95)
    text = repr(unc)
    assert text.startswith("RetrievalUncertainty(draws=50, queries=400, interval=0.95, "
                           "topk_overlap=") and "point_auprc=" in text
    assert len(text) < 200
