"""FaissIndex.save / load / add (issue 11: a FaissIndex could not be saved, loaded or extended)."""

import json

import numpy as np
import pytest

import anchordiv as ad
from helpers import clustered_anchors, edit_card, unit

pytest.importorskip("faiss")


@pytest.mark.parametrize(
    "kind, options",
    [("flat", {}), ("hnsw", {"ef_search": 256}), ("ivf", {"nlist": 4, "nprobe": 4})],
)
def test_add_then_save_and_load_matches_the_exact_top_k(kind, options, tmp_path):
    rng = np.random.default_rng(0)
    model = ad.fit("gaussian", clustered_anchors(rng, 40, 8), tau=5.0)
    gallery, queries = unit(rng, 300, 8), unit(rng, 6, 8)
    index = ad.GalleryIndex(model, gallery[:250]).to_faiss(kind, **options)
    assert index.add(gallery[250:]) is index and len(index) == 300
    exact_i, exact_d = ad.top_k(model, queries, gallery, 5)
    idx, div = index.search(queries, 5)
    np.testing.assert_array_equal(idx, exact_i)
    np.testing.assert_allclose(div, exact_d, rtol=1e-4, atol=1e-4)
    loaded = ad.FaissIndex.load(index.save(tmp_path / "ix", note="test"))
    np.testing.assert_array_equal(loaded.search(queries, 5)[0], idx)
    assert json.loads((tmp_path / "ix" / "card.json").read_text())["note"] == "test"
    loaded.add(gallery[:1])  # a loaded index keeps growing
    assert len(loaded) == 301 and loaded.search(gallery[:1], 2)[0][0, 0] in (0, 300)


def test_corrupt_or_mismatched_index_files(tmp_path):
    rng = np.random.default_rng(1)
    model = ad.fit("gaussian", clustered_anchors(rng, 20, 4), tau=5.0)
    path = ad.GalleryIndex(model, unit(rng, 30, 4)).to_faiss("flat").save(tmp_path / "ix")
    edit_card(path, size=31)
    with pytest.raises(ad.AnchorDivError, match="card says 31 items"):
        ad.FaissIndex.load(path)
    data = (path / "arrays.npz").read_bytes()
    (path / "arrays.npz").write_bytes(data[:100])
    with pytest.raises(ad.AnchorDivError, match="arrays.npz: unreadable or truncated"):
        ad.FaissIndex.load(path)
    with pytest.raises(ad.AnchorDivError, match="not a faiss index"):
        ad.FaissIndex.load(path / "model")


@pytest.mark.parametrize("nlist", [4, 8, 15])
def test_a_small_ivf_index_saved_with_the_default_nprobe_loads(nlist, tmp_path):
    """Issue 52: ``to_faiss("ivf", nlist < 16)`` kept the default nprobe 16 > nlist, which the
    loader refuses ("nprobe in [1, nlist]"); nprobe is clamped to nlist when built."""
    rng = np.random.default_rng(2)
    model = ad.fit("gaussian", clustered_anchors(rng, 20, 4), tau=5.0)
    gallery, queries = unit(rng, 60, 4), unit(rng, 3, 4)
    index = ad.GalleryIndex(model, gallery).to_faiss("ivf", nlist=nlist)
    assert index.faiss.nprobe == nlist
    loaded = ad.FaissIndex.load(index.save(tmp_path / "ix"))
    np.testing.assert_array_equal(loaded.search(queries, 5)[0], index.search(queries, 5)[0])
    np.testing.assert_array_equal(
        loaded.search(queries, 5)[0], ad.top_k(model, queries, gallery, 5)[0]
    )
