"""Latent models on the principal anchor subspace U ∈ R^{d×k} (top-k covariance eigenvectors).

* Latent Gaussian: anchors ~ N(μ, U Uᵀ); ψ(θ) = τ⟨μ, θ⟩ + τ²/2 ‖Uᵀθ‖²,
  D(x→y) = τ²/2 ‖Uᵀ(y − x)‖².
* Latent spherical: anchors a = U z with z uniform on the unit sphere S^{k−1} of span(U);
  ψ(θ) = log E exp(τ⟨Uz, θ⟩) = log ₀F₁(; k/2; (τ‖Uᵀθ‖)²/4).  The geometry is pulled back through
  ``P(θ) = r · U Uᵀθ / ‖Uᵀθ‖`` (projections rescaled to the fixed radius r, default 1), giving
  D(x→y) = c · (1 − cos(Uᵀx, Uᵀy)) with c = τ r A_k(τ r), A_k(s) = I_{k/2}(s) / I_{k/2−1}(s).
  It is undefined where Uᵀx = 0, which is reported as an error.

ψ of the spherical model is evaluated exactly (to float64 round-off for s ≤ 300, k ≥ 2) by
Gauss–Jacobi quadrature of E exp(s t), where t = ⟨z, e⟩ has density ∝ (1 − t²)^{(k−3)/2}: the
quadrature turns ψ into a log-sum-exp over 128 weighted nodes, differentiable by JAX, and
A_k(s) = ψ'(s) is the node-weighted mean of t.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import scipy.special

from ..errors import AnchorDivError, as_matrix, in_unit_interval, integer, positive
from .base import AnchorModel, anchor_model, as_tau, quad_norm

QUADRATURE_NODES = 128
#: ‖Uᵀx‖ below this fraction of ‖x‖ counts as a vanishing projection.
MIN_PROJECTION = 1e-6


def principal_subspace(anchors: np.ndarray, *, rank: int | None = None,
                       variance: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean ``[d]``, top-k eigenvectors ``U [d, k]`` and all eigenvalues ``[d]`` (descending)
    of the ML anchor covariance, in float64.  ``rank=None`` picks the smallest k whose
    eigenvalues explain at least ``variance`` of the total."""
    a = np.asarray(anchors, np.float64)
    n, d = a.shape
    mu = a.mean(axis=0)
    cov = (a - mu).T @ (a - mu) / n
    w, v = np.linalg.eigh(cov)
    w, v = w[::-1].clip(min=0.0), v[:, ::-1]
    k = choose_rank(w, n, rank=rank, variance=variance)
    return mu, np.ascontiguousarray(v[:, :k]), w


def choose_rank(eigvals: np.ndarray, n: int, *, rank: int | None, variance: float) -> int:
    """Validated subspace dimension: explicit ``rank`` ≤ min(d, n − 1), or the variance rule."""
    d = eigvals.shape[0]
    max_rank = min(d, n - 1)
    if max_rank < 1:
        raise AnchorDivError(f"anchors: need at least 2 anchors for a subspace, got {n}")
    if rank is not None:
        if integer("rank", rank, low=1) > max_rank:
            raise AnchorDivError(
                f"rank: {rank} is larger than possible: at most min(d={d}, n_anchors-1={n - 1})"
                f" = {max_rank}")
        return int(rank)
    frac = in_unit_interval("variance", variance)
    total = eigvals.sum()
    if total <= 0:
        raise AnchorDivError("anchors: all anchors are identical (zero covariance)")
    k = int(np.searchsorted(np.cumsum(eigvals) / total, frac - 1e-12) + 1)
    return min(k, max_rank)


class SubspaceModel(AnchorModel):
    """Shared by the latent models: an orthonormal ``basis [d, k]`` field."""

    basis: jax.Array

    @property
    def dim(self) -> int:
        return int(self.basis.shape[0])

    @property
    def rank(self) -> int:
        return int(self.basis.shape[1])

    def unit_projection(self, theta):
        """Uᵀθ / ‖Uᵀθ‖: ``[..., d] -> [..., k]``."""
        z = theta @ self.basis
        return z / jnp.linalg.norm(z, axis=-1, keepdims=True)


@anchor_model("latent-gaussian")
class LatentGaussian(SubspaceModel):
    """Fields: ``mean [d]``, ``basis [d, k]`` (orthonormal U), ``tau []``."""

    mean: jax.Array
    basis: jax.Array
    tau: jax.Array
    quadratic = True

    def cumulant(self, theta):
        return self.tau * (theta @ self.mean) + 0.5 * self.tau**2 * quad_norm(self.basis, theta)

    def embed(self, theta):
        return (self.tau * 0.5**0.5) * (theta @ self.basis)


