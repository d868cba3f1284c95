"""``anchordiv cache``: what the embedding cache holds (per image encoder: images, packs,
bytes), and pruning it."""

from __future__ import annotations

import datetime
import json

from ._io import add_flags


def register(sub) -> None:
    p = sub.add_parser(
        "cache",
        help="show or prune the embedding cache ($ANCHORDIV_CACHE, default ~/.cache/anchordiv)",
        description="The embedding cache keeps each image's embedding under its content "
        "SHA-256, per encoder (weights included) and preprocessing, text embeddings per "
        "list of texts, remembered file digests and JAX's compiled programs.  `show` lists "
        "them; `prune` removes an encoder's images (--encoder), what was not written for "
        "some days (--older-than) or everything (--all): only files the cache wrote, only in "
        "a folder that is a cache (marked by anchordiv-cache.json), waiting for running "
        "embeddings to finish.",
    )
    p.add_argument("action", choices=["show", "prune"], help="show (default) or prune")
    add_flags(p, json="show: print the summary as JSON")
    p.add_argument(
        "--encoder", metavar="TEXT", help="prune: image embeddings of encoder ids containing TEXT"
    )
    p.add_argument(
        "--older-than",
        type=float,
        metavar="DAYS",
        help="prune: image packs, text entries and digest records older than DAYS, and the "
        "leftovers of killed writes",
    )
    p.add_argument(
        "--all", action="store_true", help="prune: every file the cache wrote (nothing else)"
    )
    p.add_argument("--dry-run", action="store_true", help="prune: list, remove nothing")


def _mb(n: int) -> str:
    return f"{n / 2**20:.1f} MB"


def run(args) -> int:
    from ...data import cache
    from ...errors import positive
    from ._io import option_applies

    prune = args.action == "prune"
    for flag, value in (
        ("--encoder", args.encoder),
        ("--older-than", args.older_than),
        ("--all", args.all or None),
        ("--dry-run", args.dry_run or None),
    ):
        option_applies(flag, value, prune, "applies to `anchordiv cache prune`, not to show")
    if args.older_than is not None:
        positive("--older-than", args.older_than, allow_zero=True)  # days: -1 pruned all
    if prune:
        gone = cache.prune(
            encoder=args.encoder,
            older_than_days=args.older_than,
            everything=args.all,
            dry_run=args.dry_run,
        )
        verb = "would remove" if args.dry_run else "removed"
        print(f"{verb} {len(gone)} path(s) from {cache.cache_dir()}")
        for p in gone:
            print(f"  {p}")
        return 0
    s = cache.cache_summary()
    if args.json:
        print(json.dumps(s, indent=2))
        return 0
    marked = "" if s["cache"] else " (not an anchordiv cache: prune refuses it)"
    print(f"embedding cache {s['root']}{marked}:")
    for sp in s["images"]:
        stamp = datetime.datetime.fromtimestamp(sp["newest"] or 0).strftime("%Y-%m-%d %H:%M")
        when = stamp if sp["newest"] else "-"
        bad = f", {sp['unreadable']} unreadable" if sp["unreadable"] else ""
        print(
            f"  images of {sp['id'].split('|', 1)[0]}: {sp['images']} images in "
            f"{sp['packs']} pack(s){bad}, {_mb(sp['bytes'])}, newest {when}"
        )
    e, f = s["embeddings"], s["files"]
    print(f"  text and other embeddings: {e['entries']} entries, {_mb(e['bytes'])}")
    print(f"  file digests: {f['folders']} folder(s), {_mb(f['bytes'])}")
    print(f"  JAX compiled programs: {_mb(s['xla']['bytes'])}")
    return 0
