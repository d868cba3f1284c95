"""The developer guide's call paths (docs/guides/internals.md) name the source, never a line:
every ``path.py::name`` on the page is a function or class defined in the module
``anchordiv/path.py`` (at module level or as a member of one of its classes).

Nothing here counts files, calls or modules: the page describes the paths, these tests keep
its names true."""

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "guides" / "internals.md"
SRC = ROOT / "src" / "anchordiv"
#: ``adaptation/api.py::adapt``; a dotted name (``NIWPrior.exact``) is checked by its last part
REFERENCE = re.compile(r"([\w/]+\.py)::([A-Za-z_][\w.]*)")


def sections() -> dict[str, str]:
    """The page's ``## `ad.NAME(...)` `` sections by NAME."""
    parts = re.split(r"^## `ad\.(\w+)\(.*$", PAGE.read_text(), flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def references(text: str) -> list[tuple[str, str]]:
    return REFERENCE.findall(text)


def defines(path: str, name: str) -> bool:
    """Whether the module of ``path`` defines ``name`` (its last dotted part) itself: a
    function or class of that module, or a member of one of its classes."""
    module = importlib.import_module("anchordiv." + path.removesuffix(".py").replace("/", "."))
    short = name.rsplit(".", 1)[-1]
    own = vars(module).get(short)
    if own is not None and getattr(own, "__module__", None) == module.__name__:
        return True
    classes = [
        c for c in vars(module).values() if isinstance(c, type) and c.__module__ == module.__name__
    ]
    return any(short in vars(c) for c in classes)


def test_the_page_has_references():
    s = sections()
    assert set(s) >= {"top_k", "adapt", "infer"}, sorted(s)
    assert ("adaptation/api.py", "adapt") in references(s["adapt"])
    assert len(references(PAGE.read_text())) >= 30
    assert not re.search(r"\.py:\d+", PAGE.read_text()), "the page pins a line number"


@pytest.mark.parametrize("path, name", sorted(set(references(PAGE.read_text()))))
def test_reference_names_a_definition(path, name):
    assert (SRC / path).is_file(), f"docs/guides/internals.md: {path}::{name}: no file {path}"
    assert defines(path, name), (
        f"docs/guides/internals.md: {path}::{name}: {path} defines no {name}"
    )


def test_the_check_tells_a_definition_from_an_import():
    assert defines("adaptation/update.py", "exact_update")
    assert defines("adaptation/methods.py", "NUTS.run")  # a member of one of its classes
    assert not defines("adaptation/api.py", "check_targets")  # imported there, defined elsewhere
