"""What each geometry retrieves: the top-k under each scorer equal the library's own rankings
(an argsort of the dot products for cosine, ``ad.top_k`` for each anchor model), the query is
left out of its own neighbours, relevance follows the labels, and the markdown names it all."""

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.evaluation import Neighbours, neighbours


@pytest.fixture(scope="module")
def task():
    rng = np.random.default_rng(3)
    labels = np.repeat([0, 1, 2], 5)
    x = np.eye(4)[labels] + 0.4 * rng.normal(size=(15, 4))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    models = {
        "gaussian": ad.fit("gaussian", x[:5], tau=20.0),
        "softmax": ad.fit("softmax", x[5:10], tau=20.0),
    }
    return x, labels, models


def test_neighbours_are_the_librarys_rankings_without_the_query(task):
    x, labels, models = task
    rows = np.array([0, 6, 12])
    nb = neighbours(models, x, rows, anchors=x[:5], labels=labels, k=4)
    assert nb.names == ["gaussian", "softmax", "cosine", "inversion"]
    assert nb.k == 4 and nb.queries.tolist() == rows.tolist()
    # cosine: the dot products of unit vectors, sorted, the query itself dropped
    dots = x[rows] @ x.T
    for i, r in enumerate(rows):
        order = [j for j in np.argsort(-dots[i], kind="stable") if j != r][:4]
        assert nb.indices["cosine"][i].tolist() == order
        np.testing.assert_allclose(nb.scores["cosine"][i], dots[i, order], atol=1e-6)
    # each anchor model: ad.top_k with one more item, the query (its own nearest) dropped
    for name, model in models.items():
        idx, d = ad.top_k(model, x[rows], x, k=5)
        assert (idx[:, 0] == rows).all()
        np.testing.assert_array_equal(nb.indices[name], idx[:, 1:])
        np.testing.assert_allclose(nb.scores[name], -d[:, 1:])
    # inversion: ad.inversion's scores, sorted
    inv = np.array(ad.inversion(x[:5], x[rows], x), float)
    inv[np.arange(3), rows] = -np.inf
    np.testing.assert_array_equal(
        nb.indices["inversion"], np.argsort(-inv, 1, kind="stable")[:, :4]
    )
    for name in nb.names:
        assert (nb.indices[name] != rows[:, None]).all()
        assert (np.diff(nb.scores[name], axis=1) <= 1e-9).all()  # closest first
        np.testing.assert_array_equal(
            nb.relevant[name], labels[nb.indices[name]] == labels[rows][:, None]
        )
    assert repr(nb).startswith("Neighbours(3 queries × top-4 under gaussian, softmax, cosine")
    assert set(nb.precision()) == set(nb.names)
    rows_out = nb.to_rows([f"t{i}" for i in range(15)])
    assert len(rows_out) == 3 * 4 * 4 and rows_out[0]["query_text"] == "t0"


def test_seeded_and_outside_queries(task):
    x, labels, models = task
    a = neighbours(models["gaussian"], x, 3, seed=1, baselines=("cosine",))
    b = neighbours(models["gaussian"], x, 3, seed=1, baselines=("cosine",))
    assert a.names == ["gaussian", "cosine"]  # no anchors: no inversion
    assert a.queries.tolist() == b.queries.tolist() and len(set(a.queries)) == 3
    np.testing.assert_array_equal(a.indices["gaussian"], b.indices["gaussian"])
    # queries from outside the gallery: nothing is left out, so k may be G
    out = neighbours(models["gaussian"], x[3:], x[:3], k=12, baselines=("cosine",))
    assert (out.queries == -1).all()
    idx, _ = ad.top_k(models["gaussian"], x[:3], x[3:], k=12)
    np.testing.assert_array_equal(out.indices["gaussian"], idx)
    flagged = neighbours(
        {}, x[3:], x[:3], labels=labels[3:], query_labels=labels[:3], k=2, baselines=("cosine",)
    )
    assert flagged.relevant["cosine"].shape == (3, 2)
    # rows name the files: the gallery's, and the outside queries' own
    files = [f"g/{i}.png" for i in range(12)]
    rows = flagged.to_rows(files, query_texts=["q/a.png", "q/b.png", "q/c.png"], name="path")
    assert rows[0]["query_row"] == -1 and rows[0]["query_path"] == "q/a.png"
    assert all(r["path"] == files[r["item"]] for r in rows)
    assert rows[-1]["query_path"] == "q/c.png" and "text" not in rows[0]
    with pytest.raises(ad.AnchorDivError, match="query_texts: expected 3"):
        flagged.to_rows(files, query_texts=["q/a.png"])


def test_markdown_marks_relevance_and_escapes_cells(task):
    x, labels, models = task
    texts = [f"item {i} | {'long ' * 30}" for i in range(15)]
    nb = neighbours(models, x, [0, 6], anchors=x[:5], labels=labels, k=2)
    md = nb.to_markdown(texts, width=20)
    assert md.count("**Query") == 2 and "(gallery row 6)" in md
    assert "| rank | gaussian | softmax | cosine | inversion |" in md
    assert "item 0 \\|" in md and "…" in md
    table = [line for line in md.splitlines() if line.startswith("| 1 |")]
    assert len(table) == 2 and table[0].count("✓") + table[0].count("✗") == 4
    plain = neighbours(models, x, [0], k=1, baselines=())
    assert "✓" not in plain.to_markdown(texts) and plain.relevant is None


def test_bad_input_names_the_problem(task):
    x, labels, models = task
    with pytest.raises(ad.AnchorDivError, match="queries"):
        neighbours(models, x, [0, 99])
    with pytest.raises(ad.AnchorDivError, match="k"):
        neighbours(models, x, [0], k=15)  # 14 items left once the query is out
    with pytest.raises(ad.AnchorDivError, match="query_labels"):
        neighbours(models, x, x[:2], labels=labels)
    with pytest.raises(ad.AnchorDivError, match="labels"):
        neighbours(models, x, [0], labels=labels[:3])
    with pytest.raises(ad.AnchorDivError, match="baselines"):
        neighbours(models, x, [0], baselines=("bm25",))
    with pytest.raises(ad.AnchorDivError, match="unknown baseline"):
        neighbours({"odd": "bm25"}, x, [0])
    with pytest.raises(ad.AnchorDivError, match="texts"):
        neighbours(models, x, [0]).to_markdown(["only one"])
    with pytest.raises(ad.AnchorDivError, match="query_texts"):
        neighbours(models, x, x[:1]).to_markdown([str(i) for i in range(15)])
    with pytest.raises(ad.AnchorDivError, match="'broken'"):
        neighbours({"broken": lambda q, g: np.full((len(q), len(g)), np.nan)}, x, [0])
    assert isinstance(neighbours(models, x, 1), Neighbours)


def test_score_arrays_and_callables_rank_like_cosine(task):
    x, _, _ = task
    rows = np.array([2, 9])
    dots = x[rows] @ x.T
    nb = neighbours(
        {"array": dots, "callable": lambda q, g: q @ g.T}, x, rows, k=3, baselines=("cosine",)
    )
    for name in ("array", "callable"):
        np.testing.assert_array_equal(nb.indices[name], nb.indices["cosine"])
