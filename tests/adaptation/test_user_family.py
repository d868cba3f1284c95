"""A family written in a module outside the package, in 8 members, registered late (after
anchordiv was imported), runs through everything (issue 26): ``ad.adapt`` by string and
``ad.infer`` on the object with ``Exact``/``NUTS``/``SVI``, ``ad.inference_data``,
``ad.compare_priors``, SBC, save/load, the curves' ``posterior-<kind>``/``isotropic-<kind>``
models and the CLI (``--family file.py:Class``).  Its exact posterior is checked against the
closed form, NUTS against the exact one, and the generic (traced) likelihood against a float64
numpy reference."""

import dataclasses
import importlib
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

import anchordiv as ad
from anchordiv.checks import arviz as adz
from anchordiv.adaptation import KINDS, OPTIONS
from anchordiv.adaptation.protocol import FAMILIES
from anchordiv.checks.families import checks_of

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from userfam import minimal_family, user_family  # noqa: E402

# the minimal family registers itself on import; only the ``minimal`` fixture keeps it
# registered, so the family table (tests/adaptation/test_families.py) sees the same registry in
# every worker whatever ran before
FAMILIES.pop(minimal_family.KIND, None)

KIND = user_family.KIND
MINIMAL = HERE / "userfam" / "minimal_family.py"


@pytest.fixture(scope="module")
def fam():
    cls = user_family.register()
    yield cls
    user_family.unregister()


def anchors(seed=0):
    rng = np.random.default_rng(seed)
    broad = rng.normal(size=(60, 4)) * np.array([1.5, 1.0, 0.6, 0.3])
    t = rng.normal(size=(8, 4)) + 0.3
    return broad, t / np.linalg.norm(t, axis=1, keepdims=True)


def test_the_family_is_written_in_at_most_nine_members(fam):
    """Members the user defined: class attributes and methods, not the dataclass fields."""
    fields = {f.name for f in dataclasses.fields(fam)}
    own = {
        k
        for k in vars(user_family.define())
        if not k.startswith("__") and k not in fields and k not in ("_abc_impl",)
    }
    assert own == set(user_family.MEMBERS) and len(own) <= 9
    assert fam.__mro__[1] is ad.Family  # no library family underneath
    assert isinstance(fam.from_anchors(anchors()[0]), ad.Conjugate)
    assert not isinstance(fam.from_anchors(anchors()[0]), ad.Projectable)


def test_registry_views_are_live(fam):
    assert KIND in KINDS and KIND in tuple(KINDS)
    assert OPTIONS[KIND] == {"kappa0": 10.0}
    hooks = checks_of(fam)  # the checks layer's generic defaults: the sites, norms and cosines
    assert hooks.dims == {} and hooks.psis_caveat(None) is None
    draws = {"mu": np.ones((2, 3, 4)), "Sigma": np.ones((2, 3, 4, 4)), "scale": np.ones((2, 3))}
    assert sorted(hooks.quantities(draws, {"mu": np.ones(4), "Sigma": np.ones((4, 4))})) == [
        "Sigma",
        "Sigma_cosine",
        "Sigma_norm",
        "mu",
        "mu_cosine",
        "mu_norm",
        "scale",  # a latent site of the model's own
    ]


def test_unknown_kind_is_a_named_error():
    with pytest.raises(ad.AnchorDivError, match="kind: unknown 'no-such-kind'"):
        OPTIONS["no-such-kind"]
    with pytest.raises(ad.AnchorDivError, match="kind: unknown"):
        ad.adapt("no-such-kind", *anchors(), tau=10.0)


def test_adapt_by_string_and_by_object_agree(fam):
    broad, t = anchors()
    post = ad.adapt(KIND, broad, t, tau=10.0, kappa0=4.0)
    obj = ad.infer(fam.from_anchors(broad, kappa0=4.0), t, ad.Exact(), tau=10.0)
    assert post.kind == KIND and obj.kind == KIND
    cov = np.cov(broad, rowvar=False) + 1e-3 * np.eye(4)
    want = (4.0 * broad.mean(0) + t.sum(0)) / (4.0 + len(t))  # the closed form
    for which in ("mean", "map"):
        np.testing.assert_allclose(post.params(which)["mu"], want, rtol=1e-12)
        np.testing.assert_array_equal(post.params(which)["Sigma"], cov)
        for k, v in post.params(which).items():
            np.testing.assert_array_equal(obj.params(which)[k], v)
    with pytest.raises(ad.AnchorDivError, match="unknown option"):
        ad.adapt(KIND, broad, t, tau=10.0, rank=3)


