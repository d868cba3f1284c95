"""The paper's Table 4 on an accelerator: fit + preprocess + retrieval time against N anchors,
and the product precision ``"highest"`` against ``"fast"`` with their top-k agreement.

For softmax (empirical) and Gaussian anchor models, N ∈ {10³, 10⁴, 10⁵} anchors and each
``precision`` in ``--precisions``: fit the model (``ad.fit``), preprocess the gallery
(``GalleryIndex``: key terms of every item, once) and retrieve the top-10 of every query
(``index.top_k``), at the paper's size (10,000 queries × 50,000 gallery items, d = 384), with
3 warm-up runs and 10 timed runs of the whole pipeline (the paper's protocol; medians reported,
with the fastest and slowest run).  Softmax cost grows with N (its cumulant is a sum over
anchors); the Gaussian's is flat after fitting (ψ is quadratic, N only enters the fit).

Precision: ``"highest"`` = exact float32 products (the library default on every backend),
``"fast"`` = the device's default products in the cancellation-aware form (TF32 on
A100/H100/H200; on CPU both are float32).  For every (kind, N) the top-10 of ``"fast"`` are
compared with those of ``"highest"``: recall@10 (fraction of the same items) and the fraction
of queries whose top-10 come in the same order.

    .venv/bin/python benchmarks/bench_scale.py --tag gpu        # the paper's size, on a GPU
    .venv/bin/python benchmarks/bench_scale.py --quick          # Q=500, G=4000, N ≤ 10⁴ (CPU)
"""

from __future__ import annotations

import time

import numpy as np

import anchordiv as ad
from common import block, parser, synthetic_anchors, table, unit_rows, write_results

K = 10
CHUNK = 8192
KINDS = ("softmax", "gaussian")


def pipeline(kind: str, anchors, x, y, tau: float, precision: str) -> dict:
    """One run: seconds of each stage and the top-k indices ``[Q, K]``."""
    t0 = time.perf_counter()
    model = block(ad.fit(kind, anchors, tau=tau))
    t1 = time.perf_counter()
    index = ad.GalleryIndex(model, y, chunk=CHUNK, precision=precision, progress=False)
    block(index.keys)  # keys are computed asynchronously
    t2 = time.perf_counter()
    idx, _ = index.top_k(x, K, chunk=CHUNK, progress=False)
    t3 = time.perf_counter()
    return {
        "fit_s": t1 - t0,
        "preprocess_s": t2 - t1,
        "retrieval_s": t3 - t2,
        "total_s": t3 - t0,
        "indices": idx,
    }


def measure(
    kind: str, anchors, x, y, tau: float, precision: str, warmups: int, runs: int
) -> tuple[dict, np.ndarray]:
    """Medians over ``runs`` timed runs after ``warmups`` (min/max of the total too)."""
    for _ in range(warmups):
        pipeline(kind, anchors, x, y, tau, precision)
    timed = [pipeline(kind, anchors, x, y, tau, precision) for _ in range(runs)]
    stages = ("fit_s", "preprocess_s", "retrieval_s", "total_s")
    row = {
        "kind": kind,
        "N": len(anchors),
        "precision": precision,
        **{s: float(np.median([t[s] for t in timed])) for s in stages},
        "total_range_s": f"{min(t['total_s'] for t in timed):.3g}–"
        f"{max(t['total_s'] for t in timed):.3g}",
    }
    row["after_fit_s"] = row["preprocess_s"] + row["retrieval_s"]
    return row, timed[-1]["indices"]


def agreement(fast: np.ndarray, exact: np.ndarray) -> dict:
    """Recall@K of ``fast`` against ``exact`` top-K ``[Q, K]`` and the same-order fraction."""
    return {
        "recall_at_k": ad.retrieval.recall_at_k(fast, exact),
        "same_order": float(np.mean(np.all(fast == exact, axis=1))),
    }


