"""``adapt``'s path (adaptation/pipeline.py): the family resolved once, the anchors checked once,
one BLAS scope, the options split by kind and method; the package re-exports only."""

import ast
from pathlib import Path

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.adaptation import FAMILIES, cache, pipeline, recipe
from anchordiv.adaptation.registry import is_builtin
from anchordiv.errors import AnchorDivError
from anchordiv.provenance import AnchorDivWarning, with_provenance

from ..helpers import blas_scope_entries, unit


@pytest.fixture
def anchors():
    rng = np.random.default_rng(0)
    broad = unit(rng, 40, 5, np.float32)
    targets = broad[:6] + np.float32(0.1)
    return broad, targets / np.linalg.norm(targets, axis=1, keepdims=True)


def test_the_package_init_defines_no_function_or_class():
    init = Path(pipeline.__file__).with_name("__init__.py")
    defined = [
        n.name
        for n in ast.parse(init.read_text()).body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    ]
    assert not defined


def test_adapt_resolves_the_family_once_and_reads_its_options_once(anchors, monkeypatch):
    seen = {"get_family": 0, "prior_options": 0}
    for name in seen:
        orig = getattr(pipeline, name)

        def spy(*a, _orig=orig, _name=name, **k):
            seen[_name] += 1
            return _orig(*a, **k)

        monkeypatch.setattr(pipeline, name, spy)
    ad.adapt("gaussian", *anchors, tau=20.0)
    assert seen == {"get_family": 1, "prior_options": 1}


def test_the_recipe_gets_checked_anchors_and_checks_their_shape_only(anchors, monkeypatch):
    got, finite_checks = [], []
    strengths = recipe.gaussian_strengths

    def spy(broad, targets, **k):
        got.append((cache.is_checked(broad), cache.is_checked(targets)))
        return strengths(broad, targets, **k)

    as_matrix = cache.as_matrix

    def counting(name, x, **k):
        finite_checks.append(k.get("check_finite", True))
        return as_matrix(name, x, **k)

    monkeypatch.setattr(recipe, "gaussian_strengths", spy)
    monkeypatch.setattr(cache, "as_matrix", counting)
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
    b, t = pipeline.check_anchors(broad, targets)
    assert cache.is_checked(b) and cache.is_checked(t)
    assert not b.flags.writeable and not t.flags.writeable
    np.testing.assert_array_equal(b, broad)
    assert b.dtype == broad.dtype and t.dtype == targets.dtype
    assert not cache.is_checked(broad)  # the caller's arrays are untouched


def test_check_anchors_normalizes_the_targets_only_when_asked(anchors):
    broad, targets = anchors
    _, t = pipeline.check_anchors(broad, 2 * targets, normalize=True)
    np.testing.assert_allclose(np.linalg.norm(t, axis=1), 1.0, rtol=1e-6)
    assert cache.is_checked(t)


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
        pipeline.check_anchors(broad, targets)


def test_fewer_broad_than_target_anchors_warn_unless_they_stand_in_for_a_model():
    rng = np.random.default_rng(1)
    broad, targets = unit(rng, 4, 6), unit(rng, 8, 6)
    with pytest.warns(AnchorDivWarning, match="swapped"):
        pipeline.check_anchors(broad, targets)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pipeline.check_anchors(with_provenance(broad, stand_in="moment points"), targets)
        # a curve's private copy of the broad anchors keeps the mark (issue 42: the main job's
        # full-coverage cell warned about its own moment points)
        from anchordiv.adaptation.cache import frozen
        from anchordiv.adaptation.loading import stand_in_anchors

        pipeline.check_anchors(frozen(with_provenance(broad, stand_in="moment points")), targets)
        points = stand_in_anchors(ad.fit("gaussian", broad, tau=20.0))
        pipeline.check_anchors(frozen(points), unit(rng, len(points) + 2, 6))


def test_split_options_takes_a_kind_or_a_family_class():
    by_kind = pipeline.split_options("gaussian", {"kappa0": 5.0, "method": "nuts", "seed": 3})
    by_class = pipeline.split_family_options(
        ad.NIWPrior, {"kappa0": 5.0, "method": "nuts", "seed": 3}
    )
    assert by_kind == by_class
    assert by_kind[0] == {"kappa0": 5.0, "prior": "broad"} and by_kind[1] == ad.NUTS(seed=3)
    with pytest.raises(AnchorDivError, match="runs with method='nuts'"):
        pipeline.split_options("gaussian", {"num_warmup": 3})


def test_resolve_family_reads_the_registry_and_passes_classes_through():
    assert pipeline.resolve_family("gaussian") is ad.NIWPrior
    assert pipeline.resolve_family(ad.NIWPrior) is ad.NIWPrior
    with pytest.raises(AnchorDivError, match="gaussian"):
        pipeline.resolve_family("no-such-kind")


def test_adapt_docstring_names_every_builtin_kind():
    doc = ad.adapt.__doc__
    missing = [k for k, fam in FAMILIES.items() if is_builtin(fam) and f'"{k}"' not in doc]
    assert not missing
