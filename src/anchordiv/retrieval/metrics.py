"""Retrieval metrics: AUPRC as the step-wise average precision (docs/mathematics.md, "Evaluation")."""

from __future__ import annotations

import numpy as np

from ..errors import AnchorDivError

#: The one default interval level of the library (evaluation, curves, posterior uncertainty).
LEVEL = 0.95


def auprc(relevance, scores, *, no_positive: str = "raise") -> np.ndarray | float:
    """Average precision Σ_n (R_n − R_{n−1}) P_n, exactly as scikit-learn's ``average_precision_score``.

    Tied scores form a single threshold.  Higher scores rank first — pass ``-divergence``.

    Parameters
    ----------
    relevance : array_like of bool or {0, 1}, shape [G] or [Q, G]
        Which items are relevant (one AP per row).
    scores : array_like, same shape as ``relevance``
        Ranking scores, higher first.
    no_positive : {"raise", "nan"}, default "raise"
        A row without relevant items has no defined AP: raise, or return NaN for that row.

    Returns
    -------
    float or numpy.ndarray, shape [Q]
        A float for 1-D input, else one AP per row.

    Raises
    ------
    AnchorDivError
        Shapes that differ, non-binary relevance, non-finite scores, or a row without relevant
        items under ``no_positive="raise"``.

    Examples
    --------
    >>> ad.auprc(np.array([1, 0, 1, 0]), np.array([0.9, 0.8, 0.3, 0.1]))
    0.8333...
    """
    rel = np.asarray(relevance)
    s = np.asarray(scores, dtype=np.float64)
    if rel.shape != s.shape or rel.ndim not in (1, 2):
        raise AnchorDivError(
            f"auprc: relevance {list(rel.shape)} and scores {list(s.shape)} must have the same "
            f"shape [G] or [Q, G]"
        )
    if rel.size == 0:
        raise AnchorDivError("auprc: empty input")
    if not np.all(np.isfinite(s)):
        raise AnchorDivError("auprc: scores contain NaN or inf")
    if not np.all((rel == 0) | (rel == 1)):
        raise AnchorDivError("auprc: relevance must be binary (0/1 or bool)")
    if no_positive not in ("raise", "nan"):
        raise AnchorDivError(f"no_positive: 'raise' or 'nan', got {no_positive!r}")
    squeeze = rel.ndim == 1
    rel2, s2 = np.atleast_2d(rel).astype(bool), np.atleast_2d(s)
    n_pos = rel2.sum(axis=1)
    if no_positive == "raise" and np.any(n_pos == 0):
        raise AnchorDivError(
            f"auprc: {int(np.sum(n_pos == 0))} row(s) have no relevant item, where average "
            f"precision is undefined (pass no_positive='nan' to get NaN for them)"
        )
    ap = np.array([_average_precision(r, row) for r, row in zip(rel2, s2)])
    return float(ap[0]) if squeeze else ap


def _average_precision(rel: np.ndarray, scores: np.ndarray) -> float:
    """AP of one row (``rel [G]`` bool, ``scores [G]`` finite): every relevant item p adds
    ``TP(≥ s_p) / N(≥ s_p)`` / P — the precision at its score's threshold, so tied scores
    form one threshold exactly as in scikit-learn — counted by binary search in the sorted
    scores: two sorts of values (no argsort), O(G log G).  NaN without relevant items."""
    pos = np.sort(scores[rel])
    if len(pos) == 0:
        return np.nan
    n_ge = len(scores) - np.searchsorted(np.sort(scores), pos, side="left")
    tp_ge = len(pos) - np.searchsorted(pos, pos, side="left")
    return float((tp_ge / n_ge).mean())


def prevalence(relevance) -> np.ndarray | float:
    """Fraction of relevant items per row: the expected AUPRC of a random ranking.

    Parameters
    ----------
    relevance : array_like of bool or {0, 1}, shape [G] or [Q, G]
        Which items are relevant.

    Returns
    -------
    float or numpy.ndarray, shape [Q]
        A float for 1-D input, else one value per row.

    Examples
    --------
    >>> from anchordiv.retrieval import prevalence
    >>> prevalence(np.array([1, 0, 0, 1]))
    0.5
    """
    rel = np.asarray(relevance, dtype=np.float64)
    return float(rel.mean()) if rel.ndim == 1 else rel.mean(axis=-1)
