"""The wheel works alone: built from the checkout, installed into a fresh virtual environment
outside it, it runs the README quick start, loads a shipped prior by its short name and answers
``anchordiv --help`` and ``anchordiv priors`` there.

Fast and offline: the wheel is built without build isolation (the running environment's
setuptools), and the new environment gets only the wheel; its dependencies (JAX, NumPyro, ...)
come from the running environment's site-packages through a ``.pth`` line, so nothing is
downloaded or reinstalled.  That line adds the directory alone: its own ``.pth`` files (an
editable install's finder) are not run, so ``import anchordiv`` can only find the wheel's copy.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: what the wheel build reads from the checkout (setup.py copies models/ into the package)
SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "src", "models")
QUICK_START = re.compile(r"## Quick start\n\n```python\n(.*?)```.*?\n```\n(.*?)```", re.S)

PRIOR_BY_NAME = """
import anchordiv as ad
names = ad.shipped_priors()
assert len(names) == 7 and "wordnet-visual-art" in names, names
prior = ad.load_prior("wordnet-visual-art", kappa0=10.0, nu0=400.0)
long = ad.load_prior("wordnet-visual-art-gaussian", kappa0=10.0, nu0=400.0)
assert prior.card["card"]["encoder"] == "sentence-transformers/all-MiniLM-L6-v2"
assert prior.dim == long.dim == 384, prior.dim
print("prior", type(prior).__name__, prior.dim, ad.__version__, ad.__file__)
"""


def clean_env(tmp: Path) -> dict[str, str]:
    """The environment without anything pointing back at the checkout."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "ANCHORDIV_MODELS", "VIRTUAL_ENV", "PYTHONHOME")
    }
    env["HOME"] = env.get("HOME", str(tmp))
    return env


def run(cmd, cwd: Path, env: dict, timeout: int = 240) -> subprocess.CompletedProcess:
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"{cmd}: exit {out.returncode}\n{out.stdout}\n{out.stderr}"
    return out


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """``(python, bin, workdir, env)`` of a fresh venv holding only the built wheel."""
    pytest.importorskip("setuptools", "77")  # the build backend, used in place (make setup)
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in SOURCES:  # a copy: the build writes build/ and *.egg-info
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(
                path,
                src / name,
                ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"),
            )
        else:
            shutil.copy2(path, src / name)
    env = clean_env(tmp)
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-w",
            str(tmp / "dist"),
            str(src),
        ],
        tmp,
        env,
    )
    (wheel,) = (tmp / "dist").glob("anchordiv-*.whl")
    target = tmp / "venv"
    venv.EnvBuilder(with_pip=False).create(target)
    python = target / "bin" / "python"
    purelib = Path(
        run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            tmp,
            env,
        ).stdout.strip()
    )
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (purelib / "zz_shared_dependencies.pth").write_text("\n".join(sorted(deps)) + "\n")
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        tmp,
        env,
    )
    work = tmp / "elsewhere"
    work.mkdir()
    return python, target / "bin", work, env


def test_wheel_carries_the_priors_and_the_version(installed):
    python, _, work, env = installed
    out = run(
        [
            str(python),
            "-c",
            "import anchordiv, sys; print(anchordiv.__file__); print(anchordiv.__version__)",
        ],
        work,
        env,
    ).stdout.split()
    assert out[0].startswith(str(python.parent.parent)), f"imported {out[0]}, not the wheel"
    import anchordiv

    assert out[1] == anchordiv.__version__
    assert (Path(out[0]).parent / "py.typed").is_file()
    assert len(list((Path(out[0]).parent / "resources" / "priors").glob("*/arrays.npz"))) == 7


def test_quick_start_and_a_prior_by_name_outside_the_checkout(installed):
    python, _, work, env = installed
    code, printed = QUICK_START.search((ROOT / "README.md").read_text("utf-8")).groups()
    (work / "quick_start.py").write_text(code)
    out = run([str(python), "quick_start.py"], work, env).stdout
    assert out == printed, f"the quick start printed\n{out}\nthe README shows\n{printed}"
    out = run([str(python), "-c", PRIOR_BY_NAME], work, env).stdout
    assert out.startswith("prior NIWPrior 384") and str(python.parent.parent) in out, out


def test_the_command_outside_the_checkout(installed):
    _, bin_dir, work, env = installed
    out = run([str(bin_dir / "anchordiv"), "--help"], work, env).stdout
    assert "priors" in out and "adapt" in out
    out = run([str(bin_dir / "anchordiv"), "priors"], work, env).stdout
    assert out.startswith("7 priors in ") and "resources/priors" in out, out
    assert re.search(r"^  wordnet-visual-art  +832 anchors, d = 384: WordNet glosses", out, re.M)


def test_the_wheels_extras_take_ranges_and_all_is_for_users(installed):
    """The built wheel's ``Requires-Dist``: no exact pin (pip keeps an installed CPU torch that
    fits the ``data`` extra's range), and ``all`` reaches no test or docs tool."""
    from test_packaging import extras_problems

    python, _, work, env = installed
    code = "from importlib.metadata import requires; print('\\n'.join(requires('anchordiv')))"
    requires = run([str(python), "-c", code], work, env).stdout.splitlines()
    assert any("torch" in line and 'extra == "data"' in line for line in requires), requires
    assert extras_problems(requires) == []
