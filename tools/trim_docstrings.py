"""Trim the docstrings of non-public names to their first paragraph (issue 46's rule: numpydoc
sections where a user reads them, a one-line summary on a private helper).

Usage (from the repository root; paths are files or folders)::

    PYTHONPATH=src python tools/trim_docstrings.py src/anchordiv/data src/anchordiv/io.py
    PYTHONPATH=src python tools/trim_docstrings.py --check src/anchordiv  # exit 1: would change

*Public* is where a user reads numpydoc (``tests/test_docstring_sections.py``'s rule): every
object in the ``__all__`` of ``anchordiv`` or of one of its non-private packages (a module
listed there is not expanded) and, for a public class (or the class of a public instance),
the methods, properties and nested classes that it and its anchordiv bases define, dunders
included (``--level packages``, the default).  ``--level top`` keeps only the objects of
``anchordiv.__all__``; ``--level modules`` also keeps all the API reference renders
(``docs/_ext/apigen.py``): the ``__all__`` of every non-private module and the public
functions and classes of a module named in an ``__all__``.  Public too, at every level: what
the README, the guides and the notebooks name (``--docs``: ``anchordiv.x.y``, ``ad.x.y``,
``from anchordiv.x import y``, ``module.y``).  Also kept whole: module docstrings, docstrings
with a ``>>>`` example (``tests/test_doctests.py`` runs those), and the docstrings of the
methods in :data:`KEEP_NAMES` (the CLI builds ``--help`` from them).  Every other function,
method or class docstring of more than one paragraph becomes its first paragraph (the
summary, which holds the shapes), re-wrapped only if the closing quotes would pass the line
length.

Only docstring string nodes change: each rewritten module is checked to parse to the same AST
once docstrings are removed, and a second run changes nothing."""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import pkgutil
import re
import sys
import textwrap
from pathlib import Path

LINE_LENGTH = 100
#: method names whose docstrings code reads: ``app/commands/_options.py`` turns the Parameters
#: of every family's ``from_anchors`` into the CLI's option help
KEEP_NAMES = frozenset({"from_anchors"})
LITERAL = re.compile(r"^(?P<prefix>[rRuU]*)(?P<quote>\"\"\"|'''|\"|')(?P<body>.*)(?P=quote)$", re.S)


# --- the public set ------------------------------------------------------------------------


def _is_private(dotted: str) -> bool:
    return any(p.startswith("_") for p in dotted.split("."))


def _add_class(cls: type, root: str, out: set[tuple[str, str]]) -> None:
    """``cls`` and the members it and its ``root`` bases define (all but ``_private`` ones)."""
    for base in cls.__mro__:
        if not getattr(base, "__module__", "").startswith(root):
            continue
        out.add((base.__module__, base.__qualname__))
        for name, member in vars(base).items():
            if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
                continue
            out.add((base.__module__, f"{base.__qualname__}.{name}"))
            if inspect.isclass(member) and member.__module__.startswith(root):
                _add_class(member, root, out)


def _add_object(obj: object, root: str, out: set[tuple[str, str]]) -> None:
    """Add a public function, class or instance (its class) of package ``root``."""
    obj = inspect.unwrap(obj) if callable(obj) else obj
    if inspect.isclass(obj):
        if obj.__module__.startswith(root):
            _add_class(obj, root, out)
    elif inspect.isfunction(obj) or inspect.ismethod(obj):
        module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
        if isinstance(module, str) and module.startswith(root) and qualname:
            out.add((module, qualname))
    elif type(obj).__module__.startswith(root):  # an instance: its methods are reachable
        _add_class(type(obj), root, out)


def public_set(root: str, level: str = "packages") -> set[tuple[str, str]]:
    """``{(module, qualname)}`` of the public objects of package ``root`` (module docstring);
    ``level``: "top" (``root.__all__``), "packages" (and its packages') or "modules" (and every
    module's, and the members of listed modules: all the API reference renders)."""
    broad = level == "modules"
    package = importlib.import_module(root)
    packages = [root] + [
        info.name
        for info in pkgutil.walk_packages(package.__path__, f"{root}.")
        if level != "top" and (info.ispkg or broad) and not _is_private(info.name)
    ]
    out: set[tuple[str, str]] = set()
    listed: set[str] = set()
    for name in packages:
        module = importlib.import_module(name)
        for n in getattr(module, "__all__", ()):
            obj = getattr(module, n)
            if inspect.ismodule(obj):
                listed.add(obj.__name__)
            else:
                _add_object(obj, root, out)
    for name in listed if broad else ():  # apigen renders their public functions and classes
        module = importlib.import_module(name)
        if hasattr(module, "__all__"):
            continue
        for n, obj in vars(module).items():
            if not n.startswith("_") and getattr(obj, "__module__", None) == name:
                _add_object(obj, root, out)
    return out


