"""The reference is a numpydoc reference: every entry-point callable carries its sections.

Rule: the *entry-point callables* are the functions and classes named in ``anchordiv.__all__`` and
in the ``__all__`` of each subpackage's ``__init__.py`` (the public API; every other module is
private), counted once each, by object.  A function counts when its docstring has both a
``Parameters`` and a ``Returns`` (or ``Yields``) numpydoc section; a class counts when it has
``Parameters`` (its constructor's; classes return nothing) or ``Attributes``, or when its
constructor takes no parameters at all; a function without parameters needs only ``Returns``.
A callable whose own body raises (a ``raise`` of an exception, not a re-raise, outside nested
functions) also needs ``Raises``.  Every entry-point callable must count: the reference renders
these docstrings and nothing else."""

import ast
import importlib
import inspect
import pkgutil
import textwrap

import anchordiv as ad


def public_callables() -> dict[str, object]:
    packages = ["anchordiv"] + sorted(
        i.name
        for i in pkgutil.walk_packages(ad.__path__, "anchordiv.")
        if i.ispkg and not any(p.startswith("_") for p in i.name.split("."))
    )
    seen: dict[int, tuple[str, object]] = {}
    for name in packages:
        module = importlib.import_module(name)
        for n in getattr(module, "__all__", ()):
            obj = getattr(module, n)
            if callable(obj) and not inspect.ismodule(obj) and id(obj) not in seen:
                seen[id(obj)] = (f"{name}.{n}", obj)
    return dict(seen.values())


def has_section(doc: str, title: str) -> bool:
    return f"\n{title}\n{'-' * len(title)}\n" in f"\n{doc}\n"


def counts(obj) -> bool:
    doc = inspect.getdoc(obj) or ""
    if inspect.isclass(obj):
        try:
            takes = bool(inspect.signature(obj).parameters)
        except (TypeError, ValueError):
            takes = True
        return has_section(doc, "Parameters") or has_section(doc, "Attributes") or not takes
    try:
        takes = bool(inspect.signature(obj).parameters)
    except (TypeError, ValueError):
        takes = True
    return (has_section(doc, "Parameters") or not takes) and (
        has_section(doc, "Returns") or has_section(doc, "Yields")
    )


def raises_itself(obj) -> bool:
    """Whether ``obj``'s own body (a class: its ``__init__`` defined in anchordiv) raises an
    exception: a ``raise X`` outside nested functions and classes."""
    fn = inspect.unwrap(obj.__init__ if inspect.isclass(obj) else obj)
    if not (getattr(fn, "__module__", None) or "").startswith("anchordiv"):
        return False
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False

    def walk(node) -> bool:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            if (isinstance(child, ast.Raise) and child.exc is not None) or walk(child):
                return True
        return False

    return walk(tree.body[0])


def test_entry_point_callables_have_parameters_and_returns():
    """Every entry-point callable has Parameters and Returns (a class: Parameters or
    Attributes)."""
    names = public_callables()
    missing = sorted(n for n, obj in names.items() if not counts(obj))
    assert not missing, f"{len(missing)} of {len(names)} entry-point callables lack them: {missing}"


def test_entry_point_callables_that_raise_say_so():
    """A function that raises documents it under Raises (what it raises, and when)."""
    names = public_callables()
    missing = sorted(
        n
        for n, obj in names.items()
        if raises_itself(obj) and not has_section(inspect.getdoc(obj) or "", "Raises")
    )
    assert not missing, f"raise but have no Raises section: {missing}"


def test_the_rules_see_a_missing_section():
    """The rules fail a docstring without the sections and pass one with them."""

    def bare(x):
        """Just a sentence."""
        raise ValueError(x)

    def complete(x):
        """Do it.

        Parameters
        ----------
        x : int
            Input.

        Returns
        -------
        int
            Output.

        Raises
        ------
        ValueError
            Always.
        """
        raise ValueError(x)

    bare.__module__ = complete.__module__ = "anchordiv.example"
    assert not counts(bare) and counts(complete)
    assert raises_itself(bare) and raises_itself(complete)
    assert not has_section(inspect.getdoc(bare), "Raises")


def test_the_family_protocol_is_documented():
    """A family author reads the protocol: every member the base class has says what it is, and
    the protocol module's docstring names every member a family must define."""
    import anchordiv.adaptation.protocol as protocol

    undocumented = [
        n
        for n, m in vars(protocol.Family).items()
        if not n.startswith("_")
        and (callable(m) or isinstance(m, (property, classmethod)))
        and not (inspect.getdoc(getattr(m, "__func__", m)) or "").strip()
    ]
    assert not undocumented, f"Family members without a docstring: {undocumented}"
    required = protocol.Family.required_members()
    assert all(f"~Family.{m}`" in protocol.__doc__ for m in required), required


def test_every_top_level_callable_has_them():
    missing = [n for n in ad.__all__ if callable(getattr(ad, n)) and not counts(getattr(ad, n))]
    assert not missing, f"anchordiv.{missing} lack Parameters/Returns"


def test_adapt_documents_every_option():
    """Every option ``ad.adapt`` accepts is named in its docstring's parameter sections."""
    from anchordiv.adaptation import COMMON, METHOD_OPTIONS, OPTIONS

    doc = inspect.getdoc(ad.adapt)
    options = (
        set(COMMON)
        | {o for v in OPTIONS.values() for o in v}
        | {o for v in METHOD_OPTIONS.values() for o in v}
    )
    undocumented = sorted(
        o
        for o in options
        if f"\n{o} :" not in doc
        and f", {o} :" not in doc
        and f"\n{o}," not in doc
        and f", {o}," not in doc
    )
    assert not undocumented, f"ad.adapt does not document {undocumented}"


def test_source_names_no_issue_numbers():
    """Docstrings and comments say what a thing is: the tracker's issue numbers are history, and
    they belong in the changelog and commit messages, not in the source."""
    import pathlib
    import re

    src = pathlib.Path(ad.__file__).parent
    pattern = re.compile(r"\bissues? #?\d+|\(#\d+\)", re.IGNORECASE)
    found = [
        f"{path.relative_to(src)}:{i}: {line.strip()}"
        for path in sorted(src.rglob("*.py"))
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert not found, "\n".join(found)
