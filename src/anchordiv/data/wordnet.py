"""WordNet 3.0 nouns through nltk: synsets, glosses, lemma names, hypernym paths, subtrees and
broad-anchor builders.  Without nltk's WordNet, Debian's ``wordnet-base`` (or
``$ANCHORDIV_WORDNET_DIR``) is copied into ``<cache>/nltk_data`` (``docs/guides/data.md``)."""

from __future__ import annotations

import functools
import os
import re
import shutil
import warnings
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..errors import AnchorDivError, integer
from .cache import cache_dir

DEBIAN_DIR = "/usr/share/wordnet"
WORDNET_ENV = "ANCHORDIV_WORDNET_DIR"
#: WordNet 3.0's lexicographer files: (name, syntactic category), numbered from 0.
LEXNAMES = (
    [("adj.all", 3), ("adj.pert", 3), ("adv.all", 4)]
    + [
        (f"noun.{n}", 1)
        for n in (
            "Tops act animal artifact attribute body cognition communication event feeling food "
            "group location motive object person phenomenon plant possession process quantity "
            "relation shape state substance time"
        ).split()
    ]
    + [
        (f"verb.{n}", 2)
        for n in (
            "body change cognition communication competition consumption contact creation emotion "
            "motion perception possession social stative weather"
        ).split()
    ]
    + [("adj.ppl", 3)]
)
#: Files nltk's WordNet reader opens (``lexnames`` is generated).
DB_FILES = [
    f"{kind}.{pos}" for kind in ("index", "data") for pos in ("noun", "verb", "adj", "adv")
] + [f"{pos}.exc" for pos in ("noun", "verb", "adj", "adv")]

HOW_TO_GET = (
    "WordNet 3.0 not found. Either install Debian's database "
    "(apt-get install wordnet-base, which the project's Makefile does) or run "
    "python -c \"import nltk; nltk.download('wordnet')\"; a WordNet database elsewhere "
    f"can be named with ${WORDNET_ENV}."
)


def build_nltk_layout(src: str | os.PathLike, dest: str | os.PathLike) -> Path:
    """Copy a WordNet database directory into an nltk data directory.

    The files go to ``dest/corpora/wordnet``, with a ``lexnames`` file.

    Parameters
    ----------
    src : str or PathLike
        A WordNet 3.0 database directory (e.g. Debian's ``/usr/share/wordnet``).
    dest : str or PathLike
        The nltk data directory to create.

    Returns
    -------
    Path
        ``dest``.
    """
    src, dest = Path(src), Path(dest)
    missing = [f for f in DB_FILES if not (src / f).is_file()]
    if missing:
        raise AnchorDivError(f"WordNet directory {src} lacks {', '.join(missing)}. {HOW_TO_GET}")
    target = dest / "corpora" / "wordnet"
    target.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        if f.is_file() and not (target / f.name).is_file():
            shutil.copyfile(f, target / f.name)
    if not (target / "lexnames").is_file():
        tmp = target / f"lexnames.{os.getpid()}.tmp"
        tmp.write_text(
            "".join(f"{i:02d}\t{name}\t{cat}\n" for i, (name, cat) in enumerate(LEXNAMES))
        )
        os.replace(tmp, target / "lexnames")
    return dest


def _debian_source() -> Path | None:
    for d in (os.environ.get(WORDNET_ENV), DEBIAN_DIR):
        if d and (Path(d) / "data.noun").is_file():
            return Path(d)
    return None


@functools.lru_cache(maxsize=1)
def wordnet_root() -> Path:
    """The nltk WordNet corpus directory (``.../corpora/wordnet``): nltk's own if it has one,
    else one built from Debian's database in the cache directory."""
    import nltk

    try:
        return Path(str(nltk.data.find("corpora/wordnet")))
    except LookupError:
        pass
    src = _debian_source()
    if src is None:
        raise AnchorDivError(HOW_TO_GET)
    root = build_nltk_layout(src, cache_dir() / "nltk_data")
    if str(root) not in nltk.data.path:
        nltk.data.path.append(str(root))
    return root / "corpora" / "wordnet"


@functools.lru_cache(maxsize=1)
def wn():
    """nltk's WordNet reader (loading takes seconds; reused for the process)."""
    from nltk.corpus import wordnet
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    root = wordnet_root()
    if not (root / "index.sense").is_file():  # Debian layout
        # without the sense-key mapping to "the" WordNet: it needs index.sense, which
        # wordnet-base does not ship, and only serves the multilingual OMW functions
        class DebianWordNetReader(WordNetCorpusReader):
            def map_wn(self, version="wordnet"):
                return None

        with warnings.catch_warnings():  # "multilingual functions are not available": expected
            warnings.simplefilter("ignore", UserWarning)
            return DebianWordNetReader(str(root), None)

    wordnet.ensure_loaded()
    return wordnet


