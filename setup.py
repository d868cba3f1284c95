"""The one build step pyproject.toml cannot declare: the wheel carries the shipped priors.

The seven broad priors live in the top-level ``models/`` folder, their source of truth: ``make
models`` rebuilds them there, the benchmarks, docs and notebooks read them there, and an editable
install finds them there (``anchordiv.io.models_dir``).  A wheel has no checkout beside it, so
``build_py`` copies each prior's ``card.json`` and ``arrays.npz`` into the built package as
``anchordiv/resources/priors/<name>/`` (4 MB), where an installed anchordiv looks first.  Keeping
one copy in git (not two) means a rebuilt prior cannot drift from the packaged one.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
FILES = ("card.json", "arrays.npz")


class BuildWithPriors(build_py):
    """``build_py`` plus ``models/*/`` → ``anchordiv/resources/priors/*/`` (not for editable
    installs, which read ``models/`` in place)."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        dest = Path(self.build_lib) / "anchordiv" / "resources" / "priors"
        for card in sorted((ROOT / "models").glob("*/card.json")):
            out = dest / card.parent.name
            out.mkdir(parents=True, exist_ok=True)
            for name in FILES:
                shutil.copyfile(card.parent / name, out / name)


setup(cmdclass={"build_py": BuildWithPriors})
