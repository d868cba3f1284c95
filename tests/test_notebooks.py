"""Every notebook (jupytext percent-format .py) runs end to end in its small mode; each ends with
assertions on its own results.  Notebooks run in-process (``runpy``), so the encoder loaded by
one is reused by the next."""

import runpy
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.py"))
#: notebooks whose small mode still needs minutes (NUTS compilation): run with ``-m slow``
SLOW = {"custom_priors"}
RUNS = [pytest.param(p, id=p.stem, marks=[pytest.mark.slow] if p.stem in SLOW else [])
        for p in NOTEBOOKS]


def test_notebooks_exist():
    names = {p.stem for p in NOTEBOOKS}
    assert names >= {"quickstart", "custom_priors", "adaptation_study", "clinical_retrieval",
                     "open_clip_images"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_is_percent_format(path):
    jupytext = pytest.importorskip("jupytext")
    nb = jupytext.read(path, fmt="py:percent")
    kinds = [c.cell_type for c in nb.cells]
    assert kinds.count("markdown") >= 2 and kinds.count("code") >= 2


@pytest.mark.filterwarnings("ignore:no ANCHORDIV_CLIP_MODEL")   # open_clip demo mode, intended
@pytest.mark.parametrize("path", RUNS)
def test_notebook_runs_in_small_mode(path, tmp_path, monkeypatch):
    monkeypatch.setenv("ANCHORDIV_NOTEBOOK_SMALL", "1")
    monkeypatch.setenv("ANCHORDIV_NOTEBOOK_OUT", str(tmp_path))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(path), run_name="__main__")
    assert any(tmp_path.rglob("*.png")), "every notebook writes at least one figure"
