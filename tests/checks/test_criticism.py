"""compare_priors: the estimator per candidate (exact Student-t LOO, PSIS under ArviZ's
S-dependent k threshold, K-fold refits), checked against an independent numpy/scipy LOO; the
τ rule; stacking that never returns made-up weights."""

import warnings

import numpy as np
import pytest
import scipy.special
import scipy.stats

import anchordiv as ad
from anchordiv.checks.criticism import k_threshold, stacking_weights
from anchordiv.errors import AnchorDivError


def broad_and_targets(d, n=20, seed=0):
    """Anisotropic broad anchors and targets drawn from the same distribution."""
    rng = np.random.default_rng(seed)
    scale = np.linspace(2.0, 0.2, d)
    return rng.normal(size=(400, d)) * scale, rng.normal(size=(n, d)) * scale + 0.1


def candidates(broad, d):
    return {
        "strong-broad": {"broad": broad, "kappa0": 50.0, "nu0": d + 100.0},
        "isotropic": {"broad": broad, "prior": "isotropic", "kappa0": 50.0, "nu0": d + 100.0},
        "weak-broad": {"broad": broad, "kappa0": 0.1, "nu0": d + 2.0},
    }


def reference_loo(broad, targets, opts) -> float:
    """Brute-force exact LOO: refit the NIW on T₋ᵢ from scratch, score tᵢ under the
    multivariate Student-t predictive (scipy)."""
    d = broad.shape[1]
    mu0 = broad.mean(0)
    cov = np.cov(broad.T, bias=True)
    cov += 1e-3 * np.trace(cov) / d * np.eye(d)  # adapt's default ridge
    if opts.get("prior") == "isotropic":
        cov = np.trace(cov) / d * np.eye(d)
    k0, v0 = opts["kappa0"], opts["nu0"]
    psi0 = (v0 - d - 1) * cov
    total = 0.0
    for i in range(len(targets)):
        rest = np.delete(targets, i, axis=0)
        n, tbar = len(rest), rest.mean(0)
        s = (rest - tbar).T @ (rest - tbar)
        kn, vn = k0 + n, v0 + n
        mun = (k0 * mu0 + n * tbar) / kn
        psin = psi0 + s + k0 * n / kn * np.outer(tbar - mu0, tbar - mu0)
        df = vn - d + 1
        total += scipy.stats.multivariate_t(mun, psin * (kn + 1) / (kn * df), df=df).logpdf(
            targets[i]
        )
    return total


@pytest.mark.parametrize("d", [8, 32, 64])
def test_compare_priors_orders_and_scores_as_exact_loo(d):
    broad, t = broad_and_targets(d)
    cands = candidates(broad, d)
    result = ad.compare_priors(cands, t, kind="gaussian", tau=20.0)
    ref = {
        name: reference_loo(broad, t, {k: v for k, v in o.items() if k != "broad"})
        for name, o in cands.items()
    }
    assert list(result.table.index) == sorted(ref, key=lambda n: -ref[n])
    for name in cands:
        assert abs(result.table.loc[name, "elpd_loo"] - ref[name]) < 1.0
        assert result.table.loc[name, "estimator"] == "exact" == result.estimators[name]
    assert np.isclose(result.table["weight"].sum(), 1.0)


def test_a_sampled_gaussian_posterior_is_scored_exactly_and_eb_is_refit():
    d = 4
    broad, t = broad_and_targets(d, n=10)
    nuts = ad.adapt(
        "gaussian",
        broad,
        t,
        tau=20.0,
        kappa0=50.0,
        nu0=d + 100.0,
        method="svi",
        num_steps=300,
        progress=False,
    )
    result = ad.compare_priors(
        {"svi": nuts, "eb": broad, "strong": {"broad": broad, "kappa0": 50.0, "nu0": d + 100.0}},
        t,
        tau=20.0,
    )
    assert result.estimators == {"svi": "exact", "eb": "exact", "strong": "exact"}
    assert result.table.loc["svi", "elpd_loo"] == pytest.approx(
        result.table.loc["strong", "elpd_loo"], abs=1e-8
    )
    assert "re-chosen on every" in result.notes["eb"]


def test_k_threshold_follows_arviz():
    assert k_threshold(100) == pytest.approx(0.5)
    assert k_threshold(1000) == pytest.approx(2 / 3)
    assert k_threshold(10**6) == 0.7


def test_mixture_falls_back_to_kfold_when_pareto_k_is_high():
    broad, t = broad_and_targets(6, n=12)
    opts = {"broad": broad, "components": 2}
    result = ad.compare_priors({"mix": opts}, t, kind="mixture", tau=20.0, folds=3, num_draws=40)
    est = result.loo["mix"]
    assert est.estimator in ("psis", "kfold")
    if est.estimator == "kfold":
        assert "Pareto k above" in est.note
    else:
        assert np.all(est.pareto_k <= est.threshold)
    forced = ad.compare_priors(
        {"mix": opts}, t, kind="mixture", tau=20.0, estimator="psis", num_draws=40
    )
    assert forced.estimators["mix"] == "psis" and forced.pareto_k["mix"].shape == (12,)
    kfold = ad.compare_priors(
        {"mix": opts}, t, kind="mixture", tau=20.0, estimator="kfold", folds=3, num_draws=40
    )
    assert kfold.estimators["mix"] == "kfold" and np.isfinite(kfold.loo["mix"].elpd)


