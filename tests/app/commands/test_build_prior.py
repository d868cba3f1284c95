"""``anchordiv build-prior`` on a text file with the shipped MiniLM encoder (cache in tmp)."""

import json

import numpy as np

from anchordiv.app.cli import main
from anchordiv.io import load_card, load_model


def test_build_prior_from_a_text_file(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ANCHORDIV_CACHE", str(tmp_path / "cache"))
    f = tmp_path / "styles.txt"
    f.write_text(
        "a watercolour painting\nan ink drawing\na marble statue\na woven tapestry\n"
        "a charcoal study\na mosaic of tiles\n"
    )
    out = tmp_path / "prior"
    assert (
        main(
            [
                "build-prior",
                "--text",
                str(f),
                "-o",
                str(out),
                "-n",
                "0",
                "--description",
                "six art phrases",
            ]
        )
        == 0
    )
    printed = json.loads(capsys.readouterr().out)
    assert printed["n_anchors"] == 6 and printed["model"] == str(out)
    card = load_card(out)
    assert card["prior"]["sources"] == [
        {"kind": "text", "roots": [str(f)], "exclude": [], "pool": 6, "drawn": 6}
    ]
    assert card["prior"]["name"] == "prior" and card["anchor_source"] == "six art phrases"
    assert card["encoder"] == "sentence-transformers/all-MiniLM-L6-v2" and card["tau"] == 20.0
    model = load_model(out)
    assert model.kind == "gaussian" and model.dim == 384
    assert np.isfinite(np.asarray(model.mean)).all()
    assert main(["build-prior", "-o", str(tmp_path / "none")]) == 2  # no region named


def test_build_prior_from_open_i_report_sentences(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ANCHORDIV_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "reports"
    assert (
        main(
            [
                "build-prior",
                "--openi",
                "CXR1",
                "--openi",
                "CXR10",
                "--openi",
                "CXR100",
                "--exclude-openi",
                "pleural effusion",
                "-o",
                str(out),
                "-n",
                "0",
            ]
        )
        == 0
    )
    card = load_card(out)
    (src,) = card["prior"]["sources"]
    assert src["kind"] == "openi" and src["exclude"] == ["pleural effusion"]
    assert src["roots"] == ["CXR1", "CXR10", "CXR100"] and 3 <= src["pool"] == card["n_anchors"]
    assert load_model(out).dim == 384
