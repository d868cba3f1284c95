"""``anchordiv search``: top-k retrieval of a gallery by a saved anchor model or posterior."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np

from ..._safeio import atomic_file, write_npy
from ...errors import AnchorDivError
from ._cluster import add_cluster_options, cluster
from ._io import (
    add_flags,
    check_encoder,
    check_out,
    load_embeddings,
    load_scorer,
    option_applies,
    positive_int,
    read_utf8,
    report,
)

TABLE_FORMATS = {".csv": ",", ".tsv": "\t", ".jsonl": None}


def register(sub) -> None:
    p = sub.add_parser(
        "search",
        help="rank a gallery by anchor divergence (top-k)",
        description="For each query embedding, find the K gallery items with the smallest anchor "
        "divergence D(query -> item) under MODEL (a model directory, or a saved posterior scored "
        "with its --summary point model). The gallery is streamed in chunks, so a memory-mapped "
        ".npy larger than memory works; with --scheduler or --workers the scan runs on a Dask "
        "cluster, one task per block of the gallery, which may then be sharded. Writes "
        "PREFIX.indices.npy, PREFIX.divergences.npy and a table PREFIX.csv (one row per query x "
        "rank, with the query and item texts when known).",
    )
    p.add_argument(
        "model",
        help="model directory (`anchordiv fit`/`adapt -o`) or posterior "
        "directory (`adapt --posterior-out`)",
    )
    p.add_argument("queries", help="query embeddings, .npy [Q, d]")
    p.add_argument(
        "gallery",
        help="gallery embeddings, .npy [G, d]; with --scheduler or --workers also a directory or "
        "glob of .npy / .parquet shards (clip-retrieval's img_emb/img_emb_N.npy layout)",
    )
    p.add_argument("-k", type=positive_int, default=10, help="neighbours per query (default 10)")
    p.add_argument(
        "-o",
        "--out",
        required=True,
        help="output prefix: writes PREFIX.indices.npy, PREFIX.divergences.npy and the table",
    )
    add_flags(p, "overwrite", "sha256")
    p.add_argument(
        "--table",
        choices=("csv", "tsv", "jsonl", "none"),
        default="csv",
        help="format of the readable table PREFIX.<format> (default csv)",
    )
    p.add_argument(
        "--query-texts",
        help="text file, one line per query row (default: the "
        "texts recorded in the queries' sidecar)",
    )
    p.add_argument(
        "--gallery-texts",
        help="text file, one line per gallery row (default: the "
        "gallery's sidecar texts or image files)",
    )
    p.add_argument(
        "--summary",
        choices=("mean", "map"),
        help="posterior MODEL: the point summary that scores (default mean; an error for "
        "a point model)",
    )
    p.add_argument("--chunk", type=positive_int, help="gallery rows per chunk (default: automatic)")
    add_flags(p, "family", "json")
    p.add_argument(
        "--column",
        help="embedding column of parquet shards, read with --scheduler or --workers "
        "(default embedding)",
    )
    add_cluster_options(p)


def row_labels(path: str | None, x, name: str) -> list[str] | None:
    """Texts (or source files) naming each row: from ``path`` (one per line) or the sidecar."""
    from ...provenance import provenance_of

    if path:
        labels = read_utf8(path, f"--{name}-texts").splitlines()
    else:
        prov = provenance_of(x)
        labels = prov.get("texts") or prov.get("sources")
    if labels is not None and len(labels) != len(x):
        raise AnchorDivError(f"{name} texts: {len(labels)} lines for {len(x)} {name} rows")
    return labels


def write_table(path: Path, rows: list[dict]) -> Path:
    sep = TABLE_FORMATS[path.suffix]
    with atomic_file(path) as tmp, tmp.open("w", newline="", encoding="utf-8") as f:
        if sep is None:
            f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        else:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]), delimiter=sep)
            writer.writeheader()
            writer.writerows(rows)
    return path


def run(args) -> int:
    from ...retrieval.divergence import top_k

    outputs = [f"{args.out}.{x}.npy" for x in ("indices", "divergences")]
    table = [f"{args.out}.{args.table}"] if args.table != "none" else []
    check_out(args, *outputs, *table, file=True)
    sharded = args.scheduler is not None or args.workers is not None
    why = "applies to parquet shards, read with --scheduler or --workers"
    option_applies("--column", args.column, sharded, why)
    model, card = load_scorer(args.model, "model", args.summary or "mean")
    why = f"applies to a saved posterior; {args.model} is a point model, which scores as saved"
    option_applies("--summary", args.summary, card.get("type") == "posterior", why)
    queries = load_embeddings(args.queries, "queries")
    qtext = row_labels(args.query_texts, queries, "query")  # checked before the scan
    gtext = None
    with cluster(args) as client:
        if client is None:
            gallery = load_embeddings(args.gallery, "gallery")
            check_encoder(card, queries=queries, gallery=gallery)
            gtext = row_labels(args.gallery_texts, gallery, "gallery")
            idx, div = top_k(model, queries, gallery, args.k, chunk=args.chunk, progress=True)
        else:
            from ...scale import dask as distributed

            gallery = None
            check_encoder(card, queries=queries)
            kw = dict(chunk=args.chunk, progress=True, column=args.column or "embedding")
            idx, div = distributed.top_k(model, queries, args.gallery, args.k, client=client, **kw)
    # a sharded gallery has no single sidecar: its table shows item numbers (gtext None)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    written = {"indices": f"{out}.indices.npy", "divergences": f"{out}.divergences.npy"}
    for key, arr in (("indices", idx), ("divergences", div)):
        with atomic_file(written[key]) as tmp:
            write_npy(tmp, np.asarray(arr))
    rows = [
        {"query": q, "rank": rank, "item": int(i), "divergence": float(d)}
        | ({} if qtext is None else {"query_text": qtext[q]})
        | ({} if gtext is None else {"item_text": gtext[i] if i >= 0 else ""})
        for q, (irow, drow) in enumerate(zip(idx, div))
        for rank, (i, d) in enumerate(zip(irow, drow), start=1)
    ]
    if table:
        written["table"] = str(write_table(Path(f"{out}.{args.table}"), rows))
    report(
        args,
        {**written, "queries": int(idx.shape[0]), "k": int(idx.shape[1])},
        title=f"anchordiv search: top-{idx.shape[1]} of "
        f"{len(gallery) if gallery is not None else 'the sharded'} gallery items for "
        f"{idx.shape[0]} queries under {card.get('kind')} ({args.model})",
        fields=written,
        rows=rows[: min(len(rows), 3 * idx.shape[1])],
    )
    return 0
