"""Power-scaling prior sensitivity (``ad.prior_sensitivity``): the closed-form power-scaled
posterior against float64 references, PSIS on draws against it within its Monte-Carlo error,
the diagnostic against ArviZ's own ``psens`` on the ``log_prior`` group of ``inference_data``."""

import warnings

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.adaptation.families.diagonal import NormalInverseGamma
from anchordiv.adaptation.families.gaussian import NIW
from anchordiv.checks import arviz as adz
from anchordiv.checks.criticism import k_threshold
from anchordiv.checks.sensitivity import (
    CONFLICT,
    STRONG_PRIOR,
    THRESHOLD,
    PriorSensitivity,
    cjs_distance,
    coupled_sensitivity,
    diagnosis,
    likelihood_scaled_posterior,
    prior_drives_ranking,
    prior_shares,
    robust_to_strength,
    sensitivity_values,
)
from anchordiv.retrieval.divergence import top_k


def unit_rows(rng, n, d):
    x = rng.normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def problem(d=4, n=8, kappa0=5.0, nu0=10.0, seed=0):
    rng = np.random.default_rng(seed)
    broad = unit_rows(rng, 60, d)
    targets = broad[:n] + 0.05 * rng.normal(size=(n, d))
    prior = ad.NIWPrior.from_anchors(broad, kappa0=kappa0, nu0=nu0)
    return prior, targets / np.linalg.norm(targets, axis=1, keepdims=True), broad


def reference_niw_mean(prior, targets, alpha):
    """The power-scaled NIW posterior mean, in plain float64 numpy (docs/mathematics.md, "Power-scaling sensitivity")."""
    t = np.asarray(targets, np.float64)
    n, d = t.shape
    psi0 = (prior.nu0 - d - 1) * np.asarray(prior.cov, np.float64)
    k0, nu0, psi0 = alpha * prior.kappa0, alpha * (prior.nu0 + d + 2) - d - 2, alpha * psi0
    tbar = t.mean(0)
    s = (t - tbar).T @ (t - tbar)
    kn, nun = k0 + n, nu0 + n
    dm = tbar - prior.mu0
    psin = psi0 + s + k0 * n / kn * np.outer(dm, dm)
    return (k0 * prior.mu0 + n * tbar) / kn, psin / (nun - d - 1)


def test_power_scaled_niw_is_the_niw_raised_to_alpha():
    """log NIW_α(θ) − α·log NIW(θ) is the same constant at every θ (the density raised to α)."""
    from anchordiv.adaptation.families.gaussian import log_niw

    prior, _, _ = problem()
    base = prior.niw()
    scaled = base.power_scaled(1.3)
    draws = base.sample(np.random.default_rng(1), 6)
    diff = log_niw(draws["mu"], draws["Sigma"], scaled.model_kwargs()) - 1.3 * log_niw(
        draws["mu"], draws["Sigma"], base.model_kwargs()
    )
    np.testing.assert_allclose(diff, diff[0], rtol=0, atol=1e-9)
    assert base.power_scaled(1.0) is base


def test_power_scaled_normal_inverse_gamma_is_raised_to_alpha():
    rng = np.random.default_rng(0)
    nig = NormalInverseGamma(rng.normal(size=3), 4.0, 6.0, rng.uniform(1, 2, size=3))
    scaled = nig.power_scaled(0.7)
    d = nig.sample(rng, 5)

    def logp(p):
        kw = p.model_kwargs()
        lik = ad.DiagonalPrior.likelihood_type(ad.DiagonalPrior, kw, {}, 3)
        return lik.log_joint(np.zeros((0, 3)), d)

    diff = logp(scaled) - 0.7 * logp(nig)
    np.testing.assert_allclose(diff, diff[0], rtol=0, atol=1e-10)


