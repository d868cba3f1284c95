"""Saved models round-trip bit-exactly; corrupt bundles are detected."""

import json

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.io import load_card
from helpers import ALL_KINDS, clustered_anchors, edit_card, make_model, unit


@pytest.mark.parametrize("kind", ALL_KINDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_round_trip_is_exact(kind, dtype, tmp_path):
    rng = np.random.default_rng(0)
    anchors = clustered_anchors(rng, 30, 4, dtype)
    model = make_model(kind, anchors)
    path = ad.save_model(model, tmp_path / "m", encoder="test-encoder", anchor_source="random")
    loaded = ad.load_model(path)
    assert type(loaded) is type(model)
    import jax

    for a, b in zip(jax.tree_util.tree_leaves(model), jax.tree_util.tree_leaves(loaded)):
        assert np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    x, y = unit(rng, 3, 4, dtype), unit(rng, 5, 4, dtype)
    np.testing.assert_array_equal(
        np.asarray(ad.divergence(model, x, y)), np.asarray(ad.divergence(loaded, x, y))
    )
    card = load_card(path)
    assert card["kind"] == model.kind and card["dim"] == 4
    assert card["encoder"] == "test-encoder" and card["package_version"] == ad.__version__


def test_corrupt_bundle_is_detected(tmp_path):
    rng = np.random.default_rng(1)
    path = ad.save_model(ad.fit("gaussian", clustered_anchors(rng, 20, 3), tau=2.0), tmp_path / "m")
    card = json.loads((path / "card.json").read_text())
    card["data_hash"] = "0" * 64
    (path / "card.json").write_text(json.dumps(card))
    with pytest.raises(ad.AnchorDivError, match="data_hash"):
        ad.load_model(path)
    with pytest.raises(ad.AnchorDivError, match="nothing: no such file or directory"):
        ad.load_model(tmp_path / "nothing")  # a missing path is said missing (issue 51)


def _saved(tmp_path):
    rng = np.random.default_rng(0)
    return ad.save_model(make_model("gaussian", clustered_anchors(rng, 30, 4)), tmp_path / "m")


def _posterior(tmp_path):
    rng = np.random.default_rng(1)
    post = ad.adapt("gaussian", unit(rng, 60, 4), clustered_anchors(rng, 6, 4), tau=5.0)
    return post, ad.save_posterior(post, tmp_path / "p")


def _truncate(path):
    data = (path / "arrays.npz").read_bytes()
    (path / "arrays.npz").write_bytes(data[: len(data) // 2])


def _edit_card(path, **changes):
    edit_card(path, **changes)


def test_truncated_arrays_name_the_file(tmp_path):
    """Issue 11: a truncated arrays.npz raised zipfile.BadZipFile."""
    path = _saved(tmp_path)
    _truncate(path)
    with pytest.raises(ad.AnchorDivError, match=r"arrays\.npz: unreadable or truncated"):
        ad.load_model(path)


def test_broken_card_names_the_file(tmp_path):
    """Issue 11: a broken card.json raised JSONDecodeError."""
    path = _saved(tmp_path)
    (path / "card.json").write_text('{"type": "anchor-model", "dim": ')
    with pytest.raises(ad.AnchorDivError, match=r"card\.json: not valid JSON"):
        ad.load_model(path)
    with pytest.raises(ad.AnchorDivError, match=r"card\.json: not valid JSON"):
        load_card(path)


def test_card_dim_is_checked_against_the_arrays(tmp_path):
    """Issue 11: a card edited to the wrong dim loaded silently."""
    path = _saved(tmp_path)
    _edit_card(path, dim=7)
    with pytest.raises(ad.AnchorDivError, match=r"card\.json: says dim = 7 but"):
        ad.load_model(path)
    _edit_card(path, dim=4, structure={"kind": "gaussian", "fields": {"mean": "nope"}})
    with pytest.raises(ad.AnchorDivError, match="structure does not match"):
        ad.load_model(path)


def test_corrupt_posterior_and_inference_data(tmp_path):
    post, path = _posterior(tmp_path)
    _edit_card(path, dim=9)
    with pytest.raises(ad.AnchorDivError, match="says dim = 9"):
        ad.load_posterior(path)
    _truncate(path)
    with pytest.raises(ad.AnchorDivError, match="unreadable or truncated"):
        ad.load_posterior(path)
    idata = ad.save_inference_data(ad.inference_data(post, num_draws=4), tmp_path / "i")
    with pytest.raises(ad.AnchorDivError, match="holds a 'inference-data', not a posterior"):
        ad.load_posterior(idata)
    (idata / "card.json").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ad.AnchorDivError, match="not valid JSON"):
        ad.load_inference_data(idata)


def test_save_model_refuses_an_existing_path_unless_overwrite(tmp_path):
    model = ad.fit("gaussian", np.random.default_rng(0).normal(size=(10, 3)), tau=2.0)
    ad.save_model(model, tmp_path / "m")
    with pytest.raises(
        ad.AnchorDivError,
        match=r"m: already exists \(a saved bundle\); pass "
        r"overwrite=True",
    ):
        ad.save_model(model, tmp_path / "m")
    assert ad.save_model(model, tmp_path / "m", overwrite=True) == tmp_path / "m"
    (tmp_path / "file").write_text("x")
    with pytest.raises(ad.AnchorDivError, match="file: exists and is not a directory"):
        ad.save_model(model, tmp_path / "file", overwrite=True)
    (tmp_path / "empty").mkdir()
    ad.save_model(model, tmp_path / "empty")  # an empty directory is fine
