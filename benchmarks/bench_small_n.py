"""The recipe's strength at one and two target anchors: exact LOO from two targets on (the rule
until this benchmark) against the evidence with the weak hyperprior below three targets (the
default, ``recipe.MIN_LOO_TARGETS``), on the two tasks of the main job whose default curves
start at one anchor.

Tasks (both MiniLM, cached embeddings, τ = 20, 300 seeded queries):

* **wni** — WordNet → ImageNet as in the main job (all eligible ImageNet classes, 8 hyponym
  glosses each, 6 prompt templates per class as targets), prior ``models/wordnet-glosses-gaussian``;
* **style** — the style task of ``bench_recipe.py``, prior ``models/wordnet-visual-art-gaussian``.

Models per budget (random target subsets shared by every model): cosine, target-only Gaussian,
the default posterior (``ad.adapt("gaussian", …)``) and its isotropic control, and the old
rule (``loo2-*``: the density strength by exact LOO already at n = 2, capped by the novelty as in
the recipe) with its control.  Reported: mean AUPRC per budget [95 %], the falls beyond the
interval (``evaluation.dominance.falls``), the strengths chosen at n = 1, 2, 5, and the
anchors-needed ratio against target-only.

    .venv/bin/python benchmarks/bench_small_n.py            # both tasks, ~3 min on 2 cores
    .venv/bin/python benchmarks/bench_small_n.py --quick    # 2 subsets, 100 queries
"""

from __future__ import annotations

import collections
import functools
import time

import numpy as np

from anchordiv.adaptation import adapt, statistics as recipe
from anchordiv.adaptation.statistics import broad_moments
from anchordiv.evaluation.curves import MODELS, CurveModel, adaptation_curve
from anchordiv.evaluation.dominance import anchors_needed, falls
from bench_recipe import TAU, style_task
from common import parser, table, write_results

BUDGETS = (1, 2, 5, 10, 20, 40)
WNI_PRIOR = "wordnet-glosses-gaussian"


def wni_task(n_queries: int, seed: int = 0):
    """``(broad [m, d], targets [n, d], retrieval setup)`` of the main job's WordNet → ImageNet
    curve (full size)."""
    from pathlib import Path

    from anchordiv.app.studies import wordnet_imagenet as wni
    from anchordiv.app.studies._common import text_embed
    from anchordiv.data.encoders import get_encoder
    from anchordiv.app.studies.priors import load_prior
    from anchordiv.data import imagenet

    classes = imagenet.classes()
    task = wni.wordnet_imagenet_task(
        [w for w, _ in classes],
        [n for _, n in classes],
        imagenet.TEMPLATES[:6],
        n_classes=None,
        max_items=8,
        seed=seed,
    )
    emb = wni.embed_task(task, text_embed(get_encoder("minilm")))
    models = Path(__file__).resolve().parent.parent / "models"
    prior = load_prior(WNI_PRIOR, models, "sentence-transformers/all-MiniLM-L6-v2")
    return (
        wni.broad_from_model(prior),
        emb.targets,
        wni.retrieval_setup(task, emb, n_queries, seed),
    )


def load_task(name: str, n_queries: int):
    """``(broad, targets, setup)`` of task ``"wni"`` (:func:`wni_task`) or ``"style"``."""
    return (wni_task if name == "wni" else style_task)(n_queries)


def curve_rows(curve, target: str) -> list[dict]:
    """Per model: ``model``, one ``"mean [low, high]"`` cell per budget and (for models other
    than cosine and ``target``) the anchors-needed ``ratio`` against the ``target``-only model."""
    rows = []
    for m in curve.models:
        row = {"model": m, "ratio": ""}
        for b in curve.budgets:
            mean, lo, hi = curve.cell(m, b)
            row[str(b)] = f"{mean:.3f} [{lo:.3f}, {hi:.3f}]" if np.isfinite(mean) else "—"
        if m not in ("cosine", target):
            r = anchors_needed(curve, m, target)
            row["ratio"] = f"{r['ratio']:.2f} [{r['low']:.2f}, {r['high']:.2f}]"
        rows.append(row)
    return rows


