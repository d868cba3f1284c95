"""HPO terms, ICD-10-CM descriptions, pathology anchors (positive and negated)."""

import pytest

from anchordiv.data import clinical
from anchordiv.errors import AnchorDivError


def test_hpo_terms_from_the_wheel():
    terms = clinical.hpo_terms()
    assert len(terms) == 19034
    assert sum(bool(t.definition) for t in terms) == 16449
    assert sum(len(t.synonyms) for t in terms) == 23512
    eff = {t.id: t for t in terms}["HP:0002202"]
    assert eff.name == "Pleural effusion" and "Fluid around lungs" in eff.synonyms
    assert "HP:0002103" in eff.is_a and eff.definition.startswith("The presence of")
    sub = clinical.hpo_subtree("HP:0002202")
    assert sub[0].id != "" and any(t.name == "Chylothorax" for t in sub)
    assert clinical.hpo_anchors(5, seed=1) == clinical.hpo_anchors(5, seed=1)


def test_parse_obo_skips_obsolete_and_other_stanzas():
    text = [
        '[Term]',
        'id: HP:1',
        'name: A',
        'def: "a thing." [x]',
        'synonym: "AA" EXACT []',
        '',
        '[Term]',
        'id: HP:2',
        'name: obsolete B',
        'is_obsolete: true',
        '',
        '[Typedef]',
        'id: part_of',
        'name: part of',
        '',
        '[Term]',
        'id: HP:3',
        'name: C',
        'is_a: HP:1 ! A',
    ]
    terms = clinical.parse_obo(text)
    assert [t.id for t in terms] == ["HP:1", "HP:3"]
    assert terms[0].definition == "a thing." and terms[0].synonyms == ("AA",)
    assert terms[1].is_a == ("HP:1",) and terms[1].text() == "C"


def test_icd10_descriptions():
    items = clinical.icd10_descriptions()
    assert len(items) == 98505
    d = dict(items)
    assert d["I51.7"] == "Cardiomegaly" and d["J90"].startswith("Pleural effusion")
    assert [c for c, _ in clinical.icd10_subtree("J81")] == ["J81", "J81.0", "J81.1"]
    assert len(clinical.icd10_anchors(7, seed=0)) == 7


@pytest.mark.parametrize("finding", sorted(clinical.FINDINGS))
def test_pathology_anchors_every_finding(finding):
    pos = clinical.pathology_anchors(finding)
    neg = clinical.pathology_anchors(finding, negated=True)
    n = len(clinical.finding_phrases(finding))
    assert n >= 3
    assert len(pos) == n * len(clinical.POSITIVE_TEMPLATES)
    assert len(neg) == n * len(clinical.NEGATED_TEMPLATES)
    assert pos == clinical.pathology_anchors(finding)  # deterministic
    assert not set(pos) & set(neg)
    assert all(s[0].isupper() and s.endswith(".") for s in pos + neg)


def test_pathology_anchor_content():
    assert "There is cardiomegaly." in clinical.pathology_anchors("cardiomegaly")
    assert "No pleural effusion." in clinical.pathology_anchors("Pleural Effusion", negated=True)
    phrases = clinical.finding_phrases("pleural effusion")
    assert "pleural effusion" in phrases and not any("classified" in p for p in phrases)
    assert clinical.clean_phrase("Pleural effusion, not elsewhere classified") == "pleural effusion"
    assert clinical.clean_phrase("GGO") == "GGO"
    with pytest.raises(AnchorDivError, match="unknown 'fracture'"):
        clinical.pathology_anchors("fracture")


def test_missing_wheel_data_says_how_to_fix():
    with pytest.raises(AnchorDivError, match="pip install"):
        clinical.package_file("no_such_package_xyz", "data", "x.obo", install="pip install x")
