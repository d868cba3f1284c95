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


def run_cli(argv, capsys) -> tuple[int, str]:
    """``(exit status, stderr)`` of an in-process ``anchordiv`` call (usage errors included)."""
    try:
        rc = main(argv)
    except SystemExit as stop:
        rc = stop.code
    return rc, capsys.readouterr().err


def adapt_args(t, *extra):
    return ["adapt", *extra[:1], f"{t}/b.npy", f"{t}/t.npy", "-o", f"{t}/m", "--tau", "5"] + list(
        extra[1:]
    )


def parse_cases(t):
    """Malformed values: each one line, exit 2, before anything is read or fitted (issue 51)."""
    a = adapt_args
    return {
        "prior option of the wrong type (was a raw traceback, exit 1)": (
            a(t, "gaussian", "--prior-option", "kappa0=abc"),
            "--prior-option kappa0: expected a number or 'auto', got 'abc'",
        ),
        "prior option the family does not have": (
            a(t, "gaussian", "--prior-option", "tau0=1"),
            "--prior-option tau0: not an option of the gaussian family's from_anchors",
        ),
        "batch size 0 (was ZeroDivisionError after the model loaded)": (
            ["embed", f"{t}/t.npy", "-o", f"{t}/e", "--batch-size", "0"],
            "argument --batch-size: expected a whole number >= 1, got '0'",
        ),
        "negative workers": (
            ["embed", f"{t}/t.npy", "-o", f"{t}/e", "--workers", "-2"],
            "argument --workers: expected a whole number >= 0, got '-2'",
        ),
        "k of 0": (
            ["search", f"{t}/m", f"{t}/t.npy", f"{t}/b.npy", "-o", f"{t}/r", "-k", "0"],
            "argument -k: expected a whole number >= 1, got '0'",
        ),
        "negative seed": (
            ["evaluate", "--gallery", "g", "--relevance", "r", "-o", f"{t}/v", "--seed", "-1"],
            "argument --seed: expected a whole number >= 0, got '-1'",
        ),
        "fractional draws": (
            ["diagnose", f"{t}/p", "-o", f"{t}/d", "--num-draws", "2.5"],
            "argument --num-draws: expected a whole number, got '2.5'",
        ),
        "zero samples": (
            a(t, "lkj-gaussian", "--method", "nuts", "--num-samples", "0"),
            "argument --num-samples: expected a whole number >= 1, got '0'",
        ),
        "unknown flag, named by the subcommand": (
            a(t, "gaussian", "--batch", "3"),
            "anchordiv adapt: error: unrecognized arguments: --batch 3",
        ),
        "output under a file": (
            ["fit", "gaussian", f"{t}/t.npy", "-o", f"{t}/b.npy/model", "--tau", "5"],
            f"output {t}/b.npy/model: {t}/b.npy is a file, not a folder",
        ),
    }


@pytest.mark.parametrize("case", list(parse_cases("T")))
def test_malformed_values_are_one_line(files, capsys, case):
    argv, message = parse_cases(files)[case]
    rc, err = run_cli(argv, capsys)
    assert rc == 2, err
    assert message in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"anchordiv {argv[0]}: error: ")
    assert not (files / "m").exists() and not (files / "e.npy").exists()


def method_cases(t):
    """Option combinations that used to fail after the whole fit (60 s for an SVI run), or in
    the library's Python terms: refused first, naming the flag to pass."""
    a = adapt_args
    return {
        "svi's default delta guide, no posterior mean (was after the fit)": (
            a(t, "lkj-gaussian", "--method", "svi"),
            "--summary mean (the default): svi's default guide, delta, is a MAP point and the "
            "lkj-gaussian family has no closed-form posterior mean; pass --guide normal",
        ),
        "svi's delta guide with a user's model": (
            a(t, "gaussian", "--method", "svi", "--model", "json:loads"),
            "a --model's posterior has no closed-form mean",
        ),
        "exact for a family without a closed form": (
            a(t, "lkj-gaussian"),
            "--method exact (the default): the lkj-gaussian family has no closed-form update; "
            "pass --method svi",
        ),
        "an svi option with nuts": (
            a(t, "gaussian", "--method", "nuts", "--num-steps", "10"),
            "--num-steps: applies to --method svi, not to --method nuts",
        ),
        "a sampler option with exact": (
            a(t, "gaussian", "--num-chains", "2"),
            "--num-chains: applies to --method nuts, not to --method exact",
        ),
        "one guide draw (was after the fit)": (
            a(t, "gaussian", "--method", "svi", "--guide", "normal", "--num-samples", "1"),
            "--num-samples: svi with --guide normal keeps at least 2 guide draws, got 1",
        ),
        "a guide rank without the low-rank guide": (
            a(t, "gaussian", "--method", "svi", "--guide", "normal", "--guide-rank", "2"),
            "--guide-rank: applies to --guide lowrank, not --guide normal",
        ),
        "a subspace for a family without a projection": (
            a(t, "spectral", "--method", "nuts", "--subspace", "2"),
            "--subspace: the spectral family has no principal-subspace projection",
        ),
    }


@pytest.mark.parametrize("case", list(method_cases("T")))
def test_adapt_options_are_checked_before_the_fit(files, capsys, case):
    argv, message = method_cases(files)[case]
    rc, err = run_cli(argv, capsys)
    assert rc == 2, err
    assert message in err and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    assert "SVI" not in err and "NUTS" not in err  # no sampler ran, no progress bar
    assert not (files / "m").exists()


def test_the_cache_variable_pointing_at_a_file_is_named(files, capsys, monkeypatch):
    """$ANCHORDIV_CACHE at a file: an error naming the variable, before any work (was "Not a
    directory" after 16 s of encoding)."""
    monkeypatch.setenv("ANCHORDIV_CACHE", str(files / "blob.txt"))
    rc, err = run_cli(["fit", "gaussian", f"{files}/t.npy", "-o", f"{files}/m"], capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert (
        f"$ANCHORDIV_CACHE: {files}/blob.txt is a file; the embedding cache needs a folder" in err
    )
    monkeypatch.setenv("ANCHORDIV_CACHE", str(files / "blob.txt" / "sub"))
    rc, err = run_cli(["fit", "gaussian", f"{files}/t.npy", "-o", f"{files}/m"], capsys)
    assert rc == 2 and f"is inside the file {files}/blob.txt" in err, err
    assert not (files / "m").exists()


def test_a_missing_gpu_is_said_so(files, capsys, monkeypatch):
    """``--device cuda`` without a CUDA device: said so, before the model loads (was blamed on
    the weights: "do not fit the architecture")."""
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    (files / "texts.txt").write_text("a dog\na cat\n")
    argv = ["embed", f"{files}/texts.txt", "-o", f"{files}/e", "--device"]
    rc, err = run_cli([*argv, "cuda"], capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 1, err
    assert "device: 'cuda', but no CUDA device is available here" in err
    assert "use device 'cpu' (--device cpu)" in err and "weights" not in err
    rc, err = run_cli([*argv, "gpu"], capsys)
    assert rc == 2 and "device: 'gpu' is not a torch device" in err, err
    assert not (files / "e.npy").exists()
