"""Every ```python block of the README runs on its own (fresh namespace, empty directory), so
the examples a reader copies work; a documentation page (docs/**/*.md) is read top to bottom,
so its blocks run in order in one namespace per page, as a reader following the guide runs them.

A block preceded by an ``<!-- readme-test: slow ... -->`` comment runs only with ``-m slow``
(NUTS compilation).  A block followed (after any prose) by ``<!-- output -->`` and a ```text
block must print exactly that text, so a page never quotes numbers its code no longer gives.
The README must also start with the two set-up commands, stay the short front door (≤ 250
lines) and show what its quick start prints."""

import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README] + sorted(
    p
    for p in (ROOT / "docs").rglob("*.md")
    if "_build" not in p.parts and "_generated" not in p.parts
)
BLOCK = re.compile(
    r"(<!-- readme-test: slow[^>]*-->\s*)?```python\n(.*?)```"
    r"(?:(?:(?!```).)*?<!-- output -->\s*```text\n(.*?)```)?",
    re.S,
)


QUICK_START = re.compile(r"## Quick start\n\n```python\n(.*?)```.*?\n```\n(.*?)```", re.S)


def page_blocks(page: Path) -> list[tuple[str, bool, int]]:
    """``(code, slow, line)`` of each ```python block of ``page``, in order."""
    return [(code, slow, line) for code, slow, line, _ in page_outputs(page)]


def page_outputs(page: Path) -> list[tuple[str, bool, int, str | None]]:
    """``(code, slow, line, output)`` of each ```python block of ``page``: ``output`` is the
    ```text block marked ``<!-- output -->`` right after it (None without one)."""
    text = page.read_text(encoding="utf-8")
    return [
        (m.group(2), bool(m.group(1)), text[: m.start(2)].count("\n") + 1, m.group(3))
        for m in BLOCK.finditer(text)
    ]


def blocks() -> list:
    """The README's blocks, each once (its quick start runs in
    :func:`test_quick_start_prints_what_the_readme_shows`)."""
    quick = QUICK_START.search(README.read_text(encoding="utf-8")).group(1)
    return [
        pytest.param(code, id=f"README-line{line}", marks=[pytest.mark.slow] if slow else [])
        for code, slow, line in page_blocks(README)
        if code != quick
    ]


def pages() -> list:
    """Each docs page with blocks: its fast blocks in order, and (slow) all its blocks."""
    out = []
    for page in PAGES[1:]:
        found = page_blocks(page)
        if not found:
            continue
        name = page.relative_to(ROOT).with_suffix("").as_posix().replace("/", "-")
        out.append(pytest.param(page, False, id=name))
        if any(slow for _, slow, _ in found):
            out.append(pytest.param(page, True, id=f"{name}-all", marks=[pytest.mark.slow]))
    return out


def test_readme_starts_with_the_two_commands():
    text = README.read_text(encoding="utf-8")
    assert text.split("\n\n")[1].strip() == "```\nmake demo\nmake test\n```"


def test_ci_runs_both_readme_commands_and_checks_the_report():
    """CI runs what a new user runs (issue 42): both README commands as written, the report's
    section check after the demo, and `make docs`."""
    text = README.read_text(encoding="utf-8")
    commands = text.split("\n\n")[1].strip().strip("`").split()
    steps = [
        line.strip()
        for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    for cmd in (" ".join(commands[i : i + 2]) for i in range(0, len(commands), 2)):
        assert cmd in steps, f".ci/run lacks the README's {cmd!r}"
    assert steps.index("make demo") < steps.index(
        ".venv/bin/python .ci/check_report.py reports/demo"
    )
    assert "make docs" in steps


def test_readme_is_the_front_door():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    for page in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / page).exists() or page.split("/")[-1] in (
            "adaptation.md",
            "model-criticism.md",
            "scale-out.md",
        ), f"README links to {page}"


def test_readme_has_python_blocks():
    assert len(BLOCK.findall(README.read_text(encoding="utf-8"))) >= 2 and len(pages()) >= 5


def test_quick_start_prints_what_the_readme_shows(tmp_path, monkeypatch):
    """The quick start's printed output is the block that follows it, verbatim."""
    text = README.read_text(encoding="utf-8")
    code, shown = QUICK_START.search(text).groups()
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), {"__name__": "__main__"})
    assert out.getvalue() == shown


@pytest.mark.parametrize("code", blocks())
def test_readme_block_runs_on_its_own(code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(README), "exec"), {"__name__": "__main__"})


@pytest.mark.parametrize(("page", "with_slow"), pages())
def test_docs_page_runs_top_to_bottom(page, with_slow, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__main__"}
    for code, slow, line, shown in page_outputs(page):
        if slow and not with_slow:
            continue
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile("\n" * (line - 1) + code, str(page), "exec"), namespace)
        if shown is not None:
            assert out.getvalue() == shown, (
                f"{page.name}, line {line}: the block prints\n"
                f"{out.getvalue()}\nbut the page shows\n{shown}"
            )
