"""anchordiv.scale.dask on a 2-worker loopback LocalCluster: sharded scans equal ad.top_k,
a killed worker's tasks are recomputed, study grids equal the serial run."""

import concurrent.futures
import json
import os
import signal
import time

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.retrieval.index import L2Reduction
from helpers import clustered_anchors, make_model, normed, unit

distributed = pytest.importorskip("distributed")
add = pytest.importorskip("anchordiv.scale.dask")
da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

pytestmark = pytest.mark.timeout(180)
D = 6


@pytest.fixture(scope="module")
def cluster():
    """One cluster for the module: 2 process workers, 1 thread each, on 127.0.0.1."""
    with add.local_cluster(2) as lc, distributed.Client(lc, timeout="60s") as client:
        with add.connect(client):
            yield lc, client


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(30)
    return clustered_anchors(rng, 40, D), unit(rng, 9, D), unit(rng, 1500, D)


def write_shards(root, y, cuts=(0, 400, 410, 1100, 1500)):
    """clip-retrieval's layout: root/img_emb/img_emb_N.npy, N = 0, 1, 2, 10 (natural order)."""
    (root / "img_emb").mkdir(parents=True, exist_ok=True)
    for n, lo, hi in zip((0, 1, 2, 10), cuts[:-1], cuts[1:]):
        np.save(root / "img_emb" / f"img_emb_{n}.npy", y[lo:hi])
    return root


@pytest.mark.parametrize("kind", ["softmax", "gaussian"])
def test_sharded_memmap_scan_equals_top_k(kind, cluster, data, tmp_path):
    _, client = cluster
    anchors, x, y = data
    model = make_model(kind, anchors)
    root = write_shards(tmp_path, y)
    parts, offsets, n = add.blocks(model, root, block_rows=256)
    assert n == len(y) and [p.path.rsplit("_", 1)[1] for p in parts[:2]] == ["0.npy"] * 2
    assert offsets.tolist() == [0, 256, 400, 410, 666, 922, 1100, 1356]
    want_i, want_d = ad.top_k(model, x, y, 7)
    idx, div = add.top_k(model, x, root, 7, client=client, block_rows=256, split_every=3)
    np.testing.assert_array_equal(idx, want_i)
    np.testing.assert_allclose(div, want_d, rtol=1e-12, atol=1e-12)
    assert idx.dtype == np.int64 and div.dtype == np.float64


