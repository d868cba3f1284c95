"""The evidence-adaptive recipe (``anchordiv.adaptation.recipe``) against today's defaults on the main
job's style task: does the posterior keep the framework's promise at every budget?

Task (as ``anchordiv study style-transfer``): object × style captions (24 seeded ImageNet-R
objects × 16 styles, :mod:`anchordiv.app.studies.object_style`), relevant = same style, 300
seeded queries; targets = the 80 style anchors, random subsets per budget shared by every model
(``evaluation.curves.subset``); broad prior = the shipped ``models/wordnet-visual-art-gaussian``
(its moment points); MiniLM embeddings (cached), τ = 20.

Models per budget: cosine; target-only Gaussian and latent Gaussian; today's defaults
``ad.adapt("gaussian" | "latent-gaussian", …)`` and their isotropic controls; the candidate
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
    .venv/bin/python benchmarks/bench_recipe.py --models cosine gaussian posterior-gaussian \
        isotropic-gaussian recipe-gaussian recipe-isotropic-gaussian spectral isotropic-spectral
"""

from __future__ import annotations

import functools
import hashlib
import time

import numpy as np

from anchordiv.adaptation import adapt, recipe
from anchordiv.anchors.gaussian import moments
from anchordiv.evaluation.curves import MODELS, CurveModel, adaptation_curve, spectral_mean
from common import parser, table, write_results

TAU = 20.0
BUDGETS = (1, 2, 5, 10, 20, 40)
PRIOR = "wordnet-visual-art-gaussian"


def style_task(n_queries: int, prior: str = PRIOR, seed: int = 0):
    """``(broad [m, d], style anchors [80, d], retrieval setup)`` of the style task."""
    from anchordiv.app.studies import object_style as ostyle
    from anchordiv.app.studies._common import default_embed, labelled_retrieval, subsample
    from anchordiv.app.studies.priors import load_prior
    from anchordiv.app.studies.wordnet_imagenet import broad_from_model
    from anchordiv.data import imagenet

    styles = list(imagenet.IMAGENET_R_STYLES)
    objects = ostyle.styleless([n for _, n in imagenet.imagenet_r_classes()], styles)
    objects = [objects[i] for i in subsample(len(objects), 24, seed)]
    task = ostyle.object_style_task(objects, styles, seed=seed)
    emb = ostyle.embed_task(task, default_embed("minilm"))
    broad = broad_from_model(load_prior(prior))
    return broad, emb.style_anchors, labelled_retrieval(emb.items, task.item_style,
                                                        n_queries, seed)


def _key(a: np.ndarray) -> str:
    return hashlib.sha1(np.ascontiguousarray(a)).hexdigest()


@functools.lru_cache(maxsize=8)
def _chosen(broad_key, target_key):
    """Recipe choices of one (broad, target) cell, shared by a model and its control."""
    broad, target = _ARRAYS[broad_key], _ARRAYS[target_key]
    g = recipe.gaussian_strengths(broad, target)
    lat = recipe.latent_options(broad, target, strengths=g)
    _, cov = moments(broad)
    cov_t = np.cov(target.T, bias=True) if len(target) > 1 else np.zeros_like(cov)
    blend = (1 - lat["beta"]) * cov + lat["beta"] * cov_t
    pr_rank = recipe.participation_ratio(np.linalg.eigvalsh(blend))
    srpr = recipe.stable_rank(np.linalg.eigvalsh(cov))
    if len(target) > 1:
        srpr = max(srpr, recipe.participation_ratio(np.linalg.eigvalsh(cov_t)))
    cap = broad.shape[1] - 1
    return {**g, "rank": lat["rank"], "beta": lat["beta"],
            "pr_rank": min(int(round(pr_rank)), cap), "srpr_rank": min(int(round(srpr)), cap)}


_ARRAYS: dict[str, np.ndarray] = {}


def chosen(broad, target) -> dict:
    for a in (broad, target):
        _ARRAYS.setdefault(_key(a), a)
    return _chosen(_key(broad), _key(target))


CHOICES: list[dict] = []


def _model(rule: str, kind: str, prior: str, broad, target, tau):
    c = chosen(broad, target)
    if prior == "broad" and rule == "recipe" and kind == "gaussian":
        CHOICES.append({"n": len(target), **{k: c[k] for k in (
            "strength", "density_strength", "novelty", "rank", "beta", "pr_rank",
            "srpr_rank")}})
    if kind == "gaussian":
        s = c["density_strength"] if rule == "loo" else c["strength"]
        opts = {"kappa0": s, "nu0": broad.shape[1] + 1 + s}
    else:
        opts = {"rank": c[f"{rule}_rank"] if rule in ("pr", "srpr") else c["rank"],
                "beta": c["beta"]}
    return adapt(kind, broad, target, tau=tau, prior=prior, **opts).point("mean")


