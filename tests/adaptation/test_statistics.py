"""The broad-anchor statistics: the cache and its identity memo, the principal subspace, and
the held-out recipe that picks a prior's strengths."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import scipy.stats

from helpers import normed
import anchordiv as ad
from anchordiv.adaptation import adapt, statistics
from anchordiv.adaptation.families import NIW, latent_gaussian
from anchordiv.adaptation.statistics import broad_moments, principal_basis, scatter
from anchordiv.errors import AnchorDivError


def sha1(a):
    return hashlib.sha1(np.ascontiguousarray(a).view(np.uint8)).hexdigest()


def test_frozen_arrays_are_private_read_only_copies_with_a_remembered_digest():
    a = np.arange(12.0).reshape(3, 4)
    f = statistics.frozen(a)
    assert f is not a and not f.flags.writeable
    a[0, 0] = 99.0  # the caller's array may change ...
    assert statistics.digest(f) == sha1(np.arange(12.0).reshape(3, 4))  # ... the copy does not
    with pytest.raises(ValueError):
        f[0, 0] = 1.0


def test_derived_values_are_computed_once_per_frozen_array_and_always_for_others():
    calls = []

    def chol(m):
        calls.append(1)
        return np.linalg.cholesky(m)

    m = np.eye(3) * 2.0
    f = statistics.frozen(m)
    first = statistics.derived(chol, f)
    assert statistics.derived(chol, f) is first and len(calls) == 1
    np.testing.assert_array_equal(first, np.linalg.cholesky(m))
    statistics.derived(chol, m)  # a user's (writable) array: no memo
    statistics.derived(chol, m)
    assert len(calls) == 3


def test_cached_results_are_frozen_and_memoised_by_identity():
    broad = np.random.default_rng(0).normal(size=(20, 3))
    mu, cov = statistics.cached(lambda b: (b.mean(0), np.cov(b.T)), broad)
    assert not cov.flags.writeable
    calls = []
    statistics.derived(lambda c: calls.append(1) or np.linalg.cholesky(c), cov)
    statistics.derived(lambda c: calls.append(1) or np.linalg.cholesky(c), cov)  # new fn: computed
    assert len(calls) == 2


def test_frozen_is_idempotent_and_adapt_computes_the_scatter_once(monkeypatch):
    """``adapt`` freezes its targets: the recipe (n > d), the exact update and the evidence
    share one scatter; freezing a frozen array returns it."""
    import anchordiv as ad
    from anchordiv.adaptation import statistics

    a = statistics.frozen(np.ones((3, 2)))
    assert statistics.frozen(a) is a
    calls = []
    real = statistics._scatter
    monkeypatch.setattr(statistics, "_scatter", lambda t: calls.append(t.shape) or real(t))
    rng = np.random.default_rng(0)
    ad.adapt("gaussian", rng.normal(size=(30, 4)), rng.normal(size=(9, 4)), tau=10.0)
    assert calls == [(9, 4)]


def test_a_frozen_array_that_outlives_the_module_globals_is_forgotten_quietly(monkeypatch):
    """At interpreter exit a frozen array can die after module teardown has set the cache's
    globals to None (arrays held by JAX's caches after NUTS/SVI): its weak-reference callback
    still removes it from the table it was registered in, with no "Exception ignored"."""
    import gc

    table = statistics._FROZEN
    a = statistics.frozen(np.ones(3))
    key = id(a)
    monkeypatch.setattr(statistics, "_FROZEN", None)  # what teardown leaves
    unraisable = []
    monkeypatch.setattr("sys.unraisablehook", unraisable.append)
    del a
    gc.collect()
    assert not unraisable and key not in table


@pytest.mark.slow
def test_a_script_that_ran_nuts_and_svi_exits_quietly(tmp_path):
    """A tiny NUTS and SVI run in a fresh interpreter (compilation: ~10 s): nothing on stderr
    says an exception was ignored at exit."""
    import subprocess
    import sys

    script = tmp_path / "run.py"
    script.write_text(
        "import numpy as np\n"
        "import anchordiv as ad\n"
        "rng = np.random.default_rng(0)\n"
        "b = rng.normal(size=(30, 3))\n"
        "b /= np.linalg.norm(b, axis=1, keepdims=True)\n"
        "held = []\n"
        "for m, o in (('nuts', dict(num_samples=10, num_warmup=10)), ('svi', dict(num_steps=10))):\n"
        "    held.append(ad.adapt('gaussian', b, b[:4], tau=20.0, method=m, progress=False, **o))\n"
        "held.append(held)  # a cycle: the posteriors' frozen arrays die at exit\n"
    )
    run = subprocess.run(
        [sys.executable, "-W", "ignore", str(script)], capture_output=True, text=True, timeout=240
    )
    assert run.returncode == 0, run.stderr
    assert "Exception ignored" not in run.stderr, run.stderr


def test_checked_arrays_are_frozen_and_remembered_as_checked():
    a = np.arange(12.0).reshape(3, 4)
    c = statistics.checked(a)
    assert c is not a and not c.flags.writeable and statistics.is_checked(c)
    assert not statistics.is_checked(a) and not statistics.is_checked(statistics.frozen(a))
    assert statistics.checked(c) is c  # checked already: the same array


def test_as_anchors_checks_only_the_shape_of_a_checked_array():
    from anchordiv.errors import AnchorDivError

    bad = np.array([[1.0, np.nan], [0.0, 1.0]])
    with pytest.raises(AnchorDivError, match="NaN"):
        statistics.as_anchors("targets", bad)
    c = statistics.checked(np.eye(2))
    assert statistics.as_anchors("targets", c, dim=2, min_rows=2) is c
    with pytest.raises(AnchorDivError, match="dimension mismatch"):
        statistics.as_anchors("targets", c, dim=3)
    with pytest.raises(AnchorDivError, match="at least 3"):
        statistics.as_anchors("targets", c, min_rows=3)


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
        sub = subspace_closed_form(post.exact, v[:, :r])
        full = ad.NIWPrior.lift([sub.mean()], post.exact, v, r, which="mean")[0]
        for k in ("mu", "Sigma"):
            np.testing.assert_allclose(full[k], post.params("mean")[k], rtol=1e-10, atol=1e-14)


def test_lift_of_the_joint_mode_block_is_the_joint_mode(exact):
    broad, _, post = exact
    v, r = principal_basis(broad), 2
    mode = post.params("map")
    block = {"mu": v[:, :r].T @ mode["mu"], "Sigma": v[:, :r].T @ mode["Sigma"] @ v[:, :r]}
    full = ad.NIWPrior.lift([block], post.exact, v, r, which="map")[0]
    for k in ("mu", "Sigma"):
        np.testing.assert_allclose(full[k], mode[k], rtol=1e-10, atol=1e-14)


def test_lifted_exact_draws_have_the_full_posterior_moments(exact):
    broad, _, post = exact
    v, r = principal_basis(broad), 2
    rng = np.random.default_rng(3)
    sub = subspace_closed_form(post.exact, v[:, :r]).sample(rng, 4000)
    draws = ad.NIWPrior.lift(
        [{"mu": m, "Sigma": s} for m, s in zip(sub["mu"], sub["Sigma"])],
        post.exact,
        v,
        r,
        rng=rng,
    )
    sig = np.stack([x["Sigma"] for x in draws])
    mu = np.stack([x["mu"] for x in draws])
    ref = post.exact.sample(np.random.default_rng(4), 4000)
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
    sub = subspace_closed_form(post.exact, v[:, :r])
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


D = 12
#: the synthetic rows are not unit-norm on purpose (exact subspaces); the warning is expected
pytestmark = pytest.mark.filterwarnings("ignore:target_anchors.*not unit-norm")


def subspace_rows(rng, n, basis, scale=1.0, noise=0.02):
    """``[n, D]`` rows varying mostly in the span of ``basis [D, r]`` around a fixed centre."""
    centre = np.full(D, 0.3)
    return (
        centre
        + scale * rng.normal(size=(n, basis.shape[1])) @ basis.T
        + noise * rng.normal(size=(n, D))
    )


@pytest.fixture
def bases():
    q, _ = np.linalg.qr(np.random.default_rng(0).normal(size=(D, D)))
    return q[:, :5], q[:, 5:10]  # the targets' subspace, one orthogonal to it


@pytest.mark.parametrize("n", [6, 20])  # fewer targets than D (Woodbury), more (d × d)
def test_loo_matches_the_student_t_reference(n):
    """The whitened LOO equals the direct float64 Student-t of the NIW predictive."""
    rng = np.random.default_rng(1)
    broad, t = rng.normal(size=(60, D)), rng.normal(size=(n, D))
    mu0, cov = broad_moments(broad, reg=1e-3)
    for s in (0.5, 7.0, 300.0):
        prior = NIW.from_scale(mu0, cov, s, D + 1 + s)
        ref = []
        for i in range(len(t)):
            post = prior.update_stats(*scatter(np.delete(t, i, 0)))
            df = post.nu - D + 1
            ref.append(
                scipy.stats.multivariate_t(
                    post.mu, post.psi * (post.kappa + 1) / (post.kappa * df), df=df
                ).logpdf(t[i])
            )
        assert statistics.loo_log_predictive(mu0, cov, t, s) == pytest.approx(
            np.mean(ref), rel=1e-10
        )


@pytest.mark.parametrize("n", [1, 2, 3])
def test_density_strength_holds_targets_out_from_three_on(n):
    """Below MIN_LOO_TARGETS the density strength is the argmax of the closed-form evidence
    plus the weak hyperprior (a fold would predict one target from a single other one);
    from three on, the argmax of the exact LOO."""
    rng = np.random.default_rng(3)
    broad, t = rng.normal(size=(60, D)), rng.normal(size=(n, D))
    mu0, cov = broad_moments(broad, reg=1e-3)
    grid = np.asarray(statistics.STRENGTH_GRID)
    if n < statistics.MIN_LOO_TARGETS:
        score = [
            NIW.from_scale(mu0, cov, s, D + 1 + s).log_marginal(t)
            + 2 * ad.adaptation.statistics.log_hyperprior(np.log(s))
            for s in grid
        ]
        expected = "density (evidence + hyperprior)"
    else:
        score = [statistics.loo_log_predictive(mu0, cov, t, s) for s in grid]
        expected = "held-out density (LOO)"
    best = float(grid[int(np.argmax(score))])
    assert statistics.density_strength(mu0, cov, t) == best
    chosen = statistics.gaussian_strengths(broad, t)
    assert chosen["density_strength"] == best
    if chosen["novelty_strength"] >= best:
        assert chosen["chosen_by"] == expected


def test_prior_spanning_the_targets_is_trusted_an_orthogonal_one_discounted(bases):
    inside, orthogonal = bases
    rng = np.random.default_rng(2)
    targets = subspace_rows(rng, 3, inside)  # too few to span their own subspace
    spanning = subspace_rows(rng, 400, inside)
    off = subspace_rows(rng, 400, orthogonal)
    good = statistics.gaussian_strengths(spanning, targets)
    bad = statistics.gaussian_strengths(off, targets)
    # the held-out density trusts the spanning prior, discounts the orthogonal one ...
    assert good["density_strength"] > 2 * bad["density_strength"]
    assert bad["chosen_by"] == "held-out density (LOO)"
    # ... and the chosen strength follows (capped by the targets' novelty for the first)
    assert good["strength"] > 2 * bad["strength"]
    # the chosen strengths run through ad.adapt for the posterior and its control alike
    for prior in ("broad", "isotropic"):
        post = adapt(
            "gaussian",
            spanning,
            targets,
            tau=10.0,
            prior=prior,
            kappa0=good["kappa0"],
            nu0=good["nu0"],
        )
        assert post.info["kappa0"] == good["kappa0"]


def test_growing_n_converges_to_the_target_only_fit(bases):
    inside, _ = bases
    rng = np.random.default_rng(3)
    broad = rng.normal(size=(400, D))  # an uninformative, isotropic-ish prior
    pool = subspace_rows(rng, 200, inside, noise=0.05)
    weights, gaps = [], []
    for n in (3, 10, 40, 200):
        t = pool[:n]
        s = statistics.gaussian_strengths(broad, t)["strength"]
        weights.append(s / (s + n))
        f = np.asarray(
            adapt("gaussian", broad, t, tau=10.0, kappa0=s, nu0=D + 1 + s).point("mean").factor,
            np.float64,
        )
        sigma = f @ f.T
        target_only = np.cov(t.T, bias=True)
        gaps.append(np.linalg.norm(np.asarray(sigma) - target_only) / np.linalg.norm(target_only))
    assert all(a > b for a, b in zip(weights, weights[1:]))  # prior weight falls
    assert weights[-1] < 0.01
    assert gaps[-1] < 0.05 and gaps[-1] < gaps[0]


def test_novelty_is_one_for_scattered_targets_and_zero_inside_a_spanned_plane(bases):
    inside, _ = bases
    rng = np.random.default_rng(4)
    assert statistics.target_novelty(rng.normal(size=(2, D))) == 1.0
    assert statistics.target_novelty(rng.normal(size=(5, D))) > 0.6  # 3 of 12 dims spanned
    plane = subspace_rows(rng, 10, inside[:, :2], noise=0.0)
    assert statistics.target_novelty(plane) == pytest.approx(0.0, abs=1e-9)
    assert statistics.novelty_strength(10, 0.5) == pytest.approx(10.0)
    assert statistics.novelty_strength(10, 1.0) == float("inf")


def test_latent_rank_is_recovered_on_a_planted_low_rank_problem():
    rng = np.random.default_rng(5)
    q, _ = np.linalg.qr(rng.normal(size=(D, D)))
    planted = q[:, :5]
    targets = 0.3 + rng.normal(size=(80, 5)) @ planted.T + 0.01 * rng.normal(size=(80, D))
    broad = rng.normal(size=(300, D)) * np.r_[5.0, np.full(D - 1, 0.2)]  # one leading dir.
    opts = latent_gaussian.latent_options(broad, targets)
    assert opts["rank"] == 5
    assert 0 < opts["beta"] < 1
    post = adapt("latent-gaussian", broad, targets, tau=10.0, rank=opts["rank"], beta=opts["beta"])
    u = np.asarray(post.point("mean").basis, np.float64)
    _, cosines, _ = np.linalg.svd(planted.T @ np.linalg.qr(u)[0])
    assert cosines.min() > 0.99  # the planted subspace itself


def test_spectral_counts():
    assert statistics.participation_ratio([2.0, 2.0, 2.0, 0.0]) == pytest.approx(3.0)
    assert statistics.stable_rank([4.0, 2.0, 2.0]) == pytest.approx(2.0)
    with pytest.raises(AnchorDivError, match="do not vary"):
        statistics.participation_ratio(np.zeros(3))


def test_errors_name_the_problem():
    with pytest.raises(AnchorDivError, match="not positive definite"):
        statistics.loo_log_predictive(np.zeros(3), np.zeros((3, 3)), np.ones((3, 3)), 1.0)
    with pytest.raises(AnchorDivError, match="target_anchors"):
        statistics.gaussian_strengths(
            np.random.default_rng(0).normal(size=(10, 4)), np.ones((2, 5))
        )


def test_the_recipe_is_an_option_of_the_priors_and_their_controls():
    """``strengths="held-out"`` / ``rank="auto", beta="auto"`` give the recipe's numbers, and the
    isotropic control gets the same ones."""
    rng = np.random.default_rng(0)
    broad = normed(rng.normal(size=(200, 16)) + 0.5)
    targets = normed(rng.normal(size=(8, 16)) + 1.0)
    g = statistics.gaussian_strengths(broad, targets)
    lat = latent_gaussian.latent_options(broad, targets)
    for prior in ("broad", "isotropic"):
        p = ad.adapt("gaussian", broad, targets, tau=20.0, strengths="held-out", prior=prior)
        assert p.info["kappa0"] == pytest.approx(g["kappa0"]) and p.info["nu0"] == pytest.approx(
            g["nu0"]
        )
        assert p.info["chosen_by"].startswith("held-out recipe")
        for kind in ("latent-gaussian", "latent-spherical"):
            q = ad.adapt(kind, broad, targets, tau=20.0, rank="auto", beta="auto", prior=prior)
            assert q.info["rank"] == max(lat["rank"], 2 if kind == "latent-spherical" else 1)
            assert q.info["beta"] == pytest.approx(lat["beta"])
    with pytest.raises(AnchorDivError, match="strengths"):
        ad.adapt("gaussian", broad, targets, tau=20.0, strengths="bogus")
    with pytest.raises(AnchorDivError, match="together"):
        ad.adapt("gaussian", broad, targets, tau=20.0, strengths="held-out", kappa0=3.0)
    with pytest.raises(AnchorDivError, match="rank"):
        ad.adapt("latent-gaussian", broad, targets, tau=20.0, rank="most")


def principal_cosines(u, basis):
    """Cosines of the principal angles between span(u) and span(basis) (1 = contained)."""
    return np.linalg.svd(
        np.linalg.qr(np.asarray(basis, np.float64))[0].T
        @ np.linalg.qr(np.asarray(u, np.float64))[0],
        compute_uv=False,
    )


def test_a_spanning_prior_supplies_the_targets_subspace_an_orthogonal_one_does_not(bases):
    """Three targets cannot span their 5-d subspace; the default latent posterior from a prior
    spanning it recovers it, from an orthogonal prior it stays near the targets' own 2-d span
    (the recipe trusts that prior less: lower strength, higher target weight)."""
    inside, orthogonal = bases
    rng = np.random.default_rng(6)
    targets = subspace_rows(rng, 3, inside)
    spanning = subspace_rows(rng, 400, inside)
    off = subspace_rows(rng, 400, orthogonal)
    good = adapt("latent-gaussian", spanning, targets, tau=10.0)
    bad = adapt("latent-gaussian", off, targets, tau=10.0)
    assert good.info["rank"] in (4, 5)  # the prior's stable rank: novel targets
    assert good.info["beta"] < 0.1 < 0.5 < bad.info["beta"]
    u_good = good.point("mean").basis
    assert principal_cosines(u_good, inside).min() > 0.999  # inside the planted span
    captured = lambda u: (principal_cosines(u, inside) ** 2).sum()  # noqa: E731
    assert captured(bad.point("mean").basis) < 2.1 < 3.9 < captured(u_good)


def test_growing_n_converges_to_the_target_only_latent_fit(bases):
    """As n grows the default latent posterior's rank becomes the target-only fit's, β → 1 and
    the subspace becomes the target-only one, from an orthogonal prior too."""
    inside, orthogonal = bases
    rng = np.random.default_rng(7)
    pool = subspace_rows(rng, 300, inside, noise=0.01)
    off = subspace_rows(rng, 400, orthogonal)
    betas, fits = [], []
    for n in (3, 30, 300):
        post = adapt("latent-gaussian", off, pool[:n], tau=10.0)
        betas.append(post.info["beta"])
        fits.append(principal_cosines(post.point("mean").basis, inside).min())
    target_only = ad.fit("latent-gaussian", pool, tau=10.0)
    assert post.info["rank"] == target_only.basis.shape[1] == 5
    assert betas == sorted(betas) and betas[-1] > 0.95
    assert fits[-1] > 0.999 and fits[-1] > fits[0]


def test_the_recipe_is_the_default():
    rng = np.random.default_rng(8)
    broad, targets = (
        normed(rng.normal(size=(200, 16)) + 0.5),
        normed(rng.normal(size=(8, 16)) + 1.0),
    )
    g = statistics.gaussian_strengths(broad, targets)
    lat = latent_gaussian.latent_options(broad, targets, strengths=g)
    post = ad.adapt("gaussian", broad, targets, tau=20.0)
    assert post.info["kappa0"] == pytest.approx(g["kappa0"])
    assert post.info["chosen_by"].startswith("held-out recipe")
    for kind in ("latent-gaussian", "latent-spherical"):
        q = ad.adapt(kind, broad, targets, tau=20.0)
        assert q.info["rank"] == max(lat["rank"], 2 if kind == "latent-spherical" else 1)
        assert q.info["beta"] == pytest.approx(lat["beta"])
        assert q.prior.prior_anchors == pytest.approx(g["strength"])  # the prior is worth s
    # the rules before issue 17, by name
    old = ad.adapt("latent-gaussian", broad, targets, tau=20.0, rank="variance", prior_anchors=10.0)
    assert (
        old.info["rank"]
        == ad.adapt(
            "latent-gaussian", broad, targets, tau=20.0, rank=None, prior_anchors=10.0
        ).info["rank"]
    )
    assert old.info["beta"] == pytest.approx(8 / 18)
    # a prior without targets: the recipe's choice for novel targets
    alone = ad.BinghamPrior.from_anchors(broad)
    assert (
        alone.rank == latent_gaussian.recipe_rank(broad, None, novelty=1.0) and alone.beta is None
    )
    with pytest.raises(AnchorDivError, match="strengths='evidence'"):
        ad.adapt("gaussian", broad, targets, tau=20.0, kappa0=3.0)


@pytest.mark.parametrize("d", [16, 96])
@pytest.mark.parametrize("n", [2, 3, 10, 50, 200])
def test_batched_criteria_match_the_loop_over_folds_and_strengths(n, d):
    """Issue 25: the folds × strengths of the LOO (and the evidence below three targets) and
    the novelty's per-fold spans come from one eigendecomposition each; they equal the loop
    of one solve per cell and one SVD per fold (tests/adaptation/recipe_loop.py), and the
    recipe chooses the same strengths."""
    import recipe_loop as loop

    rng = np.random.default_rng(10 * n + d)
    broad = rng.normal(size=(4 * d, d)) + 0.5 * rng.normal(size=d)
    t = rng.normal(size=(n, d)) * np.linspace(0.2, 1.5, d) + 0.3
    mu0, cov = broad_moments(broad, reg=1e-3)
    ref = loop.density_scores(mu0, cov, t)
    got = statistics.density_scores(mu0, cov, t)
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9 * np.abs(ref).max())
    assert statistics.target_novelty(t) == pytest.approx(loop.target_novelty(t), abs=1e-9)
    want, chosen = loop.gaussian_strengths(broad, t), statistics.gaussian_strengths(broad, t)
    assert chosen["strength"] == pytest.approx(want["strength"], rel=1e-9)  # grid or n·ν/(1−ν)
    assert chosen["density_strength"] == want["density_strength"]


@pytest.mark.parametrize("case", ["duplicates", "plane", "one-repeated"])
def test_batched_novelty_matches_the_loop_on_degenerate_targets(case, bases):
    import recipe_loop as loop

    rng = np.random.default_rng(4)
    inside, _ = bases
    t = {
        "duplicates": np.repeat(rng.normal(size=(4, D)), 3, axis=0),
        "plane": subspace_rows(rng, 30, inside, noise=0.0),
        "one-repeated": np.concatenate([rng.normal(size=(6, D)), np.ones((3, D))]),
    }[case]
    assert statistics.target_novelty(t) == pytest.approx(loop.target_novelty(t), abs=1e-9)


def test_evidence_scores_equal_the_niw_marginal():
    rng = np.random.default_rng(5)
    broad, t = rng.normal(size=(60, D)), rng.normal(size=(2, D))
    mu0, cov = broad_moments(broad, reg=1e-3)
    y, logdet_c = statistics.whitened(mu0, cov, t)
    grid = np.asarray(statistics.STRENGTH_GRID)
    ref = [NIW.from_scale(mu0, cov, s, D + 1 + s).log_marginal(t) for s in grid]
    np.testing.assert_allclose(statistics.evidence_scores(y, logdet_c, grid), ref, rtol=1e-10)
