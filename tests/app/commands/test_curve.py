"""``anchordiv curve``: CSV + PNG + needs.json from .npy inputs, and clear errors."""

import csv
import json

import numpy as np
import re

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
    rc = main(
        [
            "curve",
            *(str(t / f) for f in ("broad.npy", "target.npy", "items.npy", "rel.npy")),
            "--tau",
            "5",
            "--models",
            "softmax,gaussian,cosine,inversion",
            "--budgets",
            "2,4",
            "--subsets",
            "2",
            "--queries",
            "12",
            "--n-boot",
            "100",
            "-o",
            str(t / "out"),
            "--json",
        ]
    )
    assert rc == 0
    result = json.loads(capsys.readouterr().out)
    paths = result["paths"]
    assert {r["model"] for r in result["summary"]} == {"softmax", "gaussian", "cosine", "inversion"}
    with open(paths["table"]) as f:
        rows = list(csv.DictReader(f))
    assert {r["budget"] for r in rows} == {"2", "4", "9"}
    assert len(rows) == 4 * 5  # 4 models x (2 + 2 + 1) cells
    assert open(paths["plot"], "rb").read(4) == b"\x89PNG"
    needs = json.loads(open(paths["needs"]).read())
    assert set(needs["models"]) == {"softmax", "gaussian", "cosine", "inversion"}


def test_curve_accepts_per_item_labels(files, capsys):
    """Issue 11: curve needed an [n, n] relevance .npy instead of accepting labels."""
    t = files
    common = [
        "--tau",
        "5",
        "--models",
        "gaussian,cosine",
        "--budgets",
        "2",
        "--subsets",
        "1",
        "--queries",
        "8",
        "--n-boot",
        "50",
    ]
    tables = []
    for name, rel in (("rel", "rel.npy"), ("lab", "labels.npy")):
        assert (
            main(
                [
                    "curve",
                    *(str(t / f) for f in ("broad.npy", "target.npy", "items.npy", rel)),
                    *common,
                    "-o",
                    str(t / name),
                ]
            )
            == 0
        )
        tables.append((t / name / "curve.csv").read_text())
    capsys.readouterr()
    assert tables[0] == tables[1]


@pytest.mark.parametrize(
    "extra, match",
    [
        (["--models", "oracle"], "model 'oracle': unknown; registered: softmax"),
        (["--model", "no_such_module_xyz:f"], "cannot import 'no_such_module_xyz'"),
        (["--model", "json:nothing"], "--model: 'json' has no 'nothing'"),
        (["--budgets", "1,x"], "--budgets: expected comma-separated whole numbers >= 1"),
        (["--budgets", "0,4"], "--budgets: expected comma-separated whole numbers >= 1"),
        (["--queries", "0"], "--queries: expected a whole number >= 1, got '0'"),
    ],
)
def test_curve_errors(files, capsys, extra, match):
    t = files
    argv = [
        "curve",
        *(str(t / f) for f in ("broad.npy", "target.npy", "items.npy", "rel.npy")),
        "--tau",
        "5",
        "-o",
        str(t / "bad"),
        *extra,
    ]
    try:
        rc = main(argv)
    except SystemExit as stop:  # a usage error of the parser: one line too
        rc = stop.code
    assert rc == 2
    err = capsys.readouterr().err
    assert match in err and len(err.strip().splitlines()) == 1, err


def test_curve_relevance_shape_error(files, capsys):
    t = files
    np.save(t / "rel_bad.npy", np.zeros((3, 3), bool))
    rc = main(
        [
            "curve",
            str(t / "broad.npy"),
            str(t / "target.npy"),
            str(t / "items.npy"),
            str(t / "rel_bad.npy"),
            "--tau",
            "5",
            "-o",
            str(t / "bad"),
        ]
    )
    assert (
        rc == 2
        and "relevance: expected a [24, 24] relevance matrix (queries x gallery), [24] labels"
        in capsys.readouterr().err
    )


def test_help_explains_every_option(capsys):
    with pytest.raises(SystemExit):
        main(["curve", "--help"])
    # argparse wraps at hyphens too: "isotropic-\n    gaussian" is one name
    text = re.sub(r"-\n\s+", "-", capsys.readouterr().out)
    for opt in (
        "--tau",
        "--models",
        "--budgets",
        "--subsets",
        "--queries",
        "--fraction",
        "--seed",
        "--n-boot",
        "--title",
        "posterior-gaussian",
        "isotropic-gaussian",
        "--model",
        "module:function",
        "anchordiv.models",
        "--json",
    ):
        assert opt in text


ARGS = ("broad.npy", "target.npy", "items.npy", "rel.npy")
QUICK = ["--tau", "5", "--budgets", "2", "--subsets", "2", "--queries", "8", "--n-boot", "50"]

