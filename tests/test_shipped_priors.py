"""The shipped priors by name: ``ad.shipped_priors()``, ``ad.load_prior("wordnet-visual-art")``
(short or full name), ``$ANCHORDIV_MODELS`` replacing the directory, ``anchordiv priors``, and a
clear error for a name that is neither a bundle nor shipped."""

import json
import shutil

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.app.cli import main
from anchordiv.app.studies import priors as studies_priors
from anchordiv.io import CHECKOUT_PRIORS, MODELS_ENV, models_dir, resolve_prior

NAMES = [
    "clinical-text",
    "hpo-all",
    "hpo-respiratory-thorax",
    "imagenet-names",
    "wordnet-generic",
    "wordnet-glosses",
    "wordnet-visual-art",
]


@pytest.fixture(autouse=True)
def no_override(monkeypatch):
    monkeypatch.delenv(MODELS_ENV, raising=False)


def test_the_seven_shipped_priors_by_short_name():
    found = ad.shipped_priors()
    assert list(found) == NAMES
    assert found["wordnet-visual-art"] == CHECKOUT_PRIORS / "wordnet-visual-art-gaussian"
    assert models_dir() == CHECKOUT_PRIORS == studies_priors.default_models_dir()


def test_load_prior_by_short_and_full_name_is_the_same_prior():
    short = ad.load_prior("wordnet-visual-art", kappa0=10.0, nu0=400.0)
    full = ad.load_prior("wordnet-visual-art-gaussian", kappa0=10.0, nu0=400.0)
    path = ad.load_prior(CHECKOUT_PRIORS / "wordnet-visual-art-gaussian", kappa0=10.0, nu0=400.0)
    for a, b in [(short, full), (short, path)]:
        (xa, _), (xb, _) = a.to_arrays(), b.to_arrays()
        assert sorted(xa) == sorted(xb)
        for k in xa:
            np.testing.assert_array_equal(xa[k], xb[k])
    assert short.card["card"]["prior"]["name"] == "wordnet-visual-art-gaussian"


def test_the_studies_find_them_the_same_way():
    model = studies_priors.load_prior("wordnet-visual-art")
    again = studies_priors.load_prior("wordnet-visual-art-gaussian")
    assert model is not None and model.dim == again.dim == 384


def test_unknown_names_and_paths_are_clear_errors(tmp_path):
    with pytest.raises(
        ad.AnchorDivError,
        match=r"'wordnet-visul-art' is neither a saved bundle "
        r"nor a shipped prior; shipped: clinical-text, ",
    ):
        ad.load_prior("wordnet-visul-art", kappa0=1.0, nu0=400.0)
    with pytest.raises(ad.AnchorDivError, match="wordnet-visual-art: no such file or directory"):
        resolve_prior(tmp_path / "wordnet-visual-art")  # a path is never a name


def test_models_env_replaces_the_directory(tmp_path, monkeypatch):
    shutil.copytree(CHECKOUT_PRIORS / "hpo-all-gaussian", tmp_path / "mine-gaussian")
    monkeypatch.setenv(MODELS_ENV, str(tmp_path))
    assert models_dir() == tmp_path
    assert list(ad.shipped_priors()) == ["mine"]
    assert resolve_prior("mine") == tmp_path / "mine-gaussian"
    with pytest.raises(ad.AnchorDivError, match="shipped: mine$"):
        resolve_prior("wordnet-visual-art")
    monkeypatch.setenv(MODELS_ENV, str(tmp_path / "empty"))
    with pytest.raises(ad.AnchorDivError, match="shipped: none found in .*empty"):
        resolve_prior("wordnet-visual-art")


def test_priors_command_lists_them(capsys, tmp_path, monkeypatch):
    assert main(["priors"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"7 priors in {CHECKOUT_PRIORS}:")
    assert (
        "  wordnet-visual-art      832 anchors, d = 384: WordNet glosses of the visual-art" in out
    )
    assert main(["priors", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert list(rows) == NAMES and rows["hpo-all"]["dim"] == 384
    monkeypatch.setenv(MODELS_ENV, str(tmp_path))
    assert main(["priors"]) == 2
    assert f"anchordiv priors: error: no priors found in {tmp_path}" in capsys.readouterr().err
