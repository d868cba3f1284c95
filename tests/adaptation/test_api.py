"""``adapt``'s path (adaptation/api.py): the family resolved once, the anchors checked once,
one BLAS scope, the options split by kind and method; the package re-exports only."""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import anchordiv as ad
from anchordiv.adaptation import FAMILIES, api, statistics
from anchordiv.adaptation.families import gaussian, niw_model
from anchordiv.adaptation.registry import is_builtin
from anchordiv.errors import AnchorDivError
from anchordiv.provenance import AnchorDivWarning, with_provenance

from ..helpers import blas_scope_entries, broad_and_targets, normed, unit


@pytest.fixture
def anchors():
    rng = np.random.default_rng(0)
    broad = unit(rng, 40, 5, np.float32)
    targets = broad[:6] + np.float32(0.1)
    return broad, normed(targets)


def test_the_package_init_defines_no_function_or_class():
    init = Path(api.__file__).with_name("__init__.py")
    defined = [
        n.name
        for n in ast.parse(init.read_text()).body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    ]
    assert not defined


def test_adapt_resolves_the_family_once_and_reads_its_options_once(anchors, monkeypatch):
    seen = {"get_family": 0, "prior_options": 0}
    for name in seen:
        orig = getattr(api, name)

        def spy(*a, _orig=orig, _name=name, **k):
            seen[_name] += 1
            return _orig(*a, **k)

        monkeypatch.setattr(api, name, spy)
    ad.adapt("gaussian", *anchors, tau=20.0)
    assert seen == {"get_family": 1, "prior_options": 1}


def test_the_recipe_gets_checked_anchors_and_checks_their_shape_only(anchors, monkeypatch):
    got, finite_checks = [], []
    strengths = gaussian.gaussian_strengths

    def spy(broad, targets, **k):
        got.append((statistics.is_checked(broad), statistics.is_checked(targets)))
        return strengths(broad, targets, **k)

    as_matrix = statistics.as_matrix

    def counting(name, x, **k):
        finite_checks.append(k.get("check_finite", True))
        return as_matrix(name, x, **k)

    monkeypatch.setattr(gaussian, "gaussian_strengths", spy)
    monkeypatch.setattr(statistics, "as_matrix", counting)
    post = ad.adapt("gaussian", *anchors, tau=20.0)
    assert got == [(True, True)]
    assert finite_checks and not any(finite_checks)  # every recipe read: shape only
    assert post.info["chosen_by"].startswith("held-out recipe")


def test_adapt_enters_one_blas_scope(anchors, monkeypatch):
    entered = blas_scope_entries(monkeypatch)
    ad.adapt("gaussian", *anchors, tau=20.0)
    assert entered == [1]


def test_check_anchors_returns_checked_read_only_arrays(anchors):
    broad, targets = anchors
    b, t = api.check_anchors(broad, targets)
    assert statistics.is_checked(b) and statistics.is_checked(t)
    assert not b.flags.writeable and not t.flags.writeable
    np.testing.assert_array_equal(b, broad)
    assert b.dtype == broad.dtype and t.dtype == targets.dtype
    assert not statistics.is_checked(broad)  # the caller's arrays are untouched


def test_check_anchors_normalizes_the_targets_only_when_asked(anchors):
    broad, targets = anchors
    _, t = api.check_anchors(broad, 2 * targets, normalize=True)
    np.testing.assert_allclose(np.linalg.norm(t, axis=1), 1.0, rtol=1e-6)
    assert statistics.is_checked(t)


@pytest.mark.parametrize(
    "broad, targets, match",
    [
        (np.ones((5, 3)), np.eye(3), "identical"),
        (np.eye(3)[:1], np.eye(3), "at least 2"),
        (np.eye(3), np.eye(4), "dimension mismatch"),
        (np.eye(3), np.full((1, 3), np.nan), "NaN"),
    ],
)
def test_check_anchors_refuses_bad_anchors(broad, targets, match):
    with pytest.raises(AnchorDivError, match=match):
        api.check_anchors(broad, targets)


