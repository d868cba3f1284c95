"""The evidence-adaptive recipe (``anchordiv.adaptation.statistics``, the default since issue 17)
against the defaults before it on the main job's style task: does the posterior keep the
framework's promise at every budget?

Task (as ``anchordiv study style-transfer``): object × style captions (24 seeded ImageNet-R
objects × 16 styles, :mod:`anchordiv.app.studies.object_style`), relevant = same style, 300
seeded queries; targets = the 80 style anchors, random subsets per budget shared by every model
(``evaluation.curves.subset``); broad prior = the shipped ``models/wordnet-visual-art-gaussian``
(its moment points); MiniLM embeddings (cached), τ = 20.

Models per budget: cosine; target-only Gaussian and latent Gaussian; the defaults
``ad.adapt("gaussian" | "latent-gaussian", …)`` (``posterior-*``: the recipe) and their
isotropic controls; the defaults before issue 17 by name (``before17-*``: empirical Bayes
strengths; rank = 95 % of the broad variance, β = n/(n + 10)); the candidate
rules of the recipe passed as explicit options — Gaussian strengths by exact LOO only
(``loo-*``) and by the recipe (``recipe-*``: LOO bound ∧ held-out novelty), latent rank (all
with the recipe's β) by the participation ratio of the blended covariance (``pr-*``), by
max(stable rank of the prior, participation ratio of the targets) (``srpr-*``) and by the
recipe (novelty-weighted prior stable rank → target-only rank) — each with its isotropic
control (same strengths / rank / β); the spectral shrinkage prior (``ad.SpectralPrior``, rank
64, horseshoe, NUTS in full d — one chain, 300 + 300 — its posterior mean: the curve models
``"spectral"``/``"isotropic-spectral"`` of ``evaluation.curves``) and its control (the same
prior on random directions with flat variances, ``SpectralPrior.isotropic``).  Reported: mean
AUPRC with 95 % intervals (two-level bootstrap over subsets × queries), paired differences to max(target-only, control)
and to cosine, and the "anchors needed" ratio: the budget at which target-only reaches the
posterior's 2-anchor AUPRC (log-linear interpolation), divided by 2, with a query-bootstrap
interval.

    .venv/bin/python benchmarks/bench_recipe.py             # ~10 min on 2 shared cores
    .venv/bin/python benchmarks/bench_recipe.py --quick     # 2 subsets, 100 queries
    .venv/bin/python benchmarks/bench_recipe.py --ceiling   # best fixed options at 1–10
    .venv/bin/python benchmarks/bench_recipe.py --models cosine gaussian posterior-gaussian \
        isotropic-gaussian recipe-gaussian recipe-isotropic-gaussian spectral isotropic-spectral
"""

from __future__ import annotations

import functools
import hashlib
import time

import numpy as np
from anchordiv.adaptation.families import latent_gaussian

from anchordiv.adaptation import SpectralPrior, adapt, infer
from anchordiv.adaptation import statistics as recipe
from anchordiv.anchors.gaussian import moments
from anchordiv.evaluation.curves import MODELS, CurveModel, adaptation_curve
from anchordiv.evaluation.dominance import anchors_needed, dominance_rows
from common import parser, table, write_results

TAU = 20.0
BUDGETS = (1, 2, 5, 10, 20, 40)
PRIOR = "wordnet-visual-art-gaussian"


def style_task(n_queries: int, prior: str = PRIOR, seed: int = 0):
    """``(broad [m, d], style anchors [80, d], retrieval setup)`` of the style task."""
    from anchordiv.app.studies import object_style as ostyle
    from anchordiv.app.studies._common import text_embed, labelled_retrieval, subsample
    from anchordiv.data.encoders import get_encoder
    from anchordiv.app.studies.priors import load_prior
    from anchordiv.app.studies.wordnet_imagenet import broad_from_model
    from anchordiv.data import imagenet

    styles = list(imagenet.IMAGENET_R_STYLES)
    objects = ostyle.styleless([n for _, n in imagenet.imagenet_r_classes()], styles)
    objects = [objects[i] for i in subsample(len(objects), 24, seed)]
    task = ostyle.object_style_task(objects, styles, seed=seed)
    emb = ostyle.embed_task(task, text_embed(get_encoder("minilm")))
    broad = broad_from_model(load_prior(prior))
    return broad, emb.style_anchors, labelled_retrieval(emb.items, task.item_style, n_queries, seed)


