"""ImageNet class lists as target anchors: the 1,000 ILSVRC-2012 classes (wnid, distinct readable
name), their WordNet synsets, prompt templates, and the ImageNet-R subset with its rendition
styles, from data files in ``anchordiv/resources`` (``docs/guides/data.md``)."""

from __future__ import annotations

import collections
import functools
from importlib import resources

from ..errors import AnchorDivError

#: The 16 rendition styles of ImageNet-R (Hendrycks et al., 2021), in the order the README of
#: github.com/hendrycks/imagenet-r lists them, in singular form.
IMAGENET_R_STYLES = tuple(
    "art, cartoon, deviantart, graffiti, embroidery, graphics, origami, painting, pattern, "
    "plastic object, plush object, sculpture, sketch, tattoo, toy, video game".split(", ")
)

#: A few of CLIP's ImageNet prompt templates (Radford et al., 2021); ``{}`` is the class name.
TEMPLATES = (
    "a photo of a {}.",
    "a bad photo of a {}.",
    "a photo of the large {}.",
    "a photo of the small {}.",
    "a close-up photo of a {}.",
    "a rendering of a {}.",
    "a drawing of a {}.",
    "a sculpture of a {}.",
    "a painting of a {}.",
    "a cartoon {}.",
    "art of the {}.",
    "a toy {}.",
)


def _lines(name: str) -> list[str]:
    text = resources.files("anchordiv").joinpath("resources", name).read_text(encoding="utf-8")
    return [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]


@functools.lru_cache(maxsize=1)
def synonyms() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``(wnid, synonyms)`` for the 1,000 classes in ILSVRC class-index order."""
    rows = [ln.split(" ", 1) for ln in _lines("imagenet_classes.txt")]
    return tuple((w, tuple(s.strip() for s in names.split(","))) for w, names in rows)


def wnids() -> list[str]:
    """The 1,000 ILSVRC-2012 wnids in class-index order.

    Returns
    -------
    list of str
        ``["n01440764", "n01443537", ...]``.
    """
    return [w for w, _ in synonyms()]


@functools.lru_cache(maxsize=1)
def _classes() -> tuple[tuple[str, str], ...]:
    first = [(w, names[0]) for w, names in synonyms()]
    counts = collections.Counter(n for _, n in first)
    return tuple((w, f"{n} ({_hypernym_name(w)})" if counts[n] > 1 else n) for w, n in first)


def _hypernym_name(wnid: str) -> str:
    from . import wordnet

    return wordnet.readable(wordnet.synset(wnid).hypernyms()[0])


def classes() -> list[tuple[str, str]]:
    """The 1,000 ``(wnid, readable name)`` pairs in ILSVRC class-index order.

    Returns
    -------
    list of (str, str)
        ``[("n01440764", "tench"), ...]``.
    """
    return list(_classes())


def names() -> list[str]:
    """The 1,000 readable class names in class-index order.

    Returns
    -------
    list of str
        ``["tench", "goldfish", ...]``.
    """
    return [n for _, n in _classes()]


def synsets() -> list:
    """The WordNet noun synsets of the 1,000 classes (class-index order).

    Returns
    -------
    list of nltk Synset
        One per class.
    """
    from . import wordnet

    return [wordnet.synset(w) for w in wnids()]


def prompts(names, template: str = "a photo of a {}.") -> list[str]:
    """Prompt texts: ``template`` filled with each name.

    Parameters
    ----------
    names : iterable of str
        Class names.
    template : str, default "a photo of a {}."
        A template with one ``{}``.

    Returns
    -------
    list of str
        One prompt per name.

    Examples
    --------
    >>> from anchordiv.data import imagenet
    >>> imagenet.prompts(["tench", "goldfish"])
    ['a photo of a tench.', 'a photo of a goldfish.']
    """
    if isinstance(names, str):
        raise AnchorDivError("names: expected a list of class names, got a single string")
    names = list(names)
    if not names:
        raise AnchorDivError("names: is empty")
    if template.count("{}") != 1:
        raise AnchorDivError(f"template: needs exactly one '{{}}' for the name, got {template!r}")
    return [template.format(n) for n in names]


def imagenet_r_wnids() -> list[str]:
    """The 200 ImageNet-R wnids, in ILSVRC class-index order.

    Returns
    -------
    list of str
        200 wnids.
    """
    subset = set(_lines("imagenet_r_wnids.txt"))
    return [w for w in wnids() if w in subset]


def imagenet_r_classes() -> list[tuple[str, str]]:
    """The 200 ImageNet-R ``(wnid, readable name)`` pairs, in ILSVRC class-index order.

    Returns
    -------
    list of (str, str)
        200 pairs.
    """
    subset = set(imagenet_r_wnids())
    return [(w, n) for w, n in _classes() if w in subset]