def test_fewer_broad_than_target_anchors_warn_unless_they_stand_in_for_a_model():
    rng = np.random.default_rng(1)
    broad, targets = unit(rng, 4, 6), unit(rng, 8, 6)
    with pytest.warns(AnchorDivWarning, match="swapped"):
        api.check_anchors(broad, targets)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        api.check_anchors(with_provenance(broad, stand_in="moment points"), targets)
        # a curve's private copy of the broad anchors keeps the mark (issue 42: the main job's
        # full-coverage cell warned about its own moment points)
        from anchordiv.adaptation.loading import stand_in_anchors
        from anchordiv.adaptation.statistics import frozen

        api.check_anchors(frozen(with_provenance(broad, stand_in="moment points")), targets)
        points = stand_in_anchors(ad.fit("gaussian", broad, tau=20.0))
        api.check_anchors(frozen(points), unit(rng, len(points) + 2, 6))


def test_split_options_takes_a_kind_or_a_family_class():
    by_kind = api.split_options("gaussian", {"kappa0": 5.0, "method": "nuts", "seed": 3})
    by_class = api.split_family_options(ad.NIWPrior, {"kappa0": 5.0, "method": "nuts", "seed": 3})
    assert by_kind == by_class
    assert by_kind[0] == {"kappa0": 5.0, "prior": "broad"} and by_kind[1] == ad.NUTS(seed=3)
    with pytest.raises(AnchorDivError, match="runs with method='nuts'"):
        api.split_options("gaussian", {"num_warmup": 3})


def test_resolve_family_reads_the_registry_and_passes_classes_through():
    assert api.resolve_family("gaussian") is ad.NIWPrior
    assert api.resolve_family(ad.NIWPrior) is ad.NIWPrior
    with pytest.raises(AnchorDivError, match="gaussian"):
        api.resolve_family("no-such-kind")


def test_adapt_docstring_names_every_builtin_kind():
    doc = ad.adapt.__doc__
    missing = [k for k, fam in FAMILIES.items() if is_builtin(fam) and f'"{k}"' not in doc]
    assert not missing


D = 4


def make_anchors(seed=0, n=10):
    return broad_and_targets(seed, n_broad=200, n=n, d=D, spread=(1.5, 0.4))


@pytest.mark.parametrize(
    "make, name, hint",
    [
        (lambda: ad.Exact(num_warmup=5), "num_warmup", "NUTS"),
        (lambda: ad.NUTS(guide="normal"), "guide", "SVI"),
        (lambda: ad.SVI(num_chains=2), "num_chains", "NUTS"),
        (lambda: ad.NUTS(num_samples=0), "num_samples", None),
        (lambda: ad.NUTS(target_accept_prob=1.5), "target_accept_prob", None),
        (lambda: ad.NUTS(chain_method="threads"), "chain_method", None),
        (lambda: ad.SVI(guide="bogus"), "guide", None),
        (lambda: ad.SVI(learning_rate=-1.0), "learning_rate", None),
        (lambda: ad.SVI(subspace=0), "subspace", None),
        (lambda: ad.NUTS(init_strategy="nope"), "init_strategy", None),
        (lambda: ad.NUTS(500), "positional", None),
    ],
)
def test_methods_are_validated_when_built(make, name, hint):
    with pytest.raises(ad.AnchorDivError, match=name) as err:
        make()
    if hint:
        assert hint in str(err.value)


def test_methods_are_frozen_and_seeds_say_what_they_seed():
    m = ad.NUTS(num_samples=10, seed=3)
    with pytest.raises(AttributeError):  # dataclasses.FrozenInstanceError
        m.seed = 4
    prior = ad.DirichletNIWPrior.from_anchors(make_anchors()[0], components=2, em_seed=1)
    assert prior.em_seed == 1


