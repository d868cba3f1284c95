"""JAX sharding over a device mesh: 4 forced CPU devices (in a subprocess, since the device
count is fixed when JAX starts) give the single-device top-k."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import numpy as np
import pytest
from jax.sharding import Mesh

import anchordiv as ad
from helpers import clustered_anchors, make_model, unit

SCRIPT = textwrap.dedent("""
    import sys
    import jax
    jax.config.update("jax_enable_x64", True)
    import numpy as np
    from jax.sharding import Mesh
    import anchordiv as ad
    from helpers import clustered_anchors, make_model, unit

    assert len(jax.devices()) == 4, jax.devices()
    rng = np.random.default_rng(40)
    x, y = unit(rng, 7, 6), unit(rng, 37, 6)          # 37 rows: padded on every device
    np.save(sys.argv[1], y)
    memmap = np.load(sys.argv[1], mmap_mode="r")
    line = Mesh(np.array(jax.devices()), ("gallery",))
    grid = Mesh(np.array(jax.devices()).reshape(2, 2), ("hosts", "gpus"))
    for kind in ("softmax", "gaussian", "mix"):
        model = make_model(kind, clustered_anchors(rng, 40, 6))
        for k in (5, 37):
            want_i, want_d = ad.top_k(model, x, y, k)
            runs = [ad.top_k(model, x, memmap, k, mesh=line, chunk=4),
                    ad.top_k(model, x, y, k, mesh=grid),
                    ad.top_k(model, x, y, k, mesh=grid, axis="gpus", chunk=8),
                    ad.GalleryIndex(model, memmap, mesh=line).top_k(x, k, chunk=4)]
            for idx, div in runs:
                np.testing.assert_array_equal(idx, want_i)
                np.testing.assert_allclose(div, want_d, rtol=1e-12, atol=1e-12)
    index = ad.GalleryIndex(model, y, mesh=line)
    index.top_k(x, 3, chunk=4)
    assert index.sharded.shape == (48, 7)    # 4 devices x 3 steps x 4 rows, keys [v, psi]
    assert len(index.sharded.addressable_shards) == 4
    print("ok")
""")


@pytest.mark.timeout(300)
def test_four_device_mesh_equals_single_device(tmp_path):
    tests = Path(__file__).resolve().parents[1]
    src = tests.parent / "src"
    env = {
        **os.environ,
        "XLA_FLAGS": "--xla_force_host_platform_device_count=4",
        "JAX_PLATFORMS": "cpu",
        "PYTHONPATH": os.pathsep.join([str(src), str(tests), os.environ.get("PYTHONPATH", "")]),
    }
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "g.npy")],
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert run.returncode == 0 and run.stdout.strip().endswith("ok"), run.stderr[-3000:]


def test_one_device_mesh_and_bad_mesh():
    rng = np.random.default_rng(41)
    x, y = unit(rng, 3, 5), unit(rng, 20, 5)
    model = make_model("gaussian", clustered_anchors(rng, 30, 5))
    mesh = Mesh(np.array(jax.devices()[:1]), ("gallery",))
    want = ad.top_k(model, x, y, 4)
    got = ad.top_k(model, x, y, 4, mesh=mesh)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-12)
    with pytest.raises(ad.AnchorDivError, match="mesh: expected a jax.sharding.Mesh"):
        ad.top_k(model, x, y, 4, mesh="gpu")
    with pytest.raises(ad.AnchorDivError, match=r"axis: \['rows'\] not among the mesh axes"):
        ad.GalleryIndex(model, y, mesh=mesh, axis="rows")
