"""``anchordiv study NAME``: one of the demo's studies alone, as its own report — on the
offline text analogues, or with ``--dataset LAYOUT:ROOT`` on the user's own images."""

from __future__ import annotations

from .demo import add_run_options, run as run_text, run_keywords
from ._io import positive_int
from .embed import add_workers_option, workers


def register(sub) -> None:
    from ...data.layouts import LAYOUTS
    from ..studies.images import IMAGE_STUDIES
    from ..studies.main_job import PARTS

    p = sub.add_parser(
        "study",
        help=f"run one study ({', '.join(PARTS)}) on offline text, or on your images with "
        "--dataset, and write its report",
        description="Run one of the paper's studies and write OUT/report.md with its tables "
        "and figures.  Without --dataset: on real offline text (the text analogues).  "
        "wordnet-imagenet also writes the anchor-budget (softmax vs parametric) section from "
        "the same curve; budget runs only the target-only models of that curve; "
        "style-transfer and clinical-transfer adapt few targets from domain-matched, generic "
        "and wrong-domain priors in models/ against isotropic controls.  With --dataset "
        f"LAYOUT:ROOT ({', '.join(LAYOUTS)}) and an image-text --encoder: the paper's image "
        f"studies ({', '.join(IMAGE_STUDIES)}) on those images, the anchors through the same "
        "model's text tower (docs/guides/images.md).",
    )
    p.add_argument("name", choices=list(PARTS), help="the study")
    add_run_options(p, "reports/study")
    p.add_argument(
        "--dataset",
        metavar="LAYOUT:ROOT",
        help=f"run the study on images: LAYOUT one of {', '.join(LAYOUTS)}, ROOT the "
        "dataset folder (needs an open_clip or chexzero --encoder)",
    )
    p.add_argument(
        "--batch-size", type=positive_int, default=32, help="images per encoder batch (default 32)"
    )
    add_workers_option(p)
    p.add_argument(
        "--uncertain",
        choices=["zeros", "ones"],
        help="chexpert: uncertain labels (-1) as absent (zeros, U-Zeros, default) or present "
        "(ones, U-Ones)",
    )
    p.add_argument(
        "--views",
        choices=["frontal", "lateral", "all"],
        help="chexpert: the views read (default frontal, as the paper's evaluation)",
    )
    p.add_argument(
        "--on-error",
        choices=["raise", "skip"],
        default="raise",
        help="--dataset: unreadable images stop the run with one error naming all of them, "
        "before the model loads (raise, default), or are skipped and listed in the report",
    )
    p.add_argument(
        "--allow-outside-root",
        action="store_true",
        help="--dataset: read image files that lie outside ROOT (symlinks out of it, CSV paths "
        "that are absolute or use ..); by default they are an error",
    )


def run(args) -> int:
    if args.dataset:
        from ..studies.images import run_image_study

        kwargs = run_keywords(
            args, "batch_size", "on_error", "uncertain", "views", "allow_outside_root"
        )
        result = run_image_study(args.name, args.dataset, args.out, workers=workers(args), **kwargs)
        print(result.report)
        return 0
    return run_text(args, parts=(args.name,))
