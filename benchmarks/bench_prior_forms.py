"""Prior forms: can another construction of the broad prior from the same WordNet region give
the ≥ 5× target-anchor saving on the style task (issue 17) that no strength rule reaches with
the shipped prior?

Task: the style task of ``benchmarks/bench_recipe.py`` (:func:`bench_recipe.style_task`: 24
ImageNet-R objects × 16 styles, relevant = same style, 300 seeded queries, the 80 style anchors
as targets, random subsets per budget shared by every model, MiniLM, τ = 20).  The ceiling sweep
there (``--ceiling``) found 3.78× at the best fixed strength (s = 10) with the shipped
``models/wordnet-visual-art-gaussian``.

Every form below is built from exactly the synsets of that prior: its card's spec
(``PriorSpec.from_card``) re-selected by :func:`anchordiv.data.vocab.select` — the same roots,
the same exclusions (every sense of an ImageNet-R style word, with subtrees), the same seed — so
the leakage guard is the shipped one; the texts' SHA-256 is checked against the card.  Only
the construction differs:

* ``glosses`` — the shipped construction: the ``"lemma: definition"`` glosses, embedded here
  (their moments are checked against the shipped model's);
* ``names`` — every lemma name of the same synsets (deduplicated), no definitions;
* ``between-dK`` — between-group covariance: one anchor per group, the group's mean gloss
  embedding, groups = the ancestor K levels below the nearest region root on the synset's
  hypernym paths (the synset itself when it lies fewer than K levels below);
* ``pulled-d2`` — every gloss pulled halfway to its depth-2 group mean (``(x + m_g) / 2``: the
  between-group covariance plus a quarter of the within-group one);
* ``balanced-d2`` — the glosses weighted by 1 / (size of their depth-2 group), so that each
  group counts once and big subtrees do not dominate the covariance (mean and covariance of
  the weighted glosses, as moment points: ``adaptation.broad_from_model``);
* ``between-d2-matched`` — ``between-d2`` with its deviations rescaled to the glosses' total
  variance: the NIW posterior blends s·C with the targets' scatter, so C's *scale* sets how much
  a strength s weighs; this separates the covariance's shape from its scale.

Each form is run with the default recipe (``ad.adapt("gaussian", …)``: held-out strengths), at
fixed strengths s = 3, 10, 30 (κ₀ = s, ν₀ = d + 1 + s) and with the recipe and a larger relative
ridge (``reg=0.1`` instead of 1e-3: the group-mean covariances have rank < d, and the recipe's
density criterion answers a near-singular prior covariance with a weak prior). Reported: mean
AUPRC per budget with 95 % intervals (two-level bootstrap over subsets × queries), the "anchors
needed" ratio (the budget at which target-only reaches the model's 2-anchor AUPRC, log-linear
interpolation, ÷ 2; query-bootstrap interval) and what strength the recipe chose. The best fixed
strength of a form is chosen on the same data: an upper bound for any strength rule with that
form.

    .venv/bin/python benchmarks/bench_prior_forms.py            # ~3 min on 2 shared cores
    .venv/bin/python benchmarks/bench_prior_forms.py --quick    # 2 subsets, 100 queries

Findings (``results/bench_prior_forms.md``: 300 queries, 4 subsets): no. The shipped glosses
give 3.59× [3.42, 3.79] with the recipe and 3.78× at s = 10; lemma names are worse at every
strength (≤ 3.01×). Between-group covariances have the best shape: depth 2 reaches 4.19× [3.97,
4.46] at s = 10 (depth 3: 4.15×, group-balanced glosses 4.15×, trace-matched 4.20×, pulled
glosses 3.89×), but the recipe gets only 2.6–3.4× from these forms: its density criterion
answers a covariance of rank < d (104 / 269 / 485 group means in d = 384) with 0.5–2.4 pseudo-
anchors at n ≤ 2, where 10 is best; a relative ridge of 0.1 raises them to 2–16 and the ratios
to 3.3–4.1× (on the glosses it gains nothing: 3.51×). A 5× saving needs target-only's 10-anchor
AUPRC (0.608) from 2 anchors; the best 2-anchor AUPRC of any form and strength here is 0.555.
Re-constructing the prior from this region moves the ceiling from 3.8× to 4.2×, not to 5×
(repeat runs agree to ±0.01 in the ratios: float32 scoring).
"""