def _key(a: np.ndarray) -> str:
    return hashlib.sha1(np.ascontiguousarray(a)).hexdigest()


@functools.lru_cache(maxsize=8)
def _chosen(broad_key, target_key):
    """Recipe choices of one (broad, target) cell, shared by a model and its control."""
    broad, target = _ARRAYS[broad_key], _ARRAYS[target_key]
    g = recipe.gaussian_strengths(broad, target)
    lat = latent_gaussian.latent_options(broad, target, strengths=g)
    _, cov = moments(broad)
    cov_t = np.cov(target.T, bias=True) if len(target) > 1 else np.zeros_like(cov)
    blend = (1 - lat["beta"]) * cov + lat["beta"] * cov_t
    pr_rank = recipe.participation_ratio(np.linalg.eigvalsh(blend))
    srpr = recipe.stable_rank(np.linalg.eigvalsh(cov))
    if len(target) > 1:
        srpr = max(srpr, recipe.participation_ratio(np.linalg.eigvalsh(cov_t)))
    cap = broad.shape[1] - 1
    return {
        **g,
        "rank": lat["rank"],
        "beta": lat["beta"],
        "pr_rank": min(int(round(pr_rank)), cap),
        "srpr_rank": min(int(round(srpr)), cap),
    }


_ARRAYS: dict[str, np.ndarray] = {}


def chosen(broad, target) -> dict:
    for a in (broad, target):
        _ARRAYS.setdefault(_key(a), a)
    return _chosen(_key(broad), _key(target))


CHOICES: list[dict] = []


#: the defaults before issue 17, by name: empirical Bayes strengths; rank = 95 % of the broad
#: variance with β = n/(n + 10)
BEFORE_17 = {
    "gaussian": {"strengths": "evidence"},
    "latent-gaussian": {"rank": "variance", "prior_anchors": 10.0},
}


def _before_17(kind: str, prior: str, broad, target, tau):
    """The old default posterior, or its control with the same chosen strengths."""
    post = adapt(kind, broad, target, tau=tau, **BEFORE_17[kind])
    return (post.prior.isotropic().update(target, tau=tau) if prior == "isotropic" else post).point(
        "mean"
    )


def _model(rule: str, kind: str, prior: str, broad, target, tau):
    if rule == "before17":
        return _before_17(kind, prior, broad, target, tau)
    c = chosen(broad, target)
    if prior == "broad" and rule == "recipe" and kind == "gaussian":
        CHOICES.append(
            {
                "n": len(target),
                **{
                    k: c[k]
                    for k in (
                        "strength",
                        "density_strength",
                        "novelty",
                        "rank",
                        "beta",
                        "pr_rank",
                        "srpr_rank",
                    )
                },
            }
        )
    if kind == "gaussian":
        s = c["density_strength"] if rule == "loo" else c["strength"]
        opts = {"kappa0": s, "nu0": broad.shape[1] + 1 + s}
    else:
        opts = {
            "rank": c[f"{rule}_rank"] if rule in ("pr", "srpr") else c["rank"],
            "beta": c["beta"],
        }
    return adapt(kind, broad, target, tau=tau, prior=prior, **opts).point("mean")


