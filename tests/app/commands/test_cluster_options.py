"""``--workers`` / ``--scheduler`` of `anchordiv search` and `anchordiv curve`: the same
results on a local Dask cluster (loopback, started and closed by the command)."""

import csv
import json

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.app.cli import main
from anchordiv.evaluation.evaluate import shared_label_relevance
from helpers import clustered_anchors, unit

pytest.importorskip("distributed")
pytestmark = pytest.mark.timeout(180)


def test_search_with_workers_reads_a_shard_directory(tmp_path, capsys):
    rng = np.random.default_rng(50)
    model = ad.fit("gaussian", clustered_anchors(rng, 40, 6), tau=5.0)
    ad.save_model(model, tmp_path / "m")
    x, y = unit(rng, 5, 6, np.float32), unit(rng, 90, 6, np.float32)
    np.save(tmp_path / "q.npy", x)
    (tmp_path / "img_emb").mkdir()
    for n, (lo, hi) in enumerate(((0, 40), (40, 90))):
        np.save(tmp_path / "img_emb" / f"img_emb_{n}.npy", y[lo:hi])
    assert (
        main(
            [
                "search",
                str(tmp_path / "m"),
                str(tmp_path / "q.npy"),
                str(tmp_path),
                "-k",
                "4",
                "-o",
                str(tmp_path / "res"),
                "--workers",
                "1",
                "--json",
            ]
        )
        == 0
    )
    out = capsys.readouterr()
    assert json.loads(out.out)["k"] == 4 and "scan" in out.err  # progress on stderr
    np.testing.assert_array_equal(
        np.load(tmp_path / "res.indices.npy"), ad.top_k(model, x, y, 4)[0]
    )


def test_curve_on_a_cluster_equals_serial(tmp_path, capsys):
    rng = np.random.default_rng(51)
    labels = rng.integers(3, size=20)
    centres = unit(rng, 3, 4)
    items = centres[labels] + 0.6 * rng.normal(size=(20, 4))
    np.save(tmp_path / "items.npy", items / np.linalg.norm(items, axis=1, keepdims=True))
    np.save(tmp_path / "target.npy", centres[np.arange(6) % 3] + 0.2 * rng.normal(size=(6, 4)))
    np.save(tmp_path / "broad.npy", unit(rng, 20, 4))
    np.save(tmp_path / "rel.npy", shared_label_relevance(labels, labels))
    files = [str(tmp_path / f) for f in ("broad.npy", "target.npy", "items.npy", "rel.npy")]
    common = [
        "--tau",
        "5",
        "--models",
        "softmax,cosine",
        "--budgets",
        "2",
        "--subsets",
        "2",
        "--n-boot",
        "50",
        "--json",
    ]
    tables = []
    for name, extra in (("serial", []), ("cluster", ["--workers", "2"])):
        assert main(["curve", *files, *common, "-o", str(tmp_path / name), *extra]) == 0
        with open(json.loads(capsys.readouterr().out)["paths"]["table"]) as f:
            tables.append(list(csv.DictReader(f)))
    assert tables[0] == tables[1] and len(tables[0]) == 2 * 3


def test_scheduler_and_workers_exclude_each_other(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(
            [
                "search",
                "m",
                "q.npy",
                "g.npy",
                "-o",
                "x",
                "--workers",
                "2",
                "--scheduler",
                "tcp://127.0.0.1:1",
            ]
        )
    assert "not allowed with argument" in capsys.readouterr().err
