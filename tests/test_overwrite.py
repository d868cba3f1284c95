"""Nothing is overwritten without asking (issue 27): every Python writer refuses an existing
non-empty destination unless ``overwrite=True`` and every CLI ``-o`` unless ``--overwrite``;
the refusal comes before any work (the CLI checks its outputs before it reads its inputs) and
leaves the destination as it was.  One rule for all: :func:`anchordiv.errors.check_output`."""

import json

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.app.cli import main
from anchordiv.errors import OutputExistsError, check_output
from helpers import clustered_anchors, unit


@pytest.fixture(scope="module")
def post():
    rng = np.random.default_rng(0)
    return ad.adapt(
        "gaussian", unit(rng, 40, 4), clustered_anchors(rng, 6, 4), tau=5.0, kappa0=2.0, nu0=8.0
    )


def occupied(path):
    """A non-empty directory ``path`` holding one marker file; returns the marker."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "keep.txt").write_text("mine")
    return path / "keep.txt"


def test_the_rule(tmp_path):
    assert check_output(tmp_path / "new") == tmp_path / "new"
    (tmp_path / "empty").mkdir()
    check_output(tmp_path / "empty")  # an empty directory is fine
    occupied(tmp_path / "full")
    with pytest.raises(
        OutputExistsError,
        match=r"full: already exists \(a non-empty "
        r"directory\); pass overwrite=True",
    ):
        check_output(tmp_path / "full")
    check_output(tmp_path / "full", overwrite=True)
    (tmp_path / "f.npy").write_bytes(b"x")
    with pytest.raises(OutputExistsError, match=r"already exists \(a file\)"):
        check_output(tmp_path / "f.npy", file=True)
    with pytest.raises(ad.AnchorDivError, match="is a directory"):
        check_output(tmp_path / "full", True, file=True)
    with pytest.raises(ad.AnchorDivError, match="exists and is not a directory"):
        check_output(tmp_path / "f.npy", True)
    assert (
        OutputExistsError(tmp_path, "x")
        .message("--overwrite")
        .endswith("pass --overwrite to replace it, or choose another path")
    )


def _refuses(write, path):
    marker = occupied(path)
    with pytest.raises(OutputExistsError, match="pass overwrite=True"):
        write(path)
    assert marker.read_text() == "mine" and sorted(p.name for p in path.iterdir()) == ["keep.txt"]
    write(path, overwrite=True)
    assert (path / "card.json").is_file()


def test_save_model(tmp_path, post):
    _refuses(lambda p, **kw: ad.save_model(post.point("mean"), p, **kw), tmp_path / "m")


def test_prior_save(tmp_path, post):
    _refuses(lambda p, **kw: post.prior.save(p, **kw), tmp_path / "prior")
    assert ad.load_prior(tmp_path / "prior").kind == "gaussian"


def test_posterior_save_and_save_posterior(tmp_path, post):
    _refuses(lambda p, **kw: post.save(p, **kw), tmp_path / "p1")
    _refuses(lambda p, **kw: ad.save_posterior(post, p, **kw), tmp_path / "p2")


def test_save_inference_data(tmp_path, post):
    idata = ad.inference_data(post, num_draws=4)
    _refuses(lambda p, **kw: ad.save_inference_data(idata, p, **kw), tmp_path / "i")


def test_faiss_index_save(tmp_path):
    pytest.importorskip("faiss")
    rng = np.random.default_rng(1)
    index = ad.GalleryIndex(
        ad.fit("gaussian", unit(rng, 30, 4), tau=5.0), unit(rng, 50, 4)
    ).to_faiss("flat")
    _refuses(lambda p, **kw: index.save(p, **kw), tmp_path / "idx")


def test_save_embeddings(tmp_path):
    x = unit(np.random.default_rng(2), 3, 4)
    path = ad.save_embeddings(tmp_path / "e", x, encoder="enc", logit_scale=5.0)
    with pytest.raises(OutputExistsError, match=r"e.npy: already exists \(a file\)"):
        ad.save_embeddings(tmp_path / "e.npy", 2 * x)
    np.testing.assert_array_equal(np.load(path), x)
    path.unlink()  # the sidecar alone is protected too
    with pytest.raises(OutputExistsError, match=r"e.json: already exists"):
        ad.save_embeddings(tmp_path / "e", x)
    ad.save_embeddings(tmp_path / "e", 2 * x, overwrite=True)
    np.testing.assert_array_equal(np.load(path), 2 * x)


def test_curve_write(tmp_path):
    rng = np.random.default_rng(3)
    items = unit(rng, 12, 4)
    labels = np.arange(12) % 3
    curve = ad.adaptation_curve(
        unit(rng, 20, 4),
        unit(rng, 6, 4),
        items,
        items,
        labels[:, None] == labels[None, :],
        tau=5.0,
        models=["gaussian", "cosine"],
        budgets=[2],
        n_subsets=1,
        n_boot=10,
        query_index=np.arange(12),
    )
    out = tmp_path / "c"
    out.mkdir()
    (out / "notes.txt").write_text("other files in the directory are fine")
    curve.write(out)
    before = (out / "curve.csv").read_text()
    with pytest.raises(OutputExistsError, match="curve.csv: already exists"):
        curve.write(out)
    assert (out / "curve.csv").read_text() == before
    assert set(curve.write(out, overwrite=True)) == {"table", "summary", "needs", "plot"}


def test_build_prior_refuses_before_embedding(tmp_path):
    from anchordiv.app.build import PriorSpec, build_prior
    from anchordiv.data.vocab import Source

    occupied(tmp_path / "p")
    calls = []
    spec = PriorSpec("x", [Source("text", (str(tmp_path / "missing.txt"),))])
    with pytest.raises(OutputExistsError):
        build_prior(spec, encoder="h", embed=lambda t: calls.append(t), tau=1.0, out=tmp_path / "p")
    assert calls == []


def test_run_demo_refuses_an_existing_report_directory(tmp_path):
    from anchordiv.app.studies.main_job import run_demo

    occupied(tmp_path / "rep")
    with pytest.raises(OutputExistsError):
        run_demo(tmp_path / "rep", size="small", encoder="no-such-encoder")


# ---- the command line ----------------------------------------------------------------------


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(4)
    ad.save_embeddings(tmp_path / "b.npy", unit(rng, 40, 4), encoder="enc", logit_scale=5.0)
    ad.save_embeddings(
        tmp_path / "t.npy", clustered_anchors(rng, 8, 4), encoder="enc", logit_scale=5.0
    )
    np.save(tmp_path / "labels.npy", np.arange(8) % 2)
    return tmp_path


#: command -> argv after the command, with OUT where the destination goes.  Inputs that do not
#: exist prove the destination is checked first.
COMMANDS = {
    "fit": ["gaussian", "MISSING.npy", "-o", "OUT"],
    "adapt": ["gaussian", "MISSING.npy", "MISSING.npy", "-o", "OUT"],
    "curve": ["MISSING.npy"] * 4 + ["-o", "OUT"],
    "evaluate": ["MISSING", "--gallery", "MISSING.npy", "--relevance", "MISSING.npy", "-o", "OUT"],
    "diagnose": ["MISSING", "-o", "OUT"],
    "build-prior": ["--text", "MISSING.txt", "-o", "OUT"],
    "demo": ["--small", "--encoder", "no-such-encoder", "-o", "OUT"],
    "study": ["budget", "--small", "--encoder", "no-such-encoder", "-o", "OUT"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_cli_directory_outputs_refused_before_any_work(command, tmp_path, capsys):
    marker = occupied(tmp_path / "out")
    argv = [
        str(tmp_path / "out") if a == "OUT" else str(tmp_path / a) if a.startswith("MISSING") else a
        for a in COMMANDS[command]
    ]
    assert main([command, *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"anchordiv {command}: error: {tmp_path / 'out'}: already exists (a "
        f"non-empty directory); pass --overwrite to replace it"
    )
    assert err.count("\n") == 1 and marker.read_text() == "mine"


def test_cli_build_models_checks_every_prior_first(tmp_path, capsys):
    from anchordiv.app.studies.priors import PRIORS

    last = list(PRIORS)[-1]
    occupied(tmp_path / "models" / last)
    assert main(["build-models", "-o", str(tmp_path / "models"), "--encoder", "nope"]) == 2
    assert f"{last}: already exists" in capsys.readouterr().err
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == [last]


def test_cli_fit_and_adapt_replace_only_with_overwrite(files, capsys):
    t = files
    fit = ["fit", "gaussian", str(t / "t.npy"), "-o", str(t / "m")]
    assert main(fit) == 0
    before = (t / "m" / "card.json").read_text()
    adapt = ["adapt", "gaussian", str(t / "b.npy"), str(t / "t.npy"), "-o", str(t / "m")]
    assert main(adapt) == 2  # the issue: an adapted model replaced by a fit, silently
    assert "pass --overwrite" in capsys.readouterr().err
    assert (t / "m" / "card.json").read_text() == before
    assert main([*adapt, "--overwrite"]) == 0
    assert "adaptation" in json.loads((t / "m" / "card.json").read_text())
    occupied(t / "post")
    assert main([*adapt, "-o", str(t / "m2"), "--posterior-out", str(t / "post")]) == 2
    assert not (t / "m2").exists(), "both destinations are checked before anything is written"
    capsys.readouterr()


def test_cli_search_prefix_files(files, capsys):
    t = files
    assert main(["fit", "gaussian", str(t / "t.npy"), "-o", str(t / "m")]) == 0
    search = [
        "search",
        str(t / "m"),
        str(t / "t.npy"),
        str(t / "b.npy"),
        "-k",
        "3",
        "-o",
        str(t / "res" / "run"),
    ]
    assert main(search) == 0
    before = np.load(t / "res" / "run.indices.npy")
    (t / "res" / "run.indices.npy").unlink()
    assert main(search) == 2  # run.divergences.npy and run.csv still there
    assert (
        "run.divergences.npy: already exists (a file); pass --overwrite" in capsys.readouterr().err
    )
    assert main([*search, "--overwrite"]) == 0
    np.testing.assert_array_equal(np.load(t / "res" / "run.indices.npy"), before)
    capsys.readouterr()


def test_cli_embed_file(tmp_path, capsys):
    (tmp_path / "e.npy").write_bytes(b"not mine to replace")
    assert main(["embed", str(tmp_path / "MISSING.txt"), "-o", str(tmp_path / "e")]) == 2
    assert "e.npy: already exists (a file); pass --overwrite" in capsys.readouterr().err
    assert (tmp_path / "e.npy").read_bytes() == b"not mine to replace"
