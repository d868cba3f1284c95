"""faiss export: exact agreement and approximate recall@k against anchordiv's exact top-k.

Builds a ``GalleryIndex`` (Gaussian and softmax models), takes its exact streaming top-k as the
reference and exports the keys to faiss: ``flat`` (exact inner product), ``ivf`` and ``hnsw``
(approximate, through the MIPS → L2 reduction; candidates re-scored exactly).  Reports build
and search seconds and recall@k (mean fraction of the exact top-k found).

    .venv/bin/python benchmarks/bench_faiss.py                # G = 50,000
    .venv/bin/python benchmarks/bench_faiss.py --quick        # G = 5,000
"""

from __future__ import annotations

import time

import numpy as np

import anchordiv as ad
from common import parser, synthetic_anchors, table, unit_rows, write_results

K = 10


def configs(n_gallery: int) -> list[tuple[str, dict]]:
    nlist = int(4 * np.sqrt(n_gallery))
    return [
        ("flat", {}),
        ("ivf", {"nlist": nlist, "nprobe": 8}),
        ("ivf", {"nlist": nlist, "nprobe": 32}),
        ("hnsw", {"hnsw_m": 32, "ef_search": 64}),
        ("hnsw", {"hnsw_m": 32, "ef_search": 256}),
    ]


def main() -> None:
    p = parser(__doc__.split("\n\n")[0])
    p.add_argument("--gallery", type=int, default=None, help="G (default 50,000; quick 5,000)")
    p.add_argument("--queries", type=int, default=500)
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--tau", type=float, default=100.0)
    args = p.parse_args()
    n_g = args.gallery or (5000 if args.quick else 50_000)
    rng = np.random.default_rng(0)
    anchors = synthetic_anchors(rng, 2000, args.dim)
    x, y = (
        unit_rows(rng, args.queries, args.dim, decay=0.3),
        unit_rows(rng, n_g, args.dim, decay=0.3),
    )
    rows = []
    for kind in ("gaussian", "softmax"):
        index = ad.GalleryIndex(ad.fit(kind, anchors, tau=args.tau), y)
        index.top_k(x, K)  # compile first: the timings below are steady state
        t0 = time.perf_counter()
        exact_i, exact_d = index.top_k(x, K)
        exact_s = time.perf_counter() - t0
        rows.append(
            {
                "model": kind,
                "index": "anchordiv exact",
                "build_s": 0.0,
                "search_s": exact_s,
                "recall": 1.0,
                "max_rel_error": 0.0,
            }
        )
        for name, opts in configs(n_g):
            t0 = time.perf_counter()
            fx = index.to_faiss(name, **opts)
            build_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            found_i, found_d = fx.search(x, K)
            search_s = time.perf_counter() - t0
            label = name + "".join(f" {k}={v}" for k, v in opts.items())
            err = np.abs(found_d - exact_d) / np.maximum(np.abs(exact_d), 1e-6)
            rows.append(
                {
                    "model": kind,
                    "index": label,
                    "build_s": build_s,
                    "search_s": search_s,
                    "recall": ad.retrieval.recall_at_k(found_i, exact_i),
                    "max_rel_error": float(err.max()) if name == "flat" else "",
                }
            )
            print(
                f"{kind} {label}: recall@{K} {rows[-1]['recall']:.3f} build {build_s:.2f}s "
                f"search {search_s:.2f}s",
                flush=True,
            )
    md = table(
        rows,
        [
            ("model", "model"),
            ("index", "index"),
            ("build_s", "build s"),
            ("search_s", "search s"),
            ("recall", f"recall@{K}"),
            ("max_rel_error", "flat: max rel. error of D"),
        ],
    )
    md += (
        f"\n\nG = {n_g:,} gallery items, {args.queries} queries, d = {args.dim}, "
        f"τ = {args.tau}, float32 keys; recall against anchordiv's exact streaming top-{K}.  "
        "Approximate kinds search reduced keys [k, √(M² − ‖k‖²)] under L2 and re-score "
        "their candidates exactly.\n"
    )
    print(md)
    path = write_results(
        "bench_faiss",
        {
            "rows": rows,
            "gallery": n_g,
            "queries": args.queries,
            "dim": args.dim,
            "k": K,
            "quick": args.quick,
        },
        md,
        tag=args.tag or ("quick" if args.quick else ""),
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
