"""A leave-anchors-out *ranking* objective for the prior strength (issue 17 suggests one), measured
before building it: does the strength that ranks held-out targets best among broad-like
negatives also give the best retrieval?

Objective (per strength s): leave target tᵢ out, fit the NIW posterior mean Σ on the others,
rank the other targets (relevant) among :data:`NEGATIVES` unit-norm draws from the broad
Gaussian (irrelevant) by the Gaussian anchor divergence (tᵢ − y)ᵀ Σ (tᵢ − y); the objective is
the mean AUPRC over left-out targets (``anchordiv.retrieval.metrics.auprc``).  It asks for a
geometry in which the targets cluster against the background — right for a single-concept
target set, and the question is whether it is right for the style task's targets, which name
16 different styles that retrieval must tell apart.

Task: the style task of ``bench_recipe.py`` (MiniLM, τ = 20, 300 queries, prior
``models/wordnet-visual-art-gaussian``).  Reported per budget: the objective and the retrieval
AUPRC of the posterior at each fixed strength (same seeded target subsets), and the strength
each picks.

    .venv/bin/python benchmarks/bench_ranking_proxy.py          # ~3 min on 2 cores
    .venv/bin/python benchmarks/bench_ranking_proxy.py --quick  # 2 subsets, 100 queries
"""

from __future__ import annotations

import functools
import time

import numpy as np

from anchordiv.adaptation import adapt
from anchordiv.adaptation.families import NIW
from anchordiv.adaptation.statistics import broad_moments, scatter
from anchordiv.evaluation.curves import CurveModel, adaptation_curve, subset
from anchordiv.retrieval.metrics import auprc
from bench_recipe import TAU, style_task
from common import parser, table, write_results

STRENGTHS = (0.3, 3.0, 10.0, 30.0, 100.0, 1000.0)
BUDGETS = (5, 20, 40)
NEGATIVES = 300


def negatives(mu0, cov, seed: int = 0) -> np.ndarray:
    """``[NEGATIVES, d]`` unit-norm draws from N(μ₀, Σ_B) (the prior's moment points are
    mirror pairs, not a sample)."""
    x = np.random.default_rng(seed).multivariate_normal(mu0, cov, size=NEGATIVES)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def objective(mu0, cov, neg, targets, s: float) -> float:
    """Mean over left-out targets of the AUPRC of the other targets among ``neg``."""
    d = len(mu0)
    prior = NIW.from_scale(mu0, cov, s, d + 1 + s)
    out = []
    for i in range(len(targets)):
        rest = np.delete(targets, i, axis=0)
        post = prior.update_stats(*scatter(rest))
        sigma = post.psi / (post.nu - d - 1)
        diff = np.concatenate([rest, neg]) - targets[i]
        div = np.einsum("ij,jk,ik->i", diff, sigma, diff)
        out.append(auprc(np.r_[np.ones(len(rest)), np.zeros(len(neg))], -div))
    return float(np.mean(out))


def _fixed(s: float, broad, target, tau):
    d = broad.shape[1]
    return adapt("gaussian", broad, target, tau=tau, kappa0=s, nu0=d + 1 + s).point("mean")


def main() -> None:
    p = parser(__doc__.split("\n\n")[0])
    p.add_argument("--subsets", type=int, default=None, help="target subsets per budget (4)")
    p.add_argument("--queries", type=int, default=None, help="queries (300)")
    args = p.parse_args()
    args.subsets = args.subsets or (2 if args.quick else 4)
    args.queries = args.queries or (100 if args.quick else 300)
    start = time.time()
    broad, targets, setup = style_task(args.queries)
    mu0, cov = broad_moments(broad, reg=1e-3)
    neg = negatives(mu0, cov)
    models = {
        f"s={s:g}": CurveModel(functools.partial(_fixed, s), "custom", "gaussian")
        for s in STRENGTHS
    }
    curve = adaptation_curve(
        broad,
        targets,
        tau=TAU,
        models=models,
        budgets=BUDGETS,
        n_subsets=args.subsets,
        seed=0,
        progress=False,
        n_boot=200,
        **setup,
    )
    rows = []
    for n in BUDGETS:
        subsets = [targets[subset(len(targets), n, k, 0)] for k in range(args.subsets)]
        for s in STRENGTHS:
            rows.append(
                {
                    "n": n,
                    "s": s,
                    "objective": float(np.mean([objective(mu0, cov, neg, t, s) for t in subsets])),
                    "retrieval": float(curve.cell(f"s={s:g}", n)[0]),
                }
            )
    picks = []
    for n in BUDGETS:
        at = [r for r in rows if r["n"] == n]
        picks.append(
            {
                "n": n,
                "objective picks": max(at, key=lambda r: r["objective"])["s"],
                "retrieval picks": max(at, key=lambda r: r["retrieval"])["s"],
            }
        )
    seconds = time.time() - start
    md = "\n\n".join(
        [
            f"Style task, {args.queries} queries, {args.subsets} target subsets per budget, "
            f"{NEGATIVES} negatives, τ = {TAU:g}; run time {seconds:.0f} s.",
            "## Objective and retrieval AUPRC per fixed strength",
            table(
                [
                    {
                        **r,
                        "objective": f"{r['objective']:.3f}",
                        "retrieval": f"{r['retrieval']:.3f}",
                    }
                    for r in rows
                ],
                [
                    ("n", "n"),
                    ("s", "s"),
                    ("objective", "ranking objective"),
                    ("retrieval", "retrieval AUPRC"),
                ],
            ),
            "## The strength each picks",
            table(
                picks,
                [
                    ("n", "n"),
                    ("objective picks", "objective picks s"),
                    ("retrieval picks", "retrieval picks s"),
                ],
            ),
        ]
    )
    path = write_results(
        "bench_ranking_proxy",
        {"rows": rows, "picks": picks, "seconds": seconds},
        md,
        args.tag or ("quick" if args.quick else ""),
    )
    print(path.read_text())


if __name__ == "__main__":
    main()
