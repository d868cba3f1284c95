"""Simulation-based calibration of the library's posteriors (docs/mathematics.md, "Calibration: simulation-based calibration"; Talts et al. 2018).

For every kind and inference method (exact, NUTS, SVI with a low-rank guide; the structured
factor and LKJ priors by NUTS and SVI): θ̃ from the prior
adapt builds from the family's fixed broad anchors, n targets from the kind's likelihood,
posterior draws (thinned), ranks of scalar quantities
(``anchordiv.checks.sbc.library_problem``).  Saves one rank-histogram plot per case
(``results/sbc_<kind>_<method>.png``, grey band: 99 % range of a bin count under uniform
ranks) and the χ²/KS p-values and 90 % coverage (``results/bench_sbc.md``).  NUTS runs on the
cached compiled chain runner (one compilation per case), SVI on its cached step.

    .venv/bin/python benchmarks/bench_sbc.py            # d = 4, n = 8, 400 simulations
    .venv/bin/python benchmarks/bench_sbc.py --quick    # d = 3, fewer simulations
    .venv/bin/python benchmarks/bench_sbc.py --cases gaussian/nuts --sims 200 --draws 19
"""

from __future__ import annotations

import time
import warnings

import jax

from anchordiv.checks.sbc import library_problem, sbc
from common import RESULTS, parser, table, write_results

jax.config.update("jax_enable_x64", True)

KINDS = (
    "gaussian",
    "diagonal-gaussian",
    "latent-gaussian",
    "latent-spherical",
    "mixture",
    "mixture-overlap",
)
#: priors without an exact update (structured factor analysis at rank 1 and LKJ; the spectral
#: prior, rank 2, under its two shrinkage hierarchies): NUTS and SVI only
SAMPLED_ONLY = ("structured-factor", "structured-lkj", "spectral-gamma", "spectral-horseshoe")
CASES = [(kind, method) for method in ("exact", "nuts", "svi") for kind in KINDS] + [
    (name, method) for method in ("nuts", "svi") for name in SAMPLED_ONLY
]
#: library_problem options of a case name (the overlapping mixture: centres 1.5 apart)
EXTRA = {
    "mixture-overlap": ("mixture", {"separation": 1.5}),
    "structured-factor": ("factor-gaussian", {}),
    "structured-lkj": ("lkj-gaussian", {}),
    "spectral-gamma": ("spectral", {"options": {"shrinkage": "gamma"}}),
    "spectral-horseshoe": ("spectral", {"options": {"shrinkage": "horseshoe"}}),
}


def main():
    p = parser(__doc__)
    p.add_argument("--cases", nargs="*", help="case names kind/method (default: all)")
    p.add_argument("--sims", type=int, help="simulations per case (default 400; quick 100)")
    p.add_argument(
        "--draws", type=int, help="posterior draws after thinning (default 99; quick 19)"
    )
    p.add_argument(
        "--dims",
        type=int,
        nargs=2,
        metavar=("D", "N"),
        help="dimension and number of targets (default 4 8; quick 3 5)",
    )
    args = p.parse_args()
    d, n = args.dims or ((3, 5) if args.quick else (4, 8))
    rows = []
    for name, method in CASES:
        if args.cases and f"{name}/{method}" not in args.cases:
            continue
        kind, extra = EXTRA.get(name, (name, {}))
        sims = args.sims or (100 if args.quick else 400)
        draws = args.draws or (19 if args.quick else 99)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            problem = library_problem(
                kind, method=method, d=d, n=n, num_draws=draws, seed=0, **extra
            )
            result = sbc(**problem, num_simulations=sims, seed=1, progress=False)
        seconds = time.perf_counter() - t0
        tag = f"-{args.tag}" if args.tag else ("-quick" if args.quick else "")
        plot = RESULTS / f"sbc_{name}_{method}{tag}.png"
        result.plot(
            plot,
            title=f"{name} ({method}), d={d}, n={n}: {sims} simulations, "
            f"{result.num_draws} draws (thin {problem['thin']})",
        )
        for q, s in result.summary().items():
            rows.append(
                {
                    "case": f"{name} / {method}",
                    "quantity": q,
                    "chi2_p": round(s["chi2_p"], 3),
                    "ks_p": round(s["ks_p"], 3),
                    "coverage90": round(s["coverage90"], 3),
                    "simulations": sims,
                    "draws": result.num_draws,
                    "seconds": round(seconds, 1),
                    "plot": plot.name,
                }
            )
        print(rows[-1], flush=True)
        save(rows, d, n, args)  # after every case: partial results survive


def save(rows, d, n, args):
    md = table(
        rows,
        [
            ("case", "kind / method"),
            ("quantity", "quantity"),
            ("chi2_p", "χ² p"),
            ("ks_p", "KS p"),
            ("coverage90", "90 % coverage"),
            ("simulations", "sims"),
            ("draws", "draws"),
            ("seconds", "s"),
            ("plot", "plot"),
        ],
    )
    write_results(
        "bench_sbc",
        {"d": d, "n": n, "rows": rows},
        md,
        tag=args.tag or ("quick" if args.quick else ""),
    )


if __name__ == "__main__":
    main()
