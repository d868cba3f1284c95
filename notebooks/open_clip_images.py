# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Anchor divergences on images with an open_clip checkpoint
#
# The paper's setting: image embeddings from a CLIP model, text anchors from the same model.
# Point this notebook at your own model and image folder:
#
# ```bash
# export ANCHORDIV_CLIP_MODEL=ViT-B-32                  # an open_clip model name
# export ANCHORDIV_CLIP_CHECKPOINT=/path/to/model.pt    # a local checkpoint or a pretrained tag
# export ANCHORDIV_IMAGE_FOLDER=/path/to/images         # one sub-folder per class: <class>/*.jpg
# ```
#
# Images in the same sub-folder are relevant to each other; the anchors are prompts of the
# class names ("a photo of a {class}.") encoded by the model's text tower, and `τ` is the
# checkpoint's own `exp(logit_scale)`.
#
# **Without those variables (and in the tests) the notebook runs a mechanical demo**: no CLIP
# weights can be downloaded here, so it builds a *tiny randomly initialised* open_clip model
# (saved as a local checkpoint and loaded back through the same path as a real one) and an image
# folder of crops of scikit-image's photographs.  Its retrieval numbers measure nothing about
# CLIP; they only show that the pipeline runs end to end.
#
# This page shows the **small mode**, the default (fewer anchors, steps and draws: what the docs
# gallery shows and the tests run); `ANCHORDIV_NOTEBOOK_FULL=1` runs the full version.

# %%
import json
import math
import os
import warnings
from pathlib import Path

import numpy as np
from IPython import display

import anchordiv as ad
from anchordiv.data import embed_images, embed_texts, get_encoder, imagenet

SMALL = os.environ.get("ANCHORDIV_NOTEBOOK_FULL") != "1"  # small mode by default
OUT = Path(os.environ.get("ANCHORDIV_NOTEBOOK_OUT", "reports/notebooks")) / "open_clip_images"
OUT.mkdir(parents=True, exist_ok=True)
MODEL = os.environ.get("ANCHORDIV_CLIP_MODEL")
CHECKPOINT = os.environ.get("ANCHORDIV_CLIP_CHECKPOINT")
FOLDER = os.environ.get("ANCHORDIV_IMAGE_FOLDER")
DEMO = not (MODEL and CHECKPOINT and FOLDER)
IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".webp"}

# %% [markdown]
# ## The demo model and folder (only when no real ones are configured)


# %%
def tiny_open_clip(root: Path) -> tuple[str, Path]:
    """Register a tiny open_clip config and save a random checkpoint (logit scale 50)."""
    import open_clip
    import torch

    name = "anchordiv-notebook-tiny"
    cfg = {
        "embed_dim": 32,
        "quick_gelu": True,
        "vision_cfg": {
            "image_size": 64,
            "layers": 1,
            "width": 64,
            "head_width": 32,
            "patch_size": 16,
        },
        "text_cfg": {
            "context_length": 77,
            "vocab_size": 49408,
            "width": 32,
            "heads": 2,
            "layers": 1,
        },
    }
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{name}.json").write_text(json.dumps(cfg))
    open_clip.add_model_config(str(root / f"{name}.json"))
    torch.manual_seed(0)
    model = open_clip.create_model(name)
    with torch.no_grad():
        model.logit_scale.fill_(math.log(50.0))
    torch.save(model.state_dict(), root / "tiny.pt")
    return name, root / "tiny.pt"


def demo_folder(root: Path, crops: int) -> Path:
    """``root/<class>/<i>.png``: random crops (and flips) of scikit-image photographs."""
    import skimage.data
    from PIL import Image

    rng = np.random.default_rng(0)
    for cls, photo in {
        "cat": "chelsea",
        "astronaut": "astronaut",
        "coffee": "coffee",
        "rocket": "rocket",
    }.items():
        img = getattr(skimage.data, photo)()
        (root / cls).mkdir(parents=True, exist_ok=True)
        for i in range(crops):
            h, w = img.shape[:2]
            s = int(min(h, w) * rng.uniform(0.5, 0.9))
            y, x = rng.integers(0, h - s + 1), rng.integers(0, w - s + 1)
            crop = img[y : y + s, x : x + s]
            Image.fromarray(crop[:, ::-1] if i % 2 else crop).save(root / cls / f"{i}.png")
    return root