def test_parquet_and_dask_array_galleries(cluster, data, tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    _, client = cluster
    anchors, x, y = data
    model = make_model("softmax", anchors)
    want_i, want_d = ad.top_k(model, x, y, 5)
    for i, (lo, hi) in enumerate(((0, 700), (700, 1500))):
        emb = pa.FixedSizeListArray.from_arrays(pa.array(y[lo:hi].ravel()), D)
        table = pa.table({"id": np.arange(lo, hi), "embedding": emb})
        pq.write_table(table, tmp_path / f"part_{i}.parquet", row_group_size=300)
    idx, div = add.top_k(model, x, str(tmp_path / "*.parquet"), 5, client=client, block_rows=300)
    np.testing.assert_array_equal(idx, want_i)
    np.testing.assert_allclose(div, want_d, rtol=1e-12, atol=1e-12)
    idx, div = add.top_k(model, x, da.from_array(y, chunks=(500, 3)), 5, client=client)
    np.testing.assert_array_equal(idx, want_i)
    np.testing.assert_allclose(div, want_d, rtol=1e-12, atol=1e-12)


def slow_gallery(y, rows: int, seconds: float):
    """A dask.array of ``y`` whose every block takes ``seconds`` to produce."""

    def slow(block):
        time.sleep(seconds)
        return block

    pieces = [
        da.from_delayed(dask.delayed(slow)(y[lo : lo + rows]), (len(y[lo : lo + rows]), D), y.dtype)
        for lo in range(0, len(y), rows)
    ]
    return da.concatenate(pieces)


def test_worker_killed_mid_scan_still_exact(cluster, data):
    _, client = cluster
    anchors, x, y = data
    model = make_model("gaussian", anchors)
    want_i, want_d = ad.top_k(model, x, y, 4)
    pids = client.run(os.getpid)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        scan = pool.submit(
            add.top_k,
            model,
            x,
            slow_gallery(y, 125, 0.4),
            4,
            client=client,
            retries=0,
            progress=False,
        )
        victim = _busy_worker_after_progress(client, scan)
        assert not scan.done(), "the scan finished before a worker could be killed"
        os.kill(pids[victim], signal.SIGKILL)
        idx, div = scan.result(timeout=120)
    np.testing.assert_array_equal(idx, want_i)
    np.testing.assert_allclose(div, want_d, rtol=1e-12, atol=1e-12)
    client.wait_for_workers(2, timeout=60)  # the nanny restarted the killed worker


def _busy_worker_after_progress(client, scan, timeout: float = 60.0) -> str:
    """Address of a worker running a task once some block has been scanned."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not scan.done():
        done = [k for keys in client.has_what().values() for k in keys if "_scan_block" in str(k)]
        busy = [w for w, keys in client.processing().items() if keys]
        if done and busy:
            return busy[0]
        time.sleep(0.02)
    raise AssertionError("no scan task in progress")


def test_bad_shards_are_named(data, tmp_path):
    anchors, x, y = data
    model = make_model("gaussian", anchors)
    with pytest.raises(ad.AnchorDivError, match="shards: no .npy or .parquet shard files"):
        add.blocks(model, tmp_path / "missing*.npy")
    np.save(tmp_path / "wide.npy", np.ones((3, D + 1)))
    with pytest.raises(ad.AnchorDivError, match=r"wide.npy has d=7; the model expects d=6"):
        add.blocks(model, [tmp_path / "wide.npy"])
    with pytest.raises(ad.AnchorDivError, match="shards: expected a path"):
        add.blocks(model, 3)
    np.save(tmp_path / "g.npy", y[:5])
    with pytest.raises(ad.AnchorDivError, match=r"k: must be \[1, 5\]"):
        add.top_k(model, x, tmp_path / "g.npy", 6)


def test_study_grid_on_the_cluster_is_identical_to_serial(cluster):
    _, client = cluster
    from anchordiv.evaluation.curves import adaptation_curve
    from anchordiv.evaluation.evaluate import shared_label_relevance

    rng = np.random.default_rng(31)
    centres = unit(rng, 3, D)
    labels = rng.integers(3, size=40)
    items = centres[labels] + 0.8 * rng.normal(size=(40, D)) / np.sqrt(D)
    items = normed(items)
    target = centres[np.arange(12) % 3] + 0.3 * rng.normal(size=(12, D)) / np.sqrt(D)
    options = dict(
        tau=5.0,
        query_index=np.arange(40),
        budgets=(1, 4),
        n_subsets=2,
        models=("softmax", "gaussian", "cosine", "inversion"),
        n_boot=200,
        progress=False,
    )
    study = (unit(rng, 30, D), target, items, items, shared_label_relevance(labels, labels))
    serial = adaptation_curve(*study, **options)
    spread = adaptation_curve(*study, client=client, **options)
    assert any(r["error"] for r in serial.rows)  # an undefined cell travels back too
    assert _same_rows(spread.rows, serial.rows)
    assert serial.per_query.keys() == spread.per_query.keys()
    for key, value in serial.per_query.items():
        np.testing.assert_array_equal(spread.per_query[key], value)  # bit-identical
    assert _same_rows(spread.summary(), serial.summary())


def _same_rows(a, b) -> bool:
    """Equal tables, NaN equal to NaN."""
    return len(a) == len(b) and all(
        x.keys() == y.keys()
        and all(
            x[k] == y[k] or (isinstance(x[k], float) and np.isnan(x[k]) and np.isnan(y[k]))
            for k in x
        )
        for x, y in zip(a, b)
    )


def test_built_ivf_merged_on_disk_equals_unsharded_ivf(cluster, data, tmp_path):
    faiss = pytest.importorskip("faiss")
    _, client = cluster
    anchors, x, y = data
    model = make_model("softmax", anchors)
    root = write_shards(tmp_path / "gallery", y.astype(np.float32))
    built = add.build_index(
        model,
        root,
        tmp_path / "index",
        nlist=12,
        nprobe=3,
        train_size=600,
        block_rows=300,
        chunk=128,
        client=client,
    )
    keys = np.load(tmp_path / "index" / "keys.npy", mmap_mode="r")
    np.testing.assert_allclose(
        keys, np.asarray(ad.GalleryIndex(model, y).keys), rtol=1e-6, atol=1e-6
    )
    assert built.faiss.ntotal == len(y) and built.rescore
    # the same trained quantizer, every key added at once: the same index
    whole = faiss.read_index(str(tmp_path / "index" / "trained.index"))
    meta = json.loads((tmp_path / "index" / "index.json").read_text())
    reduction = L2Reduction(meta["shift"], meta["scale"], meta["max_norm"])
    whole.add(reduction(keys))
    whole.nprobe = 3
    single = ad.FaissIndex(whole, built.gallery, reduction=reduction)
    got, want = built.search(x, 6), single.search(x, 6)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    # candidates are re-scored exactly from the keys: the divergences of ad.divergence
    full = np.asarray(ad.divergence(model, x, y))
    np.testing.assert_allclose(got[1], np.take_along_axis(full, got[0], 1), rtol=1e-4, atol=1e-4)
    reloaded = add.load_index(model, tmp_path / "index", nprobe=12)  # all cells: exact
    np.testing.assert_array_equal(reloaded.search(x, 6)[0], ad.top_k(model, x, y, 6)[0])


def test_precision_reaches_the_dask_path(cluster, data, tmp_path):
    _, client = cluster
    anchors, x, y = data
    model = make_model("gaussian", anchors)
    root = write_shards(tmp_path, y)
    want_i, _ = ad.top_k(model, x, y, 7)
    idx, _ = add.top_k(model, x, root, 7, client=client, block_rows=256, precision="fast")
    np.testing.assert_array_equal(idx, want_i)
    with pytest.raises(ad.AnchorDivError, match="precision: unknown 'bf16'"):
        add.top_k(model, x, root, 7, client=client, precision="bf16")


def test_pinned_local_workers_have_one_core_each():
    with add.local_cluster(1, pin=True) as lc, distributed.Client(lc, timeout="60s") as client:
        cores = client.run(lambda: sorted(os.sched_getaffinity(0)))
    assert [len(c) for c in cores.values()] == [1]  # CorePin
