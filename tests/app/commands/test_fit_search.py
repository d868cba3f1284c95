"""`anchordiv fit` and `anchordiv search` end to end on .npy files."""

import csv
import io
import json

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.app.cli import main
from anchordiv.io import load_card
from helpers import clustered_anchors, unit


def test_fit_then_search(tmp_path, capsys):
    rng = np.random.default_rng(0)
    np.save(tmp_path / "a.npy", clustered_anchors(rng, 50, 8, np.float32))
    np.save(tmp_path / "q.npy", unit(rng, 4, 8, np.float32))
    np.save(tmp_path / "g.npy", unit(rng, 30, 8, np.float32))
    assert (
        main(
            [
                "fit",
                "gaussian",
                str(tmp_path / "a.npy"),
                "-o",
                str(tmp_path / "m"),
                "--tau",
                "20",
                "--encoder",
                "unit-test",
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["kind"] == "gaussian"
    assert (
        main(
            [
                "search",
                str(tmp_path / "m"),
                str(tmp_path / "q.npy"),
                str(tmp_path / "g.npy"),
                "-k",
                "3",
                "-o",
                str(tmp_path / "res"),
            ]
        )
        == 0
    )
    idx = np.load(tmp_path / "res.indices.npy")
    model = ad.load_model(tmp_path / "m")
    full = np.asarray(
        ad.divergence(model, np.load(tmp_path / "q.npy"), np.load(tmp_path / "g.npy"))
    )
    np.testing.assert_array_equal(idx, np.argsort(full, axis=1, kind="stable")[:, :3])


def test_cli_reports_bad_input(tmp_path, capsys):
    np.save(tmp_path / "a.npy", np.ones((1, 3), np.float32))
    assert (
        main(["fit", "gaussian", str(tmp_path / "a.npy"), "-o", str(tmp_path / "m"), "--tau", "20"])
        == 2
    )
    assert "a single anchor" in capsys.readouterr().err
    assert (
        main(
            [
                "fit",
                "gaussian",
                str(tmp_path / "missing.npy"),
                "-o",
                str(tmp_path / "m"),
                "--tau",
                "20",
            ]
        )
        == 2
    )
    assert "no such file" in capsys.readouterr().err


MINILM = {"encoder": "sentence-transformers/all-MiniLM-L6-v2", "logit_scale": 20.0}


@pytest.fixture
def embedded(tmp_path):
    """Anchors, queries and gallery saved as `anchordiv embed` does (sidecars with texts)."""
    rng = np.random.default_rng(1)
    ad.save_embeddings(tmp_path / "a.npy", clustered_anchors(rng, 40, 8, np.float32), **MINILM)
    ad.save_embeddings(
        tmp_path / "q.npy",
        unit(rng, 3, 8, np.float32),
        texts=["query one", "query two", "query three"],
        **MINILM,
    )
    ad.save_embeddings(
        tmp_path / "g.npy",
        unit(rng, 20, 8, np.float32),
        texts=[f"item {i}" for i in range(20)],
        **MINILM,
    )
    return tmp_path


def test_fit_takes_tau_and_encoder_from_the_sidecar(embedded, capsys):
    """Issue 11: the CLI required --tau and cards left `encoder` empty."""
    t = embedded
    assert main(["fit", "gaussian", str(t / "a.npy"), "-o", str(t / "m")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("anchordiv fit: gaussian model saved to") and "tau: 20" in out
    card = load_card(t / "m")
    assert card["tau"] == 20.0 and card["encoder"] == MINILM["encoder"]
    assert card["anchor_source"] == str(t / "a.npy")


@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl"])
def test_search_writes_a_table_with_texts(embedded, capsys, fmt):
    """Issue 11: search wrote only .npy files with nothing mapping rows to texts."""
    t = embedded
    assert main(["fit", "gaussian", str(t / "a.npy"), "-o", str(t / "m")]) == 0
    assert (
        main(
            [
                "search",
                str(t / "m"),
                str(t / "q.npy"),
                str(t / "g.npy"),
                "-k",
                "2",
                "-o",
                str(t / "res"),
                "--table",
                fmt,
            ]
        )
        == 0
    )
    assert f"table: {t / 'res'}.{fmt}" in capsys.readouterr().out
    text = (t / f"res.{fmt}").read_text()
    if fmt == "jsonl":
        rows = [json.loads(line) for line in text.splitlines()]
    else:
        rows = list(csv.DictReader(io.StringIO(text), delimiter="," if fmt == "csv" else "\t"))
    assert len(rows) == 3 * 2
    idx = np.load(t / "res.indices.npy")
    assert rows[1]["query_text"] == "query one" and rows[1]["item_text"] == f"item {idx[0, 1]}"


def test_search_and_evaluate_accept_a_saved_posterior(embedded, capsys):
    """Issue 11: no CLI command consumed a saved posterior."""
    t = embedded
    rng = np.random.default_rng(2)
    ad.save_embeddings(t / "b.npy", unit(rng, 100, 8, np.float32), **MINILM)
    assert (
        main(
            [
                "adapt",
                "gaussian",
                str(t / "b.npy"),
                str(t / "a.npy"),
                "-o",
                str(t / "m"),
                "--posterior-out",
                str(t / "p"),
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "search",
                str(t / "p"),
                str(t / "q.npy"),
                str(t / "g.npy"),
                "-k",
                "4",
                "-o",
                str(t / "res"),
                "--json",
            ]
        )
        == 0
    )
    capsys.readouterr()
    point = ad.load_model(t / "m")
    ref, _ = ad.top_k(point, ad.load_embeddings(t / "q.npy"), ad.load_embeddings(t / "g.npy"), 4)
    np.testing.assert_array_equal(np.load(t / "res.indices.npy"), ref)
    np.save(t / "rel.npy", np.eye(20, dtype=bool)[:3] | np.eye(20, k=1, dtype=bool)[:3])
    assert (
        main(
            [
                "evaluate",
                f"point={t / 'p'}",
                f"draws={t / 'p'}",
                "--draws",
                "3",
                "--queries",
                str(t / "q.npy"),
                "--gallery",
                str(t / "g.npy"),
                "--relevance",
                str(t / "rel.npy"),
                "--baselines",
                "cosine",
                "--n-boot",
                "50",
                "-o",
                str(t / "ev"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert out.startswith("anchordiv evaluate: per-query AUPRC, 3 queries x 20 gallery items")
    assert "point " in out and "draws " in out and "cosine" in out


def test_search_refuses_embeddings_of_another_encoder(embedded, capsys):
    t = embedded
    assert main(["fit", "gaussian", str(t / "a.npy"), "-o", str(t / "m")]) == 0
    ad.save_embeddings(
        t / "clip.npy", np.load(t / "q.npy"), encoder="open_clip:ViT-B-32", logit_scale=100.0
    )
    assert (
        main(["search", str(t / "m"), str(t / "clip.npy"), str(t / "g.npy"), "-o", str(t / "r")])
        == 2
    )
    assert "different encoders cannot be mixed" in capsys.readouterr().err
