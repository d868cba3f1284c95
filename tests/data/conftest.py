"""Shared fixtures for the data tests: one MiniLM encoder per session (loads in seconds), and a
tiny open_clip model (registered config + a saved checkpoint) standing in for real CLIP
weights, which cannot be downloaded here."""

import json
import math
import warnings

import pytest

TINY = {
    "embed_dim": 32,
    "quick_gelu": True,
    "vision_cfg": {"image_size": 64, "layers": 1, "width": 64, "head_width": 32, "patch_size": 16},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1},
}
TINY_NAME = "anchordiv-tiny"
TINY_LOGIT_SCALE = 42.0


@pytest.fixture(scope="session")
def minilm():
    from anchordiv import data

    return data.get_encoder("minilm")


@pytest.fixture(scope="session")
def tiny_clip(tmp_path_factory):
    """``(model name, checkpoint path)``: a tiny random open_clip model whose checkpoint has
    logit scale 42, saved once per session."""
    import open_clip
    import torch

    from anchordiv.data.encoders import OpenCLIPEncoder

    d = tmp_path_factory.mktemp("tiny_clip")
    (d / f"{TINY_NAME}.json").write_text(json.dumps(TINY))
    open_clip.add_model_config(str(d / f"{TINY_NAME}.json"))
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        enc = OpenCLIPEncoder(TINY_NAME, random_weights=True)
    with torch.no_grad():
        enc.model.logit_scale.fill_(math.log(TINY_LOGIT_SCALE))
    ckpt = d / "tiny.pt"
    torch.save(enc.model.state_dict(), ckpt)
    return TINY_NAME, ckpt, enc


@pytest.fixture(scope="session")
def skimage_files(tmp_path_factory):
    """Four real photographs from scikit-image's data module, written as PNG files."""
    import skimage.data
    from PIL import Image

    d = tmp_path_factory.mktemp("images")
    paths = []
    for name in ("chelsea", "astronaut", "coffee", "rocket"):
        paths.append(d / f"{name}.png")
        Image.fromarray(getattr(skimage.data, name)()).save(paths[-1])
    return paths
