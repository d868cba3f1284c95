"""What each geometry retrieves: the top-k gallery items of a few queries under every scorer of
:func:`anchordiv.evaluate` (:func:`neighbours`; :class:`Neighbours` renders markdown tables,
:func:`anchordiv.plots.neighbours` thumbnail grids).  An anchor model's neighbours are
:func:`anchordiv.top_k`'s; a query that is a gallery item is left out of its own neighbours.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np

from ..anchors.base import AnchorModel
from ..errors import AnchorDivError, as_matrix, integer
from ..retrieval.divergence import top_k
from .evaluate import BASELINES, named_scorers, prepare_scorer, shared_label_relevance


@dataclasses.dataclass(frozen=True, eq=False)
class Neighbours:
    """The k nearest gallery items of each query under each geometry (from :func:`neighbours`).

    Parameters
    ----------
    names : list of str
        The geometries, in order.
    queries : numpy.ndarray of int, shape [Q]
        Gallery row of each query, or −1 for a query from outside the gallery.
    indices : dict of str to numpy.ndarray of int, shape [Q, k]
        Gallery rows per geometry, closest first.
    scores : dict of str to numpy.ndarray, shape [Q, k]
        Their scores, higher = closer (an anchor model's are ``−D(query → item)``).
    relevant : dict of str to numpy.ndarray of bool, shape [Q, k], optional
        Whether each neighbour shares a label with its query (None without labels).
    """

    names: list[str]
    queries: np.ndarray
    indices: dict[str, np.ndarray]
    scores: dict[str, np.ndarray]
    relevant: dict[str, np.ndarray] | None = None

    @property
    def k(self) -> int:
        """Neighbours per query."""
        return int(self.indices[self.names[0]].shape[1])

    def precision(self) -> dict[str, float]:
        """Share of relevant neighbours per geometry (empty without labels)."""
        if self.relevant is None:
            return {}
        return {n: float(np.mean(self.relevant[n])) for n in self.names}

    def __repr__(self) -> str:
        head = (
            f"Neighbours({len(self.queries)} queries × top-{self.k} under {', '.join(self.names)}"
        )
        prec = self.precision()
        if prec:
            head += "; relevant " + ", ".join(f"{n} {p:.2f}" for n, p in prec.items())
        return head + ")"

    def to_rows(
        self,
        texts: Sequence | None = None,
        *,
        query_texts: Sequence | None = None,
        name: str = "text",
    ) -> list[dict]:
        """Tidy rows, one per (query, geometry, rank).

        Parameters
        ----------
        texts : sequence, optional, length G
            One item per gallery row, added as the column ``name`` for each neighbour and as
            ``query_<name>`` for the query: texts, or the image files of an image gallery
            (``name="path"``).
        query_texts : sequence, optional, length Q
            The queries' items (needed for queries from outside the gallery; default: their
            gallery rows' items).
        name : str, default "text"
            The column name of the items.

        Returns
        -------
        list of dict
            ``Q · len(names) · k`` rows, ordered by query, then geometry (in ``names`` order),
            then rank.  The keys:

            - ``query`` (int): the query's position, 0 … Q − 1;
            - ``query_row`` (int): its gallery row, or −1 for a query from outside the gallery;
            - ``geometry`` (str): the scorer's name (``"cosine"``, ``"inversion"``, a model's);
            - ``rank`` (int): 1 for the closest neighbour, up to k;
            - ``item`` (int): the neighbour's gallery row;
            - ``score`` (float): higher = closer (an anchor model's is −D(query → item));
            - ``relevant`` (bool, only with labels): the neighbour shares a label with the query;
            - ``<name>`` and ``query_<name>`` (str, only with ``texts``): the neighbour's item
              and the query's (``""`` for a query from outside the gallery without
              ``query_texts``).

        Raises
        ------
        AnchorDivError
            ``query_texts`` not of length Q.
        """
        if query_texts is not None and len(query_texts) != len(self.queries):
            raise AnchorDivError(
                f"query_texts: expected {len(self.queries)} items, got {len(query_texts)}"
            )
        rows = []
        for qi, row in enumerate(self.queries):
            for geometry in self.names:
                for r in range(self.k):
                    item = int(self.indices[geometry][qi, r])
                    out = {
                        "query": qi,
                        "query_row": int(row),
                        "geometry": geometry,
                        "rank": r + 1,
                        "item": item,
                        "score": float(self.scores[geometry][qi, r]),
                    }
                    if self.relevant is not None:
                        out["relevant"] = bool(self.relevant[geometry][qi, r])
                    if texts is not None:
                        if query_texts is not None:
                            out[f"query_{name}"] = str(query_texts[qi])
                        else:
                            out[f"query_{name}"] = str(texts[row]) if row >= 0 else ""
                        out[name] = str(texts[item])
                    rows.append(out)
        return rows

    def to_markdown(
        self, texts: Sequence[str], *, query_texts: Sequence[str] | None = None, width: int = 70
    ) -> str:
        """One markdown table per query: a row per rank, a column per geometry.

        Relevant neighbours are marked ✓ and others ✗ when labels were given.

        Parameters
        ----------
        texts : sequence of str, length G
            The gallery's texts.
        query_texts : sequence of str, optional, length Q
            The queries' texts (default: their gallery texts; needed for outside queries).
        width : int, default 70
            Characters kept of each text (longer ones end in "…").

        Returns
        -------
        str
            The tables, each after a line naming its query.

        Raises
        ------
        AnchorDivError
            ``texts`` shorter than the gallery rows referenced, or an outside query without
            ``query_texts``."""
        width = integer("width", width, low=8)
        top = max(int(self.indices[n].max()) for n in self.names)
        if len(texts) <= max(top, int(self.queries.max())):
            raise AnchorDivError(
                f"texts: {len(texts)} texts, but the neighbours reference gallery row {top}"
            )
        if query_texts is not None and len(query_texts) != len(self.queries):
            raise AnchorDivError(
                f"query_texts: expected {len(self.queries)} texts, got {len(query_texts)}"
            )
        if query_texts is None and (self.queries < 0).any():
            raise AnchorDivError("query_texts: queries from outside the gallery need their texts")
        blocks = []
        for qi, row in enumerate(self.queries):
            q = query_texts[qi] if query_texts is not None else texts[row]
            where = f" (gallery row {row})" if row >= 0 else ""
            lines = [
                f"**Query {qi + 1}**{where}: {_cell(q, 4 * width)}",
                "",
                "| rank | " + " | ".join(_cell(n, width) for n in self.names) + " |",
                "|---|" + "---|" * len(self.names),
            ]
            for r in range(self.k):
                cells = [_cell(texts[int(self.indices[n][qi, r])], width) for n in self.names]
                if self.relevant is not None:
                    marks = ("✓ " if self.relevant[n][qi, r] else "✗ " for n in self.names)
                    cells = [m + c for m, c in zip(marks, cells)]
                lines.append(f"| {r + 1} | " + " | ".join(cells) + " |")
            blocks.append("\n".join(lines))
        return "\n\n".join(blocks)


def _cell(text, width: int) -> str:
    """A table cell: one line, at most ``width`` characters, pipes escaped."""
    s = " ".join(str(text).split())
    if len(s) > width:
        s = s[: width - 1].rstrip() + "…"
    return s.replace("|", "\\|")


def _check_queries(queries, n_gallery: int, dim: int, seed: int):
    """``(query rows [Q] or None, query embeddings [Q, d] or None)``."""
    if isinstance(queries, (int, np.integer)) and not isinstance(queries, bool):
        n = integer("queries", queries, low=1, high=n_gallery)
        rows = np.sort(np.random.default_rng(seed).choice(n_gallery, n, replace=False))
        return rows.astype(np.int64), None
    q = np.asarray(queries)
    if q.ndim == 1 and np.issubdtype(q.dtype, np.integer):
        if len(q) == 0 or q.min() < 0 or q.max() >= n_gallery:
            raise AnchorDivError(
                f"queries: expected gallery rows in [0, {n_gallery}), got {q.tolist()[:8]}"
            )
        return q.astype(np.int64), None
    if q.ndim == 2:
        return None, as_matrix("queries", q, dim=dim)
    raise AnchorDivError(
        "queries: expected a number of seeded gallery rows, gallery rows [Q] (int), or "
        f"query embeddings [Q, d], got {q.dtype} {list(q.shape)}"
    )


def _best(name: str, scores, rows: np.ndarray | None, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k highest scores of each row (its own gallery row excluded), ties in gallery order."""
    s = np.array(scores, np.float64)
    if not np.all(np.isfinite(s)):
        raise AnchorDivError(f"scorers[{name!r}]: produced NaN or inf scores")
    if rows is not None:
        s[np.arange(len(s)), rows] = -np.inf
    idx = np.argsort(-s, axis=1, kind="stable")[:, :k]
    return idx.astype(np.int64), np.take_along_axis(s, idx, axis=1)


