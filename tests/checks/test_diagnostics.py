"""Prior–target diagnostics on synthetic priors whose answer is known: a prior spanning the
targets' subspace vs one orthogonal to it, with the isotropic control in between."""

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.checks.diagnostics import (
    diagnose,
    loo_predictive,
    niw_prior,
    principal_angles,
)
from anchordiv.checks.criticism import closed_form_heldout

D = 8


def gaussian_points(rng, n, scales):
    """``[n, D]`` points, centred at 0, with per-axis standard deviations ``scales``."""
    return rng.normal(size=(n, D)) * np.asarray(scales)


@pytest.fixture(scope="module")
def setting():
    rng = np.random.default_rng(0)
    on, off = [1.0, 1.0] + [0.05] * 6, [0.05] * 2 + [1.0] * 6  # off: the complement
    targets = gaussian_points(rng, 12, [0.8, 0.6] + [0.03] * 6)
    return {
        "spanning": gaussian_points(rng, 400, on),
        "orthogonal": gaussian_points(rng, 400, off),
        "targets": targets,
    }


def test_spanning_prior_scores_high_orthogonal_low_isotropic_between(setting):
    t = setting["targets"]
    span = diagnose(setting["spanning"], t, kappa0=5.0, nu0=D + 6.0, k=2)
    orth = diagnose(setting["orthogonal"], t, kappa0=5.0, nu0=D + 6.0, k=2)
    assert span["captured"] > 0.99 and orth["captured"] < 0.01
    assert span["captured_isotropic"] == 2 / D
    assert span["mean_cos2"] > 0.99 and orth["mean_cos2"] < 0.01
    assert span["max_angle_deg"] < 5 and orth["max_angle_deg"] > 85
    for key in ("log_evidence", "loo"):
        assert span[key] > span[f"{key}_isotropic"] > orth[key]
        assert span[f"{key}_gain"] > 0 > orth[f"{key}_gain"]
    assert span["loo_isotropic"] != orth["loo_isotropic"]  # its own trace and mean


def test_loo_is_the_ratio_of_marginal_likelihoods(setting):
    """log p(t_i | T₋ᵢ) = log p(T) − log p(T₋ᵢ), with NIW.log_marginal as the float64 reference;
    one target: the prior predictive = log p(t)."""
    t = setting["targets"][:6]
    prior = niw_prior(setting["spanning"], 3.0, D + 4.0)
    whole = prior.log_marginal(t)
    ref = np.mean([whole - prior.log_marginal(np.delete(t, i, 0)) for i in range(len(t))])
    assert loo_predictive(prior, t) == pytest.approx(ref, rel=1e-10, abs=1e-9)
    assert loo_predictive(prior, t[:1]) == pytest.approx(prior.log_marginal(t[:1]), rel=1e-10)
    post = ad.adapt("gaussian", setting["spanning"], t, tau=20.0, kappa0=3.0, nu0=D + 4.0)
    assert closed_form_heldout(post, None, t[1:], t[:1], 20.0)[0] == pytest.approx(
        prior.log_marginal(t) - prior.log_marginal(t[1:]), rel=1e-10
    )


def test_degenerate_targets_and_bad_input(setting):
    one = diagnose(setting["spanning"], setting["targets"][:1], kappa0=1.0, nu0=D + 2.0, k=2)
    assert np.isnan(one["captured"]) and np.isnan(one["mean_cos2"])
    assert np.isfinite(one["loo"]) and np.isfinite(one["log_evidence"])
    assert principal_angles(np.eye(D), setting["targets"][:1], 2).size == 0
    with pytest.raises(ad.AnchorDivError, match="nu0"):
        diagnose(setting["spanning"], setting["targets"], kappa0=1.0, nu0=D, k=2)
    with pytest.raises(ad.AnchorDivError, match="fewer than d"):
        diagnose(setting["spanning"], setting["targets"], kappa0=1.0, nu0=D + 2.0, k=D)
    with pytest.raises(ad.AnchorDivError, match="dimension mismatch"):
        diagnose(setting["spanning"], setting["targets"][:, :3], kappa0=1.0, nu0=D + 2.0)


def test_leading_directions_and_captured_scatter():
    """The two helpers' former doctests: the largest axis; a pair spread along it alone."""
    from anchordiv.checks.diagnostics import captured_scatter, leading_directions

    assert np.abs(leading_directions(np.diag([1.0, 3.0, 2.0]), 1)).ravel().tolist() == [0, 1, 0]
    t = np.array([[1.0, 0, 0], [-1.0, 0, 0]])
    assert captured_scatter(np.diag([3.0, 2.0, 1.0]), t, 1) == 1.0
