"""Latent models on the principal anchor subspace U ∈ R^{d×k} (top-k covariance eigenvectors).

* Latent Gaussian: anchors ~ N(μ, U Uᵀ); D(x→y) = τ²/2 ‖Uᵀ(y − x)‖².
* Latent spherical: anchors a = U z, z uniform on S^{k−1}; ψ(θ) = log ₀F₁(; k/2; (τ‖Uᵀθ‖)²/4)
  pulled back through ``P(θ) = r · U Uᵀθ / ‖Uᵀθ‖``, giving D(x→y) = c · (1 − cos(Uᵀx, Uᵀy)),
  c = τ r A_k(τ r); undefined (an error) where Uᵀx = 0.

ψ is evaluated by 128-node Gauss–Jacobi quadrature (float64-exact for s ≤ 300); beyond that c
comes from ``scipy.special.ive`` (:func:`bessel_ratio_f64`) and building with τ r > 300 warns
that the autodiff paths are inexact."""

from __future__ import annotations

import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import scipy.special

from .._tolerance import FRACTION_ATOL
from ..errors import AnchorDivError, as_matrix, in_unit_interval, integer, positive, user_stacklevel
from .base import AnchorModel, anchor_model, as_tau, jax_dtype, quad_norm
from .linalg import canonical_signs

QUADRATURE_NODES = 128
#: largest τ·r at which the 128-node quadrature of ψ is exact to float64 round-off
QUADRATURE_EXACT = 300.0
#: ‖Uᵀx‖ below this fraction of ‖x‖ counts as a vanishing projection.
MIN_PROJECTION = 1e-6


def principal_subspace(
    anchors: np.ndarray, *, rank: int | None = None, variance: float = 0.95
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean ``[d]``, top-k eigenvectors ``U [d, k]`` and all eigenvalues ``[d]`` (descending)
    of the ML anchor covariance, in float64.  ``rank=None`` picks the smallest k whose
    eigenvalues explain at least ``variance`` of the total."""
    a = np.asarray(anchors, np.float64)
    mu, w, v = _spectrum(a.shape, a.tobytes())
    k = choose_rank(w, a.shape[0], rank=rank, variance=variance)
    return mu.copy(), canonical_signs(np.ascontiguousarray(v[:, :k])), w.copy()


@functools.lru_cache(maxsize=8)
def _spectrum(shape: tuple, data: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, eigenvalues (descending, clipped at 0) and eigenvectors of the ML covariance of
    the float64 anchors ``data`` of ``shape``, remembered for the last few anchor sets (a
    curve cell's target-only fit and the recipe's ranks decompose the same targets)."""
    a = np.frombuffer(data, np.float64).reshape(shape)
    mu = a.mean(axis=0)
    cov = (a - mu).T @ (a - mu) / shape[0]
    w, v = np.linalg.eigh(cov)
    return mu, w[::-1].clip(min=0.0), v[:, ::-1]


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
                f" = {max_rank}"
            )
        return int(rank)
    frac = in_unit_interval("variance", variance)
    total = eigvals.sum()
    if total <= 0:
        raise AnchorDivError("anchors: all anchors are identical (zero covariance)")
    k = int(np.searchsorted(np.cumsum(eigvals) / total, frac - FRACTION_ATOL) + 1)
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
    """Latent Gaussian anchor model: anchors ~ N(μ, U Uᵀ) on the principal subspace U.

    ψ(θ) = τ⟨μ, θ⟩ + τ²/2 ‖Uᵀθ‖² and D(x→y) = τ²/2 ‖Uᵀ(y − x)‖².

    Parameters
    ----------
    mean : jax.Array, shape [d]
        μ.
    basis : jax.Array, shape [d, k]
        Orthonormal U (the top-k covariance eigenvectors of the anchors).
    tau : jax.Array, shape []
        The encoder's logit scale τ.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> a = rng.normal(size=(8, 4))
    >>> a /= np.linalg.norm(a, axis=1, keepdims=True)
    >>> ad.fit("latent-gaussian", a, tau=20.0, rank=2).rank
    2
    """

    mean: jax.Array
    basis: jax.Array
    tau: jax.Array
    quadratic = True
    axes = {"mean": "d", "basis": "dk", "tau": ""}

    def cumulant(self, theta):
        return self.tau * (theta @ self.mean) + 0.5 * self.tau**2 * quad_norm(self.basis, theta)

    def embed(self, theta):
        return (self.tau * 0.5**0.5) * (theta @ self.basis)


