"""The developer guide's call paths (docs/guides/internals.md) name the source, never a line.

Every ``path.py::name`` on the page is defined in ``src/anchordiv/path.py``; every hop of the
``adapt`` and ``infer`` paths is run by a traced call of it (``tests/tracing.py``); the counts
under **Traced** are that call's counts today."""

import re
from pathlib import Path

import numpy as np
import pytest

import anchordiv as ad
from tracing import trace

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "guides" / "internals.md"
SRC = ROOT / "src" / "anchordiv"
#: ``adaptation/pipeline.py::adapt``; a dotted name (``NIWPrior.exact``) is checked by its last part
REFERENCE = re.compile(r"([\w/]+\.py)::([A-Za-z_][\w.]*)")
TRACED = re.compile(r"\*\*Traced\*\* .*?(\d+) files, (\d+) cross-module calls", re.S)


def sections() -> dict[str, str]:
    """The page's ``## `ad.NAME(...)` `` sections by NAME."""
    parts = re.split(r"^## `ad\.(\w+)\(.*$", PAGE.read_text(), flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def references(text: str) -> list[tuple[str, str]]:
    return REFERENCE.findall(text)


def defines(path: str, name: str) -> bool:
    short = name.rsplit(".", 1)[-1]
    text = (SRC / path).read_text()
    return re.search(rf"^\s*(async\s+)?(def|class) {re.escape(short)}\b", text, re.M) is not None


def test_the_page_has_references():
    s = sections()
    assert set(s) >= {"top_k", "adapt", "infer"}, sorted(s)
    assert ("adaptation/api.py", "adapt") in references(s["adapt"])
    assert len(references(PAGE.read_text())) >= 30
    assert not re.search(r"\.py:\d+", PAGE.read_text()), "the page pins a line number"


@pytest.mark.parametrize("path, name", sorted(set(references(PAGE.read_text()))))
def test_reference_names_a_definition(path, name):
    assert (SRC / path).is_file(), f"docs/guides/internals.md: {path}::{name}: no file {path}"
    assert defines(path, name), (
        f"docs/guides/internals.md: {path}::{name}: {path} defines no {name}"
    )


def _data(d: int = 32):
    rng = np.random.default_rng(0)

    def unit(x):
        return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)

    return unit(rng.normal(size=(400, d))), unit(rng.normal(size=(20, d)))


def _adapt():
    broad, targets = _data()
    return lambda: ad.adapt("gaussian", broad, targets, tau=20.0)


def _infer():
    broad, targets = _data()
    prior = ad.adapt("gaussian", broad, targets, tau=20.0).prior
    method = ad.NUTS(num_samples=50, num_warmup=50, num_chains=1, progress=False)
    return lambda: ad.infer(prior, targets, method=method, tau=20.0)


def _top_k():
    broad, targets = _data()
    model = ad.fit("gaussian", targets, tau=20.0)
    return lambda: ad.top_k(model, broad[:8], broad, k=5)


def check_path(name: str, call) -> None:
    call()  # warm: compiled steps and memos as a second call finds them
    t = trace(call)
    text = sections()[name]
    if name != "top_k":  # top_k's hops into the model run inside the compiled step
        missed = [f"{p}::{n}" for p, n in references(text) if not t.entered(p, n.rsplit(".")[-1])]
        assert not missed, f"internals.md's {name} path names hops the call does not run: {missed}"
    files, cross = (int(v) for v in TRACED.search(text).groups())
    assert (len(t.files), t.cross) == (files, cross), (
        f"internals.md: traced ad.{name} is now {len(t.files)} files, {t.cross} cross-module "
        f"calls (the page says {files}, {cross}); files: {sorted(t.files)}"
    )


@pytest.mark.parametrize("name, make", [("top_k", _top_k), ("adapt", _adapt)])
def test_traced_path(name, make):
    check_path(name, make())


@pytest.mark.slow
def test_traced_nuts_path():
    check_path("infer", _infer())


#: issue 46's budget for a reader: files a traced call touches, entries per adaptation module
BUDGET = {"adapt": 10, "infer": 12}
MAX_ENTRIES = 2
MAX_ADAPTATION_MODULES = 22


def test_adaptation_package_size():
    modules = sorted((SRC / "adaptation").rglob("*.py"))
    assert len(modules) <= MAX_ADAPTATION_MODULES, [m.relative_to(SRC).as_posix() for m in modules]


def check_budget(name: str, call) -> None:
    call()
    t = trace(call)
    assert len(t.files) <= BUDGET[name], sorted(t.files)
    over = {f: n for f, n in t.entries.items() if f.startswith("adaptation/") and n > MAX_ENTRIES}
    assert not over, f"ad.{name}: adaptation modules entered more than {MAX_ENTRIES}x: {over}"


def test_adapt_budget():
    check_budget("adapt", _adapt())


@pytest.mark.slow
def test_infer_budget():
    check_budget("infer", _infer())
