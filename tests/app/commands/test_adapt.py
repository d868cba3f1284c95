"""``anchordiv adapt``: options forwarded to ``ad.adapt`` only when given; readable output."""

import importlib
import json

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.app.cli import main
from helpers import clustered_anchors, unit

FLAGS = [("--method", "svi", "method", "svi"), ("--guide", "lowrank", "guide", "lowrank"),
         ("--guide-rank", "3", "guide_rank", 3), ("--subspace", "4", "subspace", 4),
         ("--num-steps", "50", "num_steps", 50), ("--learning-rate", "0.01", "learning_rate", 0.01),
         ("--num-samples", "30", "num_samples", 30), ("--num-warmup", "20", "num_warmup", 20),
         ("--num-chains", "1", "num_chains", 1), ("--seed", "3", "seed", 3)]


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    np.save(tmp_path / "b.npy", unit(rng, 80, 6))
    np.save(tmp_path / "t.npy", clustered_anchors(rng, 6, 6))
    return tmp_path


@pytest.fixture
def calls(monkeypatch):
    """Record the options ``ad.adapt`` receives; run the exact update for the result."""
    seen = []
    package = importlib.import_module("anchordiv.adapt")   # ad.adapt is the function
    real = package.adapt

    def fake(kind, broad, target, **options):
        seen.append(options)
        return real(kind, broad, target, tau=options["tau"])

    monkeypatch.setattr(package, "adapt", fake)
    return seen


def run(t, *extra):
    return main(["adapt", "gaussian", str(t / "b.npy"), str(t / "t.npy"), "-o", str(t / "m"),
                 "--tau", "5", *extra])


def test_only_given_options_are_forwarded_and_progress_is_not_forced_off(files, calls, capsys):
    assert run(files) == 0
    assert set(calls[-1]) == {"tau", "prior", "method", "normalize"}
    argv = [x for flag, value, _, _ in FLAGS for x in (flag, value)]
    assert run(files, *argv) == 0
    for _, _, name, value in FLAGS:
        assert calls[-1][name] == value
    assert "progress" not in calls[-1]
    capsys.readouterr()


def test_help_describes_every_sampler_flag(capsys):
    with pytest.raises(SystemExit):
        main(["adapt", "--help"])
    text = capsys.readouterr().out
    for flag, *_ in FLAGS:
        assert flag in text
    assert "exact,svi,nuts" in text and "delta,normal,lowrank" in text


def test_prints_a_table_by_default_and_json_on_request(files, capsys):
    """Issue 11: adapt printed one-line JSON instead of a readable table."""
    assert run(files, "--posterior-out", str(files / "p")) == 0
    out = capsys.readouterr().out
    assert out.startswith("anchordiv adapt: gaussian (exact, broad prior) ->")
    assert "  kappa0: " in out and "  posterior: " in out
    assert run(files, "--json") == 0
    assert json.loads(capsys.readouterr().out)["tau"] == 5.0
    card = json.loads((files / "p" / "card.json").read_text())
    assert card["tau"] == 5.0 and card["anchor_source"] == str(files / "t.npy")
    assert ad.load_posterior(files / "p").kind == "gaussian"
