"""Object vs style (the paper's Fig. 3, in kind, on text): items name one ImageNet-R object and
one style (seeded :data:`ITEM_TEMPLATES`), object and style anchors name one alone (templates
the items never use; checked); the study mixes q_p = p·q_obj + (1 − p)·q_style (``ad.mix``) and
measures object and style retrieval as p moves.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from ...anchors import fit, mix
from ...errors import AnchorDivError, as_matrix
from ...evaluation.evaluate import evaluate
from ...provenance import resolve_tau
from ..report import interval_cell
from ._common import Embed, labelled_retrieval

ITEM_TEMPLATES = (
    "{a_style} of {a_object}",
    "{a_style} of the {object}",
    "the {object} as {a_style}",
    "{object}, rendered as {style}",
    "{a_object} in {style} form",
    "this {style} depicts {a_object}",
)
OBJECT_TEMPLATES = (
    "{object}",
    "{a_object}",
    "the {object}",
    "an image of {a_object}",
    "something that is {a_object}",
)
STYLE_TEMPLATES = (
    "{style}",
    "{a_style}",
    "an example of {style}",
    "made as {style}",
    "the style of {style}",
)
#: a grid dense near both ends, where the mixture's cumulant changes fastest.
DEFAULT_PS = (0.0, 0.01, 0.03, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 0.97, 0.99, 1.0)


def _fill(template: str, *, object: str = "", style: str = "") -> str:
    """Fill a template; ``{a_object}``/``{a_style}`` get the indefinite article."""

    def a(word: str) -> str:
        return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"

    return template.format(object=object, style=style, a_object=a(object), a_style=a(style))


@dataclasses.dataclass
class ObjectStyleTask:
    """Texts and labels: ``items`` with ``item_object``/``item_style`` ``[n]`` indices into
    ``objects``/``styles``; ``object_anchors`` / ``style_anchors`` texts with their labels."""

    objects: list[str]
    styles: list[str]
    items: list[str]
    item_object: np.ndarray
    item_style: np.ndarray
    object_anchors: list[str]
    style_anchors: list[str]


def styleless(objects: Sequence[str], styles: Sequence[str]) -> list[str]:
    """The object names that contain no style name as a word ("toy terrier" goes: "toy" is
    an ImageNet-R style), so object anchors carry no style."""
    return [o for o in objects if not any(f" {s} " in f" {o} " for s in styles)]


def object_style_task(
    objects: Sequence[str], styles: Sequence[str], *, seed: int = 0
) -> ObjectStyleTask:
    """Build the items and anchors of the object/style task (module docstring).

    Parameters
    ----------
    objects : sequence of str
        Object names (none may contain a style name; filter with :func:`styleless`).
    styles : sequence of str
        Style names.
    seed : int, default 0
        Seed of the item templates.

    Returns
    -------
    ObjectStyleTask
        ``items`` with their object and style, and the object and style anchor texts.

    Raises
    ------
    AnchorDivError
        Fewer than 2 objects or styles, repeated names, or an object that contains a style
        name.

    Examples
    --------
    >>> from anchordiv.app.studies import object_style_task
    >>> task = object_style_task(["cat", "dog", "car"], ["sketch", "painting"])
    >>> len(task.items), task.styles
    (6, ['sketch', 'painting'])
    """
    objects, styles = [o.strip() for o in objects], [s.strip() for s in styles]
    if len(objects) < 2 or len(styles) < 2:
        raise AnchorDivError("object_style_task: need at least 2 objects and 2 styles")
    if len(set(objects)) != len(objects) or len(set(styles)) != len(styles):
        raise AnchorDivError("object_style_task: object and style names must be unique")
    rng = np.random.default_rng(seed)
    oi, si = np.meshgrid(np.arange(len(objects)), np.arange(len(styles)), indexing="ij")
    oi, si = oi.ravel(), si.ravel()
    picks = rng.integers(len(ITEM_TEMPLATES), size=len(oi))
    items = [
        _fill(ITEM_TEMPLATES[t], object=objects[o], style=styles[s])
        for o, s, t in zip(oi, si, picks)
    ]
    task = ObjectStyleTask(objects, styles, items, oi, si, *anchor_texts(objects, styles))
    overlap = set(task.items) & (set(task.object_anchors) | set(task.style_anchors))
    if overlap:
        raise AnchorDivError(
            f"object_style_task: item texts equal anchor texts: {sorted(overlap)[:3]}"
        )
    for a in task.object_anchors:
        if any(f" {s} " in f" {a} " for s in styles):
            raise AnchorDivError(
                f"object_style_task: object anchor {a!r} names a style; "
                f"drop such objects first (studies.object_style.styleless)"
            )
    return task


def anchor_texts(objects: Sequence[str], styles: Sequence[str]) -> tuple[list[str], list[str]]:
    """``(object anchors, style anchors)``: each object named alone with
    :data:`OBJECT_TEMPLATES`, each style alone with :data:`STYLE_TEMPLATES`."""
    return (
        [_fill(t, object=o) for o in objects for t in OBJECT_TEMPLATES],
        [_fill(t, style=s) for s in styles for t in STYLE_TEMPLATES],
    )


@dataclasses.dataclass
class ObjectStyleEmbeddings:
    items: np.ndarray  # [n, d]
    object_anchors: np.ndarray  # [m_o, d]
    style_anchors: np.ndarray  # [m_s, d]


def embed_task(task: ObjectStyleTask, embed: Embed) -> ObjectStyleEmbeddings:
    return ObjectStyleEmbeddings(
        embed(task.items), embed(task.object_anchors), embed(task.style_anchors)
    )


def object_style_study(
    task: ObjectStyleTask,
    emb: ObjectStyleEmbeddings,
    *,
    kind: str = "gaussian",
    tau: float | None = None,
    ps: Sequence[float] = DEFAULT_PS,
    max_queries: int | None = 400,
    seed: int = 0,
    progress: bool = True,
    query_mask=None,
) -> list[dict]:
    """AUPRC of object and of style retrieval under q_p = p·q_obj + (1−p)·q_style for each p.

    Cosine and inversion (with the union of all anchors) are added as rows with ``p = nan``.

    Parameters
    ----------
    task, emb : ObjectStyleTask, ObjectStyleEmbeddings
        From :func:`object_style_task`, and its texts embedded.
    kind : str, default "gaussian"
        The anchor-model kind of q_obj and q_style.
    tau : float, optional
        The encoder's logit scale (default: from the provenance).
    ps : sequence of float
        Mixing weights p in [0, 1].
    max_queries : int, optional, default 400
        Seeded query subsample.
    seed : int, default 0
        Seed.
    progress : bool, default True
        Show a progress bar.
    query_mask : array_like of bool, shape [n], optional
        A query/gallery split (queries: the masked items; gallery: the rest); default: every
        item is a query against all the others.

    Returns
    -------
    list of dict
        Tidy rows ``target, scorer, p, auprc, low, high, prevalence, n_queries``.

    Raises
    ------
    AnchorDivError
        The item embeddings do not match the task's item texts in number.
    """
    tau = resolve_tau(
        tau, items=emb.items, object_anchors=emb.object_anchors, style_anchors=emb.style_anchors
    )
    x = as_matrix("items", emb.items)
    if len(x) != len(task.items):
        raise AnchorDivError(f"items: {len(x)} embeddings for {len(task.items)} item texts")
    anchors = np.concatenate([emb.object_anchors, emb.style_anchors])
    scorers = mixture_scorers(emb, kind, tau, ps)
    rows = []
    for target, labels in (("object", task.item_object), ("style", task.item_style)):
        setup = labelled_retrieval(x, labels, max_queries, seed, query_mask)
        ev = evaluate(scorers, **setup, anchors=anchors, seed=seed, progress=progress)
        for r in ev.summary():
            p = float(r["scorer"][2:]) if r["scorer"].startswith("p=") else float("nan")
            rows.append(
                {
                    "target": target,
                    "scorer": kind if p == p else r["scorer"],
                    "p": p,
                    **{k: r[k] for k in ("auprc", "low", "high", "prevalence", "n_queries")},
                }
            )
    return rows


def mixture_scorers(emb: ObjectStyleEmbeddings, kind: str, tau: float, ps) -> dict:
    """``{"p=0.10": q_p}``: the mixtures q_p = p·q_obj + (1−p)·q_style of one ``kind`` fitted to
    the object and to the style anchors, for each p in ``ps``."""
    q_obj = fit(kind, emb.object_anchors, tau=tau)
    q_sty = fit(kind, emb.style_anchors, tau=tau)
    return {f"p={p:.2f}": mix(q_obj, q_sty, float(p)) for p in ps}


def plot_object_style(rows: list[dict], path):
    """AUPRC of object and style retrieval against p (bands: 95 % intervals), baselines dashed."""
    from ...plots import pyplot, save_figure

    fig, ax = pyplot().subplots(figsize=(8.8, 4.4))
    for target, colour in (("object", "tab:blue"), ("style", "tab:orange")):
        curve = sorted(
            (r for r in rows if r["target"] == target and r["p"] == r["p"]), key=lambda r: r["p"]
        )
        p = [r["p"] for r in curve]
        ax.plot(p, [r["auprc"] for r in curve], "o-", color=colour, label=f"{target} retrieval")
        ax.fill_between(
            p, [r["low"] for r in curve], [r["high"] for r in curve], color=colour, alpha=0.2
        )
        for r in rows:
            if r["target"] == target and r["p"] != r["p"]:
                ax.axhline(
                    r["auprc"],
                    color=colour,
                    ls=":" if r["scorer"] == "cosine" else "--",
                    lw=1,
                    label=f"{target}: {r['scorer']}",
                )
        ax.axhline(
            curve[0]["prevalence"], color=colour, lw=0.8, alpha=0.5, label=f"{target}: prevalence"
        )
    ax.set_xlabel("p  (anchor mass on object anchors; q_p = p·q_obj + (1−p)·q_style)")
    ax.set_ylabel("mean AUPRC (95 % interval)")
    ax.set_title("Object vs style: moving anchor mass on fixed embeddings")
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return save_figure(fig, path)


def _cell(r: dict) -> str:
    return interval_cell(r["auprc"], r["low"], r["high"])


def report_section(
    rep, task: ObjectStyleTask, rows: list[dict], *, title: str | None = None, description=None
) -> None:
    """The object-vs-style section of a report (``title``/``description``: the defaults
    describe the text task; the image studies describe their dataset)."""
    curve = {(r["target"], r["p"]): r for r in rows if r["p"] == r["p"]}
    base = [r for r in rows if r["p"] != r["p"]]
    rep.section(title or "Object vs style (Fig. 3 in kind)")
    rep.text(
        description
        or f"{len(task.items)} items, one per (object, style) pair of {len(task.objects)} "
        f"ImageNet-R objects × {len(task.styles)} ImageNet-R styles, each written with a "
        f"seeded template (\"a sketch of a goldfish\"); object anchors name the object alone, "
        f"style anchors the style alone, with templates the items never use.  The model is "
        f"q_p = p·q_obj + (1−p)·q_style (two Gaussians, `ad.mix`)."
    )
    table = [
        {"p": p} | {t: _cell(curve[(t, p)]) for t in ("object", "style")}
        for p in sorted({p for _, p in curve})
    ]
    rep.table(table, ["p", "object", "style"])
    rep.table(base, ["target", "scorer", "auprc", "low", "high", "prevalence"])
    rep.figure(
        "object_style.png",
        "Object and style retrieval AUPRC against p (95 % intervals); table: object_style.csv",
    )
    o0, o1 = curve[("object", 0.0)]["auprc"], curve[("object", 1.0)]["auprc"]
    s0, s1 = curve[("style", 0.0)]["auprc"], curve[("style", 1.0)]["auprc"]
    rep.text(
        f"**Outcome.** From p = 0 to p = 1 object AUPRC goes {o0:.3f} → {o1:.3f} and "
        f"style AUPRC {s0:.3f} → {s1:.3f} on the same fixed embeddings."
    )
