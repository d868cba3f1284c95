"""``anchordiv demo --small`` end to end: real offline data, the shipped MiniLM encoder, the
broad priors in models/, and a report with real numbers and figures."""

import csv
import json

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.app.cli import main
from anchordiv.io import load_card
from anchordiv.app.studies._common import NEIGHBOURS_TITLE, SHOWN_K, SHOWN_QUERIES
from anchordiv.app.studies.main_job import check_report
from anchordiv.app.studies.priors import PRIORS, WORDNET_PRIOR, default_models_dir, load_prior


def _csv(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def test_shipped_priors_have_cards_and_load():
    for name in PRIORS:
        card = load_card(default_models_dir() / name)
        assert card["encoder"] == "sentence-transformers/all-MiniLM-L6-v2"
        assert card["dim"] == 384 and card["n_anchors"] >= 700 and card["anchor_source"]
        prior = load_prior(name)
        assert prior.kind == "gaussian" and np.asarray(prior.mean).dtype == np.float32


def test_demo_small_writes_a_report_with_real_numbers(tmp_path, capsys, recwarn):
    out = tmp_path / "demo"
    assert main(["demo", "--small", "-o", str(out)]) == 0
    report = out / "report.md"
    assert capsys.readouterr().out.strip().endswith(str(report))
    # the library's own studies trip none of the mistake heuristics (swapped anchors, τ below 1
    # or against the recorded one, non-unit rows): issue 42
    mistakes = [str(w.message) for w in recwarn if issubclass(w.category, ad.AnchorDivWarning)]
    assert not mistakes, mistakes
    # every section and every posterior's dominance rows, as CI checks the full run's report
    assert check_report(out) == []
    text = report.read_text()
    for heading in (
        "Clinical retrieval",
        "WordNet → ImageNet",
        "Anchor budget",
        "Object vs style",
        "Prior transfer with headroom",
        "Prior transfer, clinical",
    ):
        assert f"## {heading}" in text
    assert f"models/{WORDNET_PRIOR}" in text  # the shipped prior was used
    for png in ("clinical.png", "wordnet_imagenet/curve.png", "budget.png", "object_style.png"):
        assert (out / png).stat().st_size > 10_000
        assert f"]({png})" in text
    clinical = _csv(out / "clinical.csv")
    assert {r["scorer"] for r in clinical} >= {
        "gaussian",
        "posterior-gaussian",
        "cosine",
        "inversion",
    }
    assert all(0 <= float(r["auprc"]) <= 1 for r in clinical)
    curve = _csv(out / "wordnet_imagenet" / "curve_summary.csv")
    assert {"posterior-gaussian", "isotropic-gaussian"} <= {r["model"] for r in curve}
    style = _csv(out / "object_style.csv")
    obj = {
        float(r["p"]): float(r["auprc"])
        for r in style
        if r["target"] == "object" and r["p"] != "nan"
    }
    assert obj[1.0] > obj[0.0]  # mass on objects helps objects
    results = json.loads((out / "results.json").read_text())
    assert "needs" in results["wordnet-imagenet"]
    for part in ("style-transfer", "clinical-transfer"):  # the shipped priors' study
        assert {r["diagnostic"] for r in results[part]["ranking"]} >= {"loo_gain", "captured"}
    assert "models/wordnet-visual-art-gaussian" in text
    assert results["versions"]["anchordiv"] == ad.__version__ and "Measured with python " in text
    assert (out / "style_transfer" / "curve_gaussian.png").stat().st_size > 10_000
    # the dominance table: every task and default posterior, markdown and JSON (issue 17)
    assert "## Does adaptation keep its promise? (dominance table)" in text
    table = json.loads((out / "dominance.json").read_text())
    tasks = {c["task"].split(" / ")[0] for c in table["claims"]}
    assert tasks == {"style transfer", "WordNet → ImageNet (= budget study)", "clinical transfer"}
    assert {"domain-gaussian", "posterior-gaussian"} <= {c["posterior"] for c in table["claims"]}
    spectral = [c for c in table["claims"] if c["posterior"] == "posterior-spectral"]
    assert [c["lacks"] for c in spectral] == [["target-only"]]  # compared with its control
    assert all(np.isfinite(r["diff_best"]) for r in table["dominance"])
    # what each geometry retrieves: one table per study, posteriors beside the baselines
    shown = text.split(f"## {NEIGHBOURS_TITLE}")[1]
    for study in (
        "Clinical retrieval: ",
        "WordNet → ImageNet",
        "Object vs style: object anchors vs style anchors",
        "Prior transfer: style retrieval",
        "Prior transfer, clinical: ",
    ):
        assert f"### {study}" in shown
    assert "posterior-gaussian" in shown and "domain-gaussian" in shown
    assert {r["geometry"] for r in _csv(out / "neighbours.csv")} >= {"cosine", "inversion"}


def test_study_command_runs_one_study(tmp_path):
    out = tmp_path / "study"
    assert main(["study", "object-style", "--small", "-o", str(out)]) == 0
    text = (out / "report.md").read_text()
    assert "## Object vs style" in text and "## Clinical" not in text
    shown = text.split(f"## {NEIGHBOURS_TITLE}\n")[1]
    assert "### Object vs style: object anchors vs style anchors" in shown
    assert "| rank | cosine | inversion | object anchors | style anchors |" in shown
    assert shown.count("**Query") == SHOWN_QUERIES
    rows = _csv(out / "neighbours.csv")
    assert len(rows) == SHOWN_QUERIES * SHOWN_K * 4


def test_budget_study_runs_target_only_models(tmp_path):
    out = tmp_path / "budget"
    assert main(["study", "budget", "--small", "-o", str(out)]) == 0
    rows = _csv(out / "budget.csv")
    # the full run's target-only models and baselines (main_job.WN_MODELS), at every size
    assert {r["model"] for r in rows} == {
        "softmax",
        "gaussian",
        "latent-gaussian",
        "cosine",
        "inversion",
    }
    text = (out / "report.md").read_text()
    assert "## Anchor budget" in text
    shown = text.split(f"## {NEIGHBOURS_TITLE}\n")[1]
    assert "### Anchor budget" in shown  # the target-only geometries, no controls
    assert "| rank | cosine | inversion | softmax | gaussian | latent-gaussian |" in shown


def test_bad_size_or_study_is_an_error():
    from anchordiv import AnchorDivError
    from anchordiv.app.studies.main_job import run_demo

    with pytest.raises(AnchorDivError, match="size"):
        run_demo("unused", size="huge")
    with pytest.raises(AnchorDivError, match="studies"):
        run_demo("unused", parts=("nope",))


@pytest.mark.slow
def test_random_weights_reach_the_text_studies(tmp_path, monkeypatch, capsys):
    """An open_clip config without weights: refused by ``demo`` and ``study`` unless
    ``--random-weights``, which the report then says first (the text path of run_demo)."""
    import image_trees as trees

    monkeypatch.setenv("ANCHORDIV_CACHE", str(tmp_path / "cache"))
    config, _ = trees.save_tiny_clip(tmp_path)
    enc = ["--encoder", f"open_clip:{config}"]
    assert main(["demo", "--small", *enc, "-o", str(tmp_path / "demo")]) == 2
    assert "has no weights: pass --pretrained" in capsys.readouterr().err
    out = tmp_path / "budget"
    args = ["study", "budget", "--small", *enc, "-o", str(out)]
    assert main(args) == 2
    assert main([*args, "--random-weights"]) == 0
    assert (out / "report.md").read_text().split("\n\n")[1].startswith("**Random weights**")
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    assert "--random-weights" in capsys.readouterr().out
