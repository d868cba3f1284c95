"""Posterior-like Bingham update for the latent spherical anchor model (MATH.md, D.4).

``Bₙ = (1 − β) U₀U₀ᵀ + β Ĉ_T``: U₀ ``[d, k]`` is the broad principal subspace, Ĉ_T the target
covariance normalised to trace k (the projector's trace, so that both terms speak in the same
units), and β ∈ [0, 1] the target anchors' influence (β = 0: the broad subspace; β = 1: the
target subspace).  The summary is the top-k eigenvectors of Bₙ.  It is "posterior-like": Bₙ is not
a Bayes posterior of a likelihood, but ``U ~ MatrixBingham(κ Bₙ)`` gives draws whose spread is set
by the concentration κ (default: the effective number of anchors n₀ + n) — useful for
uncertainty displays, not calibrated probabilities.  ``prior="isotropic"`` replaces U₀U₀ᵀ by
``(k/d) I`` (same trace, no direction; the MAP is then the target subspace for any β > 0).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import numpyro

from ..anchors.latent import principal_subspace
from ..errors import AnchorDivError
from .bingham import BinghamPosterior
from .cache import cached
from .distributions import MatrixBingham, stiefel_site


def normalised_covariance(targets, rank: int):
    """Target covariance scaled to trace k ``[d, d]`` (zero if all targets coincide); works on
    numpy and JAX arrays."""
    xp = jnp if isinstance(targets, jnp.ndarray) else np
    c = targets - targets.mean(0)
    cov = c.T @ c / targets.shape[0]
    tr = xp.trace(cov)
    return rank * cov / xp.where(tr > 0, tr, 1.0)


def posterior_like_parameter(broad_projector, targets, *, beta, rank):
    """``Bₙ = (1 − β) P₀ + β Ĉ_T`` ``[d, d]`` (numpy or JAX)."""
    return (1 - beta) * broad_projector + beta * normalised_covariance(targets, rank)


def latent_spherical_model(targets, *, broad_projector, beta, rank, concentration):
    """The explicit NumPyro model (copy and change it for a custom prior).

    ``targets [n, d]``; ``broad_projector`` U₀U₀ᵀ ``[d, d]``; ``beta`` ∈ [0, 1]; ``rank`` k;
    ``concentration`` κ.  Site: ``U [d, k]`` (deterministic, from ``U_raw``)."""
    b = posterior_like_parameter(broad_projector, targets, beta=beta, rank=rank)
    u = stiefel_site("U", targets.shape[1], rank)
    numpyro.factor("U_posterior_like", MatrixBingham(concentration * b, rank).log_prob(u))


def broad_projector(broad: np.ndarray, rank: int, prior: str) -> np.ndarray:
    """U₀U₀ᵀ ``[d, d]`` of the broad rank-k subspace, or ``(k/d) I`` for ``"isotropic"``."""
    d = broad.shape[1]
    if prior == "isotropic":
        return rank / d * np.eye(d)
    if prior != "broad":
        raise AnchorDivError(f"prior: 'broad' or 'isotropic', got {prior!r}")
    _, u, _ = cached(principal_subspace, broad, rank=rank)
    return u @ u.T


def latent_spherical_update(broad: np.ndarray, targets: np.ndarray, *, rank: int, beta: float,
                            concentration: float, prior: str = "broad"
                            ) -> tuple[BinghamPosterior, dict]:
    """Exact update: ``(posterior, info)`` with the explicit model's ``model_kwargs``."""
    p0 = broad_projector(broad, rank, prior)
    t = np.asarray(targets, np.float64)
    b = posterior_like_parameter(p0, t, beta=beta, rank=rank)
    post = BinghamPosterior(concentration * b, rank, np.zeros(t.shape[1]))
    kwargs = {"broad_projector": p0, "beta": beta, "rank": rank, "concentration": concentration}
    return post, {"model_kwargs": kwargs}


__all__ = ["broad_projector", "latent_spherical_model", "latent_spherical_update",
           "normalised_covariance", "posterior_like_parameter"]
