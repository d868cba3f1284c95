"""User errors on the command line: one argparse-style line, exit status 2, no traceback."""

import numpy as np
import pytest

from anchordiv.app.cli import main
from helpers import clustered_anchors, unit


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    np.save(tmp_path / "b.npy", unit(rng, 50, 4))
    np.save(tmp_path / "t.npy", clustered_anchors(rng, 6, 4))
    (tmp_path / "some.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe binary")
    (tmp_path / "blob.txt").write_bytes(b"\xff\xfe\x00binary, not UTF-8")
    (tmp_path / "notnpy.npy").write_text("not an array")
    return tmp_path


def cases(t):
    return {
        "bad number (was a raw ValueError)": (
            [
                "adapt",
                "gaussian",
                f"{t}/b.npy",
                f"{t}/t.npy",
                "-o",
                f"{t}/m",
                "--tau",
                "5",
                "--kappa0",
                "abc",
            ],
            "argument --kappa0: expected a number or 'auto', got 'abc'",
        ),
        "bad tau": (
            ["fit", "gaussian", f"{t}/t.npy", "-o", f"{t}/m", "--tau", "nan"],
            "argument --tau: expected a finite number",
        ),
        "image as text (was UnicodeDecodeError)": (
            ["embed", f"{t}/some.png", "-o", f"{t}/e"],
            "some.png: is an image",
        ),
        "binary text file": (
            ["embed", f"{t}/blob.txt", "-o", f"{t}/e"],
            "blob.txt: is not a UTF-8 text file",
        ),
        "missing file": (
            ["fit", "gaussian", f"{t}/none.npy", "-o", f"{t}/m", "--tau", "5"],
            "anchors: no such file",
        ),
        "foreign .npy": (
            ["fit", "gaussian", f"{t}/notnpy.npy", "-o", f"{t}/m", "--tau", "5"],
            "notnpy.npy: not a readable .npy array",
        ),
        "model is not a bundle": (
            ["search", str(t), f"{t}/t.npy", f"{t}/t.npy", "-o", f"{t}/r"],
            "not a saved anchordiv bundle",
        ),
        "no tau anywhere": (["fit", "gaussian", f"{t}/t.npy", "-o", f"{t}/m"], "tau: not given"),
    }


@pytest.mark.parametrize("case", list(cases("T")))
def test_user_errors_exit_2_without_traceback(files, capsys, case):
    argv, message = cases(files)[case]
    try:
        rc = main(argv)
    except SystemExit as stop:  # argparse's own usage errors
        rc = stop.code
    err = capsys.readouterr().err
    assert rc == 2
    assert message in err and "Traceback" not in err
    assert f"anchordiv {argv[0]}: error:" in err
