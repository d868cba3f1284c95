"""Prior transfer: curve models per prior (posterior, isotropic control), paired contrasts,
diagnostics on the same subsets, the ranking table and the report section (bag-of-words)."""

import numpy as np
import pytest

from anchordiv.app.report import Report
from anchordiv.app.studies import transfer as tr
from anchordiv.app.studies._common import labelled_retrieval
from anchordiv.app.studies.object_style import embed_task, object_style_task
from helpers import hashed_words

OBJECTS = ["goldfish", "hen", "ostrich", "iguana", "scorpion", "accordion"]
STYLES = ["sketch", "origami", "tattoo", "embroidery", "painting"]
FILLER = "made shown drawn folded printed seen kept old new small large bright".split()


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    task = object_style_task(OBJECTS, STYLES, seed=0)
    emb = embed_task(task, hashed_words)
    rng = np.random.default_rng(0)
    words = lambda pool: " ".join(rng.choice(pool, 3))  # noqa: E731
    priors = {
        "domain": hashed_words([f"{words(STYLES)} {words(FILLER)}" for _ in range(200)]),
        "wrong-domain": hashed_words([f"{words(OBJECTS)} {words(FILLER)}" for _ in range(200)]),
    }
    setup = labelled_retrieval(emb.items, task.item_style, None, 0)
    curve = tr.transfer_curve(
        priors,
        emb.style_anchors,
        setup,
        tau=5.0,
        budgets=(1, 2),
        n_subsets=2,
        n_boot=200,
        progress=False,
    )
    return task, emb, priors, curve


def test_models_and_contrasts_per_prior(study):
    _, emb, priors, curve = study
    names = set(curve.models)
    for kind in tr.KINDS:
        assert {kind, f"domain-{kind}", f"domain-isotropic-{kind}", f"wrong-domain-{kind}"} <= names
    assert curve.models["domain-gaussian"].role == "posterior"
    assert curve.models["domain-isotropic-gaussian"].role == "isotropic"
    rows = tr.contrast_rows(curve, list(priors))
    assert {r["budget"] for r in rows} == {1, 2}
    assert {(r["prior"], r["versus"]) for r in rows} == {
        ("domain", "control"),
        ("wrong-domain", "control"),
        ("domain", "target-only"),
        ("wrong-domain", "target-only"),
        ("domain", "wrong-domain"),
    }
    ones = [
        r
        for r in rows
        if r["versus"] == "target-only" and r["budget"] == 1 and r["kind"] == "gaussian"
    ]
    assert all(np.isnan(r["difference"]) for r in ones)  # target-only needs 2 anchors
    # style-word prior directions help style retrieval; object-word directions do not
    assert tr.retrieval_gain(rows, "domain") > 0 > tr.retrieval_gain(rows, "wrong-domain")


def test_diagnostics_ranking_and_report(study, tmp_path):
    task, emb, priors, curve = study
    diag = tr.diagnostic_rows(priors, emb.style_anchors, budget=5, n_subsets=2, seed=0)
    assert [r["prior"] for r in diag] == ["domain", "wrong-domain"]
    assert diag[0]["captured"] > diag[1]["captured"]
    contrasts = tr.contrast_rows(curve, list(priors))
    gains = {p: tr.retrieval_gain(contrasts, p) for p in priors}
    for r in diag:
        r["retrieval_gain"] = gains[r["prior"]]
    ranking = tr.ranking_rows(diag, gains)
    assert [r["diagnostic"] for r in ranking] == list(tr.DIAGNOSTICS)
    cap = ranking[0]
    assert cap["retrieval_order"] == "domain > wrong-domain" and cap["same_order"]
    assert cap["picks_best"] and cap["sign_matches"]
    rep = Report("t", tmp_path)
    summary = curve.summary()
    tr.write_curve(curve, summary, tmp_path / "st", ["gaussian"], "style")
    tr.report_section(
        rep,
        "Transfer",
        "intro",
        summary,
        "st",
        contrasts,
        diag,
        ranking,
        ["gaussian"],
        list(priors),
    )
    text = rep.write().read_text()
    assert "`domain` vs its isotropic control: above in" in text
    assert "same order of all priors — captured 1/1" in text
    assert (tmp_path / "st" / "curve_gaussian.png").stat().st_size > 10_000


def test_a_kind_without_a_target_only_model_gets_posteriors_and_controls_only():
    """Spectral has no target-only fit: the transfer models leave it out instead of failing,
    and the dominance names say so (issue 42)."""
    from anchordiv.app.studies.dominance import transfer_names

    broad = np.eye(4)
    models = tr.transfer_models({"domain": broad}, kinds=("gaussian", "spectral"))
    assert set(models) == {
        "gaussian",
        "domain-gaussian",
        "domain-isotropic-gaussian",
        "domain-spectral",
        "domain-isotropic-spectral",
        "cosine",
    }
    assert transfer_names(["domain"], ["gaussian", "spectral"], models) == {
        "domain-gaussian": ("domain-isotropic-gaussian", "gaussian"),
        "domain-spectral": ("domain-isotropic-spectral", None),
    }


def test_ranks_first_and_sign_matches_on_known_orders():
    """ "Same best prior" and "sign right for every prior", yes and no."""
    gains = {"a": 0.05, "b": -0.02, "c": 0.01}
    assert tr.ranks_first({"a": 3.0, "b": 1.0, "c": 2.0}, gains)
    assert not tr.ranks_first({"a": 1.0, "b": 3.0, "c": 2.0}, gains)
    assert tr.sign_matches({"a": 0.4, "b": -0.1, "c": 0.2}, gains, 0.0)
    assert not tr.sign_matches({"a": 0.4, "b": 0.1, "c": 0.2}, gains, 0.0)