def test_inference_data_and_save_load(fam, tmp_path):
    broad, t = anchors()
    post = ad.adapt(KIND, broad, t, tau=10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = ad.inference_data(post, num_draws=10, seed=0)
    assert idata.attrs["kind"] == KIND and "mu_cosine" in idata["posterior"]
    post.save(tmp_path / "p")
    back = ad.load_posterior(tmp_path / "p")
    assert type(back.prior) is fam
    a, b = post.draws(5, 3), back.draws(5, 3)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
    fam.from_anchors(broad).save(tmp_path / "prior")
    assert type(ad.load_prior(tmp_path / "prior")) is fam


def test_the_traced_likelihood_is_the_float64_density(fam):
    """The generic log likelihood, simulated anchors and log joint (from the family's NumPyro
    model) against scipy in float64, whatever JAX's global precision."""
    broad, t = anchors()
    post = ad.adapt(KIND, broad, t, tau=10.0, kappa0=4.0)
    lik, draws = post.likelihood(), post.draws(0, 5)
    ll = lik.log_density(draws, t)
    cov = post.params("mean")["Sigma"]
    want = np.stack([scipy.stats.multivariate_normal(m, cov).logpdf(t) for m in draws["mu"]])
    assert ll.dtype == np.float64
    np.testing.assert_allclose(ll, want, rtol=1e-10)
    prior = post.prior
    log_prior = scipy.stats.multivariate_normal(prior.mu0, cov / 4.0).logpdf(draws["mu"])
    np.testing.assert_allclose(lik.log_joint(t, draws), log_prior + want.sum(1), rtol=1e-10)
    sim = lik.sample(
        {k: v[:1].repeat(4000, 0) for k, v in draws.items()}, 2, np.random.default_rng(0)
    )
    assert sim.shape == (4000, 2, 4)
    np.testing.assert_allclose(np.cov(sim[:, 0], rowvar=False), cov, atol=0.08)
    np.testing.assert_allclose(sim.mean((0, 1)), draws["mu"][0], atol=0.05)
    pd = prior.sample(0, 4000)
    np.testing.assert_allclose(pd["mu"].mean(0), prior.mu0, atol=0.05)
    np.testing.assert_allclose(np.cov(pd["mu"], rowvar=False), cov / 4.0, atol=0.04)


def sampled(fam, nuts: dict, svi: dict):
    broad, t = anchors()
    prior = fam.from_anchors(broad, kappa0=4.0)
    exact = ad.infer(prior, t, tau=10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        posts = [
            ad.infer(prior, t, ad.NUTS(progress=False, **nuts), tau=10.0),
            ad.infer(prior, t, ad.SVI(guide="normal", progress=False, **svi), tau=10.0),
        ]
    sd = np.sqrt(np.diag(exact.exact.cov) / exact.exact.kappa)
    z = [(p.params("mean")["mu"] - exact.params("mean")["mu"]) / sd for p in posts]
    return posts, z


def test_nuts_and_svi_run_on_the_model_alone_and_save(fam, tmp_path):
    """NUTS and a normal-guide SVI on the family's model, with no exact update run, land near
    the closed-form posterior mean; a NUTS posterior saves and loads with identical draws and
    converts to ArviZ (the accurate comparison: the slow test below)."""
    (nuts, svi), z = sampled(
        fam, {"num_warmup": 60, "num_samples": 60, "num_chains": 1}, {"num_steps": 300}
    )
    for post, zi in zip((nuts, svi), z):
        assert post.exact is None and post.model_kwargs is not None  # no exact update ran
        assert type(post).__name__ == "SampledPosterior" and post.prior.kind == KIND
        assert np.abs(zi).max() < 2.0, (post.method, zi)
    nuts.save(tmp_path / "n")
    back = ad.load_posterior(tmp_path / "n")
    for k, v in nuts.draws(3, 4).items():
        np.testing.assert_array_equal(back.draws(3, 4)[k], v)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = ad.inference_data(back, num_draws=20)
    assert {"log_likelihood", "sample_stats", "prior"} <= set(adz.groups(idata))


@pytest.mark.slow
def test_nuts_and_svi_agree_with_the_exact_posterior(fam):
    _, z = sampled(
        fam, {"num_warmup": 200, "num_samples": 400}, {"num_steps": 2000, "num_samples": 400}
    )
    assert all(np.abs(zi).max() < 0.35 for zi in z), z


def test_a_subspace_run_is_refused_with_the_reason(fam):
    broad, t = anchors()
    with pytest.raises(ad.AnchorDivError, match="subspace: .*no principal-subspace projection"):
        ad.infer(
            fam.from_anchors(broad), t, ad.NUTS(subspace=2, progress=False), tau=10.0, broad=broad
        )


def test_the_cli_adapts_the_users_family(fam, tmp_path, capsys):
    """``anchordiv adapt user-mean --family cli_family.py:FixedCovariancePrior`` with a prior
    option: the saved model is the family's exact posterior mean."""
    from anchordiv.app.cli import main

    broad, t = anchors()
    np.save(tmp_path / "b.npy", broad)
    np.save(tmp_path / "t.npy", t)
    spec = f"{HERE / 'userfam' / 'cli_family.py'}:FixedCovariancePrior"
    argv = [
        "adapt",
        KIND,
        str(tmp_path / "b.npy"),
        str(tmp_path / "t.npy"),
        "-o",
        str(tmp_path / "m"),
    ]
    from anchordiv.adaptation.protocol import FAMILIES

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert main([*argv, "--tau", "10", "--family", spec, "--prior-option", "kappa0=4"]) == 0
        cli = FAMILIES[KIND]  # the class the file registered
        assert cli is not fam  # registered anew by the file the CLI imported
    finally:
        FAMILIES[KIND] = fam  # the module fixture's registration
    want = ad.infer(fam.from_anchors(broad, kappa0=4.0), t, tau=10.0).point("mean")
    np.testing.assert_allclose(ad.load_model(tmp_path / "m").mean, want.mean, rtol=1e-6)


def test_compare_priors(fam):
    broad, t = anchors()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = ad.compare_priors(
            {"broad": broad, "iso": {"broad": broad, "prior": "isotropic"}},
            t,
            kind=KIND,
            tau=10.0,
            num_draws=40,
        )
    assert set(result.loo) == {"broad", "iso"}
    assert all(np.all(np.isfinite(e.pointwise)) for e in result.loo.values())


def user_mean_loo(broad, t, kappa0):
    """Exact ``log p(tᵢ | T₋ᵢ)`` ``[n]`` of the user's family: ``N(m₋ᵢ, Σ(1 + 1/κ₋ᵢ))`` with
    ``κ₋ᵢ = κ₀ + n − 1``, ``m₋ᵢ = (κ₀m₀ + Σ_{j≠i} t_j)/κ₋ᵢ`` (scipy)."""
    cov = np.cov(broad, rowvar=False) + 1e-3 * np.eye(broad.shape[1])
    k = kappa0 + len(t) - 1
    return np.array(
        [
            scipy.stats.multivariate_normal(
                (kappa0 * broad.mean(0) + np.delete(t, i, 0).sum(0)) / k, cov * (1 + 1 / k)
            ).logpdf(t[i])
            for i in range(len(t))
        ]
    )


def test_compare_priors_beside_niw_with_one_estimator(fam):
    """The user's family beside the built-in NIW in one table, each of its own kind: exact
    (NIW) and PSIS (the user's draws) rows, both leave-one-out, the PSIS one at the user's
    family's closed-form LOO."""
    broad, t = anchors()
    cands = {
        "niw": {"broad": broad, "kind": "gaussian", "kappa0": 4.0, "nu0": 10.0},
        "user": {"broad": broad, "kappa0": 4.0},
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = ad.compare_priors(cands, t, kind=KIND, tau=10.0, num_draws=500)
    assert result.estimators == {"niw": "exact", "user": "psis"}, result.note
    assert "both estimate the leave-one-out ELPD" in result.note
    np.testing.assert_allclose(
        result.loo["user"].pointwise, user_mean_loo(broad, t, 4.0), atol=0.05
    )


@pytest.mark.slow
def test_kfold_of_the_users_family_beside_niw(fam):
    """Every row K-fold on the same folds: NIW's closed-form K = n equal to its exact LOO, the
    user's Monte-Carlo predictive over 2000 exact draws within 0.02 nat of its closed form."""
    broad, t = anchors()
    cands = {
        "niw": {"broad": broad, "kind": "gaussian", "kappa0": 4.0, "nu0": 10.0},
        "user": {"broad": broad, "kappa0": 4.0},
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kfold = ad.compare_priors(
            cands, t, kind=KIND, tau=10.0, estimator="kfold", folds=len(t), num_draws=2000
        )
        exact = ad.compare_priors({"niw": cands["niw"]}, t, tau=10.0)
    assert kfold.estimators == {"niw": "kfold", "user": "kfold"}
    np.testing.assert_allclose(kfold.loo["niw"].pointwise, exact.loo["niw"].pointwise, rtol=1e-10)
    np.testing.assert_allclose(kfold.loo["user"].pointwise, user_mean_loo(broad, t, 4.0), atol=0.02)
    assert not kfold.table["warning"].any()


def test_curve_models(fam):
    from anchordiv.evaluation.curves import resolve_model

    broad, t = anchors()
    for role in ("posterior", "isotropic"):
        models = resolve_model(f"{role}-{KIND}")
        (m,) = models.values()
        assert m.role == role and m.kind == KIND
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = m.factory(broad, t, 10.0)
        assert np.all(np.isfinite(np.asarray(ad.divergence(model, t[:2], t))))
    with pytest.raises(ad.AnchorDivError, match="unknown"):
        resolve_model("posterior-no-such-kind")


def test_sbc_smoke(fam):
    from anchordiv.checks.sbc import library_problem, sbc

    problem = library_problem(KIND, num_draws=19, seed=0)
    result = sbc(**problem, num_simulations=8, progress=False)
    assert result.ranks.shape == (8, len(result.names)) and result.num_draws > 0


@pytest.mark.slow
def test_diagnose_a_users_family_with_a_384_d_covariance_site(fam, tmp_path, capsys):
    """``anchordiv diagnose`` on a user's family at d = 384 (issue 43): its sites keep ArviZ's
    own dim names and a 384 × 384 site, and a recorded constant; the figures draw what varies
    and fits, the command exits 0 and writes a complete folder."""
    from anchordiv.app.cli import main

    rng = np.random.default_rng(0)
    broad = rng.normal(size=(500, 384))
    broad /= np.linalg.norm(broad, axis=1, keepdims=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = ad.adapt(KIND, broad, broad[:10] + 0.01, tau=20.0)
    post.save(tmp_path / "p")
    out = tmp_path / "d"
    assert main(["diagnose", str(tmp_path / "p"), "-o", str(out), "--num-draws", "8"]) == 0
    assert {p.name for p in out.iterdir()} == {
        "idata",
        "summary.csv",
        "posterior.png",
        "trace.png",
        "sensitivity.csv",
        "sensitivity_curve.csv",
    }
    assert not list(tmp_path.glob(".d.*"))  # no temporary sibling left
    capsys.readouterr()


@pytest.mark.slow
def test_sbc_of_the_traced_family_under_nuts_passes(fam):
    """The audit's case (issue 43): the traced family under NUTS records ``Sigma`` (a float64
    constant) in float32, and a float64 truth ranked every ``w·Sigma`` draw below it (rank L in
    40 of 40 simulations, χ² p = 0.000).  Truths in the run's precision: every site passes."""
    from anchordiv.checks.sbc import library_problem, sbc

    problem = library_problem(KIND, method="nuts", num_draws=19, seed=0)
    result = sbc(**problem, num_simulations=40, progress=False)
    p = result.chi2_pvalues()
    assert all(v > 0.01 for v in p.values()), p


def test_loading_a_kind_that_is_not_registered_names_it(tmp_path):
    """A posterior or prior saved from a user's family, loaded where the family's module was not
    imported: an AnchorDivError naming the kind (not a KeyError)."""
    from anchordiv.adaptation import FAMILIES

    before = FAMILIES.get(KIND)
    cls = user_family.register()
    broad, t = anchors()
    ad.adapt(KIND, broad, t, tau=10.0).save(tmp_path / "p")
    cls.from_anchors(broad).save(tmp_path / "prior")
    user_family.unregister()
    try:
        for load, path in ((ad.load_posterior, "p"), (ad.load_prior, "prior")):
            with pytest.raises(ad.AnchorDivError, match=f"kind: unknown '{KIND}'"):
                load(tmp_path / path)
    finally:
        if before is not None:  # restore the module fixture's registration
            FAMILIES[KIND] = before


# ---- a family with only the required members ---------------------------------------------------
@pytest.fixture(scope="module")
def minimal():
    """:mod:`userfam.minimal_family`'s class, registered under its kind for the module."""
    from anchordiv.adaptation.protocol import FAMILIES

    FAMILIES[minimal_family.KIND] = minimal_family.MinimalPrior
    yield minimal_family.MinimalPrior
    FAMILIES.pop(minimal_family.KIND, None)


def anchors3(seed=0):
    broad, t = anchors(seed)
    return broad[:, :3], t[:, :3] / np.linalg.norm(t[:, :3], axis=1, keepdims=True)


def test_a_minimal_family_loads_from_a_saved_gaussian_model(minimal, tmp_path):
    """No ``origin`` field, no ``prior`` keyword: ``load_prior(model_dir, kind=...)`` builds it
    from the model's moment points, records the model's card (τ: the default of ``infer``) and
    makes the isotropic control through its ``isotropic``."""
    from anchordiv.adaptation.api import build_prior

    broad, t = anchors()
    path = ad.save_model(ad.fit("gaussian", broad, tau=20.0), tmp_path / "m")
    prior = ad.load_prior(path, kind=minimal_family.KIND, kappa0=4.0)
    assert type(prior) is minimal and prior.kappa0 == 4.0
    assert prior.card["path"] == str(path) and prior.card["card"]["tau"] == 20.0
    assert f"from={str(path)!r}" in repr(prior)
    np.testing.assert_allclose(prior.mu0, broad.mean(0), atol=1e-12)
    iso = ad.load_prior(path, kind=minimal_family.KIND, prior="isotropic")
    np.testing.assert_allclose(iso.cov, prior.isotropic().cov, rtol=1e-12)
    np.testing.assert_array_equal(
        build_prior(minimal, broad, prior="isotropic").cov,
        minimal.from_anchors(broad).isotropic().cov,
    )
    with pytest.raises(ad.AnchorDivError, match="prior: 'broad' or 'isotropic'"):
        build_prior(minimal, broad, prior="wide")
    prior.save(tmp_path / "p")
    back = ad.load_prior(tmp_path / "p")
    assert back.card == prior.card and back.kappa0 == 4.0
    # ad.adapt by kind: the prior is built (no prior= reaches from_anchors), the exact update
    # is what the family lacks
    with pytest.raises(ad.AnchorDivError, match="user-minimal prior has no closed-form update"):
        ad.adapt(minimal_family.KIND, broad, t, tau=10.0, prior="isotropic")


def test_the_cli_adapts_the_guides_family_from_a_saved_model(fam, tmp_path, capsys):
    """The guide's family (no ``origin`` field) from ``--family file.py:Class`` adapts from a
    saved Gaussian model with ``adapt --prior DIR`` (the exact update on ``load_prior``'s
    prior), and ``evaluate`` reads its posterior with the same ``--family``."""
    from anchordiv.adaptation.protocol import FAMILIES
    from anchordiv.app.cli import main

    broad, t = anchors()
    path = ad.save_model(ad.fit("gaussian", broad, tau=20.0), tmp_path / "model")
    np.save(tmp_path / "t.npy", t)
    spec = ["--family", f"{HERE / 'userfam' / 'cli_family.py'}:FixedCovariancePrior"]
    argv = ["adapt", KIND, str(tmp_path / "t.npy"), "-o", str(tmp_path / "m"), "--prior", str(path)]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rc = main([*argv, *spec, "--kappa0", "4", "--posterior-out", str(tmp_path / "p")])
            assert rc == 0, capsys.readouterr().err
            evaluate = ["evaluate", f"post={tmp_path / 'p'}", "--gallery", str(tmp_path / "t.npy")]
            evaluate += ["--relevance", str(tmp_path / "rel.npy"), "--baselines", "cosine"]
            np.save(tmp_path / "rel.npy", np.arange(len(t)) % 2)  # labels
            assert main([*evaluate, "-o", str(tmp_path / "e"), *spec]) == 0
    finally:
        FAMILIES[KIND] = fam  # the file registered a class of its own
    want = ad.infer(ad.load_prior(path, kind=KIND, kappa0=4.0), t).point("mean")
    np.testing.assert_allclose(ad.load_model(tmp_path / "m").mean, want.mean, rtol=1e-6)
    assert ad.load_posterior(tmp_path / "p").tau == 20.0  # the saved model's τ
    assert "post" in (tmp_path / "e" / "evaluation.csv").read_text()


def test_a_minimal_family_has_curve_models(minimal):
    """A family registered late has ``posterior-<kind>`` / ``isotropic-<kind>`` curve models,
    run by NUTS (it has no exact update) unless it declares another method."""
    from anchordiv.checks.families import CURVE_NUTS, register_checks
    from anchordiv.evaluation import curves

    kind = minimal_family.KIND
    assert curves.curve_method(kind) is CURVE_NUTS
    assert {f"posterior-{kind}", f"isotropic-{kind}"} <= set(curves.MODELS)
    assert curves.MODELS[f"isotropic-{kind}"].role == "isotropic"
    svi = ad.SVI(num_steps=10, progress=False)
    register_checks(minimal, curve_method=svi)
    try:
        assert curves.curve_method(kind) is svi and minimal.hooks.curve_method is svi
    finally:
        del minimal.hooks
    assert curves.curve_method(kind) is CURVE_NUTS


@pytest.mark.slow
def test_a_minimal_family_has_curve_models_that_run(minimal):
    """``posterior-<kind>`` / ``isotropic-<kind>`` of a family registered late run with its
    curve method (here a short NUTS run it declares through ``register_checks``): every cell
    is a number."""
    from anchordiv.checks.families import register_checks
    from anchordiv.evaluation import curves
    from anchordiv.evaluation.evaluate import shared_label_relevance

    kind = minimal_family.KIND
    broad, t = anchors3()
    labels = np.arange(12) % 2
    items = t[labels] + 0.05 * np.random.default_rng(1).normal(size=(12, 3))
    items /= np.linalg.norm(items, axis=1, keepdims=True)
    short = ad.NUTS(num_warmup=20, num_samples=20, num_chains=1, progress=False)
    register_checks(minimal, curve_method=short)
    try:
        assert curves.curve_method(kind) is short
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            curve = curves.adaptation_curve(
                broad,
                t,
                items,
                items,
                shared_label_relevance(labels, labels),
                tau=10.0,
                models=[f"posterior-{kind}", f"isotropic-{kind}"],
                budgets=[3],
                n_subsets=1,
                n_boot=20,
                progress=False,
            )
    finally:
        del minimal.hooks
    for name in (f"posterior-{kind}", f"isotropic-{kind}"):
        assert np.isfinite(curve.means(name)).all()


@pytest.mark.slow
def test_a_minimal_family_runs_nuts_and_shows_its_own_sites(minimal):
    """``ad.adapt`` by kind (no ``prior=`` reaches its ``from_anchors``) with NUTS; the
    InferenceData holds its sites and its model's own latent ``scale`` without
    ``register_checks``."""
    broad, t = anchors3()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = ad.adapt(
            minimal_family.KIND,
            broad,
            t,
            tau=10.0,
            method="nuts",
            prior="isotropic",
            num_warmup=30,
            num_samples=30,
            num_chains=1,
            progress=False,
        )
        idata = ad.inference_data(post, num_draws=10, prior=False)
    assert post.kind == minimal_family.KIND and post.prior.cov[0, 1] == 0.0  # the control
    assert {"mu", "Sigma", "scale", "mu_cosine"} <= set(idata["posterior"].data_vars)
    assert idata["posterior"]["mu"].shape == (1, 10, 3)


@pytest.mark.slow
def test_the_cli_adapts_the_minimal_family_from_a_saved_model(minimal, tmp_path, capsys):
    """``anchordiv adapt KIND TARGET --prior MODEL_DIR --family userfam.minimal_family:MinimalPrior``
    (the module the test above ran, so NUTS reuses its compiled runner), then ``diagnose`` of the
    saved posterior: refused without ``--family`` once the kind is unregistered, its own sites
    in the summary with it."""
    import csv

    from anchordiv.adaptation.protocol import FAMILIES
    from anchordiv.app.cli import main

    broad, t = anchors3()
    ad.save_model(ad.fit("gaussian", broad, tau=20.0), tmp_path / "model")
    np.save(tmp_path / "t.npy", t)
    spec = ["--family", "userfam.minimal_family:MinimalPrior"]
    argv = ["adapt", minimal_family.KIND, str(tmp_path / "t.npy"), "-o", str(tmp_path / "m")]
    argv += ["--prior", str(tmp_path / "model"), *spec, "--kappa0", "4"]
    argv += ["--method", "nuts", "--num-warmup", "30", "--num-samples", "30", "--num-chains", "1"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main([*argv, "--posterior-out", str(tmp_path / "p")]) == 0
    post = ad.load_posterior(tmp_path / "p")
    assert post.kind == minimal_family.KIND and post.tau == 20.0  # the saved model's τ
    assert post.prior.kappa0 == 4.0 and post.prior.card["path"] == str(tmp_path / "model")
    diagnose = ["diagnose", str(tmp_path / "p"), "--num-draws", "10"]
    try:
        FAMILIES.pop(minimal_family.KIND)
        assert main([*diagnose, "-o", str(tmp_path / "d0")]) == 2
        assert f"kind: unknown '{minimal_family.KIND}'" in capsys.readouterr().err
        importlib.reload(minimal_family)  # what --family does on a first import
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert main([*diagnose, "-o", str(tmp_path / "d"), *spec]) == 0
    finally:
        FAMILIES[minimal_family.KIND] = minimal
    with open(tmp_path / "d" / "summary.csv") as f:
        names = {row[0] for row in csv.reader(f)}
    assert {"scale", "mu[0]", "mu_cosine"} <= names, names


@pytest.mark.slow
def test_a_minimal_family_under_nuts_compares_beside_niw(minimal):
    """The minimal family (no closed form: NUTS) beside a NIW recipe and a NIW Posterior, each
    of its own kind: one estimator over the table (exact and PSIS rows, both leave-one-out, or
    K-fold for every row); under "kfold" the NIW rows are their closed-form fold predictive."""
    broad, t = anchors3()
    nuts = {"method": "nuts", "num_warmup": 100, "num_samples": 200, "num_chains": 1}
    post = ad.adapt("gaussian", broad, t, tau=10.0, kappa0=4.0, nu0=8.0)
    cands = {
        "niw": {"broad": broad, "kappa0": 4.0, "nu0": 8.0},
        "niw-post": post,
        "user": {"broad": broad, "kind": minimal_family.KIND, "progress": False, **nuts},
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        auto = ad.compare_priors(cands, t, kind="gaussian", tau=10.0, folds=4)
        kfold = ad.compare_priors(cands, t, kind="gaussian", tau=10.0, folds=4, estimator="kfold")
    assert set(auto.estimators.values()) in ({"exact", "psis"}, {"kfold"}), auto.note
    assert auto.estimators["user"] == ("psis" if auto.estimators["niw"] == "exact" else "kfold")
    assert set(kfold.estimators.values()) == {"kfold"}
    for result in (auto, kfold):
        assert result.table.loc["niw", "elpd_loo"] == pytest.approx(
            result.table.loc["niw-post", "elpd_loo"], rel=1e-10
        )
        assert np.all(np.isfinite(result.loo["user"].pointwise))
        assert "closed-form" in result.notes["niw"]