def _ratio_continued_fraction(nu: float, s: np.ndarray, terms: int = 400) -> np.ndarray:
    """I_ν(s)/I_{ν−1}(s) = 1/(2ν/s + 1/(2(ν+1)/s + …)) by backward recurrence (s > 0): exact to
    round-off where s ≲ ν + terms/2, which is where ``ive`` underflows."""
    r = np.zeros_like(s)
    for m in range(terms, -1, -1):
        r = 1.0 / (2.0 * (nu + m) / s + r)
    return r


def bessel_ratio_f64(k: int, s) -> np.ndarray:
    """A_k(s) = I_{k/2}(s) / I_{k/2−1}(s) in float64 for s ``[...]`` ≥ 0 from
    ``scipy.special.ive`` (exponentially scaled: no overflow at large s), with the continued
    fraction where ``ive`` underflows (s ≪ k/2); A_k(0) = 0.  Warns where neither is reliable
    (``ive`` underflows and s is beyond the continued fraction's reach)."""
    s = np.asarray(s, np.float64)
    nu = k / 2.0
    with np.errstate(all="ignore"):
        num, den = scipy.special.ive(nu, s), scipy.special.ive(nu - 1.0, s)
        ratio = num / den
    bad = ~np.isfinite(ratio) | (den < 1e-290) | (num < 1e-290)
    if np.any(bad & (s > 0)):
        cf = _ratio_continued_fraction(nu, np.where(bad & (s > 0), s, 1.0))
        ratio = np.where(bad, cf, ratio)
        if np.any(bad & (s > nu + 200)):
            warnings.warn(
                f"latent spherical: A_k(s) for k={k} at s up to {s.max():.4g} may be "
                f"inaccurate (Bessel functions out of float64 range)",
                stacklevel=user_stacklevel(),
            )
    return np.where(s > 0, ratio, 0.0)


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
    """Latent spherical anchor model: anchors a = U z, z uniform on the unit sphere of span(U).

    ψ(θ) = log ₀F₁(; k/2; (τ‖Uᵀθ‖)²/4), evaluated by Gauss–Jacobi quadrature; the geometry is
    pulled back through P(θ) = r · U Uᵀθ / ‖Uᵀθ‖, so D(x→y) = c · (1 − cos(Uᵀx, Uᵀy)) with
    c = τ r A_k(τ r) (module docstring).

    Parameters
    ----------
    basis : jax.Array, shape [d, k]
        Orthonormal U, k ≥ 2.
    radius : jax.Array, shape []
        r, the fixed radius of the projections.
    tau : jax.Array, shape []
        The encoder's logit scale τ.
    nodes, log_weights : jax.Array, shape [n]
        The quadrature of the latent sphere (built by the fitter).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> a = rng.normal(size=(8, 4))
    >>> a /= np.linalg.norm(a, axis=1, keepdims=True)
    >>> ad.fit("latent-spherical", a, tau=20.0, rank=2)
    LatentSpherical(basis[4, 2], radius=1, tau=20, nodes[128], log_weights[128])
    """

    basis: jax.Array
    radius: jax.Array
    tau: jax.Array
    nodes: jax.Array
    log_weights: jax.Array
    quadratic = True
    axes = {"basis": "dk", "radius": "", "tau": "", "nodes": "n", "log_weights": "n"}

    def _radial(self, s):
        """log E exp(s t) for s ``[...]`` ≥ 0."""
        return jax.nn.logsumexp(s[..., None] * self.nodes + self.log_weights, axis=-1)

    def cumulant(self, theta):
        z = theta @ self.basis
        return self._radial(self.tau * jnp.sqrt(jnp.sum(z * z, axis=-1)))

    def parameterize(self, theta):
        return self.radius * (self.unit_projection(theta) @ self.basis.T)

    def bessel_ratio(self, s):
        """A_k(s) = I_{k/2}(s) / I_{k/2−1}(s) = d/ds log E exp(s t) by the quadrature (exact to
        round-off for s ≤ 300; the closed form :attr:`scale` uses :func:`bessel_ratio_f64`)."""
        p = jax.nn.softmax(s[..., None] * self.nodes + self.log_weights, axis=-1)
        return jnp.sum(p * self.nodes, axis=-1)

    @property
    def scale(self):
        """c = τ r A_k(τ r): D(x→y) = c (1 − cos(Uᵀx, Uᵀy)), A_k in float64 by
        :func:`bessel_ratio_f64` (a host callback, so it also runs under ``jit``)."""
        s = self.tau * self.radius
        k = self.basis.shape[-1]
        ratio = jax.pure_callback(
            lambda v: bessel_ratio_f64(k, v).astype(s.dtype),
            jax.ShapeDtypeStruct(jnp.shape(s), s.dtype),
            s,
            vmap_method="expand_dims",
        )
        return s * ratio

    def embed(self, theta):
        return jnp.sqrt(0.5 * self.scale) * self.unit_projection(theta)

    def check_embeddings(self, name, x):
        """Raise where ‖Uᵀx‖ ≤ :data:`MIN_PROJECTION` · ‖x‖.  The leading column u₁ of U bounds
        it from below (‖Uᵀx‖ ≥ |⟨u₁, x⟩|, orthonormal columns), so only rows failing that bound
        get the full projection: one matrix-vector pass instead of an ``[n, d] × [d, k]``
        product on the host (which cost a third of a cosine GEMM at Q=2000, G=20000, d=384)."""
        b = np.asarray(self.basis)
        limit = MIN_PROJECTION * np.sqrt(np.maximum(np.einsum("ij,ij->i", x, x), 1e-60))
        # einsum, not BLAS: a multithreaded BLAS call leaves its threads spinning beside
        # XLA's pool (that cost 0.2x of the cosine GEMM right after this check on 2 cores)
        unsure = np.nonzero(np.abs(np.einsum("ij,j->i", x, b[:, 0])) <= limit)[0]
        bad = np.zeros(len(x), bool)
        if len(unsure):
            bad[unsure] = np.linalg.norm(x[unsure] @ b, axis=-1) <= limit[unsure]
        if bad.any():
            raise AnchorDivError(
                f"{name}: the latent spherical divergence is undefined where the projection "
                f"Uᵀx onto the anchor subspace vanishes; {int(bad.sum())} row(s) do "
                f"(first: row {int(np.nonzero(bad)[0][0])})"
            )

    @classmethod
    def from_basis(cls, basis, *, tau: float, radius: float = 1.0) -> "LatentSpherical":
        """Build from an orthonormal ``basis [d, k]`` (k ≥ 2)."""
        b = np.asarray(basis)
        dtype = b.dtype if np.issubdtype(b.dtype, np.floating) else np.float32
        if b.ndim != 2 or b.shape[1] < 2:
            raise AnchorDivError(
                f"rank: the latent spherical model needs a subspace of dimension k >= 2, "
                f"got basis of shape {list(b.shape)}"
            )
        t, lw = sphere_quadrature(b.shape[1])
        if float(tau) * float(radius) > QUADRATURE_EXACT:
            warnings.warn(
                f"latent spherical: τ·r = {float(tau) * float(radius):.4g} > "
                f"{QUADRATURE_EXACT}: the closed-form scale c = τ r A_k(τ r) is exact "
                f"(float64 Bessel functions), but the quadrature cumulant used by the "
                f"autodiff scoring paths loses accuracy there",
                stacklevel=user_stacklevel(),
            )
        jdt = jax_dtype(dtype)
        return cls(
            jnp.asarray(b, jdt),
            jnp.asarray(positive("radius", radius), jdt),
            as_tau(tau, dtype),
            jnp.asarray(t, jdt),
            jnp.asarray(lw, jdt),
        )


def fit_latent_gaussian(
    anchors, *, tau: float, rank: int | None = None, variance: float = 0.95
) -> LatentGaussian:
    """Latent Gaussian on the top-k anchor-covariance eigenvectors of ``anchors [n, d]``."""
    a = as_matrix("anchors", anchors, min_rows=2)
    mu, u, _ = principal_subspace(a, rank=rank, variance=variance)
    jdt = jax_dtype(a.dtype)
    return LatentGaussian(jnp.asarray(mu, jdt), jnp.asarray(u, jdt), as_tau(tau, a.dtype))


def fit_latent_spherical(
    anchors, *, tau: float, rank: int | None = None, variance: float = 0.95, radius: float = 1.0
) -> LatentSpherical:
    """Latent spherical model on the same subspace (k ≥ 2; the variance rule is raised to 2)."""
    a = as_matrix("anchors", anchors, min_rows=3)
    _, u, _ = principal_subspace(a, rank=rank, variance=variance)
    if u.shape[1] < 2 and rank is None:
        _, u, _ = principal_subspace(a, rank=2)
    return LatentSpherical.from_basis(u.astype(a.dtype), tau=tau, radius=radius)
