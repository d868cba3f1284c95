"""ImageNet class lists: 1,000 distinct wnids that all resolve to WordNet nouns, ImageNet-R."""

import pytest

from anchordiv.data import imagenet, wordnet
from anchordiv.errors import AnchorDivError


def test_thousand_classes_resolve_to_noun_synsets():
    classes = imagenet.classes()
    assert len(classes) == 1000 == len({w for w, _ in classes}) == len({n for _, n in classes})
    assert classes[0] == ("n01440764", "tench") and classes[-1][0] == "n15075141"
    assert imagenet.wnids() == sorted(imagenet.wnids())  # ILSVRC index order = wnid order
    syns = imagenet.synsets()
    assert all(s.pos() == "n" for s in syns) and len(set(syns)) == 1000
    # each class's first synonym is a lemma of its synset (up to case/spacing)
    for (w, names), s in zip(imagenet.synonyms(), syns):
        lemmas = {x.lower() for x in wordnet.lemma_names(s)}
        assert any(n.lower() in lemmas for n in names), (w, names, lemmas)


def test_duplicate_names_disambiguated():
    names = dict(imagenet.classes())
    assert names["n02012849"] != names["n03126707"]
    assert names["n02012849"].startswith("crane (") and names["n03126707"].startswith("crane (")


def test_imagenet_r_subset_and_styles():
    r = imagenet.imagenet_r_classes()
    assert len(r) == 200 and set(imagenet.imagenet_r_wnids()) <= set(imagenet.wnids())
    assert r[0] == ("n01443537", "goldfish")
    assert len(imagenet.IMAGENET_R_STYLES) == 16 and "origami" in imagenet.IMAGENET_R_STYLES


def test_prompts():
    assert imagenet.prompts(["tench", "goldfish"]) == [
        "a photo of a tench.",
        "a photo of a goldfish.",
    ]
    assert imagenet.prompts(["cat"], "a sketch of a {}.") == ["a sketch of a cat."]
    assert all(t.count("{}") == 1 for t in imagenet.TEMPLATES)
    with pytest.raises(AnchorDivError, match="exactly one"):
        imagenet.prompts(["cat"], "a photo")
    with pytest.raises(AnchorDivError, match="empty"):
        imagenet.prompts([])
    with pytest.raises(AnchorDivError, match="single string"):
        imagenet.prompts("cat")
