"""The documentation site (docs/): every public name is documented and in the API reference
(fast); the site builds offline with warnings as errors, and a headless chromium renders its
pages with math, figures and code (slow: ``-m slow``; needs ``make docs-setup``)."""

import importlib
import inspect
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import anchordiv as ad

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
sys.path.insert(0, str(DOCS / "_ext"))
import apigen  # noqa: E402


def _attribute_doc(name: str, obj) -> str | None:
    """The ``#:`` comment of a constant, in whichever anchordiv module assigns it."""
    from sphinx.pycode import ModuleAnalyzer

    for module in [
        m for m in list(sys.modules.values()) if getattr(m, "__name__", "").startswith("anchordiv")
    ]:
        if getattr(module, name, None) is obj:
            try:
                doc = ModuleAnalyzer.for_module(module.__name__).find_attr_docs().get(("", name))
            except Exception:  # a module without source (none today): no comment to find
                continue
            if doc:
                return "\n".join(doc)
    return None


def _own_doc(obj) -> str | None:
    if inspect.isroutine(obj) or inspect.isclass(obj) or inspect.ismodule(obj):
        return obj.__doc__
    return None


@pytest.mark.parametrize("name", [n for n in ad.__all__ if not n.startswith("__")])
def test_public_name_has_a_docstring(name):
    obj = getattr(ad, name)
    doc = _own_doc(obj) if _own_doc(obj) else _attribute_doc(name, obj)
    assert doc and doc.strip(), f"anchordiv.{name} has no docstring (constants: a #: comment)"


def test_every_public_name_is_in_the_reference(tmp_path):
    modules = apigen.write_reference(tmp_path)
    documented = apigen.documented_names(tmp_path)
    missing = [
        n
        for n in ad.__all__
        if f"anchordiv.{n}" not in documented
        and not (inspect.ismodule(getattr(ad, n)) and f"anchordiv.{n}" in modules)
    ]
    assert not missing, f"not in the API reference: {missing}"
    shared, home = apigen.top_level(), apigen.homes(modules)
    where: dict[int, list[str]] = {}
    for name in modules:
        module = importlib.import_module(name)
        for n in apigen.public_names(module):
            obj = getattr(module, n)
            if f"{name}.{n}" in documented and (inspect.isclass(obj) or inspect.isfunction(obj)):
                where.setdefault(id(obj), []).append(f"{name}.{n}")
            assert (
                f"{name}.{n}" in documented
                or id(obj) in shared
                or home.get(id(obj)) in documented
                or inspect.ismodule(obj)
            ), f"{name}.{n} is public but not in the API reference"
    # one description per object (sphinx -W: "duplicate object description"), issue 42
    twice = [names for names in where.values() if len(names) > 1]
    assert not twice, f"documented twice: {twice}"


def test_only_package_entry_points_have_all():
    """The public API is the package entry points: a module that is not a package's
    ``__init__.py`` defines no ``__all__`` (it is private)."""
    src = Path(ad.__file__).parent
    found = [
        str(path.relative_to(src))
        for path in sorted(src.rglob("*.py"))
        if path.name != "__init__.py"
        and re.search(r"^__all__\s*[:=]", path.read_text(encoding="utf-8"), re.MULTILINE)
    ]
    assert not found, f"private modules with __all__: {found}"


def test_reference_renders_only_entry_points(tmp_path):
    """The reference has a page for each entry point and each namespace module one lists, and
    for nothing else; every documented name is on such a page."""
    modules = apigen.write_reference(tmp_path)
    entry = apigen.entry_points()
    namespaces = {
        obj.__name__
        for m in entry
        for obj in map(vars(importlib.import_module(m)).get, importlib.import_module(m).__all__)
        if inspect.ismodule(obj)
    }
    assert set(modules) == set(entry) | namespaces
    pages = {p.stem for p in (tmp_path / "modules").glob("*.rst")}
    assert pages == set(modules)
    assert all(n.rsplit(".", 1)[0] in pages for n in apigen.documented_names(tmp_path))


def test_reference_follows_all(tmp_path, monkeypatch):
    """A name added to ``__all__`` appears in the reference with no edit to the docs."""
    monkeypatch.setattr(ad, "__all__", [*ad.__all__, "brand_new"], raising=True)
    monkeypatch.setattr(ad, "brand_new", lambda: None, raising=False)
    apigen.write_reference(tmp_path)
    assert "anchordiv.brand_new" in apigen.documented_names(tmp_path)


# --- slow: the site itself --------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site built offline with ``-W`` (what ``make docs`` runs) into a temporary folder;
    ``ANCHORDIV_DOCS_SITE=docs/_build/html`` checks an existing build instead."""
    if os.environ.get("ANCHORDIV_DOCS_SITE"):
        return Path(os.environ["ANCHORDIV_DOCS_SITE"]).resolve()
    out = tmp_path_factory.mktemp("site") / "html"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-W",
            "--keep-going",
            "-q",
            "-b",
            "html",
            str(DOCS),
            str(out),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    return out


@pytest.mark.slow
def test_site_builds_offline_without_warnings(site):
    assert (site / "index.html").is_file()
    assert (site / "_static" / "mathjax" / "MathJax.js").is_file()
    assert "_static/mathjax/MathJax.js" in (site / "paper-map.html").read_text("utf-8")
    for page in site.rglob("*.html"):  # offline: no script or stylesheet from the network
        html = page.read_text(encoding="utf-8")
        assert 'src="http' not in html and not re.search(r'<link[^>]*href="http', html), page
    assert (site / "gallery" / "bayesian_workflow.html").is_file()


def _chromium(*args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--virtual-time-budget=15000",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is installed by `make docs-setup`")
@pytest.mark.parametrize(
    "page",
    ["api/generated/anchordiv.adapt.html", "gallery/bayesian_workflow.html", "paper-map.html"],
)
def test_pages_render_in_chromium(site, page, tmp_path):
    """Math typeset by the local MathJax, figures and highlighted code in a real browser;
    screenshots land in ``ANCHORDIV_SCREENSHOTS`` (default: the test's temporary folder)."""
    from PIL import Image

    url = (site / page).as_uri()
    dom = _chromium("--dump-dom", url).stdout
    expected = {
        "paper-map.html": ("MJXc-display", "mjx-chtml"),  # MathJax typeset it
        "gallery/bayesian_workflow.html": ("<img", "highlight-ipython3"),
        "api/generated/anchordiv.adapt.html": ("sig-name", "broad_anchors"),
    }[page]
    for text in expected:
        assert text in dom, f"{page}: {text!r} missing from the rendered page"
    shots = Path(os.environ.get("ANCHORDIV_SCREENSHOTS", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    png = shots / (page.replace("/", "_").removesuffix(".html") + ".png")
    _chromium(f"--screenshot={png}", "--window-size=1280,1600", url)
    image = Image.open(png).convert("L")
    assert image.size == (1280, 1600)
    assert len(image.getcolors(maxcolors=1 << 16) or range(256)) > 50, "blank screenshot"