def test_an_alpha_that_leaves_the_prior_improper_is_refused():
    prior, targets, _ = problem(d=6, nu0=8.0)  # proper for α > 13 / 16
    with pytest.raises(ad.AnchorDivError, match="improper.*proper for α > 0.8125"):
        prior.niw().power_scaled(0.8)
    post = prior.update(targets, tau=20.0)
    with pytest.raises(ad.AnchorDivError, match="improper"):
        ad.prior_sensitivity(post, alphas=(0.8, 1.2), diagnostic=False)
    # the default grid leaves such α out, and says so
    res = ad.prior_sensitivity(post, diagnostic=False)
    assert list(res.alphas) == [0.9, 1.0, 1.1, 1.25]
    assert "α = 0.8 left out" in res.note and "note: α = 0.8" in repr(res)
    with pytest.raises(ad.AnchorDivError, match="improper"):
        NormalInverseGamma(np.zeros(2), 1.0, 0.5, np.ones(2)).power_scaled(0.5)


@pytest.mark.parametrize("d", [4, 128])
def test_exact_alpha_curve_matches_the_float64_reference(d):
    prior, targets, broad = problem(d=d, n=12, kappa0=20.0, nu0=d + 201.0)
    post = prior.update(targets, tau=20.0)
    alphas = (0.8, 1.25)
    res = ad.prior_sensitivity(post, alphas, diagnostic=False)
    assert res.method == "exact" and list(res.alphas) == [0.8, 1.0, 1.25]
    for i, a in enumerate(res.alphas):
        mu, sigma = reference_niw_mean(prior, targets, a)
        np.testing.assert_allclose(res.site_means[i]["mu"], mu, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(res.site_means[i]["Sigma"], sigma, rtol=1e-11, atol=1e-14)
    np.testing.assert_allclose(res.site_means[1]["Sigma"], post.params("mean")["Sigma"], rtol=0)
    # a stronger prior pulls the mean toward μ₀: the shift grows with |log α|
    shift = res.curve().set_index("alpha")["shift_mu"]
    assert shift[1.0] == 0.0 and shift[0.8] > 0 and shift[1.25] > 0


def test_retrieval_part_is_the_power_scaled_scorer():
    prior, targets, broad = problem(d=6, n=10, kappa0=10.0, nu0=30.0)
    post = prior.update(targets, tau=20.0)
    rng = np.random.default_rng(3)
    q, g = unit_rows(rng, 7, 6), unit_rows(rng, 40, 6)
    rel = rng.random((7, 40)) < 0.3
    res = ad.prior_sensitivity(
        post, (0.5, 2.0), queries=q, gallery=g, relevance=rel, k=5, diagnostic=False
    )
    ref, _ = top_k(post.point("mean"), q, g, 5)
    for i, a in enumerate(res.alphas):
        mu, sigma = reference_niw_mean(prior, targets, a)
        idx, _ = top_k(post.to_model({"mu": mu, "Sigma": sigma}), q, g, 5)
        expected = [len(np.intersect1d(x, y)) / 5 for x, y in zip(idx, ref)]
        np.testing.assert_allclose(res.topk_overlap[i], expected)
        assert res.auprc is not None and np.isfinite(res.auprc[i]).any()
    assert np.all(res.topk_overlap[1] == 1.0)
    assert "prior strength, top-5" in repr(res) and "keeps" in res.describe()


def test_cjs_distance_is_arviz_s_on_every_column():
    """One vectorised CJS for the exact and PSIS paths: equal to ArviZ's psens on the same
    draws and weights (through the log_prior group of inference_data, below)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 3))
    w = np.exp(0.3 * rng.normal(size=50))
    out = cjs_distance(x, w)
    for j in range(3):
        assert out[j] == pytest.approx(float(cjs_distance(x[:, [j]], w)[0]), rel=1e-12)
    assert cjs_distance(np.ones((10, 1)), w[:10])[0] == 0.0  # a constant does not move
    assert cjs_distance(np.linspace(0.0, 1.0, 5)[:, None], np.ones(5))[0] == 0.0  # unweighted
    assert np.all(out > 0)


def test_psis_diagnostic_equals_arviz_psens_on_the_log_prior_group():
    prior, targets, _ = problem()
    post = prior.update(targets, tau=20.0)
    idata = ad.inference_data(post, num_draws=200, seed=0, prior=False)
    assert "log_prior" in adz.groups(idata)
    theirs = adz.psens(idata)
    res = ad.prior_sensitivity(post, method="psis", num_draws=200, seed=0)
    ours = res.sensitivity
    # the family's quantities, and beside them the scale-free ones of geometry_quantities
    assert set(ours) == set(theirs) | {"mean_direction", "cov_shape", "cov_prior_subspace"}
    assert {"mean_direction", "cov_shape", "cov_prior_subspace"} <= set(res.scale_free)
    # measured: within 3.1e-13 on ArviZ 0.23 (psens) and 1.3 (arviz-stats' psense)
    for name in theirs:
        np.testing.assert_allclose(ours[name], theirs[name], rtol=1e-9, atol=1e-12, err_msg=name)


def test_psis_on_exact_draws_agrees_with_the_closed_form_within_its_mcse():
    prior, targets, _ = problem()
    post = prior.update(targets, tau=20.0)
    alphas = (0.8, 0.9, 1.1, 1.25)
    exact = ad.prior_sensitivity(post, alphas, num_draws=1000, seed=1)
    psis = ad.prior_sensitivity(post, alphas, method="psis", num_draws=1000, seed=1)
    assert exact.method == "exact" and exact.pareto_k is None and exact.mcse is None
    assert exact.weights == []  # the exact diagnostic reweights nothing (coupled draws)
    assert np.all(psis.pareto_k < 0.7)
    # every reweighting of the PSIS path carries its k and ESS
    assert {(w["component"], w["use"]) for w in psis.weights} == {
        ("prior", "diagnostic"),
        ("likelihood", "diagnostic"),
        ("prior", "curve"),
        ("likelihood", "curve"),
    }
    assert all(0 < w["ess"] <= 1000 and np.isfinite(w["pareto_k"]) for w in psis.weights)
    for i in range(len(psis.alphas)):
        for site in ("mu", "Sigma"):
            z = (psis.site_means[i][site] - exact.site_means[i][site]) / psis.mcse[i][site]
            assert np.abs(z).max() < 4.5, (psis.alphas[i], site, np.abs(z).max())
    # the likelihood's α curve: closed form against PSIS within its Monte-Carlo error
    for i in range(len(psis.alphas)):
        for site in ("mu", "Sigma"):
            z = (psis.likelihood_means[i][site] - exact.likelihood_means[i][site]) / psis.mcse[i][
                site
            ]
            assert np.abs(z).max() < 6, (psis.alphas[i], site, np.abs(z).max())


@pytest.mark.slow
def test_psis_on_a_nuts_posterior_agrees_with_the_exact_power_scaled_posterior():
    """The issue's cross-check: the same model fitted by NUTS, power-scaled by PSIS, against the
    closed-form power-scaled posterior (d = 4)."""
    prior, targets, _ = problem()
    method = ad.NUTS(num_warmup=200, num_samples=800, num_chains=1, progress=False, seed=0)
    nuts = ad.infer(prior, targets, method, tau=20.0)
    post = prior.update(targets, tau=20.0)
    alphas = (0.8, 0.9, 1.1, 1.25)
    exact = ad.prior_sensitivity(post, alphas, diagnostic=False)
    psis = ad.prior_sensitivity(nuts, alphas, num_draws=800)
    assert psis.method == "psis" and np.all(psis.pareto_k < 0.7)
    for i in range(len(alphas) + 1):
        for site in ("mu", "Sigma"):
            z = (psis.site_means[i][site] - exact.site_means[i][site]) / psis.mcse[i][site]
            assert np.abs(z).max() < 4.5, (psis.alphas[i], site, np.abs(z).max())
    assert {"mu", "Sigma"} <= set(psis.sensitive)
    # method="exact" on the NUTS posterior: the closed-form curve of the same model
    same = ad.prior_sensitivity(nuts, alphas, method="exact", diagnostic=False)
    np.testing.assert_allclose(same.site_means[0]["Sigma"], exact.site_means[0]["Sigma"])


def test_the_result_reads_as_a_table_and_in_words(tmp_path):
    prior, targets, broad = problem()
    post = prior.update(targets, tau=20.0)
    res = ad.prior_sensitivity(post, (0.8, 1.25), num_draws=100)
    lines = repr(res).splitlines()
    assert lines[0] == "PriorSensitivity(exact, 100 draws, alphas 0.8–1.25, threshold 0.05)"
    assert {line.split(":")[0].strip() for line in lines[1:]} == set(res.worst)
    table = res.table()
    assert list(table.columns) == ["prior", "likelihood", "diagnosis", "scale_free", "at"]
    assert set(table.index[table["diagnosis"] != "-"]) == set(res.sensitive)
    assert all(res.worst[n] > THRESHOLD for n in res.sensitive)
    assert "Power-scaling the prior and the likelihood" in res.describe()
    res.plot(tmp_path / "s.png")
    assert (tmp_path / "s.png").stat().st_size > 0


def test_posteriors_whose_prior_is_unknown_are_refused_by_name():
    prior, targets, broad = problem()
    post = prior.update(targets, tau=20.0)
    with pytest.raises(ad.AnchorDivError, match="method: one of"):
        ad.prior_sensitivity(post, method="magic")
    with pytest.raises(ad.AnchorDivError, match="queries and gallery"):
        ad.prior_sensitivity(post, queries=broad[:2], diagnostic=False)
    with pytest.raises(ad.AnchorDivError, match="alpha"):
        ad.prior_sensitivity(post, alphas=(0.0, 1.1), diagnostic=False)
    custom = ad.adaptation.SampledPosterior(
        "gaussian",
        "nuts",
        20.0,
        "float64",
        {"d": 4},
        samples={"mu": np.zeros((1, 5, 4)), "Sigma": np.tile(np.eye(4), (1, 5, 1, 1))},
        model_kwargs=post.model_kwargs,
        custom_model=True,
    )
    with pytest.raises(ad.AnchorDivError, match="user's NumPyro model"):
        ad.prior_sensitivity(custom)
    assert "log_prior" not in adz.groups(ad.inference_data(custom, num_draws=4, prior=False))


def test_a_family_without_a_closed_form_falls_through_to_psis():
    rng = np.random.default_rng(0)
    broad = unit_rows(rng, 60, 4)
    post = ad.adapt("mixture", broad, broad[:8], tau=20.0, components=2)
    with pytest.raises(ad.AnchorDivError, match="no closed-form power-scaled posterior"):
        ad.prior_sensitivity(post, method="exact")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = ad.prior_sensitivity(post, (0.9, 1.1), num_draws=40)
    assert res.method == "psis" and res.pareto_k is not None and len(res.worst) > 0
    # an α whose Pareto k is too high is named, in a warning and in the words: one warning per
    # cause (the diagnostic's reweighting, the α curve's)
    said = [str(w.message) for w in caught if "on the α curve" in str(w.message)]
    assert len(said) == bool([w for w in res.unreliable_weights if w["use"] == "curve"])
    if res.unreliable:
        assert f"α {res.unreliable[0]:g} (curve)" in said[0] and "Pareto k above" in res.describe()
    diag = [str(w.message) for w in caught if "diagnostic's reweighting" in str(w.message)]
    assert len(diag) == bool([w for w in res.unreliable_weights if w["use"] == "diagnostic"])
    assert all(np.all(np.isfinite(v)) for v in res.sensitivity.values())


def test_niw_family_hook_is_the_power_scaled_update():
    prior, targets, _ = problem()
    got = prior.power_scaled_posterior(1.1, targets)
    want = NIW.from_scale(prior.mu0, prior.cov, prior.kappa0, prior.nu0).power_scaled(1.1)
    np.testing.assert_array_equal(got.psi, want.update(targets).psi)
    assert prior.power_scaled_posterior(1.0, targets).nu == prior.update(targets, tau=20.0).exact.nu


# ---- the constructed case: the task lives in e0..e3, the broad anchors vary along e4..e7 --------
def constructed(n=3, kappa0=50.0, nu0=None, d=32, seed=0):
    """d = 32 (issue 50's case): broad anchors varying along e4..e7, a task whose classes differ
    along e0..e3 (items also vary, as noise, along e4..e7); ``n`` target anchors of the task.
    Returns ``(posterior, queries, gallery, relevance)``."""
    rng = np.random.default_rng(seed)
    nu0 = d + 200.0 if nu0 is None else nu0
    base = np.zeros(d)
    base[8] = 1.0  # a direction common to both, off the task and off the broad variation

    def rows(m, task, off):
        rest = 0.02 * rng.normal(size=(m, d - 8))
        return unit(base + np.concatenate([task, off * rng.normal(size=(m, 4)), rest], 1))

    broad = rows(400, np.zeros((400, 4)), 0.5)
    centres = 0.5 * rng.normal(size=(5, 4))
    cls = np.repeat(np.arange(5), 40)
    items = rows(200, centres[cls] + 0.1 * rng.normal(size=(200, 4)), 0.4)
    tcls = rng.integers(0, 5, size=n)
    targets = rows(n, centres[tcls] + 0.1 * rng.normal(size=(n, 4)), 0.05)
    q = np.arange(0, 200, 10)
    g = np.setdiff1d(np.arange(200), q)
    post = ad.adapt("gaussian", broad, targets, tau=20.0, kappa0=kappa0, nu0=nu0)
    return post, items[q], items[g], cls[q][:, None] == cls[g][None, :]


def unit(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


DOMINANT = {"kappa0": 50.0}  # ν₀ = d + 200
WEAK = {"kappa0": 0.5, "nu0": 34.0}  # ν₀ = d + 2


def strong_prior_rows(res):
    return [n for n, v in res.diagnoses.items() if v == STRONG_PRIOR]


def test_a_dominant_prior_is_diagnosed_and_its_endpoints_say_it_decides_the_ranking():
    """Issue 50's done-when: 3 targets, κ₀ = 50, ν₀ = d + 200, broad anchors off the task."""
    post, q, g, rel = constructed(**DOMINANT)
    res = ad.prior_sensitivity(post, queries=q, gallery=g, relevance=rel, num_draws=200)
    # the covariance's shape (what a Gaussian divergence ranks by) among them; the share of
    # Σ in the prior's leading subspace is likelihood-sensitive too (the task lies off it)
    assert "cov_shape" in strong_prior_rows(res), res.table()
    assert res.diagnoses["cov_prior_subspace"] == CONFLICT
    infl = res.influence()
    s = infl.summary()
    # "overlap_prior_only ≥ 0.8 above overlap_target_only": measured 0.990 against 0.085
    assert s["overlap_prior_only"] - s["overlap_target_only"] >= 0.8
    assert infl.prior_decides and "the prior decides the ranking" in infl.describe()
    # the exact shares: κ₀/(κ₀ + n) and the prior's part of Ψₙ
    assert s["share_mean"] == pytest.approx(50 / 53)
    assert s["share_covariance_prior"] > 0.95
    # the α curve barely moves the ranking: described as robustness to strength, nothing more
    words = res.describe()
    assert "robust to the prior's strength" in words
    assert "does not say whether the prior matters" in words
    assert "stopped mattering" not in words and "stops mattering" not in words


def test_a_weak_prior_with_many_targets_is_not_diagnosed_and_the_targets_decide():
    post, q, g, rel = constructed(n=200, **WEAK)
    res = ad.prior_sensitivity(post, queries=q, gallery=g, relevance=rel, num_draws=200)
    assert not strong_prior_rows(res), res.table()
    infl = res.influence()
    s = infl.summary()
    assert s["overlap_target_only"] > s["overlap_prior_only"]  # measured 0.945 against 0.145
    assert not infl.prior_decides and s["share_mean"] < 0.01
    assert s["auprc_posterior"] > s["auprc_prior_only"]


@pytest.mark.parametrize("n", [3, 200])
def test_a_weak_prior_is_never_reported_more_prior_driven_than_a_dominant_one(n):
    """On the same targets: fewer (or as few) "strong prior / weak likelihood" rows, a
    posterior no closer to the prior-only model, smaller exact shares.  (At n = 3 the weak
    prior's raw power-scaling sensitivities are the larger — ν₀ = d + 2 makes the
    inverse-Wishart's |Σ| exponent, and so the posterior's scale and spread, hinge on α — but
    its likelihood is sensitive too: "prior-data conflict", not "strong prior".)"""
    out = {}
    for name, kw in (("weak", WEAK), ("dominant", DOMINANT)):
        post, q, g, rel = constructed(n=n, **kw)
        res = ad.prior_sensitivity(post, queries=q, gallery=g, num_draws=200)
        out[name] = (len(strong_prior_rows(res)), res.influence().summary())
    (nw, weak), (nd, dominant) = out["weak"], out["dominant"]
    assert nw <= nd
    for key in ("overlap_prior_only", "share_mean", "share_covariance_prior"):
        assert weak[key] <= dominant[key], key
    assert weak["overlap_target_only"] >= dominant["overlap_target_only"]


def test_diagnosis_is_priorsense_s_words():
    assert diagnosis(0.3, 0.01) == STRONG_PRIOR == "potential strong prior / weak likelihood"
    assert diagnosis(0.3, 0.2) == CONFLICT == "potential prior-data conflict"
    assert diagnosis(0.01, 0.2) == diagnosis(0.01, 0.01) == "-"
    assert diagnosis(0.3, float("nan")) == "prior-sensitive"  # likelihood unknown
    assert diagnosis(0.05, 0.0) == "-"  # at the threshold: not above it


def test_the_claims_hold_to_yes_and_no():
    assert robust_to_strength([0.95, 1.0, 0.92]) and not robust_to_strength([0.6, 1.0])
    assert prior_drives_ranking(0.9, 0.1) and not prior_drives_ranking(0.2, 0.7)
    assert not prior_drives_ranking(0.5, 0.5)


def test_the_coupled_estimator_is_the_reweighted_one_in_the_limit():
    """N(0, 1) moved by ±ε in location (and in scale): the exact, coupled estimate against the
    weights of the same change (exp(±εx), exp(±εx²/2)) on 10 000 draws; the Gaussian kernel
    makes the coupled one a few per cent smaller (measured 6 % and 9 %)."""
    x = np.random.default_rng(0).normal(size=(10_000, 1))
    eps = 0.01
    weighted = sensitivity_values(x, [-eps * x[:, 0], eps * x[:, 0]], 0.01)[0]
    coupled = coupled_sensitivity(x, (x - eps, x + eps), 0.01)[0]
    assert coupled == pytest.approx(weighted, rel=0.12)
    half = -0.5 * eps * x[:, 0] ** 2
    weighted = sensitivity_values(x, [half, -half], 0.01)[0]
    coupled = coupled_sensitivity(x, (x * (1 - eps / 2), x * (1 + eps / 2)), 0.01)[0]
    assert coupled == pytest.approx(weighted, rel=0.15)
    assert coupled_sensitivity(x, (x, x), 0.01)[0] == 0.0  # nothing moves


def test_the_likelihood_power_scaled_posterior_is_the_scaled_update():
    prior, targets, _ = problem(d=5, n=9)
    t = np.asarray(targets, np.float64)
    n, d = t.shape
    a = 1.7
    got = likelihood_scaled_posterior(prior, t, a)
    k0, nu0 = prior.kappa0, prior.nu0
    psi0 = (nu0 - d - 1) * np.asarray(prior.cov, np.float64)
    tbar = t.mean(0)
    s = (t - tbar).T @ (t - tbar)
    kn = k0 + a * n
    dm = tbar - prior.mu0
    np.testing.assert_allclose(got.mu, (k0 * prior.mu0 + a * n * tbar) / kn, rtol=1e-13)
    np.testing.assert_allclose(got.psi, psi0 + a * s + k0 * a * n / kn * np.outer(dm, dm))
    assert got.kappa == kn and got.nu == nu0 + a * n
    # α = 0: the prior itself; α = 1: the posterior
    assert likelihood_scaled_posterior(prior, t, 0.0).kappa == k0
    np.testing.assert_allclose(
        likelihood_scaled_posterior(prior, t, 1.0).psi, prior.update(t, tau=20.0).exact.psi
    )
    # the diagonal family: the likelihood raised to α is the update on α copies of the data
    rng = np.random.default_rng(0)
    dprior = ad.DiagonalPrior.from_anchors(unit_rows(rng, 40, 3), kappa0=4.0, nu0=6.0)
    two = np.repeat(unit_rows(rng, 5, 3), 2, axis=0)
    np.testing.assert_allclose(
        likelihood_scaled_posterior(dprior, two[::2], 2.0).b, dprior.nig().update(two).b
    )
    with pytest.raises(ad.AnchorDivError, match="alpha"):
        likelihood_scaled_posterior(prior, t, -1.0)


def test_prior_shares_are_the_closed_form_weights():
    prior, targets, _ = problem(d=4, n=6, kappa0=3.0, nu0=9.0)
    sh = prior_shares(prior, targets)
    assert sh["mean"] == pytest.approx(3 / 9) and sh["covariance_count"] == pytest.approx(9 / 15)
    parts = sh["covariance_prior"] + sh["covariance_scatter"] + sh["covariance_mean_shift"]
    assert parts == pytest.approx(1.0)
    psi0 = (9.0 - 4 - 1) * np.trace(prior.cov)
    assert sh["covariance_prior"] == pytest.approx(
        psi0 / np.trace(prior.update(targets, tau=20.0).exact.psi)
    )


def test_influence_needs_a_posterior_and_the_retrieval_inputs():
    prior, targets, broad = problem()
    post = prior.update(targets, tau=20.0)
    res = ad.prior_sensitivity(post, diagnostic=False)
    with pytest.raises(ad.AnchorDivError, match="give queries and gallery"):
        res.influence()
    infl = res.influence(broad[:3], broad, k=5)
    assert infl.k == 5 and infl.relevance is None and len(infl.overlap_prior_only) == 3
    hand = PriorSensitivity(
        "exact", np.array([1.0]), {}, [{}], None, None, None, None, None, 0, 0.01
    )
    with pytest.raises(ad.AnchorDivError, match="holds no posterior"):
        hand.influence(broad[:3], broad)


def test_at_d128_every_reweighted_value_has_its_k_and_ess_and_the_bad_ones_warn():
    """Issue 50: the d = 128 exact posterior's draws reweighted (method="psis"): each of the
    diagnostic's four reweightings and the α curve's carries its Pareto k and ESS; those above
    min(1 − 1/log10 S, 0.7) warn, once per cause.  The exact path reweights nothing."""
    prior, targets, _ = problem(d=128, n=12, kappa0=20.0, nu0=128 + 201.0)
    post = prior.update(targets, tau=20.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = ad.prior_sensitivity(post, (1.1,), method="psis", num_draws=120, seed=0)
    assert len(res.weights) == 6  # 2 components × 2 sides (diagnostic) + 2 (curve at α = 1.1)
    limit = k_threshold(120)
    for w in res.weights:
        assert np.isfinite(w["pareto_k"]) and 1 <= w["ess"] <= 120
        assert w["ok"] == (w["pareto_k"] <= limit)
    said = [str(w.message) for w in caught if "Pareto k above" in str(w.message)]
    causes = {w["use"] for w in res.unreliable_weights}
    assert len(said) == len(causes)  # one warning per cause
    for w in res.unreliable_weights:
        assert any(f"{w['component']} α {w['alpha']:g} ({w['use']})" in m for m in said)
    if res.unreliable_weights:
        assert "Pareto k above" in res.describe() and "Pareto k above" in repr(res)
    exact = ad.prior_sensitivity(post, (1.1,), num_draws=50, seed=0)
    assert exact.method == "exact" and exact.weights == [] and exact.pareto_k is None


def test_the_exact_diagnostic_falls_back_to_weights_where_a_side_is_improper():
    """δ = 0.5 puts α = 1/1.5 below the smallest proper α (0.818 at d = 4, ν₀ = 5.5): the
    diagnostic then reweights the exact draws, with each weight's k and ESS."""
    prior, targets, _ = problem(d=4, nu0=5.5)
    post = prior.update(targets, tau=20.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = ad.prior_sensitivity(post, (1.1,), num_draws=100, delta=0.5)
    assert res.method == "exact" and res.pareto_k is None  # the α curve: closed form
    assert {w["use"] for w in res.weights} == {"diagnostic"} and len(res.weights) == 4


def test_the_diagonal_family_has_both_scalings_exact_and_its_scale_free_quantities():
    rng = np.random.default_rng(0)
    broad = unit_rows(rng, 60, 4)
    post = ad.adapt("diagonal-gaussian", broad, broad[:8], tau=20.0)
    res = ad.prior_sensitivity(post, (1.1,), num_draws=100)
    assert res.method == "exact" and res.weights == []
    assert {"mean_direction", "cov_shape", "cov_prior_subspace"} <= set(res.scale_free)
    assert all(np.isfinite(v) for v in res.worst_likelihood.values())
    assert "likelihood_shift_sigma2" in res.curve()
    infl = res.influence(broad[:3], broad[10:], k=5)
    assert infl.shares is not None and infl.shares["mean"] == pytest.approx(
        post.prior.kappa0 / (post.prior.kappa0 + 8)
    )
