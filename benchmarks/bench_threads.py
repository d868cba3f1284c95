"""BLAS thread cap around batched linear algebra: ``ad.inference_data(Posterior)`` before/after.

A Gaussian (NIW) posterior at d = 384 from synthetic anchors; ``inference_data(num_draws)``
draws covariances and takes batched ``eigh`` of each.  Candidates, interleaved per round:

* ``before``: the function without the cap (``uncertainty.inference_data.__wrapped__``), i.e.
  every BLAS call may use all cores' threads;
* ``after``: ``ad.inference_data(post)`` as shipped (BLAS capped by ``anchordiv.threads``).

``--busy N`` starts N spinning processes for the duration (a shared machine's other jobs),
which is where the oversubscription hurts most.  Reported: median wall seconds and the median
per-round ratio after/before.

    .venv/bin/python benchmarks/bench_threads.py --busy 2       # a few minutes on 2 cores
    .venv/bin/python benchmarks/bench_threads.py --quick
"""

from __future__ import annotations

import multiprocessing as mp
import os

import numpy as np

import anchordiv as ad
from anchordiv.checks import uncertainty
from common import interleaved, parser, synthetic_anchors, table, write_results


def spin() -> None:  # a competing job
    while True:
        pass


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--dim", type=int, default=None, help="embedding dimension (default 384)")
    p.add_argument("--draws", type=int, default=None, help="num_draws (default 100)")
    p.add_argument("--busy", type=int, default=0, help="competing spinning processes")
    args = p.parse_args()
    d = args.dim or (64 if args.quick else 384)
    draws = args.draws or (20 if args.quick else 100)
    repeats = args.repeats or (3 if args.quick else 5)
    rng = np.random.default_rng(0)
    broad = synthetic_anchors(rng, 4 * d, d, np.float64)
    targets = synthetic_anchors(rng, 20, d, np.float64)
    post = ad.adapt("gaussian", broad, targets, tau=20.0)
    busy = [mp.Process(target=spin, daemon=True) for _ in range(args.busy)]
    for proc in busy:
        proc.start()
    try:
        res = interleaved(
            {
                "before": lambda: uncertainty.inference_data.__wrapped__(post, num_draws=draws),
                "after": lambda: ad.inference_data(post, num_draws=draws),
            },
            baseline="before",
            repeats=repeats,
        )
    finally:
        for proc in busy:
            proc.terminate()
    rows = [
        {
            "candidate": n,
            "median_s": r["median_s"],
            "ratio": r["ratio"],
            "ratio_min": r["ratio_min"],
            "ratio_max": r["ratio_max"],
        }
        for n, r in res.items()
    ]
    md = (
        f"`inference_data(num_draws={draws})` of a Gaussian posterior, d = {d}, "
        f"{args.busy} competing spinning processes, {repeats} interleaved rounds; "
        f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}.\n\n"
        + table(
            rows,
            [
                ("candidate", "candidate"),
                ("median_s", "median s"),
                ("ratio", "ratio to before"),
                ("ratio_min", "min"),
                ("ratio_max", "max"),
            ],
        )
    )
    path = write_results(
        "bench_threads",
        {"d": d, "num_draws": draws, "busy": args.busy, "results": res},
        md,
        args.tag,
    )
    print(md)
    print(path)


if __name__ == "__main__":
    main()
