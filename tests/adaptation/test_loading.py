"""Priors from disk (adaptation/loading.py): a saved prior, a saved Gaussian model as the broad
distribution of a prior, and the moment points that stand in for its anchors."""

import dataclasses
import json

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.adaptation import loading
from anchordiv.adaptation.posterior import SampledPosterior
from anchordiv.adaptation.protocol import FAMILIES
from anchordiv.errors import AnchorDivError
from anchordiv.provenance import provenance_of

from ..helpers import unit


@pytest.fixture
def saved_model(tmp_path):
    broad = unit(np.random.default_rng(0), 30, 5)
    return ad.save_model(ad.fit("gaussian", broad, tau=20.0), tmp_path / "broad"), broad


def test_a_saved_model_becomes_a_prior_with_its_origin(saved_model):
    path, broad = saved_model
    prior = loading.load_prior(path, kappa0=5.0, nu0=10.0)
    assert isinstance(prior, ad.NIWPrior) and prior.dim == 5
    assert prior.card["path"] == str(path) and prior.card["card"]["tau"] == 20.0
    np.testing.assert_allclose(prior.mu0, broad.mean(0), atol=1e-6)


def test_a_saved_prior_reads_back_bit_exact(saved_model, tmp_path):
    path, _ = saved_model
    prior = loading.load_prior(path, kappa0=5.0, nu0=10.0)
    back = loading.load_prior(prior.save(tmp_path / "prior"))
    for f in dataclasses.fields(prior):
        a, b = getattr(prior, f.name), getattr(back, f.name)
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b


def test_check_loaded_prior_refuses_unusable_arrays(saved_model):
    path, _ = saved_model
    prior = loading.load_prior(path, kappa0=5.0, nu0=10.0)
    card = {"dim": prior.dim}
    with pytest.warns(ad.AnchorDivWarning, match="tau=10"):  # the probe update's own τ
        loading.check_loaded_prior(prior, card)
    with pytest.raises(AnchorDivError, match="dimension 5, the card says 6"):
        loading.check_loaded_prior(prior, {"dim": 6})
    bad = object.__new__(type(prior))
    for f in dataclasses.fields(prior):
        object.__setattr__(bad, f.name, getattr(prior, f.name))
    object.__setattr__(bad, "mu0", np.full(5, np.nan))
    with pytest.raises(AnchorDivError, match="mu0 is not finite"):
        loading.check_loaded_prior(bad, card)


def test_stand_in_anchors_carry_the_cards_encoder_and_tau(saved_model):
    path, broad = saved_model
    card = json.loads((path / "card.json").read_text())
    points = loading.stand_in_anchors(ad.load_model(path), {**card, "encoder": "enc"})
    p = provenance_of(points)
    assert p["encoder"] == "enc" and p["logit_scale"] == 20.0 and p["stand_in"]
    np.testing.assert_allclose(points.mean(0), broad.mean(0), atol=1e-6)


def test_broad_from_model_refuses_a_model_that_is_not_gaussian():
    model = ad.fit("softmax", unit(np.random.default_rng(2), 5, 4), tau=1.0)
    with pytest.raises(AnchorDivError, match="expected a saved gaussian model"):
        loading.broad_from_model(model)


