"""The embedding cache: hits avoid re-encoding (counted), corrupt entries are rebuilt."""

import json
from pathlib import Path

import numpy as np
import pytest

from helpers import png_tree as _tree

from anchordiv import data
from anchordiv.data import cache
from anchordiv.errors import AnchorDivError


class CountingEncoder(data.Encoder):
    """A deterministic toy encoder (hash-seeded vectors) that counts what it encodes."""

    id, dim, logit_scale = "toy-v1", 8, 10.0

    def _text_batch(self, texts):
        return np.stack([np.random.default_rng(len(t)).normal(size=self.dim) for t in texts])


@pytest.fixture
def enc(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path))
    return CountingEncoder()


def test_cache_dir_env_override(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "c"))
    assert cache.cache_dir() == tmp_path / "c"


def test_second_run_hits_cache(enc):
    texts = ["alpha", "beta gamma", "delta"]
    a = data.embed_texts(enc, texts)
    assert enc.encoded == 3
    b = data.embed_texts(enc, texts)
    assert enc.encoded == 3, "a cache hit must not re-encode"
    np.testing.assert_array_equal(a, b)
    assert a.dtype == np.float32 and a.shape == (3, 8)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1, rtol=1e-6)


def test_key_depends_on_encoder_and_inputs(enc):
    data.embed_texts(enc, ["alpha", "beta"])
    data.embed_texts(enc, ["beta", "alpha"])  # order matters
    data.embed_texts(enc, ["alpha", "beta", ""])  # content matters
    assert enc.encoded == 7
    enc.id = "toy-v2"
    data.embed_texts(enc, ["alpha", "beta"])
    assert enc.encoded == 9
    assert cache.content_key("a", "text", ["bc"]) != cache.content_key("a", "text", ["b", "c"])


@pytest.mark.parametrize("damage", ["truncate", "delete", "flip", "manifest"])
def test_corrupt_entry_is_detected_and_rebuilt(enc, tmp_path, damage):
    texts = ["alpha", "beta"]
    a = data.embed_texts(enc, texts)
    npy = next((tmp_path / "embeddings").glob("*.npy"))
    if damage == "truncate":
        npy.write_bytes(npy.read_bytes()[:-7])
    elif damage == "delete":
        npy.unlink()
    elif damage == "flip":
        raw = bytearray(npy.read_bytes())
        raw[-1] ^= 0xFF
        npy.write_bytes(bytes(raw))
    else:
        npy.with_suffix(".json").write_text("{not json")
    with pytest.warns(UserWarning, match="corrupt or partial"):
        b = data.embed_texts(enc, texts)
    assert enc.encoded == 4
    np.testing.assert_array_equal(a, b)
    data.embed_texts(enc, texts)  # rebuilt entry is good again
    assert enc.encoded == 4
    assert json.loads(npy.with_suffix(".json").read_text())["count"] == 2


def test_partial_write_without_manifest_is_a_miss(enc, tmp_path):
    key = cache.content_key(enc.id, "text", ["x"])
    (tmp_path / "embeddings").mkdir()
    np.save(tmp_path / "embeddings" / f"{key}.npy", np.zeros((1, 8), np.float32))
    data.embed_texts(enc, ["x"])
    assert enc.encoded == 1


def test_cache_false_and_explicit_dir(enc, tmp_path):
    data.embed_texts(enc, ["a"], cache=False)
    data.embed_texts(enc, ["a"], cache=False)
    assert enc.encoded == 2
    d = tmp_path / "elsewhere"
    data.embed_texts(enc, ["a"], cache=d)
    data.embed_texts(enc, ["a"], cache=d)
    assert enc.encoded == 3 and any((d / "embeddings").glob("*.json"))


@pytest.mark.parametrize(
    "texts, match", [([], "empty"), ("a string", "single string"), (["ok", 3], "item 1 is a int")]
)
def test_bad_texts(enc, texts, match):
    with pytest.raises(AnchorDivError, match=match):
        data.embed_texts(enc, texts)


