"""Image-tower throughput on this machine: images/s of ``OpenCLIPEncoder.encode_image`` from
files (decode + preprocess + forward), the cost that dominates ``anchordiv study NAME --dataset``.

Two randomly initialised open_clip models (no weights download here; the cost of a forward pass
does not depend on the weights): a tiny one (32-px images, width 32, one layer, the test
suite's) and ViT-B-32 (the architecture of CLIP ViT-B/32 and of CheXzero, 224 px, 88 M
parameters).  The images are 256×256 crops of scikit-image's photographs written as JPEG files;
one warm-up batch, then ``--repeats`` timed passes over all images (median reported).

    .venv/bin/python benchmarks/bench_image_encode.py              # 128 images, batch 32
    .venv/bin/python benchmarks/bench_image_encode.py --quick      # 32 images
    .venv/bin/python benchmarks/bench_image_encode.py --device cuda --tag gpu
"""

from __future__ import annotations

import json
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from common import parser, table, write_results

TINY = {
    "embed_dim": 16,
    "quick_gelu": True,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "head_width": 16, "patch_size": 8},
    "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1},
}


def images(folder: Path, n: int, size: tuple[int, int] | None = None) -> list[Path]:
    """``n`` distinct JPEG crops of scikit-image photographs: 256×256, or — with ``size`` —
    three quarters of the photograph resized to ``size`` (width, height)."""
    import skimage.data
    from PIL import Image

    bases = [getattr(skimage.data, k)() for k in ("astronaut", "chelsea", "coffee", "rocket")]
    rng = np.random.default_rng(0)
    out = []
    for k in range(n):
        b = bases[k % len(bases)]
        h, w = (256, 256) if size is None else (b.shape[0] * 3 // 4, b.shape[1] * 3 // 4)
        y, x = rng.integers(0, b.shape[0] - h), rng.integers(0, b.shape[1] - w)
        crop = Image.fromarray(b[y : y + h, x : x + w])
        out.append(folder / f"img{k}.jpg")
        (crop if size is None else crop.resize(size)).save(out[-1])
    return out


def measure(name: str, files: list[Path], batch: int, repeats: int, device: str) -> dict:
    from anchordiv.data.encoders import OpenCLIPEncoder

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        enc = OpenCLIPEncoder(name, device=device, random_weights=True)
    enc.encode_image(files[:batch], batch_size=batch, progress=False)  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        enc.encode_image(files, batch_size=batch, progress=False)
        times.append(time.perf_counter() - t0)
    s = float(np.median(times))
    params = sum(p.numel() for p in enc.model.visual.parameters())
    return {
        "model": name,
        "image_params_M": params / 1e6,
        "images": len(files),
        "batch": batch,
        "seconds": s,
        "images_per_s": len(files) / s,
    }


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--batch", type=int, default=32)
    args = p.parse_args()
    import open_clip
    import torch

    torch.manual_seed(0)
    n = 32 if args.quick else 128
    repeats = args.repeats or (1 if args.quick else 3)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        (d / "anchordiv-bench-tiny.json").write_text(json.dumps(TINY))
        open_clip.add_model_config(str(d / "anchordiv-bench-tiny.json"))
        files = images(d, n)
        rows = [
            measure(m, files, args.batch, repeats, args.device)
            for m in ("anchordiv-bench-tiny", "ViT-B-32")
        ]
    md = table(
        rows,
        [
            ("model", "model"),
            ("image_params_M", "image tower params (M)"),
            ("images", "images"),
            ("batch", "batch"),
            ("seconds", "median s"),
            ("images_per_s", "images/s"),
        ],
    )
    path = write_results(
        "bench_image_encode",
        {"rows": rows, "device": args.device, "torch_threads": torch.get_num_threads()},
        md + f"\n\ntorch threads: {torch.get_num_threads()}; device {args.device}.\n",
        args.tag,
    )
    print(md)
    print(path)


if __name__ == "__main__":
    main()
