"""The release's bookkeeping: one version (``anchordiv.__version__``, read by setuptools), a
changelog of one section per release whose newest is that version and which lists every removed
path with a replacement that exists, no import hook, and a pinned stack (``constraints.txt``) that
pins every requirement inside pyproject's ranges, that ``make setup`` installs, and that the
running environment matches."""

from __future__ import annotations

import re
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import anchordiv as ad
from anchordiv.app.cli import main

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))


#: PyTorch's pins, apart from constraints.txt (the README's CPU route keeps an installed torch)
TORCH_LOCK = ROOT / "constraints-torch.txt"
#: the distributions that are PyTorch's build: only in TORCH_LOCK
TORCH_STACK = re.compile(r"^(torch|torchvision|triton|nvidia-.+|cuda-.+)$")


def pins(lock: Path = ROOT / "constraints.txt") -> dict[str, str]:
    out: dict[str, str] = {}
    for line in lock.read_text("utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, _, pinned = line.partition("==")
        assert pinned and re.fullmatch(r"[\w.+!-]+", pinned), f"not an exact pin: {line!r}"
        assert canonicalize_name(name) not in out, f"pinned twice: {name}"
        out[canonicalize_name(name)] = pinned
    return out


#: requirements only the tests and the docs need: none of them reaches a user through ``all``
DEV_TOOLS = {
    "pytest",
    "pytest-timeout",
    "pytest-xdist",
    "ruff",
    "mypy",
    "sphinx",
    "myst-nb",
    "furo",
}


def extras_problems(requires: list[str]) -> list[str]:
    """What is wrong with a distribution's requirements (``Requires-Dist`` lines, markers and
    all, or pyproject's dependencies with ``; extra == "name"`` appended): an exact pin (``==``,
    ``===``: pip would replace an installed torch that does not match it, the CPU build
    included) anywhere, a development tool reached from the ``all`` extra."""
    problems, by_extra = [], {}
    for line in requires:
        req = Requirement(line)
        if any(s.operator in ("==", "===") for s in req.specifier):
            problems.append(f"exact pin (ranges only; pins live in constraints.txt): {line}")
        extra = next(
            (e for e in ("all", *EXTRAS) if req.marker and req.marker.evaluate({"extra": e})),
            None,
        )
        by_extra.setdefault(extra, []).append(req)

    def reached(extra: str, seen: set) -> set:
        out = set()
        for req in by_extra.get(extra, []):
            if canonicalize_name(req.name) == "anchordiv":
                for e in sorted(req.extras - seen):
                    out |= reached(e, seen | {e})
            else:
                out.add(canonicalize_name(req.name))
        return out

    tools = reached("all", {"all"}) & DEV_TOOLS
    if tools:
        problems.append(f"the all extra installs development tools: {sorted(tools)}")
    return problems


#: the optional-dependency groups pyproject declares
EXTRAS = tuple(PYPROJECT["project"]["optional-dependencies"])


def pyproject_requires() -> list[str]:
    """pyproject's requirements as ``Requires-Dist`` lines (an extra's with its marker)."""
    project = PYPROJECT["project"]
    return list(project["dependencies"]) + [
        f'{r}; extra == "{extra}"'
        for extra, rs in project["optional-dependencies"].items()
        for r in rs
    ]


def test_extras_take_ranges_and_all_is_what_users_run():
    assert extras_problems(pyproject_requires()) == []
    assert {"all", "dev", "test", "docs", "data"} <= set(EXTRAS)
    # the checker sees what it guards against
    assert extras_problems(['torch==2.14.1; extra == "data"'])
    assert extras_problems(['anchordiv[test]; extra == "all"', 'ruff>=0.1; extra == "test"'])


def test_one_version_from_one_source(capsys):
    assert ad.__version__ == "0.5.1"
    project = PYPROJECT["project"]
    assert "version" not in project and project["dynamic"] == ["version"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "anchordiv.__version__"
    }
    try:
        main(["--version"])
    except SystemExit:
        pass
    assert capsys.readouterr().out.strip() == f"anchordiv {ad.__version__}"
    conf = (ROOT / "docs" / "conf.py").read_text("utf-8")  # the docs' title reads it too
    assert "release = version = anchordiv.__version__" in conf
    assert 'html_title = f"anchordiv {release}"' in conf


def test_the_changelog_has_one_section_per_release_the_newest_this_version():
    changelog = (ROOT / "CHANGELOG.md").read_text("utf-8")
    releases = re.findall(r"^## (.*)$", changelog, re.M)
    assert re.fullmatch(rf"{re.escape(ad.__version__)} \(\d{{4}}-\d{{2}}-\d{{2}}\)", releases[0])
    versions = [r.split()[0] for r in releases]
    assert len(set(versions)) == len(versions), versions
    assert all(re.fullmatch(r"\d+\.\d+\.\d+", v) for v in versions), versions
    assert "unreleased" not in changelog.lower()


def removed_rows(table: str) -> list[tuple[str, str]]:
    """``(old, replacement)`` of the rows of the CHANGELOG table whose header starts ``table``."""
    text = (ROOT / "CHANGELOG.md").read_text("utf-8")
    block = text.split(f"| {table} |", 1)[1].split("\n\n", 1)[0]
    rows = [line.split("|")[1:3] for line in block.splitlines()[2:]]
    return [(old.strip().strip("`"), new.strip().split("`")[1]) for old, new in rows]


def test_every_removed_module_path_is_gone_and_its_replacement_exists():
    """The 56 module paths 0.4.0 shimmed: each old path is a ModuleNotFoundError, each
    replacement a module (found without importing it: ``anchordiv.scale.dask`` needs dask)."""
    import importlib
    import importlib.util

    rows = removed_rows("removed module path")
    assert len(rows) == 56
    for old, new in rows:
        try:
            importlib.import_module(old)
        except ModuleNotFoundError:
            pass
        else:
            raise AssertionError(f"{old} still imports")
        assert importlib.util.find_spec(new) is not None, new


def test_every_removed_top_level_name_is_gone_and_its_replacement_exists():
    import importlib

    rows = removed_rows("removed top-level name")
    assert len(rows) == 15
    for old, new in rows:
        name = old.removeprefix("ad.")
        assert name not in ad.__all__
        try:
            getattr(ad, name)
        except AttributeError as err:
            assert f"has no attribute {name!r}" in str(err)
        else:
            raise AssertionError(f"ad.{name} still resolves")
        module, _, attr = new.rpartition(".")
        assert attr == name and hasattr(importlib.import_module(module), name), new


def test_the_top_level_namespace_is_its_names_and_two_lazy_subpackages():
    """Unknown names are AttributeErrors; the former module paths that are functions now stay
    functions; ``ad.data`` and ``ad.studies`` import on first use."""
    import types

    try:
        ad.nothing_here  # noqa: B018
    except AttributeError as err:
        assert "has no attribute 'nothing_here'" in str(err)
    else:
        raise AssertionError("ad.nothing_here resolved")
    for name in ("adapt", "divergence", "evaluate", "sbc"):
        assert callable(getattr(ad, name)) and not isinstance(getattr(ad, name), types.ModuleType)
    assert ad.studies.__name__ == "anchordiv.app.studies"


def test_import_installs_no_hook_and_patches_nothing():
    """``import anchordiv`` leaves ``sys.meta_path`` as it was and gives ``Posterior`` only its
    own class: no finder, no metaclass, no method set from outside."""
    import subprocess

    code = (
        "import sys; before = list(sys.meta_path); import anchordiv; "
        "from anchordiv.adaptation import Posterior; "
        "assert sys.meta_path == before, sys.meta_path; "
        "assert type(Posterior) is type, type(Posterior); "
        "assert not hasattr(Posterior, 'inference_data'); print('ok')"
    )
    env = {**__import__("os").environ, "PYTHONPATH": str(Path(ad.__file__).parents[1])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_every_requirement_is_pinned_inside_its_range():
    pinned = pins() | pins(TORCH_LOCK)
    project = PYPROJECT["project"]
    reqs = list(project["dependencies"]) + [
        r
        for extra, rs in project["optional-dependencies"].items()
        for r in rs
        if canonicalize_name(Requirement(r).name) != "anchordiv"  # all, dev: other extras
    ]
    for line in reqs:
        req = Requirement(line)
        name = canonicalize_name(req.name)
        assert name in pinned, f"{req.name} is required but not in constraints.txt"
        assert req.specifier.contains(pinned[name], prereleases=True), (
            f"constraints.txt pins {req.name}=={pinned[name]} outside pyproject's {req}"
        )
    assert "anchordiv" not in pinned
    for tool in ("pip", "setuptools", "ruff", "mypy", "torchxrayvision"):
        assert tool in pinned


def test_the_environment_is_the_pinned_one():
    """What ``make setup`` installed is what constraints.txt says (a mismatch means the lock
    and the environment have drifted: rerun ``make setup``, or regenerate the lock).  A venv
    built from a lock of its own (``make test-arviz1`` writes ``.venv-arviz1/constraints.txt``,
    the pins less ArviZ's and xarray's) is held to that lock."""
    own = Path(sys.prefix) / "constraints.txt"
    drift = {}
    locks = pins(own) if own.is_file() else pins() | pins(TORCH_LOCK)
    for name, pinned in locks.items():
        try:
            got = version(name)
        except PackageNotFoundError:  # a platform-only dependency (torch's CUDA wheels)
            continue
        if got != pinned:
            drift[name] = (pinned, got)
    assert not drift, f"pinned vs installed: {drift}"


def test_make_setup_installs_the_pins_and_test_lints_first():
    make = (ROOT / "Makefile").read_text("utf-8")
    stamp = r"^\$\(STAMP\): pyproject.toml constraints.txt constraints-torch.txt Makefile$"
    assert re.search(stamp, make, re.M)
    installs = [line for line in make.splitlines() if "pip install" in line]
    # $(PIN1): constraints.txt less ArviZ's and xarray's pins (test-arviz1's ArviZ 1.x venv)
    assert installs and all("$(PIN)" in line or "$(PIN1)" in line for line in installs), installs
    assert "PIN     := -c constraints.txt -c constraints-torch.txt\n" in make
    assert "-e '.[all,dev]'" in make  # the tests' and docs' tools: dev, not all
    assert "grep -vE '^(arviz|xarray)==' constraints.txt > $(VENV1)/constraints.txt" in make
    lint = make.split("\nlint: setup\n", 1)[1].split("\n\n", 1)[0].split("\n")
    assert [line.strip() for line in lint] == [
        "$(BIN)/ruff check",
        "$(BIN)/ruff format --check",
        "$(BIN)/mypy",
    ]
    assert (
        "\ntest: lint\n\t$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist worksteal\n" in make
    )
    assert "\nTEST_WORKERS ?= auto\n" in make  # the tier on every core (pytest-xdist)
    assert "make test" in (ROOT / ".ci" / "run").read_text("utf-8")


def test_constraints_keep_an_installed_cpu_torch():
    """The README's CPU route (PyTorch's CPU build first, then ``pip install -c constraints.txt
    'anchordiv[data]'``) keeps the installed torch: constraints.txt pins nothing of PyTorch's
    build (a ``torch==2.14.1`` there made pip replace a 2.13.0+cpu with the CUDA build and ~3 GB
    of nvidia wheels), and the data extra's ranges admit a CPU build (a local version, ``+cpu``).
    ``make setup`` still installs the pinned torch, from constraints-torch.txt."""
    general, torch = pins(), pins(TORCH_LOCK)
    assert not [n for n in general if TORCH_STACK.match(n)], "a torch pin in constraints.txt"
    assert torch and all(TORCH_STACK.match(n) for n in torch), torch
    assert {"torch", "torchvision"} <= set(torch)
    data = [Requirement(r) for r in PYPROJECT["project"]["optional-dependencies"]["data"]]
    ranges = {canonicalize_name(r.name): r.specifier for r in data}
    for name, cpu in (("torch", "2.13.0+cpu"), ("torchvision", "0.28.0+cpu")):
        assert ranges[name].contains(cpu), f"the data extra's {name} range refuses {cpu}"
        assert ranges[name].contains(torch[name])
    assert "include CHANGELOG.md constraints.txt constraints-torch.txt" in (
        ROOT / "MANIFEST.in"
    ).read_text("utf-8")


def _stand_in_wheel(folder: Path, name: str, ver: str) -> Path:
    """A wheel of ``name==ver`` holding nothing but its metadata (a stand-in for an installed
    CPU build: pip's resolver sees only names, versions and requirements)."""
    import zipfile

    info = f"{name}-{ver}.dist-info"
    files = {
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {ver}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{k},,\n" for k in files) + f"{info}/RECORD,,\n"
    path = folder / f"{name}-{ver}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for k, v in files.items():
            z.writestr(k, v)
    return path


@pytest.mark.slow
def test_the_readme_cpu_route_keeps_an_installed_torch_in_a_clean_venv(tmp_path):
    """In a clean venv holding a CPU build (stand-ins of torch 2.13.0+cpu and torchvision
    0.28.0+cpu), pip's resolver with ``-c constraints.txt`` and the data extra's torch
    requirements installs nothing (no index: nothing could come); with the torch pins
    (constraints-torch.txt, what ``make setup`` adds) it would have to replace them.  pip's
    configuration files are off (``PIP_CONFIG_FILE=/dev/null``): the route on any machine."""
    import json
    import os
    import subprocess
    import venv

    venv.create(tmp_path / "v", with_pip=True)
    pip = [str(tmp_path / "v" / "bin" / "python"), "-m", "pip"]
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    wheels = [
        _stand_in_wheel(tmp_path, n, v)
        for n, v in (("torch", "2.13.0+cpu"), ("torchvision", "0.28.0+cpu"))
    ]
    quiet = dict(env=env, capture_output=True, text=True, timeout=120)
    subprocess.run(
        [*pip, "install", "--no-index", "--no-deps", *map(str, wheels)], check=True, **quiet
    )
    data = PYPROJECT["project"]["optional-dependencies"]["data"]
    torch_reqs = [
        r for r in data if canonicalize_name(Requirement(r).name) in ("torch", "torchvision")
    ]

    def dry_run(*locks: Path):
        report = tmp_path / "report.json"
        cmd = [*pip, "install", "--dry-run", "--no-index", "--report", str(report)]
        cmd += [x for lock in locks for x in ("-c", str(lock))]
        done = subprocess.run([*cmd, *torch_reqs], **quiet)
        return done, (json.loads(report.read_text()) if done.returncode == 0 else None)

    done, report = dry_run(ROOT / "constraints.txt")
    assert done.returncode == 0, done.stderr
    assert report["install"] == [], [i["metadata"]["name"] for i in report["install"]]
    done, _ = dry_run(ROOT / "constraints.txt", TORCH_LOCK)  # the pins ask for another build
    assert done.returncode != 0 and "torch" in done.stderr, done.stderr


def test_every_cited_document_is_in_the_repository():
    """No file cites a document the repository does not ship (issue 53: MATH.md was cited 22
    times and never shipped; the mathematics is docs/mathematics.md): an upper-case ``NAME.md``
    named anywhere, and every relative Markdown link ``](path.md)`` of a Markdown page, exist."""
    import re
    import subprocess

    root = Path(__file__).resolve().parents[1]
    try:
        files = subprocess.run(
            ["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    missing = []
    for name in files:
        path = root / name
        if path == Path(__file__).resolve():  # this test names what it looks for
            continue
        if (
            path.suffix not in {".py", ".md", ".txt", ".toml", ".cfg", ".in", ""}
            or not path.is_file()
        ):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for doc in set(re.findall(r"\b[A-Z][A-Z_]+\.md\b", text)):
            if not list(root.rglob(doc)):
                missing.append(f"{name}: {doc}")
        if path.suffix == ".md":
            for link in set(re.findall(r"\]\(([^)#:\s]+\.md)(?:#[^)]*)?\)", text)):
                if not (path.parent / link).resolve().is_file():
                    missing.append(f"{name}: {link}")
    assert not missing, "documents cited but not in the repository:\n" + "\n".join(missing)
