"""``anchordiv search``: top-k retrieval of a gallery by a saved anchor model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ._cluster import add_cluster_options, cluster
from ._io import load_embeddings


def register(sub) -> None:
    p = sub.add_parser("search", help="rank a gallery by anchor divergence (top-k)",
                       description="For each query embedding, find the K gallery items with the "
                                   "smallest anchor divergence D(query -> item) under MODEL. "
                                   "The gallery is streamed in chunks, so a memory-mapped .npy "
                                   "larger than memory works. With --scheduler or --workers "
                                   "the scan runs on a Dask cluster, one task per block of "
                                   "the gallery, which may then be sharded.")
    p.add_argument("model", help="model directory written by `anchordiv fit` or `adapt`")
    p.add_argument("queries", help="query embeddings, .npy [Q, d]")
    p.add_argument("gallery", help="gallery embeddings, .npy [G, d]; with --scheduler or "
                                   "--workers also a directory or glob of .npy / .parquet "
                                   "shards (clip-retrieval's img_emb/img_emb_N.npy layout)")
    p.add_argument("-k", type=int, default=10, help="neighbours per query (default 10)")
    p.add_argument("-o", "--out", required=True,
                   help="output prefix: writes PREFIX.indices.npy, PREFIX.divergences.npy")
    p.add_argument("--chunk", type=int, help="gallery rows per chunk (default: automatic)")
    p.add_argument("--column", default="embedding",
                   help="embedding column of parquet shards (default %(default)s)")
    add_cluster_options(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from ..divergence import top_k
    from ..io import load_model

    model = load_model(args.model)
    queries = load_embeddings(args.queries, "queries")
    with cluster(args) as client:
        if client is None:
            idx, div = top_k(model, queries, load_embeddings(args.gallery, "gallery"), args.k,
                             chunk=args.chunk, progress=True)
        else:
            from .. import distributed

            idx, div = distributed.top_k(model, queries, args.gallery, args.k, client=client,
                                         chunk=args.chunk, column=args.column, progress=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.save(f"{out}.indices.npy", idx)
    np.save(f"{out}.divergences.npy", div)
    print(json.dumps({"indices": f"{out}.indices.npy", "divergences": f"{out}.divergences.npy",
                      "queries": int(idx.shape[0]), "k": int(idx.shape[1])}))
    return 0
