"""Sphinx configuration of the anchordiv documentation (``make docs``: offline, ``-W``).

* MyST Markdown pages and the notebook gallery through MyST-NB; notebooks are rendered from
  their stored outputs (``nb_execution_mode = "off"``: ``make docs`` never re-executes them —
  ``tests/test_notebooks.py`` does, in small mode).
* The API reference is generated from ``__all__`` by ``_ext/apigen.py`` on every build; the
  docstrings are numpydoc (Parameters, Returns, Raises, Examples), rendered by
  ``sphinx.ext.napoleon`` (part of Sphinx: nothing to install).
* Figures quoted in the guides and the results page come from ``benchmarks/results/*.json``
  at build time through the ``{result}`` role of ``_ext/results.py``.
* MathJax is served from a local copy (Debian ``libjs-mathjax``, installed by
  ``make docs-setup``; ``ANCHORDIV_MATHJAX_DIR`` points elsewhere), never from a CDN.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(HERE / "_ext"))

import anchordiv  # noqa: E402
import apigen  # noqa: E402

project = "anchordiv"
author = "the anchordiv developers"
copyright = "2026, the anchordiv developers"
release = version = anchordiv.__version__

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "apigen",
    "results",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
]
templates_path = ["_templates"]
exclude_patterns = [
    "_build",
    "_ext",
    "guides/_generated",
    "Thumbs.db",
    ".DS_Store",
    "**.ipynb_checkpoints",
]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}

# --- MyST and notebooks ---------------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
nb_execution_mode = "off"
nb_merge_streams = True

# --- autodoc / autosummary ------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # shapes and types are in the docstrings
autodoc_preserve_defaults = True
autodoc_inherit_docstrings = False  # a subclass of a library class documents only its own API

# --- numpydoc sections (napoleon) -----------------------------------------------------------
napoleon_google_docstring = False
napoleon_numpy_docstring = True
# Parameters as one field list of "name (type) -- description": the types stay text, since a
# class documented both top-level and in its module (Family, Curve, NIW) is an ambiguous
# cross-reference target in a :type: field, which -W turns into an error
napoleon_use_param = False
napoleon_use_rtype = False  # the return type inline with its description
napoleon_use_ivar = True  # Attributes as :ivar: fields (no duplicate attribute entries)
napoleon_include_init_with_doc = False

# --- HTML -----------------------------------------------------------------------------------
html_theme = "furo"
html_title = f"anchordiv {release}"
html_static_path = ["_static"]
html_css_files = ["anchordiv.css"]

# --- MathJax, served locally ----------------------------------------------------------------
MATHJAX = Path(os.environ.get("ANCHORDIV_MATHJAX_DIR", "/usr/share/javascript/mathjax"))
#: the parts of MathJax 2 the TeX-AMS_CHTML configuration loads
MATHJAX_PARTS = (
    "MathJax.js",
    "config",
    "extensions",
    "jax/input/TeX",
    "jax/element",
    "jax/output/CommonHTML",
    "fonts/HTML-CSS/TeX/woff",
)
mathjax_path = "mathjax/MathJax.js?config=TeX-AMS_CHTML"
# MathJax 2 (what Debian ships) skips elements inside MyST's "tex2jax_ignore" sections unless
# their class is listed here; Sphinx marks every formula with class "math".
mathjax2_config = {
    "tex2jax": {
        "inlineMath": [["\\(", "\\)"]],
        "displayMath": [["\\[", "\\]"]],
        "processClass": "math|tex2jax_process|mathjax_process|output_area",
        "processEscapes": True,
    }
}
myst_update_mathjax = False  # MyST's override is MathJax 3 configuration


def copy_mathjax(app, exception) -> None:
    """Copy the local MathJax into ``_static/mathjax`` of an HTML build."""
    if exception is not None or app.builder.format != "html":
        return
    if not (MATHJAX / "MathJax.js").is_file():
        raise RuntimeError(
            f"MathJax not found at {MATHJAX} (run `make docs-setup`, which "
            "installs Debian's libjs-mathjax, or set ANCHORDIV_MATHJAX_DIR)"
        )
    dest = Path(app.outdir) / "_static" / "mathjax"
    for part in MATHJAX_PARTS:
        src, out = MATHJAX / part, dest / part
        if src.is_dir():
            shutil.copytree(src, out, dirs_exist_ok=True)
        else:
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, out)


def copy_notebooks(app=None) -> None:
    """The gallery shows ``notebooks/*.ipynb`` (outside the source tree): copy the changed ones."""
    gallery = HERE / "gallery"
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        out = gallery / nb.name
        if not out.exists() or out.read_bytes() != nb.read_bytes():
            shutil.copy2(nb, out)


def write_cli_help() -> None:
    """``guides/_generated/cli-help.md``: ``anchordiv --help`` and every subcommand's help."""
    import argparse

    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal width
    from anchordiv.app.cli import build_parser

    parser = build_parser()
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    parts = ["## `anchordiv --help`", "", "```text", parser.format_help().rstrip(), "```", ""]
    for name, sub in subs.choices.items():
        parts += [f"## `anchordiv {name}`", "", "```text", sub.format_help().rstrip(), "```", ""]
    out = HERE / "guides" / "_generated" / "cli-help.md"
    out.parent.mkdir(exist_ok=True)
    text = "\n".join(parts)
    if not out.exists() or out.read_text(encoding="utf-8") != text:
        out.write_text(text, encoding="utf-8")


def setup(app):
    apigen.write_reference(HERE / "api")
    write_cli_help()
    copy_notebooks(app)
    app.connect("build-finished", copy_mathjax)
