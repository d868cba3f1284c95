"""Numbers the documentation cannot misquote.

* Every ``{result}`NAME:PATH!FORMAT``` reference in the docs pages resolves against
  ``benchmarks/results/NAME.json`` (``docs/_ext/results.py``; the Sphinx build renders them
  the same way and fails on one that does not resolve).
* The results page and the measured guides take their headline figures from the JSON.
* A notebook's prose quotes only numbers that its stored outputs (or its code) show, states
  that its default mode is the small one, and the small mode is the default.
* Guides describe the library, not its development history."""

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))
import results  # noqa: E402

PAGES = sorted(
    p for p in DOCS.rglob("*.md") if "_build" not in p.parts and "_generated" not in p.parts
)
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def all_references() -> list[tuple[str, str]]:
    return [
        (p.relative_to(ROOT).as_posix(), ref)
        for p in PAGES
        for ref in results.references(p.read_text(encoding="utf-8"))
    ]


@pytest.mark.parametrize(("page", "ref"), all_references())
def test_reference_resolves(page, ref):
    assert "|" not in ref, f"{page}: {ref}: a | would split a Markdown table cell; use !FORMAT"
    text = results.render(ref)
    assert text and "nan" not in text.lower(), f"{page}: {ref} renders as {text!r}"


def test_pages_take_their_figures_from_the_results():
    by_page = {}
    for page, _ in all_references():
        by_page[page] = by_page.get(page, 0) + 1
    assert by_page.get("docs/results.md", 0) >= 20, by_page
    assert len(by_page) >= 3, by_page


def test_lookup_grammar(tmp_path):
    (tmp_path / "demo.json").write_text(
        json.dumps(
            {
                "row": {"speedup": 17.395, "n": 20000, "k_over_0.7": 3},
                "rows": [
                    {"kind": "gaussian", "d": 384, "ratio": 1.3675},
                    {"kind": "gaussian", "d": 768, "ratio": 1.93},
                    {"kind": "softmax", "d": 384, "ratio": 1.47},
                ],
            }
        )
    )
    results.load.cache_clear()
    assert results.render("demo:row.speedup!.1f", tmp_path) == "17.4"
    assert results.render("demo:row.n!,", tmp_path) == "20,000"
    assert results.render("demo:row.n", tmp_path) == "20000"
    assert results.render("demo:row.n!.2e", tmp_path) == "2.00e4"
    assert results.format_value(1.5e-6, ".1e") == "1.5e-6"
    assert results.render("demo:row.k_over_0.7", tmp_path) == "3"
    assert results.render("demo:rows[kind=gaussian,d=768].ratio!x", tmp_path) == "1.93×"
    assert results.render("demo:rows.2.kind", tmp_path) == "softmax"
    assert results.render("demo:rows[kind=softmax].ratio", tmp_path) == "1.47"
    assert results.render("demo:rows[*kind=gaussian].ratio!range:.2f", tmp_path) == "1.37–1.93"
    assert results.render("demo:rows[*d=384].kind!range", tmp_path) == "gaussian–softmax"
    assert results.render("demo:rows[*kind=gaussian].ratio!min:.3f", tmp_path) == "1.367"
    assert results.render("demo:rows[*kind=gaussian].ratio!max", tmp_path) == "1.93"
    for bad in (
        "demo:rows[kind=gaussian].ratio",
        "demo:rows[*kind=gaussian].ratio",
        "demo:rows[*kind=none].ratio",
        "demo:row.n!range",
        "demo:row.missing",
        "nofile:row.n",
        "demo:rows.7.kind",
        "demo:row.speedup!d",
        "demo",
    ):
        with pytest.raises(results.ResultError):
            results.render(bad, tmp_path)
    results.load.cache_clear()


def test_sphinx_config_loads_the_extensions():
    conf = (DOCS / "conf.py").read_text(encoding="utf-8")
    assert '"results"' in conf and '"sphinx.ext.napoleon"' in conf


# --- notebooks ------------------------------------------------------------------------------

NUMBER = re.compile(r"(?<![\w.\-])\d+\.\d+(?![\w.])")


def _notebook(path: Path) -> tuple[str, str]:
    """``(markdown, outputs and code)`` of a stored notebook."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    markdown = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    shown = []
    for c in nb["cells"]:
        if c["cell_type"] != "code":
            continue
        shown.append("".join(c["source"]))
        for o in c.get("outputs", []):
            shown.append("".join(o.get("text", "")))
            shown.append("".join(o.get("data", {}).get("text/plain", "")))
    return markdown, "\n".join(shown)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_prose_quotes_only_what_it_shows(path):
    """A decimal number in a notebook's prose must appear in its stored outputs or code (the
    prose then cannot drift from the run the gallery shows)."""
    markdown, shown = _notebook(path)
    math_free = re.sub(r"\$[^$]*\$", "", markdown)
    quoted = [n for n in NUMBER.findall(math_free) if n not in shown]
    assert not quoted, f"{path.name}: prose quotes {quoted}, which no output shows"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_default_mode_is_small_and_says_so(path):
    markdown, shown = _notebook(path)
    assert 'SMALL = os.environ.get("ANCHORDIV_NOTEBOOK_FULL") != "1"' in shown, (
        f"{path.name}: the small mode must be the default (ANCHORDIV_NOTEBOOK_FULL=1: full)"
    )
    assert "small mode" in markdown.lower() and "ANCHORDIV_NOTEBOOK_FULL=1" in markdown, (
        f"{path.name}: its prose must say that it shows the small mode and how to run the full"
    )


def test_gallery_states_its_mode():
    text = (DOCS / "gallery" / "index.md").read_text(encoding="utf-8").lower()
    assert "small mode" in text and "default" in text and "anchordiv_notebook_full=1" in text


# --- guides describe the library ------------------------------------------------------------

HISTORY = re.compile(
    r"\b(issue \d+|before issue|since issue|since round|before round|"
    r"an earlier run|used to)\b",
    re.I,
)


@pytest.mark.parametrize(
    "page",
    [p for p in PAGES if "guides" in p.parts or p.name in ("index.md", "getting-started.md")],
    ids=lambda p: p.stem,
)
def test_guides_describe_the_library_not_its_history(page):
    found = sorted({m.group(0) for m in HISTORY.finditer(page.read_text(encoding="utf-8"))})
    assert not found, f"{page.name}: development history in a guide: {found}"
