"""The 0.4.0 deprecation shims (anchordiv.deprecated, removed in 0.5.0): every old module path
and top-level name still works, warns with the new place, and is the very same object;
``post.inference_data(...)`` forwards to ``ad.inference_data(post, ...)``."""

import importlib
import sys

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.checks import arviz as adz
from anchordiv.deprecated import MOVED_MODULES, MOVED_NAMES, new_path


@pytest.mark.parametrize("old", sorted(MOVED_MODULES))
def test_old_module_path_warns_and_is_the_new_module(old, monkeypatch):
    if old in ("anchordiv.distributed",):
        pytest.importorskip("dask.distributed")
    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(
        DeprecationWarning,
        match=rf"the module {old} is deprecated and will be "
        rf"removed in anchordiv 0\.5\.0; use "
        rf"{MOVED_MODULES[old]} ",
    ):
        module = importlib.import_module(old)
    assert module is importlib.import_module(MOVED_MODULES[old])


def test_submodules_of_a_moved_package_follow_it(monkeypatch):
    for name in ("anchordiv.priors", "anchordiv.priors.niw"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    with pytest.warns(DeprecationWarning) as caught:
        from anchordiv.priors.niw import niw_model
    assert [str(w.message).split(" is ")[0] for w in caught] == [
        "the module anchordiv.priors",
        "the module anchordiv.priors.niw",
    ]
    from anchordiv.adaptation.families import gaussian

    assert niw_model is gaussian.niw_model  # one module, not a second copy
    assert new_path("anchordiv.adaptation.priors.cache") == "anchordiv.adaptation.statistics"
    assert new_path("anchordiv.studies.transfer") == "anchordiv.app.studies.transfer"
    assert new_path("anchordiv.adaptation") is None


@pytest.mark.parametrize("name", sorted(MOVED_NAMES))
def test_old_top_level_name_warns_and_forwards(name):
    new = importlib.import_module(MOVED_NAMES[name])
    with pytest.warns(
        DeprecationWarning,
        match=rf"anchordiv\.{name} is deprecated .* use "
        rf"{MOVED_NAMES[name]}\.{name} ",
    ):
        obj = getattr(ad, name)
    assert obj is getattr(new, name)
    assert name not in ad.__all__


def test_unknown_names_still_raise_and_functions_are_not_shadowed():
    with pytest.raises(AttributeError, match="has no attribute 'nothing_here'"):
        ad.nothing_here  # noqa: B018
    for name in ("adapt", "divergence", "evaluate", "sbc"):  # not shimmed: functions now
        assert callable(getattr(ad, name)) and not isinstance(getattr(ad, name), type(ad))
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("anchordiv.never_existed")


def test_posterior_inference_data_method_forwards():
    rng = np.random.default_rng(0)
    broad = rng.normal(size=(200, 4)).astype(np.float32)
    targets = (rng.normal(size=(6, 4)) + 1.0).astype(np.float32)
    targets /= np.linalg.norm(targets, axis=1, keepdims=True)
    post = ad.adapt("gaussian", broad, targets, tau=20.0, kappa0=5.0, nu0=10.0)
    with pytest.warns(
        DeprecationWarning,
        match=r"Posterior\.inference_data\(\.\.\.\) is "
        r"deprecated .* use ad\.inference_data\(post",
    ):
        old = post.inference_data(num_draws=20, seed=3)
    new = ad.inference_data(post, num_draws=20, seed=3)
    assert adz.groups(old) == adz.groups(new)
    for var in new["posterior"].data_vars:
        np.testing.assert_array_equal(old["posterior"][var].values, new["posterior"][var].values)


def test_the_changelog_lists_every_move():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "CHANGELOG.md").read_text("utf-8")
    for old, new in MOVED_MODULES.items():
        assert f"| `{old}`" in text and f"`{new}`" in text, old
    for name in MOVED_NAMES:
        assert f"`ad.{name}`" in text, name
    for old in (
        "anchordiv.adapt",
        "anchordiv.divergence",
        "anchordiv.evaluate",
        "anchordiv.sbc",
        "anchordiv.anchors.mix",
        "post.inference_data",
        "x64=True",
    ):
        assert f"`{old}" in text, old