from __future__ import annotations

import functools
import time

import numpy as np

from anchordiv.adaptation import adapt, broad_from_model
from anchordiv.anchors.gaussian import Gaussian, moments
from anchordiv.app.build import PriorSpec, resolve_encoder, texts_sha256
from anchordiv.app.studies.priors import default_models_dir
from anchordiv.data import wordnet
from anchordiv.data.vocab import select
from anchordiv.errors import AnchorDivError
from anchordiv.evaluation.curves import MODELS, CurveModel, adaptation_curve
from anchordiv.evaluation.dominance import anchors_needed
from anchordiv.io import load_card, load_model
from bench_recipe import PRIOR, TAU, style_task, summary_table
from common import parser, table, write_results

BUDGETS = (1, 2, 5, 10, 20)  # and all 80 targets (always added by the curve)
STRENGTHS = (3.0, 10.0, 30.0)
GROUP_DEPTHS = (1, 2, 3)
#: the depth of the groups of ``pulled`` and ``balanced``
FORM_DEPTH = 2
TARGET_RATIO = 5.0


# ---- the region ----------------------------------------------------------------------------


def region(prior: str = PRIOR) -> tuple[dict, list, list[str], list]:
    """``(card, synsets [m], gloss texts [m], region roots)`` of the shipped prior ``prior``,
    re-selected from its card's spec (same roots, exclusions, n and seed); an error if the texts
    differ from the ones it was built from or if a source is not WordNet."""
    card = load_card(default_models_dir() / prior)
    spec = PriorSpec.from_card(card)
    if any(s.kind != "wordnet" for s in spec.sources):
        raise AnchorDivError(
            f"prior {prior!r}: prior forms need WordNet sources, the card has "
            f"{[s.kind for s in spec.sources]}"
        )
    chosen = select(spec.sources, spec.n, spec.seed).entries
    texts = [e.text for e in chosen]
    if texts_sha256(texts) != card["texts_sha256"]:
        raise AnchorDivError(
            f"prior {prior!r}: the re-selected glosses differ from the ones it "
            f"was built from (texts_sha256 of the card); rebuild the models"
        )
    roots = [wordnet.synset(r) for s in spec.sources for r in s.roots]
    return card, [wordnet.synset(e.id) for e in chosen], texts, roots


def group_label(synset, roots, depth: int) -> str:
    """The name of ``synset``'s ancestor ``depth`` levels below the nearest region root on its
    hypernym paths (the synset itself when fewer than ``depth`` levels below; ties: the first
    path)."""
    best = None
    for path in wordnet.hypernym_paths(synset):
        for i, node in enumerate(path):
            if node in roots and (best is None or len(path) - i < best[0]):
                best = (len(path) - i, path, i)
    if best is None:
        raise AnchorDivError(f"{synset.name()}: under none of the region roots")
    _, path, i = best
    return path[min(i + depth, len(path) - 1)].name()


def groups(synsets, roots, depth: int) -> np.ndarray:
    """``[m]`` group index of each synset (:func:`group_label`), groups numbered 0..G−1."""
    labels = [group_label(s, roots, depth) for s in synsets]
    return np.unique(labels, return_inverse=True)[1]


