"""``anchordiv priors``: the shipped broad priors, by short name, with what each was fitted to."""

from __future__ import annotations

import json

from ._io import add_flags


def register(sub) -> None:
    p = sub.add_parser(
        "priors",
        help="list the shipped broad priors (load one with ad.load_prior(NAME))",
        description="List the broad priors anchordiv ships (Gaussians fitted to broad anchors of "
        "the default encoder): short name, encoder, anchors, dimension and what they were fitted "
        "to, and its digest (pin it: ad.load_prior(NAME, sha256=DIGEST), --sha256).  Each loads by "
        "its short or full name: ad.load_prior('wordnet-visual-art').  $ANCHORDIV_MODELS names "
        "another directory of priors to list and load.",
    )
    add_flags(p, json="print {name: {path, encoder, n_anchors, dim, description, sha256}} as JSON")


def run(args) -> int:
    from ...errors import AnchorDivError
    from ...io import bundle_digest, load_card, models_dir, shipped_priors

    found = shipped_priors()
    if not found:
        raise AnchorDivError(
            f"no priors found in {models_dir()} (set $ANCHORDIV_MODELS to a "
            "directory of saved priors, or rebuild them with `make models`)"
        )
    rows = {}
    for name, path in found.items():
        card = load_card(path)
        rows[name] = {
            "path": str(path),
            **{k: card.get(k) for k in ("encoder", "n_anchors", "dim")},
            "description": card.get("anchor_source") or card.get("description", ""),
            "sha256": bundle_digest(path),
        }
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    width = max(len(n) for n in rows)
    print(f"{len(rows)} priors in {models_dir()}:")
    for name, r in rows.items():
        print(f"  {name:<{width}}  {r['n_anchors']} anchors, d = {r['dim']}: {r['description']}")
        print(f"  {'':<{width}}  sha256 {r['sha256']}")
    return 0
