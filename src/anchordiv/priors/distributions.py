"""Distributions NumPyro lacks: the matrix Bingham distribution on the Stiefel manifold.

``MatrixBingham(B, rank=k)`` has density ``p(U) ∝ etr(Uᵀ B U)`` with respect to the uniform
(Haar) measure on ``V_k(R^d) = {U ∈ R^{d×k} : UᵀU = I}``.  ``log_prob`` is the *unnormalised*
log density ``tr(Uᵀ B U)``: the normaliser ``₁F₁(k/2; d/2; B)`` (a hypergeometric function of a
matrix argument) does not depend on U, so MCMC, MAP and posterior-like sampling never need it;
comparing densities across different B does, and is not supported.

Sampling is exact in distribution (up to Gibbs mixing): Hoff's (2009) column-wise Gibbs sampler,
whose conditionals are vector Bingham distributions sampled by rejection from an angular central
Gaussian envelope (Kent, Ganeiber & Mardia 2013).  It runs in float64 numpy (not jittable).

In a NumPyro model, a Stiefel-valued site is written with :func:`stiefel_site`: ``Z ~ N(0, I)``
``[d, k]`` and ``U = qf(Z)`` (QR with a positive diagonal) is Haar-distributed, so adding the
factor ``MatrixBingham(B).log_prob(U)`` gives U the matrix Bingham law while NUTS moves in the
unconstrained Z.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints
from tqdm.auto import tqdm

from ..errors import AnchorDivError


class _Stiefel(constraints.Constraint):
    """Matrices ``[..., d, k]`` with orthonormal columns (``UᵀU = I`` within ``1e-5``)."""

    event_dim = 2

    def __call__(self, x):
        gram = jnp.swapaxes(x, -1, -2) @ x
        eye = jnp.eye(x.shape[-1], dtype=x.dtype)
        return jnp.all(jnp.abs(gram - eye) < 1e-5, axis=(-2, -1))

    def feasible_like(self, prototype):
        return jnp.broadcast_to(jnp.eye(*prototype.shape[-2:], dtype=prototype.dtype),
                                prototype.shape)


stiefel = _Stiefel()


class MatrixBingham(dist.Distribution):
    """Matrix Bingham ``p(U) ∝ etr(Uᵀ B U)`` on the Stiefel manifold.

    ``parameter`` B: symmetric ``[..., d, d]``; ``rank`` k (1 ≤ k ≤ d).  Event shape ``(d, k)``.
    The mode is any frame of the top-k eigenvectors of B (:meth:`mode`).
    """

    arg_constraints = {"parameter": constraints.real_matrix}  # symmetric; B and (B + Bᵀ)/2 give the same law
    support = stiefel
    pytree_data_fields = ("parameter",)
    pytree_aux_fields = ("rank",)

    def __init__(self, parameter, rank: int, *, validate_args=None):
        parameter = jnp.asarray(parameter)
        if parameter.ndim < 2 or parameter.shape[-1] != parameter.shape[-2]:
            raise AnchorDivError(
                f"parameter: expected a square matrix [d, d], got {list(parameter.shape)}")
        d = parameter.shape[-1]
        if not 1 <= int(rank) <= d:
            raise AnchorDivError(f"rank: must lie in [1, d={d}], got {rank}")
        self.parameter = parameter
        self.rank = int(rank)
        super().__init__(batch_shape=parameter.shape[:-2], event_shape=(d, self.rank),
                         validate_args=validate_args)

    def log_prob(self, value):
        """Unnormalised ``tr(Uᵀ B U)``: ``value [..., d, k] -> [...]``."""
        return jnp.sum(value * (self.parameter @ value), axis=(-2, -1))

    @property
    def mode(self):
        """Top-k eigenvectors of B ``[..., d, k]`` (descending eigenvalue)."""
        _, v = jnp.linalg.eigh(self.parameter)
        return v[..., ::-1][..., : self.rank]

    def sample(self, key, sample_shape=(), *, sweeps: int = 20):
        """Gibbs draws ``[*sample_shape, *batch, d, k]``: ``sweeps`` burn-in sweeps from the
        mode, then one sweep between consecutive draws."""
        seed = int(jax.random.randint(key, (), 0, 2**31 - 1))
        b = np.asarray(self.parameter, np.float64)
        flat = b.reshape((-1,) + b.shape[-2:])
        n = int(np.prod(sample_shape)) if sample_shape else 1
        rng = np.random.default_rng(seed)
        out = np.stack([bingham_gibbs(bb, self.rank, n, rng, burn_in=sweeps) for bb in flat],
                       axis=1)                                       # [n, batch, d, k]
        out = out.reshape(tuple(sample_shape) + self.batch_shape + self.event_shape)
        return jnp.asarray(out, dtype=self.parameter.dtype)


# ---- samplers (float64 numpy) -------------------------------------------------------------

def _acg_root(lam: np.ndarray) -> float:
    """b ∈ [1, q] with Σ 1/(b + 2λ_i) = 1 for eigenvalues λ ≥ 0 (min 0) of a vector Bingham:
    Newton from b = 1, where the convex decreasing left side is ≥ 1 (monotone convergence)."""
    b = 1.0
    for _ in range(50):
        r = 1.0 / (b + 2 * lam)
        step = (r.sum() - 1.0) / (r @ r)
        b += step
        if step < 1e-12 * b:
            break
    return b


def vector_bingham(c: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw ``z [q]`` on the unit sphere with density ∝ exp(zᵀ C z); C symmetric ``[q, q]``.

    Rejection from an angular central Gaussian envelope (Kent, Ganeiber & Mardia 2013); the
    acceptance rate is bounded below for every C."""
    q = c.shape[0]
    w, v = np.linalg.eigh(0.5 * (c + c.T))
    lam = w[-1] - w                                # exp(zᵀCz) ∝ exp(−Σ λ_i y_i²), λ ≥ 0
    b = _acg_root(lam)
    omega = 1.0 + 2.0 * lam / b
    log_m = -0.5 * (q - b) + 0.5 * q * np.log(q / b)
    while True:
        y = rng.normal(size=(64, q)) / np.sqrt(omega)
        y /= np.linalg.norm(y, axis=1, keepdims=True)
        quad = (y * y) @ lam
        log_ratio = -quad + 0.5 * q * np.log((y * y) @ omega) - log_m
        ok = np.nonzero(np.log(rng.uniform(size=64)) < log_ratio)[0]
        if ok.size:
            return v @ y[ok[0]]


