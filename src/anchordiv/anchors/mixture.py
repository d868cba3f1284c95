"""Gaussian mixture anchor model Σ_k π_k N(μ_k, Σ_k), fitted by EM.

ψ(θ) = logsumexp_k [log π_k + τ⟨μ_k, θ⟩ + τ²/2 θᵀΣ_kθ]; the divergence is the (non-quadratic)
Bregman divergence of ψ, scored through the generic one-GEMM form.  All K quadratic forms of a
batch come from one matrix product with the concatenated factors ``[d, K·r]``.

EM runs in float64 numpy: k-means++ seeding (``seed``), covariances regularised with the ridge
``reg · tr(Cov(anchors))/d · I`` so that E-steps stay defined with fewer anchors than dimensions.
With ``components=1`` the fit equals :func:`~anchordiv.anchors.gaussian.fit_gaussian` with the
same ``reg``.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg
import scipy.special

from .._tolerance import first_max
from ..errors import AnchorDivError, as_matrix, integer, positive
from .base import AnchorModel, anchor_model, as_tau, jax_dtype, psd_factor


@anchor_model("mixture")
class GaussianMixture(AnchorModel):
    """Gaussian mixture anchor model Σ_k π_k N(μ_k, Σ_k), fitted by EM (``ad.fit("mixture", ...)``).

    Parameters
    ----------
    log_weights : jax.Array, shape [K]
        log π_k.
    means : jax.Array, shape [K, d]
        μ_k.
    factors : jax.Array, shape [K, d, r]
        F_k with Σ_k = F_k F_kᵀ.
    tau : jax.Array, shape []
        The encoder's logit scale τ.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> a = rng.normal(size=(8, 4))
    >>> a /= np.linalg.norm(a, axis=1, keepdims=True)
    >>> m = ad.fit("mixture", a, tau=20.0, components=2)
    >>> m.components, m.weights.shape
    (2, (2,))
    """

    log_weights: jax.Array
    means: jax.Array
    factors: jax.Array
    tau: jax.Array
    axes = {"log_weights": "k", "means": "kd", "factors": "kdr", "tau": ""}

    def cumulant(self, theta):
        k, d, r = self.factors.shape
        z = theta @ jnp.transpose(self.factors, (1, 0, 2)).reshape(d, k * r)
        quad = jnp.sum(z.reshape(*theta.shape[:-1], k, r) ** 2, axis=-1)
        lin = theta @ self.means.T
        return jax.nn.logsumexp(
            self.log_weights + self.tau * lin + 0.5 * self.tau**2 * quad, axis=-1
        )

    @property
    def covs(self) -> jax.Array:
        """Σ_k ``[K, d, d]``."""
        return jnp.einsum("kir,kjr->kij", self.factors, self.factors)

    @property
    def weights(self) -> jax.Array:
        return jnp.exp(self.log_weights)

    @property
    def dim(self) -> int:
        return int(self.means.shape[-1])

    @property
    def components(self) -> int:
        return int(self.means.shape[0])

    @classmethod
    def from_params(cls, weights, means, covs, *, tau: float) -> "GaussianMixture":
        """Build from ``weights [K]``, ``means [K, d]``, PSD ``covs [K, d, d]``."""
        means = np.asarray(means)
        dtype = means.dtype if np.issubdtype(means.dtype, np.floating) else np.float32
        w = np.asarray(weights, np.float64)
        factors = np.stack([psd_factor(np.asarray(c, np.float64)) for c in covs])
        with np.errstate(divide="ignore"):
            lw = np.log(w / w.sum())
        jdt = jax_dtype(dtype)
        log_weights, mean, factor = (jnp.asarray(x, jdt) for x in (lw, means, factors))
        return cls(log_weights, mean, factor, as_tau(tau, dtype))


@dataclass(frozen=True)
class EMResult:
    """Float64 EM output: ``weights [K]``, ``means [K, d]``, ``covs [K, d, d]``,
    per-iteration mean log-likelihood ``loglik [iters]``, ``converged``."""

    weights: np.ndarray
    means: np.ndarray
    covs: np.ndarray
    loglik: np.ndarray
    converged: bool


def log_gaussian(a: np.ndarray, means: np.ndarray, covs: np.ndarray) -> np.ndarray:
    """log N(a_n; μ_k, Σ_k) ``[n, K]`` via Cholesky (raises if some Σ_k is singular)."""
    n, d = a.shape
    out = np.empty((n, means.shape[0]))
    for k, (m, c) in enumerate(zip(means, covs)):
        try:
            chol = np.linalg.cholesky(c)
        except np.linalg.LinAlgError:
            raise AnchorDivError(
                f"mixture component {k}: covariance is singular; increase `reg` "
                f"(relative ridge) or use fewer components"
            ) from None
        z = scipy.linalg.solve_triangular(chol, (a - m).T, lower=True)
        out[:, k] = (
            -0.5 * (z * z).sum(0) - np.log(np.diag(chol)).sum() - 0.5 * d * np.log(2 * np.pi)
        )
    return out


def responsibilities(a: np.ndarray, weights, means, covs) -> tuple[np.ndarray, float]:
    """E-step: responsibilities ``[n, K]`` and the mean log-likelihood."""
    with np.errstate(divide="ignore"):
        lp = np.log(weights)[None, :] + log_gaussian(a, means, covs)
    norm = scipy.special.logsumexp(lp, axis=1, keepdims=True)
    return np.exp(lp - norm), float(norm.mean())


def weighted_moments(a: np.ndarray, resp: np.ndarray, ridge: float):
    """M-step statistics: counts ``[K]``, means ``[K, d]``, covariances ``[K, d, d]`` (+ ridge·I)."""
    nk = resp.sum(0)
    means = (resp.T @ a) / np.maximum(nk, 1e-300)[:, None]
    d = a.shape[1]
    covs = np.empty((len(nk), d, d))
    for k in range(len(nk)):
        c = a - means[k]
        covs[k] = (resp[:, k, None] * c).T @ c / max(nk[k], 1e-300) + ridge * np.eye(d)
    return nk, means, covs


def kmeans_pp(a: np.ndarray, k: int, rng: np.random.Generator, iters: int = 10) -> np.ndarray:
    """Hard assignments ``[n, K]`` (one-hot) from k-means++ seeding and a few Lloyd steps."""
    centers = [a[rng.integers(len(a))]]
    for _ in range(1, k):
        d2 = np.min(((a[:, None, :] - np.asarray(centers)[None]) ** 2).sum(-1), axis=1)
        p = d2 / d2.sum() if d2.sum() > 0 else np.full(len(a), 1 / len(a))
        centers.append(a[rng.choice(len(a), p=p)])
    c = np.asarray(centers)
    for _ in range(iters):
        lab = first_max(-((a[:, None, :] - c[None]) ** 2).sum(-1), axis=1)  # nearest
        c = np.stack([a[lab == j].mean(0) if np.any(lab == j) else c[j] for j in range(k)])
    return np.eye(k)[lab]


def em(anchors, components: int, *, reg=1e-3, seed=0, max_iter=200, tol=1e-7) -> EMResult:
    """EM for a K-component Gaussian mixture of ``anchors [n, d]`` (float64)."""
    a = np.asarray(anchors, np.float64)
    n, d = a.shape
    ridge = reg * np.sum((a - a.mean(0)) ** 2) / n / d
    resp = (
        kmeans_pp(a, components, np.random.default_rng(seed)) if components > 1 else np.ones((n, 1))
    )
    history, converged = [], False
    for _ in range(max_iter):
        nk, means, covs = weighted_moments(a, resp, ridge)
        weights = nk / n
        resp, ll = responsibilities(a, weights, means, covs)
        history.append(ll)
        if components == 1 or (
            len(history) > 1 and abs(history[-1] - history[-2]) <= tol * max(1.0, abs(history[-1]))
        ):
            converged = True
            break
    return EMResult(weights, means, covs, np.asarray(history), converged)


def fit_mixture(
    anchors, *, tau: float, components: int = 4, seed: int = 0, reg=1e-3, max_iter: int = 200
) -> GaussianMixture:
    """Gaussian mixture of ``anchors [n, d]`` by EM; needs n ≥ 2·components."""
    a = as_matrix("anchors", anchors, min_rows=2)
    k = integer("components", components, low=1)
    if a.shape[0] < 2 * k:
        raise AnchorDivError(
            f"anchors: too few anchors for {k} components: need at least {2 * k}, got {a.shape[0]}"
        )
    reg = positive("reg", reg, allow_zero=True)
    r = em(a, k, reg=reg, seed=int(seed), max_iter=integer("max_iter", max_iter, low=1))
    return GaussianMixture.from_params(r.weights, r.means.astype(a.dtype), r.covs, tau=tau)
