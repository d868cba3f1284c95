"""``anchordiv curve``: CSV + PNG + needs.json from .npy inputs, and clear errors."""

import csv
import json

import numpy as np
import pytest

from anchordiv.app.cli import main
from anchordiv.evaluation.evaluate import shared_label_relevance
from helpers import unit


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    rng = np.random.default_rng(9)
    tmp = tmp_path_factory.mktemp("curve")
    labels = rng.integers(3, size=24)
    np.save(tmp / "labels.npy", labels)
    centres = unit(rng, 3, 4)
    items = centres[labels] + 0.6 * rng.normal(size=(24, 4))
    np.save(tmp / "items.npy", items / np.linalg.norm(items, axis=1, keepdims=True))
    np.save(tmp / "target.npy", centres[np.arange(9) % 3] + 0.2 * rng.normal(size=(9, 4)))
    np.save(tmp / "broad.npy", unit(rng, 30, 4))
    np.save(tmp / "rel.npy", shared_label_relevance(labels, labels))
    return tmp


def test_curve_writes_table_plot_and_needs(files, capsys):
    t = files
    rc = main(["curve", *(str(t / f) for f in ("broad.npy", "target.npy", "items.npy",
                                                "rel.npy")),
               "--tau", "5", "--models", "softmax,gaussian,cosine,inversion",
               "--budgets", "2,4", "--subsets", "2", "--queries", "12", "--n-boot", "100",
               "-o", str(t / "out")])
    assert rc == 0
    paths = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    with open(paths["table"]) as f:
        rows = list(csv.DictReader(f))
    assert {r["budget"] for r in rows} == {"2", "4", "9"}
    assert len(rows) == 4 * 5                     # 4 models x (2 + 2 + 1) cells
    assert open(paths["plot"], "rb").read(4) == b"\x89PNG"
    needs = json.loads(open(paths["needs"]).read())
    assert set(needs["models"]) == {"softmax", "gaussian", "cosine", "inversion"}


def test_curve_accepts_per_item_labels(files, capsys):
    """Issue 11: curve needed an [n, n] relevance .npy instead of accepting labels."""
    t = files
    common = ["--tau", "5", "--models", "gaussian,cosine", "--budgets", "2", "--subsets", "1",
              "--queries", "8", "--n-boot", "50"]
    tables = []
    for name, rel in (("rel", "rel.npy"), ("lab", "labels.npy")):
        assert main(["curve", *(str(t / f) for f in ("broad.npy", "target.npy", "items.npy",
                                                      rel)), *common, "-o", str(t / name)]) == 0
        tables.append((t / name / "curve.csv").read_text())
    capsys.readouterr()
    assert tables[0] == tables[1]


@pytest.mark.parametrize("extra, match", [
    (["--models", "oracle"], "models: unknown oracle"),
    (["--budgets", "1,x"], "--budgets: expected comma-separated integers"),
    (["--queries", "0"], "--queries: must be >= 1"),
])
def test_curve_errors(files, capsys, extra, match):
    t = files
    rc = main(["curve", *(str(t / f) for f in ("broad.npy", "target.npy", "items.npy",
                                                "rel.npy")),
               "--tau", "5", "-o", str(t / "bad"), *extra])
    assert rc == 2
    assert match in capsys.readouterr().err


def test_curve_relevance_shape_error(files, capsys):
    t = files
    np.save(t / "rel_bad.npy", np.zeros((3, 3), bool))
    rc = main(["curve", str(t / "broad.npy"), str(t / "target.npy"), str(t / "items.npy"),
               str(t / "rel_bad.npy"), "--tau", "5", "-o", str(t / "bad")])
    assert rc == 2 and "relevance: expected [24, 24] relevance, [24] labels" in capsys.readouterr().err


def test_help_explains_every_option(capsys):
    with pytest.raises(SystemExit):
        main(["curve", "--help"])
    text = capsys.readouterr().out
    for opt in ("--tau", "--models", "--budgets", "--subsets", "--queries", "--fraction",
                "--seed", "--n-boot", "--title", "posterior-gaussian", "isotropic-gaussian"):
        assert opt in text