def test_the_command_line_keeps_compiled_programs_unless_told_not_to(tmp_path, monkeypatch):
    import jax

    from anchordiv.data import cache as cache_mod

    before = jax.config.jax_compilation_cache_dir
    monkeypatch.setenv(cache_mod.XLA_CACHE_ENV, "0")
    assert cache_mod.use_compilation_cache(tmp_path / "xla") is None
    assert jax.config.jax_compilation_cache_dir == before
    monkeypatch.setenv(cache_mod.XLA_CACHE_ENV, "1")
    try:
        if before:  # a directory the user chose is kept
            assert cache_mod.use_compilation_cache(tmp_path / "xla") == Path(before)
        else:
            assert cache_mod.use_compilation_cache(tmp_path / "xla") == tmp_path / "xla"
            assert jax.config.jax_compilation_cache_dir == str(tmp_path / "xla")
    finally:
        jax.config.update("jax_compilation_cache_dir", before)


# ---- per-file image embeddings --------------------------------------------------------------


class CountingImages(data.Encoder):
    """A toy image encoder: each file's vector is seeded by its bytes; counts what it encodes."""

    id, dim, logit_scale = "toy-img-v1", 6, 10.0

    def encode_image(self, images, batch_size=32, progress=None):
        seeds = [int.from_bytes(Path(p).read_bytes()[-8:], "little") for p in images]
        self.encoded += len(images)
        return np.array([np.random.default_rng(s).normal(size=self.dim) for s in seeds], np.float32)