def _null_space(u: np.ndarray) -> np.ndarray:
    """Orthonormal basis ``[d, d − m]`` of the complement of span(u), ``u [d, m]``."""
    q, _ = np.linalg.qr(u, mode="complete")
    return q[:, u.shape[1]:]


def gibbs_sweep(u: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One Hoff (2009) sweep: each column from its Bingham conditional on the complement."""
    u = u.copy()
    for j in range(u.shape[1]):
        n = _null_space(np.delete(u, j, axis=1))
        u[:, j] = n @ vector_bingham(n.T @ b @ n, rng)
    return u


def bingham_gibbs(b: np.ndarray, k: int, n: int, rng: np.random.Generator, *,
                  burn_in: int = 20, thin: int = 1) -> np.ndarray:
    """``n`` matrix Bingham draws ``[n, d, k]`` for ``B [d, d]``, started at the mode.

    Cost: one sweep is k eigendecompositions of ``(d − k + 1)``-square matrices, O(k d³)
    (about 50 ms per column at d = 384 on one core); a progress bar shows for large problems."""
    b = 0.5 * (b + b.T)
    _, v = np.linalg.eigh(b)
    u = v[:, ::-1][:, :k].copy()
    out = np.empty((n,) + u.shape)
    sweeps = burn_in + n * thin
    bar = tqdm(total=sweeps, desc="Bingham Gibbs", unit="sweep", disable=b.shape[0] * k < 4096)
    for s in range(sweeps):
        u = gibbs_sweep(u, b, rng)
        bar.update()
        if s >= burn_in and (s - burn_in + 1) % thin == 0:
            out[(s - burn_in) // thin] = u
    bar.close()
    return out


# ---- NumPyro helpers ----------------------------------------------------------------------

def orthonormal_frame(z: jax.Array) -> jax.Array:
    """Q factor of ``z [d, k]`` with a positive-diagonal R: Haar on the Stiefel manifold when z
    is standard normal."""
    q, r = jnp.linalg.qr(z)
    return q * jnp.where(jnp.diagonal(r) < 0, -1.0, 1.0)[None, :]


def stiefel_site(name: str, d: int, k: int) -> jax.Array:
    """A Haar-distributed ``[d, k]`` Stiefel site ``name`` (deterministic) built from the
    unconstrained normal site ``name + "_raw"``; add a factor for a non-uniform law."""
    z = numpyro.sample(f"{name}_raw", dist.Normal(0.0, 1.0).expand([d, k]).to_event(2))
    return numpyro.deterministic(name, orthonormal_frame(z))


__all__ = ["MatrixBingham", "bingham_gibbs", "gibbs_sweep", "orthonormal_frame", "stiefel",
           "stiefel_site", "vector_bingham"]