PLUGIN = """
import functools
import warnings

import anchordiv as ad


def shrunk(broad, target, tau):
    \"\"\"A user's curve model: the Gaussian of the targets plus the broad anchors.\"\"\"
    warnings.warn("shrunk: this factory always warns")
    return ad.fit("gaussian", list(target) + list(broad[:5]), tau=tau)


def wrong(broad, target):
    return ad.fit("gaussian", target, tau=1.0)


ad.register_model("registered-in-module", functools.partial(shrunk), overwrite=True)
"""


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    (tmp_path / "curve_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "curve_plugin"
    import sys

    from anchordiv.evaluation.curves import MODELS

    MODELS.pop("registered-in-module", None)
    sys.modules.pop("curve_plugin", None)


def _curve(t, *extra):
    return main(["curve", *(str(t / f) for f in ARGS), *QUICK, *extra])


def test_table_on_stdout(files, capsys):
    assert _curve(files, "--models", "gaussian,cosine", "-o", str(files / "table")) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("mean AUPRC [95% interval] by target anchors (prevalence ")
    assert out[1].split() == ["model", "n=2", "n=9"]
    assert out[2].split()[0] == "gaussian" and out[3].split()[0] == "cosine"
    assert out[-1].startswith("wrote table ")


def test_model_from_module_function(files, capsys, plugin):
    with pytest.warns(UserWarning, match=r"'shrunk': \d+ warning\(s\) in 3 of 3 cells"):
        rc = _curve(
            files,
            "--models",
            "cosine",
            "--model",
            f"{plugin}:shrunk",
            "--model",
            f"mine={plugin}:shrunk",
            "-o",
            str(files / "mf"),
        )
    assert rc == 0
    rows = [line.split()[0] for line in capsys.readouterr().out.splitlines()[2:5]]
    assert rows == ["cosine", "shrunk", "mine"]


def test_model_from_a_file_or_a_module_in_the_current_directory(
    files, capsys, tmp_path, monkeypatch
):
    """``--model`` takes what ``adapt --model`` takes: a file path (relative here) or a module
    in the current directory, as ``[NAME=]...:function``."""
    import sys

    (tmp_path / "cwd_models.py").write_text(PLUGIN.replace("registered-in-module", "cwd-model"))
    monkeypatch.chdir(tmp_path)
    try:
        with pytest.warns(UserWarning, match="'shrunk'"):
            rc = _curve(
                files,
                "--models",
                "",
                "--model",
                "cwd_models.py:shrunk",
                "--model",
                "mine=cwd_models:shrunk",
                "-o",
                str(files / "cwd"),
            )
        assert rc == 0
        rows = [line.split()[0] for line in capsys.readouterr().out.splitlines()[2:4]]
        assert rows == ["shrunk", "mine"]
        assert _curve(files, "--model", "cwd_models.py:absent", "-o", str(files / "x")) == 2
        assert "--model: 'cwd_models.py' has no 'absent'" in capsys.readouterr().err
    finally:
        from anchordiv.evaluation.curves import MODELS

        MODELS.pop("cwd-model", None)
        sys.modules.pop("cwd_models", None)


def test_model_registered_by_a_module(files, capsys, plugin):
    with pytest.warns(UserWarning, match="registered-in-module"):
        assert _curve(files, "--models", "", "--model", plugin, "-o", str(files / "mod")) == 0
    assert "registered-in-module" in capsys.readouterr().out


def test_model_from_an_entry_point(files, capsys, plugin, monkeypatch):
    import importlib.metadata

    ep = importlib.metadata.EntryPoint("plugged", f"{plugin}:shrunk", "anchordiv.models")
    monkeypatch.setattr(
        importlib.metadata,
        "entry_points",
        lambda group=None: [ep] if group == "anchordiv.models" else [],
    )
    with pytest.warns(UserWarning, match="'plugged'"):
        assert (
            _curve(files, "--models", "cosine", "--model", "plugged", "-o", str(files / "ep")) == 0
        )
    assert "plugged" in capsys.readouterr().out


def test_factory_with_the_wrong_signature(files, capsys, plugin):
    assert _curve(files, "--model", f"{plugin}:wrong", "-o", str(files / "bad")) == 2
    err = capsys.readouterr().err
    assert "model 'wrong': the factory must accept (broad [m, d], target [n, d], tau)" in err
    assert "Traceback" not in err


def test_log_of_a_piped_run_is_readable_lines(files, tmp_path, plugin):
    """``anchordiv curve ... 2>log``: progress as whole lines, one warning per model."""
    import os
    import subprocess
    import sys

    log = tmp_path / "log"
    env = {
        **os.environ,
        "ANCHORDIV_PROGRESS_INTERVAL": "0",
        "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path]),
    }
    with open(log, "w") as err:
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "anchordiv.app.cli",
                "curve",
                *(str(files / f) for f in ARGS),
                *QUICK,
                "--models",
                "gaussian",
                "--model",
                f"{plugin}:shrunk",
                "-o",
                str(tmp_path / "out"),
            ],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=env,
            timeout=300,
        )
    assert run.returncode == 0, log.read_text()
    text = log.read_text()
    assert "\r" not in text
    lines = text.splitlines()
    progress = [line for line in lines if line.startswith("curve:")]
    assert len(progress) >= 2 and progress[-1].startswith("curve: 100%")
    warned = [line for line in lines if "warning" in line]
    assert all(line.startswith("anchordiv curve: warning: model '") for line in warned)
    models = sorted(line.split("'")[1] for line in warned)
    assert models == ["gaussian", "shrunk"]  # one summary per model, not per cell
