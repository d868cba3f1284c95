"""Vocabulary regions as broad-anchor pools: subtrees, exclusions that leave nothing of a
target behind, seeded selection."""

import pytest

import anchordiv as ad
from anchordiv.data import clinical, wordnet
from anchordiv.data.vocab import Source, entries, select

TARGETS = ("painting.n.01", "sketch.n.01", "sculpture.n.01")


def test_wordnet_exclusion_removes_targets_and_all_their_descendants():
    pool = {e.id for e in entries(Source("wordnet", ("creation.n.02",), TARGETS))}
    full = {e.id for e in entries(Source("wordnet", ("creation.n.02",)))}
    leaked = {s.name() for t in TARGETS for s in wordnet.subtree(t)}
    assert {"oil_painting.n.01", "painting.n.01"} <= leaked <= full  # really in the region
    assert not pool & leaked
    assert pool == full - leaked
    texts = {e.id: e.text for e in entries(Source("wordnet", ("creation.n.02",)))}
    assert texts["painting.n.01"] == wordnet.gloss("painting.n.01")


def test_hpo_and_icd10_regions_and_exclusions():
    region = entries(Source("hpo", ("HP:0002086",), ("HP:0002202",)))
    ids = {e.id for e in region}
    assert "HP:0002086" in ids and "HP:0002202" not in ids
    assert not ids & {t.id for t in clinical.hpo_subtree("HP:0002202")}
    chapter = {e.id for e in entries(Source("icd10", ("J09-J18",), ("J10",)))}
    assert "J09-J18" in chapter and "J11" in chapter
    assert not chapter & {c for c, _ in clinical.icd10_subtree("J10")}


def test_text_and_imagenet_sources_and_seeded_selection(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("alpha\n\n  beta \ngamma\ndelta\n")
    pool = entries(Source("text", (str(f),), ("gamma",)))
    assert [e.text for e in pool] == ["alpha", "beta", "delta"]
    assert pool[1].id == "a.txt:3"
    names = entries(Source("imagenet", exclude=("n01440764",)))
    assert len(names) == 999 and names[0].text != "tench"
    sel = select([Source("text", (str(f),)), Source("imagenet")], n=50, seed=3)
    assert sel.pool == [4, 1000] and sum(sel.drawn) == 50 == len(sel.entries)
    assert select([Source("text", (str(f),)), Source("imagenet")], n=50, seed=3) == sel


def test_bad_sources_are_errors(tmp_path):
    with pytest.raises(ad.AnchorDivError, match="unknown 'umls'"):
        Source("umls")
    with pytest.raises(ad.AnchorDivError, match="single string"):
        Source("wordnet", "art.n.01")
    with pytest.raises(ad.AnchorDivError, match="no such file"):
        entries(Source("text", (str(tmp_path / "missing.txt"),)))
    with pytest.raises(ad.AnchorDivError, match="no anchors left"):
        entries(Source("wordnet", ("sketch.n.01",), ("sketch.n.01",)))
    with pytest.raises(ad.AnchorDivError, match="no WordNet synset"):
        entries(Source("wordnet", ("no_such_thing.n.01",)))


def test_senses_lists_every_noun_sense_of_a_word():
    assert wordnet.senses("origami") == ["origami.n.01"]
    assert {"painting.n.01", "painting.n.02"} <= set(wordnet.senses("painting"))
    assert wordnet.senses("video game") == ["computer_game.n.01"]
    assert wordnet.senses("deviantart") == []


def test_openi_source_excludes_findings_and_held_out_reports():
    from anchordiv.data import openi

    r = openi.load_reports()
    held = tuple(r.uids[:1500])
    pool = entries(Source("openi", exclude=("Pleural Effusion", *held)))
    assert [(e.id, e.text) for e in pool] == openi.report_corpus(r, held, ["pleural effusion"])
    few = entries(Source("openi", roots=("CXR1", "CXR10")))
    assert {e.id.split(":")[0] for e in few} == {"CXR1", "CXR10"}
    with pytest.raises(ad.AnchorDivError, match="unknown Open-i report uid"):
        entries(Source("openi", exclude=("fracture",)))
    with pytest.raises(ad.AnchorDivError, match="roots: 1 unknown Open-i report uid"):
        entries(Source("openi", roots=("CXR0",)))