def test_a_saved_prior_of_an_unimported_family_names_its_module(tmp_path):
    import sys
    import warnings
    from pathlib import Path

    from anchordiv.adaptation.protocol import FAMILIES

    sys.path.insert(0, str(Path(__file__).parent))
    from userfam import user_family

    before = FAMILIES.get(user_family.KIND)
    user_family.register()
    rng = np.random.default_rng(0)
    broad = rng.normal(size=(20, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = FAMILIES[user_family.KIND].from_anchors(broad).save(tmp_path / "prior")
    assert type(ad.load_prior(path)).kind == user_family.KIND
    user_family.unregister()
    try:
        with pytest.raises(ad.AnchorDivError, match=r"unknown 'user-mean'.*import userfam"):
            ad.load_prior(path)
    finally:
        if before is not None:
            FAMILIES[user_family.KIND] = before


# ---- a loaded posterior's model keywords and fixed inputs (issue 52) ----------------------


def _edited(post, path, **changes):
    """``post`` saved to ``path`` with arrays replaced (``None``: removed), hashes recomputed
    (what anyone can do)."""
    from ..fuzz import write_consistent

    post.save(path)
    with np.load(path / "arrays.npz") as z:
        arrays = {k: z[k] for k in z.files}
    for k, v in changes.items():
        if v is None:
            del arrays[k]
        else:
            arrays[k] = np.asarray(v)
    write_consistent(path, arrays, json.loads((path / "card.json").read_text()))
    return path


def _post(kind, **options):
    rng = np.random.default_rng(0)
    broad, targets = unit(rng, 12, 4), unit(rng, 3, 4)
    return ad.adapt(kind, broad, targets, tau=10.0, **options)


@pytest.mark.parametrize(
    "kind, options, changes, message",
    [
        ("gaussian", {"kappa0": 2.0, "nu0": 8.0}, {"model_kwargs.psi0": -np.eye(4)}, "psi0"),
        ("gaussian", {"kappa0": 2.0, "nu0": 8.0}, {"model_kwargs.nu0": 0.1}, "nu0: must be > d"),
        ("gaussian", {"kappa0": 2.0, "nu0": 8.0}, {"model_kwargs.kappa0": -1.0}, "kappa0"),
        (
            "gaussian",
            {"kappa0": 2.0, "nu0": 8.0},
            {"fixed.targets": 1e200 * unit(np.random.default_rng(1), 3, 4)},
            "squares overflow",
        ),
        (
            "gaussian",
            {"kappa0": 2.0, "nu0": 8.0},
            {"fixed.targets": np.zeros((3, 5))},
            "dimension mismatch",
        ),
        ("mixture", {}, {"model_kwargs.alpha0": -0.5}, "alpha0"),
        ("mixture", {}, {"model_kwargs.weights0": np.array([0.9, 0.9])}, "weights0"),
        ("diagonal-gaussian", {}, {"model_kwargs.b0": -np.ones(4)}, "b0"),
        ("diagonal-gaussian", {}, {"model_kwargs.a0": None}, "missing \\['a0'\\]"),
        ("latent-spherical", {}, {"model_kwargs.rank": None}, "missing \\['rank'\\]"),
        ("latent-spherical", {}, {"model_kwargs.beta": 2.0}, "beta"),
        ("latent-gaussian", {}, {"model_kwargs.signal": None}, "missing \\['signal'\\]"),
        ("latent-gaussian", {}, {"model_kwargs.noise": -1.0}, "noise"),
        ("latent-gaussian", {}, {"fixed.ppca_count": 0}, "ppca_count"),
        ("latent-gaussian", {}, {"model_kwargs.rank": 9}, "rank: must be"),
    ],
)
def test_a_loaded_posteriors_model_inputs_are_checked_like_its_priors(
    kind, options, changes, message, tmp_path
):
    """``model_kwargs.psi0 = −I`` or ``nu0 = 0.1`` loaded silently and the log prior came from
    the invalid prior; ``fixed.targets = 1e200`` gave an all-NaN log prior; missing keywords
    were a raw KeyError in ``inference_data`` — now each is refused at load, by name."""
    post = _post(kind, **options)
    ad.load_posterior(post.save(tmp_path / "valid"))  # the unedited bundle loads
    path = _edited(post, tmp_path / "edited", **changes)
    with pytest.raises(AnchorDivError, match=message):
        ad.load_posterior(path)


def test_a_latent_posterior_without_its_defaulted_target_weight_scores_as_its_model(tmp_path):
    """``target_weight`` has a default in the latent-gaussian model: a bundle without it
    loads, and its log prior uses the default (a raw KeyError before, found by the fuzz)."""
    post = _post("latent-gaussian")
    loaded = ad.load_posterior(
        _edited(post, tmp_path / "p", **{"model_kwargs.target_weight": None})
    )
    idata = ad.inference_data(loaded, num_draws=4)
    assert np.isfinite(np.asarray(idata["log_prior"]["theta"])).all()


def test_the_same_value_in_the_prior_and_in_the_model_keywords_is_refused_alike(tmp_path):
    post = _post("gaussian", kappa0=2.0, nu0=8.0)
    for key in ("prior.nu0", "model_kwargs.nu0"):
        with pytest.raises(AnchorDivError, match="nu0: must be > d \\+ 1"):
            ad.load_posterior(_edited(post, tmp_path / key, **{key: 0.1}))


def test_a_latent_prior_with_a_negative_signal_is_refused_at_load(tmp_path):
    """A saved latent prior with ``signal < 0`` loaded, and its use raised a raw LinAlgError."""
    from ..fuzz import write_consistent

    path = _post("latent-gaussian").prior.save(tmp_path / "prior")
    card = json.loads((path / "card.json").read_text())
    with np.load(path / "arrays.npz") as z:
        arrays = {k: z[k] for k in z.files}
    arrays["signal"] = np.asarray(-0.5)
    write_consistent(path, arrays, card)
    with pytest.raises(AnchorDivError, match="signal: must be a finite positive"):
        ad.load_prior(path)


def test_a_nuts_posteriors_statistics_must_match_its_draws(tmp_path):
    """Statistics not ``[chains, draws]`` were a raw IndexError in ``inference_data``."""
    exact = _post("gaussian", kappa0=2.0, nu0=8.0)
    fields = {f: getattr(exact, f) for f in ("kind", "tau", "dtype", "info", "fixed", "prior")}
    post = SampledPosterior(
        method="nuts",
        samples=exact.chain_draws(0, 1, 6),
        stats={"potential_energy": np.zeros((1, 6))},
        model_kwargs=exact.model_kwargs,
        **fields,
    )
    ad.load_posterior(post.save(tmp_path / "valid"))
    path = _edited(post, tmp_path / "p", **{"stats.potential_energy": np.zeros(6)})
    with pytest.raises(AnchorDivError, match="stats.potential_energy has shape"):
        ad.load_posterior(path)


@pytest.mark.parametrize(
    "field, value, message",
    [("alpha", -0.5, "alpha"), ("nu", 1.0, "nu0: must be > d"), ("psi", -1.0, "psi\\[0\\]")],
)
def test_a_saved_mixture_prior_is_checked_by_its_constructors_rules(
    field, value, message, tmp_path
):
    """A mixture prior with ``alpha < 0`` loaded and raised numpy's raw ``ValueError: alpha <
    0`` in use."""
    from ..fuzz import write_consistent

    path = _post("mixture").prior.save(tmp_path / "prior")
    with np.load(path / "arrays.npz") as z:
        arrays = {k: z[k] for k in z.files}
    arrays[field] = value * np.ones_like(arrays[field]) if field != "psi" else -arrays[field]
    write_consistent(path, arrays, json.loads((path / "card.json").read_text()))
    with pytest.raises(AnchorDivError, match=message):
        ad.load_prior(path)


@pytest.mark.parametrize("kind", ["lkj-gaussian", "factor-gaussian"])
@pytest.mark.parametrize("value", [0.0, -2.0])
def test_a_saved_structured_prior_with_no_strength_is_refused_at_load(kind, value, tmp_path):
    """A saved lkj-gaussian prior with ``prior_anchors = 0`` loaded and its first draw raised
    a raw ZeroDivisionError (found by the fuzz over every family)."""
    from ..fuzz import write_consistent

    rng = np.random.default_rng(0)
    options = {"rank": 2} if kind == "factor-gaussian" else {}
    prior = FAMILIES[kind].from_anchors(unit(rng, 12, 4), **options)
    path = prior.save(tmp_path / "prior")
    ad.load_prior(path).sample(0, 2)  # the unedited prior loads and draws
    card = json.loads((path / "card.json").read_text())
    with np.load(path / "arrays.npz") as z:
        arrays = {k: z[k] for k in z.files}
    if "prior_anchors" in arrays:
        arrays["prior_anchors"] = np.asarray(value)
    else:
        card["prior"]["prior_anchors"] = value
    write_consistent(path, arrays, card)
    with pytest.raises(AnchorDivError, match="prior_anchors: must be a finite positive"):
        ad.load_prior(path)


@pytest.mark.parametrize("value", [1, True, 2.5])
def test_a_subspace_rank_on_a_full_posterior_is_refused_at_load(value, tmp_path):
    """A card's ``subspace`` set on an exact latent posterior skipped its checks and its
    log likelihood raised a raw TypeError (found by the all-kinds fuzz)."""
    post = _post("latent-gaussian")
    path = post.save(tmp_path / "p")
    card = json.loads((path / "card.json").read_text())
    card["subspace"] = value
    from ..fuzz import write_consistent

    with np.load(path / "arrays.npz") as z:
        write_consistent(path, {k: z[k] for k in z.files}, card)
    with pytest.raises(AnchorDivError, match="subspace"):
        ad.load_posterior(path)


# ---- draws, exact parameters, dtypes and Bingham matrices at load (issue 52, fuzz with use) --


def _nuts_like(exact):
    """A sampled posterior with ``exact``'s draws (no sampler run)."""
    fields = {f: getattr(exact, f) for f in ("kind", "tau", "dtype", "info", "fixed", "prior")}
    return SampledPosterior(
        method="nuts",
        samples=exact.chain_draws(0, 1, 6),
        model_kwargs=exact.model_kwargs,
        **fields,
    )


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"samples.Sigma": None}, "no draws of the gaussian model's site\\(s\\) \\['Sigma'\\]"),
        ({"samples.mu": np.zeros((1, 6, 5))}, "samples.mu: each draw of shape \\[5\\]"),
    ],
)
def test_a_loaded_posteriors_draws_hold_every_site_of_its_family(changes, message, tmp_path):
    """A spectral posterior without its ``global_scale`` draws loaded, and ``inference_data``
    raised a raw ``KeyError: 'global_scale'`` (the fuzz with use): every site of the family's
    model must be stored, of the family's shape."""
    post = _nuts_like(_post("gaussian", kappa0=2.0, nu0=8.0))
    ad.load_posterior(post.save(tmp_path / "valid"))
    with pytest.raises(AnchorDivError, match=message):
        ad.load_posterior(_edited(post, tmp_path / "p", **changes))


