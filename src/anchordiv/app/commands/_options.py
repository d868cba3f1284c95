"""The prior options of ``anchordiv adapt``, read from each family's ``from_anchors``: every
keyword-only parameter but ``prior`` becomes a flag (``em_seed`` -> ``--em-seed``) typed by its
annotation, its help the numpydoc description; families sharing a name share its flag.
``--family MODULE:CLASS`` (:func:`load_family`) is imported by ``anchordiv.app.cli`` before the
parser is built, and again by the command, which reports what is wrong with it."""

from __future__ import annotations

import argparse
import contextlib
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
        flags = (
            getattr(self, f) or getattr(other, f) for f in ("integer", "number", "text", "none")
        )
        return Accepts(self.words + [w for w in other.words if w not in self.words], *flags)

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
        with contextlib.suppress(ValueError):
            if self.number and math.isfinite(value := float(text)):
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
    union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    for arg in typing.get_args(annotation) if union else (annotation,):
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


def parameter_docs(doc: str | None) -> dict[str, str]:
    """``{name: description}`` of a numpydoc **Parameters** section, each on one line."""
    lines = inspect.cleandoc(doc or "").splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == "Parameters") + 2
    except StopIteration:
        return {}
    out: dict[str, str] = {}
    names: list[str] = []
    for line, after in zip(lines[start:], lines[start + 1 :] + [""]):
        if set(after.strip()) == {"-"} and line.strip():
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


def family_options(kind: str) -> dict[str, tuple[Accepts, str]]:
    """``{name: (accepts, help)}`` of the prior options of ``kind``'s ``from_anchors``."""
    from ...adaptation import FAMILIES, OPTIONS

    method = FAMILIES[kind].from_anchors
    hints = inspect.get_annotations(method, eval_str=True)
    docs = parameter_docs(inspect.getdoc(method))
    out = {}
    for name, default in OPTIONS[kind].items():
        text = plain(docs.get(name, "")).rstrip(".") or name.replace("_", " ")
        if default is not inspect.Parameter.empty and "default" not in text:
            text += f" (default {default!r})"
        out[name] = (accepts(hints.get(name, inspect.Parameter.empty), default), text)
    return out


def prior_flags(kinds) -> dict[str, tuple[str, Accepts, str, list[str] | None]]:
    """``{name: (flag, type, help, choices)}``: one flag per option name over ``kinds``."""
    takes: dict[str, Accepts] = {}
    texts: dict[str, dict[str, list]] = {}
    for kind in kinds:
        for name, (accepts_, text) in family_options(kind).items():
            takes[name] = takes.get(name, Accepts()).merge(accepts_)
            texts.setdefault(name, {}).setdefault(text, []).append(kind)
    return {
        name: (
            "--" + name.replace("_", "-"),
            t,
            "; ".join(f"{'/'.join(ks)}: {text}" for text, ks in texts[name].items()),
            t.choices,
        )
        for name, t in takes.items()
    }


def load_family(spec: str | None):
    """The registered family class ``--family spec`` names, imported (None without it)."""
    if spec is None:
        return None
    from ...adaptation import FAMILIES, Family
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


def check_family_known(card: dict, path, name: str) -> None:
    """Refuse a saved posterior or prior (``card``, read from ``path``) whose kind no family
    registers in this process, saying which ``--family`` to pass (before anything loads)."""
    from ...adaptation import FAMILIES
    from ...errors import AnchorDivError

    kind = card.get("kind")
    if card.get("type") not in ("posterior", "prior") or not isinstance(kind, str):
        return
    if kind in FAMILIES:
        return
    module = card.get("family_class_module") or card.get("family_module")
    if not isinstance(module, str) or module.startswith("anchordiv_user_"):
        spec = "path/to/file.py:Class"  # a family imported from a file has no module name
    else:
        spec = f"{module}:Class"
    raise AnchorDivError(
        f"kind: unknown {kind!r}, the kind of the {card['type']} {name} {path}: a family of your "
        f"own, not registered here; pass --family {spec} (the class that registers it with "
        f"ad.family)"
    )
