"""Miniature image datasets in each layout of ``anchordiv.data.layouts``, written to a folder:
small distinct crops, rotations and colour changes of scikit-image's photographs."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np

#: a tiny open_clip architecture (32-px images, 8-px patches, width 32, one layer each)
TINY_CLIP = {
    "embed_dim": 16,
    "quick_gelu": True,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "head_width": 16, "patch_size": 8},
    "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1},
}


def save_tiny_clip(folder: Path, name: str = "anchordiv-tiny-images") -> tuple[Path, Path]:
    """``(config.json, checkpoint.pt)`` of a randomly initialised :data:`TINY_CLIP` (logit scale
    50), saved in ``folder``; the config is not registered here (the encoder spec does that)."""
    import warnings

    import open_clip
    import torch

    config = folder / f"{name}.json"
    config.write_text(json.dumps(TINY_CLIP))
    open_clip.add_model_config(str(config))
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = open_clip.create_model(name)
    with torch.no_grad():
        model.logit_scale.fill_(math.log(50.0))
    ckpt = folder / f"{name}.pt"
    torch.save(model.state_dict(), ckpt)
    return config, ckpt


def _bases() -> list[np.ndarray]:
    import skimage.data

    out = []
    for name in ("astronaut", "chelsea", "coffee", "rocket", "camera", "coins"):
        a = getattr(skimage.data, name)()
        out.append(np.stack([a] * 3, -1) if a.ndim == 2 else a[..., :3])
    return out


class Images:
    """An endless supply of distinct 40×40 RGB images (seeded)."""

    def __init__(self, seed: int = 0):
        self.bases, self.rng, self.count = _bases(), np.random.default_rng(seed), 0

    def next(self) -> np.ndarray:
        from PIL import Image

        base = self.bases[self.count % len(self.bases)]
        self.count += 1
        h, w = base.shape[:2]
        s = int(self.rng.integers(min(h, w) // 4, min(h, w) // 2))
        y, x = int(self.rng.integers(0, h - s)), int(self.rng.integers(0, w - s))
        crop = np.rot90(base[y : y + s, x : x + s], int(self.rng.integers(4)))
        crop = crop[..., self.rng.permutation(3)]
        small = np.asarray(Image.fromarray(np.ascontiguousarray(crop)).resize((40, 40)))
        return np.clip(small.astype(int) + self.count % 7, 0, 255).astype(np.uint8)

    def save(self, path: Path) -> Path:
        from PIL import Image

        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(self.next()).save(path)
        return path


IMAGENET_R_WNIDS = ("n01443537", "n01833805", "n02007558", "n02085620")  # in ImageNet-R
RENDITIONS = ("art", "cartoon", "sketch", "videogame")


def imagefolder(root: Path, classes=("red_fox", "tabby_cat", "school_bus"), per_class=6) -> Path:
    images = Images(1)
    for c in classes:
        for k in range(per_class):
            images.save(root / c / f"img{k}.png")
    return root


def imagenet(root: Path, wnids=IMAGENET_R_WNIDS, per_class=6) -> Path:
    images = Images(2)
    for w in wnids:
        for k in range(per_class):
            images.save(root / w / f"ILSVRC2012_val_{k:08d}.JPEG")
    return root


def imagenet_r(root: Path, wnids=IMAGENET_R_WNIDS, renditions=RENDITIONS, per=2) -> Path:
    images = Images(3)
    for w in wnids:
        for r in renditions:
            for k in range(per):
                images.save(root / w / f"{r}_{k}.jpg")
    return root


CUB_CLASSES = ("001.Black_footed_Albatross", "002.Laysan_Albatross", "003.Sooty_Albatross")


def cub200(root: Path, per_class=6) -> Path:
    """``root/CUB_200_2011`` with the four metadata files; every third image is a test image."""
    base, images = root / "CUB_200_2011", Images(4)
    lines = {"images": [], "labels": [], "split": []}
    i = 0
    for c, name in enumerate(CUB_CLASSES, 1):
        for k in range(per_class):
            i += 1
            rel = f"{name}/{name.split('.')[1]}_{k:04d}.jpg"
            images.save(base / "images" / rel)
            lines["images"].append(f"{i} {rel}")
            lines["labels"].append(f"{i} {c}")
            lines["split"].append(f"{i} {0 if k % 3 == 0 else 1}")
    (base / "classes.txt").write_text("".join(f"{c} {n}\n" for c, n in enumerate(CUB_CLASSES, 1)))
    (base / "images.txt").write_text("\n".join(lines["images"]) + "\n")
    (base / "image_class_labels.txt").write_text("\n".join(lines["labels"]) + "\n")
    (base / "train_test_split.txt").write_text("\n".join(lines["split"]) + "\n")
    return root


def sketchy(root: Path, classes=("airplane", "alarm_clock", "ant"), per_class=4) -> Path:
    """``photo/tx_000000000000/<class>`` and ``sketch/tx_000000000000/<class>``."""
    images = Images(5)
    for c in classes:
        for k in range(per_class):
            images.save(root / "photo" / "tx_000000000000" / c / f"n0000_{k}.jpg")
            images.save(root / "sketch" / "tx_000000000000" / c / f"n0000_{k}-1.png")
    return root


def chexpert(root: Path, n_train=16, n_valid=8, seed=0) -> Path:
    """``root/CheXpert-v1.0-small`` with train.csv and valid.csv; labels drawn from
    {1, 0, -1, blank} (seeded), Pleural Effusion and Edema positive on every other row."""
    from anchordiv.data.layouts import CHEXPERT_LABELS

    base, images = root / "CheXpert-v1.0-small", Images(6)
    rng = np.random.default_rng(seed)
    for split, n in (("train", n_train), ("valid", n_valid)):
        rows = []
        for k in range(n):
            rel = f"CheXpert-v1.0-small/{split}/patient{k:05d}/study1/view1_frontal.jpg"
            images.save(root / rel)
            labels = {c: rng.choice(["1.0", "0.0", "-1.0", ""]) for c in CHEXPERT_LABELS}
            labels["Pleural Effusion"] = "1.0" if k % 2 == 0 else "0.0"
            labels["Edema"] = "1.0" if k % 2 == 1 else "-1.0"
            rows.append({"Path": rel, "Sex": "Female", "Age": "60", **labels})
        with open(base / f"{split}.csv", "w", newline="") as f:
            w = csv.DictWriter(f, ["Path", "Sex", "Age", *CHEXPERT_LABELS])
            w.writeheader()
            w.writerows(rows)
    return base