@pytest.mark.parametrize("field", ["family.alpha", "family.mu"])
def test_a_loaded_mixtures_exact_parameters_have_the_familys_axes(field, tmp_path):
    """Mixture parameters of 3 weights and 4 components loaded, and ``inference_data`` raised
    a raw broadcast ``ValueError`` in ``cosine`` (the fuzz with use)."""
    post = _post("mixture")
    arrays = {"family.alpha": post.exact.alpha, "family.mu": post.exact.mu}
    path = _edited(post, tmp_path / "p", **{field: arrays[field][:-1]})
    with pytest.raises(AnchorDivError, match="posterior field family: field mu has shape"):
        ad.load_posterior(path)


@pytest.mark.parametrize("key", ["model_kwargs.mu0", "fixed.targets", "family.psi", "prior.mu0"])
def test_a_loaded_posteriors_arrays_must_be_numbers(key, tmp_path):
    """A string array in ``model_kwargs`` reached JAX as a raw ``TypeError`` (the factor
    model), and ``anchordiv diagnose`` printed HDF5's ``Object dtype has no native HDF5
    equivalent``: an array that is not numbers is refused at load, by name."""
    post = _post("gaussian", kappa0=2.0, nu0=8.0)
    with np.load(post.save(tmp_path / "valid") / "arrays.npz") as z:
        value = z[key].astype("<U3")
    path = _edited(post, tmp_path / "p", **{key: value})
    with pytest.raises(AnchorDivError, match="holds <U3 values, not numbers|not finite numbers"):
        ad.load_posterior(path)


