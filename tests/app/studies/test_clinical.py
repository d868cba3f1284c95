"""Clinical study: per-finding evaluation over anchor subsets, the negation diagnostic, errors."""

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.app.studies.clinical import (
    clinical_study,
    findings_summary,
    key_term,
    negated_mentions,
    plot_clinical,
)
from helpers import unit

NAMES = ["Cardiomegaly", "Pleural Effusion", "Edema"]


@pytest.fixture(scope="module")
def data():
    """Reports whose embeddings lean toward their findings' anchor directions."""
    rng = np.random.default_rng(0)
    d, n = 12, 160
    labels = rng.random((n, 3)) < 0.25
    centres = unit(rng, 3, d)
    x = unit(rng, n, d) + 0.8 * labels.astype(float) @ centres
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    anchors = {f: centres[j] + 0.3 * unit(rng, 20, d) for j, f in enumerate(NAMES)}
    texts = [
        ("No pleural effusion. " if not lab[1] and i % 2 else "Normal. ")
        for i, lab in enumerate(labels)
    ]
    return x, labels, anchors, texts


def test_rows_cover_every_finding_and_scorer_with_intervals(data, tmp_path):
    x, labels, anchors, texts = data
    extra = {"fixed-gaussian": lambda f, a: ad.fit("gaussian", a, tau=5.0, reg=0.1)}
    res = clinical_study(
        x,
        labels,
        NAMES,
        anchors,
        texts=texts,
        tau=5.0,
        kinds=("gaussian", "softmax"),
        extra_models=extra,
        n_subsets=2,
        max_queries=15,
        progress=False,
    )
    scorers = {"gaussian", "softmax", "fixed-gaussian", "cosine", "inversion"}
    assert {r["finding"] for r in res.rows} == set(NAMES)
    assert all({r["scorer"] for r in res.rows if r["finding"] == f} == scorers for f in NAMES)
    for r in res.rows:
        assert r["low"] <= r["auprc"] <= r["high"] and r["n_subsets"] == 2
        assert 0 < r["prevalence"] < 1 and r["n_queries"] == 15 and r["n_anchors"] == 20
    effusion = [r for r in res.rows if r["finding"] == "Pleural Effusion"][0]
    assert effusion["negated_mentions"] == pytest.approx(
        np.mean([i % 2 == 1 for i, lab in enumerate(labels) if not lab[1]])
    )
    assert len(res.per_query["Edema"]["gaussian"]) == 2  # one [Q] per anchor subset
    cos = [r for r in res.rows if r["scorer"] == "cosine"][0]
    assert cos["diff"] == 0.0  # paired with itself
    summary = findings_summary(res.rows)
    assert [s["finding"] for s in summary] == NAMES
    assert all(s["best_model"] not in ("cosine", "inversion") for s in summary)
    assert plot_clinical(res.rows, tmp_path / "c.png").stat().st_size > 10_000


def test_anchor_subsets_give_different_models_and_full_set_one(data):
    x, labels, anchors, _ = data
    one = clinical_study(
        x,
        labels,
        NAMES,
        {"Edema": anchors["Edema"]},
        tau=5.0,
        kinds=("gaussian",),
        subset_fraction=1.0,
        n_subsets=4,
        progress=False,
    )
    assert one.rows[0]["n_subsets"] == 1
    two = clinical_study(
        x,
        labels,
        NAMES,
        {"Edema": anchors["Edema"]},
        tau=5.0,
        kinds=("gaussian",),
        n_subsets=2,
        progress=False,
    )
    a, b = two.per_query["Edema"]["gaussian"]
    assert not np.allclose(a, b)


def test_negated_mentions_and_key_term():
    assert key_term("Pleural Effusion") == "effusion"
    texts = ["No pleural effusion.", "Effusions are small.", "Clear lungs.", "effusion"]
    has = np.array([False, False, False, True])
    assert negated_mentions(texts, has, "effusion") == pytest.approx(2 / 3)
    assert np.isnan(negated_mentions(texts, np.ones(4, bool), "effusion"))


def test_bad_input_names_the_problem(data):
    x, labels, anchors, _ = data
    with pytest.raises(ad.AnchorDivError, match="not among label_names"):
        clinical_study(x, labels, NAMES, {"Nodule": anchors["Edema"]}, progress=False, tau=20.0)
    with pytest.raises(ad.AnchorDivError, match="labels: expected"):
        clinical_study(x, labels[:, :2], NAMES, anchors, progress=False, tau=20.0)
    with pytest.raises(ad.AnchorDivError, match="no finding has 500"):
        clinical_study(x, labels, NAMES, anchors, min_queries=500, progress=False, tau=20.0)
    with pytest.raises(ad.AnchorDivError, match="dimension mismatch"):
        clinical_study(
            x, labels, NAMES, {"Edema": anchors["Edema"][:, :5]}, progress=False, tau=20.0
        )


def test_the_outcomes_claims_on_known_findings():
    """Above cosine / below cosine need a paired interval excluding zero; inversion beats the
    best anchor model and the negated sentences help only where the mean is higher."""
    from anchordiv.app.studies.clinical import negation_helps, versus_cosine

    def finding(name, low, high, inversion, gauss, negated):
        return {
            "finding": name,
            "diff_low": low,
            "diff_high": high,
            "best_model": "gaussian",
            "gaussian": gauss,
            "inversion": inversion,
            "gaussian+negated": negated,
        }

    summary = [
        finding("up", 0.01, 0.1, 0.2, 0.5, 0.6),  # above; inversion below; negation helps
        finding("down", -0.2, -0.01, 0.7, 0.5, 0.4),  # below; inversion above; no help
        finding("tie", -0.05, 0.05, 0.5, 0.5, 0.5),  # neither; equal means are not "beats"
    ]
    assert versus_cosine(summary) == (["up"], ["down"], ["down"])
    assert negation_helps(summary) == ["up"]
