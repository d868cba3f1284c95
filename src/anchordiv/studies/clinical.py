"""Clinical retrieval (the paper's Table 2, in kind, on text).

Construction: the Open-i chest X-ray reports are both queries and gallery; a report is relevant
to a query for finding *f* when both carry the MeSH label *f*.  For each finding, the queries
are the (seeded subsample of) gallery reports labelled *f* — each removed from its own
ranking — and the scorers are anchor models fitted to the pathology-specific anchors of *f*
(HPO / ICD-10-CM descriptions and report-style phrases, ``data.clinical.pathology_anchors``),
against cosine and inversion (inversion with the same anchors).  Intervals come from a
two-level bootstrap over queries and over ``n_subsets`` random anchor subsets
(``subset_fraction`` of the anchors each), so they show how much the result depends on which
anchors one happens to have.

Text-to-text retrieval has no modality gap, and reports are full of negated mentions ("no
pleural effusion"): :func:`negated_mentions` measures how often a report *without* the label
still names the finding, which is what makes cosine (and any embedding geometry) confuse them.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Mapping, Sequence

import numpy as np
from tqdm.auto import tqdm

from ..errors import AnchorDivError, as_matrix
from ..evaluate import evaluate
from ._common import MINILM_TAU, anchor_subsets, check_labels, fit_kinds, subsample, summarise

KINDS = ("gaussian", "latent-gaussian", "softmax")


@dataclasses.dataclass
class ClinicalResult:
    """``rows``: one per finding × scorer (tidy); ``per_query[finding][scorer]`` is ``[S][Q]``."""

    rows: list[dict]
    per_query: dict[str, dict[str, list[np.ndarray]]]


def negated_mentions(texts: Sequence[str], has_label: np.ndarray, term: str) -> float:
    """Fraction of the reports *without* the label whose text still contains ``term``
    (case-insensitive, word boundary) — mostly negations such as "no pleural effusion"."""
    neg = [t for t, h in zip(texts, has_label) if not h]
    if not neg:
        return float("nan")
    pattern = re.compile(rf"\b{re.escape(term.lower())}", re.IGNORECASE)
    return float(np.mean([bool(pattern.search(t)) for t in neg]))


def key_term(finding: str) -> str:
    """The word a report uses for a finding: the last word of its name ("Pleural Effusion" →
    "effusion"), for the negated-mention diagnostic."""
    return finding.split()[-1].lower()


def _finding_rows(name, per_query, prevalence, n_queries, n_anchors, extra):
    rows = summarise(per_query)
    return [{"finding": name, **r, "prevalence": prevalence, "n_queries": n_queries,
             "n_anchors": n_anchors, **extra} for r in rows]


def _run_finding(anchors, gallery, relevance, q_rows, subsets, kinds, tau, options, seed):
    per_query: dict[str, list[np.ndarray]] = {}
    prevalence = None
    for rows in subsets:
        models = fit_kinds(kinds, anchors[rows], tau, options)
        ev = evaluate(models, gallery[q_rows], gallery, relevance, anchors=anchors[rows],
                      query_index=q_rows, seed=seed, progress=False)
        for name, ap in ev.per_query.items():
            per_query.setdefault(name, []).append(ap)
        prevalence = float(ev.prevalence[ev.valid].mean())
    return per_query, prevalence


def clinical_study(reports, labels, label_names: Sequence[str], anchors: Mapping[str, object],
                   *, texts: Sequence[str] | None = None, tau: float = MINILM_TAU,
                   kinds: Sequence[str] = KINDS, options: dict | None = None,
                   n_subsets: int = 5, subset_fraction: float = 0.8,
                   max_gallery: int | None = None, max_queries: int | None = 200,
                   min_queries: int = 5, seed: int = 0, progress: bool = True) -> ClinicalResult:
    """Per-finding retrieval AUPRC of anchor models fitted to pathology anchors vs baselines.

    ``reports [n, d]`` report embeddings; ``labels [n, L]`` binary MeSH labels named by
    ``label_names``; ``anchors``: ``{finding: [m, d]}`` pathology anchor embeddings (findings
    not among ``label_names`` are an error); ``texts``: the report texts (for the
    negated-mention column); ``max_gallery`` / ``max_queries``: seeded subsamples;
    findings with fewer than ``min_queries`` labelled gallery reports are skipped.
    """
    x = as_matrix("reports", reports)
    lab = check_labels("labels", labels, len(x)).astype(bool)
    names = list(label_names)
    if lab.ndim != 2 or lab.shape[1] != len(names):
        raise AnchorDivError(f"labels: expected [n, {len(names)}] (one column per label name), "
                             f"got {list(lab.shape)}")
    unknown = [f for f in anchors if f not in names]
    if unknown:
        raise AnchorDivError(f"anchors: finding(s) {unknown} are not among label_names {names}")
    g_rows = subsample(len(x), max_gallery, seed)
    gallery, g_lab = x[g_rows], lab[g_rows]
    g_texts = [texts[i] for i in g_rows] if texts is not None else None
    rows, per_query = [], {}
    for finding in tqdm(list(anchors), desc="clinical findings", disable=not progress):
        j = names.index(finding)
        positives = np.nonzero(g_lab[:, j])[0]
        if len(positives) < min_queries:
            continue
        q_rows = positives[subsample(len(positives), max_queries, seed + 1)]
        a = as_matrix(f"anchors[{finding!r}]", anchors[finding], dim=x.shape[1], min_rows=2)
        relevance = np.broadcast_to(g_lab[:, j], (len(q_rows), len(g_lab)))  # queries carry f
        subsets = anchor_subsets(len(a), subset_fraction, n_subsets, seed + 2)
        pq, prev = _run_finding(a, gallery, relevance, q_rows, subsets, kinds, tau, options, seed)
        extra = {} if g_texts is None else {
            "negated_mentions": negated_mentions(g_texts, g_lab[:, j], key_term(finding))}
        rows += _finding_rows(finding, pq, prev, len(q_rows), len(a), extra)
        per_query[finding] = pq
    if not rows:
        raise AnchorDivError(f"clinical_study: no finding has {min_queries} or more labelled "
                             f"reports in the gallery")
    return ClinicalResult(rows, per_query)
