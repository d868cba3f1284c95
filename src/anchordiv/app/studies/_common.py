"""Helpers shared by the studies: deterministic subsampling, anchor subsets, model fitting,
summaries over anchor subsets, retrieval setups (with or without a query/gallery split), and
an encoder's text tower as ``embed(texts)``."""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ...anchors import fit
from ...errors import AnchorDivError, as_matrix, in_unit_interval, integer
from ...evaluation.evaluate import bootstrap_interval

#: ``embed(texts) -> [n, d]`` unit-norm embeddings; the studies never care which encoder.
Embed = Callable[[Sequence[str]], np.ndarray]

#: all-MiniLM-L6-v2 was trained with logit scale 20 (MATH.md "Notation").
MINILM_TAU = 20.0


def text_embed(encoder) -> Embed:
    """``embed(texts)``: an :class:`~anchordiv.data.Encoder`'s text tower through the
    embedding cache."""
    from ...data.encoders import embed_texts

    return lambda texts: embed_texts(encoder, list(texts))


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
    the gallery is the rest (disjoint, ``query_index`` None) — a dataset's query/gallery split.
    """
    x = as_matrix("items", items)
    lab = check_labels("labels", labels, len(x))
    if query_mask is not None:
        check_labels("query_mask", query_mask, len(x))
    if query_mask is None:
        q = subsample(len(x), max_queries, seed)
        return {
            "queries": x[q],
            "gallery": x,
            "query_index": q,
            "relevance": lab[q, None] == lab[None, :],
        }
    q, gallery = split_rows(query_mask, max_queries, seed)
    return {
        "queries": x[q],
        "gallery": x[gallery],
        "query_index": None,
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
