"""Every ```python block of the README and of the documentation pages (docs/**/*.md) runs on its
own (fresh namespace, empty directory), so the examples a reader copies work.

A block preceded by an ``<!-- readme-test: slow ... -->`` comment runs only with ``-m slow``
(NUTS compilation).  The README must also start with the two set-up commands, stay the short
front door (≤ 250 lines) and show what its quick start prints."""

import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README] + sorted(p for p in (ROOT / "docs").rglob("*.md")
                          if "_build" not in p.parts and "_generated" not in p.parts)
BLOCK = re.compile(r"(<!-- readme-test: slow[^>]*-->\s*)?```python\n(.*?)```", re.S)


QUICK_START = re.compile(r"## Quick start\n\n```python\n(.*?)```.*?\n```\n(.*?)```", re.S)


def blocks(pages=PAGES) -> list:
    """Every distinct block once (the docs repeat the README's quick start, which
    :func:`test_quick_start_prints_what_the_readme_shows` runs)."""
    out, seen = [], {QUICK_START.search(README.read_text(encoding="utf-8")).group(1)}
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for i, m in enumerate(BLOCK.finditer(text)):
            if m.group(2) in seen:
                continue
            seen.add(m.group(2))
            line = text[:m.start(2)].count("\n") + 1
            marks = [pytest.mark.slow] if m.group(1) else []
            name = page.relative_to(ROOT).with_suffix("").as_posix().replace("/", "-")
            out.append(pytest.param(m.group(2), page, id=f"{name}-line{line}", marks=marks))
    return out


def test_readme_starts_with_the_two_commands():
    text = README.read_text(encoding="utf-8")
    assert text.split("\n\n")[1].strip() == "```\nmake demo\nmake test\n```"


def test_readme_is_the_front_door():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    for page in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / page).exists() or page.split("/")[-1] in (
            "adaptation.md", "model-criticism.md", "scale-out.md"), f"README links to {page}"


def test_readme_has_python_blocks():
    assert len(BLOCK.findall(README.read_text(encoding="utf-8"))) >= 2 and len(blocks()) >= 5


def test_quick_start_prints_what_the_readme_shows(tmp_path, monkeypatch):
    """The quick start's printed output is the block that follows it, verbatim."""
    text = README.read_text(encoding="utf-8")
    code, shown = QUICK_START.search(text).groups()
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), {"__name__": "__main__"})
    assert out.getvalue() == shown


@pytest.mark.parametrize(("code", "page"), blocks())
def test_block_runs(code, page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(page), "exec"), {"__name__": "__main__"})