def models() -> dict[str, CurveModel]:
    out = {name: MODELS[name] for name in (
        "cosine", "gaussian", "latent-gaussian", "posterior-gaussian", "isotropic-gaussian",
        "posterior-latent-gaussian", "isotropic-latent-gaussian")}
    for rule, kind in (("loo", "gaussian"), ("recipe", "gaussian"), ("pr", "latent-gaussian"),
                       ("srpr", "latent-gaussian"), ("recipe", "latent-gaussian")):
        out[f"{rule}-{kind}"] = CurveModel(
            functools.partial(_model, rule, kind, "broad"), "custom", kind)
        out[f"{rule}-isotropic-{kind}"] = CurveModel(
            functools.partial(_model, rule, kind, "isotropic"), "custom", kind)
    out.update({name: MODELS[name] for name in ("spectral", "isotropic-spectral")})
    for name, opts in SPECTRAL_VARIANTS.items():
        for prior, label in (("broad", name), ("isotropic", f"isotropic-{name}")):
            out[label] = CurveModel(functools.partial(spectral_mean, prior, **opts), "custom",
                                    "gaussian")
    return out


#: spectral-prior variants beside the default (horseshoe, rank 64)
SPECTRAL_VARIANTS = {"spectral-gamma": {"shrinkage": "gamma"},
                     "spectral-k16": {"rank": 16}}


#: (posterior, its isotropic control, target-only of the same kind)
POSTERIORS = {
    "posterior-gaussian": ("isotropic-gaussian", "gaussian"),
    "loo-gaussian": ("loo-isotropic-gaussian", "gaussian"),
    "recipe-gaussian": ("recipe-isotropic-gaussian", "gaussian"),
    "posterior-latent-gaussian": ("isotropic-latent-gaussian", "latent-gaussian"),
    "pr-latent-gaussian": ("pr-isotropic-latent-gaussian", "latent-gaussian"),
    "srpr-latent-gaussian": ("srpr-isotropic-latent-gaussian", "latent-gaussian"),
    "recipe-latent-gaussian": ("recipe-isotropic-latent-gaussian", "latent-gaussian"),
    "spectral": ("isotropic-spectral", "gaussian"),
    "spectral-gamma": ("isotropic-spectral-gamma", "gaussian"),
    "spectral-k16": ("isotropic-spectral-k16", "gaussian"),
}


def dominance_rows(curve) -> list[dict]:
    """Per posterior and budget: mean, minus max(target-only, control), minus cosine."""
    rows = []
    for post, (control, target) in POSTERIORS.items():
        if post not in curve.models:
            continue
        by_cos = {r["budget"]: r for r in curve.contrast(post, "cosine")}
        for b, (m, lo, hi) in zip(curve.budgets, (curve.cell(post, b) for b in curve.budgets)):
            others = [o for o in (target, control) if o in curve.models]
            best = max(others, key=lambda o: np.nan_to_num(curve.cell(o, b)[0],
                                                                       nan=-1.0))
            d = next(r for r in curve.contrast(post, best) if r["budget"] == b)
            rows.append({"posterior": post, "budget": b, "auprc": m, "low": lo, "high": hi,
                         "best_other": best, "diff_best": d["difference"],
                         "diff_best_low": d["low"], "diff_best_high": d["high"],
                         "diff_cosine": by_cos[b]["difference"],
                         "diff_cosine_low": by_cos[b]["low"],
                         "diff_cosine_high": by_cos[b]["high"]})
    return rows


def budget_to_reach(budgets, means, level) -> float:
    """Smallest budget (log-linear interpolation) at which ``means`` first reaches ``level``;
    NaN if never."""
    b, m = np.log(np.asarray(budgets, float)), np.asarray(means, float)
    for j in range(len(m)):
        if np.isfinite(m[j]) and m[j] >= level:
            if j == 0 or not np.isfinite(m[j - 1]):
                return float(np.exp(b[j]))
            t = (level - m[j - 1]) / (m[j] - m[j - 1])
            return float(np.exp(b[j - 1] + t * (b[j] - b[j - 1])))
    return float("nan")


