"""The markdown report writer."""

import pytest

import anchordiv as ad
from anchordiv.app.report import Report, format_cell, interval_cell, markdown_table


def test_markdown_table_formats_floats_and_nan():
    rows = [
        {"model": "gaussian", "auprc": 0.51234, "n": 3},
        {"model": "cosine", "auprc": float("nan"), "n": 4},
    ]
    assert markdown_table(rows, ["model", "auprc"]).splitlines() == [
        "| model | auprc |",
        "|---|---|",
        "| gaussian | 0.512 |",
        "| cosine | – |",
    ]
    assert format_cell(2) == "2" and format_cell(0.5, 1) == "0.5"
    with pytest.raises(ad.AnchorDivError, match="lack column"):
        markdown_table(rows, ["model", "missing"])
    with pytest.raises(ad.AnchorDivError, match="no rows"):
        markdown_table([], ["model"])


def test_interval_cell_shows_the_estimate_with_its_interval():
    assert interval_cell(0.5, 0.41, 0.6) == "0.500 [0.410, 0.600]"
    assert interval_cell(0.02, -0.01, 0.05, signed=True) == "+0.020 [-0.010, +0.050]"
    assert interval_cell(float("nan"), float("nan"), float("nan")) == "–"


def test_report_links_figures_relatively(tmp_path):
    rep = Report("Title", tmp_path / "out")
    rep.section("Part", "Some text.")
    rep.table([{"a": 1.0}], ["a"])
    rep.path("fig.png").write_bytes(b"png")
    rep.figure("fig.png", "A caption")
    with pytest.raises(ad.AnchorDivError, match="was not written"):
        rep.figure("absent.png", "x")
    text = rep.write().read_text()
    assert text.startswith("# Title\n\n## Part\n\nSome text.")
    assert "![A caption](fig.png)" in text and "| 1.000 |" in text
