"""Every notebook is a pair ``notebooks/NAME.ipynb`` (stored outputs of its small mode, rendered
by the docs gallery) + ``notebooks/NAME.py`` (jupytext percent format, the readable source):
the cell sources of the two must agree, the .ipynb must carry outputs, and every notebook runs
end to end in its small mode (each ends with assertions on its own results).  The scripts run
in-process (``runpy``), so the encoder loaded by one is reused by the next; a slow test
re-executes stored notebooks in a Jupyter kernel."""

import runpy
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.py"))
#: notebooks whose small mode still needs minutes (NUTS compilation), or over a minute on two
#: busy cores (bayesian_workflow: ~80 s): run with ``-m slow``
SLOW = {"custom_priors", "bayesian_workflow"}
RUNS = [
    pytest.param(p, id=p.stem, marks=[pytest.mark.slow] if p.stem in SLOW else [])
    for p in NOTEBOOKS
]


def test_notebooks_exist():
    names = {p.stem for p in NOTEBOOKS}
    assert names >= {
        "quickstart",
        "custom_priors",
        "adaptation_study",
        "clinical_retrieval",
        "open_clip_images",
        "bayesian_workflow",
    }


def _cells(nb) -> list[tuple[str, str]]:
    return [(c.cell_type, c.source.strip()) for c in nb.cells]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_ipynb_is_paired_with_its_script(path):
    """Same cells in the .ipynb and the .py (``jupytext --sync`` fixes a mismatch), and the
    .ipynb stores outputs for the gallery."""
    jupytext = pytest.importorskip("jupytext")
    ipynb = path.with_suffix(".ipynb")
    assert ipynb.is_file(), f"{ipynb.name} missing: run `make notebooks`"
    stored = jupytext.read(ipynb)
    import nbformat

    nbformat.validate(nbformat.read(ipynb, as_version=4))  # what Jupyter and MyST-NB accept
    assert _cells(stored) == _cells(jupytext.read(path, fmt="py:percent")), (
        f"{ipynb.name} and {path.name} differ: run `jupytext --sync {path}` (or make notebooks)"
    )
    assert stored.metadata["jupytext"]["formats"] == "ipynb,py:percent"
    outputs = [o for c in stored.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert outputs and not any(o.output_type == "error" for o in outputs)
    assert any("image/png" in o.get("data", {}) for o in outputs), "no figure stored"


def test_pairing_is_configured():
    text = (NOTEBOOKS[0].parent / "jupytext.toml").read_text()
    assert 'formats = "ipynb,py:percent"' in text


@pytest.mark.slow
@pytest.mark.parametrize("name", ["quickstart", "bayesian_workflow"])
def test_stored_notebook_reexecutes_in_a_kernel(name, tmp_path):
    """The stored .ipynb re-executes in a Jupyter kernel (small mode) with the same cells and
    the same kinds of outputs as stored: its outputs come from the current code."""
    import shutil
    import sys

    jupytext = pytest.importorskip("jupytext")
    sys.path.insert(0, str(Path(__file__).parent.parent / "docs" / "_ext"))
    import execute_notebooks

    script = tmp_path / f"{name}.py"
    shutil.copy(NOTEBOOKS[0].parent / f"{name}.py", script)
    fresh = jupytext.read(execute_notebooks.execute(script))
    stored = jupytext.read(NOTEBOOKS[0].parent / f"{name}.ipynb")
    assert _cells(fresh) == _cells(stored)

    def kinds(nb):
        return [sorted({o.output_type for o in c.get("outputs", [])}) for c in nb.cells]

    assert kinds(fresh) == kinds(stored)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_is_percent_format(path):
    jupytext = pytest.importorskip("jupytext")
    nb = jupytext.read(path, fmt="py:percent")
    kinds = [c.cell_type for c in nb.cells]
    assert kinds.count("markdown") >= 2 and kinds.count("code") >= 2


@pytest.mark.filterwarnings("ignore:no ANCHORDIV_CLIP_MODEL")  # open_clip demo mode, intended
@pytest.mark.parametrize("path", RUNS)
def test_notebook_runs_in_small_mode(path, tmp_path, monkeypatch):
    monkeypatch.delenv("ANCHORDIV_NOTEBOOK_FULL", raising=False)  # small mode: the default
    monkeypatch.setenv("ANCHORDIV_NOTEBOOK_OUT", str(tmp_path))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(path), run_name="__main__")
    assert any(tmp_path.rglob("*.png")), "every notebook writes at least one figure"
