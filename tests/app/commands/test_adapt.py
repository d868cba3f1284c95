"""``anchordiv adapt``: options forwarded to ``ad.adapt`` only when given; readable output."""

import importlib
import json

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.adaptation import broad_from_model
from anchordiv.app.cli import main
from helpers import clustered_anchors, unit

FLAGS = [
    ("--method", "svi", "method", "svi"),
    ("--guide", "lowrank", "guide", "lowrank"),
    ("--guide-rank", "3", "guide_rank", 3),
    ("--subspace", "4", "subspace", 4),
    ("--num-steps", "50", "num_steps", 50),
    ("--learning-rate", "0.01", "learning_rate", 0.01),
    ("--num-samples", "30", "num_samples", 30),
    ("--num-warmup", "20", "num_warmup", 20),
    ("--num-chains", "1", "num_chains", 1),
    ("--seed", "3", "seed", 3),
]


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
    package = importlib.import_module("anchordiv.adaptation")  # ad.adapt is the function
    real = package.adapt

    def fake(kind, broad, target, **options):
        seen.append(options)
        return real(kind, broad, target, tau=options["tau"])

    monkeypatch.setattr(package, "adapt", fake)
    return seen


def run(t, *extra):
    return main(
        [
            "adapt",
            "gaussian",
            str(t / "b.npy"),
            str(t / "t.npy"),
            "-o",
            str(t / "m"),
            "--tau",
            "5",
            "--overwrite",
            *extra,
        ]
    )


def test_only_given_options_are_forwarded_and_progress_is_not_forced_off(files, calls, capsys):
    assert run(files) == 0
    assert set(calls[-1]) == {"tau", "prior", "method", "normalize"}
    # each method's flags with it (another method's options are refused before the fit)
    nuts_only = ("num_warmup", "num_chains")
    svi = [f for f in FLAGS if f[2] not in nuts_only]
    nuts = [("--method", "nuts", "method", "nuts")]
    nuts += [f for f in FLAGS if f[2] in (*nuts_only, "num_samples", "seed", "subspace")]
    for flags in (svi, nuts):
        argv = [x for flag, value, _, _ in flags for x in (flag, value)]
        assert run(files, *argv) == 0
        for _, _, name, value in flags:
            assert calls[-1][name] == value
        assert "progress" not in calls[-1]
    capsys.readouterr()


def test_help_describes_every_sampler_flag(capsys):
    with pytest.raises(SystemExit):
        main(["adapt", "--help"])
    text = capsys.readouterr().out
    for flag, *_ in FLAGS:
        assert flag in text
    from anchordiv.adaptation import METHOD_OPTIONS  # --method lists the library's methods

    assert ",".join(METHOD_OPTIONS) in text and "delta,normal,lowrank" in text


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


@pytest.fixture
def saved_prior(tmp_path):
    """A saved Gaussian prior directory (what ``build-prior`` and ``models/*`` hold) with an
    encoder and τ on its card, and unit target anchors."""
    rng = np.random.default_rng(1)
    broad = unit(rng, 80, 6)
    ad.save_model(ad.fit("gaussian", broad, tau=7.0), tmp_path / "prior", encoder="enc-x")
    np.save(tmp_path / "t.npy", clustered_anchors(rng, 6, 6))
    return tmp_path