def synset(ref):
    """A noun synset from a Synset, a name or a wnid.

    Parameters
    ----------
    ref : nltk Synset or str
        A synset, a name (``"dog.n.01"``) or a wnid (``"n02084071"``).

    Returns
    -------
    nltk Synset
        The noun synset.

    Raises
    ------
    AnchorDivError
        No such noun synset.
    """
    if hasattr(ref, "offset"):
        return ref
    ref = str(ref)
    try:
        if len(ref) == 9 and ref[0] == "n" and ref[1:].isdigit():
            return wn().synset_from_pos_and_offset("n", int(ref[1:]))
        return wn().synset(ref)
    except Exception as err:  # nltk raises WordNetError / ValueError / KeyError
        raise AnchorDivError(f"no WordNet synset {ref!r}: {err}") from None


def wnid(s) -> str:
    """The ImageNet-style id of a noun synset: ``"n"`` + 8-digit offset.

    Parameters
    ----------
    s : nltk Synset
        A noun synset.

    Returns
    -------
    str
        E.g. ``"n02084071"`` for ``dog.n.01``.
    """
    return f"n{synset(s).offset():08d}"


class NounRecord(NamedTuple):
    """One line of WordNet's ``data.noun``: the fields the anchor builders need.

    Parameters
    ----------
    offset : int
        The synset's offset.
    lemmas : tuple of str
        Its lemma names, with spaces.
    definition : str
        The gloss without its quoted examples.
    """

    offset: int
    lemmas: tuple[str, ...]
    definition: str

    @property
    def wnid(self) -> str:
        return f"n{self.offset:08d}"


def parse_data_line(line: str) -> NounRecord:
    """A ``data.noun`` line to its record.

    The definition is the gloss without its quoted examples, exactly as nltk's
    ``Synset.definition()``.

    Parameters
    ----------
    line : str
        One data line of ``data.noun``.

    Returns
    -------
    NounRecord
        The record.

    Examples
    --------
    >>> from anchordiv.data.wordnet import parse_data_line
    >>> parse_data_line('02084071 05 n 03 dog 0 domestic_dog 0 Canis_familiaris 0 000 '
    ...                 '| a member of the genus Canis; "the dog barked"')
    NounRecord(offset=2084071, lemmas=('dog', 'domestic dog', 'Canis familiaris'), definition='a member of the genus Canis')
    """
    columns, _, gloss = line.strip().partition("|")
    fields = columns.split()
    words = fields[4 : 4 + 2 * int(fields[3], 16) : 2]
    definition = re.sub(r'["].*?["]', "", gloss).strip().strip("; ")
    return NounRecord(int(fields[0]), tuple(w.replace("_", " ") for w in words), definition)


@functools.lru_cache(maxsize=1)
def _records() -> tuple:
    with open(wordnet_root() / "data.noun", encoding="utf-8") as f:
        return tuple(parse_data_line(line) for line in f if not line.startswith(" "))


def noun_records() -> list[NounRecord]:
    """All 82,115 noun synsets as light records read straight from ``data.noun``.

    In offset order: a second, not nltk's tens of seconds.

    Returns
    -------
    list of NounRecord
        offset, lemma names, definition per synset.
    """
    return list(_records())


@functools.lru_cache(maxsize=1)
def _nouns() -> tuple:
    return tuple(sorted(wn().all_synsets("n"), key=lambda s: s.offset()))


def noun_synsets() -> list:
    """All 82,115 WordNet 3.0 noun synsets, in offset order.

    Returns
    -------
    list of nltk Synset
        The synsets.
    """
    return list(_nouns())


def readable(s) -> str:
    """The first lemma of a synset with spaces (``"hot_dog"`` -> ``"hot dog"``).

    Parameters
    ----------
    s : nltk Synset
        A synset.

    Returns
    -------
    str
        The readable name.
    """
    return synset(s).lemma_names()[0].replace("_", " ")


def lemma_names(s) -> list[str]:
    """All lemma names of a synset, with spaces.

    Parameters
    ----------
    s : nltk Synset
        A synset.

    Returns
    -------
    list of str
        The names.
    """
    return [n.replace("_", " ") for n in synset(s).lemma_names()]


