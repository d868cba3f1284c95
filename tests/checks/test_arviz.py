"""``anchordiv.checks.arviz``: the one module that imports ArviZ gives the same answers on 0.x
and 1.x (``make test-arviz1`` runs these under ArviZ 1.3)."""

import numpy as np
import pytest
import scipy.special

from anchordiv.checks import arviz as adz


@pytest.mark.parametrize("num_draws", [2, 10, 20])
def test_psis_with_too_few_draws_for_a_tail_gives_k_inf_and_plain_weights(num_draws):
    """Below five tail draws no Pareto fit exists: k is inf (ArviZ 0.x's answer; 1.x raises),
    the weights are the ratios normalised."""
    r = np.random.default_rng(0).normal(size=(3, num_draws))
    assert adz.tail_size(num_draws) < adz.MIN_TAIL
    lw, k = adz.psis_log_weights(r)
    assert np.all(np.isinf(k)) and k.shape == (3,)
    np.testing.assert_allclose(lw, r - scipy.special.logsumexp(r, axis=1, keepdims=True))


def test_psis_with_a_tail_smooths_and_normalises():
    r = 0.3 * np.random.default_rng(1).normal(size=(2, 400))
    assert adz.tail_size(400) == 60
    lw, k = adz.psis_log_weights(r)
    np.testing.assert_allclose(scipy.special.logsumexp(lw, axis=1), 0.0, atol=1e-10)
    assert np.all(np.isfinite(k)) and np.all(k < 0.7)  # Gaussian ratios: a light tail


def exact_post(d=3, n=10):
    """An exact Gaussian posterior and its ``n`` targets ``[n, d]``."""
    import warnings

    import anchordiv as ad

    rng = np.random.default_rng(0)
    broad, t = rng.normal(size=(100, d)), rng.normal(size=(n, d)) * 0.5 + 0.3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ad.adapt("gaussian", broad, t, tau=20.0, kappa0=5.0, nu0=d + 5.0), t


def exact_idata(d=3, n=10, num_draws=100, targets=None):
    """``ad.inference_data`` of :func:`exact_post` (observing ``targets``, by default the ones
    it was fit to) and those targets."""
    import anchordiv as ad

    post, t = exact_post(d, n)
    t = t if targets is None else targets(t)
    return ad.inference_data(post, num_draws=num_draws, targets=t, prior=False), t


def test_observed_data_holds_the_targets_and_loo_pit_runs():
    """Issue 51: observed_data held summary statistics beside the targets, so ArviZ's loo_pit
    (1.x: every observed variable needs its log likelihood) stopped on 'norm'. It holds the
    targets the log_likelihood group scores; ArviZ's LOO-PIT runs on both majors with the
    anchors' PSIS weights given per coordinate (adz.loo_pit)."""
    idata, t = exact_idata()
    assert list(adz.dataset(idata, "observed_data").data_vars) == ["targets"]
    assert list(adz.dataset(idata, "posterior_predictive").data_vars) == ["targets"]
    np.testing.assert_array_equal(idata["observed_data"]["targets"], t)
    pit = adz.loo_pit(idata)
    assert pit.shape == t.shape and np.all((pit >= 0) & (pit <= 1))
    assert 0.2 < pit.mean() < 0.8  # a calibrated predictive: PIT values spread over [0, 1]
    # the same values from the weights by hand: P(ŷ_ij < y_ij) under anchor i's weights
    ll = adz.dataset(idata, "log_likelihood")["targets"].values.reshape(-1, len(t)).T
    lw, _ = adz.psis_log_weights(-ll)
    pp = adz.dataset(idata, "posterior_predictive")["targets"].values.reshape(-1, *t.shape)
    below = (pp < t).transpose(1, 2, 0)  # [n, d, S]
    want = (np.exp(lw)[:, None, :] * below).sum(-1)
    np.testing.assert_allclose(pit, want, atol=1e-6)


