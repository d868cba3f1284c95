"""Open-i reports with MeSH labels, read from the torchxrayvision wheel's data file."""

import io
import sys
import tarfile

import numpy as np
import pytest

from anchordiv.data import openi
from anchordiv.errors import AnchorDivError


def test_load_reports():
    r = openi.load_reports()
    assert len(r) == 3927 == len(r.uids) == r.labels.shape[0]  # 3,955 minus 28 without text
    assert r.labels.dtype == bool and r.labels.shape[1] == len(r.label_names)
    for name in ("Cardiomegaly", "Pulmonary Atelectasis", "Opacity", "Pleural Effusion",
                 "normal"):
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
    xml = (b'<eCitation><uId id="CXR9"/><Abstract><AbstractText Label="FINDINGS">Big  heart.'
           b'</AbstractText><AbstractText Label="IMPRESSION">Cardiomegaly.</AbstractText>'
           b'</Abstract><MeSH><major>Cardiomegaly/mild</major><major>No Indexing</major></MeSH>'
           b'</eCitation>')
    r = openi.load_reports(_tgz(tmp_path, {"a/9.xml": xml}), min_count=1)
    assert r.texts == ["Big heart. Cardiomegaly."] and r.label_names == ["Cardiomegaly"]
    np.testing.assert_array_equal(r.labels, [[True]])
    with pytest.raises(AnchorDivError, match="no report XML"):
        openi.load_reports(_tgz(tmp_path, {"a/readme.txt": b"x"}))
    bad = tmp_path / "bad.tgz"
    bad.write_bytes(b"not a tarball")
    with pytest.raises(AnchorDivError, match="cannot read Open-i reports"):
        openi.load_reports(bad)
