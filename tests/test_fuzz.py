"""The loaders' fuzz corpus replayed (every kept input is an ``AnchorDivError`` or loads and
works — used as the adversarial test used it), the command line on every kept case (exit 0, or
2 with one line and no traceback), and a fresh fuzz run in the slow tier (:mod:`fuzz`)."""

from __future__ import annotations

import shutil

import pytest

import fuzz
from anchordiv.app.cli import main

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
        argv = fuzz.cli_argv(case.parent.name, copy, work)
        if argv is None:
            continue
        code = main(argv)
        err = capsys.readouterr().err
        errors = [line for line in err.splitlines() if ": error: " in line]
        assert code in (0, 2), (case, err)
        assert "Traceback" not in err, (case, err)
        assert code == 0 or len(errors) == 1, (case, err)
        ran += 1
    assert ran >= len(CASES) // 2


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_fresh_fuzz_run_gives_only_anchordiv_errors(tmp_path):
    result = fuzz.fuzz(seconds=180, seed=12345, work=tmp_path)
    assert result["signatures"] == [], result
    assert all(c["cases"] > 20 for c in result["counts"].values())
