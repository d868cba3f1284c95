"""``anchordiv demo``: the main job — the paper's studies on real offline text, as a report."""

from __future__ import annotations

from ._io import add_flags, count


def add_run_options(p, default_out: str) -> None:
    """Options shared by ``demo`` and ``study``."""
    p.add_argument(
        "-o",
        "--out",
        default=default_out,
        help=f"report directory (default {default_out}); report.md, CSV tables and "
        f"PNG figures are written there",
    )
    add_flags(
        p,
        overwrite="replace an existing report directory (default: an existing non-empty -o is an "
        "error)",
    )
    p.add_argument(
        "--small",
        action="store_true",
        help="the same studies, models and report sections on tiny subsamples (a minute or "
        "two with warm caches; for tests)",
    )
    p.add_argument(
        "--models",
        default=None,
        help="directory of fitted broad priors (default: $ANCHORDIV_MODELS, else the "
        "shipped ones: `anchordiv priors`); written by `anchordiv build-models`",
    )
    p.add_argument(
        "--encoder",
        default="minilm",
        help="encoder (default: the shipped all-MiniLM-L6-v2, offline); 'open_clip:<model "
        "or config.json>' or 'chexzero' use that model's text tower (and, for study "
        "--dataset, its image tower)",
    )
    p.add_argument(
        "--pretrained",
        help="open_clip/chexzero weights: a pretrained tag or a checkpoint path (--encoder "
        "open_clip:/path/config.json takes a model config of your own)",
    )
    p.add_argument("--device", default="cpu", help="torch device of the encoder (default cpu)")
    add_flags(p, "random-weights")
    p.add_argument("--seed", type=count, default=0, help="seed of every subsample (default 0)")


def register(sub) -> None:
    p = sub.add_parser(
        "demo",
        help="the main job: clinical retrieval, WordNet→ImageNet adaptation curve, "
        "anchor budget and object/style studies on real offline text, as a report",
        description="Embed real offline text with the shipped MiniLM encoder (cached), run the "
        "clinical retrieval study (Open-i reports, HPO/ICD-10-CM pathology anchors), the WordNet → "
        "ImageNet adaptation curve (with the anchor-budget view) and the object-vs-style study, "
        "the prior-transfer studies and the dominance table, and write a markdown report with "
        "tables and PNG plots.  About two minutes on 2 idle CPU cores with warm caches (embeddings "
        "and compiled programs; 106 s measured), three and a half with cold ones (202 s, MiniLM "
        "encoding 144 texts/s); prints the report's path.",
    )
    add_run_options(p, "reports/demo")


def run(args, parts=None) -> int:
    """Run the studies (``parts``: the demo's unless given) on the text analogues."""
    from ..studies.main_job import DEMO_PARTS, run_demo

    print(run_demo(args.out, parts=parts or DEMO_PARTS, **run_keywords(args)))
    return 0


def run_keywords(args, *more: str) -> dict:
    """The keywords of the run options (:func:`add_run_options`) and of ``more``; a ``--models``
    that is no folder is refused here (the studies would fit every prior anew without a word)."""
    from pathlib import Path

    from ...errors import AnchorDivError

    if args.models is not None and not Path(args.models).is_dir():
        what = "is a file" if Path(args.models).exists() else "no such folder"
        raise AnchorDivError(
            f"--models: {what}: {args.models} (a folder of fitted broad priors, written by "
            f"`anchordiv build-models -o DIR`; leave --models out for the shipped ones)"
        )
    names = "encoder seed overwrite pretrained device random_weights".split() + list(more)
    size = "small" if args.small else "full"
    return {"size": size, "models_dir": args.models, **{k: getattr(args, k) for k in names}}
