"""The Examples sections of the docstrings run as doctests (default tier).

Every module of anchordiv — the entry points the API reference documents
(``docs/_ext/apigen.py``), the modules that define their names, and the private modules, whose
examples a maintainer reads — is searched for ``>>>`` examples (the command-line modules,
documented from their --help, aside); each must reproduce its shown output
(``NORMALIZE_WHITESPACE`` and ``ELLIPSIS``).  Examples use tiny data (d ≤ 8, a few rows) so
the whole run stays well under a minute."""

import doctest
import importlib
import pkgutil
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import anchordiv as ad

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
import apigen  # noqa: E402

FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS


def defining_modules() -> list[str]:
    """The public modules, every anchordiv module that defines one of their names, and every
    other module of anchordiv that imports here (an optional dependency missing: left out)."""
    names = set(apigen.public_modules())
    for name in list(names):
        module = importlib.import_module(name)
        for n in apigen.public_names(module):
            owner = getattr(getattr(module, n), "__module__", None)
            if isinstance(owner, str) and owner.startswith("anchordiv"):
                names.add(owner)
    for info in pkgutil.walk_packages(ad.__path__, "anchordiv."):
        if info.name.startswith(apigen.SKIP) or info.name == "anchordiv.deprecated":
            continue
        try:
            importlib.import_module(info.name)
        except ImportError:
            continue
        names.add(info.name)
    return sorted(names)


def _tests(name: str) -> list[doctest.DocTest]:
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    return [t for t in finder.find(module, name, globs={"ad": ad, "np": np}) if t.examples]


MODULES = defining_modules()


def test_the_public_api_has_examples():
    count = sum(len(_tests(m)) for m in MODULES)
    assert count >= 40, f"only {count} docstrings with examples"


@pytest.mark.parametrize("name", MODULES)
def test_examples_run(name):
    tests = _tests(name)
    if not tests:
        pytest.skip("no examples in this module")
    runner, out = doctest.DocTestRunner(optionflags=FLAGS), []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # examples show results, not warnings
        for test in tests:
            runner.run(test, out=out.append)
    assert not runner.failures, "".join(out)
