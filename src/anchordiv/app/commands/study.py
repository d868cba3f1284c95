"""``anchordiv study NAME``: one of the demo's studies alone, as its own report."""

from __future__ import annotations

from .demo import add_run_options


def register(sub) -> None:
    from ..studies.main_job import PARTS

    p = sub.add_parser(
        "study",
        help="run one study (clinical, wordnet-imagenet, object-style, budget, "
        "style-transfer, clinical-transfer) and write its report",
        description="Run one of the paper's studies on real offline text and write "
        "OUT/report.md with its tables and figures.  wordnet-imagenet also writes "
        "the anchor-budget (softmax vs parametric) section from the same curve; "
        "budget runs only the target-only models of that curve; style-transfer and "
        "clinical-transfer adapt few targets from domain-matched, generic and "
        "wrong-domain priors in models/ against isotropic controls.",
    )
    p.add_argument("name", choices=list(PARTS), help="the study")
    add_run_options(p, "reports/study")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..studies.main_job import run_demo

    path = run_demo(
        args.out,
        size="small" if args.small else "full",
        encoder=args.encoder,
        models_dir=args.models,
        seed=args.seed,
        parts=(args.name,),
        overwrite=args.overwrite,
    )
    print(path)
    return 0
