"""Evaluation: per-query AUPRC against scikit-learn with the query removed, streaming, intervals."""

import json

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import average_precision_score

import anchordiv as ad
from anchordiv.evaluation.evaluate import (
    bootstrap_interval,
    mean_interval,
    shared_label_relevance,
    t_interval,
)
from helpers import normed, unit

D = 6


@pytest.fixture(scope="module")
def task():
    """Labelled unit items (4 classes), class-text anchors and a Gaussian anchor model."""
    rng = np.random.default_rng(3)
    centres = unit(rng, 4, D)
    labels = rng.integers(4, size=40)
    items = centres[labels] + 0.7 * rng.normal(size=(40, D)) / np.sqrt(D)
    items = normed(items)
    anchors = centres + 0.2 * rng.normal(size=(4, D))
    model = ad.fit("gaussian", np.repeat(anchors, 6, 0) + 0.2 * rng.normal(size=(24, D)), tau=5.0)
    return items, labels, anchors, model


def reference(rel, scores, self_idx):
    """sklearn AP per row with column ``self_idx[i]`` deleted (NaN if no relevant item)."""
    out = []
    for i in range(len(rel)):
        keep = np.arange(rel.shape[1]) != self_idx[i]
        r, s = rel[i, keep], scores[i, keep]
        out.append(average_precision_score(r, s) if r.any() else np.nan)
    return np.array(out)


def test_matches_sklearn_with_query_removed(task):
    items, labels, anchors, model = task
    rel = shared_label_relevance(labels, labels)
    ev = ad.evaluate(
        {"gauss": model},
        items,
        items,
        rel,
        anchors=anchors,
        query_index=np.arange(len(items)),
        chunk=7,
    )
    assert ev.names == ["gauss", "cosine", "inversion"]
    self_idx = np.arange(len(items))
    expected = {
        "gauss": -np.asarray(ad.divergence(model, items, items)),
        "cosine": np.asarray(ad.cosine(items, items)),
        "inversion": np.asarray(ad.inversion(anchors, items, items)),
    }
    for name, scores in expected.items():
        np.testing.assert_allclose(ev.per_query[name], reference(rel, scores, self_idx), rtol=1e-12)
    # prevalence excludes the query itself
    np.testing.assert_allclose(ev.prevalence, (rel.sum(1) - 1) / (len(items) - 1))


def test_chunking_padding_and_partial_self_removal(task):
    items, labels, anchors, model = task
    queries, gallery = items[:13], items
    rel = shared_label_relevance(labels[:13], labels)
    index = np.where(np.arange(13) % 2 == 0, np.arange(13), -1)  # odd queries: not in gallery
    runs = [
        ad.evaluate(
            {"m": model}, queries, gallery, rel, anchors=anchors, query_index=index, chunk=c
        )
        for c in (5, None)
    ]
    for ev in runs[1:]:
        for name in ev.names:
            np.testing.assert_allclose(ev.per_query[name], runs[0].per_query[name], rtol=1e-12)
    scores = -np.asarray(ad.divergence(model, queries, gallery))
    np.testing.assert_allclose(runs[0].per_query["m"], reference(rel, scores, index), rtol=1e-12)


def test_array_and_callable_scorers_and_float32(task):
    items, labels, anchors, model = task
    rel = shared_label_relevance(labels, labels)
    scores = np.asarray(ad.cosine(items, items))
    ev = ad.evaluate(
        {
            "array": scores,
            "fn": lambda x, y: x @ y.T,
            "f32": ad.fit(
                "gaussian",
                anchors.astype(np.float32).repeat(3, 0)
                + np.float32(0.01) * np.arange(12 * D, dtype=np.float32).reshape(12, D),
                tau=5.0,
            ),
        },
        items.astype(np.float32),
        items.astype(np.float32),
        rel,
        baselines=("cosine",),
        query_index=np.arange(len(items)),
    )
    np.testing.assert_allclose(ev.per_query["array"], ev.per_query["cosine"], rtol=1e-6)
    np.testing.assert_allclose(ev.per_query["fn"], ev.per_query["cosine"], rtol=1e-6)
    assert np.all(np.isfinite(ev.per_query["f32"]))


def test_queries_without_relevant_items_are_nan_and_excluded(task):
    items, labels, anchors, model = task
    rel = shared_label_relevance(labels, labels)
    rel[0] = False
    ev = ad.evaluate({}, items, items, rel, anchors=anchors, query_index=np.arange(len(items)))
    assert np.isnan(ev.per_query["cosine"][0])
    row = ev.summary()[0]
    assert row["n_queries"] == len(items) - 1 and row["n_without_relevant"] == 1
    assert row["auprc"] == pytest.approx(np.nanmean(ev.per_query["cosine"]))
    assert row["prevalence"] == pytest.approx(ev.prevalence[1:].mean())
    assert row["low"] < row["auprc"] < row["high"]


