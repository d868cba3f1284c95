"""The prior options of ``anchordiv adapt``, read from each family's ``from_anchors``: every
keyword-only parameter but ``prior`` becomes a flag (``kappa0`` -> ``--kappa0``, ``em_seed`` ->
``--em-seed``) whose values its annotation says (``float``, ``int``, ``str``, ``None`` and
``Literal`` words, in any union; no annotation: the default's type) and whose help is the
parameter's numpydoc description, so a family — a user's from ``--family`` included — brings
its own flags and nothing in the CLI names them.  Families that share a name share its flag:
it accepts what any of them accepts and its help names the kinds.

``--family MODULE:CLASS`` (:func:`add_family_flag`, :func:`load_family`) is the one flag every
command that reads a prior, a posterior or a kind takes: ``anchordiv.app.cli`` imports it before
the parser is built (so the family's kind and options exist), the command imports it again and
reports what is wrong with it."""

from __future__ import annotations

import argparse
import inspect
import math
import re
import types
import typing
from dataclasses import dataclass, field


@dataclass(eq=False)
class Accepts:
    """What values an option takes: words, numbers, integers, free text, ``none``."""

    words: list[str] = field(default_factory=list)
    integer: bool = False
    number: bool = False
    text: bool = False
    none: bool = False

    def merge(self, other: "Accepts") -> "Accepts":
        return Accepts(
            self.words + [w for w in other.words if w not in self.words],
            self.integer or other.integer,
            self.number or other.number,
            self.text or other.text,
            self.none or other.none,
        )

    def describe(self) -> str:
        kinds = (["a number"] if self.number else ["an integer"] if self.integer else []) + [
            repr(w) for w in self.words
        ]
        return " or ".join(kinds + (["'none'"] if self.none else [])) or "text"

    def __call__(self, text: str):
        """argparse type: the value ``text`` stands for (bad input: a usage error)."""
        if text in self.words or self.text:
            return text
        if self.none and text.lower() == "none":
            return None
        if self.integer and re.fullmatch(r"[+-]?\d+", text):
            return int(text)
        if self.number:
            try:
                value = float(text)
            except ValueError:
                value = math.nan
            if math.isfinite(value):
                return value
        raise argparse.ArgumentTypeError(f"expected {self.describe()}, got {text!r}")

    @property
    def choices(self) -> list[str] | None:
        """The words, where only words are accepted (argparse lists them)."""
        only_words = not (self.integer or self.number or self.text or self.none)
        return list(self.words) if only_words and self.words else None

    @property
    def __name__(self) -> str:  # argparse names the type in its messages
        return self.describe()


def accepts(annotation, default) -> Accepts:
    """What an annotation (or, without one, the default's type) accepts."""
    if annotation is inspect.Parameter.empty:
        annotation = type(default) if default is not None else str
    out = Accepts()
    for arg in typing.get_args(annotation) if _is_union(annotation) else (annotation,):
        if typing.get_origin(arg) is typing.Literal:
            out.words += [str(w) for w in typing.get_args(arg)]
        elif arg is type(None):
            out.none = True
        elif arg is bool or arg is int:
            out.integer = True
        elif arg is float:
            out.number = True
        else:
            out.text = True
    return out


def _is_union(annotation) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType)


def parameter_docs(doc: str | None) -> dict[str, str]:
    """``{name: description}`` of a numpydoc **Parameters** section (names listed together,
    ``kappa0, nu0 : float``, share theirs), each on one line."""
    lines = inspect.cleandoc(doc or "").splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == "Parameters") + 2
    except StopIteration:
        return {}
    out: dict[str, str] = {}
    names: list[str] = []
    for i in range(start, len(lines)):
        line = lines[i]
        if i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"} and line.strip():
            break  # the next section
        head = re.match(r"^(\w+(?:\s*,\s*\w+)*)\s*(?::|$)", line)
        if head and not line.startswith(" "):
            names = [n.strip() for n in head.group(1).split(",")]
            continue
        for name in names:
            out[name] = f"{out.get(name, '')} {line.strip()}".strip()
    return out


def plain(text: str) -> str:
    """``text`` without reST markup (``x``, :role:`x`) and with argparse's ``%`` escaped."""
    text = re.sub(r":\w+:`~?\.?([^`]+)`", r"\1", text)
    return re.sub(r"``([^`]+)``", r"\1", text).replace("%", "%%")


def family_options(fam) -> dict[str, tuple[Accepts, str]]:
    """``{name: (accepts, help)}`` of ``fam.from_anchors``'s keyword-only parameters (bar
    ``prior``, which ``--prior`` sets)."""
    method = fam.from_anchors
    params = inspect.signature(method, eval_str=True).parameters.values()
    docs = parameter_docs(inspect.getdoc(method))
    out = {}
    for p in params:
        if p.kind is not p.KEYWORD_ONLY or p.name == "prior":
            continue
        text = plain(docs.get(p.name, "")).rstrip(".") or p.name.replace("_", " ")
        if p.default is not inspect.Parameter.empty and "default" not in text:
            text += f" (default {p.default!r})"
        out[p.name] = (accepts(p.annotation, p.default), text)
    return out


def prior_flags(families: dict) -> dict[str, tuple[str, Accepts, str, list[str] | None]]:
    """``{name: (flag, argparse type, help, choices)}`` merged over ``families`` (kind ->
    family class): one flag per option name, accepting what any family accepts, its help
    grouped by the kinds that share a text (``gaussian/mixture: ...``)."""
    merged: dict[str, dict] = {}
    for kind, fam in families.items():
        for name, (takes, text) in family_options(fam).items():
            entry = merged.setdefault(name, {"accepts": Accepts(), "texts": {}})
            entry["accepts"] = entry["accepts"].merge(takes)
            entry["texts"].setdefault(text, []).append(kind)
    out = {}
    for name, entry in merged.items():
        text = "; ".join(f"{'/'.join(kinds)}: {t}" for t, kinds in entry["texts"].items())
        takes = entry["accepts"]
        out[name] = ("--" + name.replace("_", "-"), takes, text, takes.choices)
    return out


FAMILY_HELP = (
    "a prior family of your own (an anchordiv.Family subclass its module registers with "
    "ad.family), as module:Class (importable, the current directory included) or "
    "path/to/file.py:Class; imported before anything is read, so that its kind is known"
)


def add_family_flag(p) -> None:
    """``--family MODULE:CLASS`` on parser ``p``."""
    p.add_argument("--family", metavar="MODULE:CLASS", help=FAMILY_HELP)


def load_family(spec: str | None):
    """The family class ``--family spec`` names, imported (its module registers it); None
    without the flag.  An import error, a class its registration refuses or an object that is
    not a registered family class is an :class:`~anchordiv.AnchorDivError` naming the flag."""
    if spec is None:
        return None
    from ...adaptation.protocol import Family
    from ...adaptation.registry import FAMILIES
    from ...errors import AnchorDivError
    from ._io import import_object

    cls = import_object(spec, "--family")
    if not (isinstance(cls, type) and issubclass(cls, Family)):
        raise AnchorDivError(f"--family: {spec} is a {type(cls).__name__}, not a Family subclass")
    if FAMILIES.get(cls.kind) is not cls:
        raise AnchorDivError(
            f"--family: {spec} is not registered (decorate it with @ad.family(KIND) in its module)"
        )
    return cls


__all__ = [
    "Accepts",
    "FAMILY_HELP",
    "accepts",
    "add_family_flag",
    "family_options",
    "load_family",
    "parameter_docs",
    "plain",
    "prior_flags",
]