@pytest.mark.parametrize(
    "opts, name",
    [
        ({"guide": "lowrank"}, "guide"),
        ({"num_warmup": 5}, "num_warmup"),
        ({"subspace": 2}, "subspace"),
        ({"seed": 1}, "seed"),
    ],
)
def test_adapt_refuses_options_that_do_not_apply(opts, name):
    broad, t = make_anchors()
    with pytest.raises(ad.AnchorDivError, match=rf"^{name}: runs with method="):
        ad.adapt("gaussian", broad, t, tau=5.0, method="exact", **opts)
    with pytest.raises(ad.AnchorDivError, match="guide"):
        ad.adapt("gaussian", broad, t, tau=5.0, method="nuts", guide="normal")


def test_object_api_equals_the_convenience():
    broad, t = make_anchors()
    prior = ad.NIWPrior.from_anchors(broad, targets=t)
    assert prior.chosen_by.startswith("held-out recipe")  # the default since issue 17
    assert ad.NIWPrior.from_anchors(broad, targets=t, strengths="evidence").chosen_by.startswith(
        "empirical Bayes"
    )
    a = ad.infer(prior, t, ad.Exact(), tau=5.0)
    b = ad.adapt("gaussian", broad, t, tau=5.0)
    for k, v in b.params("mean").items():
        np.testing.assert_array_equal(a.params("mean")[k], v)
    c = prior.update(t, tau=5.0)
    np.testing.assert_array_equal(c.params("map")["Sigma"], b.params("map")["Sigma"])
    assert a.info["kappa0"] == prior.kappa0 and a.prior is prior
    with pytest.raises(ad.AnchorDivError, match="pass targets"):
        ad.NIWPrior.from_anchors(broad)  # 'auto' strengths need targets
    with pytest.raises(ad.AnchorDivError, match="prior object"):
        ad.infer("gaussian", t)


def test_precision_is_the_callers(monkeypatch):
    broad, t = make_anchors()
    prior = ad.NIWPrior.from_anchors(broad, kappa0=3.0, nu0=D + 5.0)
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", False)
    try:
        with pytest.raises(ad.AnchorDivError, match="jax_enable_x64"):
            ad.infer(prior, t, ad.SVI(x64=True, num_steps=5, progress=False), tau=5.0)
        assert jax.config.jax_enable_x64 is False  # never flipped by the library
    finally:
        jax.config.update("jax_enable_x64", before)


def model_with(sigma):
    def model(targets, *, mu0):
        mu = numpyro.sample("mu", dist.Normal(mu0, 1.0).to_event(1))
        s = numpyro.deterministic("Sigma", sigma(targets.shape[1]))
        with numpyro.plate("anchors", targets.shape[0]):
            numpyro.sample("targets", dist.Normal(mu, 1.0).to_event(1), obs=targets)
        return s

    return model


@pytest.mark.parametrize(
    "sigma, what",
    [(lambda d: jnp.eye(d + 1), "shape"), (lambda d: jnp.ones((d, d)), "positive-definite")],
)
def test_a_user_models_sites_are_checked_by_name(sigma, what):
    broad, t = make_anchors()
    with pytest.raises(ad.AnchorDivError, match=rf"site 'Sigma' .*{what}|site 'Sigma' has {what}"):
        ad.adapt(
            "gaussian",
            broad,
            t,
            tau=5.0,
            method="svi",
            model=model_with(sigma),
            model_kwargs={"mu0": np.zeros(D)},
            num_steps=5,
            progress=False,
        )


def scaled_niw(targets, *, mu0, kappa0, nu0, psi0):
    """The default NIW model with a user's global scale on Ψ₀."""
    s = numpyro.sample("global_scale", dist.LogNormal(0.0, 0.3))
    niw_model(targets, mu0=mu0, kappa0=kappa0, nu0=nu0, psi0=psi0 * s)


