"""``anchordiv evaluate``: files written, numbers equal to the library call, clear errors."""

import json

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.app.cli import main
from anchordiv.evaluation.evaluate import shared_label_relevance
from helpers import unit


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    rng = np.random.default_rng(5)
    tmp = tmp_path_factory.mktemp("evaluate")
    labels = rng.integers(3, size=25)
    centres = unit(rng, 3, 4)
    items = centres[labels] + 0.6 * rng.normal(size=(25, 4))
    items /= np.linalg.norm(items, axis=1, keepdims=True)
    anchors = centres + 0.1 * rng.normal(size=(3, 4))
    np.save(tmp / "items.npy", items)
    np.save(tmp / "anchors.npy", np.repeat(anchors, 4, 0) + 0.1 * rng.normal(size=(12, 4)))
    np.save(tmp / "rel.npy", shared_label_relevance(labels, labels))
    assert (
        main(["fit", "gaussian", str(tmp / "anchors.npy"), "--tau", "5", "-o", str(tmp / "gauss")])
        == 0
    )
    return tmp


def test_evaluate_writes_tables_and_matches_library(files, capsys):
    t = files
    rc = main(
        [
            "evaluate",
            f"g={t / 'gauss'}",
            "--gallery",
            str(t / "items.npy"),
            "--relevance",
            str(t / "rel.npy"),
            "--anchors",
            str(t / "anchors.npy"),
            "--n-boot",
            "200",
            "-o",
            str(t / "out"),
            "--json",
        ]
    )
    assert rc == 0
    printed = json.loads(capsys.readouterr().out)
    assert [r["scorer"] for r in printed["summary"]] == ["g", "cosine", "inversion"]
    saved = json.loads((t / "out" / "evaluation.json").read_text())
    items = np.load(t / "items.npy")
    ev = ad.evaluate(
        {"g": ad.load_model(t / "gauss")},
        items,
        items,
        np.load(t / "rel.npy"),
        anchors=np.load(t / "anchors.npy"),
        query_index=np.arange(len(items)),
        n_boot=200,
    )
    for row, ref in zip(saved["summary"], ev.summary()):
        assert row["auprc"] == pytest.approx(ref["auprc"])
        assert row["low"] == pytest.approx(ref["low"])
    assert "g" in saved["difference_vs_cosine"]
    for name in ("evaluation.csv", "per_query.csv", "evaluation.png"):
        assert (t / "out" / name).stat().st_size > 0


def test_evaluate_separate_queries_t_interval_cosine_only(files):
    t = files
    items = np.load(t / "items.npy")
    np.save(t / "q.npy", items[:5])
    np.save(t / "qi.npy", np.arange(5))
    np.save(t / "rel5.npy", np.load(t / "rel.npy")[:5])
    rc = main(
        [
            "evaluate",
            "--queries",
            str(t / "q.npy"),
            "--query-index",
            str(t / "qi.npy"),
            "--gallery",
            str(t / "items.npy"),
            "--relevance",
            str(t / "rel5.npy"),
            "--baselines",
            "cosine",
            "--interval",
            "t",
            "-o",
            str(t / "out5"),
        ]
    )
    assert rc == 0
    saved = json.loads((t / "out5" / "evaluation.json").read_text())
    assert [r["scorer"] for r in saved["summary"]] == ["cosine"]
    assert saved["summary"][0]["n_queries"] == 5 and saved["interval"] == "t"


@pytest.mark.parametrize(
    "extra, match",
    [
        ([], "inversion baseline needs"),
        (["--anchors", "missing.npy"], "anchors: no such file"),
        (["nowhere", "--baselines", "cosine"], "MODEL: no such model or posterior directory"),
    ],
)
def test_evaluate_errors(files, capsys, extra, match):
    t = files
    rc = main(
        [
            "evaluate",
            "--gallery",
            str(t / "items.npy"),
            "--relevance",
            str(t / "rel.npy"),
            "-o",
            str(t / "bad"),
            *extra,
        ]
    )
    assert rc == 2
    assert match in capsys.readouterr().err


def test_help_explains_every_option(capsys):
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    text = capsys.readouterr().out
    for opt in (
        "--gallery",
        "--relevance",
        "--queries",
        "--query-index",
        "--anchors",
        "--baselines",
        "--interval",
        "--n-boot",
        "--seed",
        "--chunk",
        "--out",
    ):
        assert opt in text