def senses(word: str) -> list[str]:
    """Names of every noun synset with ``word`` among its lemmas, after nltk's morphology.

    ``"graphics"`` also finds ``graphic.n.01``.

    Parameters
    ----------
    word : str
        A word (spaces or underscores).

    Returns
    -------
    list of str
        Synset names; empty if none.
    """
    return [s.name() for s in wn().synsets(str(word).strip().replace(" ", "_"), "n")]


def hypernym_paths(s) -> list[list]:
    """Every path from the root (``entity.n.01``) down to the synset.

    nltk's ``hypernym_paths``, following instance hypernyms too.

    Parameters
    ----------
    s : nltk Synset
        A synset.

    Returns
    -------
    list of list of nltk Synset
        The paths, root first.
    """
    return synset(s).hypernym_paths()


def subtree(root) -> list:
    """``root`` and all its (instance) hyponyms, transitively, in offset order.

    Parameters
    ----------
    root : nltk Synset or str
        A synset, a name or a wnid.

    Returns
    -------
    list of nltk Synset
        The subtree.
    """
    root = synset(root)
    found = set(root.closure(lambda s: s.hyponyms() + s.instance_hyponyms()))
    return sorted(found | {root}, key=lambda s: s.offset())


def gloss(s, with_name: bool = True) -> str:
    """A synset's gloss as anchor text: ``"dog: a member of the genus Canis ..."``.

    Parameters
    ----------
    s : nltk Synset
        A synset.
    with_name : bool, default True
        Prefix the first lemma (``False``: the definition only).

    Returns
    -------
    str
        The text.
    """
    s = synset(s)
    return f"{readable(s)}: {s.definition()}" if with_name else s.definition()


def subsample(items: list, n: int | None, seed: int = 0) -> list:
    """Items chosen uniformly without replacement by ``seed``, kept in their original order.

    Parameters
    ----------
    items : list
        The items.
    n : int or None
        How many (all items when None or >= len).
    seed : int, default 0
        The seed.

    Returns
    -------
    list
        The subsample.

    Examples
    --------
    >>> from anchordiv.data.wordnet import subsample
    >>> picked = subsample(list("abcdef"), 3, seed=0)
    >>> len(picked), picked == sorted(picked), subsample(list("ab"), None)
    (3, True, ['a', 'b'])
    """
    if n is None or n >= len(items):
        return list(items)
    n = integer("n", n, low=1)
    idx = np.sort(np.random.default_rng(seed).choice(len(items), size=n, replace=False))
    return [items[i] for i in idx]


def gloss_records(n: int | None = None, seed: int = 0, root=None) -> list[NounRecord]:
    """The records behind :func:`gloss_anchors` (same order).

    Parameters
    ----------
    n : int, optional
        Subsample size (default all).
    seed : int, default 0
        Subsample seed.
    root : nltk Synset or str, optional
        Restrict to ``root``'s subtree (a synset, ``"dog.n.01"`` or a wnid).

    Returns
    -------
    list of NounRecord
        The records.
    """
    pool = _records()
    if root is not None:
        keep = {s.offset() for s in subtree(root)}
        pool = [r for r in pool if r.offset in keep]
    return subsample(pool, n, seed)


def record_text(r: NounRecord, with_name: bool = True) -> str:
    """``"<first lemma>: <definition>"`` (the same text as :func:`gloss`).

    Parameters
    ----------
    r : NounRecord
        A record.
    with_name : bool, default True
        Prefix the first lemma.

    Returns
    -------
    str
        The text.

    Examples
    --------
    >>> from anchordiv.data.wordnet import NounRecord, record_text
    >>> record_text(NounRecord(1, ("hot dog",), "a frankfurter served on a bun"))
    'hot dog: a frankfurter served on a bun'
    """
    return f"{r.lemmas[0]}: {r.definition}" if with_name else r.definition


def gloss_anchors(
    n: int | None = None, seed: int = 0, root=None, with_name: bool = True
) -> list[str]:
    """Broad anchors: the glosses of all noun synsets (or of ``root``'s subtree).

    Optionally a deterministic subsample of ``n`` of them (same ``seed`` -> same anchors).

    Parameters
    ----------
    n : int, optional
        Subsample size (default all).
    seed : int, default 0
        Subsample seed.
    root : nltk Synset or str, optional
        Restrict to ``root``'s subtree.
    with_name : bool, default True
        ``"<first lemma>: <definition>"``; ``False``: the definition only.

    Returns
    -------
    list of str
        The anchor texts, in offset order.
    """
    return [record_text(r, with_name) for r in gloss_records(n, seed, root)]
