"""Measured figures read from ``benchmarks/results/*.json`` at build time, so the docs cannot
misquote them.

In a MyST page::

    {result}`bench_divergence:rows[kind=gaussian,d=384].ratio!.2f`×

renders the ``ratio`` of the row of ``benchmarks/results/bench_divergence.json`` whose ``kind``
is ``gaussian`` and ``d`` is 384, formatted with ``.2f``.  A reference is
``NAME:PATH[!FORMAT]`` (``!``, not ``|``, so references also work inside Markdown tables):

* ``NAME`` — a results file ``benchmarks/results/NAME.json``;
* ``PATH`` — dot-separated steps into the JSON: a key (``row``), an index into a list (``0``),
  or a key followed by a selector ``[field=value,...]`` that picks the single item of a list
  whose fields equal the values (compared as text, or as numbers where both are numbers; a
  value may hold spaces, dots and ``=``, and a comma unless the comma starts ``,field=``);
  ``[*field=value,...]`` picks every matching item (at least one), and the steps after it
  apply to each;
* ``FORMAT`` — a Python format spec (``.3f``, ``,``, ``.0%``); the default prints integers
  as they are and other numbers with ``.3g``.  ``x`` is ``.2f`` followed by ``×`` (a speed
  ratio); ``range`` or ``range:SPEC`` prints the smallest and largest of several values,
  ``low–high``; ``min``/``max`` (``min:SPEC``) the smallest or largest.

A reference that does not resolve is a build error (``make docs`` runs with ``-W``), and
``tests/test_doc_results.py`` resolves every reference of every page without building.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
#: a {result}`...` reference in a MyST page
ROLE = re.compile(r"\{result\}`([^`]+)`")
_STEP = re.compile(r"^(?P<key>[^\[\]]*)(?:\[(?P<select>[^\]]+)\])?$")


class ResultError(LookupError):
    """A reference that names no file, key, list item or format."""


@lru_cache(maxsize=None)
def load(name: str, results: Path = RESULTS):
    path = Path(results) / f"{name}.json"
    if not path.is_file():
        raise ResultError(f"{name}: no results file {path}")
    return json.loads(path.read_text(encoding="utf-8"))


def _equal(actual, wanted: str) -> bool:
    if str(actual) == wanted:
        return True
    try:
        return float(actual) == float(wanted)
    except (TypeError, ValueError):
        return False


def _select(items, select: str, where: str):
    if not isinstance(items, list):
        raise ResultError(f"{where}: [{select}] needs a list, found {type(items).__name__}")
    every = select.startswith("*")
    conditions = [c.split("=", 1) for c in re.split(r",(?=\w+=)", select.lstrip("*"))]
    if any(len(c) != 2 for c in conditions):
        raise ResultError(f"{where}: selector [{select}] must be field=value[,field=value]")
    found = [
        item
        for item in items
        if isinstance(item, dict)
        and all(k.strip() in item and _equal(item[k.strip()], v.strip()) for k, v in conditions)
    ]
    if every:
        if not found:
            raise ResultError(f"{where}: [{select}] matches nothing")
        return _Many(found)
    if len(found) != 1:
        raise ResultError(f"{where}: [{select}] matches {len(found)} items, not one")
    return found[0]


class _Many(list):
    """The items a ``[*...]`` selector picked; later steps apply to each."""


def lookup(ref: str, results: Path = RESULTS):
    """The value a reference ``NAME:PATH[!FORMAT]`` points to (the format is ignored)."""
    body = ref.split("!", 1)[0].strip()
    if ":" not in body:
        raise ResultError(f"{ref}: expected NAME:PATH")
    name, path = body.split(":", 1)
    value = load(name.strip(), Path(results))
    where = name
    for step in _steps(path, value):
        m = _STEP.match(step)
        if m is None or not (m["key"] or m["select"]):
            raise ResultError(f"{ref}: bad step {step!r}")
        key = m["key"]
        if key:
            where += f".{key}"
            if isinstance(value, _Many):
                value = _Many(_step(v, key, ref, where) for v in value)
            else:
                value = _step(value, key, ref, where)
        if m["select"]:
            value = _select(value, m["select"], f"{ref}: {where}")
    return list(value) if isinstance(value, _Many) else value


def _steps(path: str, value) -> list[str]:
    """``path`` split at dots, except where a key of the JSON itself holds a dot
    (``k_over_0.7``): such parts are joined back when the joined key exists."""
    parts, out = _split_dots(path), []
    keys = _all_keys(value)
    i = 0
    while i < len(parts):
        j = len(parts)
        while j > i + 1 and not (
            "[" not in ".".join(parts[i : j - 1]) and ".".join(parts[i:j]).split("[")[0] in keys
        ):
            j -= 1
        out.append(".".join(parts[i:j]))
        i = j
    return out


def _split_dots(path: str) -> list[str]:
    """``path`` split at the dots outside ``[...]`` selectors."""
    parts, depth, current = [], 0, ""
    for ch in path:
        depth += (ch == "[") - (ch == "]")
        if ch == "." and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    return parts + [current]


def _all_keys(value, found=None) -> set:
    found = set() if found is None else found
    if isinstance(value, dict):
        for k, v in value.items():
            found.add(k)
            _all_keys(v, found)
    elif isinstance(value, list):
        for v in value:
            _all_keys(v, found)
    return found


def _step(value, key: str, ref: str, where: str):
    if isinstance(value, list) and key.lstrip("-").isdigit():
        try:
            return value[int(key)]
        except IndexError:
            raise ResultError(f"{ref}: {where} is out of range") from None
    if isinstance(value, dict) and key in value:
        return value[key]
    raise ResultError(f"{ref}: {where} not found")


def format_value(value, spec: str | None) -> str:
    """``value`` formatted by ``spec``; exponents print compactly (``2.65e6``, ``1.5e-6``)."""
    return re.sub(
        r"e([+-])0*(\d)", lambda m: "e" + ("-" if m[1] == "-" else "") + m[2], _format(value, spec)
    )


def _format(value, spec: str | None) -> str:
    if spec and spec.split(":", 1)[0] == "range":
        if not isinstance(value, list) or not value:
            raise ResultError(f"format {spec!r} needs several values ([*...]), got {value!r}")
        inner = spec.split(":", 1)[1] if ":" in spec else None
        low, high = min(value), max(value)
        return f"{format_value(low, inner)}–{format_value(high, inner)}"
    if spec and spec.split(":", 1)[0] in ("min", "max"):
        if not isinstance(value, list) or not value:
            raise ResultError(f"format {spec!r} needs several values ([*...]), got {value!r}")
        inner = spec.split(":", 1)[1] if ":" in spec else None
        return format_value(min(value) if spec.startswith("min") else max(value), inner)
    if isinstance(value, list):
        raise ResultError(f"several values {value!r}: format them with 'range', 'min' or 'max'")
    if spec == "x":
        return f"{float(value):.2f}×"
    if spec:
        try:
            return format(value, spec)
        except (TypeError, ValueError) as err:
            raise ResultError(f"format {spec!r} does not apply to {value!r} ({err})") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int):
        return str(value)
    return format(value, ".3g")


def render(ref: str, results: Path = RESULTS) -> str:
    """The text a reference renders as."""
    spec = ref.split("!", 1)[1].strip() if "!" in ref else None
    return format_value(lookup(ref, results), spec)


def references(text: str) -> list[str]:
    """The ``{result}`` references of a MyST page."""
    return ROLE.findall(text)


def result_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    from docutils import nodes

    try:
        rendered = render(text)
    except ResultError as err:
        msg = inliner.reporter.error(f"{{result}}`{text}`: {err}", line=lineno)
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]
    env = inliner.document.settings.env
    env.note_dependency(str(RESULTS / f"{text.split(':', 1)[0].strip()}.json"))
    return [nodes.Text(rendered)], []


def setup(app):
    app.add_role("result", result_role)
    return {"parallel_read_safe": True}