def models() -> dict[str, CurveModel]:
    out = {
        name: MODELS[name]
        for name in (
            "cosine",
            "gaussian",
            "latent-gaussian",
            "posterior-gaussian",
            "isotropic-gaussian",
            "posterior-latent-gaussian",
            "isotropic-latent-gaussian",
        )
    }
    for rule, kind in (
        ("before17", "gaussian"),
        ("loo", "gaussian"),
        ("recipe", "gaussian"),
        ("before17", "latent-gaussian"),
        ("pr", "latent-gaussian"),
        ("srpr", "latent-gaussian"),
        ("recipe", "latent-gaussian"),
    ):
        out[f"{rule}-{kind}"] = CurveModel(
            functools.partial(_model, rule, kind, "broad"), "custom", kind
        )
        out[f"{rule}-isotropic-{kind}"] = CurveModel(
            functools.partial(_model, rule, kind, "isotropic"), "custom", kind
        )
    out.update(spectral=MODELS["posterior-spectral"])
    out["isotropic-spectral"] = MODELS["isotropic-spectral"]
    for name, opts in SPECTRAL_VARIANTS.items():
        for prior, label in (("broad", name), ("isotropic", f"isotropic-{name}")):
            out[label] = CurveModel(
                functools.partial(spectral_mean, prior, **opts), "custom", "gaussian"
            )
    return out


def spectral_mean(prior, broad, target, tau, **options):
    """The NUTS posterior mean of ``SpectralPrior`` (``prior="broad"`` or its control), with
    the family's curve method; ``options`` go to ``SpectralPrior.from_anchors``."""
    p = SpectralPrior.from_anchors(broad, prior=prior, **options)
    return infer(p, target, SpectralPrior.hooks.curve_method, tau=tau).point("mean")


#: spectral-prior variants beside the default (horseshoe, rank 64)
SPECTRAL_VARIANTS = {"spectral-gamma": {"shrinkage": "gamma"}, "spectral-k16": {"rank": 16}}


#: (posterior, its isotropic control, target-only of the same kind)
POSTERIORS = {
    "posterior-gaussian": ("isotropic-gaussian", "gaussian"),
    "before17-gaussian": ("before17-isotropic-gaussian", "gaussian"),
    "loo-gaussian": ("loo-isotropic-gaussian", "gaussian"),
    "recipe-gaussian": ("recipe-isotropic-gaussian", "gaussian"),
    "posterior-latent-gaussian": ("isotropic-latent-gaussian", "latent-gaussian"),
    "before17-latent-gaussian": ("before17-isotropic-latent-gaussian", "latent-gaussian"),
    "pr-latent-gaussian": ("pr-isotropic-latent-gaussian", "latent-gaussian"),
    "srpr-latent-gaussian": ("srpr-isotropic-latent-gaussian", "latent-gaussian"),
    "recipe-latent-gaussian": ("recipe-isotropic-latent-gaussian", "latent-gaussian"),
    "spectral": ("isotropic-spectral", "gaussian"),
    "spectral-gamma": ("isotropic-spectral-gamma", "gaussian"),
    "spectral-k16": ("isotropic-spectral-k16", "gaussian"),
}


def summary_table(curve) -> list[dict]:
    rows = []
    for name in curve.models:
        row = {"model": name}
        for b in curve.budgets:
            m, lo, hi = curve.cell(name, b)
            row[str(b)] = f"{m:.3f} [{lo:.3f}, {hi:.3f}]" if np.isfinite(m) else "—"
        rows.append(row)
    return rows


def choice_rows() -> list[dict]:
    out = []
    for n in sorted({c["n"] for c in CHOICES}):
        cs = [c for c in CHOICES if c["n"] == n]
        out.append({"n": n, **{k: float(np.mean([c[k] for c in cs])) for k in cs[0] if k != "n"}})
    return out