def sphere_quadrature(k: int, n: int = QUADRATURE_NODES) -> tuple[np.ndarray, np.ndarray]:
    """Nodes t ``[n]`` and normalised log-weights ``[n]`` for E f(t), t = first coordinate of a
    uniform point on S^{k−1} (density ∝ (1 − t²)^{(k−3)/2}); k ≥ 2."""
    a = (k - 3) / 2.0
    t, w = scipy.special.roots_jacobi(n, a, a)
    with np.errstate(divide="ignore"):
        lw = np.log(w)
    return t, lw - scipy.special.logsumexp(lw)


@anchor_model("latent-spherical")
class LatentSpherical(SubspaceModel):
    """Fields: ``basis [d, k]``, ``radius []`` (r), ``tau []``, and the quadrature of the
    latent sphere ``nodes [n]``, ``log_weights [n]``."""

    basis: jax.Array
    radius: jax.Array
    tau: jax.Array
    nodes: jax.Array
    log_weights: jax.Array
    quadratic = True

    def _radial(self, s):
        """log E exp(s t) for s ``[...]`` ≥ 0."""
        return jax.nn.logsumexp(s[..., None] * self.nodes + self.log_weights, axis=-1)

    def cumulant(self, theta):
        z = theta @ self.basis
        return self._radial(self.tau * jnp.sqrt(jnp.sum(z * z, axis=-1)))

    def parameterize(self, theta):
        return self.radius * (self.unit_projection(theta) @ self.basis.T)

    def bessel_ratio(self, s):
        """A_k(s) = I_{k/2}(s) / I_{k/2−1}(s) = d/ds log E exp(s t)."""
        p = jax.nn.softmax(s[..., None] * self.nodes + self.log_weights, axis=-1)
        return jnp.sum(p * self.nodes, axis=-1)

    @property
    def scale(self):
        """c = τ r A_k(τ r): D(x→y) = c (1 − cos(Uᵀx, Uᵀy))."""
        s = self.tau * self.radius
        return s * self.bessel_ratio(s)

    def embed(self, theta):
        return jnp.sqrt(0.5 * self.scale) * self.unit_projection(theta)

    def check_embeddings(self, name, x):
        b = np.asarray(self.basis)
        proj = np.linalg.norm(x @ b, axis=-1)
        bad = proj <= MIN_PROJECTION * np.maximum(np.linalg.norm(x, axis=-1), 1e-30)
        if bad.any():
            raise AnchorDivError(
                f"{name}: the latent spherical divergence is undefined where the projection "
                f"Uᵀx onto the anchor subspace vanishes; {int(bad.sum())} row(s) do "
                f"(first: row {int(np.nonzero(bad)[0][0])})")

    @classmethod
    def from_basis(cls, basis, *, tau: float, radius: float = 1.0) -> "LatentSpherical":
        """Build from an orthonormal ``basis [d, k]`` (k ≥ 2)."""
        b = np.asarray(basis)
        dtype = b.dtype if np.issubdtype(b.dtype, np.floating) else np.float32
        if b.ndim != 2 or b.shape[1] < 2:
            raise AnchorDivError(
                f"rank: the latent spherical model needs a subspace of dimension k >= 2, "
                f"got basis of shape {list(b.shape)}")
        t, lw = sphere_quadrature(b.shape[1])
        return cls(jnp.asarray(b, dtype), jnp.asarray(positive("radius", radius), dtype),
                   as_tau(tau, dtype), jnp.asarray(t, dtype), jnp.asarray(lw, dtype))


def fit_latent_gaussian(anchors, *, tau: float, rank: int | None = None,
                        variance: float = 0.95) -> LatentGaussian:
    """Latent Gaussian on the top-k anchor-covariance eigenvectors of ``anchors [n, d]``."""
    a = as_matrix("anchors", anchors, min_rows=2)
    mu, u, _ = principal_subspace(a, rank=rank, variance=variance)
    return LatentGaussian(jnp.asarray(mu, a.dtype), jnp.asarray(u, a.dtype), as_tau(tau, a.dtype))


def fit_latent_spherical(anchors, *, tau: float, rank: int | None = None,
                         variance: float = 0.95, radius: float = 1.0) -> LatentSpherical:
    """Latent spherical model on the same subspace (k ≥ 2; the variance rule is raised to 2)."""
    a = as_matrix("anchors", anchors, min_rows=3)
    _, u, _ = principal_subspace(a, rank=rank, variance=variance)
    if u.shape[1] < 2 and rank is None:
        _, u, _ = principal_subspace(a, rank=2)
    return LatentSpherical.from_basis(u.astype(a.dtype), tau=tau, radius=radius)
