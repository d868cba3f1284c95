"""Whole image path vs the model alone: images/s of ``embed_images`` from files (hash, header
check, decode + preprocess in ``--workers`` processes, forward, cache write) divided by images/s
of the image tower's forward pass alone on tensors already preprocessed and on the device.

A ratio near 1 means the input pipeline keeps up with the model.  The model is a randomly
initialised open_clip architecture (``--model``, default ViT-B-32: the speed of a forward pass
does not depend on the weights); the images are ``--images`` distinct 500×375 JPEG crops of
scikit-image's photographs (ImageNet's typical size).  Each whole-path run starts from an
empty embedding cache, so everything is hashed, decoded and encoded.  Median of ``--repeats``
after a first run, reported apart: it starts the workers' server (imports torch and open_clip
once per process, seconds).

    .venv/bin/python benchmarks/bench_images.py                          # CPU: 64 images, workers 0,1
    .venv/bin/python benchmarks/bench_images.py --quick                  # 16 images
    .venv/bin/python benchmarks/bench_images.py --device cuda --images 4096 --batch 256 \\
        --workers 0,4,8,15 --tag gpu                                      # the same on a GPU
"""

from __future__ import annotations

import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from bench_image_encode import images
from common import parser, table, write_results

GPU_COMMAND = (
    ".venv/bin/python benchmarks/bench_images.py --device cuda --images 4096 --batch 256 "
    "--workers 0,4,8,15 --tag gpu"
)


def forward_alone(enc, files: list[Path], batch: int, repeats: int) -> float:
    """images/s of ``model.encode_image`` on preprocessed tensors already on the device."""
    import torch

    from anchordiv.data.imageio import read_image

    pixels = torch.stack([enc.preprocess(read_image(f)) for f in files]).to(enc.device)
    cuda = str(enc.device).startswith("cuda")
    times = []
    for _ in range(repeats + 1):  # the first pass warms up
        t0 = time.perf_counter()
        with torch.no_grad():
            for s in range(0, len(files), batch):
                enc.model.encode_image(pixels[s : s + batch]).float().cpu()
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return len(files) / float(np.median(times[1:]))


def whole_path(enc, files: list[Path], batch: int, workers: int, repeats: int):
    """``(images/s, first run s)`` of ``embed_images`` from the files, each run from an empty
    cache; the first run (starting the workers' server) is timed apart."""
    from anchordiv.data import embed_images

    times = []
    for _ in range(repeats + 1):
        with tempfile.TemporaryDirectory() as cache:
            t0 = time.perf_counter()
            embed_images(enc, files, cache=cache, batch_size=batch, workers=workers)
            times.append(time.perf_counter() - t0)
    return len(files) / float(np.median(times[1:])), times[0]


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--model", default="ViT-B-32")
    p.add_argument("--images", type=int, default=None, help="default 64 (16 with --quick)")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--workers", default="0,1", help="comma-separated worker counts")
    p.add_argument("--load", default="", help="what else ran on the machine (recorded)")
    args = p.parse_args()
    import torch

    from anchordiv.data import imageio
    from anchordiv.data.encoders import OpenCLIPEncoder

    torch.manual_seed(0)
    n = args.images or (16 if args.quick else 64)
    repeats = args.repeats or (1 if args.quick else 2)
    imageio.MIN_WORKER_IMAGES = 0  # measure the workers asked for, whatever the count
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        enc = OpenCLIPEncoder(args.model, device=args.device, random_weights=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        files = images(Path(tmp), n, size=(500, 375))
        model_rate = forward_alone(enc, files, args.batch, repeats)
        for w in [int(x) for x in args.workers.split(",")]:
            rate, first = whole_path(enc, files, args.batch, w, repeats)
            rows.append(
                {
                    "model": args.model,
                    "device": args.device,
                    "images": n,
                    "batch": args.batch,
                    "workers": w,
                    "forward_images_per_s": model_rate,
                    "path_images_per_s": rate,
                    "ratio": rate / model_rate,
                    "first_run_s": first,
                }
            )
            print(rows[-1], flush=True)
    md = table(
        rows,
        [
            ("model", "model"),
            ("device", "device"),
            ("images", "images"),
            ("batch", "batch"),
            ("workers", "workers"),
            ("forward_images_per_s", "forward alone (images/s)"),
            ("path_images_per_s", "whole path (images/s)"),
            ("ratio", "whole path ÷ forward"),
            ("first_run_s", "first run s (workers start)"),
        ],
    )
    note = (
        f"\n\ntorch threads: {torch.get_num_threads()}; load: {args.load or 'not stated'}.  "
        f"The same on a GPU: `{GPU_COMMAND}`.\n"
    )
    path = write_results(
        "bench_images",
        {"rows": rows, "torch_threads": torch.get_num_threads(), "load": args.load},
        md + note,
        args.tag,
    )
    print(md + note)
    print(path)


if __name__ == "__main__":
    main()
