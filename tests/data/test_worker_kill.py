"""The image pipeline under kills (issues 51 and 52): a worker killed mid-run is a clear error
that keeps the packs written so far; a run killed with SIGKILL leaves no process alive (its
workers and their server die with it) and keeps its flushed packs.  Each case runs a small
script on a tiny open_clip model and a tree of small images, bounded in time."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import anchordiv

psutil = pytest.importorskip("psutil")
pytest.importorskip("open_clip")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG"),
]

SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, time
    from pathlib import Path

    import jax  # noqa: F401 - as a study: the workers come from a forkserver
    import numpy as np
    from PIL import Image

    from anchordiv import data
    from anchordiv.data import cache, imageio

    sys.path.insert(0, sys.argv[4])
    from image_trees import save_tiny_clip

    mode, folder, root = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    imageio.MIN_WORKER_IMAGES = 8
    cache.PACK_ROWS, cache.PACK_SECONDS = 1000, 0.5  # flushed by time
    config, ckpt = save_tiny_clip(folder)
    tree = folder / "tree"
    tree.mkdir()
    rng = np.random.default_rng(0)
    for i in range(96):
        Image.fromarray(rng.integers(0, 255, (24, 24, 3), np.uint8)).save(tree / f"{i:03d}.png")
    enc = data.get_encoder(f"open_clip:{config}", ckpt)
    real, batches = enc.model.encode_image, []

    def slow(pixels, *a, **k):
        batches.append(1)
        if mode == "crash" and len(batches) == 6:
            from multiprocessing import forkserver

            server = psutil.Process(forkserver._forkserver._forkserver_pid)
            for worker in server.children():
                os.kill(worker.pid, signal.SIGKILL)
        time.sleep(0.25)
        return real(pixels, *a, **k)

    import psutil

    enc.model.encode_image = slow
    print("encoding", flush=True)
    try:
        data.embed_images(enc, sorted(tree.glob("*.png")), batch_size=4, workers=2, cache=root)
    except data.encoders.AnchorDivError as err:
        print("ERROR", err, flush=True)
        sys.exit(3)
    print("done", flush=True)
    """
)


def _start(tmp_path, mode):
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    src = str(Path(anchordiv.__file__).parents[1])
    tests = str(Path(__file__).parents[1])
    env = {**os.environ, "PYTHONPATH": src, "ANCHORDIV_XLA_CACHE": "0"}
    args = [sys.executable, str(script), mode, str(tmp_path), str(tmp_path / "cache"), tests]
    return subprocess.Popen(
        args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _packs(tmp_path):
    return list((tmp_path / "cache").glob("images/*/pack-*.json"))


def _alive(pids):
    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            pass
    return out


def test_a_killed_run_leaves_no_process_and_keeps_its_packs(tmp_path):
    run, pids = _start(tmp_path, "kill"), []
    try:
        deadline, family = time.monotonic() + 120, []
        while time.monotonic() < deadline and run.poll() is None:
            family = psutil.Process(run.pid).children(recursive=True)
            if len(family) >= 3 and _packs(tmp_path):  # server and workers up, a pack flushed
                break
            time.sleep(0.1)
        assert run.poll() is None and len(family) >= 3, run.communicate()[1][-2000:]
        pids = [p.pid for p in psutil.Process(run.pid).children(recursive=True)]
        os.kill(run.pid, signal.SIGKILL)
        run.wait(10)
        deadline = time.monotonic() + 10
        while _alive(pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(pids), f"still running 10 s after the kill: {_alive(pids)}"
        assert _packs(tmp_path), "the packs flushed before the kill are kept"
    finally:
        if run.poll() is None:
            run.kill()
        for pid in _alive(pids):  # what this test started and a failure left behind
            os.kill(pid, signal.SIGKILL)


def test_a_killed_worker_is_a_clear_error_that_keeps_the_packs(tmp_path):
    run = _start(tmp_path, "crash")
    try:
        out, err = run.communicate(timeout=180)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 3, err[-2000:]
    assert "image-decoding worker process died" in out and "stored in the cache" in out
    assert "Traceback" not in err
    assert _packs(tmp_path), "what was encoded before the crash is stored"
