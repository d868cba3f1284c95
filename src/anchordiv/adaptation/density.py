"""Densities of a posterior's draws, in one place for every inference method (exact, NUTS,
SVI): the log joint of the model at constrained parameter values (for the MAP draw) and the
pointwise log-likelihood of each target anchor (for PSIS-LOO, WAIC; MATH.md round 2).

Draws are dicts of the family's sites (``Family.sites``, :mod:`.family`) with a leading draw axis:
``mu [S, d]``, ``Sigma [S, d, d]``; ``U [S, d, k]``; ``weights [S, K]``, ``means [S, K, d]``,
``covs [S, K, d, d]``.

Pointwise log-likelihood per kind (``log p(t_i | θ_s)``, untempered):

* gaussian: ``N(t_i | μ, Σ)``;
* latent kinds: the PPCA likelihood ``N(t_i | m, σ² I + ℓ U Uᵀ)`` with the target mean m and the
  broad PPCA signal ℓ and noise σ² (:func:`anchordiv.adaptation.priors.bingham.ppca_scale`) kept in
  ``post.fixed`` (``ppca_mean``, ``ppca_signal``, ``ppca_noise``) — for the latent spherical kind
  this is the likelihood its default concentration is derived from;
* mixture: ``log Σ_k w_k N(t_i | μ_k, Σ_k)``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import AnchorDivError
from .likelihood import AUXILIARY_SUFFIX, Likelihood, log_joint  # noqa: F401  (re-exported)


def gaussian_logpdf(t: np.ndarray, mu: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """``log N(t_i | μ_s, Σ_s)``: ``t [n, d]``, ``mu [S, d]``, ``cov [S, d, d]`` -> ``[S, n]``."""
    chol = np.linalg.cholesky(cov)
    diff = t[None, :, :] - mu[:, None, :]  # [S, n, d]
    z = np.linalg.solve(chol, np.swapaxes(diff, -1, -2))  # [S, d, n]
    logdet = 2 * np.log(np.diagonal(chol, axis1=-2, axis2=-1)).sum(-1)  # [S]
    d = t.shape[1]
    return -0.5 * ((z * z).sum(-2) + logdet[:, None] + d * np.log(2 * np.pi))


def ppca_logpdf(t, u, mean, signal, noise):
    """``log N(t_i | m, σ² I + ℓ U_s U_sᵀ)`` via Woodbury: ``u [S, d, k]`` -> ``[S, n]``."""
    d, k = u.shape[-2:]
    x = t - mean  # [n, d]
    proj = np.einsum("nd,sdk->snk", x, u)  # [S, n, k]
    quad = (x * x).sum(-1)[None] / noise - signal / (noise * (noise + signal)) * (proj * proj).sum(
        -1
    )
    logdet = d * np.log(noise) + k * np.log1p(signal / noise)
    return -0.5 * (quad + logdet + d * np.log(2 * np.pi))


def log_iw(sig: np.ndarray, nu, psi: np.ndarray) -> np.ndarray:
    """log IW(Σ_s | ν, Ψ) for ``sig [S, d, d]`` (float64 closed form)."""
    from .priors.niw import log_multigamma

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
    mu0 = np.asarray(kw["mu0"], np.float64)
    return (
        log_iw(sig, float(kw["nu0"]), np.asarray(kw["psi0"], np.float64))
        + gaussian_logpdf(mu0[None], mu, sig / float(kw["kappa0"]))[:, 0]
    )


def with_log_density(post, targets, model=None, model_kwargs: dict | None = None):
    """Copy of a sampled posterior with the log joint density of each draw.

    Adds ``stats["log_density"] [chains, draws]``: the log joint of each draw's constrained
    parameters, which ``post.point("map")`` maximises — in closed form for the kind's default
    model (``model=None``, the family's float64 ``log_joint``), by substituting every stored site into
    a user's ``model`` otherwise (:func:`log_joint`: the density of the model's own sample sites).

    Parameters
    ----------
    post : Posterior
        A NUTS or SVI posterior.
    targets : array_like, shape [n, d]
        The target anchors it was fitted to.
    model : callable, optional
        A user's NumPyro model (default: the kind's).
    model_kwargs : dict, optional
        Its hyperparameters (default ``post.model_kwargs``).

    Returns
    -------
    Posterior
        The copy with ``stats["log_density"]``.
    """
    kwargs = model_kwargs if model_kwargs is not None else post.model_kwargs
    if kwargs is None:
        raise AnchorDivError("model_kwargs: needed to evaluate the posterior density")
    shape = next(iter(post.samples.values())).shape[:2]
    flat = post.flat_samples()
    if model is None:
        flat = {k: v for k, v in flat.items() if k in post.family_class.sites}
        lik = Likelihood(post.family_class, kwargs, post.fixed, int(post.info["d"]))
        lp = lik.log_joint(np.asarray(targets, np.float64), flat)
    else:
        lp = log_joint(model, targets, kwargs, flat)
    return dataclasses.replace(post, stats={**(post.stats or {}), "log_density": lp.reshape(shape)})


__all__ = [
    "gaussian_logpdf",
    "log_iw",
    "log_joint",
    "log_niw",
    "ppca_logpdf",
    "with_log_density",
]
