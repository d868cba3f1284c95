"""open_clip end to end with a tiny model: images and text encode, a saved checkpoint reloads
identically with its own logit scale, unreadable images are reported by name."""

import numpy as np
import pytest
from PIL import Image

from anchordiv import data
from anchordiv.data import encoders
from anchordiv.errors import AnchorDivError

from .conftest import TINY_LOGIT_SCALE


@pytest.fixture(scope="module")
def reloaded(tiny_clip):
    name, ckpt, _ = tiny_clip
    return data.get_encoder(f"open_clip:{name}", pretrained=ckpt)


def test_checkpoint_reloads_identically(tiny_clip, reloaded, skimage_files):
    _, _, original = tiny_clip
    texts = ["a photo of a cat.", "a rocket on the launch pad."]
    np.testing.assert_array_equal(original.encode_text(texts), reloaded.encode_text(texts))
    a = original.encode_image(skimage_files)
    b = reloaded.encode_image(skimage_files, batch_size=3)
    np.testing.assert_allclose(a, b, atol=1e-6)
    assert a.shape == (4, 32) and a.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1, rtol=1e-5)
    assert reloaded.logit_scale == pytest.approx(TINY_LOGIT_SCALE)
    assert reloaded.dim == 32 and reloaded.id.startswith("open_clip:anchordiv-tiny:sha256-")
    assert data.get_encoder(f"open_clip:{tiny_clip[0]}", pretrained=tiny_clip[1]) is reloaded


def test_image_inputs_paths_pil_arrays(reloaded, skimage_files):
    import skimage.data

    arr = skimage.data.chelsea()
    from_path = reloaded.encode_image(skimage_files[:1])
    np.testing.assert_allclose(reloaded.encode_image([arr]), from_path, atol=1e-6)
    np.testing.assert_allclose(reloaded.encode_image([Image.fromarray(arr)]), from_path, atol=1e-6)
    gray = reloaded.encode_image([skimage.data.camera()])
    assert gray.shape == (1, 32)


def test_embed_images_cache_and_bad_files(reloaded, skimage_files, tmp_path):
    bad = tmp_path / "broken.png"
    bad.write_bytes(b"\x89PNG not really")
    files = [skimage_files[0], bad, skimage_files[1]]
    with pytest.raises(AnchorDivError, match="1 of 3 image.*broken.png: not an image"):
        data.embed_images(reloaded, files, cache=tmp_path / "c")
    before = reloaded.encoded
    with pytest.warns(UserWarning, match="skipped 1 unreadable.*broken.png"):
        emb, kept = data.embed_images(reloaded, files, cache=tmp_path / "c", on_error="skip")
    assert emb.shape == (2, 32) and kept == [str(skimage_files[0]), str(skimage_files[1])]
    with pytest.warns(UserWarning):
        again, _ = data.embed_images(reloaded, files, cache=tmp_path / "c", on_error="skip")
    assert reloaded.encoded == before + 2, "second run must come from the cache"
    np.testing.assert_array_equal(emb, again)
    with pytest.raises(AnchorDivError, match="none of the 1 file"):
        data.embed_images(reloaded, [bad], on_error="skip")
    with pytest.raises(AnchorDivError, match="on_error"):
        data.readable_images(files, on_error="ignore")
    with pytest.raises(AnchorDivError, match="empty"):
        reloaded.encode_image([])


def test_load_errors_and_chexzero_preprocessing(tiny_clip, tmp_path):
    name, ckpt, _ = tiny_clip
    with pytest.raises(AnchorDivError, match="checkpoint file not found"):
        encoders.OpenCLIPEncoder(name, str(tmp_path / "missing.pt"))
    enc = encoders.OpenCLIPEncoder(
        name,
        str(ckpt),
        image_mean=encoders.CHEXZERO_MEAN,
        image_std=encoders.CHEXZERO_STD,
        image_interpolation="bicubic",
        image_resize_mode="longest",
    )
    norm = [t for t in enc.preprocess.transforms if type(t).__name__ == "Normalize"][0]
    assert norm.mean[0] == pytest.approx(101.48761 / 255)
    assert norm.std[0] == pytest.approx(83.43944 / 255)


@pytest.mark.slow
def test_chexzero_layout_checkpoint_loads(tmp_path, skimage_files):
    """A full-size ViT-B-32-quickgelu state dict (CheXzero saves OpenAI-CLIP key names, which
    open_clip's built-in text tower shares) loads through get_encoder("chexzero")."""
    import math
    import warnings

    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = encoders.OpenCLIPEncoder("ViT-B-32-quickgelu", random_weights=True)
    with torch.no_grad():
        base.model.logit_scale.fill_(math.log(100.0))
    ckpt = tmp_path / "best_64_5e-05_original_22000_0.864.pt"
    torch.save(base.model.state_dict(), ckpt)
    enc = data.get_encoder("chexzero", pretrained=ckpt)
    assert enc.id.startswith("open_clip:chexzero:sha256-") and enc.dim == 512
    assert enc.logit_scale == pytest.approx(100.0)
    np.testing.assert_allclose(
        enc.encode_text(["no pleural effusion"]),
        base.encode_text(["no pleural effusion"]),
        atol=1e-5,
    )
    assert enc.encode_image(skimage_files[:1]).shape == (1, 512)


