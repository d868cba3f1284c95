"""Subspace inference: the lift reproduces the exact full posterior from the exact subspace
posterior; NUTS and SVI on the subspace agree with its closed form; bad ranks are errors."""

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.adaptation.subspace import principal_basis
from anchordiv.adaptation.families import NIW

TAU = 5.0


def data(d=5, nb=300, n=12, seed=0):
    rng = np.random.default_rng(seed)
    broad = rng.normal(size=(nb, d)) @ rng.normal(size=(d, d)) * 0.3
    targets = rng.normal(size=(n, d)) * 0.4 + 0.2
    return broad, targets


def subspace_closed_form(post: NIW, u: np.ndarray) -> NIW:
    """The exact posterior of the r×r block: NIW_r(U_rᵀμₙ, κₙ, νₙ − (d − r), U_rᵀΨₙU_r)."""
    d, r = u.shape
    return NIW(u.T @ post.mu, post.kappa, post.nu - (d - r), u.T @ post.psi @ u)


@pytest.fixture(scope="module")
def exact():
    broad, t = data()
    return broad, t, ad.adapt("gaussian", broad, t, tau=TAU, kappa0=4.0, nu0=14.0)


def test_lift_of_the_exact_subspace_mean_is_the_full_posterior_mean(exact):
    broad, _, post = exact
    v = principal_basis(broad)
    for r in (1, 2, 4):
        sub = subspace_closed_form(post.family, v[:, :r])
        full = ad.NIWPrior.lift([sub.mean()], post.family, v, r, which="mean")[0]
        for k in ("mu", "Sigma"):
            np.testing.assert_allclose(full[k], post.params("mean")[k], rtol=1e-10, atol=1e-14)


def test_lift_of_the_joint_mode_block_is_the_joint_mode(exact):
    broad, _, post = exact
    v, r = principal_basis(broad), 2
    mode = post.params("map")
    block = {"mu": v[:, :r].T @ mode["mu"], "Sigma": v[:, :r].T @ mode["Sigma"] @ v[:, :r]}
    full = ad.NIWPrior.lift([block], post.family, v, r, which="map")[0]
    for k in ("mu", "Sigma"):
        np.testing.assert_allclose(full[k], mode[k], rtol=1e-10, atol=1e-14)


def test_lifted_exact_draws_have_the_full_posterior_moments(exact):
    broad, _, post = exact
    v, r = principal_basis(broad), 2
    rng = np.random.default_rng(3)
    sub = subspace_closed_form(post.family, v[:, :r]).sample(rng, 4000)
    draws = ad.NIWPrior.lift(
        [{"mu": m, "Sigma": s} for m, s in zip(sub["mu"], sub["Sigma"])],
        post.family,
        v,
        r,
        rng=rng,
    )
    sig = np.stack([x["Sigma"] for x in draws])
    mu = np.stack([x["mu"] for x in draws])
    ref = post.family.sample(np.random.default_rng(4), 4000)
    scale = np.abs(post.params("mean")["Sigma"]).max()
    assert np.abs(sig.mean(0) - post.params("mean")["Sigma"]).max() < 0.03 * scale
    assert np.abs(sig.std(0) - ref["Sigma"].std(0)).max() < 0.1 * ref["Sigma"].std(0).max()
    assert np.abs(mu.mean(0) - post.params("mean")["mu"]).max() < 0.03 * np.abs(mu).max()


def test_subspace_svi_map_is_the_joint_mode(exact):
    """The delta guide finds the subspace model's (marginal) mode; the stored point is the
    r-block of the full joint mode, and its lift the full joint mode Ψₙ/(νₙ + d + 2)."""
    broad, t, post = exact
    v, r = principal_basis(broad), 2
    svi = ad.adapt(
        "gaussian",
        broad,
        t,
        tau=TAU,
        kappa0=4.0,
        nu0=14.0,
        method="svi",
        subspace=r,
        num_steps=1500,
        progress=False,
    )
    u = v[:, :r]
    joint = post.params("map")
    np.testing.assert_allclose(svi.points["map"]["Sigma"], u.T @ joint["Sigma"] @ u, rtol=1e-4)
    np.testing.assert_allclose(svi.points["map"]["mu"], u.T @ joint["mu"], rtol=1e-4, atol=1e-8)
    full = svi.params("map")
    assert full["Sigma"].shape == (5, 5) and svi.subspace == r
    np.testing.assert_allclose(full["Sigma"], joint["Sigma"], rtol=1e-4)
    assert svi.info["point_map"].startswith("joint mode")


