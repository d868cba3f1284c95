"""The loaders' fuzz corpus replayed (every kept input is an ``AnchorDivError`` or loads and
works — used as the adversarial test used it, with ``inference_data`` and
``prior_sensitivity``), the command line on every kept case (``search``, ``adapt``, ``fit``,
``diagnose``: exit 0, or 2 with one line and no traceback), the seeds covering every family,
model kind and index type, and a fresh fuzz run in the slow tier (:mod:`fuzz`)."""

from __future__ import annotations

import shutil

import pytest

import fuzz
from anchordiv.app.cli import main
from anchordiv.retrieval.index import FAISS_KINDS

CASES = sorted(p for p in fuzz.CORPUS.glob("*/*") if p.is_dir())


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_corpus_gives_only_anchordiv_errors(case, tmp_path):
    copy = tmp_path / "case"
    shutil.copytree(case, copy, symlinks=True)
    assert fuzz.run_case(case.parent.name, copy) is None


def test_the_corpus_covers_every_loader():
    assert {p.parent.name for p in CASES} == set(fuzz.TARGETS)


def test_the_cli_on_every_kept_case_exits_0_or_2_in_one_line(tmp_path, capsys):
    """One test over the whole corpus (the commands share one process's compiled code)."""
    ran = 0
    for i, case in enumerate(CASES):
        work = tmp_path / str(i)
        work.mkdir()
        copy = work / "case"
        shutil.copytree(case, copy, symlinks=True)
        for argv in fuzz.cli_argvs(case.parent.name, copy, work):
            code = main(argv)
            err = capsys.readouterr().err
            errors = [line for line in err.splitlines() if ": error: " in line]
            assert code in (0, 2), (case, argv, err)
            assert "Traceback" not in err, (case, argv, err)
            assert code == 0 or len(errors) == 1, (case, argv, err)
            ran += 1
    assert ran >= len(CASES) // 2


def test_the_seeds_cover_every_family_model_kind_and_index_type():
    """Issue 52: the fuzz seeded only gaussian models and flat indexes, so it never reached
    the other families' loaded posteriors."""
    from anchordiv.adaptation.protocol import FAMILIES
    from anchordiv.anchors import KINDS

    assert set(fuzz.FAMILY_METHODS) == set(FAMILIES)
    assert set(fuzz.INDEX_KINDS) == set(FAISS_KINDS)
    assert fuzz.MODEL_KINDS == KINDS


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_fresh_fuzz_run_gives_only_anchordiv_errors(tmp_path):
    result = fuzz.fuzz(seconds=180, seed=12345, work=tmp_path)
    assert result["signatures"] == [], result
    assert all(c["cases"] > 20 for c in result["counts"].values())
