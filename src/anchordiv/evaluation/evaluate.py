"""Retrieval evaluation (docs/mathematics.md, "Evaluation"): per-query AUPRC, its mean with a 95 % interval
(:data:`LEVEL`), and the prevalence beside it.

A *scorer* (higher = closer) is an :class:`~anchordiv.AnchorModel` (``−D``), ``"cosine"`` or
``"inversion"``, an array ``[Q, G]``, or ``f(queries [c, d], gallery [G, d]) -> [c, G]``;
queries stream in chunks.  ``query_index[i]`` (−1: none) removes a query's own gallery row from
its ranking and relevance; a query with no relevant item left is NaN in ``per_query`` and left
out of the means.  Intervals: ``"bootstrap"`` over queries or ``"t"``;
:func:`bootstrap_interval` also resamples a second axis (anchor subsets)."""

from __future__ import annotations

import collections
import csv
import dataclasses
import functools
import hashlib
import json
from pathlib import Path
from typing import Mapping

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats
from ..progress import tqdm

from ..anchors.base import AnchorModel
from ..retrieval.baselines import cosine, inversion
from ..retrieval.divergence import (
    check_embeddings,
    key_terms,
    pad_rows,
    pairwise,
    query_terms,
    row_bucket,
)
from ..errors import AnchorDivError, as_matrix, in_unit_interval, integer
from ..retrieval.metrics import LEVEL, auprc
from ..threads import limited_blas

BASELINES = ("cosine", "inversion")
INTERVALS = ("bootstrap", "t")


# ---- intervals ---------------------------------------------------------------------------


