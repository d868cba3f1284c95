"""The embedding cache: hits avoid re-encoding (counted), corrupt entries are rebuilt."""

import json
from pathlib import Path

import numpy as np
import pytest

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
    e = CountingEncoder()
    return e


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
