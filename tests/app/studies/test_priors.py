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