def test_a_string_keyword_is_refused_where_the_model_takes_a_number(tmp_path):
    """A latent-spherical ``beta`` saved as a string loaded, and ``anchordiv diagnose`` printed
    a raw ``TypeError``; the spectral ``shrinkage``, a string keyword, still loads."""
    post = _post("latent-spherical")
    path = _edited(post, tmp_path / "p", **{"model_kwargs.beta": np.asarray("0.5")})
    with pytest.raises(AnchorDivError, match="model_kwargs.beta = '0.5' is a string"):
        ad.load_posterior(path)
    from anchordiv.adaptation.posterior import string_keywords

    assert string_keywords("spectral") == {"shrinkage"} and string_keywords("gaussian") == set()


@pytest.mark.parametrize("group", ["model_kwargs", "fixed", "samples", "stats"])
def test_an_object_array_in_a_loaded_posterior_is_refused(group, tmp_path):
    """What a pickle-free npz cannot hold, a posterior built from one (the check itself)."""
    from anchordiv.adaptation.posterior import check_loaded_arrays

    post = _nuts_like(_post("gaussian", kappa0=2.0, nu0=8.0))
    post = dataclasses.replace(post, stats={"energy": np.zeros((1, 6))})
    check_loaded_arrays("p", post)
    key = "mu0" if group == "model_kwargs" else "x"
    getattr(post, group)[key] = np.array([1, 2, 3, "a"], object)
    with pytest.raises(AnchorDivError, match=f"p: posterior field {group}.* holds object values"):
        check_loaded_arrays("p", post)