def test_the_subspace_lift_keeps_every_site_of_a_users_model():
    """Fast: a subspace posterior's stored draws (the family's sites in r = 2 coordinates plus a
    user's scalar site) lift to full d with the user's site kept, into ArviZ as well."""
    from anchordiv.adaptation import SubspacePosterior
    from anchordiv.adaptation.statistics import principal_basis

    broad, t = make_anchors()
    exact = ad.NIWPrior.from_anchors(broad, kappa0=3.0, nu0=D + 5.0).update(t, tau=5.0)
    basis, rng = principal_basis(broad), np.random.default_rng(0)
    fam = exact.family_class
    sub_kwargs = fam.project(exact.model_kwargs, basis[:, :2])
    sub = fam.likelihood_type(fam, sub_kwargs, {}, 2).exact_prior().sample(rng, 8)
    samples = {
        "mu": sub["mu"][None],
        "Sigma": sub["Sigma"][None],
        "global_scale": rng.lognormal(size=(1, 8)),
    }
    post = SubspacePosterior(
        "gaussian",
        "svi",
        5.0,
        "<f8",
        dict(exact.info),
        samples=samples,
        fixed={"basis": basis, "targets": t},
        completion=exact.exact,
        subspace=2,
        custom_model=True,
    )
    draws = post.draws(0, 3)
    assert draws["Sigma"].shape == (3, D, D) and draws["global_scale"].shape == (3,)
    assert "global_scale" in ad.inference_data(post, num_draws=4, prior=False)["posterior"]


@pytest.mark.slow
def test_a_custom_model_under_subspace_keeps_its_sites():
    broad, t = make_anchors()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = ad.adapt(
            "gaussian",
            broad,
            t,
            tau=5.0,
            method="svi",
            guide="normal",
            model=scaled_niw,
            subspace=2,
            num_steps=100,
            num_samples=20,
            kappa0=3.0,
            nu0=D + 5.0,
            progress=False,
        )
        idata = ad.inference_data(post, num_draws=10)
    draws = post.draws(0, 4)
    assert draws["Sigma"].shape == (4, D, D) and draws["global_scale"].shape == (4,)
    assert "global_scale" in idata["posterior"]
    # the NIW strengths describe the default model, not the user's: reported apart
    assert "kappa0" not in post.info and post.info["default_prior"]["kappa0"] == 3.0
    assert post.info["custom_model"] and post.info["subspace"] == 2


def test_load_prior_from_a_saved_model_keeps_card_and_tau(tmp_path):
    broad, t = make_anchors()
    ad.save_model(ad.fit("gaussian", broad, tau=7.0), tmp_path / "m", encoder="enc-x")
    prior = ad.load_prior(tmp_path / "m", kappa0=3.0, nu0=D + 5.0)
    assert prior.card["card"]["encoder"] == "enc-x" and prior.card["path"].endswith("m")
    post = ad.infer(prior, t)  # τ from the saved model's card
    assert post.tau == 7.0
    latent = ad.load_prior(tmp_path / "m", "latent-gaussian", rank=2)
    assert latent.kind == "latent-gaussian" and latent.update(t).tau == 7.0
    with pytest.raises(ad.AnchorDivError, match="tau"):
        ad.infer(ad.NIWPrior.from_anchors(broad, kappa0=3.0, nu0=D + 5.0), t)


