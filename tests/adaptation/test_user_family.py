"""A family written in a module outside the package, in 7 members, registered late (after
anchordiv was imported), runs through everything (issue 26): ``ad.adapt`` by string and
``ad.infer`` on the object with ``Exact``/``NUTS``/``SVI``, ``ad.inference_data``,
``ad.compare_priors``, SBC, save/load, the curves' ``posterior-<kind>``/``isotropic-<kind>``
models and the CLI (``--family file.py:Class``).  Its exact posterior is checked against the
closed form, NUTS against the exact one, and the generic (traced) likelihood against a float64
numpy reference."""

import dataclasses
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

import anchordiv as ad
from anchordiv.checks import arviz as adz
from anchordiv.adaptation import KINDS, OPTIONS
from anchordiv.checks.families import checks_of

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from userfam import user_family  # noqa: E402

KIND = user_family.KIND


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
    hooks = checks_of(fam)  # the checks layer's generic defaults: norms and cosines of the sites
    assert hooks.dims == {} and hooks.psis_caveat(None) is None
    draws = {"mu": np.ones((2, 3, 4)), "Sigma": np.ones((2, 3, 4, 4))}
    assert sorted(hooks.quantities(draws, {"mu": np.ones(4), "Sigma": np.ones((4, 4))})) == [
        "Sigma_cosine",
        "Sigma_norm",
        "mu_cosine",
        "mu_norm",
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
    sd = np.sqrt(np.diag(exact.family.cov) / exact.family.kappa)
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
        assert post.family is None and post.model_kwargs is not None  # no exact update ran
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
    from anchordiv.adaptation.registry import FAMILIES

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
