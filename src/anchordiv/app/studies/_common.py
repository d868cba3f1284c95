"""Helpers shared by the studies: subsampling, anchor subsets, summaries, retrieval setups,
``embed(texts)`` and the report section "What each geometry retrieves"."""

from __future__ import annotations

import dataclasses
import re
from typing import Callable, Mapping, Sequence

import numpy as np

from ...anchors import fit
from ...errors import AnchorDivError, as_matrix, in_unit_interval, integer
from ...evaluation.evaluate import bootstrap_interval, write_rows
from ...evaluation.retrieved import Neighbours, neighbours

#: ``embed(texts) -> [n, d]`` unit-norm embeddings; the studies never care which encoder.
Embed = Callable[[Sequence[str]], np.ndarray]


def text_embed(encoder) -> Embed:
    """``embed(texts)``: an :class:`~anchordiv.data.Encoder`'s text tower through the
    embedding cache."""
    from ...data.encoders import embed_texts

    return lambda texts: embed_texts(encoder, list(texts))


def random_weights_note(rep, encoder) -> None:
    """A report's first paragraph when ``encoder`` runs randomly initialised."""
    if encoder.random_weights:
        rep.text(
            f"**Random weights**: `{encoder.id}` was run randomly initialised "
            f"(`--random-weights`, no `--pretrained`): its embeddings, and every number below, "
            f"mean nothing about the model or the data."
        )


def subsample(n: int, size: int | None, seed: int) -> np.ndarray:
    """Sorted indices of a seeded random subset of ``range(n)`` of ``size`` (all if None/≥n)."""
    if size is None or size >= n:
        return np.arange(n)
    integer("size", size, low=1)
    return np.sort(np.random.default_rng(seed).choice(n, size, replace=False))


def anchor_subsets(n: int, fraction: float, count: int, seed: int) -> list[np.ndarray]:
    """``count`` seeded random subsets of ``range(n)``, each ``max(2, round(fraction·n))`` rows
    (with ``fraction = 1`` a single full set, since repeats would be identical)."""
    in_unit_interval("subset_fraction", fraction)
    integer("n_subsets", count, low=1)
    if fraction >= 1 or n <= 2:
        return [np.arange(n)]
    size = max(2, int(round(fraction * n)))
    rng = np.random.default_rng(seed)
    return [np.sort(rng.choice(n, size, replace=False)) for _ in range(count)]


def fit_kinds(
    kinds: Sequence[str], anchors: np.ndarray, tau: float, options: dict | None = None
) -> dict:
    """``{kind: ad.fit(kind, anchors, tau, **options[kind])}``."""
    options = options or {}
    return {k: fit(k, anchors, tau=tau, **options.get(k, {})) for k in kinds}


def summarise(
    per_query: dict[str, list[np.ndarray]], *, reference: str | None = "cosine", seed: int = 0
) -> list[dict]:
    """One row per scorer from its per-query AUPRC under each anchor subset (``[S][Q]``):
    mean with a two-level bootstrap 95 % interval (queries × anchor subsets), and the paired
    difference to ``reference`` with its interval."""
    rows = []
    for name, runs in per_query.items():
        v = np.stack(runs)
        m, lo, hi = bootstrap_interval(v, seed=seed)
        row = {"scorer": name, "auprc": m, "low": lo, "high": hi, "n_subsets": len(runs)}
        if reference in per_query:
            ref = np.stack(per_query[reference])  # same subsets and queries
            row["diff"], row["diff_low"], row["diff_high"] = bootstrap_interval(v - ref, seed=seed)
        rows.append(row)
    return rows


def labelled_retrieval(items, labels, max_queries: int | None, seed: int, query_mask=None) -> dict:
    """Relevant = same label: ``{"queries": [Q, d], "gallery": [G, d], "relevance": [Q, G],
    "query_index": [Q] or None}`` for a seeded subsample of ``max_queries`` queries (all if
    None).

    Without ``query_mask`` every item is a query against all items (itself removed:
    ``query_index``); with ``query_mask [n]`` (bool) the queries come from the masked items and
    the gallery is the rest (disjoint, ``query_index`` None) — a dataset's query/gallery split."""
    x = as_matrix("items", items)
    lab = check_labels("labels", labels, len(x))
    if query_mask is None:  # every item against all items, itself removed
        q = subsample(len(x), max_queries, seed)
        gallery, index = slice(None), q
    else:
        check_labels("query_mask", query_mask, len(x))
        (q, gallery), index = split_rows(query_mask, max_queries, seed), None
    return {
        "queries": x[q],
        "gallery": x[gallery],
        "query_index": index,
        "relevance": lab[q, None] == lab[None, gallery],
    }