def task_main(
    doc: str, name: str, run_task, markdown, *, subsets: int, tasks=("wni", "style")
) -> None:
    """The command line of a benchmark over the two tasks: ``--subsets`` (default
    ``subsets``; 2 with ``--quick``), ``--queries`` (300; 100), ``--tasks``; runs
    ``run_task(task, args)`` for each and writes ``markdown(results, args, seconds)`` with the
    results as ``benchmarks/results/<name>[-tag]``."""
    p = parser(doc.split("\n\n")[0])
    p.add_argument(
        "--subsets", type=int, default=None, help=f"target subsets per budget ({subsets})"
    )
    p.add_argument("--queries", type=int, default=None, help="queries (300)")
    p.add_argument("--tasks", nargs="*", default=list(tasks), choices=["wni", "style"])
    args = p.parse_args()
    args.subsets = args.subsets or (2 if args.quick else subsets)
    args.queries = args.queries or (100 if args.quick else 300)
    start = time.time()
    results = [run_task(t, args) for t in args.tasks]
    seconds = time.time() - start
    stem, _, tag = name.partition("-")
    quick = f"{tag}-quick" if tag else "quick"
    path = write_results(
        stem,
        {"results": results, "seconds": seconds},
        markdown(results, args, seconds),
        args.tag or (quick if args.quick else tag),
    )
    print(path.read_text())


def loo_from_two(broad, target) -> float:
    """The strength rule before this benchmark: exact LOO for n ≥ 2 (evidence + hyperprior at
    n = 1), capped by the novelty strength as in :func:`recipe.gaussian_strengths`."""
    if len(target) < 2:
        return recipe.gaussian_strengths(broad, target)["strength"]
    mu0, cov = broad_moments(broad, reg=1e-3)
    grid = np.asarray(recipe.STRENGTH_GRID)
    y, logdet_c = recipe.whitened(mu0, cov, target)
    left_out = recipe.folds(len(target))
    dens = grid[int(np.argmax(recipe.loo_scores(y, logdet_c, grid, left_out)))]
    cap = recipe.novelty_strength(len(target), recipe.target_novelty(target))
    return float(np.clip(min(dens, cap), grid.min(), grid.max()))


CHOSEN: dict = collections.defaultdict(list)


def _model(rule: str, prior: str, broad, target, tau):
    s = (
        recipe.gaussian_strengths(broad, target)["strength"]
        if rule == "default"
        else loo_from_two(broad, target)
    )
    if prior == "broad":
        CHOSEN[(rule, len(target))].append(s)
    d = broad.shape[1]
    return adapt("gaussian", broad, target, tau=tau, prior=prior, kappa0=s, nu0=d + 1 + s).point(
        "mean"
    )


def models() -> dict:
    out = {name: MODELS[name] for name in ("cosine", "gaussian")}
    for rule, label in (("default", "posterior"), ("loo2", "loo2")):
        out[f"{label}-gaussian"] = CurveModel(
            functools.partial(_model, rule, "broad"), "custom", "gaussian"
        )
        out[f"{label}-isotropic-gaussian"] = CurveModel(
            functools.partial(_model, rule, "isotropic"), "custom", "gaussian"
        )
    return out


def run_task(name: str, args) -> dict:
    broad, targets, setup = load_task(name, args.queries)
    CHOSEN.clear()
    curve = adaptation_curve(
        broad,
        targets,
        tau=TAU,
        models=models(),
        budgets=BUDGETS,
        n_subsets=args.subsets,
        seed=0,
        progress=False,
        n_boot=500,
        **setup,
    )
    rows = curve_rows(curve, "gaussian")
    for row in rows:
        row["falls"] = (
            "; ".join(
                f"{f['from']} → {f['to']} (−{f['drop']:.3f})" for f in falls(curve, row["model"])
            )
            or "none"
        )
    chosen = [
        {"rule": rule, "n": n, "strengths": ", ".join(f"{s:.3g}" for s in v)}
        for (rule, n), v in sorted(CHOSEN.items())
        if n <= 5
    ]
    return {
        "task": name,
        "budgets": list(curve.budgets),
        "rows": rows,
        "chosen": chosen,
        "summary": curve.summary(),
    }


def markdown(results: list[dict], args, seconds: float) -> str:
    parts = [
        f"{args.queries} queries, {args.subsets} target subsets per budget, τ = {TAU:g}; "
        f"run time {seconds:.0f} s."
    ]
    for res in results:
        cols = [
            ("model", "model"),
            *[(str(b), f"n={b}") for b in res["budgets"]],
            ("falls", "falls beyond the interval"),
            ("ratio", "anchors ratio"),
        ]
        parts += [
            f"## {res['task']}: mean AUPRC [95 %]",
            table(res["rows"], cols),
            f"Strengths chosen (per subset) on {res['task']}:",
            table(res["chosen"], [("rule", "rule"), ("n", "n"), ("strengths", "s per subset")]),
        ]
    return "\n\n".join(parts)


def main() -> None:
    task_main(__doc__, "bench_recipe-small-n", run_task, markdown, subsets=4)


if __name__ == "__main__":
    main()
