"""WordNet → ImageNet: items from real WordNet structure, disjoint from anchors; the curve and
the anchor-budget view on it; exact moment points of a saved prior."""

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.data import imagenet, wordnet
from anchordiv.app.report import Report
from anchordiv.app.studies import budget
from anchordiv.app.studies.wordnet_imagenet import (
    broad_from_model,
    class_items,
    pivot,
    report_section as wordnet_imagenet_report,
    wordnet_imagenet_study,
    wordnet_imagenet_task,
    WordNetEmbeddings,
)
from helpers import unit

#: ImageNet classes with WordNet hyponyms, plus "dog"-free leaves (real wnids)
WNIDS = ["n02690373", "n03028079", "n07747607", "n01494475", "n01530575", "n01440764"]


@pytest.fixture(scope="module")
def classes():
    names = dict(imagenet.classes())
    return WNIDS, [names[w] for w in WNIDS]


def test_items_are_hyponyms_of_exactly_their_class_and_never_a_class(classes):
    wnids, _ = classes
    per = class_items(wnids)
    assert len(per[0]) >= 3  # airliner: widebody, narrowbody, …
    all_classes = set(wnids)
    for w, items in zip(wnids, per):
        below = set(wordnet.subtree(w)) - {wordnet.synset(w)}
        assert set(items) <= below
        assert all(wordnet.wnid(s) not in all_classes for s in items)
    flat = [s for items in per for s in items]
    assert len(flat) == len(set(flat))


def test_task_texts_labels_and_disjointness(classes):
    wnids, names = classes
    task = wordnet_imagenet_task(
        wnids, names, ["a photo of a {}.", "a {}."], n_classes=None, min_items=2, max_items=3
    )
    assert len(task.names) >= 2 and len(task.targets) == 2 * len(task.names)
    assert np.bincount(task.item_class).max() <= 3
    assert not set(task.items) & set(task.targets)
    for text in task.items:
        assert ": " in text  # "lemma: gloss"
    assert task.targets[0] == f"a photo of a {task.names[0]}."
    again = wordnet_imagenet_task(wnids, names, ["a {}."], n_classes=None, min_items=2, max_items=3)
    assert again.items == task.items
    with pytest.raises(ad.AnchorDivError, match="templates"):
        wordnet_imagenet_task(wnids, names, ["no slot"])
    with pytest.raises(ad.AnchorDivError, match="fewer than 2 classes"):
        wordnet_imagenet_task(wnids, names, ["a {}."], min_items=10_000)


def test_broad_from_model_reproduces_mean_and_covariance():
    rng = np.random.default_rng(0)
    prior = ad.fit("gaussian", unit(rng, 40, 6), tau=20.0)
    pts = broad_from_model(prior)
    c = pts - pts.mean(0)
    np.testing.assert_allclose(pts.mean(0), np.asarray(prior.mean), atol=1e-12)
    np.testing.assert_allclose(c.T @ c / len(pts), np.asarray(prior.cov), atol=1e-12)
    with pytest.raises(ad.AnchorDivError, match="gaussian"):
        broad_from_model(ad.fit("softmax", unit(rng, 5, 6), tau=1.0))


def test_curve_and_budget_view_on_the_task(classes, tmp_path, bag_of_words):
    wnids, names = classes
    task = wordnet_imagenet_task(
        wnids,
        names,
        ["a photo of a {}.", "a {}.", "the {}."],
        n_classes=None,
        min_items=2,
        max_items=3,
    )
    emb = WordNetEmbeddings(bag_of_words(task.items), bag_of_words(task.targets))
    broad = bag_of_words([wordnet.gloss(s) for s in wordnet.subtree("n02084071")[:60]])
    models = ("softmax", "gaussian", "posterior-gaussian", "isotropic-gaussian", "cosine")
    curve = wordnet_imagenet_study(
        task, emb, broad, tau=5.0, models=models, budgets=(2,), n_subsets=2, progress=False
    )
    table = pivot(curve.summary())
    assert [r["budget"] for r in table] == [2, len(task.targets)]
    assert set(table[0]) == {"budget", *models}
    rows = budget.budget_rows(curve, task.target_class, seed=0)
    assert {r["model"] for r in rows} == {"softmax", "gaussian", "cosine"}
    full = [r for r in rows if r["budget"] == len(task.targets)]
    assert all(r["coverage"] == 1.0 for r in full)
    two = [r for r in rows if r["budget"] == 2][0]["coverage"]
    assert 0 < two <= 2 / len(task.names)
    win = budget.winners(rows)
    assert [w["budget"] for w in win] == [2, len(task.targets)]
    assert budget.plot_budget(rows, tmp_path / "budget.png").stat().st_size > 10_000
    rep = Report("t", tmp_path)  # every AUPRC cell of the report's tables: mean [95 % interval]
    curve.write(tmp_path / "wordnet_imagenet", overwrite=True)
    wordnet_imagenet_report(rep, task, curve, curve.needs(0.9), "test prior")
    budget.report_section(rep, rows)
    text = rep.write().read_text()
    lows = {(r["model"], r["budget"]): r["low"] for r in curve.summary()}
    assert f"{lows[('softmax', 2)]:.3f}, " in text.split("## Anchor budget")[1]
    assert f"[{lows[('posterior-gaussian', 2)]:.3f}, " in text.split("## Anchor budget")[0]


def test_coverage_counts_classes_with_an_anchor():
    labels = np.repeat(np.arange(4), 3)  # 4 classes × 3 anchors
    assert budget.coverage(labels, 12, 1, seed=0) == 1.0
    assert budget.coverage(labels, 1, 3, seed=0) == 0.25


def test_the_outcomes_counts_and_above_cosine_on_known_cells():
    """Counts of cells above/below (interval excluding zero, NaN cells left out), and the
    models whose mean exceeds cosine's, on constructed cells and a synthetic curve."""
    from anchordiv.app.studies.wordnet_imagenet import above_cosine, cell_counts
    from helpers import synthetic_curve

    cell = lambda contrast, diff, low, high: {  # noqa: E731
        "contrast": contrast,
        "difference": diff,
        "low": low,
        "high": high,
    }
    counts = cell_counts(
        [
            cell("posterior − gaussian", 0.1, 0.05, 0.15),
            cell("posterior − gaussian", 0.0, -0.05, 0.05),
            cell("posterior − gaussian", float("nan"), float("nan"), float("nan")),
            cell("posterior − isotropic", -0.1, -0.15, -0.05),
            cell("posterior − isotropic", 0.1, 0.02, 0.2),
        ]
    )
    assert counts == {
        "target": 2,
        "target_above": 1,
        "control": 2,
        "control_above": 1,
        "control_below": 1,
    }
    curve = synthetic_curve()  # cosine 0.3; control 0.3 at 1 anchor, 0.35 from 2
    found = {name: first for name, first, _ in above_cosine(curve)}
    assert found == {"posterior": 1, "control": 2, "target": 4}