@pytest.fixture
def img(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    return CountingImages()


def test_adding_one_image_encodes_one(img, tmp_path):
    paths = _tree(tmp_path / "tree", 6)
    a, kept = data.embed_images(img, paths)
    assert img.encoded == 6 and kept == [str(p) for p in paths]
    paths += _tree(tmp_path / "tree", 1, start=6)
    b, _ = data.embed_images(img, paths)
    assert img.encoded == 7, "one new image: one encode"
    np.testing.assert_array_equal(a, b[:6])


def test_subset_superset_reordering_and_moved_copy_encode_only_what_is_new(img, tmp_path):
    import shutil

    paths = _tree(tmp_path / "tree", 5)
    full, _ = data.embed_images(img, paths)
    sub, _ = data.embed_images(img, paths[3:0:-1])  # a reordered subset
    np.testing.assert_array_equal(sub, full[3:0:-1])
    shutil.copytree(tmp_path / "tree", tmp_path / "moved")
    moved = sorted((tmp_path / "moved").glob("*.png")) + _tree(tmp_path / "moved", 2, start=5)
    again, _ = data.embed_images(img, moved)
    assert img.encoded == 7, "the moved copy encodes only its two new images"
    np.testing.assert_array_equal(again[:5], full)
    assert cache.STATS["image_hits"] >= 8


def test_small_then_full_encodes_only_the_difference(img, tmp_path):
    paths = _tree(tmp_path / "tree", 8)
    data.embed_images(img, paths[::3])
    assert img.encoded == 3
    data.embed_images(img, paths)
    assert img.encoded == 8


def test_edited_image_and_other_encoder_reencode(img, tmp_path):
    from PIL import Image

    paths = _tree(tmp_path / "tree", 3)
    data.embed_images(img, paths)
    Image.new("RGB", (5, 4), (200, 1, 1)).save(paths[0])
    data.embed_images(img, paths)
    assert img.encoded == 4
    img.id = "toy-img-v2"  # other weights
    data.embed_images(img, paths)
    assert img.encoded == 7


def test_kill_and_corrupt_pack_lose_nothing_else(img, tmp_path):
    paths = _tree(tmp_path / "tree", 4)
    a, _ = data.embed_images(img, paths)
    store = cache.ImageStore(img.image_space)
    (pack,) = store.packs()
    # a kill between the array and the manifest: an array without a manifest is ignored
    np.save(store.dir / "pack-0-1-deadbeef.npy", np.zeros((4, 6), np.float32))
    raw = bytearray(pack.with_suffix(".npy").read_bytes())
    raw[-1] ^= 0xFF
    pack.with_suffix(".npy").write_bytes(bytes(raw))
    with pytest.warns(UserWarning, match="corrupt or partial"):
        b, _ = data.embed_images(img, paths)
    assert img.encoded == 8 and not pack.exists()
    np.testing.assert_allclose(a, b)
    data.embed_images(img, paths)
    assert img.encoded == 8


def test_two_writers_at_once_only_add_packs(img, tmp_path):
    paths = _tree(tmp_path / "tree", 4)
    digests = data.check_images(paths)[1]
    one, two = cache.ImageStore(img.image_space), cache.ImageStore(img.image_space)
    rows = np.eye(6, dtype=np.float32)[:4]
    one.add(digests[:3], rows[:3])
    two.add(digests[1:], rows[1:] + 1e-5)  # overlaps, agreeing: either copy is read
    x, found = cache.ImageStore(img.image_space).lookup(digests)
    assert found.all() and len(one.packs()) == 2
    np.testing.assert_allclose(x, rows, atol=1e-4)


def test_digest_shortcut_trusts_only_unchanged_settled_files(tmp_path, monkeypatch):
    import os

    from anchordiv.data import imageio

    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    paths = _tree(tmp_path / "tree", 2)
    old = 1_000_000_000
    for p in paths:
        os.utime(p, ns=(old, old))
    calls = []
    real = imageio._digest_and_check
    monkeypatch.setattr(
        imageio, "_digest_and_check", lambda p, **kw: calls.append(p) or real(p, **kw)
    )
    first, _ = imageio.file_digests(paths)
    second, _ = imageio.file_digests(paths)
    assert len(calls) == 2 and first == second, "settled, unchanged files are hashed once"
    from PIL import Image

    Image.new("RGB", (5, 4), (9, 9, 9)).save(paths[0])
    os.utime(paths[0], ns=(old, old))  # same mtime restored: the ctime still tells
    third, _ = imageio.file_digests(paths)
    assert len(calls) == 3 and third[0] != first[0] and third[1] == first[1]


def test_cache_show_and_prune(img, tmp_path, capsys):
    from anchordiv.app.cli import main

    data.embed_images(img, _tree(tmp_path / "tree", 3))
    data.embed_texts(CountingEncoder(), ["a"])
    assert main(["cache", "show"]) == 0
    out = capsys.readouterr().out
    assert "toy-img-v1" in out and "3 images" in out
    assert main(["cache", "prune", "--encoder", "toy-img", "--dry-run"]) == 0
    assert cache.ImageStore(img.image_space).packs()
    assert main(["cache", "prune", "--encoder", "toy-img"]) == 0
    assert not cache.ImageStore(img.image_space).packs()
    assert main(["cache", "prune"]) == 2
    assert "say what to remove" in capsys.readouterr().err


def test_a_killed_run_keeps_the_packs_it_wrote(img, tmp_path, monkeypatch):
    paths = _tree(tmp_path / "tree", 9)
    monkeypatch.setattr(cache, "PACK_ROWS", 2)
    real, calls = img.encode_image, []

    def dies_on_the_third_batch(images, batch_size=32, progress=None):
        calls.append(len(images))
        if len(calls) == 3:
            raise KeyboardInterrupt  # a kill between batches
        return real(images, batch_size, progress)

    monkeypatch.setattr(img, "encode_image", dies_on_the_third_batch)
    with pytest.raises(KeyboardInterrupt):
        data.embed_images(img, paths, batch_size=2)
    monkeypatch.setattr(img, "encode_image", real)
    before = img.encoded
    data.embed_images(img, paths, batch_size=2)
    assert img.encoded - before == 5, "the 4 images stored before the kill are not encoded again"


def test_two_runs_at_once_both_finish_and_share_their_work(img, tmp_path):
    import threading

    paths = _tree(tmp_path / "tree", 12)
    out, errors = {}, []

    def run(name, rows):
        try:
            out[name] = data.embed_images(img, [paths[i] for i in rows], batch_size=3)[0]
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=run, args=a) for a in [("a", range(8)), ("b", range(4, 12))]]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    np.testing.assert_allclose(out["a"][4:], out["b"][:4])
    x, found = cache.ImageStore(img.image_space).lookup(data.check_images(paths)[1])
    assert found.all()
    before = img.encoded
    data.embed_images(img, paths)
    assert img.encoded == before
