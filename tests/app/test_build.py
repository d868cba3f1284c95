"""build_prior: a prior from vocabulary sources, saved with a card that round-trips."""

import numpy as np
import pytest

import anchordiv as ad
from anchordiv.app.build import PriorSpec, build_prior, load_prior, texts_sha256
from anchordiv.data.vocab import Source


def hashed(texts, d=16):
    """Deterministic unit-norm embedding of texts (character hashing; no model)."""
    out = np.zeros((len(texts), d))
    for i, t in enumerate(texts):
        for j, ch in enumerate(t):
            out[i, (ord(ch) * 31 + j) % d] += 1.0
    return out / np.linalg.norm(out, axis=1, keepdims=True)


@pytest.fixture
def text_file(tmp_path):
    f = tmp_path / "anchors.txt"
    f.write_text(
        "\n".join(
            f"anchor text number {i} about {w}"
            for i, w in enumerate("oil ink clay wood silk glass paper stone".split() * 5)
        )
    )
    return f


def test_card_round_trips_and_rebuild_is_identical(tmp_path, text_file):
    spec = PriorSpec(
        "demo",
        [Source("text", (str(text_file),), ("anchor text number 0 about oil",))],
        n=25,
        seed=1,
        description="test prior",
    )
    built = build_prior(spec, encoder="hashed-16", embed=hashed, tau=7.0, out=tmp_path / "p")
    model, again, card = load_prior(tmp_path / "p")
    assert again == spec
    source = card["prior"]["sources"][0]
    assert (source["pool"], source["drawn"], source["kind"]) == (39, 25, "text")
    assert card["n_anchors"] == 25 and card["encoder"] == "hashed-16" and card["tau"] == 7.0
    assert card["texts_sha256"] == texts_sha256(built.texts) and card["data_hash"]
    assert "anchor text number 0 about oil" not in built.texts
    np.testing.assert_array_equal(np.asarray(model.mean), np.asarray(built.model.mean))
    rebuilt = build_prior(again, encoder="hashed-16", embed=hashed, tau=7.0, out=tmp_path / "q")
    assert rebuilt.texts == built.texts and rebuilt.card["data_hash"] == card["data_hash"]
    direct = ad.fit("gaussian", hashed(built.texts).astype(np.float32), tau=7.0)
    np.testing.assert_allclose(np.asarray(model.cov), np.asarray(direct.cov), rtol=1e-6)


def test_bad_specs_are_errors(text_file):
    with pytest.raises(ad.AnchorDivError, match="no sources"):
        build_prior(PriorSpec("x", []), encoder="h", embed=hashed, tau=1.0)
    with pytest.raises(ad.AnchorDivError, match="tau"):
        build_prior(PriorSpec("x", [Source("text", (str(text_file),))]), encoder="h", embed=hashed)
    with pytest.raises(ad.AnchorDivError, match="no 'prior' entry"):
        PriorSpec.from_card({"kind": "gaussian"})
