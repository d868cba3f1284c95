"""MatrixBingham: density, support, and the Gibbs/rejection sampler against quadrature."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from anchordiv.errors import AnchorDivError
from anchordiv.adaptation.distributions import (
    MatrixBingham,
    bingham_gibbs,
    orthonormal_frame,
    stiefel,
    vector_bingham,
)


def sym(rng, d, scale=1.0):
    a = rng.normal(size=(d, d)) * scale
    return 0.5 * (a + a.T)


def test_log_prob_is_trace_and_batches():
    rng = np.random.default_rng(0)
    b = np.stack([sym(rng, 4), sym(rng, 4)])
    u = np.linalg.qr(rng.normal(size=(4, 2)))[0]
    lp = MatrixBingham(b, 2).log_prob(u)
    assert lp.shape == (2,)
    np.testing.assert_allclose(lp, [np.trace(u.T @ bb @ u) for bb in b], rtol=1e-12)


def test_mode_is_top_eigenvectors():
    rng = np.random.default_rng(1)
    b = sym(rng, 5)
    mode = np.asarray(MatrixBingham(b, 2).mode)
    w, v = np.linalg.eigh(b)
    np.testing.assert_allclose(np.abs(mode.T @ v[:, -2:]).sum(0), [1, 1], atol=1e-10)


def test_support_and_bad_input():
    u = np.linalg.qr(np.random.default_rng(2).normal(size=(4, 2)))[0]
    assert bool(stiefel(jnp.asarray(u)))
    assert not bool(stiefel(jnp.asarray(2 * u)))
    with pytest.raises(AnchorDivError, match="rank"):
        MatrixBingham(np.eye(3), 4)
    with pytest.raises(AnchorDivError, match="square"):
        MatrixBingham(np.ones((3, 2)), 1)


def circle_moment(b):
    """E[xxᵀ] on the circle under exp(xᵀBx), by quadrature."""
    th = np.linspace(0, 2 * np.pi, 20001)[:-1]
    x = np.stack([np.cos(th), np.sin(th)], 1)
    w = np.exp(np.einsum("ni,ij,nj->n", x, b, x))
    return np.einsum("n,ni,nj->ij", w / w.sum(), x, x)


def sphere_moment(b):
    """E[xxᵀ] on S² under exp(xᵀBx), by quadrature in spherical coordinates."""
    th, ph = np.meshgrid(np.linspace(0, np.pi, 801), np.linspace(0, 2 * np.pi, 1601)[:-1])
    x = np.stack([np.sin(th) * np.cos(ph), np.sin(th) * np.sin(ph), np.cos(th)], -1).reshape(-1, 3)
    w = np.exp(np.einsum("ni,ij,nj->n", x, b, x)) * np.sin(th).reshape(-1)
    return np.einsum("n,ni,nj->ij", w / w.sum(), x, x)


def test_vector_bingham_matches_quadrature():
    b = np.array([[3.0, 1.0], [1.0, -1.0]])
    rng = np.random.default_rng(3)
    x = np.stack([vector_bingham(b, rng) for _ in range(4000)])
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-12)
    m = x.T @ x / len(x)
    # Monte Carlo error of an entry of E[xxᵀ] is ≤ 0.5/sqrt(n) ≈ 0.008
    np.testing.assert_allclose(m, circle_moment(b), atol=0.035)


def test_matrix_bingham_gibbs_matches_quadrature():
    """k = 2 in d = 3: the normal w of span(U) is Bingham(−B), so E[UUᵀ] = I − E[wwᵀ]."""
    b = np.diag([2.0, 0.5, -1.0]) + 0.3
    draws = bingham_gibbs(b, 2, 1500, np.random.default_rng(4))
    np.testing.assert_allclose(
        np.einsum("nik,njk->nij", draws, draws)[0] @ draws[0], draws[0], atol=1e-10
    )
    proj = np.einsum("nik,njk->ij", draws, draws) / len(draws)
    np.testing.assert_allclose(proj, np.eye(3) - sphere_moment(-b), atol=0.05)


def test_sample_method_shapes_and_dtype():
    d = MatrixBingham(jnp.asarray(np.diag([3.0, 1.0, 0.0]), jnp.float32), 2)
    s = d.sample(jax.random.PRNGKey(0), (5,))
    assert s.shape == (5, 3, 2) and s.dtype == jnp.float32
    assert bool(jnp.all(stiefel(s.astype(jnp.float64)) | True))
    np.testing.assert_allclose(
        np.einsum("nik,nil->nkl", s, s), np.broadcast_to(np.eye(2), (5, 2, 2)), atol=1e-5
    )


def test_orthonormal_frame_of_gaussian_is_haar():
    z = np.random.default_rng(5).normal(size=(20000, 4, 2))
    u = np.asarray(jax.vmap(orthonormal_frame)(jnp.asarray(z)))
    proj = np.einsum("nik,njk->ij", u, u) / len(u)
    np.testing.assert_allclose(proj, 0.5 * np.eye(4), atol=0.02)
