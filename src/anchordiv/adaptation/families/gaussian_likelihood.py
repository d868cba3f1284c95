"""Closed forms of the Gaussian anchor model's likelihood ``t_i ~ N(μ, Σ)`` and of the
Normal–inverse-Wishart density, in float64 numpy: the log densities, the predictive, the anchor
model of one parameter set, and :class:`GaussianLikelihood` (the gaussian kind's and the
structured priors' ``likelihood_type``).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import scipy.special

from ...anchors import Gaussian
from ...anchors.base import as_tau, jax_dtype, psd_factor
from ...errors import AnchorDivError, check_covariance
from ..likelihood import Likelihood


def log_multigamma(a, d: int):
    """log Γ_d(a), vectorised over ``a`` (``scipy.special.multigammaln`` takes scalars only)."""
    a = np.asarray(a, np.float64)
    return 0.25 * d * (d - 1) * np.log(np.pi) + scipy.special.gammaln(
        a[..., None] - 0.5 * np.arange(d)
    ).sum(-1)


def gaussian_logpdf(t: np.ndarray, mu: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """``log N(t_i | μ_s, Σ_s)``: ``t [n, d]``, ``mu [S, d]``, ``cov [S, d, d]`` -> ``[S, n]``."""
    chol = np.linalg.cholesky(cov)
    diff = t[None, :, :] - mu[:, None, :]  # [S, n, d]
    z = np.linalg.solve(chol, np.swapaxes(diff, -1, -2))  # [S, d, n]
    logdet = 2 * np.log(np.diagonal(chol, axis1=-2, axis2=-1)).sum(-1)  # [S]
    d = t.shape[1]
    return -0.5 * ((z * z).sum(-2) + logdet[:, None] + d * np.log(2 * np.pi))


def log_iw(sig: np.ndarray, nu, psi: np.ndarray) -> np.ndarray:
    """log IW(Σ_s | ν, Ψ) for ``sig [S, d, d]`` (float64 closed form)."""
    d = psi.shape[-1]
    chol = np.linalg.cholesky(sig)
    logdet = 2 * np.log(np.diagonal(chol, axis1=-2, axis2=-1)).sum(-1)
    inv = np.linalg.inv(sig)
    return (
        0.5 * nu * np.linalg.slogdet(psi)[1]
        - 0.5 * nu * d * np.log(2.0)
        - log_multigamma(0.5 * nu, d)
        - 0.5 * (nu + d + 1) * logdet
        - 0.5 * np.einsum("ij,sji->s", psi, inv)
    )


def log_niw(mu, sig, kw) -> np.ndarray:
    """log NIW(μ_s, Σ_s) = log IW(Σ) + log N(μ | μ₀, Σ/κ₀): ``mu [S, d]``, ``sig [S, d, d]``."""
    d = np.shape(sig)[-1]
    want = {"mu0": (d,), "psi0": (d, d), "nu0": (), "kappa0": ()}
    for k, shape in want.items():  # model arguments read from a file meet the draws here
        if k not in kw or np.shape(kw[k]) != shape:
            got = f"shape {list(np.shape(kw[k]))}" if k in kw else "no value"
            raise AnchorDivError(
                f"NIW prior: {k} has {got}, not shape {list(shape)} for draws of dimension {d}"
            )
    mu0 = np.asarray(kw["mu0"], np.float64)
    return (
        log_iw(sig, float(kw["nu0"]), np.asarray(kw["psi0"], np.float64))
        + gaussian_logpdf(mu0[None], mu, sig / float(kw["kappa0"]))[:, 0]
    )


def cov_cholesky(cov) -> np.ndarray:
    """The lower Cholesky factor of a prior covariance ``[d, d]`` that is finite, symmetric and
    positive definite (else an error naming ``cov`` and what is wrong,
    :func:`~anchordiv.errors.check_covariance`)."""
    return check_covariance("cov", cov, factor=True)


def gaussian_model(p: dict, tau: float, dtype: str) -> Gaussian:
    """The Gaussian anchor model of parameters ``{"mu": [d], "Sigma": [d, d]}`` in ``dtype``
    (float64 is float32 unless JAX runs in float64)."""
    dt = jax_dtype(dtype)
    return Gaussian(
        jnp.asarray(p["mu"], dt), jnp.asarray(cov_factor(p["Sigma"]), dt), as_tau(tau, dt)
    )


def cov_factor(cov: np.ndarray) -> np.ndarray:
    """A factor F with F Fᵀ = Σ: Cholesky (O(d³/3), fast at d = 768) with an eigen fallback.

    Parameters
    ----------
    cov : numpy.ndarray, shape [d, d]
        A symmetric positive semi-definite Σ.

    Returns
    -------
    numpy.ndarray, shape [d, d]
        F.

    Examples
    --------
    >>> from anchordiv.adaptation import cov_factor
    >>> S = np.array([[2.0, 0.5], [0.5, 1.0]])
    >>> F = cov_factor(S)
    >>> bool(np.allclose(F @ F.T, S))
    True
    """
    try:
        return np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        return psd_factor(cov)


def gaussian_predictive(mu, cov, n, rng) -> np.ndarray:
    """``n`` draws per ``(mu [S, d], cov [S, d, d])`` ``[S, n, d]``."""
    z = rng.normal(size=(len(mu), n, mu.shape[-1]))
    return mu[:, None, :] + np.einsum("sij,snj->sni", np.linalg.cholesky(cov), z)


class GaussianLikelihood(Likelihood):
    """The Gaussian anchor model's likelihood ``t_i ~ N(μ, Σ)`` in closed form (sites ``mu [d]``,
    ``Sigma [d, d]``); the prior's terms are traced from the family's model (a structured
    prior's)."""

    positive_definite = ("Sigma",)

    def log_density(self, draws, targets):
        return gaussian_logpdf(
            np.asarray(targets, np.float64),
            np.asarray(draws["mu"], np.float64),
            np.asarray(draws["Sigma"], np.float64),
        )

    def sample(self, draws, n, rng):
        return gaussian_predictive(
            np.asarray(draws["mu"], np.float64), np.asarray(draws["Sigma"], np.float64), n, rng
        )

    @classmethod
    def site_shapes(cls, d, shapes):
        return {"mu": (d,), "Sigma": (d, d)}


__all__ = [
    "GaussianLikelihood",
    "cov_cholesky",
    "cov_factor",
    "gaussian_logpdf",
    "gaussian_model",
    "gaussian_predictive",
    "log_iw",
    "log_multigamma",
    "log_niw",
]