def test_subspace_nuts_matches_the_subspace_closed_form(exact):
    broad, t, post = exact
    v, r = principal_basis(broad), 2
    nuts = ad.adapt(
        "gaussian",
        broad,
        t,
        tau=TAU,
        kappa0=4.0,
        nu0=14.0,
        method="nuts",
        subspace=r,
        num_warmup=300,
        num_samples=600,
        num_chains=1,
        progress=False,
    )
    sub = subspace_closed_form(post.family, v[:, :r])
    s = nuts.samples["Sigma"].reshape(-1, r, r)
    ref = sub.sample(np.random.default_rng(0), 4000)["Sigma"]
    se = ref.std(0) / np.sqrt(150)  # NUTS draws: ESS well above 150 here
    assert np.all(np.abs(s.mean(0) - sub.mean()["Sigma"]) < 4 * se + 1e-12)
    # lifted draws and the lifted mean live in full d
    assert nuts.draws(0, 3)["Sigma"].shape == (3, 5, 5)
    assert isinstance(nuts.point("mean"), ad.Gaussian)


@pytest.mark.parametrize(
    "kind,opts",
    [
        ("latent-gaussian", {"rank": 1}),
        ("latent-spherical", {"rank": 2}),
        pytest.param("mixture", {"components": 2}, marks=pytest.mark.slow),
    ],
)  # ~15 s
def test_other_kinds_lift_to_full_d(kind, opts):
    broad, t = data(d=4, n=8)
    post = ad.adapt(
        kind, broad, t, tau=TAU, method="svi", subspace=3, num_steps=200, progress=False, **opts
    )
    model = post.point("map")
    assert np.all(np.isfinite(ad.divergence(model, t, t)))
    if kind.startswith("latent"):
        u = np.asarray(model.basis)
        v = principal_basis(broad)[:, :3]
        np.testing.assert_allclose(v @ (v.T @ u), u, atol=1e-10)  # U lies in span(U_r)
    else:
        assert post.draws(0, 2)["covs"].shape == (2, 2, 4, 4)
    assert post.draws(0, 2)[next(iter(post.params("map")))].shape[0] == 2


def test_subspace_posterior_round_trips(tmp_path, exact):
    broad, t, _ = exact
    post = ad.adapt(
        "gaussian", broad, t, tau=TAU, method="svi", subspace=2, num_steps=100, progress=False
    )
    back = ad.load_posterior(post.save(tmp_path / "sub"))
    assert back.subspace == 2
    np.testing.assert_array_equal(back.params("mean")["Sigma"], post.params("mean")["Sigma"])
    np.testing.assert_array_equal(back.draws(2, 3)["Sigma"], post.draws(2, 3)["Sigma"])


@pytest.mark.parametrize(
    "opts,match",
    [
        ({"subspace": 5}, "must be < d = 5"),
        ({"subspace": 0}, "subspace"),
        ({"subspace": 2, "method": "exact"}, "method='nuts' or 'svi'"),
    ],
)
def test_bad_subspace_ranks(opts, match):
    broad, t = data()
    with pytest.raises(ad.AnchorDivError, match=match):
        ad.adapt("gaussian", broad, t, tau=TAU, **{"method": "svi", **opts})


def test_subspace_rank_limits_from_broad_and_latent_rank():
    broad, t = data(d=6, nb=4)
    with pytest.raises(ad.AnchorDivError, match=r"n_broad − 1 = 3"):
        ad.adapt("gaussian", broad, t, tau=TAU, method="svi", subspace=4, kappa0=1.0, nu0=9.0)
    broad, t = data(d=6)
    with pytest.raises(ad.AnchorDivError, match="must exceed the latent-gaussian rank"):
        ad.adapt("latent-gaussian", broad, t, tau=TAU, method="svi", subspace=2, rank=2)