@pytest.mark.parametrize("how", ["flag", "positional"])
def test_adapt_from_a_saved_prior_directory(saved_prior, how, capsys):
    """``--prior DIR`` (or the directory as BROAD) adapts from the saved model: the same
    posterior as ad.adapt on its stand-in anchors, τ and encoder from its card."""
    t = saved_prior
    where = (
        ["--prior", str(t / "prior"), str(t / "t.npy")]
        if how == "flag"
        else [str(t / "prior"), str(t / "t.npy")]
    )
    assert (
        main(
            [
                "adapt",
                "gaussian",
                *where,
                "-o",
                str(t / "m"),
                "--kappa0",
                "3",
                "--nu0",
                "12",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["tau"] == 7.0 and out["encoder"] == "enc-x"
    got = ad.load_model(t / "m")
    broad = broad_from_model(ad.load_model(t / "prior"))
    want = ad.adapt("gaussian", broad, np.load(t / "t.npy"), tau=7.0, kappa0=3.0, nu0=12.0).point(
        "mean"
    )
    np.testing.assert_allclose(np.asarray(got.mean), np.asarray(want.mean), rtol=1e-12)
    np.testing.assert_allclose(
        np.asarray(got.factor @ got.factor.T), np.asarray(want.factor @ want.factor.T), rtol=1e-10
    )


def test_prior_directory_errors_are_clear(saved_prior, capsys):
    t = saved_prior
    assert (
        main(
            ["adapt", "gaussian", "--prior", str(t / "nope"), str(t / "t.npy"), "-o", str(t / "m")]
        )
        != 0
    )
    assert "no such directory" in capsys.readouterr().err
    assert (
        main(
            [
                "adapt",
                "gaussian",
                "--prior",
                str(t / "prior"),
                str(t / "t.npy"),
                str(t / "t.npy"),
                "-o",
                str(t / "m"),
            ]
        )
        != 0
    )
    assert "expected TARGET" in capsys.readouterr().err
    assert (
        main(
            ["adapt", "mixture", "--prior", str(t / "prior"), str(t / "t.npy"), "-o", str(t / "m")]
        )
        != 0
    )
    assert "EM on the broad anchors" in capsys.readouterr().err


def test_prior_flags_come_from_the_families():
    """Every keyword-only parameter of each family's ``from_anchors`` (bar ``prior``) becomes
    one flag whose help names the kinds (a new family needs no edit in the CLI)."""
    from anchordiv.adaptation import FAMILIES, OPTIONS
    from anchordiv.app.commands.adapt import prior_options

    flags = prior_options()
    for kind in FAMILIES:
        for name in OPTIONS[kind]:
            assert kind in flags[name][2] and flags[name][0] == "--" + name.replace("_", "-")
    assert flags["strengths"][3] == ["held-out", "evidence"]  # a Literal: choices
    assert flags["em_seed"][0] == "--em-seed" and "mixture" in flags["em_seed"][2]


def test_method_flags_come_from_the_method_table():
    """The method flags are options of the library's methods; --method's choices and the
    defaults of --method and --prior are the library's (``METHOD_OPTIONS``, ``COMMON``)."""
    from anchordiv.adaptation import COMMON, METHOD_OPTIONS
    from anchordiv.app.cli import build_parser
    from anchordiv.app.commands.adapt import METHOD_HELP

    assert set(METHOD_HELP) <= {n for names in METHOD_OPTIONS.values() for n in names}
    args = build_parser().parse_args(["adapt", "gaussian", "b.npy", "t.npy", "-o", "out"])
    assert (args.method, args.prior) == (COMMON["method"], COMMON["prior"])
    sub = build_parser()._subparsers._group_actions[0].choices["adapt"]
    method = next(a for a in sub._actions if a.dest == "method")
    assert list(method.choices) == list(METHOD_OPTIONS)


def test_flag_values_follow_the_annotations():
    """``float | Literal["auto"]`` takes numbers and 'auto'; ``int | Literal[...] | None`` takes
    integers, the words and 'none' (merged over the families that share the name)."""
    import argparse

    from anchordiv.app.commands.adapt import prior_options

    flags = prior_options()
    kappa0, rank = flags["kappa0"][1], flags["rank"][1]
    assert kappa0("auto") == "auto" and kappa0("2.5") == 2.5
    assert rank("7") == 7 and rank("variance") == "variance" and rank("none") is None
    with pytest.raises(argparse.ArgumentTypeError, match="expected a number or 'auto'"):
        kappa0("many")
    with pytest.raises(argparse.ArgumentTypeError, match="'auto'"):
        rank("2.5x")


def test_the_help_is_the_numpydoc_description():
    from anchordiv.app.commands._options import parameter_docs, plain

    doc = """Summary.

    Parameters
    ----------
    a, b : float
        Shared text,
        on two lines.
    c : int, optional
        Own text, see :func:`x` and ``y``.

    Returns
    -------
    int
        Not a parameter.
    """
    docs = parameter_docs(doc)
    assert docs == {
        "a": "Shared text, on two lines.",
        "b": "Shared text, on two lines.",
        "c": "Own text, see :func:`x` and ``y``.",
    }
    assert plain(docs["c"]) == "Own text, see x and y."


FAMILY_MODULE = '''
from anchordiv.adaptation.families.diagonal import DiagonalPrior
from anchordiv.adaptation.registry import family


@family("cli-diagonal")
class CliDiagonalPrior(DiagonalPrior):
    """A user's family in a file of their own, registered under its own kind."""
'''


def test_a_family_from_the_users_own_file_adapts_from_the_command_line(files, capsys):
    """``--family file.py:Class`` registers the user's kind; ``--prior-option`` reaches its
    ``from_anchors``; the saved model is that family's posterior mean."""
    from anchordiv.adaptation.registry import FAMILIES

    (files / "fam.py").write_text(FAMILY_MODULE)
    args = ["adapt", "cli-diagonal", str(files / "b.npy"), str(files / "t.npy")]
    try:
        assert main([*args, "-o", str(files / "x"), "--tau", "10"]) == 2  # not registered yet
        assert "kind: unknown 'cli-diagonal'" in capsys.readouterr().err
        spec = f"{files / 'fam.py'}:CliDiagonalPrior"
        extra = ["--tau", "10", "--family", spec, "--prior-option", "kappa0=4"]
        assert main([*args, "-o", str(files / "m"), *extra]) == 0
        # the family's from_anchors options are flags once --family imported it
        flagged = ["--tau", "10", "--family", spec, "--kappa0", "4"]
        assert main([*args, "-o", str(files / "f"), *flagged]) == 0
        np.testing.assert_array_equal(
            ad.load_model(files / "f").mean, ad.load_model(files / "m").mean
        )
        prior = FAMILIES["cli-diagonal"].from_anchors(np.load(files / "b.npy"), kappa0=4)
        want = ad.infer(prior, np.load(files / "t.npy"), tau=10.0).point("mean")
        got = ad.load_model(files / "m")
        np.testing.assert_allclose(got.mean, want.mean, rtol=1e-12)
        wrong = ["adapt", "gaussian", *args[2:], "-o", str(files / "y"), "--family", spec]
        assert main(wrong) == 2  # the kind must be the one the class registered
        assert "is registered as 'cli-diagonal'" in capsys.readouterr().err
    finally:
        FAMILIES.pop("cli-diagonal", None)
