"""``anchordiv embed``: text files, CSV columns, image folders; cache reuse; clear errors."""

import json

import numpy as np
import pytest

from anchordiv.app import cli
from anchordiv.data import cache


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))


def run(argv, capsys):
    rc = cli.main([*argv, "--json"] if argv[0] == "embed" else argv)
    out, err = capsys.readouterr()
    return rc, out, err


def test_embed_text_file_and_cache(tmp_path, capsys, minilm):
    src = tmp_path / "anchors.txt"
    src.write_text("pleural effusion\n\nenlarged heart\n  \nno pneumothorax\n")
    out = tmp_path / "out" / "a.npy"
    rc, stdout, _ = run(["embed", str(src), "-o", str(out)], capsys)
    assert rc == 0
    info = json.loads(stdout)
    assert info["rows"] == 3 and info["dim"] == 384 and info["logit_scale"] == 20.0
    X = np.load(out)
    np.testing.assert_allclose(
        X, minilm.encode_text(["pleural effusion", "enlarged heart", "no pneumothorax"]), atol=1e-5
    )
    assert json.loads(out.with_suffix(".json").read_text())["encoder"] == minilm.id
    before = minilm.encoded
    assert run(["embed", str(src), "-o", str(tmp_path / "b.npy")], capsys)[0] == 0
    assert minilm.encoded == before, "second run must come from the cache"
    np.testing.assert_array_equal(np.load(tmp_path / "b.npy"), X)


def test_embed_csv_column(tmp_path, capsys, minilm):
    src = tmp_path / "reports.csv"
    src.write_text('id,text\n1,"No acute disease, heart normal."\n2,Cardiomegaly.\n')
    rc, stdout, _ = run(
        ["embed", str(src), "--column", "text", "-o", str(tmp_path / "r.npy")], capsys
    )
    assert rc == 0 and json.loads(stdout)["rows"] == 2
    rc, _, err = run(
        ["embed", str(src), "--column", "body", "-o", str(tmp_path / "r2.npy")], capsys
    )
    assert rc == 2 and "'body' is not a column" in err and "['id', 'text']" in err
    rc, _, err = run(["embed", str(src), "-o", str(tmp_path / "r2.npy")], capsys)
    assert rc == 2 and "needs --column" in err


def test_embed_image_folder(tmp_path, capsys, tiny_clip, skimage_files):
    import shutil

    name, ckpt, _ = tiny_clip
    folder = tmp_path / "imgs"
    folder.mkdir()
    for p in skimage_files[:2]:
        shutil.copy(p, folder / p.name)
    (folder / "zz_broken.jpg").write_bytes(b"not a jpeg")
    (folder / "notes.txt").write_text("ignored: not an image suffix")
    args = ["embed", str(folder), "--encoder", f"open_clip:{name}", "--pretrained", str(ckpt)]
    args += ["-o", str(tmp_path / "img.npy")]
    rc, _, err = run(args, capsys)
    assert rc == 2 and "1 of 3 image file(s) cannot be read" in err and "zz_broken.jpg" in err
    with pytest.warns(UserWarning, match="zz_broken.jpg"):
        rc, stdout, _ = run(args + ["--on-error", "skip"], capsys)
    assert rc == 0 and json.loads(stdout)["rows"] == 2
    side = json.loads((tmp_path / "img.json").read_text())
    assert [p.split("/")[-1] for p in side["sources"]] == ["astronaut.png", "chelsea.png"]
    assert side["logit_scale"] == pytest.approx(42.0)
    assert np.load(tmp_path / "img.npy").shape == (2, 32)


@pytest.mark.parametrize(
    "content, extra, message",
    [
        ("\n \n", [], "contains no texts"),
        (None, [], "no such file or folder"),
        ("a\n", ["--encoder", "clip"], "unknown 'clip'"),
        ("a\n", ["--column", "x"], "only to .csv"),
    ],
)
def test_embed_errors(tmp_path, capsys, content, extra, message, minilm):
    src = tmp_path / "in.txt"
    if content is not None:
        src.write_text(content)
    rc, _, err = run(["embed", str(src), "-o", str(tmp_path / "o.npy"), *extra], capsys)
    assert rc == 2 and message in err


def test_embed_empty_folder_and_text_encoder_on_images(tmp_path, capsys, skimage_files):
    (tmp_path / "empty").mkdir()
    rc, _, err = run(["embed", str(tmp_path / "empty"), "-o", str(tmp_path / "o.npy")], capsys)
    assert rc == 2 and "no image files" in err
    rc, _, err = run(["embed", str(skimage_files[0].parent), "-o", str(tmp_path / "o.npy")], capsys)
    assert rc == 2 and "encodes text only" in err


def test_embed_help(capsys):
    with pytest.raises(SystemExit):
        cli.main(["embed", "--help"])
    assert "--on-error" in capsys.readouterr().out


def test_embed_reports_the_file_it_writes(tmp_path, capsys, minilm):
    """Issue 11: `embed -o noext` reported `noext` but wrote `noext.npy`."""
    src = tmp_path / "in.txt"
    src.write_text("enlarged heart\nclear lungs\n")
    rc, stdout, _ = run(["embed", str(src), "-o", str(tmp_path / "noext")], capsys)
    info = json.loads(stdout)
    assert rc == 0 and info["embeddings"] == str(tmp_path / "noext.npy")
    assert info["sidecar"] == str(tmp_path / "noext.json")
    side = json.loads((tmp_path / "noext.json").read_text())
    assert side["texts"] == ["enlarged heart", "clear lungs"] and side["logit_scale"] == 20.0
    rc, stdout, _ = run(
        ["fit", "softmax", str(tmp_path / "noext.npy"), "-o", str(tmp_path / "m"), "--json"], capsys
    )
    assert rc == 0 and json.loads(stdout)["tau"] == 20.0 and json.loads(stdout)["encoder"]
