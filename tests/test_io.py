"""Saved models round-trip bit-exactly; corrupt bundles are detected."""

import json

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.io import load_card
from helpers import ALL_KINDS, clustered_anchors, make_model, unit


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
    np.testing.assert_array_equal(np.asarray(ad.divergence(model, x, y)),
                                  np.asarray(ad.divergence(loaded, x, y)))
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
    with pytest.raises(ad.AnchorDivError, match="not a saved anchordiv bundle"):
        ad.load_model(tmp_path / "nothing")
