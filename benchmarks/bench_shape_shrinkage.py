"""Can the density tell when a prior's *shape* hurts?  Shrink the broad covariance toward its
isotropic control, C_λ = (1 − λ)·C + λ·(tr C / d)·I (λ = 1 is the control's prior), and compare
what the targets' density prefers with what retrieval prefers.

If it could, a recipe could fall back to the control where the prior's directions are wrong (the
WordNet → ImageNet Gaussian is 0.055 below its control at one anchor; the generic and
wrong-domain style priors lose to theirs at 1–5).  Per λ and budget: the default recipe's
posterior from the shrunk prior (its strengths chosen on that prior) and the density score at the
chosen density strength — the exact LOO log predictive summed over targets for n ≥ 3, the
evidence plus the weak hyperprior for n ≤ 2 (``recipe.density_strength``'s criterion).

Tasks as in ``bench_small_n.py``: WordNet → ImageNet (``models/wordnet-glosses-gaussian``) and the
style task (``models/wordnet-visual-art-gaussian``); MiniLM, τ = 20, 300 queries.

    .venv/bin/python benchmarks/bench_shape_shrinkage.py          # ~4 min on 2 cores
    .venv/bin/python benchmarks/bench_shape_shrinkage.py --quick  # 2 subsets, 100 queries
"""

from __future__ import annotations

import collections
import functools

import numpy as np

from anchordiv.adaptation import adapt, statistics as recipe
from anchordiv.adaptation.statistics import broad_moments
from anchordiv.evaluation.curves import MODELS, CurveModel, adaptation_curve
from bench_recipe import TAU
from bench_small_n import load_task, task_main
from common import table

LAMBDAS = (0.0, 0.25, 0.5, 0.75, 1.0)
BUDGETS = (1, 2, 5, 10, 20)


def moment_points(mu: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """``[2d, d]`` points whose ML mean and covariance are ``mu [d]`` and ``cov [d, d]``."""
    w, v = np.linalg.eigh(cov)
    step = np.sqrt(len(w)) * (v * np.sqrt(np.clip(w, 0.0, None))).T
    return np.concatenate([mu + step, mu - step])


def density_score(points, target) -> float:
    """The recipe's density criterion at its chosen strength for the prior of ``points`` (as
    :func:`recipe.gaussian_strengths` builds it), summed over the targets for
    n ≥ ``recipe.MIN_LOO_TARGETS`` (the LOO is a mean per target)."""
    mu, cov = broad_moments(points, reg=1e-3)
    best = float(recipe.density_scores(mu, cov, target).max())
    return best * len(target) if len(target) >= recipe.MIN_LOO_TARGETS else best


SCORES: dict = collections.defaultdict(list)


def _posterior(lam: float, shrunk: dict, broad, target, tau):
    points = shrunk[lam]
    g = recipe.gaussian_strengths(points, target)
    SCORES[(len(target), lam)].append(density_score(points, target))
    d = points.shape[1]
    return adapt(
        "gaussian", points, target, tau=tau, kappa0=g["strength"], nu0=d + 1 + g["strength"]
    ).point("mean")


def run_task(name: str, args) -> dict:
    broad, targets, setup = load_task(name, args.queries)
    mu, cov = broad_moments(broad, reg=1e-3)
    iso = np.trace(cov) / len(mu) * np.eye(len(mu))
    shrunk = {lam: moment_points(mu, (1 - lam) * cov + lam * iso) for lam in LAMBDAS}
    SCORES.clear()
    models = {name: MODELS[name] for name in ("cosine", "gaussian")}
    for lam in LAMBDAS:
        models[f"λ={lam:g}"] = CurveModel(
            functools.partial(_posterior, lam, shrunk), "custom", "gaussian"
        )
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
    for b in curve.budgets[:-1] if curve.budgets[-1] > max(BUDGETS) else curve.budgets:
        cells = {lam: curve.cell(f"λ={lam:g}", b)[0] for lam in LAMBDAS}
        dens = {lam: float(np.mean(SCORES[(b, lam)])) for lam in LAMBDAS}
        rows.append(
            {
                "n": b,
                **{f"auprc {lam:g}": f"{cells[lam]:.3f}" for lam in LAMBDAS},
                "retrieval picks λ": max(cells, key=cells.get),
                "density picks λ": max(dens, key=dens.get),
                **{f"density {lam:g}": dens[lam] for lam in LAMBDAS},
            }
        )
    return {
        "task": name,
        "rows": rows,
        "cosine": float(curve.cell("cosine", 1)[0]),
        "summary": curve.summary(),
    }


def markdown(results, args, seconds) -> str:
    parts = [
        f"{args.queries} queries, {args.subsets} target subsets per budget, τ = {TAU:g}; "
        f"run time {seconds:.0f} s.  `auprc λ`: mean AUPRC of the default posterior from "
        f"the prior shrunk by λ; the density columns: the recipe's criterion at its "
        f"chosen strength, summed over targets (mean over subsets; higher = the targets "
        f"are likelier)."
    ]
    for res in results:
        cols = [
            ("n", "n"),
            *[(f"auprc {lam:g}", f"AUPRC λ={lam:g}") for lam in LAMBDAS],
            ("retrieval picks λ", "retrieval picks λ"),
            ("density picks λ", "density picks λ"),
        ]
        dens = [
            {"n": r["n"], **{f"density {lam:g}": f"{r[f'density {lam:g}']:.1f}" for lam in LAMBDAS}}
            for r in res["rows"]
        ]
        parts += [
            f"## {res['task']} (cosine {res['cosine']:.3f})",
            table(res["rows"], cols),
            table(
                dens, [("n", "n"), *[(f"density {lam:g}", f"density λ={lam:g}") for lam in LAMBDAS]]
            ),
        ]
    return "\n\n".join(parts)


def main() -> None:
    task_main(__doc__, "bench_shape_shrinkage", run_task, markdown, subsets=3)


if __name__ == "__main__":
    main()
