"""`anchordiv fit` and `anchordiv search` end to end on .npy files."""

import json

import numpy as np

import anchordiv as ad
from anchordiv.cli import main
from helpers import clustered_anchors, unit


def test_fit_then_search(tmp_path, capsys):
    rng = np.random.default_rng(0)
    np.save(tmp_path / "a.npy", clustered_anchors(rng, 50, 8, np.float32))
    np.save(tmp_path / "q.npy", unit(rng, 4, 8, np.float32))
    np.save(tmp_path / "g.npy", unit(rng, 30, 8, np.float32))
    assert main(["fit", "gaussian", str(tmp_path / "a.npy"), "-o", str(tmp_path / "m"),
                 "--tau", "20", "--encoder", "unit-test", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kind"] == "gaussian"
    assert main(["search", str(tmp_path / "m"), str(tmp_path / "q.npy"), str(tmp_path / "g.npy"),
                 "-k", "3", "-o", str(tmp_path / "res")]) == 0
    idx = np.load(tmp_path / "res.indices.npy")
    model = ad.load_model(tmp_path / "m")
    full = np.asarray(ad.divergence(model, np.load(tmp_path / "q.npy"), np.load(tmp_path / "g.npy")))
    np.testing.assert_array_equal(idx, np.argsort(full, axis=1, kind="stable")[:, :3])


def test_cli_reports_bad_input(tmp_path, capsys):
    np.save(tmp_path / "a.npy", np.ones((1, 3), np.float32))
    assert main(["fit", "gaussian", str(tmp_path / "a.npy"), "-o", str(tmp_path / "m"),
                 "--tau", "20"]) == 2
    assert "a single anchor" in capsys.readouterr().err
    assert main(["fit", "gaussian", str(tmp_path / "missing.npy"), "-o", str(tmp_path / "m"),
                 "--tau", "20"]) == 2
    assert "no such file" in capsys.readouterr().err
