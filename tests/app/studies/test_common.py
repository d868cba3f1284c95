"""Helpers shared by the text and image studies: retrieval setups (every item against all the
others, or a query/gallery split) and the report section "What each geometry retrieves" (a
curve's geometries rebuilt as the curve built them, a table of texts or a grid of images per
study, and every neighbour in CSV)."""

import csv

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.app.report import Report
from anchordiv.app.studies._common import (
    NEIGHBOURS_TITLE,
    SHOWN_K,
    curve_scorers,
    labelled_retrieval,
    neighbours_section,
    show_neighbours,
    shown_budget,
    split_rows,
)
from anchordiv.errors import AnchorDivError
from anchordiv.evaluation.curves import MODELS, Curve, subset


def test_section_shows_texts_and_images_for_each_study(tmp_path):
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(3), 6)
    items = np.eye(4)[labels] + 0.4 * rng.normal(size=(18, 4))
    items /= np.linalg.norm(items, axis=1, keepdims=True)
    targets = np.eye(4)[np.repeat(np.arange(3), 4)] + 0.2 * rng.normal(size=(12, 4))
    targets /= np.linalg.norm(targets, axis=1, keepdims=True)
    names = ("gaussian", "softmax", "isotropic-gaussian", "cosine", "inversion")
    curve = Curve({n: MODELS[n] for n in names}, [2, 5, 12], {}, [], 0.3)  # as a curve ran them
    assert shown_budget(curve.budgets) == 5 and shown_budget([1, 2, 12]) == 2
    scorers, rows = curve_scorers(curve, targets, targets, 10.0, seed=0)
    assert list(scorers) == ["gaussian", "softmax", "cosine", "inversion"]  # no control
    assert isinstance(scorers["gaussian"], ad.AnchorModel)
    np.testing.assert_array_equal(rows, subset(12, 5, 0, 0))  # the curve's first subset
    texts = [f"item {i} of class {c}" for i, c in enumerate(labels)]
    shown = [
        show_neighbours(
            "Texts", scorers, items, texts, anchors=targets[rows], labels=labels, note="A note."
        ),
        show_neighbours(
            "Images",
            {"gaussian": scorers["gaussian"]},
            items,
            rng.uniform(size=(18, 24, 32, 3)),
            captions=[f"class {c}" for c in labels],
        ),
    ]
    outside = items[:2] + 0.1  # queries from outside the gallery (an image study's split)
    outside /= np.linalg.norm(outside, axis=1, keepdims=True)
    pictures = rng.uniform(size=(20, 24, 32, 3))
    shown.append(
        show_neighbours(
            "Outside queries",
            {"gaussian": scorers["gaussian"]},
            items,
            pictures[:18],
            queries=outside,
            labels=labels,
            query_labels=labels[:2],
            query_items=pictures[18:],
        )
    )
    assert shown[2].result.relevant["cosine"].shape == (2, SHOWN_K)
    first = shown[0].result
    idx, _ = ad.top_k(scorers["gaussian"], items[first.queries], items, k=SHOWN_K + 1)
    np.testing.assert_array_equal(first.indices["gaussian"], idx[:, 1:])
    assert first.names == ["cosine", "inversion", "gaussian", "softmax"]
    assert first.k == SHOWN_K and len(first.queries) == 3
    assert shown[1].result.names == ["cosine", "gaussian"]  # no anchors, no inversion
    rep = Report("t", tmp_path)
    neighbours_section(rep, shown)
    text = rep.write().read_text()
    assert f"## {NEIGHBOURS_TITLE}" in text and "### Texts" in text and "A note." in text
    assert "| rank | cosine | inversion | gaussian | softmax |" in text
    assert text.count("**Query") == 3 and "✓" in text
    assert "](neighbours/images.png)" in text
    assert "](neighbours/outside_queries.png)" in text
    assert (tmp_path / "neighbours" / "outside_queries.png").stat().st_size > 0
    assert (tmp_path / "neighbours" / "images.png").stat().st_size > 10_000
    with open(tmp_path / "neighbours.csv") as f:
        written = list(csv.DictReader(f))
    assert len(written) == 3 * SHOWN_K * (4 + 2) + 2 * SHOWN_K * 2
    assert {r["study"] for r in written} == {"Texts", "Images", "Outside queries"}


def test_labelled_retrieval_with_and_without_a_split():
    x = np.eye(6)[:, :4] + 0.1
    labels = np.array([0, 0, 1, 1, 2, 2])
    every = labelled_retrieval(x, labels, None, 0)
    assert every["gallery"].shape == (6, 4) and every["query_index"].tolist() == list(range(6))
    mask = np.array([True, False, True, False, False, False])
    split = labelled_retrieval(x, labels, None, 0, query_mask=mask)
    assert split["query_index"] is None
    np.testing.assert_array_equal(split["queries"], x[[0, 2]])
    np.testing.assert_array_equal(split["gallery"], x[[1, 3, 4, 5]])
    assert split["relevance"].tolist() == [[True, False, False, False], [False, True, False, False]]
    q, g = split_rows(mask, 1, 0)
    assert len(q) == 1 and q[0] in (0, 2) and g.tolist() == [1, 3, 4, 5]
    with pytest.raises(AnchorDivError, match="need both"):
        labelled_retrieval(x, labels, None, 0, query_mask=np.ones(6, bool))
    with pytest.raises(AnchorDivError, match="query_mask: expected 6 rows"):
        labelled_retrieval(x, labels, None, 0, query_mask=mask[:3])
