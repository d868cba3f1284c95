"""Can one latent-rank rule be right on both the style task and WordNet → ImageNet?  The default
latent posterior (the recipe's rank, :func:`anchordiv.adaptation.families.latent_gaussian.recipe_rank`) against
the same posterior at fixed ranks (the recipe's β), with what a rule could look at beside it.

Tasks as in ``bench_small_n.py`` (style: ``models/wordnet-visual-art-gaussian``; WordNet →
ImageNet: ``models/wordnet-glosses-gaussian``; MiniLM, τ = 20, 300 queries).  Per task:
mean AUPRC per budget of the target-only latent Gaussian, cosine, the default latent posterior
and its isotropic control, and the posterior at ranks :data:`RANKS`; the anchors-needed ratio;
and the statistics of the prior and targets a rank rule could use — the broad covariance's
stable rank, participation ratio and 95 %-variance rank, and the fraction of the targets'
deviation from the broad mean that the prior's leading k directions capture (against k/d for
random directions).

    .venv/bin/python benchmarks/bench_latent_rank.py          # ~4 min on 2 cores
    .venv/bin/python benchmarks/bench_latent_rank.py --quick  # 2 subsets, 100 queries
"""

from __future__ import annotations

import functools

import numpy as np
from anchordiv.adaptation.families import latent_gaussian

from anchordiv.adaptation import adapt, statistics as recipe
from anchordiv.adaptation.statistics import broad_moments
from anchordiv.evaluation.curves import MODELS, CurveModel, adaptation_curve
from bench_recipe import TAU
from bench_small_n import curve_rows, load_task, task_main
from common import table

RANKS = (8, 16, 32, 64, 128)
BUDGETS = (1, 2, 5, 10, 20)


def _posterior(rank, prior: str, broad, target, tau):
    """The latent posterior with the recipe's β (and rank, unless ``rank`` is fixed)."""
    opts = latent_gaussian.latent_options(broad, target)
    rank = opts["rank"] if rank == "recipe" else rank
    return adapt(
        "latent-gaussian", broad, target, tau=tau, prior=prior, rank=rank, beta=opts["beta"]
    ).point("mean")


def models() -> dict:
    out = {name: MODELS[name] for name in ("cosine", "latent-gaussian")}
    out["posterior (recipe rank)"] = CurveModel(
        functools.partial(_posterior, "recipe", "broad"), "custom", "latent-gaussian"
    )
    out["its isotropic control"] = CurveModel(
        functools.partial(_posterior, "recipe", "isotropic"), "custom", "latent-gaussian"
    )
    for k in RANKS:
        out[f"rank {k}"] = CurveModel(
            functools.partial(_posterior, k, "broad"), "custom", "latent-gaussian"
        )
    return out


def spectrum_rows(broad, targets) -> tuple[dict, list[dict]]:
    """The prior's rank statistics and, per k, the share of the targets' deviation from the
    broad mean in the prior's k leading directions."""
    mu, cov = broad_moments(broad, reg=1e-3)
    w, v = np.linalg.eigh(cov)
    w, v = w[::-1], v[:, ::-1]
    share = np.cumsum(w) / w.sum()
    stats = {
        "stable rank": recipe.stable_rank(w),
        "participation ratio": recipe.participation_ratio(w),
        "95 % variance rank": int(np.searchsorted(share, 0.95)) + 1,
    }
    dev = targets - mu
    rows = [
        {
            "k": k,
            "prior variance": float(share[k - 1]),
            "targets captured": float((((dev @ v[:, :k]) ** 2).sum(1) / (dev**2).sum(1)).mean()),
            "random directions": k / len(w),
        }
        for k in (4, *RANKS)
    ]
    return stats, rows


def run_task(name: str, args) -> dict:
    broad, targets, setup = load_task(name, args.queries)
    curve = adaptation_curve(
        broad,
        targets,
        tau=TAU,
        models=models(),
        budgets=BUDGETS,
        n_subsets=args.subsets,
        seed=0,
        progress=False,
        n_boot=300,
        **setup,
    )
    chosen = {n: [latent_gaussian.latent_options(broad, targets[:n])["rank"]] for n in (1, 2, 5)}
    stats, capture = spectrum_rows(broad, targets)
    return {
        "task": name,
        "budgets": list(curve.budgets),
        "rows": curve_rows(curve, "latent-gaussian"),
        "stats": stats,
        "capture": capture,
        "recipe_rank_first_targets": chosen,
        "summary": curve.summary(),
    }


def markdown(results, args, seconds) -> str:
    parts = [
        f"{args.queries} queries, {args.subsets} target subsets per budget, τ = {TAU:g}; "
        f"fixed ranks use the recipe's β; run time {seconds:.0f} s."
    ]
    for res in results:
        cols = [
            ("model", "model"),
            *[(str(b), f"n={b}") for b in res["budgets"]],
            ("ratio", "anchors ratio"),
        ]
        stats = ", ".join(f"{k} {v:.1f}" for k, v in res["stats"].items())
        parts += [
            f"## {res['task']}: mean AUPRC [95 %]",
            table(res["rows"], cols),
            f"Broad covariance: {stats}.  Share of the targets' deviation from the broad "
            f"mean in the prior's k leading directions:",
            table(
                [
                    {k: (f"{v:.3f}" if isinstance(v, float) else v) for k, v in r.items()}
                    for r in res["capture"]
                ],
                [
                    ("k", "k"),
                    ("prior variance", "prior variance"),
                    ("targets captured", "targets captured"),
                    ("random directions", "random directions (k/d)"),
                ],
            ),
        ]
    return "\n\n".join(parts)


def main() -> None:
    task_main(__doc__, "bench_latent_rank", run_task, markdown, subsets=3, tasks=("style", "wni"))


if __name__ == "__main__":
    main()