def bootstrap_interval(
    values, *, level: float = LEVEL, n_boot: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """Mean and percentile-bootstrap interval.

    For ``[S, Q]`` (e.g. S anchor subsets × Q queries) rows and columns are resampled
    independently (a two-level bootstrap), so the interval covers both sources of variation.
    Columns with a NaN anywhere are dropped.

    Parameters
    ----------
    values : array_like, shape [Q] or [S, Q]
        The values.
    level : float, default 0.95
        Interval level.
    n_boot : int, default 2000
        Resamples.
    seed : int, default 0
        Seed.

    Returns
    -------
    mean, low, high : float
        The mean and the interval.

    Examples
    --------
    >>> from anchordiv.evaluation import bootstrap_interval
    >>> m, lo, hi = bootstrap_interval(np.array([0.2, 0.4, 0.6, 0.8]), n_boot=500)
    >>> round(m, 3), lo <= m <= hi
    (0.5, True)
    """
    n_boot = integer("n_boot", n_boot, low=1)
    v = np.atleast_2d(np.asarray(values, np.float64))
    v = v[:, np.all(np.isfinite(v), axis=0)]  # the queries finite in every row
    if v.shape[1] == 0:
        return (np.nan, np.nan, np.nan)
    key = (v.shape, hashlib.sha1(np.ascontiguousarray(v).data).hexdigest(), level, n_boot, seed)
    if key not in _BOOTSTRAPS:
        _BOOTSTRAPS[key] = _bootstrap(v, level, n_boot, seed)
        while len(_BOOTSTRAPS) > _BOOTSTRAP_MEMO:
            _BOOTSTRAPS.popitem(last=False)
    return _BOOTSTRAPS[key]


#: intervals remembered (a curve's summary, contrasts and reports ask for a cell's repeatedly)
_BOOTSTRAP_MEMO = 4096
_BOOTSTRAPS: collections.OrderedDict = collections.OrderedDict()


@functools.lru_cache(maxsize=8)
def _resamples(s: int, q: int, n_boot: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The index draws of :func:`_bootstrap` for ``[S, Q]`` values: row counts ``[B, S]`` and
    drawn columns ``[B, Q]`` (the same for every input of that shape and seed, so drawn once:
    a run's intervals share a few shapes)."""
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, s, (n_boot, s))
    cols = rng.integers(0, q, (n_boot, q))
    flat = (np.arange(n_boot)[:, None] * s + rows).ravel()
    counts = np.bincount(flat, minlength=n_boot * s).reshape(n_boot, s)  # [B, S]
    counts.flags.writeable = cols.flags.writeable = False
    return counts, cols


def _bootstrap(v: np.ndarray, level: float, n_boot: int, seed: int) -> tuple[float, float, float]:
    """:func:`bootstrap_interval` of finite ``v [S, Q]``: each resample draws S rows and Q
    columns with replacement (index draws, the same law as multinomial counts, O(B·(S + Q))
    random numbers); its mean is the mean over the drawn columns of the drawn rows' mean."""
    s, q = v.shape
    counts, cols = _resamples(s, q, n_boot, seed)
    row_means = counts @ v / s  # [B, Q]
    boots = np.take_along_axis(row_means, cols, axis=1).mean(1)
    alpha = (1 - level) / 2
    lo, hi = np.quantile(boots, [alpha, 1 - alpha])
    return float(v.mean()), float(lo), float(hi)


def t_interval(values, *, level: float = LEVEL) -> tuple[float, float, float]:
    """Mean and Student-t interval of the finite entries.

    Parameters
    ----------
    values : array_like, shape [Q]
        The values (NaN entries are ignored).
    level : float, default 0.95
        Interval level.

    Returns
    -------
    mean, low, high : float
        The mean and the interval.

    Examples
    --------
    >>> from anchordiv.evaluation import t_interval
    >>> [round(float(x), 3) for x in t_interval(np.array([0.2, 0.4, 0.6, 0.8]))]
    [0.5, 0.089, 0.911]
    """
    v = np.asarray(values, np.float64).ravel()
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return (np.nan, np.nan, np.nan)
    m = float(v.mean())
    if len(v) < 2:
        return (m, np.nan, np.nan)
    half = stats.t.ppf(0.5 + level / 2, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v))
    return m, m - half, m + half


def check_interval(interval: str) -> str:
    if interval not in INTERVALS:
        raise AnchorDivError(
            f"interval: unknown {interval!r}; choose one of {', '.join(INTERVALS)}"
        )
    return interval


def mean_interval(
    values, *, interval: str = "bootstrap", level: float = LEVEL, n_boot: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """Mean and interval by the named method (module docstring).

    Parameters
    ----------
    values : array_like, shape [Q]
        The values.
    interval : {"bootstrap", "t"}, default "bootstrap"
        :func:`bootstrap_interval` or :func:`t_interval`.
    level : float, default 0.95
        Interval level.
    n_boot : int, default 2000
        Bootstrap resamples.
    seed : int, default 0
        Bootstrap seed.

    Returns
    -------
    mean, low, high : float
        The mean and the interval.

    Raises
    ------
    AnchorDivError
        An unknown ``interval``.

    Examples
    --------
    >>> from anchordiv.evaluation import mean_interval
    >>> round(float(mean_interval(np.array([0.2, 0.4, 0.6, 0.8]), interval="t")[1]), 3)
    0.089
    """
    if check_interval(interval) == "t":
        return t_interval(values, level=level)
    return bootstrap_interval(values, level=level, n_boot=n_boot, seed=seed)


# ---- scorers -----------------------------------------------------------------------------


@functools.partial(jax.jit, static_argnames="method")
def _negative_divergence(model, x, v, h, method):
    u, c = query_terms(model, x, method)
    return -pairwise(u, c, v, h)


_key_terms = jax.jit(key_terms, static_argnames="method")


def _model_scorer(model: AnchorModel, gallery: np.ndarray, method: str):
    """``f(x [c, d], rows) -> −D [c, G]`` with the gallery's key terms computed once."""
    y = check_embeddings(model, "gallery", gallery)
    v, h = _key_terms(model, jnp.asarray(y), method)

    def score(x, rows):
        x = check_embeddings(model, "queries", x)
        return _negative_divergence(model, jnp.asarray(x), v, h, method)

    return score


def prepare_scorer(name: str, scorer, gallery, anchors, n_queries: int, method: str):
    """Turn any accepted scorer into ``f(x_chunk [c, d], rows [c]) -> scores [c, G]``."""
    if isinstance(scorer, AnchorModel):
        return _model_scorer(scorer, gallery, method)
    if isinstance(scorer, str):
        if scorer == "cosine":
            return lambda x, rows: cosine(x, gallery)
        if scorer == "inversion":
            if anchors is None:
                raise AnchorDivError(
                    "anchors: the inversion baseline needs the task's anchor "
                    "embeddings [n, d] (or leave 'inversion' out of baselines)"
                )
            a = as_matrix("anchors", anchors, dim=gallery.shape[1])
            return lambda x, rows: inversion(a, x, gallery)
        raise AnchorDivError(
            f"scorers[{name!r}]: unknown baseline {scorer!r}; choose one of {', '.join(BASELINES)}"
        )
    if hasattr(scorer, "shape"):
        if tuple(np.shape(scorer)) != (n_queries, len(gallery)):
            raise AnchorDivError(
                f"scorers[{name!r}]: score matrix has shape {list(np.shape(scorer))}, "
                f"expected [Q, G] = {[n_queries, len(gallery)]}"
            )
        return lambda x, rows: np.asarray(scorer[rows])
    if callable(scorer):
        return lambda x, rows: scorer(x, gallery)
    raise AnchorDivError(
        f"scorers[{name!r}]: expected an anchor model, 'cosine', 'inversion', a "
        f"[Q, G] score array or a callable, got {type(scorer).__name__}"
    )


# ---- self-removal and AUPRC per chunk ----------------------------------------------------


def _groups(self_idx: np.ndarray, n_gallery: int):
    """Row groups of a chunk: ``(positions, keep-mask or None)``; rows sharing a gallery item
    with their query drop that column (so their matrices have G − 1 columns)."""
    has = self_idx >= 0
    out = []
    if has.any():
        keep = np.ones((int(has.sum()), n_gallery), bool)
        keep[np.arange(len(keep)), self_idx[has]] = False
        out.append((np.nonzero(has)[0], keep))
    if (~has).any():
        out.append((np.nonzero(~has)[0], None))
    return out


def _take(mat: np.ndarray, pos: np.ndarray, keep) -> np.ndarray:
    sub = mat[pos]
    return sub if keep is None else sub[keep].reshape(len(pos), -1)


def _chunk_auprc(rel: np.ndarray, scores: np.ndarray, groups, name: str) -> np.ndarray:
    out = np.empty(len(rel))
    for pos, keep in groups:
        s = _take(np.asarray(scores, np.float64), pos, keep)
        if not np.all(np.isfinite(s)):
            raise AnchorDivError(f"scorers[{name!r}]: produced NaN or inf scores")
        out[pos] = auprc(_take(rel, pos, keep), s, no_positive="nan")
    return out


# ---- the evaluation ----------------------------------------------------------------------


@dataclasses.dataclass
class Evaluation:
    """Per-query AUPRC of each scorer and the summary beside the prevalence (from :func:`evaluate`).

    Parameters
    ----------
    per_query : dict of str to numpy.ndarray, shape [Q]
        AUPRC per query (NaN where a query has no relevant item).
    prevalence : numpy.ndarray, shape [Q]
        Relevant fraction of each query's gallery (query removed).
    interval : {"bootstrap", "t"}, default "bootstrap"
        Interval of the means.
    level : float, default 0.95
        Its level.
    n_boot : int, default 2000
        Bootstrap resamples.
    seed : int, default 0
        Bootstrap seed.

    Examples
    --------
    >>> from anchordiv.evaluation import Evaluation
    >>> ev = Evaluation({"a": np.array([0.5, 1.0]), "b": np.array([0.25, 0.5])},
    ...                 np.array([0.25, 0.25]), interval="t")
    >>> ev.summary()[0]["auprc"], ev.difference("a", "b")[0]
    (0.75, 0.375)
    """

    per_query: dict[str, np.ndarray]
    prevalence: np.ndarray
    interval: str = "bootstrap"
    level: float = LEVEL
    n_boot: int = 2000
    seed: int = 0

    @property
    def names(self) -> list[str]:
        return list(self.per_query)

    @property
    def valid(self) -> np.ndarray:
        """``[Q]`` bool: queries with at least one relevant gallery item."""
        return np.isfinite(next(iter(self.per_query.values())))

    def _interval(self, values):
        return mean_interval(
            values, interval=self.interval, level=self.level, n_boot=self.n_boot, seed=self.seed
        )

    def summary(self) -> list[dict]:
        """One row per scorer: mean AUPRC with its interval, prevalence, query counts."""
        prev = float(self.prevalence[self.valid].mean()) if self.valid.any() else np.nan
        return [
            {
                "scorer": name,
                **dict(zip(("auprc", "low", "high"), self._interval(ap))),
                "prevalence": prev,
                "n_queries": int(self.valid.sum()),
                "n_without_relevant": int((~self.valid).sum()),
                "interval": f"{self.interval} {self.level:.0%}",
            }
            for name, ap in self.per_query.items()
        ]

    def difference(self, a: str, b: str) -> tuple[float, float, float]:
        """Paired mean AUPRC difference ``a − b`` over the same queries, with its interval."""
        for n in (a, b):
            if n not in self.per_query:
                raise AnchorDivError(f"difference: unknown scorer {n!r}; have {self.names}")
        return self._interval(self.per_query[a] - self.per_query[b])

    def to_dataframe(self, per_query: bool = False):
        """The summary (one row per scorer) as a ``pandas.DataFrame``; ``per_query=True``:
        the tidy per-query table (``query``, ``prevalence``, one AUPRC column per scorer)."""
        import pandas as pd

        return pd.DataFrame(self._per_query_rows() if per_query else self.summary())

    def __repr__(self) -> str:
        rows = ", ".join(
            f"{r['scorer']}={r['auprc']:.3f} [{r['low']:.3f}, {r['high']:.3f}]"
            for r in self.summary()
        )
        return (
            f"Evaluation({len(self.prevalence)} queries, {self.interval} {self.level:.0%}: {rows})"
        )

    def write_csv(self, path) -> Path:
        """The summary table as CSV."""
        return write_rows(path, self.summary())

    def write_per_query_csv(self, path) -> Path:
        """Tidy per-query table: ``query, prevalence, <one AUPRC column per scorer>``."""
        return write_rows(path, self._per_query_rows())

    def _per_query_rows(self) -> list[dict]:
        return [
            {
                "query": i,
                "prevalence": float(p),
                **{n: float(v[i]) for n, v in self.per_query.items()},
            }
            for i, p in enumerate(self.prevalence)
        ]

    def to_json(self) -> dict:
        out = {"summary": self.summary(), "interval": self.interval, "level": self.level}
        if "cosine" in self.per_query:
            out["difference_vs_cosine"] = {
                n: dict(zip(("mean", "low", "high"), self.difference(n, "cosine")))
                for n in self.names
                if n != "cosine"
            }
        return out


def write_rows(path, rows: list[dict]) -> Path:
    """Write a list of same-keyed dicts as CSV (creating parent folders).

    Parameters
    ----------
    path : str or Path
        Destination.
    rows : list of dict
        The rows (the first row's keys are the header).

    Returns
    -------
    Path
        The path written.
    """
    from .._safeio import atomic_file, flush

    p = Path(path)
    with atomic_file(p) as tmp, tmp.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else [])
        writer.writeheader()
        writer.writerows(rows)
        flush(f)
    return p


def write_json(path, obj) -> Path:
    """Write an object as indented JSON (creating parent folders).

    Parameters
    ----------
    path : str or Path
        Destination.
    obj : object
        JSON-able (other numbers, e.g. numpy scalars, are written as floats).

    Returns
    -------
    Path
        The path written.
    """
    from .._safeio import atomic_file, write_text

    p = Path(path)
    with atomic_file(p) as tmp:
        write_text(tmp, json.dumps(obj, indent=2, default=float) + "\n")
    return p


def _check_query_index(query_index, n_queries: int, n_gallery: int) -> np.ndarray:
    if query_index is None:
        return np.full(n_queries, -1, np.int64)
    qi = np.asarray(query_index)
    if qi.shape != (n_queries,) or not np.issubdtype(qi.dtype, np.integer):
        raise AnchorDivError(
            f"query_index: expected integers of shape [{n_queries}] (one gallery "
            f"row or -1 per query), got {qi.dtype} {list(qi.shape)}"
        )
    if np.any(qi < -1) or np.any(qi >= n_gallery):
        raise AnchorDivError(f"query_index: entries must be -1 or gallery rows in [0, {n_gallery})")
    if np.any(qi >= 0) and n_gallery < 2:
        raise AnchorDivError("gallery: removing the query leaves no gallery item")
    return qi.astype(np.int64)


def check_relevance(relevance, n_queries: int, n_gallery: int):
    """``relevance [Q, G]`` as an array (a memmap stays one, a nested list becomes one), or an
    :class:`AnchorDivError` naming the shape it expected or its first entry that is not 0/1
    (NaN included) — before any scoring, not from ``auprc`` after it."""
    rel = relevance if isinstance(relevance, np.ndarray) else np.asarray(relevance)
    if rel.shape != (n_queries, n_gallery):
        raise AnchorDivError(
            f"relevance: expected shape [Q, G] = [{n_queries}, {n_gallery}], got {list(rel.shape)}"
        )
    if rel.dtype != np.bool_:
        step = max(1, (1 << 20) // max(n_gallery, 1))  # row blocks: a memmap is read once
        for start in range(0, n_queries, step):
            block = np.asarray(rel[start : start + step])
            bad = np.argwhere(~((block == 0) | (block == 1)))
            if len(bad):
                i, j = int(bad[0][0]) + start, int(bad[0][1])
                raise AnchorDivError(
                    f"relevance: must be binary (0/1 or bool); entry [{i}, {j}] is "
                    f"{np.asarray(rel[i, j]).item()!r}"
                )
    return rel


def default_query_chunk(n_gallery: int, budget: int = 1 << 21) -> int:
    """Query rows per chunk so one ``[chunk, G]`` float64 block holds about ``budget`` entries.

    Parameters
    ----------
    n_gallery : int
        G.
    budget : int, default 2**21
        Entries per block.

    Returns
    -------
    int
        Rows per chunk (≥ 1).

    Examples
    --------
    >>> from anchordiv.evaluation.evaluate import default_query_chunk
    >>> default_query_chunk(1000, budget=10_000) >= 1
    True
    """
    return row_bucket(max(1, min(4096, budget // max(n_gallery, 1))))


def named_scorers(scorers, baselines, purpose: str, skip=()) -> dict:
    """``{name: scorer}`` with the ``baselines`` (those in ``skip`` left out) added."""
    if isinstance(scorers, Mapping):
        named = dict(scorers)
    elif isinstance(scorers, AnchorModel):
        named = {scorers.kind: scorers}
    else:
        raise AnchorDivError("scorers: expected a dict name -> scorer or a single anchor model")
    for b in baselines:
        if b not in BASELINES:
            raise AnchorDivError(f"baselines: unknown {b!r}; choose from {', '.join(BASELINES)}")
        if b not in skip:
            named.setdefault(b, b)
    if not named:
        raise AnchorDivError(f"scorers: nothing to {purpose}")
    return named


@limited_blas
def evaluate(
    scorers,
    queries,
    gallery,
    relevance,
    *,
    anchors=None,
    query_index=None,
    baselines=BASELINES,
    interval: str = "bootstrap",
    level: float = LEVEL,
    n_boot: int = 2000,
    seed: int = 0,
    chunk: int | None = None,
    method: str = "auto",
    progress: bool | None = None,
) -> Evaluation:
    """Per-query AUPRC of each scorer (and the baselines) on one retrieval task.

    Parameters
    ----------
    scorers : dict of str to scorer, or AnchorModel
        ``{name: scorer}`` or one anchor model.  A scorer is an anchor model (scores
        ``−D(query → item)``), ``"cosine"``/``"inversion"``, precomputed scores ``[Q, G]``, or a
        callable ``f(queries [c, d], gallery [G, d]) -> scores [c, G]`` (module docstring).
    queries : array_like, shape [Q, d]
        Query embeddings.
    gallery : array_like, shape [G, d]
        Gallery embeddings.
    relevance : array_like of bool, shape [Q, G]
        Binary relevance (may be memory-mapped).
    anchors : array_like, shape [n, d], optional
        The task's anchors, needed by the inversion baseline.
    query_index : array_like of int, shape [Q], optional
        Gallery row of each query or −1; that item is removed from the query's ranking and
        relevance.
    baselines : tuple of str, default ("cosine", "inversion")
        Added under their own names.
    interval : {"bootstrap", "t"}, default "bootstrap"
        Interval of the mean over queries.
    level : float, default 0.95
        Its level.
    n_boot : int, default 2000
        Bootstrap resamples.
    seed : int, default 0
        Bootstrap seed.
    chunk : int, optional
        Query rows per block (only ``[chunk, G]`` scores exist at once).
    method : {"auto", "generic", "direct"}, default "auto"
        Divergence path of anchor-model scorers.
    progress : bool, optional
        Show a progress bar.

    Returns
    -------
    Evaluation
        ``per_query`` AUPRC per scorer, ``prevalence``, ``summary()``, ``difference(a, b)``.

    Raises
    ------
    AnchorDivError
        Mismatched shapes, non-binary relevance, no query with a relevant item, an unknown
        scorer, or inversion without ``anchors``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> gallery = rng.normal(size=(8, 4)) + np.repeat([[2.0, 0, 0, 0], [0, 0, 0, 0]], 4, axis=0)
    >>> gallery /= np.linalg.norm(gallery, axis=1, keepdims=True)
    >>> relevance = np.zeros((4, 8), bool)
    >>> relevance[:, :4] = True
    >>> model = ad.fit("gaussian", gallery[:4], tau=20.0)
    >>> ev = ad.evaluate({"gaussian": model}, gallery[:4], gallery, relevance,
    ...                  anchors=gallery[:4], query_index=np.arange(4), n_boot=200)
    >>> ev.names, ev.per_query["gaussian"].shape
    (['gaussian', 'cosine', 'inversion'], (4,))
    """
    seed = integer("seed", seed, low=0)  # a bad seed named, not numpy's error
    named = named_scorers(scorers, baselines, "evaluate")
    check_interval(interval)
    in_unit_interval("level", level)
    n_boot = integer("n_boot", n_boot, low=1)  # before the scoring, not at the summary
    y = as_matrix("gallery", gallery)
    x = as_matrix("queries", queries, dim=y.shape[1])
    rel = check_relevance(relevance, len(x), len(y))
    qi = _check_query_index(query_index, len(x), len(y))
    chunk = default_query_chunk(len(y)) if chunk is None else integer("chunk", chunk, low=1)
    fns = {n: prepare_scorer(n, s, y, anchors, len(x), method) for n, s in named.items()}
    ap = {n: np.empty(len(x)) for n in named}
    prev = np.empty(len(x))
    starts = range(0, len(x), chunk)
    show = len(starts) > 4 if progress is None else progress
    for start in tqdm(starts, desc="evaluate", unit="chunk", disable=not show):
        rows = np.arange(start, min(start + chunk, len(x)))
        r = np.asarray(rel[rows])
        groups = _groups(qi[rows], len(y))
        for pos, keep in groups:
            prev[rows[pos]] = _take(r, pos, keep).mean(axis=1)
        xc = pad_rows(x[rows], min(chunk, row_bucket(len(x))))
        for n, fn in fns.items():
            s = np.asarray(fn(xc, rows))[: len(rows)]
            ap[n][rows] = _chunk_auprc(r, s, groups, n)
    if not np.any(prev > 0):  # a mean of 0/1 entries: > 0 exactly when one is 1
        raise AnchorDivError(
            f"relevance: none of the {len(x)} queries has a relevant gallery item (a query's "
            f"own gallery row excluded), so every AUPRC is undefined — is it the relevance "
            f"of another gallery, or labels that no two items share?"
        )
    return Evaluation(ap, prev, interval=interval, level=level, n_boot=n_boot, seed=seed)


def check_labels(name: str, labels) -> np.ndarray:
    """Per-item labels as an array: ``[n]`` integer classes or ``[n, L]`` 0/1 indicators.

    Integer and boolean arrays are taken as they are; a floating array is accepted when every
    entry is a whole number (class ids saved as floats, e.g. ``[0., 2., 1.]``) and returned as
    int64; ``[n]`` class names (strings) are kept (items with equal names share a label).  Fractional, NaN or inf entries are an :class:`AnchorDivError` (scores or
    embeddings passed as labels: no two items would share a label and every AUPRC would be
    undefined), as are indicators other than 0/1 and arrays that are not 1-D or 2-D.

    Parameters
    ----------
    name : str
        The argument name used in errors.
    labels : array_like, shape [n] or [n, L]
        The labels.

    Returns
    -------
    numpy.ndarray, shape [n] or [n, L]
        The labels (integer, boolean or, for ``[n]``, strings).

    Examples
    --------
    >>> from anchordiv.evaluation.evaluate import check_labels
    >>> check_labels("labels", np.array([0.0, 2.0, 1.0]))
    array([0, 2, 1])
    """
    a = np.asarray(labels)
    if a.ndim not in (1, 2):
        raise AnchorDivError(
            f"{name}: expected [n] classes or [n, L] 0/1 indicators, got shape {list(a.shape)}"
        )
    if a.dtype.kind == "f":
        whole = np.isfinite(a) & (a == np.round(a))
        if not whole.all():
            at = tuple(int(i) for i in np.argwhere(~whole)[0])
            raise AnchorDivError(
                f"{name}: labels must be whole numbers (integer classes), but entry "
                f"{at[0] if len(at) == 1 else list(at)} is {float(a[at]):g}; scores or embeddings "
                f"given as labels?"
            )
        a = a.astype(np.int64)
    elif not (a.dtype.kind in "iub" or (a.dtype.kind in "US" and a.ndim == 1)):
        raise AnchorDivError(f"{name}: expected integer labels, got dtype {a.dtype}")
    if a.ndim == 2 and a.dtype.kind != "b" and not np.isin(a, (0, 1)).all():
        raise AnchorDivError(
            f"{name}: [n, L] label indicators must be 0/1, got values {np.unique(a)[:5].tolist()}"
        )
    return a


def shared_label_relevance(query_labels, gallery_labels) -> np.ndarray:
    """Relevance: the two items share at least one label.

    Parameters
    ----------
    query_labels : array_like, shape [Q] or [Q, L]
        Integer classes, or a binary multi-label indicator matrix.
    gallery_labels : array_like, shape [G] or [G, L]
        The same for the gallery.

    Returns
    -------
    numpy.ndarray of bool, shape [Q, G]
        The relevance.

    Raises
    ------
    AnchorDivError
        Labels that are not whole numbers (:func:`check_labels`) or shapes that do not pair.

    Examples
    --------
    >>> from anchordiv.evaluation.evaluate import shared_label_relevance
    >>> shared_label_relevance(np.array([0, 1]), np.array([1, 0, 0])).astype(int)
    array([[0, 1, 1],
           [1, 0, 0]])
    """
    a = check_labels("query_labels", query_labels)
    b = check_labels("gallery_labels", gallery_labels)
    if a.ndim == 1 and b.ndim == 1:
        return a[:, None] == b[None, :]
    if a.ndim == 2 and b.ndim == 2 and a.shape[1] == b.shape[1]:
        return (a.astype(np.float32) @ b.astype(np.float32).T) > 0
    raise AnchorDivError(
        f"labels: expected [Q] and [G] classes or [Q, L] and [G, L] indicators, "
        f"got {list(a.shape)} and {list(b.shape)}"
    )
