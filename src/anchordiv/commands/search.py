"""``anchordiv search``: top-k retrieval of a gallery by a saved anchor model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ._io import load_embeddings


def register(sub) -> None:
    p = sub.add_parser("search", help="rank a gallery by anchor divergence (top-k)",
                       description="For each query embedding, find the K gallery items with the "
                                   "smallest anchor divergence D(query -> item) under MODEL. "
                                   "The gallery is streamed in chunks, so a memory-mapped .npy "
                                   "larger than memory works.")
    p.add_argument("model", help="model directory written by `anchordiv fit` or `adapt`")
    p.add_argument("queries", help="query embeddings, .npy [Q, d]")
    p.add_argument("gallery", help="gallery embeddings, .npy [G, d]")
    p.add_argument("-k", type=int, default=10, help="neighbours per query (default 10)")
    p.add_argument("-o", "--out", required=True,
                   help="output prefix: writes PREFIX.indices.npy, PREFIX.divergences.npy")
    p.add_argument("--chunk", type=int, help="gallery rows per chunk (default: automatic)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..divergence import top_k
    from ..io import load_model

    model = load_model(args.model)
    idx, div = top_k(model, load_embeddings(args.queries, "queries"),
                     load_embeddings(args.gallery, "gallery"), args.k, chunk=args.chunk,
                     progress=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.save(f"{out}.indices.npy", idx)
    np.save(f"{out}.divergences.npy", div)
    print(json.dumps({"indices": f"{out}.indices.npy", "divergences": f"{out}.divergences.npy",
                      "queries": int(idx.shape[0]), "k": int(idx.shape[1])}))
    return 0