def test_summary_json_difference_and_csv(task, tmp_path):
    items, labels, anchors, model = task
    rel = shared_label_relevance(labels, labels)
    ev = ad.evaluate(
        {"m": model},
        items,
        items,
        rel,
        anchors=anchors,
        query_index=np.arange(len(items)),
        interval="t",
    )
    diff = ev.difference("m", "cosine")
    assert diff[0] == pytest.approx(np.mean(ev.per_query["m"] - ev.per_query["cosine"]))
    out = ev.to_json()
    assert set(out["difference_vs_cosine"]) == {"m", "inversion"}
    json.dumps(out)
    text = ev.write_csv(tmp_path / "s.csv").read_text().splitlines()
    assert text[0].startswith("scorer,auprc,low,high,prevalence") and len(text) == 4
    assert len(ev.write_per_query_csv(tmp_path / "q.csv").read_text().splitlines()) == 41


def test_intervals():
    rng = np.random.default_rng(0)
    v = rng.uniform(size=200)
    m, lo, hi = t_interval(v)
    half = stats.t.ppf(0.975, 199) * stats.sem(v)
    assert (lo, hi) == pytest.approx((m - half, m + half))
    b = bootstrap_interval(v, n_boot=4000, seed=1)
    assert b[0] == pytest.approx(v.mean())
    assert b[1] == pytest.approx(lo, abs=0.01) and b[2] == pytest.approx(hi, abs=0.01)
    assert bootstrap_interval(v, seed=1) == bootstrap_interval(v, seed=1)
    # a constant second axis adds no variance; a varying one widens the interval
    flat = bootstrap_interval(np.stack([v, v, v]), n_boot=4000, seed=1)
    assert flat[2] - flat[1] == pytest.approx(b[2] - b[1], rel=0.1)
    wide = bootstrap_interval(np.stack([v - 0.2, v, v + 0.2]), n_boot=4000, seed=1)
    assert wide[2] - wide[1] > 2 * (b[2] - b[1])
    assert np.isnan(mean_interval([np.nan, np.nan])[0])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"relevance": np.zeros((3, 3), bool)}, "relevance: expected shape"),
        ({"anchors": None}, "anchors: the inversion baseline"),
        ({"query_index": np.arange(40) + 5}, "query_index: entries"),
        ({"query_index": np.zeros(3, int)}, "query_index: expected integers"),
        ({"baselines": ("bm25",)}, "baselines: unknown"),
        ({"interval": "wald"}, "interval: unknown"),
        ({"scorers": {"bad": np.zeros((2, 2))}}, r"scorers\['bad'\]: score matrix"),
        ({"scorers": {"nan": lambda x, y: np.full((len(x), len(y)), np.nan)}}, "NaN or inf"),
        ({"scorers": {"s": "bm25"}}, "unknown baseline"),
        ({"scorers": {"s": 3}}, "expected an anchor model"),
    ],
)
def test_bad_input(task, kwargs, match):
    items, labels, anchors, model = task
    args = {
        "scorers": {"m": model},
        "relevance": shared_label_relevance(labels, labels),
        "anchors": anchors,
        "query_index": np.arange(40),
    }
    args.update(kwargs)
    with pytest.raises(ad.AnchorDivError, match=match):
        ad.evaluate(args.pop("scorers"), items, items, args.pop("relevance"), **args)


def test_shared_label_relevance():
    multi = np.array([[1, 0, 1], [0, 1, 0]])
    np.testing.assert_array_equal(shared_label_relevance(multi, multi), [[1, 0], [0, 1]])
    with pytest.raises(ad.AnchorDivError, match="labels"):
        shared_label_relevance(np.zeros((2, 2)), np.zeros(3))


def test_to_dataframe_and_compact_repr():
    """Issue 11: Evaluation had no DataFrame export."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(12, 4))
    x = normed(x)
    ev = ad.evaluate(
        {},
        x,
        x,
        rng.random((12, 12)) < 0.4,
        query_index=np.arange(12),
        baselines=("cosine",),
        n_boot=100,
    )
    df = ev.to_dataframe()
    assert list(df["scorer"]) == ["cosine"] and df["auprc"][0] == ev.summary()[0]["auprc"]
    per_query = ev.to_dataframe(per_query=True)
    assert per_query.shape == (12, 3) and list(per_query.columns) == [
        "query",
        "prevalence",
        "cosine",
    ]
    assert repr(ev).startswith("Evaluation(12 queries, bootstrap 95%: cosine=")


def test_one_default_interval_level_across_the_library():
    """Issue 11: RetrievalUncertainty defaulted to 90 % while evaluate used 95 %."""
    import inspect

    from anchordiv.evaluation.evaluate import LEVEL
    from anchordiv.checks.uncertainty import retrieval_uncertainty

    assert LEVEL == 0.95
    assert inspect.signature(retrieval_uncertainty).parameters["interval"].default == LEVEL
    assert inspect.signature(ad.evaluate).parameters["level"].default == LEVEL
    assert inspect.signature(ad.adaptation_curve).parameters["level"].default == LEVEL
