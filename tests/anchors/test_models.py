"""Table-driven checks of every anchor model against float64 numpy references (tests/reference.py)."""

import jax
import numpy as np
import pytest
import scipy.special as sp

import anchordiv as ad
from helpers import ALL_KINDS, clustered_anchors, make_model, unit
from reference import PSI, bessel_ratio, closed_form, spherical_log_mgf

D = 6


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return clustered_anchors(rng, 60, D), unit(rng, 5, D), unit(rng, 7, D)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_divergence_matches_float64_closed_form(kind, data):
    anchors, x, y = data
    model = make_model(kind, anchors)
    got = np.asarray(ad.divergence(model, x, y))
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, closed_form(model, x, y), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("kind", [k for k in ALL_KINDS if k != "latent-spherical"])
def test_closed_form_satisfies_bregman_identity(kind, data):
    """The closed forms of docs/mathematics.md ("Anchor models") equal ψ(y) − ψ(x) − ⟨∇ψ(x), y − x⟩ on the numpy ψ."""
    from reference import bregman_ref

    anchors, x, y = data
    model = make_model(kind, anchors)
    np.testing.assert_allclose(
        closed_form(model, x, y), bregman_ref(model, x, y), rtol=1e-9, atol=1e-9
    )


@pytest.mark.parametrize("kind", [k for k in ALL_KINDS if k != "latent-spherical"])
def test_cumulant_and_gradient_match_reference(kind, data):
    anchors, x, _ = data
    model = make_model(kind, anchors)
    value, grad = PSI[model.kind](model, x)
    np.testing.assert_allclose(np.asarray(model.cumulant(x)), value, rtol=1e-10)
    np.testing.assert_allclose(np.asarray(model.gradient(x)), grad, rtol=1e-9, atol=1e-12)


def test_spherical_cumulant_is_the_bessel_mgf(data):
    anchors, x, _ = data
    model = make_model("latent-spherical", anchors)
    k = model.rank
    s = float(model.tau) * np.linalg.norm(x @ np.asarray(model.basis), axis=1)
    np.testing.assert_allclose(np.asarray(model.cumulant(x)), spherical_log_mgf(k, s), rtol=1e-10)
    for k in (2, 3, 10, 50, 200):
        m = ad.anchors.LatentSpherical.from_basis(np.eye(300)[:, :k], tau=100.0)
        for s in (0.5, 20.0, 100.0, 300.0):
            np.testing.assert_allclose(
                float(m.bessel_ratio(np.float64(s))), bessel_ratio(k, s), rtol=1e-10
            )


@pytest.mark.parametrize("kind", ["gaussian", "latent-gaussian", "latent-spherical", "mixture"])
def test_cumulant_matches_monte_carlo(kind, data):
    """ψ(θ) = log E exp(τ⟨a, θ⟩) estimated from samples of the fitted anchor distribution."""
    anchors, x, _ = data
    model = make_model(kind, anchors, tau=1.0)
    rng = np.random.default_rng(1)
    n = 400_000
    if kind == "gaussian":
        a = np.asarray(model.mean) + rng.normal(size=(n, D)) @ np.asarray(model.factor).T
    elif kind == "latent-gaussian":
        a = np.asarray(model.mean) + rng.normal(size=(n, model.rank)) @ np.asarray(model.basis).T
    elif kind == "latent-spherical":
        a = unit(rng, n, model.rank) @ np.asarray(model.basis).T
    else:
        comp = rng.choice(model.components, size=n, p=np.asarray(model.weights))
        eps = np.einsum("nkr,nr->nk", np.asarray(model.factors)[comp], rng.normal(size=(n, D)))
        a = np.asarray(model.means)[comp] + eps
    mc = sp.logsumexp(float(model.tau) * x @ a.T, axis=1) - np.log(n)
    np.testing.assert_allclose(np.asarray(model.cumulant(x)), mc, atol=5e-3)


