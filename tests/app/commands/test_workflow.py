"""The command line closes the loop (issue 27): embed → build-prior → adapt (exact, and a user's
NumPyro model with ``--model``) → curve on the prior directory → evaluate / search → diagnose,
with labels as text files, and no Python API call on the way (each step is ``anchordiv
main(argv)``, as a shell would run it; docs/guides/cli.md shows the same walk)."""

import json
from pathlib import Path

import numpy as np
import pytest

from anchordiv.app.cli import main

STYLES = ["watercolour", "ink", "marble", "oil", "charcoal", "mosaic"]
SUBJECTS = ["a harbour", "a cat", "an old tree", "a mountain", "a bowl of fruit"]

#: a user's NumPyro prior for the gaussian kind: the broad mean with a loose scale, the broad
#: covariance fixed (sites: mu, Sigma), its hyperparameters from the kind's prior (mu0, psi0,
#: nu0) and its own keyword (scale) from --model-kwargs
USER_MODEL = '''
import numpyro
import numpyro.distributions as dist


def loose_mean(targets, *, mu0, psi0, nu0, scale=1.0, **_):
    d = mu0.shape[-1]
    sigma = numpyro.deterministic("Sigma", psi0 / (nu0 - d - 1))
    mu = numpyro.sample("mu", dist.Normal(mu0, scale).to_event(1))
    numpyro.sample("targets", dist.MultivariateNormal(mu, sigma), obs=targets)
'''


@pytest.fixture
def shell(tmp_path, monkeypatch):
    """A working directory with text inputs, the embedding cache in it, the user's module."""
    monkeypatch.setenv("ANCHORDIV_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    Path("broad.txt").write_text(
        "\n".join(f"{s} painting of {o}" for s in STYLES[:4] for o in SUBJECTS) + "\n"
    )
    Path("target.txt").write_text("\n".join(f"a {s} picture" for s in STYLES) + "\n")
    items = [(s, f"{o}, in {s}") for s in STYLES for o in SUBJECTS[:3]]
    Path("items.txt").write_text("\n".join(t for _, t in items) + "\n")
    Path("labels.txt").write_text("\n".join(s for s, _ in items) + "\n")
    Path("labels.csv").write_text("style\n" + "\n".join(s for s, _ in items) + "\n")
    Path("mypriors.py").write_text(USER_MODEL)
    return tmp_path


def cli(capsys, *argv) -> dict:
    """Run one command with --json where it has one; its JSON output (or {})."""
    rc = main(list(argv))
    out, err = capsys.readouterr()
    assert rc == 0, f"anchordiv {' '.join(argv)} failed:\n{err}"
    assert "Traceback" not in err
    return json.loads(out) if "--json" in argv or argv[0] == "build-prior" else {}