def markdown(curve, dom, needs, choices, args, seconds) -> str:
    b = [(str(x), f"n={x}") for x in curve.budgets]

    def fmt(r, k):
        return f"{r[k]:+.3f} [{r[k + '_low']:+.3f}, {r[k + '_high']:+.3f}]"

    dom_md = [
        {
            "posterior": r["posterior"],
            "n": r["budget"],
            "auprc": f"{r['auprc']:.3f}",
            "vs": r["best_other"],
            "diff_best": fmt(r, "diff_best"),
            "diff_cosine": fmt(r, "diff_baseline"),
        }
        for r in dom
    ]
    need_md = [{**r, "ratio": f"{r['ratio']:.2f} [{r['low']:.2f}, {r['high']:.2f}]"} for r in needs]
    return "\n\n".join(
        [
            f"Style task, prior `{args.prior}`, {args.queries} queries, {args.subsets} target subsets "
            f"per budget, τ = {TAU:g}; run time {seconds:.0f} s.",
            "## Mean AUPRC [95 % interval] per budget",
            table(summary_table(curve), [("model", "model"), *b]),
            "## Paired differences: posterior − max(target-only, isotropic control), − cosine",
            table(
                dom_md,
                [
                    ("posterior", "posterior"),
                    ("n", "n"),
                    ("auprc", "AUPRC"),
                    ("vs", "max of"),
                    ("diff_best", "− max(target-only, control)"),
                    ("diff_cosine", "− cosine"),
                ],
            ),
            "## Anchors needed: budget at which target-only reaches the posterior's 2-anchor "
            "AUPRC, ÷ 2",
            table(
                need_md,
                [
                    ("posterior", "posterior"),
                    ("target_only", "target-only"),
                    ("ratio", "ratio [95 %]"),
                    ("never_reached", "bootstrap share never reached"),
                ],
            ),
            "## What the recipe chose (mean over subsets)",
            table(
                choices,
                [
                    ("n", "n"),
                    ("strength", "s"),
                    ("density_strength", "LOO bound"),
                    ("novelty", "novelty"),
                    ("beta", "β"),
                    ("rank", "rank"),
                    ("pr_rank", "PR(blend) rank"),
                    ("srpr_rank", "max(srank, PR(T)) rank"),
                ],
            ),
        ]
    )


#: the ceiling sweep (``--ceiling``): fixed strengths s and latent (rank, β) at few anchors
CEILING_STRENGTHS = (1.0, 3.0, 10.0, 30.0, 100.0, 1000.0)
CEILING_LATENT = tuple((k, b) for k in (4, 8, 16, 32) for b in (0.05, 0.2, 0.5, 0.8))
CEILING_BUDGETS = (1, 2, 5, 10)


def _fixed(kind: str, opts: tuple, broad, target, tau):
    return adapt(kind, broad, target, tau=tau, **dict(opts)).point("mean")


