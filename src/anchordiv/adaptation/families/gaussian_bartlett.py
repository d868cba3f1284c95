"""The Normal–inverse-Wishart law in whitened Bartlett coordinates, for NUTS and SVI on the
gaussian kind's explicit model (:func:`~anchordiv.adaptation.families.gaussian.niw_model`):
:func:`niw_bartlett` samples the coordinates and records ``mu`` and ``Sigma``;
:class:`BartlettGaussian` is the targets' Gaussian with ``Σ`` in factored form, O(d²) per point.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.distributions import constraints
from numpyro.distributions.util import validate_sample


def niw_bartlett(prefix, mu0, kappa0, nu0, psi0, psi0_tril=None):
    """NIW sites in whitened Bartlett coordinates (batched over leading axes of ``mu0``).

    With ``Ψ₀ = L Lᵀ`` and the Bartlett factor A (lower triangular; ``A_ii² ~ χ²(ν₀ − i)``,
    i = 0..d−1, ``A_ij ~ N(0, 1)`` below the diagonal), ``Σ⁻¹ = L⁻ᵀ A Aᵀ L⁻¹ ~ W(ν₀, Ψ₀⁻¹)``, i.e.
    ``Σ ~ IW(ν₀, Ψ₀)``; ``μ = μ₀ + L A⁻ᵀ z / √κ₀`` with ``z ~ N(0, I)`` has ``μ | Σ ~ N(μ₀, Σ/κ₀)``.
    Returns ``(mu [..., d], BartlettGaussian(mu, L, A), log_jacobian [...])`` and records the
    deterministic sites ``mu`` and ``Sigma``; ``log_jacobian`` = log |∂(c, o, z)/∂(μ, Σ)| up
    to a constant = ``Σ_i (d + i + 4) log A_ii`` (i = 0..d−1), so adding it to the log density of
    the coordinates gives the log density of (μ, Σ)."""
    mu0 = jnp.asarray(mu0)
    d, batch = mu0.shape[-1], mu0.shape[:-1]
    chol = jnp.linalg.cholesky(psi0) if psi0_tril is None else jnp.asarray(psi0_tril)
    chi2 = numpyro.sample(
        f"{prefix}bartlett_chi2",
        dist.Chi2(nu0 - jnp.arange(d, dtype=mu0.dtype)).expand(batch + (d,)).to_event(1),
    )
    off = numpyro.sample(
        f"{prefix}bartlett_normal",
        dist.Normal(0.0, 1.0).expand(batch + (d * (d - 1) // 2,)).to_event(1),
    )
    z = numpyro.sample(f"{prefix}mu_std", dist.Normal(0.0, 1.0).expand(batch + (d,)).to_event(1))
    rows, cols = np.tril_indices(d, -1)
    diag = jnp.sqrt(chi2)
    a = jnp.zeros(batch + (d, d), mu0.dtype).at[..., rows, cols].set(
        off, indices_are_sorted=True, unique_indices=True, mode="promise_in_bounds"
    ) + diag[..., None] * jnp.eye(d, dtype=mu0.dtype)
    w = jax.scipy.linalg.solve_triangular(a, z[..., None], lower=True, trans=1)[..., 0]
    mu = numpyro.deterministic(
        f"{prefix}mu", mu0 + (chol @ w[..., None])[..., 0] / jnp.sqrt(kappa0)
    )
    law = BartlettGaussian(mu, chol, a)
    numpyro.deterministic(f"{prefix}Sigma", law.covariance())
    jac = ((d + jnp.arange(d, dtype=mu0.dtype) + 4) * jnp.log(diag)).sum(-1)
    return mu, law, jac


class BartlettGaussian(dist.Distribution):
    """``N(loc, Σ)`` with ``Σ = L (A Aᵀ)⁻¹ Lᵀ``: ``outer`` L and ``inner`` A lower triangular
    ``[..., d, d]``.  ``log_prob`` and ``sample`` cost O(d²) per point (triangular products and
    solves); :meth:`covariance` (O(d³)) only when asked."""

    arg_constraints = {
        "loc": constraints.real_vector,
        "outer": constraints.lower_cholesky,
        "inner": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    reparametrized_params = ["loc"]

    def __init__(self, loc, outer, inner, *, validate_args=None):
        batch = jnp.broadcast_shapes(
            jnp.shape(loc)[:-1], jnp.shape(outer)[:-2], jnp.shape(inner)[:-2]
        )
        self.loc, self.outer, self.inner = loc, outer, inner
        super().__init__(
            batch_shape=batch, event_shape=jnp.shape(loc)[-1:], validate_args=validate_args
        )

    @validate_sample
    def log_prob(self, value):
        d = self.event_shape[0]
        x = value - self.loc
        logdet = jnp.log(jnp.diagonal(self.outer, axis1=-2, axis2=-1)).sum(-1) - jnp.log(
            jnp.diagonal(self.inner, axis1=-2, axis2=-1)
        ).sum(-1)
        if self.outer.ndim == 2 and self.inner.ndim == 2:  # one Σ: all points in one solve
            w = jax.scipy.linalg.solve_triangular(self.outer, x.reshape(-1, d).T, lower=True)
            q = (w.T @ self.inner).reshape(x.shape)
        else:
            shape = jnp.broadcast_shapes(x.shape, self.outer.shape[:-1], self.inner.shape[:-1])
            w = jax.scipy.linalg.solve_triangular(
                jnp.broadcast_to(self.outer, shape + (d,)),
                jnp.broadcast_to(x, shape)[..., None],
                lower=True,
            )
            q = (jnp.swapaxes(self.inner, -1, -2) @ w)[..., 0]
        return -0.5 * (q**2).sum(-1) - logdet - 0.5 * d * jnp.log(2 * jnp.pi)

    def sample(self, key, sample_shape=()):
        eps = jax.random.normal(key, sample_shape + self.batch_shape + self.event_shape)
        w = jax.scipy.linalg.solve_triangular(
            jnp.broadcast_to(self.inner, eps.shape + eps.shape[-1:]),
            eps[..., None],
            lower=True,
            trans=1,
        )
        return self.loc + (self.outer @ w)[..., 0]

    def covariance(self):
        """Σ ``[..., d, d]``."""
        ft = jax.scipy.linalg.solve_triangular(
            self.inner, jnp.swapaxes(self.outer, -1, -2), lower=True
        )  # A⁻¹ Lᵀ
        return jnp.swapaxes(ft, -1, -2) @ ft


__all__ = ["BartlettGaussian", "niw_bartlett"]
