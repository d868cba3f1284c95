"""The embedding cache's files as a stranger's data (issue 52): planted, copied, edited and
malformed packs, entries and indexes are reported and never used; pruning touches only what the
cache wrote, only in a cache, never under a running embedding; a read-only cache is read."""

import hashlib
import json
import threading
from pathlib import Path

import numpy as np
import pytest

from helpers import png_tree as _tree

from anchordiv import data
from anchordiv.app.cli import main
from anchordiv.data import cache
from anchordiv.errors import AnchorDivError


class Images(data.Encoder):
    """A toy image encoder (6-d): each file's unit vector is seeded by its bytes."""

    id, dim, logit_scale = "toy-img-v1", 6, 10.0

    def encode_image(self, images, batch_size=32, progress=None):
        seeds = [int.from_bytes(hashlib.sha256(Path(p).read_bytes()).digest()[:8]) for p in images]
        self.encoded += len(images)
        x = np.array([np.random.default_rng(s).normal(size=self.dim) for s in seeds], np.float32)
        return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture
def img(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    return Images()


def plant(store, digests, rows, *, signed=True, name="pack-1-1-0000beef", **fields):
    """A pack placed in ``store``: well-formed, ``signed`` with the cache's key (True), another
    cache's ("elsewhere": a pack copied in) or none (False)."""
    rows = np.asarray(rows)
    store.dir.mkdir(parents=True, exist_ok=True)
    np.save(store.dir / f"{name}.npy", rows)
    meta = {
        "format": 2,
        "encoder": store.id,
        "kind": "image",
        "count": len(digests),
        "rows": rows.shape[0],
        "width": rows.shape[-1],
        "dtype": rows.dtype.str,
        "shape": list(rows.shape),
        "sha256": hashlib.sha256(np.ascontiguousarray(rows).tobytes()).hexdigest(),
        "digests": list(digests),
        **fields,
    }
    key = cache.cache_key(store.root) if signed is True else bytes(32)
    if signed and key is not None:
        meta["digest"] = cache.sign(key, meta)
    (store.dir / f"{name}.json").write_text(json.dumps(meta))
    return store.dir / f"{name}.json"


def _unit(n, d, seed=0):
    x = np.random.default_rng(seed).normal(size=(n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


ATTACKS = {
    "constant": lambda n: np.full((n, 6), 1 / np.sqrt(6), np.float32),  # unit-norm, all alike
    "norm-4000": lambda n: 4000 * _unit(n, 6),
    "nan": lambda n: np.full((n, 6), np.nan, np.float32),
    "other-encoder": lambda n: _unit(n, 6, seed=5),
    "wrong-width": lambda n: _unit(n, 24),
}


@pytest.mark.parametrize(
    "signed", [False, "elsewhere", True], ids=["no-digest", "copied", "signed-with-the-key"]
)
@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_planted_pack_never_supplies_the_embeddings(img, tmp_path, attack, signed):
    paths = _tree(tmp_path / "tree", 4)
    real, _ = data.embed_images(img, paths)
    store = cache.ImageStore(img.image_space)
    digests = data.check_images(paths)[1]
    fields = {"encoder": "other-encoder|rgb8-v1"} if attack == "other-encoder" else {}
    plant(store, digests, ATTACKS[attack](4), signed=signed, **fields)
    with pytest.warns(UserWarning, match="ignored, not used"):
        again, _ = data.embed_images(img, paths)
    np.testing.assert_allclose(again, real, atol=1e-6)
    assert again.shape == (4, 6)


def test_a_copied_pack_for_images_never_seen_is_not_used(img, tmp_path):
    paths = _tree(tmp_path / "tree", 3)
    store = cache.ImageStore(img.image_space)
    cache.cache_key(store.root, create=True)
    plant(store, data.check_images(paths)[1], np.full((3, 6), 0.4, np.float32), signed="elsewhere")
    with pytest.warns(UserWarning, match="does not match its digest"):
        x, _ = data.embed_images(img, paths)
    assert img.encoded == 3 and np.ptp(x, axis=0).max() > 0.1, "each image its own row"


def test_nan_or_wrong_width_rows_from_the_encoder_are_refused_before_anything_is_written(
    img, tmp_path
):
    paths = _tree(tmp_path / "tree", 3)
    for bad, match in [(np.nan, "not finite"), (None, "width 6")]:
        img.encode_image = lambda images, batch_size=32, progress=None, bad=bad: (
            np.full((len(images), 6), bad) if bad is not None else _unit(len(images), 24)
        )
        with pytest.raises(AnchorDivError, match=match):
            data.embed_images(img, paths)
        assert not cache.ImageStore(img.image_space).packs()


def test_an_edited_digest_index_gives_no_image_another_ones_embedding(img, tmp_path):
    paths = _tree(tmp_path / "tree", 3)
    real, _ = data.embed_images(img, paths)
    (index,) = (tmp_path / "cache" / "files").glob("*.json")
    meta = json.loads(index.read_text())
    a, b = meta["files"]["img000.png"], meta["files"]["img001.png"]
    a[4], b[4] = b[4], a[4]  # swap the two files' digests
    index.write_text(json.dumps(meta))
    with pytest.warns(UserWarning, match="file-digest index .* edited"):
        again, _ = data.embed_images(img, paths)
    np.testing.assert_allclose(again, real)


@pytest.mark.parametrize(
    "damage",
    [
        "mixed-width",
        "digests-not-a-list",
        "digests-not-strings",
        "space-id-not-a-string",
        "string-pack",
        "index-records",
        "manifest-a-list",
        "truncated-manifest",
    ],
)
def test_malformed_cache_files_give_notes_never_tracebacks(img, tmp_path, damage, capsys):
    paths = _tree(tmp_path / "tree", 4)
    real, _ = data.embed_images(img, paths)
    store = cache.ImageStore(img.image_space)
    digests = data.check_images(paths)[1]
    (pack,) = store.packs()
    if damage == "mixed-width":
        plant(store, digests[:2], _unit(2, 8))
    elif damage == "digests-not-a-list":
        plant(store, digests[:2], _unit(2, 6), name="pack-2-1-0000beef")
        m = store.dir / "pack-2-1-0000beef.json"
        m.write_text(json.dumps({**json.loads(m.read_text()), "digests": 5}))
    elif damage == "digests-not-strings":
        plant(store, [1, 2], _unit(2, 6))
    elif damage == "space-id-not-a-string":
        (store.dir / "space.json").write_text(json.dumps({"id": 5, "kind": "image"}))
    elif damage == "string-pack":
        np.save(pack.with_suffix(".npy"), np.array([["a"] * 6] * 4))
    elif damage == "index-records":
        (index,) = (tmp_path / "cache" / "files").glob("*.json")
        meta = json.loads(index.read_text())
        meta["files"].update({"img000.png": "zz", "img001.png": [1, 2], "img002.png": None})
        index.write_text(json.dumps(meta))
    elif damage == "manifest-a-list":
        pack.write_text("[1, 2]")
    else:
        pack.write_text(pack.read_text()[:40])
    with __import__("warnings").catch_warnings():
        __import__("warnings").simplefilter("ignore")
        again, _ = data.embed_images(img, paths)
        np.testing.assert_allclose(again, real, atol=1e-6)
        assert main(["cache", "show"]) == 0
        assert main(["cache", "show", "--json"]) == 0
        assert main(["cache", "prune", "--older-than", "1000"]) == 0
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err


def test_text_entries_are_checked_too(img, tmp_path):
    from anchordiv.data.cache import cached_embeddings, content_key

    root = tmp_path / "cache"
    rows = _unit(2, 4)
    cached_embeddings("toy", "text", ["a", "b"], lambda: rows, cache=root, unit=True)
    npy = root / "embeddings" / f"{content_key('toy', 'text', ['a', 'b'])}.npy"
    np.save(npy, 4000 * rows)  # another array, and its manifest re-hashed without the key
    meta = json.loads(npy.with_suffix(".json").read_text())
    meta["sha256"] = hashlib.sha256((4000 * rows).tobytes()).hexdigest()
    npy.with_suffix(".json").write_text(json.dumps(meta))
    with pytest.warns(UserWarning, match="corrupt or partial"):
        again = cached_embeddings("toy", "text", ["a", "b"], lambda: rows, cache=root, unit=True)
    np.testing.assert_array_equal(again, rows)
    with pytest.raises(AnchorDivError, match="not unit-norm"):
        cached_embeddings("toy", "text", ["c"], lambda: 2 * rows[:1], cache=root, unit=True)
    assert len(list((root / "embeddings").glob("*.npy"))) == 1, "nothing written for 'c'"


# ---- housekeeping --------------------------------------------------------------------------


def test_prune_all_refuses_a_folder_that_is_not_a_cache(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "work"
    (folder / "data").mkdir(parents=True)
    (folder / "thesis.tex").write_text("\\documentclass{article}")
    (folder / "data" / "x.csv").write_text("a,b\n")
    monkeypatch.setenv(cache.CACHE_ENV, str(folder))
    assert main(["cache", "prune", "--all"]) == 2
    err = capsys.readouterr().err
    assert "not an anchordiv cache" in err and "nothing removed" in err and "Traceback" not in err
    assert (folder / "thesis.tex").exists() and (folder / "data" / "x.csv").exists()
    with pytest.raises(AnchorDivError, match="not an anchordiv cache"):
        cache.prune(folder, older_than_days=0)


def test_prune_all_in_a_cache_removes_only_what_the_cache_wrote(img, tmp_path):
    paths = _tree(tmp_path / "tree", 3)
    data.embed_images(img, paths)
    root = tmp_path / "cache"
    assert (root / cache.MARKER).is_file() and (root / cache.CACHEDIR_TAG).is_file()
    (root / "notes.txt").write_text("mine")
    (root / "images" / "holiday").mkdir()
    (root / "images" / "holiday" / "beach.jpg").write_bytes(b"jpeg")
    store = cache.ImageStore(img.image_space)
    (store.dir / "README").write_text("mine too")
    gone = cache.prune(root, everything=True)
    assert gone and not store.packs()
    assert (root / "notes.txt").exists() and (root / "images" / "holiday" / "beach.jpg").exists()
    assert (store.dir / "README").exists() and (root / cache.MARKER).exists()


def test_prune_removes_the_leftovers_of_killed_writes(img, tmp_path):
    import subprocess
    import sys

    paths = _tree(tmp_path / "tree", 3)
    data.embed_images(img, paths)
    store = cache.ImageStore(img.image_space)
    (real,) = store.packs()
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    dead = child.pid
    leftovers = [
        store.dir / f"pack-5-{dead}-0000abcd.npy",  # array of a write killed before its manifest
        store.dir / f".pack-6-{dead}-0000abce.npy.tmp-{dead}-0a0b",  # a temporary
        store.dir / f"pack-7-{dead}-0000abcf.json",  # a truncated manifest ...
        store.dir / f"pack-7-{dead}-0000abcf.npy",  # ... and its array
    ]
    for p in leftovers:
        p.write_bytes(b"{partial")
    with pytest.warns(UserWarning):  # the truncated manifest is noted by a run
        data.embed_images(img, paths)
    gone = cache.prune(tmp_path / "cache", older_than_days=1000)
    assert sorted(gone) == sorted(leftovers)
    assert not any(p.exists() for p in leftovers) and real.exists()


def test_prune_during_a_run_does_not_lose_the_run(img, tmp_path):
    paths = _tree(tmp_path / "tree", 6)
    go, started, out = threading.Event(), threading.Event(), {}
    real = img.encode_image

    def slow(images, batch_size=32, progress=None):
        started.set()
        assert go.wait(10)
        return real(images, batch_size, progress)

    img.encode_image = slow
    run = threading.Thread(target=lambda: out.update(x=data.embed_images(img, paths)[0]))
    run.start()
    assert started.wait(10)
    with pytest.raises(AnchorDivError, match="in use by a running embedding"):
        cache.prune(tmp_path / "cache", everything=True, wait=0.2)
    go.set()
    run.join(10)
    assert out["x"].shape == (6, 6) and cache.ImageStore(img.image_space).packs()
    assert cache.prune(tmp_path / "cache", everything=True, wait=0.2)


def test_a_read_only_cache_is_used_read_only(img, tmp_path, monkeypatch):
    paths = _tree(tmp_path / "tree", 3)
    first, _ = data.embed_images(img, paths[:2])

    def refused(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(cache, "_write_entry", refused)
    with pytest.warns(UserWarning, match="read-only"):
        x, _ = data.embed_images(img, paths)
    np.testing.assert_allclose(x[:2], first)
    assert img.encoded == 3 and len(cache.ImageStore(img.image_space).packs()) == 1
    with pytest.warns(UserWarning, match="read-only"):
        t = data.embed_texts(TextToy(), ["a", "b"])
    assert t.shape == (2, 3)


READ_ONLY_SCRIPT = """
import hashlib, os, sys, warnings
from pathlib import Path
import numpy as np
from anchordiv import data

class Images(data.Encoder):
    id, dim, logit_scale = "toy-img-v1", 6, 10.0

    def encode_image(self, images, batch_size=32, progress=None):
        self.encoded = getattr(self, "encoded", 0) + len(images)
        seeds = [int.from_bytes(hashlib.sha256(Path(p).read_bytes()).digest()[:8]) for p in images]
        x = np.array([np.random.default_rng(s).normal(size=6) for s in seeds], np.float32)
        return x / np.linalg.norm(x, axis=1, keepdims=True)

paths = sorted(Path(sys.argv[1]).rglob("*.png"))
from PIL import Image  # everything imported before the drop: the interpreter lives under /root

Image.init()
if os.getuid() == 0:  # modes do not stop root: drop to nobody
    os.setgid(65534)
    os.setuid(65534)
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    x, _ = data.embed_images(Images(), paths)
notes = [str(w.message) for w in seen if "read-only" in str(w.message)]
print(len(x), len(notes), notes[0].split(":")[0] if notes else "")
"""


def test_a_cache_the_user_cannot_write_is_read_not_written(img, monkeypatch):
    """The same as a real user: the cache and its files made read-only with chmod, used by a
    process that cannot write there (as root, whom modes do not stop, the process drops to
    ``nobody`` once its imports are done)."""
    import os
    import stat
    import subprocess
    import sys
    import tempfile

    shared = Path(tempfile.mkdtemp(prefix="anchordiv-ro-"))  # traversable by nobody
    try:
        monkeypatch.setenv(cache.CACHE_ENV, str(shared / "cache"))
        paths = _tree(shared / "tree", 3)
        first, _ = data.embed_images(img, paths[:2])
        before = sorted(p.relative_to(shared) for p in (shared / "cache").rglob("*"))
        for p in [shared, *shared.rglob("*")]:
            p.chmod(p.stat().st_mode & ~0o222 | (0o555 if p.is_dir() else 0o444))
        root = Path(__file__).resolve().parents[2]
        env = {
            **os.environ,
            "HOME": str(shared),
            "PYTHONPATH": str(root / "src"),
            "JAX_PLATFORMS": "cpu",
        }
        run = subprocess.run(
            [sys.executable, "-c", READ_ONLY_SCRIPT, str(shared / "tree")],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            cwd=shared,
        )
        assert run.returncode == 0, run.stderr[-2000:]
        assert run.stdout.split()[:2] == ["3", "1"], run.stdout + run.stderr[-2000:]
        assert sorted(p.relative_to(shared) for p in (shared / "cache").rglob("*")) == before
    finally:
        for p in [shared, *shared.rglob("*")]:
            p.chmod(p.stat().st_mode | stat.S_IWUSR)
        import shutil

        shutil.rmtree(shared, ignore_errors=True)


class TextToy(data.Encoder):
    id, dim, logit_scale = "toy-text", 3, 10.0

    def _text_batch(self, texts):
        return np.ones((len(texts), 3), np.float32)


def test_a_cache_path_that_is_a_file_names_the_variable(tmp_path, monkeypatch):
    (tmp_path / "f").write_text("")
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "f"))
    with pytest.raises(AnchorDivError, match=r"\$ANCHORDIV_CACHE = .* is a file"):
        data.embed_texts(TextToy(), ["a"])


@pytest.mark.parametrize("signed", [True, "elsewhere"], ids=["signed-with-the-key", "copied"])
def test_embed_never_writes_a_planted_packs_wrong_width(
    tmp_path, monkeypatch, capsys, tiny_clip, skimage_files, signed
):
    """Issue 52: a 24-d pack under a smaller model: `anchordiv embed` exited 0 and wrote 24-d
    rows.  Now the pack is reported and the model's own rows are written."""
    import shutil

    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    name, ckpt, _ = tiny_clip
    folder = tmp_path / "imgs"
    folder.mkdir()
    for p in skimage_files:
        shutil.copy(p, folder / p.name)
    args = ["embed", str(folder), "--encoder", f"open_clip:{name}", "--pretrained", str(ckpt)]
    assert main([*args, "-o", str(tmp_path / "a.npy")]) == 0
    real = np.load(tmp_path / "a.npy")
    enc = data.get_encoder(f"open_clip:{name}", ckpt)
    store = cache.ImageStore(enc.image_space, tmp_path / "cache")
    digests = data.check_images(sorted(folder.iterdir()))[1]
    for p in store.packs():
        p.unlink()  # only the planted pack is left
    plant(store, digests, _unit(len(digests), 24), signed=signed)
    with pytest.warns(UserWarning, match="ignored, not used"):
        assert main([*args, "-o", str(tmp_path / "b.npy")]) == 0
    again = np.load(tmp_path / "b.npy")
    assert again.shape == real.shape == (4, enc.dim)
    np.testing.assert_allclose(again, real, atol=1e-5)
    assert "Traceback" not in capsys.readouterr().err


# ---- flushing and dead workers ---------------------------------------------------------------


def test_packs_are_flushed_by_time_as_well_as_by_count(img, tmp_path, monkeypatch):
    paths = _tree(tmp_path / "tree", 6)
    monkeypatch.setattr(cache, "PACK_ROWS", 1000)
    monkeypatch.setattr(cache, "PACK_SECONDS", 0.0)  # every batch is due
    data.embed_images(img, paths, batch_size=2)
    assert len(cache.ImageStore(img.image_space).packs()) == 3
    monkeypatch.setattr(cache, "PACK_SECONDS", 3600.0)
    data.embed_images(img, _tree(tmp_path / "more", 6, start=6), batch_size=2)
    assert len(cache.ImageStore(img.image_space).packs()) == 4, "one pack at the end"


def test_a_dead_worker_is_a_clear_error_and_what_was_encoded_is_kept(img, tmp_path, monkeypatch):
    paths = _tree(tmp_path / "tree", 6)
    real = img.iter_image_batches

    def dies(paths, batch_size=32, workers=0):
        for i, batch in enumerate(real(paths, batch_size, workers)):
            if i == 2:
                raise RuntimeError("DataLoader worker (pid(s) 4242) exited unexpectedly")
            yield batch

    monkeypatch.setattr(img, "iter_image_batches", dies)
    with pytest.raises(
        AnchorDivError, match="worker process died .* 4 image.* stored in the cache"
    ):
        data.embed_images(img, paths, batch_size=2)
    monkeypatch.undo()
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    before = img.encoded
    data.embed_images(img, paths, batch_size=2)
    assert img.encoded - before == 2, "the 4 images encoded before the crash are not encoded again"


def test_a_broken_marker_is_replaced_and_the_cache_goes_on(img, tmp_path):
    paths = _tree(tmp_path / "tree", 3)
    data.embed_images(img, paths)
    marker = tmp_path / "cache" / cache.MARKER
    marker.write_text('{"format": "anchordiv-cache", "key": "trunc')
    with pytest.warns(UserWarning, match="does not match its digest"):
        data.embed_images(img, paths)  # the old packs no longer verify: encoded again, once
    assert cache.cache_key(tmp_path / "cache") is not None and img.encoded == 6
    with pytest.warns(UserWarning, match="prune --older-than DAYS"):
        data.embed_images(img, paths)
    assert img.encoded == 6
    gone = cache.prune(tmp_path / "cache", older_than_days=1000)
    assert len(gone) == 2 and len(cache.ImageStore(img.image_space).packs()) == 1
    with __import__("warnings").catch_warnings():
        __import__("warnings").simplefilter("error")
        data.embed_images(img, paths)  # no note left, nothing encoded
    assert img.encoded == 6
