"""The evidence-adaptive recipe on synthetic problems whose answer is known."""

import numpy as np
import pytest
import scipy.stats

import anchordiv as ad

from anchordiv.adaptation import adapt, recipe
from anchordiv.errors import AnchorDivError
from anchordiv.adaptation.families.gaussian import NIW
from anchordiv.adaptation.statistics import broad_moments, scatter

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
        assert recipe.loo_log_predictive(mu0, cov, t, s) == pytest.approx(np.mean(ref), rel=1e-10)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_density_strength_holds_targets_out_from_three_on(n):
    """Below MIN_LOO_TARGETS the density strength is the argmax of the closed-form evidence
    plus the weak hyperprior (a fold would predict one target from a single other one);
    from three on, the argmax of the exact LOO."""
    rng = np.random.default_rng(3)
    broad, t = rng.normal(size=(60, D)), rng.normal(size=(n, D))
    mu0, cov = broad_moments(broad, reg=1e-3)
    grid = np.asarray(recipe.STRENGTH_GRID)
    if n < recipe.MIN_LOO_TARGETS:
        score = [
            NIW.from_scale(mu0, cov, s, D + 1 + s).log_marginal(t)
            + 2 * ad.adaptation.recipe.log_hyperprior(np.log(s))
            for s in grid
        ]
        expected = "density (evidence + hyperprior)"
    else:
        score = [recipe.loo_log_predictive(mu0, cov, t, s) for s in grid]
        expected = "held-out density (LOO)"
    best = float(grid[int(np.argmax(score))])
    assert recipe.density_strength(mu0, cov, t) == best
    chosen = recipe.gaussian_strengths(broad, t)
    assert chosen["density_strength"] == best
    if chosen["novelty_strength"] >= best:
        assert chosen["chosen_by"] == expected


def test_prior_spanning_the_targets_is_trusted_an_orthogonal_one_discounted(bases):
    inside, orthogonal = bases
    rng = np.random.default_rng(2)
    targets = subspace_rows(rng, 3, inside)  # too few to span their own subspace
    spanning = subspace_rows(rng, 400, inside)
    off = subspace_rows(rng, 400, orthogonal)
    good = recipe.gaussian_strengths(spanning, targets)
    bad = recipe.gaussian_strengths(off, targets)
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
        s = recipe.gaussian_strengths(broad, t)["strength"]
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
    assert recipe.target_novelty(rng.normal(size=(2, D))) == 1.0
    assert recipe.target_novelty(rng.normal(size=(5, D))) > 0.6  # 3 of 12 dims spanned
    plane = subspace_rows(rng, 10, inside[:, :2], noise=0.0)
    assert recipe.target_novelty(plane) == pytest.approx(0.0, abs=1e-9)
    assert recipe.novelty_strength(10, 0.5) == pytest.approx(10.0)
    assert recipe.novelty_strength(10, 1.0) == float("inf")


def test_latent_rank_is_recovered_on_a_planted_low_rank_problem():
    rng = np.random.default_rng(5)
    q, _ = np.linalg.qr(rng.normal(size=(D, D)))
    planted = q[:, :5]
    targets = 0.3 + rng.normal(size=(80, 5)) @ planted.T + 0.01 * rng.normal(size=(80, D))
    broad = rng.normal(size=(300, D)) * np.r_[5.0, np.full(D - 1, 0.2)]  # one leading dir.
    opts = recipe.latent_options(broad, targets)
    assert opts["rank"] == 5
    assert 0 < opts["beta"] < 1
    post = adapt("latent-gaussian", broad, targets, tau=10.0, rank=opts["rank"], beta=opts["beta"])
    u = np.asarray(post.point("mean").basis, np.float64)
    _, cosines, _ = np.linalg.svd(planted.T @ np.linalg.qr(u)[0])
    assert cosines.min() > 0.99  # the planted subspace itself


def test_spectral_counts():
    assert recipe.participation_ratio([2.0, 2.0, 2.0, 0.0]) == pytest.approx(3.0)
    assert recipe.stable_rank([4.0, 2.0, 2.0]) == pytest.approx(2.0)
    assert recipe.latent_beta(10, 10.0) == pytest.approx(0.5)
    with pytest.raises(AnchorDivError, match="do not vary"):
        recipe.participation_ratio(np.zeros(3))


def test_errors_name_the_problem():
    with pytest.raises(AnchorDivError, match="not positive definite"):
        recipe.loo_log_predictive(np.zeros(3), np.zeros((3, 3)), np.ones((3, 3)), 1.0)
    with pytest.raises(AnchorDivError, match="target_anchors"):
        recipe.gaussian_strengths(np.random.default_rng(0).normal(size=(10, 4)), np.ones((2, 5)))


def test_the_recipe_is_an_option_of_the_priors_and_their_controls():
    """``strengths="held-out"`` / ``rank="auto", beta="auto"`` give the recipe's numbers, and the
    isotropic control gets the same ones."""
    rng = np.random.default_rng(0)
    unit = lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True)  # noqa: E731
    broad = unit(rng.normal(size=(200, 16)) + 0.5)
    targets = unit(rng.normal(size=(8, 16)) + 1.0)
    g = recipe.gaussian_strengths(broad, targets)
    lat = recipe.latent_options(broad, targets)
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
    unit = lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True)  # noqa: E731
    broad, targets = unit(rng.normal(size=(200, 16)) + 0.5), unit(rng.normal(size=(8, 16)) + 1.0)
    g = recipe.gaussian_strengths(broad, targets)
    lat = recipe.latent_options(broad, targets, strengths=g)
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
    assert alone.rank == recipe.latent_rank(broad, None, novelty=1.0) and alone.beta is None
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
    got = recipe.density_scores(mu0, cov, t)
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9 * np.abs(ref).max())
    assert recipe.target_novelty(t) == pytest.approx(loop.target_novelty(t), abs=1e-9)
    want, chosen = loop.gaussian_strengths(broad, t), recipe.gaussian_strengths(broad, t)
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
    assert recipe.target_novelty(t) == pytest.approx(loop.target_novelty(t), abs=1e-9)


def test_evidence_scores_equal_the_niw_marginal():
    rng = np.random.default_rng(5)
    broad, t = rng.normal(size=(60, D)), rng.normal(size=(2, D))
    mu0, cov = broad_moments(broad, reg=1e-3)
    y, logdet_c = recipe.whitened(mu0, cov, t)
    grid = np.asarray(recipe.STRENGTH_GRID)
    ref = [NIW.from_scale(mu0, cov, s, D + 1 + s).log_marginal(t) for s in grid]
    np.testing.assert_allclose(recipe.evidence_scores(y, logdet_c, grid), ref, rtol=1e-10)
