"""``anchordiv build-models``: build the broad priors shipped in ``models/``."""

from __future__ import annotations

import json

from ._io import add_flags, count, positive_int


def register(sub) -> None:
    from ..studies.priors import PRIORS

    p = sub.add_parser(
        "build-models",
        help="build the shipped broad priors (WordNet, HPO / ICD-10-CM, "
        "ImageNet names) with cards into models/",
        description="For each shipped prior (anchordiv.app.studies.priors.PRIORS): select its "
        "vocabulary regions with their exclusions, draw a seeded subsample, embed it with the "
        "encoder (cached), fit a Gaussian and save it as a model directory (arrays.npz + "
        "card.json: sources, roots, exclusions, counts, encoder, tau, data hash, package version), "
        "as anchordiv build-prior does.  The demo adapts from these priors.",
    )
    p.add_argument("-o", "--out", default="models", help="output directory (default models)")
    add_flags(p, overwrite="replace priors already in the output directory (default: an error)")
    p.add_argument(
        "--only",
        choices=list(PRIORS),
        action="append",
        help="build only this prior (repeatable; default all)",
    )
    p.add_argument(
        "-n",
        "--anchors",
        type=positive_int,
        help="broad anchors per prior, a seeded subsample (default: each prior's "
        "own, 2000-5000; MiniLM encodes ~165 glosses/s on 2 cores)",
    )
    p.add_argument("--encoder", default="minilm", help="text encoder (default minilm)")
    p.add_argument("--seed", type=count, default=0, help="subsample seed (default 0)")


def run(args) -> int:
    import dataclasses
    from pathlib import Path

    from ...errors import check_output
    from ..build import build_prior
    from ..studies.priors import PRIORS, prior_spec

    out = {}
    names = args.only or list(PRIORS)
    for name in names:  # every destination checked before anything is built
        check_output(Path(args.out) / name, args.overwrite)
    for name in names:
        spec = dataclasses.replace(prior_spec(name, args.anchors), seed=args.seed)
        built = build_prior(
            spec, encoder=args.encoder, out=Path(args.out) / name, overwrite=args.overwrite
        )
        out[name] = {"model": str(built.path), "n_anchors": len(built.texts)}
    print(json.dumps(out, indent=2))
    return 0
