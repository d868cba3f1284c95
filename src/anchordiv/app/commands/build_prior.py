"""``anchordiv build-prior``: a broad prior from WordNet / HPO / ICD-10-CM regions, Open-i report
sentences or text files."""

from __future__ import annotations

import json

from ._io import add_flags, count

#: option -> vocabulary kind (data.vocab.KINDS)
REGIONS = {
    "wordnet": "WordNet noun synset (name like art.n.01, or wnid): its subtree",
    "hpo": "HPO term id (HP:0002086): its is-a subtree",
    "icd10": "ICD-10-CM chapter / block / code (10, J09-J18, J45): with descendants",
    "text": "text file: one anchor per non-empty line",
    "openi": "Open-i report uid (CXR12): its FINDINGS / IMPRESSION sentences; --exclude-openi also "
    "takes a chest finding ('pleural effusion'): its reports and every sentence mentioning it go",
}


def register(sub) -> None:
    from ...anchors import KINDS

    p = sub.add_parser(
        "build-prior",
        help="build a broad prior from vocabulary regions (WordNet, HPO, "
        "ICD-10-CM) or text files and save it with a card",
        description="Select broad anchors from vocabulary regions (each --wordnet/--hpo/--icd10 "
        "root adds its subtree; --exclude-* removes items with their subtrees, e.g. the target "
        "synsets so nothing leaks; --text adds the lines of a file), draw a seeded subsample of "
        "-n, embed them with the encoder (cached), fit the anchor model and save it as a model "
        "directory whose card records sources, roots, exclusions, counts, encoder, tau and hashes.",
    )
    p.add_argument("-o", "--out", required=True, help="output model directory")
    add_flags(p, overwrite="replace an existing prior directory (default: an error)")
    p.add_argument("--name", help="prior name recorded in the card (default: the out dir name)")
    for kind, what in REGIONS.items():
        p.add_argument(
            f"--{kind}", action="append", default=[], metavar="ROOT", help=f"{what} (repeatable)"
        )
        if kind != "text":
            p.add_argument(
                f"--exclude-{kind}",
                action="append",
                default=[],
                metavar="ITEM",
                help=f"remove this {kind} item and its subtree (repeatable)",
            )
    p.add_argument(
        "--all",
        action="append",
        default=[],
        choices=["wordnet", "hpo", "icd10", "imagenet", "openi"],
        help="the whole vocabulary (minus its exclusions) as a source; imagenet: the 1,000 "
        "ImageNet class names; openi: the sentences of every Open-i report",
    )
    p.add_argument(
        "-n",
        "--anchors",
        type=count,
        default=2000,
        help="anchors drawn from the pooled regions (default 2000; 0 = all; MiniLM "
        "encodes ~165 glosses/s on 2 cores)",
    )
    p.add_argument("--seed", type=count, default=0, help="subsample seed (default 0)")
    p.add_argument(
        "--kind", default="gaussian", choices=KINDS, help="anchor model fitted (default gaussian)"
    )
    p.add_argument("--encoder", default="minilm", help="text encoder (default minilm)")
    p.add_argument("--description", default="", help="one line for the card")


def sources(args) -> list:
    """The :class:`~anchordiv.data.vocab.Source` list the options name, one per kind used."""
    from ...data.vocab import Source

    return [
        Source(kind, tuple(getattr(args, kind, [])), tuple(getattr(args, f"exclude_{kind}", [])))
        for kind in (*REGIONS, "imagenet")
        if getattr(args, kind, []) or kind in args.all
    ]


def run(args) -> int:
    from pathlib import Path

    from ..build import PriorSpec, build_prior
    from ...errors import AnchorDivError

    srcs = sources(args)
    if not srcs:
        raise AnchorDivError("name at least one region: --wordnet, --hpo, --icd10, --text or --all")
    name = args.name or Path(args.out).name
    spec = PriorSpec(
        name, tuple(srcs), args.anchors or None, args.seed, args.kind, args.description
    )
    built = build_prior(spec, encoder=args.encoder, out=args.out, overwrite=args.overwrite)
    card = built.card
    result = {"model": str(built.path), "n_anchors": len(built.texts)}
    result.update(sources=card["prior"]["sources"], encoder=card["encoder"])
    print(json.dumps(result, indent=2))
    return 0