@pytest.mark.slow
def test_structured_priors_are_objects_run_by_nuts_or_svi(tmp_path):
    broad, t = make_anchors()
    prior = ad.StructuredPrior.factor(broad, rank=2)
    assert prior.kind == "factor-gaussian" and isinstance(prior, ad.FactorPrior)
    assert isinstance(prior, ad.Projectable) and not isinstance(prior, ad.Conjugate)
    draws = prior.sample(0, 3)
    assert draws["Sigma"].shape == (3, D, D) and draws["loadings"].shape == (3, D, 2)
    assert prior.prior_predictive(0, 2, 5).shape == (2, 5, D)
    with pytest.raises(ad.AnchorDivError, match="no closed-form update"):
        ad.infer(prior, t, tau=5.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = ad.infer(
            prior,
            t,
            ad.SVI(guide="lowrank", num_steps=150, num_samples=10, subspace=3, progress=False),
            tau=5.0,
            broad=broad,
        )
    assert post.prior is prior and not post.info.get("custom_model")
    assert {"loadings", "noise"} <= set(post.samples)  # the model's own sites
    assert post.draws(0, 2)["Sigma"].shape == (2, D, D)
    assert np.all(np.isfinite(np.asarray(ad.divergence(post.point(), t, t))))
    loaded = ad.load_posterior(post.save(tmp_path / "p"))  # the structured prior itself
    assert loaded.prior.kind == "factor-gaussian" and loaded.prior.rank == 2
    np.testing.assert_array_equal(loaded.draws(0, 2)["Sigma"], post.draws(0, 2)["Sigma"])
    iso = prior.isotropic()  # the same structure on the isotropic covariance
    np.testing.assert_allclose(np.diag(iso.cov), np.trace(prior.cov) / D)
    assert iso.prior_kwargs()["loadings0"].shape == (D, 2)
    lkj = ad.StructuredPrior.lkj(broad)
    assert lkj.sample(1, 2)["corr_cholesky"].shape == (2, D, D)


def test_adapt_takes_a_method_configuration_and_names_where_a_loose_option_goes():
    rng = np.random.default_rng(0)
    broad, targets = rng.normal(size=(30, 3)), rng.normal(size=(4, 3))
    nuts = ad.NUTS(num_warmup=30, num_samples=30, num_chains=1, progress=False)
    by_object = ad.adapt("gaussian", broad, targets, tau=10.0, method=nuts, kappa0=3.0, nu0=8.0)
    by_name = ad.adapt(
        "gaussian", broad, targets, tau=10.0, method="nuts", kappa0=3.0, nu0=8.0,
        num_warmup=30, num_samples=30, num_chains=1, progress=False,
    )  # fmt: skip
    for site in ("mu", "Sigma"):
        np.testing.assert_array_equal(by_object.samples[site], by_name.samples[site])
    with pytest.raises(
        ad.AnchorDivError, match=r"num_warmup: .*method=ad\.NUTS\(num_warmup=\.\.\.\)"
    ):
        ad.adapt("gaussian", broad, targets, tau=10.0, method=nuts, num_warmup=10)
    with pytest.raises(ad.AnchorDivError, match="method: one of exact, nuts, svi or ad.Exact"):
        ad.adapt("gaussian", broad, targets, tau=10.0, method="hmc")


def test_a_sampler_option_without_a_method_names_the_method_for_a_family_without_update():
    """A family with no exact update and no ``method=``: told to name NUTS or SVI, not that
    "the exact update is the default prior's closed form" (issue 51)."""
    import sys
    from pathlib import Path

    from anchordiv.adaptation.protocol import FAMILIES

    sys.path.insert(0, str(Path(__file__).parent))
    from userfam import minimal_family

    FAMILIES.setdefault(minimal_family.KIND, minimal_family.MinimalPrior)
    try:
        broad = np.random.default_rng(0).normal(size=(30, 4))
        with pytest.raises(ad.AnchorDivError) as err:
            ad.adapt(minimal_family.KIND, broad, broad[:3], tau=10.0, num_samples=50)
        msg = str(err.value)
        assert "no exact (closed-form) update" in msg and "method='nuts'" in msg
        assert "default prior's closed form" not in msg
        # a conjugate family keeps the reason exact takes no sampler options
        with pytest.raises(ad.AnchorDivError, match="default prior's closed form"):
            ad.adapt("gaussian", broad, broad[:3], tau=10.0, num_samples=50)
    finally:
        FAMILIES.pop(minimal_family.KIND, None)
