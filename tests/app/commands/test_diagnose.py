"""``anchordiv diagnose``: ArviZ summary, plots and retrieval stability of a saved posterior."""

import csv

import numpy as np

import anchordiv as ad
from anchordiv.app.cli import main
from helpers import clustered_anchors, unit


def test_diagnose_writes_summary_plots_and_stability(tmp_path, capsys):
    rng = np.random.default_rng(0)
    post = ad.adapt("gaussian", unit(rng, 80, 4), clustered_anchors(rng, 6, 4), tau=5.0)
    post.save(tmp_path / "p")
    np.save(tmp_path / "q.npy", unit(rng, 3, 4))
    np.save(tmp_path / "g.npy", unit(rng, 15, 4))
    np.save(tmp_path / "r.npy", rng.random((3, 15)) < 0.3)
    rc = main(
        [
            "diagnose",
            str(tmp_path / "p"),
            "-o",
            str(tmp_path / "d"),
            "--num-draws",
            "10",
            "--queries",
            str(tmp_path / "q.npy"),
            "--gallery",
            str(tmp_path / "g.npy"),
            "--relevance",
            str(tmp_path / "r.npy"),
            "-k",
            "3",
            "--stability-draws",
            "3",
        ]
    )
    assert rc == 0
    out = capsys.readouterr().out
    assert out.startswith("anchordiv diagnose: gaussian posterior (exact)")
    for name in ("summary.csv", "posterior.png", "trace.png", "stability.csv"):
        assert (tmp_path / "d" / name).stat().st_size > 0
    with open(tmp_path / "d" / "summary.csv") as f:
        assert {"mean", "r_hat", "ess_bulk"} <= set(next(csv.reader(f)))
    with open(tmp_path / "d" / "stability.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["quantity"] for r in rows] == ["topk_overlap", "auprc"]
    assert all(r["interval"] == "0.95" for r in rows)
    assert "mean_cosine" in ad.load_inference_data(tmp_path / "d" / "idata")["posterior"]
    # power-scaling the prior: per quantity and per α, the scorer's top-k overlap and AUPRC
    assert "prior sensitivity: exact, " in out and "top-3 overlap" in out
    # the diagnosis and the endpoints, not only the α curve (which measures the prior's strength)
    assert "prior sensitivity, diagnosis: " in out and "prior strength, retrieval: " in out
    assert "prior influence: The posterior-mean scorer's top-3 overlaps the prior-only" in out
    with open(tmp_path / "d" / "sensitivity.csv") as f:
        head = next(csv.reader(f))
    assert head == ["quantity", "prior", "likelihood", "diagnosis", "scale_free", "at"]
    with open(tmp_path / "d" / "sensitivity_curve.csv") as f:
        curve = list(csv.DictReader(f))
    assert {"alpha", "shift_mu", "shift_Sigma", "topk_overlap", "auprc"} <= set(curve[0])
    assert [float(r["topk_overlap"]) for r in curve if r["alpha"] == "1.0"] == [1.0]


def test_diagnose_a_spectral_posterior(tmp_path, capsys):
    """A posterior without a conjugate form (SVI on ``ad.SpectralPrior``), saved and reloaded:
    the scales reach the summary, the stability table runs on its draws."""
    rng = np.random.default_rng(1)
    prior = ad.SpectralPrior.from_anchors(unit(rng, 80, 4), rank=2)
    post = ad.infer(
        prior,
        clustered_anchors(rng, 6, 4),
        ad.SVI(guide="normal", num_steps=300, num_samples=20, progress=False),
        tau=5.0,
    )
    post.save(tmp_path / "p")
    np.save(tmp_path / "q.npy", unit(rng, 3, 4))
    np.save(tmp_path / "g.npy", unit(rng, 15, 4))
    rc = main(
        [
            "diagnose",
            str(tmp_path / "p"),
            "-o",
            str(tmp_path / "d"),
            "--num-draws",
            "10",
            "--queries",
            str(tmp_path / "q.npy"),
            "--gallery",
            str(tmp_path / "g.npy"),
            "-k",
            "3",
            "--stability-draws",
            "3",
        ]
    )
    assert rc == 0
    assert capsys.readouterr().out.startswith("anchordiv diagnose: spectral posterior (svi)")
    idata = ad.load_inference_data(tmp_path / "d" / "idata")
    assert {"variances", "local_scales", "relative_scales"} <= set(idata["posterior"])


def test_diagnose_a_single_chain_nuts_posterior(tmp_path, capsys):
    """One NUTS chain has no R-hat (it needs two): the summary, plots and headline are still
    written, with R-hat "n/a"."""
    rng = np.random.default_rng(2)
    post = ad.adapt(
        "gaussian",
        unit(rng, 40, 3),
        clustered_anchors(rng, 5, 3),
        tau=5.0,
        method="nuts",
        num_samples=20,
        num_warmup=20,
        num_chains=1,
        progress=False,
    )
    post.save(tmp_path / "p")
    assert main(["diagnose", str(tmp_path / "p"), "-o", str(tmp_path / "d"), "--json"]) == 0
    import json

    shown = json.loads(capsys.readouterr().out)
    assert shown["max_r_hat"] is None and shown["max_r_hat_at"] == "n/a"
    assert shown["min_ess_bulk"] > 0
    assert shown["prior_sensitivity"]["method"] == "psis"  # NUTS draws, reweighted
    for name in ("summary.csv", "posterior.png", "trace.png"):
        assert (tmp_path / "d" / name).stat().st_size > 0
    main(["diagnose", str(tmp_path / "p"), "-o", str(tmp_path / "d"), "--overwrite"])
    assert "max r_hat: n/a" in capsys.readouterr().out