@pytest.mark.parametrize("kind", ALL_KINDS)
@pytest.mark.parametrize("method", ["generic", "direct"])
def test_fast_path_equals_autodiff_paths(kind, method, data):
    anchors, x, y = data
    model = make_model(kind, anchors)
    fast = np.asarray(ad.divergence(model, x, y))
    slow = np.asarray(ad.divergence(model, x, y, method=method))
    np.testing.assert_allclose(fast, np.maximum(slow, 0), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_nonnegative_and_zero_on_the_diagonal(kind, data):
    anchors, x, y = data
    model = make_model(kind, anchors)
    z = np.concatenate([x, y])
    dm = np.asarray(ad.divergence(model, z, z))
    assert dm.min() >= 0
    np.testing.assert_allclose(np.diag(dm), 0, atol=1e-9)
    np.testing.assert_allclose(np.asarray(jax.jit(ad.retrieval.bregman)(model, z, z)), 0, atol=1e-9)


def test_theorem3_empirical_divergence_converges_to_gaussian():
    """Softmax divergence of N i.i.d. Gaussian anchors → the Gaussian anchor divergence."""
    rng = np.random.default_rng(2)
    d, tau = 3, 1.0
    mu = np.array([0.2, -0.1, 0.3])
    f = np.array([[0.5, 0, 0], [0.1, 0.3, 0], [0.0, 0.2, 0.4]])
    gauss = ad.Gaussian.from_moments(mu, f @ f.T, tau=tau)
    x, y = unit(rng, 4, d), unit(rng, 4, d)
    target = np.asarray(ad.divergence(gauss, x, y))
    errors = []
    for n in (100, 1_000, 10_000, 100_000):
        samples = mu + rng.normal(size=(n, d)) @ f.T
        emp = np.asarray(ad.divergence(ad.fit("softmax", samples, tau=tau), x, y))
        errors.append(np.abs(emp - target).max() / np.abs(target).max())
    assert errors[-1] < 0.02
    assert errors[-1] < errors[0] / 5


def test_mixture_with_one_component_is_the_gaussian(data):
    anchors, x, y = data
    for reg in (0.0, 1e-2):
        g = ad.fit("gaussian", anchors, tau=5.0, reg=reg)
        m = ad.fit("mixture", anchors, tau=5.0, components=1, reg=reg)
        np.testing.assert_allclose(np.asarray(m.means[0]), np.asarray(g.mean), rtol=1e-12)
        np.testing.assert_allclose(np.asarray(m.covs[0]), np.asarray(g.cov), atol=1e-14)
        np.testing.assert_allclose(
            np.asarray(ad.divergence(m, x, y)), np.asarray(ad.divergence(g, x, y)), rtol=1e-9
        )


def test_em_recovers_separated_clusters():
    rng = np.random.default_rng(3)
    centres = np.array([[3.0, 0, 0], [-3.0, 0, 0], [0, 3.0, 0]])
    lab = rng.integers(3, size=900)
    a = centres[lab] + 0.3 * rng.normal(size=(900, 3))
    from anchordiv.anchors.mixture import em

    r = em(a, 3, reg=1e-6, seed=0)
    assert r.converged and np.all(np.diff(r.loglik) > -1e-9)
    order = np.argsort(r.means[:, 0] + 10 * r.means[:, 1])
    np.testing.assert_allclose(
        r.means[order], centres[np.argsort(centres[:, 0] + 10 * centres[:, 1])], atol=0.06
    )
    np.testing.assert_allclose(np.sort(r.weights), np.sort(np.bincount(lab) / 900), atol=1e-3)


def test_mix_endpoints_are_the_components(data):
    anchors, x, y = data
    a = ad.fit("softmax", anchors[:30], tau=5.0)
    b = ad.fit("gaussian", anchors[30:], tau=5.0)
    for p, ref in ((1.0, a), (0.0, b)):
        np.testing.assert_allclose(
            np.asarray(ad.divergence(ad.mix(a, b, p), x, y)),
            np.asarray(ad.divergence(ref, x, y)),
            rtol=1e-9,
            atol=1e-12,
        )


def test_softmax_weights_and_padding(data):
    anchors, x, y = data
    w = np.random.default_rng(4).uniform(size=len(anchors))
    m = ad.fit("softmax", anchors, tau=5.0, weights=w)
    assert m.anchors.shape[0] == 64 and m.n_anchors == 60
    unpadded = ad.fit("softmax", anchors, tau=5.0, weights=w, pad=False)
    np.testing.assert_allclose(
        np.asarray(ad.divergence(m, x, y)), np.asarray(ad.divergence(unpadded, x, y)), rtol=1e-12
    )
    # duplicating an anchor = doubling its weight
    dup = ad.fit("softmax", np.concatenate([anchors, anchors[:1]]), tau=5.0)
    w2 = np.ones(60)
    w2[0] = 2
    np.testing.assert_allclose(
        np.asarray(ad.divergence(dup, x, y)),
        np.asarray(ad.divergence(ad.fit("softmax", anchors, tau=5.0, weights=w2), x, y)),
        rtol=1e-10,
    )


def test_latent_rank_by_explained_variance():
    rng = np.random.default_rng(5)
    scales = np.array([3.0, 2.0, 1.0, 0.05, 0.05, 0.05])
    a = rng.normal(size=(2000, 6)) * scales
    m = ad.fit("latent-gaussian", a, tau=1.0)
    assert m.rank == 3
    assert ad.fit("latent-gaussian", a, tau=1.0, variance=0.5).rank == 1
    assert ad.fit("latent-spherical", a, tau=1.0, variance=0.5).rank == 2
    u = np.asarray(m.basis)
    np.testing.assert_allclose(u.T @ u, np.eye(3), atol=1e-12)
    np.testing.assert_allclose(np.abs(u[:3]), np.eye(3), atol=0.05)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_float32_at_tau_100_stays_finite(kind):
    rng = np.random.default_rng(6)
    d = 384
    anchors = clustered_anchors(rng, 300, d, np.float32)
    x, y = unit(rng, 20, d, np.float32), unit(rng, 50, d, np.float32)
    model = make_model(kind, anchors, tau=100.0)
    dm = np.asarray(ad.divergence(model, x, y))
    assert dm.dtype == np.float32 and np.all(np.isfinite(dm)) and dm.min() >= 0
    ref = closed_form(model, x, y)
    assert np.abs(dm - ref).max() <= 1e-3 * np.abs(ref).max()
