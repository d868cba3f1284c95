"""Generate the API reference sources from the package entry points (run by ``conf.py`` before
every build).

The public API is the ``__all__`` of ``anchordiv`` and of its subpackages' ``__init__.py``; every
other module is private (it has no ``__all__``) and gets no page.  Each public name is documented
once: the names of ``anchordiv.__all__`` on the ``anchordiv`` page, every other name on the page
of the first package (in sorted order) that lists it, and the other packages that list it link
there (``anchordiv.adaptation.NIWPrior`` links to ``anchordiv.NIWPrior``).  A module named in a
package's ``__all__`` (``anchordiv.data.wordnet``) is a namespace a user reaches through that
package: it gets a page of its public functions and classes.  A new name in any package's
``__all__`` therefore needs no edit here."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

#: Modules whose pages are not API (the command line is documented from its --help).
SKIP = ("anchordiv.app.cli", "anchordiv.app.commands", "anchordiv.cli", "anchordiv.commands")


def entry_points() -> list[str]:
    """``anchordiv`` and every non-private subpackage whose ``__init__.py`` defines ``__all__``,
    sorted."""
    import anchordiv

    names = {"anchordiv"}
    for info in pkgutil.walk_packages(anchordiv.__path__, "anchordiv."):
        if (
            not info.ispkg
            or any(part.startswith("_") for part in info.name.split("."))
            or info.name.startswith(SKIP)
        ):
            continue
        if getattr(importlib.import_module(info.name), "__all__", None):
            names.add(info.name)
    return sorted(names)


def public_modules() -> list[str]:
    """The entry points (:func:`entry_points`) and every module named in one's ``__all__``,
    sorted."""
    names = set(entry_points())
    for name in list(names):
        module = importlib.import_module(name)
        names |= {obj.__name__ for n in module.__all__ if inspect.ismodule(obj := _get(module, n))}
    return sorted(names)


def _get(module, name: str):
    """``module.name``; None where it is a namespace module whose optional dependency is
    missing (a package may import its namespaces lazily: ``anchordiv.scale.dask``)."""
    try:
        return getattr(module, name)
    except ImportError:
        return None


def public_names(module) -> list[str]:
    """``module.__all__``, or for a module without one (a namespace module named in a package's
    ``__all__``) the public functions and classes it defines."""
    if hasattr(module, "__all__"):
        return [n for n in module.__all__ if _get(module, n) is not None]
    return [
        n
        for n, obj in vars(module).items()
        if not n.startswith("_")
        and (inspect.isfunction(obj) or inspect.isclass(obj))
        and obj.__module__ == module.__name__
    ]


def top_level() -> dict[int, str]:
    """``id(object) -> name`` of the objects in ``anchordiv.__all__`` (re-exports link there)."""
    import anchordiv

    return {
        id(getattr(anchordiv, n)): n
        for n in anchordiv.__all__
        if not isinstance(getattr(anchordiv, n), (str, int, float, tuple))
    }


def homes(modules: list[str]) -> dict[int, str]:
    """``id(object) -> "module.name"``: where each class and function of a public page is
    documented.  A namespace module's own objects live on its page; any other object on the
    page of the first module (in ``modules``' order) that lists it; the other pages link there."""
    out: dict[int, str] = {}
    for m in modules:  # a namespace module's own names first
        module = importlib.import_module(m)
        for n in public_names(module):
            obj = getattr(module, n)
            if (inspect.isclass(obj) or inspect.isfunction(obj)) and obj.__module__ == m:
                out[id(obj)] = f"{m}.{n}"
    for m in modules:
        module = importlib.import_module(m)
        for n in public_names(module):
            obj = getattr(module, n)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                out.setdefault(id(obj), f"{m}.{n}")
    return out


def module_page(name: str, shared: dict[int, str], home: dict[int, str] | None = None) -> str:
    """reStructuredText of one module's page: its docstring, an autosummary of its own names,
    and links for the names it re-exports from the top level or from the public module that
    defines them (``home``, :func:`homes`)."""
    module = importlib.import_module(name)
    own, linked = [], []
    home = home or {}
    for n in public_names(module):
        obj = getattr(module, n)
        if inspect.ismodule(obj):
            linked.append(f":doc:`{obj.__name__}`")
        elif name != "anchordiv" and id(obj) in shared:
            linked.append(f":py:obj:`{n} <anchordiv.{shared[id(obj)]}>`")
        elif name != "anchordiv" and home.get(id(obj), f"{name}.{n}") != f"{name}.{n}":
            linked.append(f":py:obj:`{n} <{home[id(obj)]}>`")
        else:
            own.append(n)
    lines = [
        name,
        "=" * len(name),
        "",
        f".. automodule:: {name}",
        "   :no-members:",
        "   :no-index:",
        "",
        f".. currentmodule:: {name}",
        "",
    ]
    if own:
        lines += [".. autosummary::", "   :toctree: ../generated", "   :nosignatures:", ""]
        lines += [f"   {n}" for n in own] + [""]
    if linked:
        lines += ["Also here (documented on their own pages): " + ", ".join(linked) + ".", ""]
    return "\n".join(lines)


def write_reference(api_dir: Path) -> list[str]:
    """Write ``api_dir/modules/<module>.rst`` for every public module; stale pages are removed.
    Returns the module names."""
    out = Path(api_dir) / "modules"
    out.mkdir(parents=True, exist_ok=True)
    modules, shared = public_modules(), top_level()
    home = homes(modules)
    pages = {f"{m}.rst": module_page(m, shared, home) for m in modules}
    for old in out.glob("*.rst"):
        if old.name not in pages:
            old.unlink()
    for file, text in pages.items():
        path = out / file
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    documented = documented_names(api_dir)
    for stub in (Path(api_dir) / "generated").glob("*.rst"):  # names that left __all__
        if stub.stem not in documented:
            stub.unlink()
    return modules


def documented_names(api_dir: Path) -> set[str]:
    """Fully qualified names that the generated pages document (for the reference test)."""
    names = set()
    for page in (Path(api_dir) / "modules").glob("*.rst"):
        module = page.stem
        body = page.read_text(encoding="utf-8").split(".. autosummary::", 1)
        if len(body) == 2:
            names |= {
                f"{module}.{line.strip()}"
                for line in body[1].splitlines()
                if line.startswith("   ") and not line.strip().startswith(":") and line.strip()
            }
    return names


# --- docstring clean-up at build time (the sources stay plain, readable text) ----------------


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _escape_bars(line: str) -> str:
    """``|x|`` outside ````literals```` is a norm, not a reStructuredText substitution."""
    parts = line.split("``")
    return "``".join(p.replace("|", r"\|") if i % 2 == 0 else p for i, p in enumerate(parts))


def _language(block: list[str]) -> str:
    """``python`` for a block that compiles as Python, else ``text`` (formulas)."""
    import textwrap

    try:
        compile(textwrap.dedent("\n".join(block)), "<docstring>", "exec")
    except SyntaxError:
        return "text"
    return "python"


def code_examples(lines: list[str]) -> list[str]:
    """Mark the indented examples of plain-text docstrings as Python code blocks: a block indented
    by 4 or more after a blank line that follows an unindented paragraph (not a list, a
    directive, a field of napoleon's numpydoc output or a ``::`` paragraph) becomes
    ``.. code-block:: python``.  Bars in prose are
    escaped (norms like ``|∂z/∂θ|``)."""
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        prev = next((p for p in reversed(out) if p.strip()), "")
        starts_block = (
            i > 0
            and not lines[i - 1].strip()
            and _indent(line) >= 4
            and line.strip()
            and _indent(prev) == 0
            and not prev.rstrip().endswith("::")
            and not prev.lstrip().startswith(("* ", "- ", "..", "|", "+", ":"))
        )
        if starts_block:
            block, base = [], _indent(line)
            while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) >= base):
                block.append(lines[i])
                i += 1
            while block and not block[-1].strip():
                block.pop()
            out += [f".. code-block:: {_language(block)}", ""] + block + [""]
            continue
        out.append(_escape_bars(line) if _indent(line) < 4 else line)
        i += 1
    return out


def process_docstring(app, what, name, obj, options, lines) -> None:
    """Drop a builtin type's docstring shown for a constant; mark code examples."""
    builtin = getattr(type(obj), "__doc__", None)
    if (
        what in ("data", "attribute")
        and isinstance(builtin, str)
        and "\n".join(lines).strip() == builtin.strip()
    ):
        lines[:] = []
        return
    lines[:] = code_examples(lines)


def setup(app):
    app.connect("autodoc-process-docstring", process_docstring)
    return {"parallel_read_safe": True}
