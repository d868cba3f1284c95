"""A small markdown report writer: sections of text, tables from tidy rows, PNG figures the
caller wrote into the report directory (``rep.path(name)``), linked relatively."""

from __future__ import annotations

import math
from pathlib import Path

from ..errors import AnchorDivError


def format_cell(value, digits: int = 3) -> str:
    """A table cell: floats with ``digits`` decimals (NaN as "–"), everything else as str."""
    if isinstance(value, float):
        return "–" if math.isnan(value) else f"{value:.{digits}f}"
    return str(value)


def interval_cell(mean, low, high, digits: int = 3, signed: bool = False) -> str:
    """A table cell ``mean [low, high]`` (an estimate with its interval; "–" where the mean is
    not finite, e.g. a model undefined at that budget); ``signed``: with "+" on positives
    (differences)."""
    if not math.isfinite(mean):
        return "–"
    f = f"{'+' if signed else ''}.{digits}f"
    return f"{mean:{f}} [{low:{f}}, {high:{f}}]"


def markdown_table(rows: list[dict], columns: list[str], digits: int = 3) -> str:
    """A GitHub-markdown table of ``rows`` (dicts) restricted to ``columns``."""
    if not rows:
        raise AnchorDivError("markdown_table: no rows")
    missing = [c for c in columns if c not in rows[0]]
    if missing:
        raise AnchorDivError(f"markdown_table: rows lack column(s) {', '.join(missing)}")
    head = "| " + " | ".join(columns) + " |"
    rule = "|" + "|".join("---" for _ in columns) + "|"
    body = ["| " + " | ".join(format_cell(r[c], digits) for c in columns) + " |" for r in rows]
    return "\n".join([head, rule, *body])


class Report:
    """Markdown built in memory and written once with :meth:`write`."""

    def __init__(self, title: str, out_dir):
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.parts: list[str] = [f"# {title}"]

    def path(self, name: str) -> Path:
        """Where to write a file (figure, CSV) that the report links."""
        return self.out_dir / name

    def section(self, title: str, text: str = "", level: int = 2) -> None:
        self.parts.append(f"{'#' * level} {title}")
        if text:
            self.parts.append(text.strip())

    def text(self, text: str) -> None:
        self.parts.append(text.strip())

    def table(self, rows: list[dict], columns: list[str], digits: int = 3) -> None:
        self.parts.append(markdown_table(rows, columns, digits))

    def figure(self, name: str, caption: str) -> None:
        if not self.path(name).is_file():
            raise AnchorDivError(f"Report.figure: {self.path(name)} was not written")
        self.parts.append(f"![{caption}]({name})\n\n*{caption}*")

    def write(self, name: str = "report.md") -> Path:
        from .._safeio import atomic_file, write_text

        path = self.path(name)
        with atomic_file(path) as tmp:
            write_text(tmp, "\n\n".join(self.parts) + "\n")
        return path
