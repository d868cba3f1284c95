"""Provenance: encoder id and logit scale travel with embeddings; one rule for tau."""

import json

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.provenance import npy_path, resolve_tau, with_provenance
from helpers import clustered_anchors, unit

MINILM = {"encoder": "sentence-transformers/all-MiniLM-L6-v2", "logit_scale": 20.0}


def test_fit_takes_tau_from_the_embeddings_not_a_clip_default():
    """Issue 11: fit/adapt defaulted to tau = 100 (CLIP) for MiniLM embeddings (tau = 20)."""
    a = with_provenance(clustered_anchors(np.random.default_rng(0), 20, 6), **MINILM)
    assert float(ad.fit("gaussian", a).tau) == 20.0
    assert float(ad.fit("softmax", a[:10]).tau) == 20.0  # row selections keep provenance
    assert float(ad.fit("gaussian", a, tau=7.0).tau) == 7.0  # an explicit tau wins
    broad = with_provenance(unit(np.random.default_rng(1), 200, 6), **MINILM)
    assert ad.adapt("gaussian", broad, a).tau == 20.0


def test_no_tau_and_no_provenance_is_a_clear_error():
    a = clustered_anchors(np.random.default_rng(0), 20, 6)
    with pytest.raises(ad.AnchorDivError, match="tau: not given .*MiniLM-L6-v2: 20"):
        ad.fit("gaussian", a)
    with pytest.raises(ad.AnchorDivError, match="tau: not given"):
        ad.adapt("gaussian", unit(np.random.default_rng(1), 50, 6), a)


def test_different_encoders_are_not_mixed():
    rng = np.random.default_rng(0)
    broad = with_provenance(unit(rng, 50, 6), encoder="open_clip:ViT-B-32", logit_scale=100.0)
    target = with_provenance(unit(rng, 8, 6), **MINILM)
    with pytest.raises(ad.AnchorDivError, match="different encoders cannot be mixed"):
        ad.adapt("gaussian", broad, target)
    with pytest.raises(ad.AnchorDivError, match="different encoders"):
        resolve_tau(20.0, broad=broad, target=target)


def test_arithmetic_drops_provenance_views_keep_it():
    x = with_provenance(unit(np.random.default_rng(0), 4, 3), **MINILM)
    assert ad.provenance.provenance_of(x[1:]) == MINILM
    assert ad.provenance.provenance_of(10 * x) == {}
    assert type(x.sum()) is not ad.Embeddings


def test_save_and_load_embeddings_round_trip(tmp_path):
    x = unit(np.random.default_rng(0), 5, 3).astype(np.float32)
    path = ad.save_embeddings(tmp_path / "emb", x, texts=list("abcde"), **MINILM)
    assert path == tmp_path / "emb.npy" and npy_path(tmp_path / "emb") == path
    side = json.loads((tmp_path / "emb.json").read_text())
    assert side["encoder"] == MINILM["encoder"] and side["rows"] == 5
    y = ad.load_embeddings(path)
    np.testing.assert_array_equal(y, x)
    assert y.provenance["logit_scale"] == 20.0 and y.provenance["texts"] == list("abcde")
    np.save(path, x[:3])  # stale sidecar
    with pytest.raises(ad.AnchorDivError, match="rows = 3 but its sidecar"):
        ad.load_embeddings(path)


def test_a_deleted_sidecar_does_not_pass_sha256(tmp_path, capsys):
    """Issue 52: deleting X.json skipped the --sha256 check (and the encoder check), rc 0."""
    from anchordiv.app.cli import main
    from anchordiv.io import pinned_digests

    x = unit(np.random.default_rng(0), 6, 4)
    path = ad.save_embeddings(tmp_path / "t.npy", x, encoder="toy", logit_scale=10.0)
    digest = ad.bundle_digest(path)
    prior = ad.NIWPrior.from_anchors(unit(np.random.default_rng(1), 12, 4), kappa0=2.0, nu0=8.0)
    prior_path = prior.save(tmp_path / "p")
    pin = ad.bundle_digest(prior_path)
    with pinned_digests([digest, pin]):
        assert ad.load_embeddings(path).provenance["encoder"] == "toy"
    (tmp_path / "t.json").unlink()
    with pinned_digests([digest]), pytest.raises(ad.AnchorDivError, match="no provenance side"):
        ad.load_embeddings(path)
    assert isinstance(ad.load_embeddings(path), np.ndarray)  # unpinned: a plain array is fine
    with pinned_digests([ad.bundle_digest(path)]):  # pinned as a plain array: fine too
        np.testing.assert_array_equal(ad.load_embeddings(path), x)
    base = ["adapt", "gaussian", str(path), "--prior", str(prior_path), "--tau", "10"]
    assert main([*base, "-o", str(tmp_path / "a"), "--sha256", pin, "--sha256", digest]) == 2
    err = capsys.readouterr().err
    assert "no provenance sidecar" in err and "Traceback" not in err