def test_embed_build_prior_adapt_curve_search_diagnose(shell, capsys):
    for name in ("target", "items"):
        cli(capsys, "embed", f"{name}.txt", "-o", f"{name}.npy", "--json")
    prior = cli(capsys, "build-prior", "--text", "broad.txt", "-n", "0", "-o", "prior")
    assert prior["n_anchors"] == 20

    exact = cli(
        capsys,
        "adapt",
        "gaussian",
        "prior",
        "target.npy",
        "-o",
        "model",
        "--posterior-out",
        "post",
        "--json",
    )
    assert exact["tau"] == 20.0 and exact["encoder"].endswith("all-MiniLM-L6-v2")
    custom = cli(
        capsys,
        "adapt",
        "gaussian",
        "prior",
        "target.npy",
        "--method",
        "svi",
        "--model",
        "mypriors:loose_mean",
        "--model-kwargs",
        '{"scale": 0.5}',
        "--guide",
        "delta",
        "--summary",
        "map",
        "--subspace",
        "3",
        "--num-steps",
        "30",
        "--num-samples",
        "5",
        "-o",
        "custom",
        "--posterior-out",
        "custom-post",
        "--json",
    )
    assert custom["method"] == "svi" and custom["model"] == "mypriors:loose_mean"
    again = cli(
        capsys,
        "adapt",
        "gaussian",
        "--prior",
        "prior",
        "target.npy",
        "--method",
        "svi",
        "--model",
        "mypriors.py:loose_mean",
        "--guide",
        "delta",
        "--summary",
        "map",
        "--subspace",
        "3",
        "--num-steps",
        "30",
        "--num-samples",
        "5",
        "-o",
        "custom",
        "--overwrite",
        "--json",
    )
    assert again["model"] == "mypriors.py:loose_mean"

    cli(
        capsys,
        "curve",
        "prior",
        "target.npy",
        "items.npy",
        "labels.txt",
        "-o",
        "curve",
        "--models",
        "gaussian,posterior-gaussian,cosine",
        "--budgets",
        "2",
        "--subsets",
        "1",
        "--n-boot",
        "20",
    )
    summary = Path("curve/curve_summary.csv").read_text().splitlines()
    assert summary[0].startswith("model,") and len(summary) == 1 + 3 * 2
    assert "nan" not in Path("curve/curve.csv").read_text()

    for labels in ("labels.txt", "labels.csv"):
        ev = cli(
            capsys,
            "evaluate",
            "model",
            "custom",
            "--gallery",
            "items.npy",
            "--relevance",
            labels,
            "--baselines",
            "cosine",
            "-o",
            f"eval-{labels}",
            "--n-boot",
            "20",
            "--json",
        )
        assert {r["scorer"] for r in ev["summary"]} == {"model", "custom", "cosine"}
    assert (
        Path("eval-labels.txt/evaluation.json").read_text()
        == Path("eval-labels.csv/evaluation.json").read_text()
    )

    found = cli(
        capsys,
        "search",
        "custom",
        "items.npy",
        "items.npy",
        "-k",
        "3",
        "-o",
        "results/run",
        "--json",
    )
    assert found["k"] == 3 and np.load("results/run.indices.npy").shape == (18, 3)

    diag = cli(
        capsys,
        "diagnose",
        "post",
        "-o",
        "diag",
        "--num-draws",
        "8",
        "--queries",
        "items.npy",
        "--gallery",
        "items.npy",
        "-k",
        "3",
        "--stability-draws",
        "3",
        "--json",
    )
    assert Path(diag["summary"]).is_file() and len(diag["stability_rows"]) >= 1


def test_curve_takes_a_saved_prior_directory_as_its_moment_points(tmp_path, capsys):
    """``curve PRIORDIR``: the same table as the curve on the directory's moment points."""
    import anchordiv as ad
    from anchordiv.adaptation import broad_from_model
    from helpers import clustered_anchors, unit

    rng = np.random.default_rng(0)
    ad.save_model(ad.fit("gaussian", unit(rng, 30, 5), tau=6.0), tmp_path / "prior", encoder="enc")
    np.save(tmp_path / "t.npy", clustered_anchors(rng, 6, 5))
    np.save(tmp_path / "items.npy", clustered_anchors(rng, 12, 5))
    np.save(tmp_path / "labels.npy", np.arange(12) % 3)
    np.save(tmp_path / "b.npy", broad_from_model(ad.load_model(tmp_path / "prior")))
    common = [
        str(tmp_path / "t.npy"),
        str(tmp_path / "items.npy"),
        str(tmp_path / "labels.npy"),
        "--models",
        "posterior-gaussian,gaussian",
        "--budgets",
        "2",
        "--subsets",
        "2",
        "--n-boot",
        "10",
        "--tau",
        "6",
        "--json",
    ]
    assert main(["curve", str(tmp_path / "prior"), *common, "-o", str(tmp_path / "a")]) == 0
    assert main(["curve", str(tmp_path / "b.npy"), *common, "-o", str(tmp_path / "b")]) == 0
    capsys.readouterr()
    assert (tmp_path / "a" / "curve.csv").read_text() == (tmp_path / "b" / "curve.csv").read_text()
