"""Gaussian anchor model N(μ, Σ): ψ(θ) = τ⟨μ, θ⟩ + τ²/2 θᵀΣθ, D(x→y) = τ²/2 (y−x)ᵀΣ(y−x).

Σ (not Σ⁻¹) defines the geometry, so a singular covariance (fewer anchors than dimensions) is
fine: Σ is stored as a PSD factor F (Σ = F Fᵀ) and never inverted.  Fast path:
``φ(θ) = τ/√2 · Fᵀθ`` makes D a squared Euclidean distance.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import as_matrix, positive
from .base import AnchorModel, anchor_model, as_tau, jax_dtype, psd_factor, quad_norm


@anchor_model("gaussian")
class Gaussian(AnchorModel):
    """Gaussian anchor model N(μ, Σ) with Σ = F Fᵀ (never inverted).

    ψ(θ) = τ⟨μ, θ⟩ + τ²/2 θᵀΣθ and D(x→y) = τ²/2 (y−x)ᵀΣ(y−x); a singular Σ (fewer anchors than
    dimensions) is fine.

    Parameters
    ----------
    mean : jax.Array, shape [d]
        μ.
    factor : jax.Array, shape [d, r]
        F with Σ = F Fᵀ.
    tau : jax.Array, shape []
        The encoder's logit scale τ.

    Examples
    --------
    >>> ad.Gaussian.from_moments(np.zeros(3), np.eye(3), tau=20.0)
    Gaussian(mean[3], factor[3, 3], tau=20)
    >>> ad.fit("gaussian", np.eye(4), tau=20.0).cov.shape
    (4, 4)
    """

    mean: jax.Array
    factor: jax.Array
    tau: jax.Array
    axes = {"mean": "d", "factor": "dr", "tau": ""}
    quadratic = True

    def cumulant(self, theta):
        return self.tau * (theta @ self.mean) + 0.5 * self.tau**2 * quad_norm(self.factor, theta)

    def embed(self, theta):
        return (self.tau * 0.5**0.5) * (theta @ self.factor)

    @property
    def cov(self) -> jax.Array:
        """Σ ``[d, d]``."""
        return self.factor @ self.factor.T

    @property
    def dim(self) -> int:
        return int(self.mean.shape[-1])

    @classmethod
    def from_moments(cls, mean, cov, *, tau: float) -> "Gaussian":
        """Build from a mean ``[d]`` and a symmetric PSD covariance ``[d, d]`` (a NaN, asymmetric
        or negative one is an :class:`AnchorDivError`)."""
        from ..errors import AnchorDivError, check_covariance

        mean = np.asarray(mean)
        if mean.ndim != 1 or not np.isfinite(mean).all():
            raise AnchorDivError(
                f"mean: expected a finite vector [d], got shape "
                f"{list(mean.shape)}" + ("" if mean.ndim != 1 else " with NaN or inf entries")
            )
        cov = check_covariance("cov", cov, dim=len(mean), definite=False)
        dtype = mean.dtype if np.issubdtype(mean.dtype, np.floating) else np.float32
        factor = psd_factor(np.asarray(cov, np.float64)).astype(dtype)
        return cls(jnp.asarray(mean, jax_dtype(dtype)), jnp.asarray(factor), as_tau(tau, dtype))


def moments(anchors: np.ndarray, reg: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """ML mean ``[d]`` and covariance ``[d, d]`` (1/n) in float64, plus the ridge
    ``reg · tr(Σ)/d · I`` (reg is relative to the mean variance)."""
    a = np.asarray(anchors, np.float64)
    mu = a.mean(axis=0)
    c = a - mu
    cov = c.T @ c / a.shape[0]
    if reg:
        cov += reg * np.trace(cov) / cov.shape[0] * np.eye(cov.shape[0])
    return mu, cov


def fit_gaussian(anchors, *, tau: float, reg: float = 0.0) -> Gaussian:
    """ML Gaussian of ``anchors [n, d]`` (n ≥ 2); ``reg`` adds a relative ridge (default 0)."""
    a = as_matrix("anchors", anchors, min_rows=2)
    mu, cov = moments(a, positive("reg", reg, allow_zero=True))
    return Gaussian.from_moments(mu.astype(a.dtype), cov, tau=tau)