def _model_best(model, x, gallery, rows, k: int, method: str):
    """:func:`top_k` of ``model`` with the query's own row left out (one extra neighbour)."""
    extra = 0 if rows is None else 1
    idx, d = top_k(model, x, gallery, min(k + extra, len(gallery)), method=method, progress=False)
    if rows is None:
        return idx, -d
    keep = idx != rows[:, None]
    out_i = np.array([i[m][:k] for i, m in zip(idx, keep)], np.int64)
    return out_i, np.array([-e[m][:k] for e, m in zip(d, keep)], np.float64)


def neighbours(
    scorers,
    gallery,
    queries=3,
    *,
    anchors=None,
    labels=None,
    query_labels=None,
    k: int = 5,
    baselines: Sequence[str] = BASELINES,
    seed: int = 0,
    method: str = "auto",
) -> Neighbours:
    """The top-k gallery items of a few queries under cosine, inversion and each anchor model.

    Parameters
    ----------
    scorers : dict of str to scorer, or AnchorModel
        ``{name: scorer}`` as in :func:`anchordiv.evaluate`: an anchor model (ranked by
        :func:`anchordiv.top_k`), ``"cosine"``/``"inversion"``, a score array ``[Q, G]`` or a
        callable ``f(queries [Q, d], gallery [G, d]) -> scores [Q, G]`` (higher = closer).
    gallery : array_like, shape [G, d]
        Gallery embeddings.
    queries : int, or array_like of int, shape [Q], or array_like, shape [Q, d], default 3
        A number of gallery rows drawn with ``seed``; given gallery rows; or query embeddings
        from outside the gallery.  A query that is a gallery row is left out of its own
        neighbours.
    anchors : array_like, shape [n, d], optional
        The task's anchors (the inversion baseline needs them; without them it is left out of
        the baselines).
    labels : array_like, shape [G] or [G, L], optional
        Gallery labels (classes, or a binary indicator matrix): a neighbour is relevant when it
        shares a label with its query.
    query_labels : array_like, shape [Q] or [Q, L], optional
        The queries' labels (default: their gallery rows' labels; needed for outside queries).
    k : int, default 5
        Neighbours per query.
    baselines : sequence of str, default ("cosine", "inversion")
        Added under their own names after the scorers.
    seed : int, default 0
        Seed of the drawn queries.
    method : {"auto", "generic", "direct"}, default "auto"
        Divergence path of anchor models.

    Returns
    -------
    Neighbours
        ``names``, ``queries`` [Q], ``indices`` and ``scores`` [Q, k] per geometry, and
        ``relevant`` [Q, k] per geometry when labels are given.

    Raises
    ------
    AnchorDivError
        Mismatched shapes, ``k`` outside [1, G − 1] (G for outside queries), query rows outside
        the gallery, an unknown scorer, or labels for outside queries without ``query_labels``.

    Examples
    --------
    >>> from anchordiv.evaluation import neighbours
    >>> rng = np.random.default_rng(0)
    >>> labels = np.repeat([0, 1, 2], 4)
    >>> gallery = np.eye(3)[labels] + 0.3 * rng.normal(size=(12, 3))
    >>> gallery /= np.linalg.norm(gallery, axis=1, keepdims=True)
    >>> model = ad.fit("gaussian", gallery[:4], tau=20.0)
    >>> nb = neighbours({"gaussian": model}, gallery, [0, 5], anchors=gallery[:4],
    ...                 labels=labels, k=2)
    >>> nb.names, nb.indices["gaussian"].tolist()
    (['gaussian', 'cosine', 'inversion'], [[1, 3], [6, 4]])
    >>> nb.precision()["inversion"]
    0.5
    """
    named = named_scorers(
        scorers, baselines, "rank with", ("inversion",) if anchors is None else ()
    )
    y = as_matrix("gallery", gallery)
    rows, outside = _check_queries(queries, len(y), y.shape[1], seed)
    x = y[rows] if outside is None else outside
    k = integer("k", k, low=1, high=len(y) - (rows is not None))
    indices, scores = {}, {}
    for name, scorer in named.items():
        if isinstance(scorer, AnchorModel):
            indices[name], scores[name] = _model_best(scorer, x, y, rows, k, method)
        else:
            fn = prepare_scorer(name, scorer, y, anchors, len(x), method)
            indices[name], scores[name] = _best(name, np.asarray(fn(x, np.arange(len(x)))), rows, k)
    relevant = None
    if labels is not None:
        lab = np.asarray(labels)
        if lab.shape[0] != len(y):
            raise AnchorDivError(f"labels: expected {len(y)} rows (one per gallery item)")
        if query_labels is None:
            if rows is None:
                raise AnchorDivError(
                    "query_labels: queries from outside the gallery need their labels"
                )
            qlab = lab[rows]
        else:
            qlab = np.asarray(query_labels)
            if qlab.shape[0] != len(x):
                raise AnchorDivError(f"query_labels: expected {len(x)} rows (one per query)")
        relevant = {
            n: np.stack(
                [shared_label_relevance(qlab[i : i + 1], lab[idx[i]])[0] for i in range(len(x))]
            )
            for n, idx in indices.items()
        }
    query_rows = np.full(len(x), -1, np.int64) if rows is None else rows
    return Neighbours(list(named), query_rows, indices, scores, relevant)