def test_ppc_data_holds_the_statistics_and_plots(tmp_path):
    idata, t = exact_idata(d=4, num_draws=20)
    stats = adz.ppc_data(idata)
    assert set(adz.groups(stats)) == {
        "observed_data",
        "posterior_predictive",
        "log_likelihood",
        "posterior",
    }
    np.testing.assert_allclose(stats["observed_data"]["norm"], np.linalg.norm(t, axis=1))
    assert stats["posterior_predictive"]["projection"].shape == (2, 10, len(t), 3)
    assert adz.ppc_data(stats) is stats  # the statistics in place already (data before 0.5.0)
    adz.plot_ppc(stats, ["cosine_to_mean"], tmp_path / "ppc.png")
    assert (tmp_path / "ppc.png").stat().st_size > 1000


def _bare_loo_pit(stats, name):
    """ArviZ's own LOO-PIT of statistic ``name``, called on the data object alone."""
    if adz.major() == 0:
        import arviz as az

        return np.asarray(az.loo_pit(stats, y=name))
    import arviz_stats

    return np.asarray(arviz_stats.loo_pit(stats, var_names=name)[name])


def test_arviz_loo_pit_runs_on_the_statistics_as_it_is():
    """Issue 51: ArviZ's loo_pit, called on the data alone, pairs each observed value with
    its own log-likelihood entry, and the targets are d-vectors with one likelihood each, so
    on ``idata`` it stops on the shapes. On ``ppc_data(idata)`` every statistic of anchor i
    carries anchor i's log-likelihood (leaving the anchor out leaves its statistics out), so
    ArviZ's own call runs, and gives P(statistic of a new anchor i < the observed one) under
    anchor i's PSIS-LOO weights."""
    idata, t = exact_idata(num_draws=200)
    stats = adz.ppc_data(idata)
    pit = {name: _bare_loo_pit(stats, name) for name in adz.PPC_STATISTICS}
    assert pit["norm"].shape == pit["cosine_to_mean"].shape == (len(t),)
    assert pit["projection"].shape == (len(t), 3)
    ll = adz.dataset(idata, "log_likelihood")["targets"].values.reshape(-1, len(t)).T
    lw, _ = adz.psis_log_weights(-ll)
    pp = adz.dataset(stats, "posterior_predictive")["norm"].values.reshape(-1, len(t)).T
    want = (np.exp(lw) * (pp < np.linalg.norm(t, axis=1)[:, None])).sum(-1)
    # ArviZ estimates the draws' relative efficiency from the posterior sites (here about 1,
    # the draws are independent); that moves only the smoothed tail of the weights
    np.testing.assert_allclose(pit["norm"], want, atol=0.02)


def test_loo_pit_of_the_norm_tells_a_calibrated_predictive_from_one_that_is_not():
    """The yes and the no case of what the LOO-PIT is read for: targets like the ones the
    posterior was fit to spread over [0, 1]; targets moved 5 along every axis sit above every
    predicted norm (PIT 1)."""
    idata, t = exact_idata(num_draws=200)
    calibrated = _bare_loo_pit(adz.ppc_data(idata), "norm")
    assert 0.2 < calibrated.mean() < 0.8 and np.mean(calibrated > 0.99) < 0.3
    far, _ = exact_idata(num_draws=200, targets=lambda t: t + 5.0)
    assert np.all(_bare_loo_pit(adz.ppc_data(far), "norm") > 0.99)


def test_loo_pit_and_ppc_data_name_the_missing_groups():
    from anchordiv.errors import AnchorDivError

    data = adz.from_groups({"posterior": {"x": np.zeros((2, 5))}})
    with pytest.raises(AnchorDivError, match="loo_pit: the data has no observed_data"):
        adz.loo_pit(data)
    with pytest.raises(AnchorDivError, match="ppc_data: the data has no observed_data"):
        adz.ppc_data(data)
