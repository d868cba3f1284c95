"""Every ```python block of the README runs on its own (fresh namespace, empty directory).

A block preceded by an ``<!-- readme-test: slow ... -->`` comment runs only with ``-m slow``
(NUTS compilation).  The README must also start with the two set-up commands."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCK = re.compile(r"(<!-- readme-test: slow[^>]*-->\s*)?```python\n(.*?)```", re.S)


def blocks() -> list:
    text = README.read_text(encoding="utf-8")
    out = []
    for i, m in enumerate(BLOCK.finditer(text)):
        line = text[:m.start(2)].count("\n") + 1
        marks = [pytest.mark.slow] if m.group(1) else []
        out.append(pytest.param(m.group(2), id=f"block{i}-line{line}", marks=marks))
    return out


def test_readme_starts_with_the_two_commands():
    text = README.read_text(encoding="utf-8")
    assert text.split("\n\n")[1].strip() == "```\nmake demo\nmake test\n```"


def test_readme_has_python_blocks():
    assert len(blocks()) >= 5


@pytest.mark.parametrize("code", blocks())
def test_readme_block_runs(code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(README), "exec"), {"__name__": "__main__"})