def ceiling(args) -> None:
    """How good can the posterior of each family be at 1–5 anchors with the best fixed
    options, and so what anchor saving can any strength/rank rule reach on this task?"""
    start = time.time()
    broad, targets, setup = style_task(args.queries, args.prior)
    d = broad.shape[1]
    out = {name: MODELS[name] for name in ("cosine", "gaussian", "latent-gaussian")}
    for v in CEILING_STRENGTHS:
        out[f"gaussian s={v:g}"] = CurveModel(
            functools.partial(_fixed, "gaussian", (("kappa0", v), ("nu0", d + 1 + v))),
            "custom",
            "gaussian",
        )
    for k, b in CEILING_LATENT:
        out[f"latent k={k} β={b:g}"] = CurveModel(
            functools.partial(_fixed, "latent-gaussian", (("rank", k), ("beta", b))),
            "custom",
            "latent-gaussian",
        )
    curve = adaptation_curve(
        broad,
        targets,
        tau=TAU,
        models=out,
        budgets=CEILING_BUDGETS,
        n_subsets=args.subsets,
        seed=0,
        progress=False,
        n_boot=500,
        **setup,
    )
    rows = summary_table(curve)
    best = {
        kind: max(
            (n for n in out if n.startswith(kind.split("-")[0] + " ")),
            key=lambda n: curve.cell(n, 2)[0],
        )
        for kind in ("gaussian", "latent")
    }
    needs = [
        anchors_needed(curve, best["gaussian"], "gaussian"),
        anchors_needed(curve, best["latent"], "latent-gaussian"),
    ]
    seconds = time.time() - start
    need_md = [{**r, "ratio": f"{r['ratio']:.2f} [{r['low']:.2f}, {r['high']:.2f}]"} for r in needs]
    md = "\n\n".join(
        [
            f"Ceiling sweep (`--ceiling`): style task, prior `{args.prior}`, {args.queries} "
            f"queries, {args.subsets} target subsets per budget, τ = {TAU:g}; fixed options per "
            f"model (no rule); run time {seconds:.0f} s.",
            "## Mean AUPRC [95 % interval] per budget",
            table(rows, [("model", "model"), *[(str(x), f"n={x}") for x in curve.budgets]]),
            "## Anchors needed by the best fixed option at 2 anchors (an upper bound for any "
            "strength/rank rule on this task, chosen on the same data)",
            table(
                need_md,
                [
                    ("posterior", "posterior"),
                    ("target_only", "target-only"),
                    ("level_auprc", "AUPRC at 2"),
                    ("ratio", "ratio [95 %]"),
                ],
            ),
        ]
    )
    path = write_results(
        "bench_recipe",
        {"summary": curve.summary(), "anchors_needed": needs, "seconds": seconds},
        md,
        args.tag or "ceiling",
    )
    print(path.read_text())


def main() -> None:
    p = parser(__doc__.split("\n\n")[0])
    p.add_argument("--subsets", type=int, default=None, help="target subsets per budget (4)")
    p.add_argument("--queries", type=int, default=None, help="queries (300)")
    p.add_argument("--prior", default=PRIOR, help=f"shipped prior under models/ ({PRIOR})")
    p.add_argument(
        "--ceiling",
        action="store_true",
        help="instead: the best fixed strengths / latent ranks at few anchors",
    )
    p.add_argument(
        "--models",
        nargs="*",
        default=None,
        help="model names to run (default: all; cosine and gaussian always)",
    )
    args = p.parse_args()
    args.subsets = args.subsets or (2 if args.quick else 4)
    args.queries = args.queries or (100 if args.quick else 300)
    if args.ceiling:
        return ceiling(args)
    start = time.time()
    broad, targets, setup = style_task(args.queries, args.prior)
    chosen_models = models()
    if args.models:
        unknown = sorted(set(args.models) - set(chosen_models))
        if unknown:
            p.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(chosen_models)}")
        keep = {"cosine", "gaussian", *args.models}
        chosen_models = {k: v for k, v in chosen_models.items() if k in keep}
    curve = adaptation_curve(
        broad,
        targets,
        tau=TAU,
        models=chosen_models,
        budgets=BUDGETS,
        n_subsets=args.subsets,
        seed=0,
        progress=False,
        **setup,
    )
    present = {
        p: refs
        for p, refs in POSTERIORS.items()  # --models may leave some out
        if all(name in curve.models for name in (p, *refs))
    }
    dom = dominance_rows(curve, present)
    needs = [anchors_needed(curve, post, target) for post, (_, target) in present.items()]
    choices = choice_rows()
    seconds = time.time() - start
    payload = {
        "task": {
            "prior": args.prior,
            "queries": args.queries,
            "subsets": args.subsets,
            "models": args.models,
            "budgets": curve.budgets,
            "tau": TAU,
        },
        "summary": curve.summary(),
        "dominance": dom,
        "anchors_needed": needs,
        "choices": choices,
        "seconds": seconds,
    }
    path = write_results(
        "bench_recipe", payload, markdown(curve, dom, needs, choices, args, seconds), args.tag
    )
    print(path.read_text())


if __name__ == "__main__":
    main()
