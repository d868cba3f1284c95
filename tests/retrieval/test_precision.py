"""Product precision of the scorers: exact float32 by default, a cancellation-aware "fast" form,
reduced-precision products emulated on CPU (operands rounded to 10 and 7 mantissa bits)."""

import importlib
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh

import anchordiv as ad
from helpers import ALL_KINDS, clustered_anchors, make_model, unit

dv = importlib.import_module("anchordiv.retrieval.divergence")

D = 32
TOP = 10


def round_mantissa(a, bits: int) -> np.ndarray:
    """float32 ``a`` rounded to ``bits`` explicit mantissa bits, ties away (TF32: 10, bf16: 7),
    as a reduced-precision matrix unit rounds its inputs."""
    a = np.array(a, np.float32)
    raw = a.view(np.uint32)
    drop = 23 - bits
    raw += np.uint32(1 << (drop - 1))
    raw &= np.uint32((0xFFFFFFFF << drop) & 0xFFFFFFFF)
    return a


def emulated(left, right, bits: int) -> np.ndarray:
    """``left rightᵀ`` with both operands rounded to ``bits`` mantissa bits, accumulated
    exactly (float64): the input rounding of a TF32/bf16 product."""
    return round_mantissa(left, bits).astype(np.float64) @ round_mantissa(right, bits).T


def top(d) -> np.ndarray:
    return np.argsort(np.asarray(d), axis=1, kind="stable")[:, :TOP]


@pytest.fixture(scope="module")
def ranked_case():
    """Softmax, τ = 100 (ψ(y) up to ≈ 64): 4 queries, each with 30 neighbours at angles
    0.1…0.6 rad (top-10 gaps ≥ 1e-3) among 400 random items; float64 reference."""
    rng = np.random.default_rng(0)
    anchors = clustered_anchors(rng, 300, D)
    x = unit(rng, 4, D)
    near = []
    for q in x:
        for t in np.linspace(0.1, 0.6, 30):
            e = rng.normal(size=D)
            e -= (e @ q) * q
            near.append(np.cos(t) * q + np.sin(t) * e / np.linalg.norm(e))
    y = np.concatenate([np.array(near), unit(rng, 400, D)])
    reference = np.asarray(ad.divergence(ad.fit("softmax", anchors, tau=100.0), x, y))
    model = ad.fit("softmax", anchors.astype(np.float32), tau=100.0)
    return model, x.astype(np.float32), y.astype(np.float32), reference


def test_tf32_products_reorder_the_top_k_the_default_keeps(ranked_case):
    model, x, y, reference = ranked_case
    u, c = dv.query_terms(model, jnp.asarray(x))
    v, h = dv.key_terms(model, jnp.asarray(y))
    plain = emulated(*dv.augmented(u, c, v, h), 10)  # TF32-style product, offsets inside
    assert not np.array_equal(top(plain), top(reference))
    np.testing.assert_array_equal(top(ad.divergence(model, x, y)), top(reference))
    idx, _ = ad.top_k(model, x, y, TOP, chunk=128)
    np.testing.assert_array_equal(idx, top(reference))


def test_centred_form_is_exact_and_cuts_reduced_precision_error(ranked_case):
    model, x, y, reference = ranked_case
    u, c = dv.query_terms(model, jnp.asarray(x))
    v, h = dv.key_terms(model, jnp.asarray(y))
    uc, vc, row, col = dv.centred(u, c, v, h)
    exact = (
        np.asarray(row, np.float64)[:, None]
        + np.asarray(col)[None]
        - np.asarray(uc, np.float64) @ np.asarray(vc, np.float64).T
    )
    np.testing.assert_allclose(exact, reference, atol=2e-4)  # float32 terms, same identity
    survivors = {}
    for bits in (10, 7):
        plain = emulated(*dv.augmented(u, c, v, h), bits)
        cent = (
            exact
            + np.asarray(uc, np.float64) @ np.asarray(vc, np.float64).T
            - emulated(uc, vc, bits)
        )
        assert np.abs(cent - reference).max() < 0.7 * np.abs(plain - reference).max()
        survivors[bits] = (
            np.all(top(plain) == top(reference), axis=1).sum(),
            np.all(top(cent) == top(reference), axis=1).sum(),
        )
    # TF32 inputs: the centred form keeps every query's top-10 order, the plain form does not
    assert survivors[10][1] == len(x) > survivors[10][0]


def dots(lowered: str) -> list[str]:
    return re.findall(r"dot_general.*?precision = \[(\w+), \w+\]", lowered)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_every_product_has_an_explicit_precision(kind):
    rng = np.random.default_rng(1)
    model = make_model(kind, clustered_anchors(rng, 40, 5))
    x = jnp.asarray(unit(rng, 6, 5))
    for precision, cross in (("highest", "HIGHEST"), ("fast", "DEFAULT")):
        text = dv._divergence_jit.lower(model, x, x, "auto", precision).as_text()
        found = dots(text)
        assert len(found) == text.count("dot_general") and found[-1] == cross
        assert found[:-1] == ["HIGHEST"] * (len(found) - 1)


def test_precision_reaches_every_path(tmp_path):
    rng = np.random.default_rng(2)
    model = make_model("gaussian", clustered_anchors(rng, 40, 5))
    x, y = unit(rng, 6, 5), unit(rng, 50, 5)
    expect = top(ad.divergence(model, x, y))
    mesh = Mesh(np.array(jax.devices()[:1]), ("gallery",))
    for precision in dv.PRECISIONS:
        np.testing.assert_allclose(
            ad.divergence(model, x, y, precision=precision), ad.divergence(model, x, y), atol=1e-9
        )
        index = ad.GalleryIndex(model, y, precision=precision)
        meshed = ad.GalleryIndex(model, y, precision=precision, mesh=mesh)
        for idx, _ in (
            ad.top_k(model, x, y, TOP, chunk=16, precision=precision),
            ad.top_k(model, x, y, TOP, chunk=16, precision=precision, mesh=mesh),
            index.top_k(x, TOP, chunk=16),
            meshed.top_k(x, TOP, chunk=16),
        ):
            np.testing.assert_array_equal(idx, expect)
        np.testing.assert_array_equal(top(index.divergence(x)), expect)


def test_unknown_precision_is_named():
    rng = np.random.default_rng(3)
    model = make_model("gaussian", clustered_anchors(rng, 20, 5))
    x = unit(rng, 3, 5)
    calls = [
        lambda: ad.divergence(model, x, x, precision="tf32"),
        lambda: ad.top_k(model, x, x, 2, precision="tf32"),
        lambda: ad.GalleryIndex(model, x, precision="tf32"),
    ]
    for call in calls:
        with pytest.raises(ad.AnchorDivError, match="precision: unknown 'tf32'"):
            call()
