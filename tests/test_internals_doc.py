"""The developer guide's call paths (docs/guides/internals.md) point at the source: every
``path.py:LINE name`` on the page names a line of ``src/anchordiv/path.py`` that defines or
contains ``name``."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "guides" / "internals.md"
SRC = ROOT / "src" / "anchordiv"
#: ``adaptation/pipeline.py:61 adapt``; a dotted name (``NIWPrior.exact``) is checked by its last part
REFERENCE = re.compile(r"([\w/]+\.py):(\d+) `?([A-Za-z_][\w.]*)")


def references() -> list[tuple[str, int, str]]:
    return [(f, int(n), name) for f, n, name in REFERENCE.findall(PAGE.read_text())]


def where_now(lines: list[str], name: str) -> str:
    """Where ``name`` is defined in ``lines`` now (or the lines that mention it)."""
    defs = [i + 1 for i, t in enumerate(lines) if re.match(rf"\s*(def|class) {name}\b", t)]
    if defs:
        return f"defined at line {', '.join(map(str, defs))}"
    uses = [i + 1 for i, t in enumerate(lines) if re.search(rf"\b{name}\b", t)]
    return f"mentioned at lines {uses[:8]}" if uses else "no longer in the file"


def test_the_page_has_references():
    refs = references()
    assert len(refs) >= 20, "the internals page lost its file:line references"
    assert any(f == "adaptation/pipeline.py" and n == "adapt" for f, _, n in refs)


@pytest.mark.parametrize("path, line, name", references())
def test_reference_points_at_its_name(path, line, name):
    file = SRC / path
    assert file.is_file(), f"docs/guides/internals.md: {path}:{line} {name}: no file {path}"
    lines = file.read_text().split("\n")
    short = name.rsplit(".", 1)[-1]
    text = lines[line - 1] if line <= len(lines) else ""
    assert re.search(rf"\b{re.escape(short)}\b", text), (
        f"docs/guides/internals.md: {path}:{line} {name} moved: line {line} is {text.strip()!r}; "
        f"{short} is {where_now(lines, short)} — update the page's line number"
    )
