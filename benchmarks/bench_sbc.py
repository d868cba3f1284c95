"""Simulation-based calibration of the library's posteriors (MATH.md round 2, Talts et al. 2018).

For every kind and inference method: θ̃ from the prior adapt builds from fixed broad anchors,
n targets from the kind's likelihood, posterior draws (thinned), ranks of scalar quantities
(``anchordiv.checks.sbc.library_problem``).  Saves one rank-histogram plot per case
(``results/sbc_<kind>_<method>.png``, grey band: 99 % range of a bin count under uniform
ranks) and the χ²/KS p-values and 90 % coverage (``results/bench_sbc.md``).

    .venv/bin/python benchmarks/bench_sbc.py            # d = 4, n = 8: ≈ 15 min (NUTS most)
    .venv/bin/python benchmarks/bench_sbc.py --quick    # d = 3, fewer simulations
"""

from __future__ import annotations

import time
import warnings

import jax

from anchordiv.checks.sbc import library_problem, sbc
from common import RESULTS, parser, table, write_results

jax.config.update("jax_enable_x64", True)

CASES = [("gaussian", "exact"), ("latent-gaussian", "exact"), ("latent-spherical", "exact"),
         ("mixture", "exact"), ("mixture-overlap", "exact"), ("gaussian", "nuts"),
         ("spectral-gamma", "nuts"), ("spectral-horseshoe", "nuts")]
#: library_problem options of a case name (the overlapping mixture: centres 1.5 apart; the
#: spectral prior, rank 2, under its two shrinkage hierarchies)
EXTRA = {"mixture-overlap": ("mixture", {"separation": 1.5}),
         "spectral-gamma": ("spectral", {"options": {"shrinkage": "gamma"}}),
         "spectral-horseshoe": ("spectral", {"options": {"shrinkage": "horseshoe"}})}


def main():
    p = parser(__doc__)
    p.add_argument("--cases", nargs="*", help="case names kind/method (default: all)")
    args = p.parse_args()
    d, n = (3, 5) if args.quick else (4, 8)
    rows = []
    for name, method in CASES:
        if args.cases and f"{name}/{method}" not in args.cases:
            continue
        kind, extra = EXTRA.get(name, (name, {}))
        sims = (30 if method == "nuts" else 100) if args.quick else \
            (60 if method == "nuts" else 400)
        draws = 19 if args.quick else 99
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            problem = library_problem(kind, method=method, d=d, n=n, num_draws=draws, seed=0,
                                      **extra)
            result = sbc(**problem, num_simulations=sims, seed=1, progress=False)
        seconds = time.perf_counter() - t0
        tag = f"-{args.tag}" if args.tag else ("-quick" if args.quick else "")
        plot = RESULTS / f"sbc_{name}_{method}{tag}.png"
        result.plot(plot, title=f"{name} ({method}), d={d}, n={n}: {sims} simulations, "
                                f"{result.num_draws} draws (thin {problem['thin']})")
        label = name
        for q, s in result.summary().items():
            rows.append({"case": f"{label} / {method}", "quantity": q,
                         "chi2_p": round(s["chi2_p"], 3), "ks_p": round(s["ks_p"], 3),
                         "coverage90": round(s["coverage90"], 3), "simulations": sims,
                         "draws": result.num_draws, "seconds": round(seconds, 1),
                         "plot": plot.name})
        print(rows[-1], flush=True)
        save(rows, d, n, args)                 # after every case: partial results survive


def save(rows, d, n, args):
    md = table(rows, [("case", "kind / method"), ("quantity", "quantity"),
                      ("chi2_p", "χ² p"), ("ks_p", "KS p"), ("coverage90", "90 % coverage"),
                      ("simulations", "sims"), ("draws", "draws"), ("seconds", "s"),
                      ("plot", "plot")])
    write_results("bench_sbc", {"d": d, "n": n, "rows": rows}, md,
                  tag=args.tag or ("quick" if args.quick else ""))


if __name__ == "__main__":
    main()
