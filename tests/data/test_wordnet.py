"""WordNet nouns: 82,115 synsets, glosses identical to nltk's, subtrees, subsampling, errors."""

import random

import pytest

from anchordiv.data import wordnet
from anchordiv.errors import AnchorDivError


def test_noun_records_count_and_match_nltk():
    recs = wordnet.noun_records()
    assert len(recs) == 82115 == len({r.offset for r in recs})
    assert [r.offset for r in recs] == sorted(r.offset for r in recs)
    for r in random.Random(0).sample(recs, 300):
        s = wordnet.synset(r.wnid)
        assert s.definition() == r.definition
        assert tuple(wordnet.lemma_names(s)) == r.lemmas
        assert wordnet.gloss(s) == wordnet.record_text(r)


@pytest.mark.slow
def test_all_noun_synsets_through_nltk():
    assert len(wordnet.noun_synsets()) == 82115


def test_synset_lookup_paths_and_subtree():
    cat = wordnet.synset("n02123045")
    assert cat.name() == "tabby.n.01" and wordnet.wnid(cat) == "n02123045"
    assert wordnet.synset("tabby.n.01") is cat or wordnet.synset("tabby.n.01") == cat
    paths = wordnet.hypernym_paths("dog.n.01")
    assert all(p[0].name() == "entity.n.01" and p[-1].name() == "dog.n.01" for p in paths)
    dogs = wordnet.subtree("dog.n.01")
    assert dogs[0].offset() <= dogs[-1].offset() and wordnet.synset("dog.n.01") in dogs
    assert wordnet.synset("beagle.n.01") in dogs and wordnet.synset("tabby.n.01") not in dogs
    with pytest.raises(AnchorDivError, match="no WordNet synset 'nosuch.n.01'"):
        wordnet.synset("nosuch.n.01")


def test_gloss_anchors_deterministic_subsample():
    a = wordnet.gloss_anchors(50, seed=3)
    assert a == wordnet.gloss_anchors(50, seed=3) != wordnet.gloss_anchors(50, seed=4)
    assert len(a) == len(set(a)) == 50 and all(": " in t for t in a)
    dogs = wordnet.gloss_anchors(root="dog.n.01")
    assert len(dogs) == len(wordnet.subtree("dog.n.01"))
    assert any(t.startswith("beagle: ") for t in dogs)
    assert set(wordnet.gloss_anchors(5, seed=0, root="dog.n.01")) <= set(dogs)
    assert wordnet.gloss_anchors(1, root="dog.n.01", with_name=False)[0].count(":") == 0
    with pytest.raises(AnchorDivError, match="n: must be"):
        wordnet.gloss_anchors(0)


def test_debian_layout_built_with_lexnames(tmp_path):
    src = wordnet._debian_source()
    if src is None:
        pytest.skip("Debian wordnet-base not installed")
    root = wordnet.build_nltk_layout(src, tmp_path)
    lex = (root / "corpora" / "wordnet" / "lexnames").read_text().splitlines()
    assert len(lex) == 45 and lex[3] == "03\tnoun.Tops\t1" and lex[44] == "44\tadj.ppl\t3"


def test_missing_wordnet_says_how_to_fix(tmp_path, monkeypatch):
    import nltk

    def not_found(*a, **k):
        raise LookupError("no wordnet")

    monkeypatch.setattr(nltk.data, "find", not_found)
    monkeypatch.setattr(wordnet, "DEBIAN_DIR", str(tmp_path / "none"))
    monkeypatch.setenv(wordnet.WORDNET_ENV, str(tmp_path))
    with pytest.raises(AnchorDivError, match="apt-get install wordnet-base.*nltk.download"):
        wordnet.wordnet_root.__wrapped__()
    (tmp_path / "data.noun").write_text("")
    with pytest.raises(AnchorDivError, match="lacks index.noun"):
        wordnet.wordnet_root.__wrapped__()


def test_standard_nltk_data_is_used_when_present(tmp_path, monkeypatch):
    import nltk

    monkeypatch.setattr(nltk.data, "find", lambda name: str(tmp_path / name))
    assert wordnet.wordnet_root.__wrapped__() == tmp_path / "corpora/wordnet"
