"""The shipped priors match their specs and leak no target: the card of each prior built by
anchordiv.app.build gives back exactly today's spec, and the style priors exclude every style
sense with its subtree."""

from anchordiv.app.build import PriorSpec
from anchordiv.io import load_card
from anchordiv.app.studies.priors import PRIORS, default_models_dir, prior_spec, style_senses

BUILT = [n for n in PRIORS if "prior" in load_card(default_models_dir() / n)]


def test_shipped_cards_give_back_the_current_specs():
    assert len(BUILT) >= 5
    for name in BUILT:
        card = load_card(default_models_dir() / name)
        assert PriorSpec.from_card(card) == prior_spec(name, card["prior"]["n"]), name
        assert sum(s["drawn"] for s in card["prior"]["sources"]) == card["n_anchors"]


def test_style_priors_exclude_every_style_sense():
    senses = set(style_senses())
    assert {"origami.n.01", "sketch.n.01", "painting.n.01", "plaything.n.01"} <= senses
    for name in ("wordnet-visual-art-gaussian", "wordnet-generic-gaussian"):
        spec = prior_spec(name)
        assert senses <= set(spec.sources[0].exclude)


def test_report_priors_are_leave_finding_out_and_equal_a_direct_build(bag_of_words):
    import numpy as np

    from anchordiv.anchors.gaussian import moments
    from anchordiv.app.build import build_prior
    from anchordiv.app.studies.priors import report_prior_points, report_prior_spec, report_priors
    from anchordiv.data import openi

    r = openi.load_reports()
    gallery = np.arange(200, len(r))  # the task's reports; 200 left for priors
    held = [r.uids[i] for i in gallery]
    findings = ["pleural effusion", "cardiomegaly"]
    built = report_priors(findings, held, encoder="bag", embed=bag_of_words, tau=20.0)
    for f in findings:
        b = built[f]
        assert b.texts == [t for _, t in openi.report_corpus(r, held, [f])]
        assert not any(openi.mentions(t, f) for t in b.texts)
        (src,) = b.card["prior"]["sources"]
        assert src["kind"] == "openi" and src["exclude"][0] == f
        assert set(src["exclude"][1:]) == set(held) and src["pool"] == len(b.texts)
        assert b.card["encoder"] == "bag" and b.card["n_anchors"] == len(b.texts)
        direct = build_prior(
            report_prior_spec(f, held), encoder="bag", embed=bag_of_words, tau=20.0
        )
        np.testing.assert_allclose(b.anchors, direct.anchors, atol=1e-6)
        assert PriorSpec.from_card(b.card) == report_prior_spec(f, held)
    assert len(built["cardiomegaly"].texts) < len(built["pleural effusion"].texts)
    points = report_prior_points(
        r, gallery, findings[:1], embed=bag_of_words, encoder_id="bag", tau=20.0
    )["pleural effusion"]
    # the moment points carry the mean and covariance of the prior's own sentence embeddings
    mean, cov = moments(points)
    sentences = bag_of_words(built["pleural effusion"].texts)
    np.testing.assert_allclose(mean, sentences.mean(axis=0), atol=1e-5)
    model = built["pleural effusion"].model
    factor = np.asarray(model.factor, np.float64)
    np.testing.assert_allclose(cov, factor @ factor.T, atol=1e-5)
    assert points.shape == (2 * factor.shape[1], sentences.shape[1])
    few = report_prior_points(
        r, gallery, findings[:1], embed=bag_of_words, encoder_id="bag", tau=20.0, max_reports=50
    )["pleural effusion"]
    assert few.shape[1] == points.shape[1] and not np.allclose(moments(few)[0], mean)
