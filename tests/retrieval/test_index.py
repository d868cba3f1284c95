"""Gallery index: cached keys, streaming over memory-mapped keys, faiss export, sharding,
recompilation."""

import importlib

import numpy as np
import pytest

import anchordiv as ad
from helpers import clustered_anchors, compilations, make_model, unit

dv = importlib.import_module("anchordiv.retrieval.divergence")
D = 5


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(20)
    return clustered_anchors(rng, 40, D), unit(rng, 6, D), unit(rng, 37, D)


@pytest.mark.parametrize("kind", ["softmax", "latent-spherical", "mixture", "mix"])
def test_index_equals_direct_top_k_and_divergence(kind, data, tmp_path):
    anchors, x, y = data
    model = make_model(kind, anchors)
    full = np.asarray(ad.divergence(model, x, y))
    np.save(tmp_path / "g.npy", y)
    gallery = np.load(tmp_path / "g.npy", mmap_mode="r")
    index = ad.GalleryIndex(model, gallery, chunk=8, store=tmp_path / "keys.npy")
    assert isinstance(index.keys, np.memmap) and len(index) == 37
    idx, div = index.top_k(x, 5, chunk=8)  # 5 chunks of memory-mapped keys, last one partial
    np.testing.assert_array_equal(idx, np.argsort(full, axis=1, kind="stable")[:, :5])
    np.testing.assert_allclose(div, np.sort(full, axis=1)[:, :5], rtol=1e-9, atol=1e-9)
    in_memory = ad.GalleryIndex(model, y)
    np.testing.assert_allclose(np.asarray(in_memory.divergence(x)), full, rtol=1e-9, atol=1e-9)
    np.testing.assert_array_equal(in_memory.top_k(x, 37)[0], ad.top_k(model, x, y, 37)[0])


def test_keys_do_not_grow_with_the_number_of_anchors(data):
    """Empirical model: cached keys are [y, ψ(y)] (d + 1 wide), so a query costs
    O(N·d) for ∇ψ(x) plus O(G·d), not O(G·N)."""
    anchors, x, y = data
    many = np.concatenate([anchors * (1 + 0.01 * i) for i in range(20)])  # 20x, distinct
    assert ad.GalleryIndex(ad.fit("softmax", many, tau=5.0), y).key_dim == D + 1
    assert ad.GalleryIndex(make_model("latent-gaussian", anchors), y).key_dim == 3 + 1


@pytest.mark.parametrize("kind", ["softmax", "gaussian", "mix"])
def test_exact_faiss_top_k_equals_ours(kind):
    rng = np.random.default_rng(21)
    d = 8
    anchors = clustered_anchors(rng, 60, d, np.float32)
    x, y = unit(rng, 20, d, np.float32), unit(rng, 500, d, np.float32)
    model = make_model(kind, anchors, tau=10.0)
    ours_i, ours_d = ad.top_k(model, x, y, 10)
    flat = ad.GalleryIndex(model, y).to_faiss("flat")
    idx, div = flat.search(x, 10)
    np.testing.assert_array_equal(idx, ours_i)
    np.testing.assert_allclose(div, ours_d, rtol=1e-3, atol=1e-3 * float(ours_d.max()))


@pytest.mark.parametrize(
    "kind, options",
    [("ivf", {"nlist": 16, "nprobe": 4}), ("hnsw", {"hnsw_m": 16, "ef_search": 64})],
)
def test_approximate_faiss_recall(kind, options):
    rng = np.random.default_rng(22)
    d = 16
    anchors = clustered_anchors(rng, 200, d, np.float32)
    x, y = unit(rng, 50, d, np.float32), unit(rng, 3000, d, np.float32)
    index = ad.GalleryIndex(ad.fit("gaussian", anchors, tau=10.0), y)
    exact, _ = index.top_k(x, 10)
    found, div = index.to_faiss(kind, **options).search(x, 10)
    assert ad.retrieval.recall_at_k(found, exact) >= 0.8
    assert np.all(np.diff(div, axis=1) >= 0)


def test_sharded_search_equals_unsharded(data):
    anchors, x, y = data
    model = make_model("softmax", anchors)
    whole = ad.top_k(model, x, y, 6)
    parts = []
    for lo, hi in ((0, 10), (10, 25), (25, 37)):
        idx, div = ad.GalleryIndex(model, y[lo:hi]).top_k(x, min(6, hi - lo))
        parts.append((idx + lo, div))
    idx, div = ad.retrieval.merge_results(parts, 6)
    np.testing.assert_array_equal(idx, whole[0])
    np.testing.assert_allclose(div, whole[1], rtol=1e-12)


def test_no_recompilation_for_new_anchors_tau_or_sizes(data):
    anchors, x, _ = data
    rng = np.random.default_rng(23)
    queries, gallery = unit(rng, 8, D), unit(rng, 80, D)
    for kind in ("softmax", "gaussian", "mixture"):
        opts = {"components": 2} if kind == "mixture" else {}
        first = ad.GalleryIndex(ad.fit(kind, anchors, tau=5.0, **opts), gallery[:37], chunk=16)
        first.top_k(x, 3, chunk=16)
        other = clustered_anchors(rng, 40 if kind != "softmax" else 33, D)  # same bucket
        cases = [
            (ad.fit(kind, other, tau=tau, **opts), n_gallery, n_queries)
            for tau, n_gallery, n_queries in ((1.0, 37, 6), (50.0, 80, 7), (9.0, 20, 5))
        ]
        with compilations() as c:
            for model, n_gallery, n_queries in cases:
                index = ad.GalleryIndex(model, gallery[:n_gallery], chunk=16)
                index.top_k(queries[:n_queries], 3, chunk=16)  # Q = 5..8 share the bucket 8
        assert c.count == 0, kind


def test_bad_input_is_named(data, tmp_path):
    anchors, x, y = data
    model = make_model("gaussian", anchors)
    with pytest.raises(ad.AnchorDivError, match="gallery: dimension mismatch"):
        ad.GalleryIndex(model, np.ones((4, D + 1)))
    with pytest.raises(ad.AnchorDivError, match="gallery: is empty"):
        ad.GalleryIndex(model, np.zeros((0, D)))
    bad = y.copy()
    bad[20, 0] = np.nan
    with pytest.raises(ad.AnchorDivError, match=r"gallery\[16:24\]: contains NaN"):
        ad.GalleryIndex(model, bad, chunk=8)
    index = ad.GalleryIndex(model, y)
    with pytest.raises(ad.AnchorDivError, match=r"k: must be \[1, 37\]"):
        index.top_k(x, 38)
    with pytest.raises(ad.AnchorDivError, match="queries: dimension mismatch"):
        index.top_k(np.ones((2, D + 1)), 3)
    with pytest.raises(ad.AnchorDivError, match="kind: unknown faiss index 'lsh'"):
        index.to_faiss("lsh")
    with pytest.raises(ad.AnchorDivError, match="nlist: 100 cells"):
        index.to_faiss("ivf", nlist=100)
    with pytest.raises(ad.AnchorDivError, match="method: unknown"):
        ad.GalleryIndex(model, y, method="fast")
    with pytest.raises(ad.AnchorDivError, match="parts: no shard results"):
        ad.retrieval.merge_results([], 3)
