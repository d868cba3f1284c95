"""Whole image path vs the model alone: images/s of ``embed_images`` from files (hash, header
check, decode + preprocess in ``--workers`` processes, forward, cache write) divided by images/s
of the image tower's forward pass alone on tensors already preprocessed and on the device.

A ratio near 1 means the input pipeline keeps up with the model.  The model is a randomly
initialised open_clip architecture (``--model``, default ViT-B-32: the speed of a forward pass
does not depend on the weights); the images are ``--images`` distinct 500×375 JPEG crops of
scikit-image's photographs (ImageNet's typical size).  Each whole-path run starts from an
empty embedding cache, so everything is hashed, decoded and encoded.  The forward pass and the
whole path with each worker count are timed once per round, in rotating order
(``common.interleaved``), and the ratio is taken within each round (median, lowest and highest
over ``--repeats`` rounds), so load that comes and goes on a shared machine moves both sides
alike.  The first whole-path run per worker count is timed apart: it starts the workers' server
(imports torch and open_clip once per process, seconds).

    .venv/bin/python benchmarks/bench_images.py                          # CPU: 64 images, workers 0,1
    .venv/bin/python benchmarks/bench_images.py --quick                  # 16 images
    .venv/bin/python benchmarks/bench_images.py --device cuda --images 4096 --batch 256 \\
        --workers 0,4,8,15 --tag gpu                                      # the same on a GPU
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path


from bench_image_encode import images
from common import interleaved, parser, table, time_once, write_results

GPU_COMMAND = (
    ".venv/bin/python benchmarks/bench_images.py --device cuda --images 4096 --batch 256 "
    "--workers 0,4,8,15 --tag gpu"
)


def forward_pass(enc, files: list[Path], batch: int):
    """A call that runs ``model.encode_image`` on preprocessed tensors already on the device."""
    import torch

    from anchordiv.data.imageio import read_image

    pixels = torch.stack([enc.preprocess(read_image(f)) for f in files]).to(enc.device)
    cuda = str(enc.device).startswith("cuda")

    def run():
        with torch.no_grad():
            for s in range(0, len(files), batch):
                enc.model.encode_image(pixels[s : s + batch]).float().cpu()
        if cuda:
            torch.cuda.synchronize()

    return run


def whole_path(enc, files: list[Path], batch: int, workers: int):
    """A call that runs ``embed_images`` from the files, each time from an empty cache."""
    from anchordiv.data import embed_images

    def run():
        with tempfile.TemporaryDirectory() as cache:
            embed_images(enc, files, cache=cache, batch_size=batch, workers=workers)

    return run


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
    repeats = args.repeats or (1 if args.quick else 3)
    imageio.MIN_WORKER_IMAGES = 0  # measure the workers asked for, whatever the count
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        enc = OpenCLIPEncoder(args.model, device=args.device, random_weights=True)
    counts = [int(x) for x in args.workers.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        files = images(Path(tmp), n, size=(500, 375))
        first = {}
        for w in counts:  # the first run of each starts its workers' server: timed apart
            first[w] = time_once(whole_path(enc, files, args.batch, w))[0]
        calls = {"forward": forward_pass(enc, files, args.batch)}
        calls |= {f"workers={w}": whole_path(enc, files, args.batch, w) for w in counts}
        calls["forward"]()  # warm-up (the whole path warmed up in its first runs)
        timed = interleaved(calls, "forward", repeats, warmup=0)
    fwd = n / timed["forward"]["median_s"]
    rows = []
    for w in counts:
        t = timed[f"workers={w}"]
        rows.append(
            {
                "model": args.model,
                "device": args.device,
                "images": n,
                "batch": args.batch,
                "workers": w,
                "forward_images_per_s": fwd,
                "path_images_per_s": n / t["median_s"],
                # images/s ratio = forward time / path time, per round (median, min, max)
                "ratio": 1 / t["ratio"],
                "ratio_low": 1 / t["ratio_max"],
                "ratio_high": 1 / t["ratio_min"],
                "first_run_s": first[w],
                "rounds": repeats,
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
            ("ratio", "whole path ÷ forward (median of rounds)"),
            ("ratio_low", "lowest round"),
            ("ratio_high", "highest round"),
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