@pytest.mark.parametrize(
    "kind, field, edit, message",
    [
        ("latent-spherical", "projector", lambda p: 1e300 * p, "eigenvalue 1e\\+300 > 1"),
        ("latent-spherical", "projector", lambda p: p + np.triu(np.ones_like(p), 1), "symmetric"),
        ("latent-gaussian", "cov", lambda c: -c, "not positive semi-definite"),
    ],
)
def test_a_latent_priors_bingham_matrix_is_checked_at_load(kind, field, edit, message, tmp_path):
    """A saved latent-spherical prior whose projector held 1e300 loaded, and its first draws
    raised a raw ``LinAlgError`` in ``vector_bingham`` (the fuzz with use)."""
    from ..fuzz import write_consistent

    path = _post(kind).prior.save(tmp_path / "prior")
    ad.load_prior(path).isotropic().check_loaded(4)  # the unedited prior and its control pass
    with np.load(path / "arrays.npz") as z:
        arrays = {k: z[k] for k in z.files}
    arrays[field] = edit(arrays[field])
    write_consistent(path, arrays, json.loads((path / "card.json").read_text()))
    with pytest.raises(AnchorDivError, match=message):
        ad.load_prior(path)


def test_a_loaded_posteriors_draws_must_be_floating_point(tmp_path):
    """A NUTS posterior whose ``Sigma`` draws were saved as int32 loaded and raised a raw
    ``LinAlgError`` in use (the fuzz with use)."""
    post = _nuts_like(_post("gaussian", kappa0=2.0, nu0=8.0))
    with np.load(post.save(tmp_path / "valid") / "arrays.npz") as z:
        value = z["samples.Sigma"].astype("int32")
    path = _edited(post, tmp_path / "p", **{"samples.Sigma": value})
    with pytest.raises(AnchorDivError, match="samples.Sigma holds int32 values, not the float"):
        ad.load_posterior(path)
