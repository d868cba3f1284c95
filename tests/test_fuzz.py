"""The loaders' fuzz corpus replayed (every kept input is an ``AnchorDivError`` or loads and
works), and a fresh fuzz run in the slow tier (:mod:`fuzz`)."""

from __future__ import annotations

import shutil

import pytest

import fuzz

CASES = sorted(p for p in fuzz.CORPUS.glob("*/*") if p.is_dir())


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_corpus_gives_only_anchordiv_errors(case, tmp_path):
    copy = tmp_path / "case"
    shutil.copytree(case, copy, symlinks=True)
    assert fuzz.run_case(case.parent.name, copy) is None


def test_the_corpus_covers_every_loader():
    assert {p.parent.name for p in CASES} == set(fuzz.TARGETS)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_fresh_fuzz_run_gives_only_anchordiv_errors(tmp_path):
    result = fuzz.fuzz(seconds=180, seed=12345, work=tmp_path)
    assert result["signatures"] == [], result
    assert all(c["cases"] > 20 for c in result["counts"].values())
