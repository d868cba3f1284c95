"""Execute notebooks in small mode and store them as .ipynb beside their jupytext scripts.

    python docs/_ext/execute_notebooks.py [notebooks/NAME.py ...]    # default: every notebook

Each ``notebooks/NAME.py`` (percent format, the source) is run cell by cell in a Jupyter kernel
(nbclient) in its default small mode (``ANCHORDIV_NOTEBOOK_FULL`` unset), its figures going to
a temporary folder, and written to ``notebooks/NAME.ipynb`` with its outputs — what the docs
gallery renders.  ``make notebooks`` runs this."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def execute(script: Path, timeout: int = 1200) -> Path:
    """Run ``script`` in a kernel (small mode) and write ``script.with_suffix('.ipynb')``."""
    import jupytext
    import nbclient

    notebook = jupytext.read(script)
    saved = dict(os.environ)
    with tempfile.TemporaryDirectory() as tmp:
        try:  # the kernel inherits this process's environment
            os.environ.pop("ANCHORDIV_NOTEBOOK_FULL", None)
            os.environ.update(ANCHORDIV_NOTEBOOK_OUT=tmp, MPLBACKEND="Agg")
            nbclient.NotebookClient(
                notebook,
                timeout=timeout,
                kernel_name="python3",
                resources={"metadata": {"path": tmp}},
            ).execute()
        finally:
            os.environ.clear()
            os.environ.update(saved)
    for cell in notebook.cells:  # a library's notice that ipywidgets is missing: not ours
        if cell.cell_type == "code":
            cell["outputs"] = [
                o for o in cell.outputs if "IProgress not found" not in "".join(o.get("text", ""))
            ]
    out = script.with_suffix(".ipynb")
    jupytext.write(notebook, out, fmt="ipynb")
    return out


def main(argv: list[str]) -> int:
    scripts = [Path(a) for a in argv] or sorted((ROOT / "notebooks").glob("*.py"))
    src = str(ROOT / "src")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)
    os.environ["PATH"] = os.pathsep.join(
        [str(Path(sys.executable).parent), os.environ.get("PATH", "")]
    )
    for script in scripts:
        start = time.perf_counter()
        out = execute(script)
        print(f"{out}: executed in {time.perf_counter() - start:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
