"""WordNet → ImageNet adaptation (the paper's Fig. 5, in kind, on text): items are hyponym glosses
of ImageNet classes (usable: no class itself, under exactly one class), targets prompts of the
class names, broad anchors glosses outside every class subtree (docs/guides/studies-and-curves.md).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Sequence

import numpy as np

from ...adaptation import broad_from_model  # noqa: F401  (re-exported: studies.wordnet_imagenet.broad_from_model)
from ...evaluation import dominance as dom
from ...evaluation.curves import adaptation_curve
from ...errors import AnchorDivError, integer
from ...provenance import resolve_tau
from ..report import interval_cell
from ._common import Embed, labelled_retrieval, subsample

DEFAULT_MODELS = (
    "softmax",
    "gaussian",
    "latent-gaussian",
    "posterior-gaussian",
    "isotropic-gaussian",
    "posterior-latent-gaussian",
    "isotropic-latent-gaussian",
    "cosine",
    "inversion",
)


@dataclasses.dataclass
class WordNetTask:
    """``items`` (gloss texts) with ``item_class [n]``; ``targets`` (prompts) with
    ``target_class [m]``; both index ``wnids`` / ``names``."""

    wnids: list[str]
    names: list[str]
    items: list[str]
    item_class: np.ndarray
    targets: list[str]
    target_class: np.ndarray


@functools.lru_cache(maxsize=4)
def _owners(class_wnids: tuple[str, ...]) -> dict:
    """synset -> set of class indices whose subtree (strictly below the class) contains it."""
    from ...data import wordnet

    owners: dict = {}
    for i, w in enumerate(class_wnids):
        for s in wordnet.subtree(w):
            if wordnet.wnid(s) != w:
                owners.setdefault(s, set()).add(i)
    return owners


def class_items(class_wnids: Sequence[str]) -> list[list]:
    """Per class, its usable hyponym synsets (see the module docstring), in offset order."""
    from ...data import wordnet

    owners = _owners(tuple(class_wnids))
    classes = set(class_wnids)
    out: list[list] = [[] for _ in class_wnids]
    for s, who in owners.items():
        if len(who) == 1 and wordnet.wnid(s) not in classes:
            out[next(iter(who))].append(s)
    return [sorted(v, key=lambda s: s.offset()) for v in out]


def broad_pool(class_wnids: Sequence[str]) -> list:
    """WordNet noun synsets outside every class's subtree (class synsets included), in offset order.

    The broad anchors never contain an item or a class.

    Parameters
    ----------
    class_wnids : sequence of str
        The classes' WordNet ids (``n01440764``, ...).

    Returns
    -------
    list of nltk Synset
        The broad pool.
    """
    from ...data import wordnet

    excluded = set(_owners(tuple(class_wnids)))
    excluded |= {wordnet.synset(w) for w in class_wnids}
    return [s for s in wordnet.noun_synsets() if s not in excluded]


def wordnet_imagenet_task(
    class_wnids: Sequence[str],
    class_names: Sequence[str],
    templates: Sequence[str],
    *,
    n_classes: int | None = 50,
    min_items: int = 3,
    max_items: int = 8,
    seed: int = 0,
) -> WordNetTask:
    """Build the WordNet → ImageNet task (module docstring).

    Parameters
    ----------
    class_wnids : sequence of str
        Candidate classes' WordNet ids.
    class_names : sequence of str
        Their readable names.
    templates : sequence of str
        Prompt templates, each with one ``{}``.
    n_classes : int, optional, default 50
        Classes drawn (None: all).
    min_items, max_items : int, default 3, 8
        Gloss items per class.
    seed : int, default 0
        Seed.

    Returns
    -------
    WordNetTask
        ``items`` (gloss texts) with ``item_class``, ``targets`` (prompts) with
        ``target_class``.

    Raises
    ------
    AnchorDivError
        ``class_names`` and ``class_wnids`` differ in length, a template without one ``{}``, or
        fewer than 2 classes with ``min_items`` usable hyponyms.
    """
    from ...data import wordnet

    if len(class_wnids) != len(class_names):
        raise AnchorDivError(f"class_names: {len(class_names)} names for {len(class_wnids)} wnids")
    if not templates or any("{}" not in t for t in templates):
        raise AnchorDivError("templates: need at least one template, each with one '{}'")
    integer("min_items", min_items, low=1)
    per_class = class_items(class_wnids)
    eligible = [i for i, v in enumerate(per_class) if len(v) >= min_items]
    if len(eligible) < 2:
        raise AnchorDivError(
            f"wordnet_imagenet_task: fewer than 2 classes have {min_items} or more usable hyponyms"
        )
    chosen = [eligible[i] for i in subsample(len(eligible), n_classes, seed)]
    picked = [
        (k, per_class[c][j])
        for k, c in enumerate(chosen)
        for j in subsample(len(per_class[c]), max_items, seed + 1 + k)
    ]
    items, item_class = [wordnet.gloss(s) for _, s in picked], np.asarray([k for k, _ in picked])
    names = [class_names[c] for c in chosen]
    wnids = [class_wnids[c] for c in chosen]
    return WordNetTask(wnids, names, items, item_class, *class_prompts(names, templates))


def class_prompts(names: Sequence[str], templates: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """``(prompts [C·T], class [C·T])``: every template filled with every class name, grouped by
    class — the target anchors."""
    targets = [t.format(n) for n in names for t in templates]
    return targets, np.repeat(np.arange(len(names)), len(templates))


@dataclasses.dataclass
class WordNetEmbeddings:
    items: np.ndarray  # [n, d]
    targets: np.ndarray  # [m, d]


def embed_task(task: WordNetTask, embed: Embed) -> WordNetEmbeddings:
    return WordNetEmbeddings(embed(task.items), embed(task.targets))


def retrieval_setup(
    task: WordNetTask,
    emb: WordNetEmbeddings,
    max_queries: int | None,
    seed: int,
    query_mask=None,
) -> dict:
    """Queries (seeded subsample of the items, or of the split's queries), gallery (all items,
    or the split's gallery), relevance, query_index (:func:`._common.labelled_retrieval`)."""
    if len(emb.items) != len(task.items):
        raise AnchorDivError(f"items: {len(emb.items)} embeddings for {len(task.items)} items")
    return labelled_retrieval(emb.items, task.item_class, max_queries, seed, query_mask)


def wordnet_imagenet_study(
    task: WordNetTask,
    emb: WordNetEmbeddings,
    broad,
    *,
    tau: float | None = None,
    models: Sequence[str] = DEFAULT_MODELS,
    budgets=None,
    n_subsets: int = 5,
    max_queries: int | None = 300,
    seed: int = 0,
    progress: bool | None = None,
    query_mask=None,
):
    """The WordNet → ImageNet adaptation curve.

    Parameters
    ----------
    task, emb : WordNetTask, WordNetEmbeddings
        From :func:`wordnet_imagenet_task`, and its texts embedded.
    broad : array_like, shape [N, d]
        Broad anchor embeddings (or :func:`broad_from_model` of a saved prior).
    tau : float, optional
        Default: the logit scale recorded with the embeddings (:func:`anchordiv.resolve_tau`).
    models : sequence of str
        Curve model names.
    budgets : list of int, optional
        Target-anchor budgets.
    n_subsets : int, default 5
        Subsets per budget.
    max_queries : int, optional, default 300
        Seeded query subsample.
    seed : int, default 0
        Seed.
    progress : bool, optional
        Show a progress bar.
    query_mask : array_like of bool, shape [n], optional
        A query/gallery split of the items (default: every item against all the others).

    Returns
    -------
    Curve
        The adaptation curve (:class:`anchordiv.evaluation.curves.Curve`).
    """
    tau = resolve_tau(tau, items=emb.items, targets=emb.targets, broad=broad)
    setup = retrieval_setup(task, emb, max_queries, seed, query_mask)
    opts = dict(models=models, budgets=budgets, n_subsets=n_subsets, seed=seed, progress=progress)
    return adaptation_curve(broad, emb.targets, tau=tau, **opts, **setup)


def pivot(summary: list[dict]) -> list[dict]:
    """AUPRC as a table: one row per budget, one column per model, cells ``mean [low, high]``
    (the 95 % interval; "–" where the model is undefined)."""
    out: dict[int, dict] = {}
    for r in summary:
        cell = interval_cell(r["auprc"], r["low"], r["high"])
        out.setdefault(r["budget"], {"budget": r["budget"]})[r["model"]] = cell
    return [out[b] for b in sorted(out)]


def _fmt(x) -> str:
    return "–" if x is None or x != x else f"{x:.3g}"


def _contrasts(curve, small: int) -> list[dict]:
    """Posterior vs target-only and vs the isotropic control, per kind, at budgets ≤ small."""
    rows = []
    for name, m in curve.models.items():
        if m.role != "posterior":
            continue
        for other in (m.kind, f"isotropic-{m.kind}"):
            if other in curve.models:
                rows += [
                    {"contrast": f"{name} − {other}", **c}
                    for c in curve.contrast(name, other)
                    if c["budget"] <= small
                ]
    return rows


def _subsets(curve) -> int:
    """Target subsets drawn per budget (from the rows, whether or not a model was defined)."""
    first = curve.budgets[0]
    return len({r["subset"] for r in curve.rows if r["budget"] == first})


def report_section(
    rep, task: WordNetTask, curve, needs: dict, source: str, *, title=None, description=None
) -> None:
    """The WordNet → ImageNet section of a report (``title``/``description``: the defaults
    describe the text task; the image studies describe their dataset)."""
    per_class = len(task.targets) // len(task.names)
    rep.section(title or "WordNet → ImageNet adaptation (Fig. 5 in kind)")
    rep.text(
        description
        or f"{len(task.names)} ImageNet classes; {len(task.items)} items = WordNet hyponyms of "
        f"those classes as \"lemma: gloss\" texts (relevant = same class, query removed); "
        f"{len(task.targets)} target anchors = {per_class} prompt templates × class name; broad "
        f"prior: {source} (WordNet glosses outside all 1,000 ImageNet classes and their "
        f"subtrees).  Budgets are random target subsets ({_subsets(curve)} "
        f"per budget below all targets, shared by all models).  `isotropic-*` is the control: the same prior "
        f"strength with an isotropic prior covariance of the same trace."
    )
    rep.figure(
        "wordnet_imagenet/curve.png",
        "Mean AUPRC against the number of target "
        "anchors (95 % intervals).  Tables: "
        "wordnet_imagenet/curve_summary.csv",
    )
    table = pivot(curve.summary())
    rep.table(table, list(table[0]))
    rows = [{"model": n, **{k: _fmt(v) for k, v in m.items()}} for n, m in needs["models"].items()]
    rep.text(
        f"Target anchors each model needs to stay at or above "
        f"{needs['fraction']:.0%} of its own full-coverage quality above chance:"
    )
    rep.table(rows, ["model", "full_auprc", "level", "budget_needed", "budget_needed_interpolated"])
    small = sorted(curve.budgets)[min(2, len(curve.budgets) - 1)]
    contrasts = _contrasts(curve, small)
    if contrasts:
        rep.text(f"Paired differences at small budgets (≤ {small} target anchors):")
        rep.table(contrasts, ["contrast", "budget", "difference", "low", "high"])
        count = cell_counts(contrasts)
        rep.text(
            f"**Outcome.** Posterior above target-only with the interval excluding zero in "
            f"{count['target_above']} of {count['target']} small-budget cells "
            f"where target-only is defined; posterior above the isotropic control (gain from "
            f"the *shape* of the WordNet covariance, not mere shrinkage) in "
            f"{count['control_above']} of {count['control']}, below it in "
            f"{count['control_below']}.  " + _versus_cosine(curve)
        )


def cell_counts(contrasts: list[dict]) -> dict[str, int]:
    """The outcome's counts over the small-budget cells with a finite difference: against
    target-only (``target``, ``target_above``) and the isotropic control (``control``,
    ``control_above``, ``control_below``), above/below = paired interval excluding zero."""
    finite = [c for c in contrasts if np.isfinite(c["difference"])]
    vs_target = [c for c in finite if "isotropic" not in c["contrast"]]
    vs_control = [c for c in finite if "isotropic" in c["contrast"]]
    return {
        "target": len(vs_target),
        "target_above": sum(dom.interval_above(c["low"]) for c in vs_target),
        "control": len(vs_control),
        "control_above": sum(dom.interval_above(c["low"]) for c in vs_control),
        "control_below": sum(dom.interval_below(c["high"]) for c in vs_control),
    }


def above_cosine(curve) -> list[tuple[str, int, float]]:
    """``(model, first budget, best mean)`` of each model whose mean AUPRC exceeds cosine's
    mean over the budgets at some budget (means, no interval: the sentence says "mean")."""
    cos = float(np.nanmean(curve.means("cosine")))
    out = []
    for name in curve.models:
        m = curve.means(name)
        hits = [b for b, v in zip(curve.budgets, m) if dom.exceeds(v, cos)]
        if name != "cosine" and hits:
            out.append((name, hits[0], float(np.nanmax(m))))
    return out


def _versus_cosine(curve) -> str:
    """Which models beat cosine (which uses no anchors at all), and from which budget."""
    if "cosine" not in curve.models:
        return ""
    cos = float(np.nanmean(curve.means("cosine")))
    above = [f"{n} (from {b} anchors, best {m:.3f})" for n, b, m in above_cosine(curve)]
    return (
        f"Cosine, which uses no anchors, scores {cos:.3f}; models whose mean exceeds it: "
        f"{'; '.join(above) or 'none'}."
    )
