"""Time of ``ad.divergence`` for every anchor kind relative to a plain cosine matrix product.

Issue 2's first benchmark and issue 6's "every kind vs cosine": queries ``[Q, d]`` and gallery
``[G, d]`` float32 (default Q = 2000, G = 20000, d = 384 and 768), synthetic unit embeddings
and 1000 synthetic anchors with a decaying spectrum (``common.synthetic_anchors``).  The
baseline is the jitted product ``X @ Yᵀ`` on the same host arrays (so both include moving the
inputs to the device).  For each kind two figures are measured, interleaved with the baseline:

* ``divergence``: ``ad.divergence(model, X, Y)`` from scratch (validation, query and key terms,
  the GEMM, the clamp) — the per-item work of the gallery is part of the call;
* ``index``: ``GalleryIndex(model, Y).divergence(X)`` with the gallery's keys cached (index once,
  query many) — what repeated retrieval costs.

Targets (issue 2/6): single-Gaussian family (gaussian, latent-gaussian, latent-spherical)
≤ 1.3×, mixture (4 components) ≤ 3×.  Ratios are medians over interleaved rounds (wall time;
the CPU-time ratio is printed beside it as a check against other load on the machine).

    .venv/bin/python benchmarks/bench_divergence.py            # a few minutes
    .venv/bin/python benchmarks/bench_divergence.py --quick    # smoke run
    .venv/bin/python benchmarks/bench_divergence.py --dims 384 --anchors 2000 --isotropic \
        --kinds gaussian,latent-gaussian,latent-spherical --tag isotropic   # issue 19's setup
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

import anchordiv as ad
from common import interleaved, parser, synthetic_anchors, table, unit_rows, write_results

TARGETS = {"gaussian": 1.3, "latent-gaussian": 1.3, "latent-spherical": 1.3, "mixture": 3.0}


@jax.jit
def cosine_matmul(x, y):
    """The baseline: one plain matrix product ``[Q, d] × [d, G]``."""
    return x @ y.T


KINDS = ("softmax", "gaussian", "latent-gaussian", "latent-spherical", "mixture", "mix")


def models(anchors: np.ndarray, tau: float, kinds=KINDS) -> dict:
    """One fitted model per kind in ``kinds`` (``mix``: softmax and Gaussian, p = 0.5) on
    ``anchors [N, d]``."""
    fit = {
        "mixture": lambda: ad.fit("mixture", anchors, tau=tau, components=4, max_iter=30),
        "mix": lambda: ad.mix(
            ad.fit("softmax", anchors, tau=tau), ad.fit("gaussian", anchors, tau=tau), 0.5
        ),
    }
    return {kind: fit.get(kind, lambda: ad.fit(kind, anchors, tau=tau))() for kind in kinds}


def measure(
    d: int,
    n_queries: int,
    n_gallery: int,
    n_anchors: int,
    repeats: int,
    tau: float,
    *,
    kinds=KINDS,
    isotropic: bool = False,
) -> list[dict]:
    rng = np.random.default_rng(d)
    x, y = unit_rows(rng, n_queries, d, decay=0.3), unit_rows(rng, n_gallery, d, decay=0.3)
    anchors = unit_rows(rng, n_anchors, d) if isotropic else synthetic_anchors(rng, n_anchors, d)
    fitted = models(anchors, tau, kinds)
    rows = []
    for kind, model in tqdm(fitted.items(), desc=f"d={d}", unit="kind"):
        index = ad.GalleryIndex(model, y)
        r = interleaved(
            {
                "cosine": lambda: cosine_matmul(x, y),
                "divergence": lambda: ad.divergence(model, x, y),
                "index": lambda: index.divergence(x),
            },
            "cosine",
            repeats,
        )
        rows.append(
            {
                "kind": kind,
                "d": d,
                "Q": n_queries,
                "G": n_gallery,
                "rank": getattr(model, "rank", ""),
                "cosine_s": r["cosine"]["median_s"],
                "divergence_s": r["divergence"]["median_s"],
                "ratio": r["divergence"]["ratio"],
                "ratio_range": f"{r['divergence']['ratio_min']:.2f}–"
                f"{r['divergence']['ratio_max']:.2f}",
                "cpu_ratio": r["divergence"]["cpu_ratio"],
                "index_ratio": r["index"]["ratio"],
                "index_cpu_ratio": r["index"]["cpu_ratio"],
                "target": TARGETS.get(kind, ""),
                "meets_target": ("yes" if r["divergence"]["ratio"] <= TARGETS[kind] else "no")
                if kind in TARGETS
                else "",
            }
        )
        print(
            f"d={d} {kind:17s} divergence/cosine {rows[-1]['ratio']:.2f}x "
            f"(cpu {rows[-1]['cpu_ratio']:.2f}x)  index/cosine {rows[-1]['index_ratio']:.2f}x",
            flush=True,
        )
    return rows


COLUMNS = [
    ("kind", "kind"),
    ("d", "d"),
    ("rank", "rank k"),
    ("cosine_s", "cosine s"),
    ("divergence_s", "divergence s"),
    ("ratio", "divergence / cosine (wall)"),
    ("ratio_range", "range"),
    ("cpu_ratio", "CPU-time ratio"),
    ("index_ratio", "cached index / cosine"),
    ("target", "target"),
    ("meets_target", "met"),
]


def main() -> None:
    p = parser(__doc__.split("\n\n")[0])
    p.add_argument(
        "--dims",
        default=None,
        help="comma-separated embedding dimensions (default 384,768; quick 384)",
    )
    p.add_argument("--queries", type=int, default=None, help="Q (default 2000; quick 512)")
    p.add_argument("--gallery", type=int, default=None, help="G (default 20000; quick 4096)")
    p.add_argument("--anchors", type=int, default=1000, help="anchors N for every model")
    p.add_argument("--tau", type=float, default=100.0)
    p.add_argument("--kinds", default=",".join(KINDS), help="comma-separated kinds to time")
    p.add_argument(
        "--isotropic",
        action="store_true",
        help="isotropic unit anchors (latent ranks near d) instead of a decaying spectrum",
    )
    args = p.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    n_q = args.queries or (512 if args.quick else 2000)
    n_g = args.gallery or (4096 if args.quick else 20000)
    repeats = args.repeats or (2 if args.quick else 5)
    dims = args.dims or ("384" if args.quick else "384,768")
    rows = []
    for d in (int(v) for v in dims.split(",")):
        rows += measure(
            d, n_q, n_g, args.anchors, repeats, args.tau, kinds=kinds, isotropic=args.isotropic
        )
    md = table(rows, COLUMNS)
    note = (
        "\n\nRatios are medians over interleaved rounds of time(scorer) / time(cosine "
        "matmul) measured in the same round; float32; JAX default device "
        f"(`{jax.devices()[0]}`).  Synthetic unit embeddings and {args.anchors} "
        + (
            "isotropic unit anchors"
            if args.isotropic
            else "synthetic anchors with a power-law spectrum"
        )
        + "; latent ranks by the 95 % variance rule.  "
        "The per-item (key) work of a from-scratch call costs about rank/Q of the GEMM "
        "(gallery G·d·r against Q·G·d), so small Q (the --quick sizes) inflates ratios.  "
        "'cached index' = `GalleryIndex(model, Y).divergence(X)` (keys computed once).\n"
    )
    print(md)
    path = write_results(
        "bench_divergence",
        {
            "rows": rows,
            "queries": n_q,
            "gallery": n_g,
            "anchors": args.anchors,
            "tau": args.tau,
            "repeats": repeats,
            "quick": args.quick,
            "kinds": kinds,
            "isotropic": args.isotropic,
        },
        md + note,
        tag=args.tag or ("quick" if args.quick else ""),
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    jnp.zeros(1).block_until_ready()
    main()