def latent_problem(seed=0, d=3, n=6):
    rng = np.random.default_rng(seed)
    rot = np.linalg.qr(rng.normal(size=(d, d)))[0]
    scale = np.linspace(2.0, 0.4, d)
    return (
        (rng.normal(size=(300, d)) * scale) @ rot.T,
        (rng.normal(size=(n, d)) * scale) @ rot.T + 0.3,
    )


def fixed_latent(rank):
    """The latent prior at a fixed pseudo-count n₀ = 10 and the default β = n/(n + n₀): the
    prior a refit on T₋ᵢ keeps (the recipe's "auto" strengths are chosen from the targets)."""
    return {"rank": rank, "beta": None, "prior_anchors": 10.0}


def brute_force_latent_loo(broad, t, rank, draws):
    """``log p(tᵢ | T₋ᵢ)`` by refitting on every T₋ᵢ: the mean over the refit's draws of the
    PPCA predictive with the mean integrated out, N(t̄₋ᵢ, C·n/(n−1)) (scipy)."""
    out = []
    for i in range(len(t)):
        rest = np.delete(t, i, 0)
        fold = ad.adapt("latent-gaussian", broad, rest, tau=20.0, **fixed_latent(rank))
        f, us = fold.fixed, fold.draws(i + 1, draws)["U"]
        lp = [
            scipy.stats.multivariate_normal(
                rest.mean(0),
                len(t)
                / (len(t) - 1)
                * (f["ppca_noise"] * np.eye(t.shape[1]) + f["ppca_signal"] * u @ u.T),
            ).logpdf(t[i])
            for u in us
        ]
        out.append(scipy.special.logsumexp(lp) - np.log(draws))
    return np.asarray(out)


def test_latent_gaussian_psis_matches_brute_force_refits():
    """The leave-one-out-correct latent likelihood: PSIS over one fit's draws equals refitting
    on every T₋ᵢ (to Monte Carlo error), where the former plug-in likelihood was optimistic."""
    broad, t = latent_problem()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = ad.compare_priors(
            {"lat": {"broad": broad, **fixed_latent(1)}},
            t,
            kind="latent-gaussian",
            tau=20.0,
            num_draws=500,
        )
        brute = brute_force_latent_loo(broad, t, 1, 500)
        post = ad.adapt("latent-gaussian", broad, t, tau=20.0, **fixed_latent(1))
    assert result.estimators["lat"] == "psis", result.notes
    np.testing.assert_allclose(result.loo["lat"].pointwise, brute, atol=0.05)
    f, us = post.fixed, post.draws(0, 500)["U"]
    plug_in = [
        scipy.special.logsumexp(
            [
                scipy.stats.multivariate_normal(
                    t.mean(0), f["ppca_noise"] * np.eye(3) + f["ppca_signal"] * u @ u.T
                ).logpdf(x)
                for u in us
            ]
        )
        - np.log(500)
        for x in t
    ]  # in-sample, an upper bound
    assert np.sum(plug_in) > brute.sum() + 1.0


def test_latent_estimators_and_a_posterior_that_needs_refits_is_an_error():
    broad, t = broad_and_targets(6, n=9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = ad.compare_priors(
            {
                "sph": {"broad": broad, "rank": 2},
                "fixed-beta": {"broad": broad, "rank": 2, "beta": 0.5},
            },
            t,
            kind="latent-spherical",
            tau=20.0,
            folds=3,
            num_draws=20,
        )
    assert result.estimators == {"sph": "kfold", "fixed-beta": "kfold"}
    assert "posterior-like" in result.notes["sph"]
    post = ad.adapt("latent-spherical", broad, t, tau=20.0, rank=2)
    with pytest.raises(AnchorDivError, match="refit"):
        ad.compare_priors({"lat": post}, t, kind="latent-spherical")
    tempered = ad.adapt("latent-gaussian", broad, t, tau=20.0, rank=2, beta=0.5)
    with pytest.raises(AnchorDivError, match="beta fixed or chosen"):
        ad.compare_priors({"lat": tempered}, t, kind="latent-gaussian")
    with pytest.raises(AnchorDivError, match="closed-form"):
        ad.compare_priors({"lat": tempered}, t, kind="latent-gaussian", estimator="exact")


def test_tau_comes_from_provenance_or_is_an_error():
    broad, t = broad_and_targets(3, n=5)
    with pytest.raises(AnchorDivError, match="tau"):
        ad.compare_priors({"b": broad}, t, kind="gaussian")


def test_stacking_is_stable_and_never_invents_weights():
    rng = np.random.default_rng(0)
    lpd = rng.normal(size=(30, 3)) + np.array([-400.0, -401.0, -800.0])  # huge magnitudes
    w = stacking_weights(lpd)
    assert w[0] > 0.5 and w[2] < 1e-6 and np.isclose(w.sum(), 1.0)
    # two candidates each better on half the anchors: both get weight
    half = np.where(np.arange(40)[:, None] < 20, [[0.0, -5.0]], [[-5.0, 0.0]])
    np.testing.assert_allclose(stacking_weights(half), [0.5, 0.5], atol=1e-4)
    bad = lpd.copy()
    bad[0, 1] = np.nan
    with pytest.warns(UserWarning, match="stacking"):
        assert np.all(np.isnan(stacking_weights(bad)))


def test_plot_marks_the_estimator(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    broad, t = broad_and_targets(3, n=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ad.compare_priors(
            candidates(broad, 3), t, kind="gaussian", tau=20.0, plot=tmp_path / "c.png"
        )
    assert (tmp_path / "c.png").stat().st_size > 1000
