"""Broad-anchor texts from real vocabularies, selected by region, with leak-proof exclusions.

A :class:`Source` names a vocabulary (``"wordnet"``, ``"hpo"``, ``"icd10"``, ``"imagenet"``,
``"text"``, ``"openi"``) and a region of it (``roots``, minus the ``exclude`` items *and their
subtrees*; no roots: the whole vocabulary).  :func:`entries` lists a source's ``(id, text)``
pool in the vocabulary's own order; :func:`select` concatenates several pools and draws a
seeded subsample.  The sources: ``docs/guides/broad-priors.md``."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import NamedTuple, Sequence

import numpy as np

from ..errors import AnchorDivError
from .wordnet import subsample

KINDS = ("wordnet", "hpo", "icd10", "imagenet", "text", "openi")


class Entry(NamedTuple):
    """One candidate broad anchor: the vocabulary id it comes from and its text.

    Parameters
    ----------
    id : str
        The vocabulary id (a synset name, HPO id, ICD code, line, report sentence id).
    text : str
        The anchor text.
    """

    id: str
    text: str


@dataclasses.dataclass(frozen=True)
class Source:
    """A vocabulary region for broad anchors.

    Parameters
    ----------
    kind : {"wordnet", "hpo", "icd10", "imagenet", "text", "openi"}
        The vocabulary (:data:`KINDS`).
    roots : tuple of str, default ()
        Synset names or wnids, HPO ids, ICD-10-CM items, text files, Open-i report uids; empty
        = the whole vocabulary (except for ``text``).
    exclude : tuple of str, default ()
        Removed with their subtrees; for ``text``: exact lines; for ``openi``: chest findings
        and report uids.
    """

    kind: str
    roots: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    def __post_init__(self):
        if self.kind not in KINDS:
            raise AnchorDivError(
                f"source kind: unknown {self.kind!r}; choose from {', '.join(KINDS)}"
            )
        for name in ("roots", "exclude"):
            value = getattr(self, name)
            if isinstance(value, str):
                raise AnchorDivError(
                    f"source {name}: expected a list of names, got the single string {value!r}"
                )
            object.__setattr__(self, name, tuple(str(v) for v in value))
        if self.kind == "text" and not self.roots:
            raise AnchorDivError("source 'text': name at least one text file in roots")

    def describe(self) -> dict:
        """JSON-able ``{kind, roots, exclude}`` (inverse: ``Source(**d)``)."""
        return {"kind": self.kind, "roots": list(self.roots), "exclude": list(self.exclude)}


def _wordnet_entries(src: Source) -> list[Entry]:
    from . import wordnet

    pool = set().union(*([wordnet.subtree(r) for r in src.roots] or [wordnet.noun_synsets()]))
    dropped = set().union(*(wordnet.subtree(e) for e in src.exclude))
    keep = sorted(pool - dropped, key=lambda s: s.offset())
    return [Entry(s.name(), wordnet.gloss(s)) for s in keep]


def _hpo_entries(src: Source) -> list[Entry]:
    from . import clinical

    def ids(roots):
        return {t.id for r in roots for t in clinical.hpo_subtree(r)}

    pool = ids(src.roots) if src.roots else {t.id for t in clinical.hpo_terms()}
    pool -= ids(src.exclude)
    return [Entry(t.id, t.text()) for t in clinical.hpo_terms() if t.id in pool]


def _icd10_entries(src: Source) -> list[Entry]:
    from . import clinical

    items = (
        list(dict.fromkeys(i for r in src.roots for i in clinical.icd10_subtree(r)))
        if src.roots
        else clinical.icd10_descriptions()
    )
    dropped = {c for e in src.exclude for c, _ in clinical.icd10_subtree(e)}
    return [Entry(c, d) for c, d in items if c not in dropped]


def _imagenet_entries(src: Source) -> list[Entry]:
    from . import imagenet

    keep = set(src.roots) if src.roots else None
    return [
        Entry(w, name)
        for w, name in imagenet.classes()
        if (keep is None or w in keep) and w not in set(src.exclude)
    ]


def _text_entries(src: Source) -> list[Entry]:
    out, dropped = [], set(src.exclude)
    for path in src.roots:
        p = Path(path)
        if not p.is_file():
            raise AnchorDivError(f"source 'text': no such file: {path}")
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip() and line.strip() not in dropped:
                out.append(Entry(f"{p.name}:{i}", line.strip()))
    return out


def _openi_entries(src: Source) -> list[Entry]:
    from . import clinical, openi

    reports = openi.load_reports()
    findings = [e for e in src.exclude if e.lower().strip() in clinical.FINDINGS]
    held = set(src.exclude) - set(findings)
    if src.roots:
        held |= set(reports.uids) - set(openi.check_uids(reports, src.roots, "roots"))
    return [Entry(i, t) for i, t in openi.report_corpus(reports, held, findings)]


_ENTRIES = {
    "wordnet": _wordnet_entries,
    "hpo": _hpo_entries,
    "icd10": _icd10_entries,
    "imagenet": _imagenet_entries,
    "text": _text_entries,
    "openi": _openi_entries,
}


def entries(src: Source) -> list[Entry]:
    """The ``(id, text)`` pool of one source, in its vocabulary's order (module docstring).

    Parameters
    ----------
    src : Source
        The source.

    Returns
    -------
    list of Entry
        The pool.

    Raises
    ------
    AnchorDivError
        An empty pool (the error names the source).
    """
    out = _ENTRIES[src.kind](src)
    if not out:
        raise AnchorDivError(
            f"source {src.describe()}: no anchors left (roots empty or all excluded)"
        )
    return out


class Selection(NamedTuple):
    """Result of :func:`select`.

    Parameters
    ----------
    entries : list of Entry
        The chosen entries.
    pool : list of int
        Each source's pool size.
    drawn : list of int
        How many entries were drawn from each source.
    """

    entries: list[Entry]
    pool: list[int]
    drawn: list[int]


def select(sources: Sequence[Source], n: int | None = None, seed: int = 0) -> Selection:
    """The sources' pools concatenated in order and subsampled to ``n`` by ``seed``.

    All entries when ``n`` is None or >= the pool; order kept.

    Parameters
    ----------
    sources : sequence of Source
        The sources.
    n : int, optional
        Subsample size.
    seed : int, default 0
        Subsample seed.

    Returns
    -------
    Selection
        The entries and per-source counts.
    """
    if not sources:
        raise AnchorDivError("sources: name at least one vocabulary source")
    pools = [entries(s) for s in sources]
    owner = [i for i, p in enumerate(pools) for _ in p]
    idx = subsample(list(range(len(owner))), n, seed)
    flat = [e for p in pools for e in p]
    drawn = np.bincount([owner[i] for i in idx], minlength=len(pools))
    return Selection([flat[i] for i in idx], [len(p) for p in pools], drawn.tolist())