if DEMO:
    warnings.warn(
        "no ANCHORDIV_CLIP_MODEL/CHECKPOINT/IMAGE_FOLDER: running the mechanical demo "
        "with a tiny random open_clip model; its numbers mean nothing",
        stacklevel=1,
    )
    MODEL, CHECKPOINT = tiny_open_clip(OUT / "tiny_clip")
    FOLDER = demo_folder(OUT / "images", crops=4 if SMALL else 12)

# %% [markdown]
# ## Encode the folder and the class prompts

# %%
paths = sorted(p for p in Path(FOLDER).glob("*/*") if p.suffix.lower() in IMAGE_SUFFIXES)
classes = sorted({p.parent.name for p in paths})
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # open_clip's "no pretrained tag" note
    encoder = get_encoder(f"open_clip:{MODEL}", pretrained=CHECKPOINT)
tau = encoder.logit_scale
cache = OUT / "cache" if DEMO else True
images, kept = embed_images(encoder, paths, cache=cache, on_error="skip")
labels = np.array([classes.index(Path(p).parent.name) for p in kept])
templates = imagenet.TEMPLATES[:2] if SMALL else imagenet.TEMPLATES
prompts = [t.format(c.replace("_", " ")) for c in classes for t in templates]
anchors = embed_texts(encoder, prompts, cache=cache)
print(encoder, "tau =", round(tau, 3))
print(len(kept), "images in", len(classes), "classes;", len(prompts), "prompt anchors")

# %% [markdown]
# ## Image → image retrieval under anchor divergences vs cosine and inversion
# Inversion is the image–text baseline: each query picks its most compatible prompt and the
# gallery is ranked by cosine to that text.

# %%
models = {
    "softmax": ad.fit("softmax", anchors, tau=tau),
    "gaussian": ad.fit("gaussian", anchors, tau=tau, reg=1e-2),
}
relevance = labels[:, None] == labels[None, :]
ev = ad.evaluate(
    models, images, images, relevance, anchors=anchors, query_index=np.arange(len(images))
)
for row in ev.summary():
    print(
        f"{row['scorer']:10s} AUPRC {row['auprc']:.3f} [{row['low']:.3f}, {row['high']:.3f}]"
        f"  prevalence {row['prevalence']:.3f}"
    )
ev.write_csv(OUT / "retrieval.csv")

# %% [markdown]
# ## Nearest neighbours of one image

# %%
from anchordiv.plots import pyplot, save_figure  # noqa: E402
from PIL import Image  # noqa: E402

k = min(4, len(kept) - 1)
idx, div = ad.top_k(models["gaussian"], images[:1], images, k=k + 1)
fig, axes = pyplot().subplots(1, k + 1, figsize=(2.2 * (k + 1), 2.6))
for ax, j, d in zip(axes, idx[0], div[0]):
    ax.imshow(Image.open(kept[j]).convert("RGB"))
    ax.set_title(f"{classes[labels[j]]}\nD={d:.3g}", fontsize=8)
    ax.axis("off")
png = save_figure(fig, OUT / "neighbours.png")
display.Image(filename=png)

# %% [markdown]
# ## Checks

# %%
assert images.shape == (len(kept), encoder.dim) and anchors.shape == (len(prompts), encoder.dim)
np.testing.assert_allclose(np.linalg.norm(images, axis=1), 1.0, rtol=1e-4)
assert idx[0][0] == 0 and div[0][0] <= 1e-4 * max(1.0, abs(div[0][-1]))  # itself first
for row in ev.summary():
    assert 0 < row["prevalence"] < 1 and row["n_queries"] == len(kept), row
    assert 0 <= row["low"] <= row["auprc"] <= row["high"] <= 1, row
if DEMO:
    assert math.isclose(tau, 50.0, rel_tol=1e-5)  # the checkpoint's own logit scale
    again, _ = embed_images(encoder, kept, cache=cache)  # the second pass is a cache hit
    np.testing.assert_array_equal(again, images)
assert png.stat().st_size > 0
