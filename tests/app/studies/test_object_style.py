"""Object vs style: the text construction and the trade-off as p moves (bag-of-words embed)."""

import pytest

import anchordiv as ad
from anchordiv.app.studies.object_style import (
    DEFAULT_PS,
    embed_task,
    object_style_study,
    object_style_task,
    plot_object_style,
    styleless,
)

OBJECTS = ["goldfish", "hen", "ostrich", "iguana", "scorpion", "accordion"]
STYLES = ["sketch", "origami", "tattoo", "embroidery", "video game"]


def test_task_pairs_every_object_with_every_style_and_is_disjoint_from_anchors():
    task = object_style_task(OBJECTS, STYLES, seed=0)
    assert len(task.items) == len(OBJECTS) * len(STYLES)
    pairs = set(zip(task.item_object.tolist(), task.item_style.tolist()))
    assert len(pairs) == len(task.items)
    for text, o, s in zip(task.items, task.item_object, task.item_style):
        assert OBJECTS[o] in text and STYLES[s] in text
    assert not set(task.items) & set(task.object_anchors + task.style_anchors)
    assert all(not any(s in a for s in STYLES) for a in task.object_anchors)
    assert all(not any(o in a for o in OBJECTS) for a in task.style_anchors)
    assert "an origami" in " ".join(task.style_anchors)  # articles follow the word
    assert object_style_task(OBJECTS, STYLES, seed=0).items == task.items


def test_bad_names_are_errors():
    with pytest.raises(ad.AnchorDivError, match="at least 2"):
        object_style_task(["hen"], STYLES)
    with pytest.raises(ad.AnchorDivError, match="unique"):
        object_style_task(["hen", "hen"], STYLES)
    with pytest.raises(ad.AnchorDivError, match="names a style"):
        object_style_task(["hen", "sketch pad"], STYLES)
    assert styleless(["hen", "sketch pad", "toy terrier"], STYLES + ["toy"]) == ["hen"]


def test_moving_mass_to_object_anchors_trades_style_for_object_retrieval(tmp_path, bag_of_words):
    task = object_style_task(OBJECTS, STYLES)
    rows = object_style_study(task, embed_task(task, bag_of_words), tau=5.0, progress=False)
    curve = {(r["target"], r["p"]): r["auprc"] for r in rows if r["p"] == r["p"]}
    assert curve[("object", 1.0)] > curve[("object", 0.0)] + 0.2
    assert curve[("style", 0.0)] > curve[("style", 1.0)] + 0.2
    assert {r["scorer"] for r in rows} == {"gaussian", "cosine", "inversion"}
    assert len(rows) == 2 * (len(DEFAULT_PS) + 2)
    assert all(r["low"] <= r["auprc"] <= r["high"] for r in rows)
    plot_object_style(rows, tmp_path / "os.png")
    assert (tmp_path / "os.png").stat().st_size > 10_000