def test_checkpoint_mistakes_are_named(tiny_clip, tmp_path):
    """A pickled whole model, a garbage file, weights of another architecture, a folder, a
    typo'd config name, no weights: one plain AnchorDivError each, nothing unpickled."""
    import json

    import open_clip
    import torch

    from .conftest import TINY

    name, ckpt, enc = tiny_clip
    whole = tmp_path / "whole.pt"
    torch.save(enc.model, whole)  # the whole module pickled, not its state dict
    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"\x00garbage" * 50)
    other = dict(TINY, vision_cfg=dict(TINY["vision_cfg"], width=128))
    (tmp_path / "anchordiv-other.json").write_text(json.dumps(other))
    open_clip.add_model_config(str(tmp_path / "anchordiv-other.json"))
    cases = [
        (name, whole, "is a pickled Python object.*weights_only=True"),
        (name, junk, "is not a PyTorch checkpoint"),
        ("anchordiv-other", ckpt, "do not fit the architecture 'anchordiv-other'"),
        (name, tmp_path, "is a folder; pass the checkpoint file in it"),
        (name, None, "has no weights: pass --pretrained.*--random-weights"),
    ]
    for model, pretrained, match in cases:
        with pytest.raises(AnchorDivError, match=match):
            encoders.OpenCLIPEncoder(model, None if pretrained is None else str(pretrained))
    with pytest.raises(AnchorDivError, match=r"no model 'x\.jsn' \(a model config file") as err:
        encoders.OpenCLIPEncoder("x.jsn", str(ckpt))
    assert len(str(err.value)) < 300, "names the closest models, not all of them"


def test_config_contents_key_the_encoder(tmp_path):
    """An edited model config under the same file name (quick_gelu flipped) is a new encoder
    (a new id: its images are encoded afresh), not the cached one; whitespace alone is not."""
    import json

    from .conftest import TINY

    config = tmp_path / "anchordiv-edited.json"
    config.write_text(json.dumps(TINY))
    first = data.get_encoder(f"open_clip:{config}", random_weights=True)
    config.write_text(json.dumps(TINY, indent=2))
    assert data.get_encoder(f"open_clip:{config}", random_weights=True) is first
    config.write_text(json.dumps(dict(TINY, quick_gelu=False)))
    edited = data.get_encoder(f"open_clip:{config}", random_weights=True)
    assert edited is not first and edited.id != first.id
    assert "+cfg-sha256-" in first.id and first.id.split(":")[1].startswith("anchordiv-edited")
    assert first.image_space != edited.image_space
    texts = ["a photo of a cat."]
    assert not np.allclose(first.encode_text(texts), edited.encode_text(texts), atol=1e-7)


def test_random_weights_follow_the_seed(tmp_path):
    """--random-weights draws the same weights from the same --seed in every call (so a rerun
    finds its embeddings in the cache), other weights from another seed."""
    import json

    from .conftest import TINY

    config = tmp_path / "anchordiv-seeded.json"
    config.write_text(json.dumps(TINY))
    spec = f"open_clip:{config}"
    a = data.get_encoder(spec, random_weights=True, seed=3)
    encoders._load.cache_clear()  # as a new process would
    b = data.get_encoder(spec, random_weights=True, seed=3)
    c = data.get_encoder(spec, random_weights=True, seed=4)
    assert a is not b and a.id == b.id and "init-sha256-" in a.id
    assert c.id != a.id
    with pytest.raises(AnchorDivError, match="seed"):
        data.get_encoder(spec, random_weights=True, seed=-1)


def test_config_mistakes_are_named(tmp_path):
    """A top-level preprocess_cfg, or any key the model does not take, is named as the
    config's fault (not blamed on weights) before anything loads."""
    import json

    from .conftest import TINY

    cases = [
        ({"preprocess_cfg": {"mean": [0.5] * 3}}, "top-level preprocess_cfg.*remove it"),
        ({"vison_dropout": 0.1}, "key\\(s\\) vison_dropout that an open_clip model does not take"),
    ]
    for extra, match in cases:
        config = tmp_path / "anchordiv-bad.json"
        config.write_text(json.dumps(dict(TINY, **extra)))
        with pytest.raises(AnchorDivError, match=match):
            data.get_encoder(f"open_clip:{config}", pretrained=tmp_path / "w.pt")