def group_means(x: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``[G, d]`` mean row of ``x [m, d]`` per group ``index [m]``."""
    sums = np.zeros((index.max() + 1, x.shape[1]))
    np.add.at(sums, index, x)
    return sums / np.bincount(index)[:, None]


def balanced(x: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Moment points ``[2d, d]`` of ``x [m, d]`` weighted by 1 / group size (each group has the
    same total weight)."""
    w = 1.0 / np.bincount(index)[index]
    w /= w.sum()
    mu = w @ x
    c = x - mu
    model = Gaussian.from_moments(mu.astype(np.float32), (c * w[:, None]).T @ c, tau=TAU)
    return np.asarray(broad_from_model(model), np.float64)


def lemma_texts(synsets) -> list[str]:
    """Every lemma name of ``synsets``, deduplicated, in order of first appearance."""
    return list(dict.fromkeys(n for s in synsets for n in wordnet.lemma_names(s)))


def forms(synsets, roots, glosses: np.ndarray, names: np.ndarray) -> tuple[dict, list[dict]]:
    """``({form: broad anchors [m_f, d]}, one description row per form)``."""
    index = {k: groups(synsets, roots, k) for k in GROUP_DEPTHS}
    out = {"glosses": glosses, "names": names}
    rows = [
        {"form": "glosses", "anchors": len(glosses), "groups": "—"},
        {"form": "names", "anchors": len(names), "groups": "—"},
    ]
    for k in GROUP_DEPTHS:
        out[f"between-d{k}"] = group_means(glosses, index[k])
        n_groups = int(index[k].max() + 1)
        rows.append({"form": f"between-d{k}", "anchors": n_groups, "groups": n_groups})
    g, n_groups = index[FORM_DEPTH], int(index[FORM_DEPTH].max() + 1)
    out[f"pulled-d{FORM_DEPTH}"] = 0.5 * glosses + 0.5 * group_means(glosses, g)[g]
    out[f"balanced-d{FORM_DEPTH}"] = balanced(glosses, g)
    out[f"between-d{FORM_DEPTH}-matched"] = matched(out[f"between-d{FORM_DEPTH}"], glosses)
    for form in (
        f"pulled-d{FORM_DEPTH}",
        f"balanced-d{FORM_DEPTH}",
        f"between-d{FORM_DEPTH}-matched",
    ):
        rows.append({"form": form, "anchors": len(out[form]), "groups": n_groups})
    variance = np.trace(moments(glosses)[1])
    for row in rows:
        row["trace"] = float(np.trace(moments(out[row["form"]])[1]) / variance)
    return out, rows


def matched(x: np.ndarray, like: np.ndarray) -> np.ndarray:
    """``x [m, d]`` with its deviations from its mean rescaled so that its total variance (the
    covariance's trace) equals that of ``like [n, d]``."""
    mu = x.mean(axis=0)
    scale = np.sqrt(np.trace(moments(like)[1]) / np.trace(moments(x)[1]))
    return mu + scale * (x - mu)


def moment_check(glosses: np.ndarray, prior: str = PRIOR) -> dict:
    """How closely the glosses embedded here reproduce the shipped model's moments:
    ``max |Δμ|`` and ``‖ΔΣ‖_F / ‖Σ‖_F``."""
    model = load_model(default_models_dir() / prior)
    mean = np.asarray(model.mean, np.float64)
    factor = np.asarray(model.factor, np.float64)
    cov = factor @ factor.T
    mu, c = moments(glosses)
    return {
        "max_abs_mean_diff": float(np.abs(mu - mean).max()),
        "rel_cov_diff": float(np.linalg.norm(c - cov) / np.linalg.norm(cov)),
    }


# ---- the models ----------------------------------------------------------------------------

#: the recipe again with a larger relative ridge (``reg``, default 1e-3): for the forms whose
#: covariance is rank-deficient, does the recipe's strength choice recover?
RIDGE = 0.1
#: (model, budget, strength) the recipe chose, one per cell
CHOSEN: list[dict] = []


def variants(d: int) -> dict[str, dict]:
    """``{variant: adapt options}`` of a form in ``d`` dimensions: the default recipe, the recipe
    with the larger ridge :data:`RIDGE`, and each fixed strength s (κ₀ = s, ν₀ = d + 1 + s)."""
    return {
        "default": {},
        f"default reg={RIDGE:g}": {"reg": RIDGE},
        **{f"s={s:g}": {"kappa0": s, "nu0": d + 1 + s} for s in STRENGTHS},
    }


def _posterior(name: str, options: dict, broad, _curve_broad, target, tau):
    post = adapt("gaussian", broad, target, tau=tau, **options)
    if "kappa0" not in options:
        CHOSEN.append({"model": name, "n": len(target), "strength": float(post.prior.kappa0)})
    return post.point("mean")


def models(prior_forms: dict) -> dict[str, CurveModel]:
    """cosine, target-only and, per form, its :func:`variants` (named ``"<form> <variant>"``)."""
    out = {name: MODELS[name] for name in ("cosine", "gaussian")}
    for form, broad in prior_forms.items():
        for variant, options in variants(broad.shape[1]).items():
            name = f"{form} {variant}"
            out[name] = CurveModel(
                functools.partial(_posterior, name, options, broad), "custom", "gaussian"
            )
    return out


# ---- reading it ----------------------------------------------------------------------------


def ratio_text(r: dict) -> str:
    if not np.isfinite(r["ratio"]):
        return f"≥ {r['at_least']:.1f} (never reached)"
    return f"{r['ratio']:.2f} [{r['low']:.2f}, {r['high']:.2f}]"


def _best(needs: dict, names) -> str:
    return max(names, key=lambda n: np.nan_to_num(needs[n]["ratio"], nan=-1.0))


def fixed_names(form: str) -> list[str]:
    return [f"{form} s={s:g}" for s in STRENGTHS]


def ratio_rows(needs: dict, prior_forms: dict) -> list[dict]:
    """One row per form: the ratio of each variant, and the best fixed strength's."""
    rows = []
    for form, broad in prior_forms.items():
        row = {"form": form}
        for variant in variants(broad.shape[1]):
            row[variant] = ratio_text(needs[f"{form} {variant}"])
        best = _best(needs, fixed_names(form))
        rows.append({**row, "best": f"{best[len(form) + 1 :]}: {needs[best]['ratio']:.2f}"})
    return rows


def chosen_rows() -> list[dict]:
    """Mean strength the recipe chose, per recipe model and budget."""
    rows = []
    for name in dict.fromkeys(c["model"] for c in CHOSEN):
        cs = [c for c in CHOSEN if c["model"] == name]
        rows.append(
            {
                "model": name,
                **{
                    f"n={n}": float(np.mean([c["strength"] for c in cs if c["n"] == n]))
                    for n in sorted({c["n"] for c in cs})
                },
            }
        )
    return rows


def target_level(curve, ratio: float = TARGET_RATIO, at: int = 2) -> float:
    """Target-only mean AUPRC at ``ratio · at`` anchors (log-linear between budgets): what a
    model must reach at ``at`` anchors for an anchors-needed ratio of ``ratio``."""
    means = curve.means("gaussian")
    ok = np.isfinite(means)
    return float(np.interp(np.log(ratio * at), np.log(np.asarray(curve.budgets)[ok]), means[ok]))


def conclusion(curve, needs: dict, prior_forms: dict) -> str:
    """The answer in numbers: best form by the recipe and at a fixed strength, whether any
    model reaches the target ratio (point estimate, and with its whole interval), and the
    2-anchor AUPRC that ratio asks for."""
    top = max(needs, key=lambda n: needs[n]["level_auprc"])
    recipe = _best(needs, [n for n in needs if " default" in n])
    fixed = _best(needs, [n for f in prior_forms for n in fixed_names(f)])
    reach = [n for n, r in needs.items() if r["ratio"] >= TARGET_RATIO]
    sure = [n for n, r in needs.items() if r["low"] >= TARGET_RATIO]
    shipped = needs["glosses default"]["ratio"], needs[_best(needs, fixed_names("glosses"))]
    return (
        f"Shipped construction (glosses): {shipped[0]:.2f}× with the default recipe, "
        f"{shipped[1]['ratio']:.2f}× at its best fixed strength.  Best with the recipe: "
        f"`{recipe}` {ratio_text(needs[recipe])}; best at a fixed strength (chosen on "
        f"these data): `{fixed}` {ratio_text(needs[fixed])}.  Point estimate ≥ "
        f"{TARGET_RATIO:g}×: {', '.join(f'`{n}`' for n in reach) or 'none'}; whole 95 % "
        f"interval ≥ {TARGET_RATIO:g}×: {', '.join(f'`{n}`' for n in sure) or 'none'}.  "
        f"{TARGET_RATIO:g}× asks for target-only's AUPRC at {2 * TARGET_RATIO:g} anchors, "
        f"{target_level(curve):.3f}, from 2 anchors; the best 2-anchor AUPRC of any model "
        f"here is {needs[top]['level_auprc']:.3f} (`{top}`)."
    )


def markdown(curve, needs, prior_forms, form_rows, check, args, seconds) -> str:
    cols = [
        ("form", "form"),
        ("default", "default recipe"),
        (f"default reg={RIDGE:g}", f"recipe, reg = {RIDGE:g}"),
        *[(f"s={s:g}", f"s = {s:g}") for s in STRENGTHS],
        ("best", "best fixed"),
    ]
    chosen = chosen_rows()
    return "\n\n".join(
        [
            f"Style task (`bench_recipe.style_task`), region of `{args.prior}` (same synsets and "
            f"exclusions, texts checked against its card), {args.queries} queries, {args.subsets} "
            f"target subsets per budget, τ = {TAU:g}; run time {seconds['total']:.0f} s "
            f"(embedding {seconds['embed']:.0f} s, curve {seconds['curve']:.0f} s).",
            f"Glosses embedded here vs the shipped model: max |Δμ| = "
            f"{check['max_abs_mean_diff']:.2e}, ‖ΔΣ‖_F / ‖Σ‖_F = {check['rel_cov_diff']:.2e}.",
            "## Forms",
            table(
                form_rows,
                [
                    ("form", "form"),
                    ("anchors", "broad anchors"),
                    ("groups", "groups"),
                    ("trace", "total variance ÷ the glosses'"),
                ],
            ),
            "## Anchors needed: budget at which target-only reaches the model's 2-anchor AUPRC, ÷ 2",
            table(ratio_rows(needs, prior_forms), cols),
            "## Conclusion (from the numbers)",
            conclusion(curve, needs, prior_forms),
            "## Mean AUPRC [95 % interval] per budget",
            table(
                summary_table(curve),
                [("model", "model"), *[(str(b), f"n={b}") for b in curve.budgets]],
            ),
            "## Strength the default recipe chose (mean over subsets)",
            table(chosen, [("model", "model"), *[(k, k) for k in chosen[0] if k != "model"]]),
        ]
    )


def main() -> None:
    p = parser(__doc__.split("\n\n")[0])
    p.add_argument("--subsets", type=int, default=None, help="target subsets per budget (4)")
    p.add_argument("--queries", type=int, default=None, help="queries (300)")
    p.add_argument("--prior", default=PRIOR, help=f"shipped WordNet prior under models/ ({PRIOR})")
    args = p.parse_args()
    args.subsets = args.subsets or (2 if args.quick else 4)
    args.queries = args.queries or (100 if args.quick else 300)
    start = time.time()
    broad, targets, setup = style_task(args.queries, args.prior)
    card, synsets, texts, roots = region(args.prior)
    embed, encoder_id, _ = resolve_encoder("minilm", None, None)
    if encoder_id != card["encoder"]:
        raise AnchorDivError(
            f"prior {args.prior!r} was built with {card['encoder']}, the task "
            f"embeds with {encoder_id}"
        )
    glosses = np.asarray(embed(texts), np.float64)
    names = np.asarray(embed(lemma_texts(synsets)), np.float64)
    prior_forms, form_rows = forms(synsets, roots, glosses, names)
    check = moment_check(glosses, args.prior)
    seconds = {"embed": time.time() - start}
    curve = adaptation_curve(
        broad,
        targets,
        tau=TAU,
        models=models(prior_forms),
        budgets=BUDGETS,
        n_subsets=args.subsets,
        seed=0,
        progress=False,
        n_boot=500,
        **setup,
    )
    needs = {
        name: anchors_needed(curve, name, "gaussian")
        for name in curve.models
        if name not in ("cosine", "gaussian")
    }
    seconds["total"] = time.time() - start
    seconds["curve"] = seconds["total"] - seconds["embed"]
    payload = {
        "task": {
            "prior": args.prior,
            "queries": args.queries,
            "subsets": args.subsets,
            "budgets": curve.budgets,
            "tau": TAU,
            "strengths": STRENGTHS,
            "ridge": RIDGE,
            "group_depths": GROUP_DEPTHS,
            "form_depth": FORM_DEPTH,
        },
        "forms": form_rows,
        "moment_check": check,
        "summary": curve.summary(),
        "anchors_needed": list(needs.values()),
        "chosen": chosen_rows(),
        "conclusion": conclusion(curve, needs, prior_forms),
        "seconds": seconds,
    }
    path = write_results(
        "bench_prior_forms",
        payload,
        markdown(curve, needs, prior_forms, form_rows, check, args, seconds),
        args.tag or ("quick" if args.quick else ""),
    )
    print(path.read_text())


if __name__ == "__main__":
    main()
