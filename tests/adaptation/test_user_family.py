"""A family registered late, from a module outside the package, works through every string
entry point that reads the registry: ``ad.adapt``, ``ad.infer``, ``ad.inference_data``,
``ad.compare_priors``, the curves' ``posterior-<kind>``/``isotropic-<kind>`` models, SBC and
save/load (issue 26, item 2)."""

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.adaptation import KINDS, OPTIONS
from anchordiv.checks.uncertainty import DIMS, QUANTITIES

sys.path.insert(0, str(Path(__file__).parent))
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


def test_registry_views_are_live(fam):
    assert KIND in KINDS and KIND in tuple(KINDS)
    assert OPTIONS[KIND] == {"kappa0": 10.0, "nu0": 10.0, "reg": 1e-3}
    assert QUANTITIES[KIND] == fam.quantities
    assert set(fam.dims) <= set(DIMS)


def test_unknown_kind_is_a_named_error():
    with pytest.raises(ad.AnchorDivError, match="kind: unknown 'no-such-kind'"):
        OPTIONS["no-such-kind"]
    with pytest.raises(ad.AnchorDivError, match="kind: unknown"):
        ad.adapt("no-such-kind", *anchors(), tau=10.0)


def test_adapt_by_string_and_by_object_agree(fam):
    broad, t = anchors()
    post = ad.adapt(KIND, broad, t, tau=10.0, kappa0=4.0, nu0=6.0)
    ref = ad.adapt("diagonal-gaussian", broad, t, tau=10.0, kappa0=4.0, nu0=6.0)
    obj = ad.infer(fam.from_anchors(broad, kappa0=4.0, nu0=6.0), t, ad.Exact(), tau=10.0)
    assert post.kind == KIND and obj.kind == KIND
    for which in ("mean", "map"):
        for k, v in ref.params(which).items():
            np.testing.assert_array_equal(post.params(which)[k], v)
            np.testing.assert_array_equal(obj.params(which)[k], v)
    with pytest.raises(ad.AnchorDivError, match="unknown option"):
        ad.adapt(KIND, broad, t, tau=10.0, rank=3)


def test_inference_data_and_save_load(fam, tmp_path):
    broad, t = anchors()
    post = ad.adapt(KIND, broad, t, tau=10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = ad.inference_data(post, num_draws=10, seed=0)
    assert idata.attrs["kind"] == KIND and "mean_cosine" in idata.posterior
    post.save(tmp_path / "p")
    back = ad.load_posterior(tmp_path / "p")
    assert type(back.prior) is fam
    a, b = post.draws(5, 3), back.draws(5, 3)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
    fam.from_anchors(broad).save(tmp_path / "prior")
    assert type(ad.load_prior(tmp_path / "prior")) is fam


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