def anchors_needed(curve, post: str, target: str, *, n_boot: int = 300, seed: int = 0) -> dict:
    """Budget at which ``target`` reaches ``post``'s 2-anchor AUPRC, ÷ 2; query bootstrap."""
    def ratio(q):
        mean = lambda name, b: np.nanmean(curve.per_query[(name, b)][:, q])
        level = mean(post, 2)
        return budget_to_reach(curve.budgets, [mean(target, b) for b in curve.budgets],
                               level) / 2

    n_q = curve.per_query[(post, 2)].shape[1]
    rng = np.random.default_rng(seed)
    boot = np.array([ratio(rng.integers(n_q, size=n_q)) for _ in range(n_boot)])
    point = ratio(np.arange(n_q))
    ok = boot[np.isfinite(boot)]
    lo, hi = (np.percentile(ok, [2.5, 97.5]) if len(ok) else (np.nan, np.nan))
    return {"posterior": post, "target_only": target, "ratio": point, "low": float(lo),
            "high": float(hi), "never_reached_fraction": float(1 - len(ok) / n_boot)}


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
    fmt = lambda r, k: f"{r[k]:+.3f} [{r[k + '_low']:+.3f}, {r[k + '_high']:+.3f}]"
    dom_md = [{"posterior": r["posterior"], "n": r["budget"], "auprc": f"{r['auprc']:.3f}",
               "vs": r["best_other"], "diff_best": fmt(r, "diff_best"),
               "diff_cosine": fmt(r, "diff_cosine")} for r in dom]
    need_md = [{**r, "ratio": f"{r['ratio']:.2f} [{r['low']:.2f}, {r['high']:.2f}]"}
               for r in needs]
    return "\n\n".join([
        f"Style task, prior `{args.prior}`, {args.queries} queries, {args.subsets} target subsets "
        f"per budget, τ = {TAU:g}; run time {seconds:.0f} s.",
        "## Mean AUPRC [95 % interval] per budget",
        table(summary_table(curve), [("model", "model"), *b]),
        "## Paired differences: posterior − max(target-only, isotropic control), − cosine",
        table(dom_md, [("posterior", "posterior"), ("n", "n"), ("auprc", "AUPRC"),
                       ("vs", "max of"), ("diff_best", "− max(target-only, control)"),
                       ("diff_cosine", "− cosine")]),
        "## Anchors needed: budget at which target-only reaches the posterior's 2-anchor "
        "AUPRC, ÷ 2",
        table(need_md, [("posterior", "posterior"), ("target_only", "target-only"),
                        ("ratio", "ratio [95 %]"),
                        ("never_reached_fraction", "bootstrap share never reached")]),
        "## What the recipe chose (mean over subsets)",
        table(choices, [("n", "n"), ("strength", "s"), ("density_strength", "LOO bound"),
                        ("novelty", "novelty"), ("beta", "β"), ("rank", "rank"),
                        ("pr_rank", "PR(blend) rank"),
                        ("srpr_rank", "max(srank, PR(T)) rank")]),
    ])


def main() -> None:
    p = parser(__doc__.split("\n\n")[0])
    p.add_argument("--subsets", type=int, default=None, help="target subsets per budget (4)")
    p.add_argument("--queries", type=int, default=None, help="queries (300)")
    p.add_argument("--prior", default=PRIOR, help=f"shipped prior under models/ ({PRIOR})")
    p.add_argument("--models", nargs="*", default=None,
                   help="model names to run (default: all; cosine and gaussian always)")
    args = p.parse_args()
    args.subsets = args.subsets or (2 if args.quick else 4)
    args.queries = args.queries or (100 if args.quick else 300)
    start = time.time()
    broad, targets, setup = style_task(args.queries, args.prior)
    chosen_models = models()
    if args.models:
        unknown = sorted(set(args.models) - set(chosen_models))
        if unknown:
            p.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(chosen_models)}")
        keep = {"cosine", "gaussian", *args.models}
        chosen_models = {k: v for k, v in chosen_models.items() if k in keep}
    curve = adaptation_curve(broad, targets, tau=TAU, models=chosen_models, budgets=BUDGETS,
                             n_subsets=args.subsets, seed=0, progress=False, **setup)
    dom = dominance_rows(curve)
    needs = [anchors_needed(curve, post, target)
             for post, (_, target) in POSTERIORS.items() if post in curve.models]
    choices = choice_rows()
    seconds = time.time() - start
    payload = {"task": {"prior": args.prior, "queries": args.queries, "subsets": args.subsets,
                        "models": args.models,
                        "budgets": curve.budgets, "tau": TAU},
               "summary": curve.summary(), "dominance": dom, "anchors_needed": needs,
               "choices": choices, "seconds": seconds}
    path = write_results("bench_recipe", payload,
                         markdown(curve, dom, needs, choices, args, seconds), args.tag)
    print(path.read_text())


if __name__ == "__main__":
    main()