IMPORT = re.compile(r"^\s*from\s+([\w.]+)\s+import\s+(\([^)]*\)|[^\n#]+)", re.M)
IMPORT_AS = re.compile(r"^\s*import\s+([\w.]+)\s+as\s+(\w+)", re.M)
DOTTED = re.compile(r"\b([A-Za-z_]\w*)((?:\.[A-Za-z_]\w*)+)")


def _resolve(dotted: str) -> object | None:
    """The object a dotted ``package.module.name`` path names, or None."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            obj = getattr(obj, part, None)
        return obj
    return None


def referenced(root: str, docs: list[str]) -> set[tuple[str, str]]:
    """The public set of the objects the user-facing ``docs`` (README, guides, notebooks: text
    files or folders) name: ``root.x.y``, ``ad.x.y``, ``from root.x import y`` and ``y.z`` of an
    imported module ``y``."""
    out: set[tuple[str, str]] = set()
    texts = [p for p in files(docs, ("*.md", "*.py", "*.rst")) if "_build" not in p.parts]
    for path in texts:
        text = path.read_text(encoding="utf-8", errors="replace")
        aliases = {root: root, "ad": root}
        names: list[str] = []
        for module, alias in IMPORT_AS.findall(text):
            if module.split(".")[0] == root:
                aliases[alias] = module
        for module, imported in IMPORT.findall(text):
            if module.split(".")[0] != root:
                continue
            for item in imported.strip("()").replace("\n", " ").split(","):
                words = item.split()
                if words and words[0].isidentifier():
                    aliases[words[-1]] = f"{module}.{words[0]}"
                    names.append(f"{module}.{words[0]}")
        names += [aliases[a] + rest for a, rest in DOTTED.findall(text) if a in aliases]
        for dotted in names:
            parts = dotted.split(".")
            for cut in range(2, len(parts) + 1):  # every prefix: a class, then its method
                obj = _resolve(".".join(parts[:cut]))
                if obj is not None and not inspect.ismodule(obj):
                    _add_object(obj, root, out)
                    if inspect.isclass(obj) or callable(obj):
                        break
    return out


def module_name(path: Path) -> tuple[str, str]:
    """``(dotted module name, top package)`` of a file inside a package tree."""
    path = path.resolve()
    parts = [] if path.name == "__init__.py" else [path.stem]
    folder = path.parent
    while (folder / "__init__.py").exists():
        parts.insert(0, folder.name)
        folder = folder.parent
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    return ".".join(parts), parts[0]


# --- rewriting -----------------------------------------------------------------------------


def _strip_docstrings(text: str) -> str:
    """``ast.dump`` of module ``text`` with every docstring node removed (what must not change)."""
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


def _docstrings(tree: ast.Module):
    """``(qualname, name, docstring Constant node)`` of every class and function, depth first."""

    def walk(node: ast.AST, prefix: str):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                qualname = f"{prefix}{child.name}"
                body = child.body
                if (
                    isinstance(body[0], ast.Expr)
                    and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)
                ):
                    yield qualname, child.name, body[0].value
                inner = (
                    f"{qualname}." if isinstance(child, ast.ClassDef) else f"{qualname}.<locals>."
                )
                yield from walk(child, inner)
            elif isinstance(child, ast.stmt):
                yield from walk(child, prefix)

    yield from walk(tree, "")


def summary(node: ast.Constant, lines: list[str]) -> list[str] | None:
    """The source lines that replace docstring ``node`` by its first paragraph, or None when it
    has a single paragraph or its literal is not a plain (one-piece) string."""
    first, last = node.lineno - 1, node.end_lineno - 1
    head, tail = lines[first][: node.col_offset], lines[last][node.end_col_offset :]
    if head.strip() or tail.strip():
        return None  # shares its lines with other code
    source = "\n".join(lines[first : last + 1])[len(head) :]
    source = source[: len(source) - len(lines[last]) + node.end_col_offset]
    match = LITERAL.match(source)
    if not match or ast.literal_eval(source) != node.value:
        return None  # implicit concatenation or the like
    prefix, quote, body = match["prefix"], match["quote"], match["body"]
    raw = body.split("\n")
    para: list[str] = []
    for line in raw:
        if not line.strip():
            if para:
                break
            continue
        para.append(line)
    rest = "\n".join(raw[len(para) :]).strip() if para else ""
    if not para or not rest:
        return None
    indent = " " * node.col_offset
    para = [para[0].strip()] + [ln.strip() for ln in para[1:]]
    opening = body[: len(body) - len(body.lstrip())]  # text starts on the quote line or below
    if "\n" in opening:
        out = [f"{indent}{prefix}{quote}"] + [f"{indent}{ln}" for ln in para]
        out[-1] += quote
    else:
        out = [f"{indent}{prefix}{quote}{para[0]}"] + [f"{indent}{ln}" for ln in para[1:]]
        out[-1] += quote
    if max(len(ln) for ln in out) > LINE_LENGTH:
        text = " ".join(para)
        wrapped = textwrap.wrap(
            f"{prefix}{quote}{text}{quote}",
            width=LINE_LENGTH - len(indent),
            break_long_words=False,
            break_on_hyphens=False,
        )
        out = [f"{indent}{ln}" for ln in wrapped]
    if out[-1].endswith(f"::{quote}"):  # a literal block's introduction lost its block
        out[-1] = out[-1][: -len(quote) - 2] + f".{quote}"
    return out


def _words(doc: str, first: bool = False) -> list[str]:
    """The words of ``doc`` (of its first paragraph with ``first``; a closing ``::`` as ``.``)."""
    text = re.split(r"\n\s*\n", inspect.cleandoc(doc))[0] if first else doc
    words = text.split()
    if first and words and words[-1].endswith("::"):
        words[-1] = words[-1][:-2] + "."
    return words


def trim_source(text: str, module: str, public: set[tuple[str, str]]) -> str:
    """``text`` with the docstrings of non-public names cut to their first paragraph."""
    tree = ast.parse(text)
    lines = text.split("\n")
    edits, before = [], {}
    for i, (qualname, name, node) in enumerate(_docstrings(tree)):
        if (module, qualname) in public or name in KEEP_NAMES or ">>>" in node.value:
            continue
        new = summary(node, lines)
        if new is not None:
            edits.append((node.lineno - 1, node.end_lineno - 1, new))
            before[i] = node.value
    for first, last, new in sorted(edits, reverse=True):
        lines[first : last + 1] = new
    out = "\n".join(lines)
    if out != text and _strip_docstrings(out) != _strip_docstrings(text):
        raise RuntimeError(f"{module}: trimming would change code, not only docstrings")
    for i, (qualname, _, node) in enumerate(_docstrings(ast.parse(out))):
        if i in before and _words(node.value) != _words(before[i], first=True):
            raise RuntimeError(f"{module}.{qualname}: the summary would not be the first paragraph")
    return out


def files(paths: list[str], patterns: tuple[str, ...] = ("*.py",)) -> list[Path]:
    """The files under ``paths`` (files or folders) that match ``patterns``."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out += sorted(f for pattern in patterns for f in p.rglob(pattern))
        elif p.exists():
            out.append(p)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="Python files or folders inside a package")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if needed")
    parser.add_argument(
        "--docs",
        nargs="*",
        default=["README.md", "docs", "notebooks"],
        help="user-facing texts whose named objects stay public (default: %(default)s)",
    )
    parser.add_argument(
        "--level",
        choices=("top", "packages", "modules"),
        default="packages",
        help="whose __all__ is public (module docstring; default: %(default)s)",
    )
    args = parser.parse_args(argv)
    publics: dict[str, set[tuple[str, str]]] = {}
    total, changed = 0, 0
    for path in files(args.paths):
        module, root = module_name(path)
        if root not in publics:
            publics[root] = public_set(root, args.level) | referenced(root, args.docs)
        text = path.read_text(encoding="utf-8")
        new = trim_source(text, module, publics[root])
        removed = text.count("\n") - new.count("\n")
        if new != text:
            changed += 1
            total += removed
            print(f"{path}: {removed} lines {'to remove' if args.check else 'removed'}")
            if not args.check:
                path.write_text(new, encoding="utf-8")
    print(f"{changed} files, {total} lines {'to remove' if args.check else 'removed'}")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
