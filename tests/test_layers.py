"""The package's layers: each module imports only its own layer or the ones below it (also
lazily, inside functions, and by name: ``importlib.import_module("...")``, ``__import__``,
string module paths in lazy-import tables), and the module import graph has no cycle.

Function-local imports count as edges, for the layers and for cycles alike: such an import runs
the module when the function is called, so a circle closed only at call time is a circle all
the same (it hides an upward dependency, and the import order then decides what works).
Importing ``a.b.c`` runs the packages ``a`` and ``a.b`` first, so they are edges too.  Imports
under ``if TYPE_CHECKING:`` never run (they serve annotations only) and are no edges.

Layers, bottom → top: base modules (errors, threads, plots, provenance) < anchors < io (saved
models and bundles) < data < retrieval < adaptation (its priors included) < checks < scale < evaluation < app.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import anchordiv

ROOT = Path(anchordiv.__file__).parent
LAYERS = (
    "base",
    "anchors",
    "io",
    "data",
    "retrieval",
    "adaptation",
    "checks",
    "scale",
    "evaluation",
    "app",
)
BASE = {
    "errors",
    "threads",
    "heap",
    "plots",
    "progress",
    "provenance",
    "_validate",
    "_tolerance",
    "_safeio",
}


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def layer(mod: str) -> str:
    """The layer of ``anchordiv.x.…``; the package itself (its public re-exports) is 'top'."""
    parts = mod.split(".")
    if len(parts) == 1:
        return "top"
    head = parts[1]
    if head in BASE:
        return "base"
    assert head in LAYERS, f"{mod}: module outside the layers {LAYERS} (add it to one)"
    return head


def imports(path: Path) -> set[str]:
    """Every anchordiv module ``path`` imports, at module level or inside functions (a
    function-local import is an edge too: it runs the imported module, and a circle closed only
    at call time is still a circle), by an import statement or by name:
    ``importlib.import_module("...")`` / ``__import__("...")`` (an f-string's constant head
    names every module of that package), and string module paths in tables (``"anchordiv.x"``
    or a relative ``".x"``, as lazy-import tables hold) outside docstrings."""
    mod = module_name(path)
    pkg = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    found = set()
    tree = ast.parse(path.read_text())
    docs = docstring_nodes(tree)
    typing_only = type_checking_nodes(tree)
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "anchordiv"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                target = resolve("." * node.level + (node.module or ""), pkg)
            elif node.module and node.module.split(".")[0] == "anchordiv":
                target = node.module
            else:
                continue
            subs = {f"{target}.{a.name}" for a in node.names if is_module(f"{target}.{a.name}")}
            found |= subs if len(subs) == len(node.names) else subs | {target}
        elif isinstance(node, ast.Call) and node.args and is_import_call(node.func):
            arg = node.args[0]
            if isinstance(arg, ast.JoinedStr) and arg.values:  # f".commands.{name}"
                head = arg.values[0]
                if isinstance(head, ast.Constant) and isinstance(head.value, str):
                    package = resolve(head.value.rstrip("."), pkg)
                    if package and is_module(package):
                        found |= {m for m in all_modules() if m.startswith(package + ".")}
        elif (
            isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
        ):
            target = resolve(node.value, pkg)
            if target and is_module(target):
                found.add(target)
    # importing a.b.c runs a and a.b first: the parents of every target are imported too
    found |= {".".join(f.split(".")[:i]) for f in found for i in range(2, f.count(".") + 1)}
    # a submodule always runs its parent packages' __init__ first: not an edge of its own
    return {f for f in found if f != mod and not mod.startswith(f + ".")}


def type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of the nodes under ``if TYPE_CHECKING:``: imports for annotations only, which never
    run (the type checker reads them; Python does not), so they are no edge of the graph."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and (
            (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
            or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")
        ):
            out |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return out


def resolve(name: str, pkg: str) -> str | None:
    """The absolute anchordiv module a (possibly relative) dotted name means inside ``pkg``, or
    None where it is not an anchordiv module path."""
    if not re.fullmatch(r"\.*[A-Za-z_]\w*(\.[A-Za-z_]\w*)*|\.+", name):
        return None
    level = len(name) - len(name.lstrip("."))
    if not level:
        return name if name.split(".")[0] == "anchordiv" else None
    base = pkg.split(".")
    base = base[: len(base) - (level - 1)]
    rest = name[level:]
    return ".".join(base + ([rest] if rest else []))


def is_import_call(func: ast.expr) -> bool:
    """``importlib.import_module(...)``, ``import_module(...)`` or ``__import__(...)``."""
    if isinstance(func, ast.Attribute):
        return func.attr == "import_module"
    return isinstance(func, ast.Name) and func.id in ("import_module", "__import__")


def docstring_nodes(tree: ast.AST) -> set[int]:
    """ids of the docstring constants of ``tree`` (module, classes, functions)."""
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docs.add(id(first.value))
    return docs


def all_modules() -> list[str]:
    return [module_name(p) for p in ROOT.rglob("*.py")]


def is_module(mod: str) -> bool:
    path = ROOT.parent / Path(*mod.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def graph() -> dict[str, set[str]]:
    return {module_name(p): imports(p) for p in ROOT.rglob("*.py")}


def test_every_import_goes_down_the_layers():
    bad = []
    for mod, deps in graph().items():
        here = layer(mod)
        if here == "top":
            continue
        for dep in deps:
            there = layer(dep)
            if there == "top" and dep == "anchordiv":
                bad.append(f"{mod} imports the package top level")
            elif there != "top" and LAYERS.index(there) > LAYERS.index(here):
                bad.append(f"{mod} ({here}) imports {dep} ({there})")
    assert not bad, "upward imports:\n" + "\n".join(sorted(bad))


def test_module_import_graph_has_no_cycle():
    g = graph()
    state, stack, cycles = {}, [], []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for dep in sorted(g.get(m, ())):
            if dep not in g or dep == "anchordiv":
                continue
            if state.get(dep) == 1:
                cycles.append(" → ".join(stack[stack.index(dep) :] + [dep]))
            elif dep not in state:
                visit(dep)
        stack.pop()
        state[m] = 2

    for m in sorted(g):
        if m not in state:
            visit(m)
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_the_graph_sees_imports_by_name():
    """The lazy-import table of ``anchordiv.__getattr__`` and the CLI's
    ``importlib.import_module(f".commands.{name}", __package__)`` are edges."""
    g = graph()
    assert {"anchordiv.app.studies", "anchordiv.app", "anchordiv.data"} <= g["anchordiv"]
    assert {"anchordiv.app.commands", "anchordiv.app.commands.fit"} <= g["anchordiv.app.cli"]
    assert resolve(".commands.fit", "anchordiv.app") == "anchordiv.app.commands.fit"
    assert resolve("..errors", "anchordiv.adaptation.families") == "anchordiv.adaptation.errors"
    assert resolve("anchordiv.x", "anchordiv") == "anchordiv.x"
    assert resolve("numpy", "anchordiv") is None and resolve("a b", "anchordiv") is None


def test_annotation_only_imports_are_no_edges():
    """The studies' source module names the driver's Context under ``if TYPE_CHECKING:`` (an
    annotation): no edge; its real imports are."""
    g = graph()
    assert "anchordiv.app.studies.main_job" not in g["anchordiv.app.studies._source"]
    assert "anchordiv.app.studies._source" in g["anchordiv.app.studies.main_job"]


#: the adaptation modules that run inference (the methods and their runners, the entry point)
RUNNERS = {f"anchordiv.adaptation.{m}" for m in ("api", "methods", "nuts", "svi")}


def closure(g: dict[str, set[str]], mod: str) -> set[str]:
    """Every module ``mod`` imports, directly or through others."""
    seen, todo = set(), [mod]
    while todo:
        for dep in g.get(todo.pop(), ()):
            if dep not in seen and dep != "anchordiv":
                seen.add(dep)
                todo.append(dep)
    return seen


def test_the_family_protocol_stands_below_the_runners():
    """``adaptation.protocol`` (what a family is) imports no inference method or runner, not even
    through another module: ``Family.update`` calls the exact update of ``adaptation.update``,
    which ``ad.Exact().run`` calls too."""
    reached = closure(graph(), "anchordiv.adaptation.protocol")
    assert not reached & RUNNERS, sorted(reached & RUNNERS)
    assert "anchordiv.adaptation.update" in reached


def test_adaptation_never_imports_the_layers_above():
    above = set(LAYERS[LAYERS.index("adaptation") + 1 :])
    bad = [
        f"{m} imports {d}"
        for m, deps in graph().items()
        if layer(m) == "adaptation"
        for d in deps
        if layer(d) in above
    ]
    assert not bad, "\n".join(bad)


def test_no_name_shadows_a_module():
    """``pkg.name`` is the module ``pkg/name.py`` for every package: a re-exported function of
    the same name would hide it (``from anchordiv.retrieval import divergence``)."""
    import importlib
    import types

    bad = []
    for path in ROOT.rglob("__init__.py"):
        pkg = importlib.import_module(module_name(path))
        for sub in path.parent.iterdir():
            name = sub.stem if sub.suffix == ".py" else sub.name
            if name.startswith("_") or not is_module(f"{pkg.__name__}.{name}"):
                continue
            value = getattr(pkg, name, None)
            if value is not None and not isinstance(value, types.ModuleType):
                bad.append(f"{pkg.__name__}.{name} is {type(value).__name__}, not the module")
    assert not bad, "\n".join(bad)


def private_uses(path: Path) -> list[str]:
    """Private names (``_x``) of other anchordiv modules that ``path`` imports or reaches as
    ``module._x`` / ``obj._x`` on an imported module."""
    tree = ast.parse(path.read_text())
    mod = module_name(path)
    modules, bad = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (
            node.level or (node.module or "").startswith("anchordiv")
        ):
            for a in node.names:
                if a.name.startswith("_") and a.name != "__version__":
                    bad.append(f"{mod}: from {'.' * node.level}{node.module or ''} import {a.name}")
                modules.add(a.asname or a.name)
        elif isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names if a.name.startswith("anchordiv")}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            bad.append(f"{mod}: {node.value.id}.{node.attr}")
    return bad


def test_no_private_name_is_used_across_modules():
    bad = [b for p in ROOT.rglob("*.py") for b in private_uses(p)]
    assert not bad, "\n".join(sorted(set(bad)))


#: ArviZ's packages (0.x: arviz; 1.x: arviz plus arviz_base, arviz_stats, arviz_plots)
ARVIZ = {"arviz", "arviz_base", "arviz_stats", "arviz_plots"}


def test_only_the_adapter_imports_arviz():
    """``anchordiv.checks.arviz`` is the library's one contact with ArviZ (it switches on the
    installed major): no other module imports an ArviZ package, at module level or inside a
    function."""
    adapter = ROOT / "checks" / "arviz.py"
    bad = []
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            if path != adapter and any(n.split(".")[0] in ARVIZ for n in names):
                bad.append(f"{module_name(path)}:{node.lineno}")
    assert not bad, "ArviZ imported outside anchordiv.checks.arviz: " + ", ".join(bad)
    assert "import arviz as az" in adapter.read_text()


def kind_literals(path: Path, kinds: set) -> list[str]:
    """String constants of ``path`` outside docstrings that equal one of ``kinds``."""
    tree = ast.parse(path.read_text())
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docs.add(id(first.value))
    return [
        f"{module_name(path)}:{node.lineno} {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docs
        and node.value in kinds
    ]


#: the one kind literal left in the checks layer: compare_priors' default kind
KIND_LITERALS_ALLOWED: set[str] = set()


def test_no_built_in_kind_literal_in_checks_or_evaluation():
    """What a family knows lives in its module (its ``hooks``): the checks and evaluation
    layers name no built-in kind (docstrings may)."""
    from anchordiv.adaptation.registry import FAMILIES, is_builtin

    kinds = {kind for kind, fam in FAMILIES.items() if is_builtin(fam)}
    assert {"gaussian", "spectral", "mixture"} <= kinds
    bad = [
        hit
        for layer_dir in ("checks", "evaluation")
        for path in sorted((ROOT / layer_dir).rglob("*.py"))
        if module_name(path) not in KIND_LITERALS_ALLOWED
        for hit in kind_literals(path, kinds)
    ]
    assert not bad, "built-in kind literals:\n" + "\n".join(bad)