def split_rows(query_mask, max_queries: int | None, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(query rows [Q], gallery rows [G])`` of a query/gallery split: a seeded subsample of
    ``max_queries`` of the masked rows, and every unmasked row."""
    mask = np.asarray(query_mask, bool)
    pool, gallery = np.flatnonzero(mask), np.flatnonzero(~mask)
    if not len(pool) or not len(gallery):
        raise AnchorDivError(
            f"query_mask: {len(pool)} queries and {len(gallery)} gallery items; need both"
        )
    return pool[subsample(len(pool), max_queries, seed)], gallery


def check_labels(name: str, labels, n: int) -> np.ndarray:
    lab = np.asarray(labels)
    if lab.shape[0] != n:
        raise AnchorDivError(f"{name}: expected {n} rows (one per item), got {lab.shape[0]}")
    return lab


# ---- what each geometry retrieves --------------------------------------------------------

#: the report section every study contributes to
NEIGHBOURS_TITLE = "What each geometry retrieves"
#: seeded queries shown per study, and neighbours per query
SHOWN_QUERIES, SHOWN_K = 3, 5

#: study -> its title in "What each geometry retrieves" (on images: `` on `LAYOUT` images``)
SHOWN_TITLES = {
    "clinical": "Clinical retrieval",
    "wordnet-imagenet": "WordNet → ImageNet",
    "object-style": "Object vs style: object anchors vs style anchors",
    "budget": "Anchor budget",
}


@dataclasses.dataclass(frozen=True)
class Shown:
    """One study's part of the section: its title, the neighbours, the gallery's items (texts,
    image files or arrays), a sentence on what is shown, optional captions per item."""

    title: str
    result: Neighbours
    items: Sequence
    note: str = ""
    captions: Sequence[str] | None = None
    query_items: Sequence | None = None  # queries from outside the gallery: their items
    query_captions: Sequence[str] | None = None  # and their captions


def show_neighbours(
    title: str,
    scorers: Mapping,
    gallery,
    items: Sequence,
    *,
    queries=SHOWN_QUERIES,
    anchors=None,
    labels=None,
    seed: int = 0,
    note: str = "",
    captions: Sequence[str] | None = None,
    query_labels=None,
    query_items: Sequence | None = None,
    query_captions: Sequence[str] | None = None,
) -> Shown:
    """The top-:data:`SHOWN_K` of ``queries`` (seeded gallery rows, given rows, or query
    embeddings ``[Q, d]`` from outside the gallery, then with their ``query_labels`` and
    ``query_items`` and ``query_captions``) under cosine, inversion (with ``anchors``) and each of ``scorers``,
    baselines first."""
    base = {"cosine": "cosine"} | ({} if anchors is None else {"inversion": "inversion"})
    result = neighbours(
        base | dict(scorers),
        gallery,
        queries,
        anchors=anchors,
        labels=labels,
        query_labels=query_labels,
        k=SHOWN_K,
        baselines=(),
        seed=seed,
    )
    return Shown(title, result, items, note, captions, query_items, query_captions)


def shown_budget(budgets: Sequence[int]) -> int:
    """The budget whose geometries a curve study shows: 5 target anchors if the curve has that
    budget, else its smallest budget of at least 2 (else its largest)."""
    if 5 in budgets:
        return 5
    return min((b for b in budgets if b >= 2), default=max(budgets))


def curve_scorers(
    curve, broad, target, tau: float, *, seed: int, kinds=None, budget: int | None = None
) -> tuple[dict, np.ndarray]:
    """``({name: scorer}, target rows)``: each model of ``curve`` (isotropic controls left out; with
    ``kinds``, only those kinds and the baselines) built on the curve's first seeded subset of
    ``budget`` target anchors (default :func:`shown_budget`), exactly as the curve built it."""
    from ...evaluation.curves import subset

    budget = shown_budget(curve.budgets) if budget is None else budget
    rows = subset(len(target), budget, 0, seed)
    scorers = {
        name: m.factory(broad, target[rows], tau)
        for name, m in curve.models.items()
        if m.role != "isotropic" and (kinds is None or m.kind is None or m.kind in kinds)
    }
    return scorers, rows


def neighbours_section(rep, shown: Sequence[Shown]) -> None:
    """The section :data:`NEIGHBOURS_TITLE`: per study a markdown table of texts, or a PNG grid
    of thumbnails (``neighbours/*.png``); every neighbour in ``neighbours.csv``."""
    from ...plots import item_kind, neighbours as draw

    rep.section(
        NEIGHBOURS_TITLE,
        f"For {SHOWN_QUERIES} seeded queries per study, the top {SHOWN_K} gallery items under "
        f"cosine, image–text inversion and each anchor geometry of the study (the query itself "
        f"left out).  A neighbour that shares the query's label is marked ✓ in a table and "
        f"framed green in a picture (the query: blue); one that does not, ✗ / red; every "
        f"neighbour with its score (and, for images, its file) is in `neighbours.csv`.",
    )
    rows = []
    for s in shown:
        rep.section(s.title, s.note, level=3)
        texts = item_kind(s.items) == "text"
        if texts:
            rep.text(s.result.to_markdown(list(s.items), width=60))
        else:
            name = f"neighbours/{re.sub(r'[^a-z0-9]+', '_', s.title.lower()).strip('_')}.png"
            draw(
                s.result,
                s.items,
                rep.path(name),
                captions=s.captions,
                query_items=s.query_items,
                query_captions=s.query_captions,
            )
            rep.figure(name, f"{s.title}: the query, then its top {SHOWN_K} per geometry")
        rows += [
            {"study": s.title, **r}
            for r in s.result.to_rows(
                list(s.items),
                query_texts=None if s.query_items is None else list(s.query_items),
                name="text" if texts else "path",
            )
        ]
    columns = list(dict.fromkeys(k for r in rows for k in r))  # texts' and images' columns
    write_rows(rep.path("neighbours.csv"), [{k: r.get(k, "") for k in columns} for r in rows])
