"""Pairwise matrix, jit vs eager, streaming top-k, MIPS export and recompilation."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import anchordiv as ad
import importlib

dv = importlib.import_module(
    "anchordiv.retrieval.divergence"
)  # the package exports a function of that name
from helpers import ALL_KINDS, clustered_anchors, compilations, make_model, unit  # noqa: E402

D = 5


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(10)
    return clustered_anchors(rng, 40, D), unit(rng, 6, D), unit(rng, 37, D)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_jit_equals_eager(kind, data):
    anchors, x, y = data
    model = make_model(kind, anchors)
    u, c = dv.query_terms(model, jnp.asarray(x))  # op-by-op, no jit around it
    v, h = dv.key_terms(model, jnp.asarray(y))
    eager = np.asarray(dv.pairwise(u, c, v, h))
    np.testing.assert_allclose(
        np.asarray(ad.divergence(model, x, y)), eager, rtol=1e-12, atol=1e-12
    )


@pytest.mark.parametrize("kind", ["softmax", "gaussian", "latent-spherical", "mix"])
def test_top_k_streaming_equals_full_sort(kind, data, tmp_path):
    anchors, x, y = data
    model = make_model(kind, anchors)
    full = np.asarray(ad.divergence(model, x, y))
    np.save(tmp_path / "g.npy", y)
    gallery = np.load(tmp_path / "g.npy", mmap_mode="r")
    idx, div = ad.top_k(model, x, gallery, k=5, chunk=8)  # 5 chunks, last one partial
    np.testing.assert_array_equal(idx, np.argsort(full, axis=1, kind="stable")[:, :5])
    np.testing.assert_allclose(div, np.sort(full, axis=1)[:, :5], rtol=1e-12, atol=1e-12)
    idx2, _ = ad.top_k(model, x, y, k=37)  # k = G, one chunk
    np.testing.assert_array_equal(np.sort(idx2, axis=1), np.tile(np.arange(37), (6, 1)))


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_mips_inner_product_is_offset_minus_divergence(kind, data):
    anchors, x, y = data
    model = make_model(kind, anchors)
    q, k = ad.retrieval.mips_queries(model, x), ad.retrieval.mips_keys(model, y)
    assert q.shape[1] == k.shape[1]
    recon = ad.retrieval.mips_offset(model, x)[:, None] - q @ k.T
    np.testing.assert_allclose(
        np.maximum(recon, 0), np.asarray(ad.divergence(model, x, y)), rtol=1e-9, atol=1e-9
    )
    np.testing.assert_array_equal(
        np.argsort(-(q @ k.T), axis=1)[:, :3],
        np.argsort(np.asarray(ad.divergence(model, x, y)), axis=1)[:, :3],
    )


def test_refit_and_new_tau_do_not_recompile(data):
    anchors, x, y = data
    rng = np.random.default_rng(11)
    for kind in ("softmax", "gaussian", "mixture"):
        opts = {"components": 2} if kind == "mixture" else {}
        ad.divergence(ad.fit(kind, anchors, tau=5.0, **opts), x, y)
        ad.top_k(ad.fit(kind, anchors, tau=5.0, **opts), x, y, 3)
        other = clustered_anchors(rng, 40 if kind != "softmax" else 33, D)  # 33 -> same bucket
        models = [ad.fit(kind, other, tau=tau, **opts) for tau in (1.0, 50.0)]
        with compilations() as c:
            for m in models:
                ad.divergence(m, x, y)
                ad.top_k(m, x, y, 3)
                ad.top_k(m, x[:5], y[:34], 3)  # smaller Q and G within their buckets (8, 64)
        assert c.count == 0, kind


def test_row_bucket_bounds_padding():
    for n in list(range(1, 300)) + [2000, 20000, 1_000_000]:
        b = dv.row_bucket(n)
        assert b >= n and (n <= 64 or b <= 1.125 * n)


def test_default_chunk_keeps_a_step_under_the_heap_ceiling():
    # (bucketed Q + d) * chunk <= 2^22 float32 entries on CPU, 2^21 in float64 (these tests):
    # Q=100, d=64 -> 2^14 in float32 (was 2^16), 2^13 here
    assert jax.config.jax_enable_x64
    assert dv.default_chunk(100, 10**6, dim=64) == 1 << 13
    assert dv.default_chunk(100, 10**6, dim=64, budget=dv.STEP_ENTRIES) == 1 << 14
    assert dv.default_chunk(1000, 10**6, dim=64) == 1 << 10
    assert dv.default_chunk(100, 10**6, dim=384) == 1 << 12
    assert dv.default_chunk(20000, 10**6, dim=64) == 1024 and dv.default_chunk(9, 300) == 320


#: the scan of :func:`test_default_chunk_scan_reuses_its_buffers`, in a fresh interpreter: the
#: worker process of a test run has other threads (a heap trim after an earlier test's idle
#: second, XLA's runtime, a Dask cluster's) that fault pages in during any scan of its own
FAULTS_SCRIPT = """
import importlib, json, resource, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from helpers import clustered_anchors, make_model, unit
dv = importlib.import_module("anchordiv.retrieval.divergence")
rng = np.random.default_rng(3)
model = make_model("gaussian", clustered_anchors(rng, 200, 64))
gallery = unit(rng, 50_000, 64, np.float16)
u, c = dv.padded_query_terms(model, unit(rng, 100, 64))
chunk = dv.default_chunk(100, len(gallery), dim=64)
dv.scan_top_k(model, u, c, gallery, 10, chunk=chunk)[0].block_until_ready()
faults = []
for _ in range(3):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    dv.scan_top_k(model, u, c, gallery, 10, chunk=chunk)[0].block_until_ready()
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(json.dumps(faults))
"""


@pytest.mark.skipif(
    not os.path.exists("/proc/self/environ")
    or b"MALLOC_" in open("/proc/self/environ", "rb").read(),
    reason="needs Linux and glibc's dynamic malloc thresholds",
)
def test_default_chunk_scan_reuses_its_buffers():
    """A warm scan at the default chunk faults no fresh pages in (the 2^16-row steps faulted
    ~0.3 pages per gallery row, more kernel time than arithmetic); measured in a fresh
    interpreter, the best of three warm scans."""
    import json
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", FAULTS_SCRIPT, os.path.dirname(os.path.dirname(__file__))],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    faults = json.loads(out.stdout.strip().splitlines()[-1])
    assert min(faults) / 50_000 < 0.02, faults


def test_divergence_rejects_bad_input(data):
    anchors, x, y = data
    m = ad.fit("gaussian", anchors, tau=5.0)
    bad = x.copy()
    bad[2, 1] = np.nan
    with pytest.raises(ad.AnchorDivError, match=r"queries: contains NaN or inf .*row 2"):
        ad.divergence(m, bad, y)
    with pytest.raises(ad.AnchorDivError, match="gallery: dimension mismatch"):
        ad.divergence(m, x, np.ones((3, D + 1)))
    with pytest.raises(ad.AnchorDivError, match=r"expected shape \[n, d\]"):
        ad.divergence(m, x, np.ones((3, 2, D)))
    with pytest.raises(ad.AnchorDivError, match="method: unknown"):
        ad.divergence(m, x, y, method="fast")
    with pytest.raises(ad.AnchorDivError, match="model: expected an anchor model"):
        ad.divergence("gaussian", x, y)
    with pytest.raises(ad.AnchorDivError, match=r"k: must be \[1, 37\]"):
        ad.top_k(m, x, y, 38)
    with pytest.raises(ad.AnchorDivError, match="gallery: is empty"):
        ad.top_k(m, x, np.zeros((0, D)), 1)
    inf_gallery = y.copy()
    inf_gallery[30] = np.inf
    with pytest.raises(ad.AnchorDivError, match=r"gallery\[24:32\]: contains NaN"):
        ad.top_k(m, x, inf_gallery, 2, chunk=8)


def test_spherical_rejects_vanishing_projection(data):
    anchors, x, y = data
    m = ad.fit("latent-spherical", anchors, tau=5.0, rank=2)
    u = np.asarray(m.basis)
    ortho = np.linalg.svd(np.eye(D) - u @ u.T)[0][:, 0]  # orthogonal to span(U)
    with pytest.raises(ad.AnchorDivError, match="projection .* vanishes; 1 row"):
        ad.divergence(m, x, np.vstack([y, ortho]))


def test_spherical_check_falls_back_to_the_full_projection(data):
    """A row orthogonal to the leading basis vector only fails the cheap bound: it is valid."""
    anchors, x, y = data
    m = ad.fit("latent-spherical", anchors, tau=5.0, rank=2)
    u = np.asarray(m.basis)
    second = u[:, 1] / np.linalg.norm(u[:, 1])  # ⟨u₁, row⟩ = 0, ‖Uᵀrow‖ = 1
    d = np.asarray(ad.divergence(m, x, np.vstack([y, second])))
    assert np.isfinite(d).all() and d.shape == (len(x), len(y) + 1)
    ortho = np.linalg.svd(np.eye(D) - u @ u.T)[0][:, 0]
    with pytest.raises(ad.AnchorDivError, match="first: row 1\\)"):
        ad.divergence(m, x, np.vstack([second, ortho, second]))