def main(argv=None) -> list[dict]:
    import jax

    p = parser(__doc__.split("\n\n")[0])
    p.add_argument(
        "--anchors",
        default=None,
        help="comma-separated N (default 1000,10000,100000; quick 100,1000,10000)",
    )
    p.add_argument("--queries", type=int, default=None, help="Q (default 10000; quick 500)")
    p.add_argument("--gallery", type=int, default=None, help="G (default 50000; quick 4000)")
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--tau", type=float, default=100.0)
    p.add_argument("--warmups", type=int, default=None, help="default 3; quick 1")
    p.add_argument("--runs", type=int, default=None, help="timed runs (default 10; quick 3)")
    p.add_argument("--precisions", default="highest,fast")
    args = p.parse_args(argv)
    sizes = [
        int(v)
        for v in (args.anchors or ("100,1000,10000" if args.quick else "1000,10000,100000")).split(
            ","
        )
    ]
    n_q = args.queries or (500 if args.quick else 10_000)
    n_g = args.gallery or (4000 if args.quick else 50_000)
    warmups = args.warmups if args.warmups is not None else (1 if args.quick else 3)
    runs = args.runs or (3 if args.quick else 10)
    precisions = [v for v in args.precisions.split(",") if v]
    rng = np.random.default_rng(0)
    x, y = unit_rows(rng, n_q, args.dim, decay=0.3), unit_rows(rng, n_g, args.dim, decay=0.3)
    rows, agree = [], []
    for n in sizes:
        anchors = synthetic_anchors(rng, n, args.dim)
        for kind in KINDS:
            found = {}
            for precision in precisions:
                row, found[precision] = measure(
                    kind, anchors, x, y, args.tau, precision, warmups, runs
                )
                rows.append(row)
                print(
                    f"{kind:8s} N={n:>6d} {precision:7s}: fit {row['fit_s']:.3g}s  "
                    f"preprocess {row['preprocess_s']:.3g}s  retrieval "
                    f"{row['retrieval_s']:.3g}s  total {row['total_s']:.3g}s",
                    flush=True,
                )
            if "highest" in found and "fast" in found:
                agree.append({"kind": kind, "N": n, **agreement(found["fast"], found["highest"])})
    rows.sort(key=lambda r: (r["kind"], r["precision"], r["N"]))
    md = table(
        rows,
        [
            ("kind", "kind"),
            ("N", "anchors N"),
            ("precision", "precision"),
            ("fit_s", "fit s"),
            ("preprocess_s", "preprocess s"),
            ("retrieval_s", "retrieval s"),
            ("after_fit_s", "preprocess + retrieval s"),
            ("total_s", "total s"),
            ("total_range_s", "total range s"),
        ],
    )
    if agree:
        md += "\n\nTop-10 of `fast` against `highest`:\n\n" + table(
            agree,
            [
                ("kind", "kind"),
                ("N", "anchors N"),
                ("recall_at_k", "recall@10"),
                ("same_order", "queries with the same top-10 order"),
            ],
        )
    md += (
        f"\n\nQ = {n_q:,} queries, G = {n_g:,} gallery items, d = {args.dim}, top-{K}, "
        f"float32, device `{jax.devices()[0]}`; medians of {runs} timed runs after {warmups} "
        "warm-up runs of the whole pipeline (fit + preprocess + retrieval).  Preprocess = "
        "key terms of the gallery (once); retrieval = query terms + one product with the "
        "cached keys + top-k.  `fast` differs from `highest` only where the device has "
        "reduced-precision products (TF32/bf16); on CPU both are float32."
        + ("  **Reduced size (--quick): not the paper's 10,000 × 50,000.**" if args.quick else "")
        + "\n"
    )
    print(md)
    path = write_results(
        "bench_scale",
        {
            "rows": rows,
            "agreement": agree,
            "queries": n_q,
            "gallery": n_g,
            "dim": args.dim,
            "tau": args.tau,
            "warmups": warmups,
            "runs": runs,
            "quick": args.quick,
        },
        md,
        tag=args.tag or ("quick" if args.quick else ""),
    )
    print(f"wrote {path}")
    return rows + agree


if __name__ == "__main__":
    main()
