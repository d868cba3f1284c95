"""Matrix Bingham prior for the latent Gaussian anchor model (MATH.md, "Adaptation", D.3).

The subspace ``U ∈ V_k(R^d)`` gets the prior ``p(U) ∝ etr(Uᵀ B₀ U)``.  The targets enter through
a PPCA likelihood ``t_i ~ N(t̄, σ² I + ℓ U Uᵀ)``, whose U-dependent part is ``c · tr(Uᵀ S_T U)``
with ``c = ℓ / (2σ²(σ² + ℓ))`` and S_T the target scatter — conjugate, so
``Bₙ = B₀ + c · S_T`` and the MAP subspace is the top-k eigenvectors of Bₙ.

Prior from the broad anchors: ``B₀ = c · n₀ · Cov(B)`` (the broad covariance worth n₀
pseudo-anchors); ℓ and σ² are the PPCA estimates of the broad covariance at rank k
(``σ²`` = mean discarded eigenvalue, floored at 1e-3 × the mean eigenvalue).  With the target
weight ``β = n / (n₀ + n)`` this reads ``Bₙ = c · m · [(1 − β) Cov(B) + β Cov(T)]``, ``m = n/β``;
``beta`` can be given directly (β = 0: the broad subspace, β = 1: the target subspace).  Where
``n/β`` would exceed ``n + n_broad`` (the broad anchors cannot be worth more than themselves) m is
capped there, which tempers the likelihood; the explicit model takes the same weight.
``prior="isotropic"`` replaces Cov(B) by ``tr(Cov(B))/d · I``; that only shifts the spectrum of
Bₙ, so the control's MAP subspace is the target-only one (the draws' spread still differs).

The latent mean is not part of the Bingham posterior: it is ``(1 − β) mean(B) + β t̄``.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

from ...anchors.gaussian import moments
from ...errors import AnchorDivError
from .cache import cached
from .distributions import MatrixBingham, bingham_chains, stiefel_site
from ...anchors.linalg import canonical_signs

#: default prior strength of the latent kinds, in pseudo-anchors (sets β = n / (n + n₀))
PRIOR_ANCHORS = 10.0
#: Gibbs burn-in sweeps per chain of exact latent draws (chains start at the mode; lag-1
#: autocorrelation of the sweeps is ≈ 0.1, so 10 sweeps forget the start)
BURN_IN = 10


def latent_gaussian_model(
    targets, *, prior_parameter, mean, signal, noise, rank, target_weight=1.0
):
    """The explicit NumPyro model of the latent-gaussian kind (copy and change it for a custom prior).

    Sites: ``U [d, k]`` (deterministic, from ``U_raw``), observed ``targets``.

    Parameters
    ----------
    targets : array_like, shape [n, d]
        Target anchors (observed).
    prior_parameter : array_like, shape [d, d]
        B₀.
    mean : array_like, shape [d]
        PPCA mean.
    signal, noise : float
        PPCA signal ℓ and noise σ².
    rank : int
        k.
    target_weight : float, default 1.0
        Tempers the likelihood (1 = Bayes).

    Returns
    -------
    None
        A NumPyro model: it samples its sites.
    """
    d = targets.shape[1]
    u = stiefel_site("U", d, rank)
    numpyro.factor("U_prior", MatrixBingham(prior_parameter, rank).log_prob(u))
    cov = noise * jnp.eye(d) + signal * u @ u.T
    with numpyro.plate("anchors", targets.shape[0]), numpyro.handlers.scale(scale=target_weight):
        numpyro.sample("targets", dist.MultivariateNormal(mean, cov), obs=targets)


@dataclass(frozen=True)
class BinghamPosterior:
    """Exact latent posterior ``U ~ MatrixBingham(parameter)`` at rank k.

    Parameters
    ----------
    parameter : numpy.ndarray, shape [d, d]
        The symmetric Bingham parameter Bₙ.
    rank : int
        k.
    location : numpy.ndarray, shape [d]
        The fixed latent mean (latent Gaussian; zeros for the latent spherical model).
    """

    parameter: np.ndarray
    rank: int
    location: np.ndarray

    def mode(self) -> dict[str, np.ndarray]:
        """``{"U": top-k eigenvectors of B [d, k]}`` (also the principal subspace of E[UUᵀ])."""
        _, v = np.linalg.eigh(self.parameter)
        return {"U": canonical_signs(np.ascontiguousarray(v[:, ::-1][:, : self.rank]))}

    def mean(self) -> dict[str, np.ndarray]:
        """Same as :meth:`mode`: the principal subspace of E[UUᵀ] is the top-k eigenvectors of B
        (a mean of frames is not a frame)."""
        return self.mode()

    def sample_chains(self, rng: np.random.Generator, chains: int, n: int) -> dict[str, np.ndarray]:
        """``{"U": [chains, n, d, k]}``: independent Gibbs chains run in parallel
        (:func:`~.distributions.bingham_chains`, :data:`BURN_IN` sweeps each)."""
        return {
            "U": bingham_chains(self.parameter, self.rank, n, rng, chains=chains, burn_in=BURN_IN)
        }

    def sample(self, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
        """``{"U": [n, d, k]}``: two independent chains of ⌈n/2⌉ draws, concatenated."""
        u = self.sample_chains(rng, 2 if n > 1 else 1, -(-n // 2) if n > 1 else 1)["U"]
        return {"U": u.reshape((-1,) + u.shape[2:])[:n]}

    def sweep_cost(self) -> float:
        """Relative cost of one Gibbs sweep, k·q³ (q = d − k + 1)."""
        d = self.parameter.shape[0]
        return float(self.rank * (d - self.rank + 1) ** 3)


def ppca_scale(eigvals: np.ndarray, rank: int) -> tuple[float, float, float]:
    """``(c, ℓ, σ²)`` of the PPCA likelihood at rank k from descending eigenvalues ``[d]``."""
    noise = float(np.mean(eigvals[rank:])) if rank < len(eigvals) else 0.0
    noise = max(noise, 1e-3 * float(np.mean(eigvals)), 1e-300)
    signal = max(float(np.mean(eigvals[:rank])) - noise, noise)
    return signal / (2 * noise * (noise + signal)), signal, noise


def broad_spectrum(broad: np.ndarray) -> np.ndarray:
    """Descending eigenvalues ``[d]`` of the broad covariance."""
    return np.linalg.eigvalsh(moments(broad)[1])[::-1]


def target_weight(n: int, n_broad: int, beta: float) -> tuple[float, float]:
    """``(m, β)``: total pseudo-count ``m = min(n/β, n + n_broad)`` for target weight β."""
    m = n + n_broad if beta == 0 else min(n / beta, n + n_broad)
    return m, beta


def broad_covariance(broad: np.ndarray, prior: str) -> tuple[np.ndarray, np.ndarray]:
    """``(mean [d], covariance [d, d])`` of the broad anchors, or its isotropic control."""
    mu, cov = cached(moments, broad)
    if prior == "isotropic":
        return mu, np.trace(cov) / cov.shape[0] * np.eye(cov.shape[0])
    if prior != "broad":
        raise AnchorDivError(f"prior: 'broad' or 'isotropic', got {prior!r}")
    return mu, cov


def latent_gaussian_update(
    broad: np.ndarray, targets: np.ndarray, *, rank: int, beta: float, prior: str = "broad"
) -> tuple[BinghamPosterior, dict]:
    """Exact update of the latent-gaussian kind.

    Parameters
    ----------
    broad : numpy.ndarray, shape [N, d]
        Broad anchors.
    targets : numpy.ndarray, shape [n, d]
        Target anchors.
    rank : int
        k.
    beta : float
        Target weight in [0, 1].
    prior : {"broad", "isotropic"}, default "broad"
        The broad covariance or the isotropic control.

    Returns
    -------
    posterior : BinghamPosterior
        The exact posterior.
    info : dict
        The explicit model's hyperparameters (``model_kwargs``) and the pseudo-count m.
    """
    mu_b, cov_b = broad_covariance(broad, prior)
    c, signal, noise = ppca_scale(cached(broad_spectrum, broad), rank)
    return latent_gaussian_posterior(
        mu_b, cov_b, (c, signal, noise), len(broad), targets, rank=rank, beta=beta
    )


def latent_gaussian_posterior(
    mu_b: np.ndarray,
    cov_b: np.ndarray,
    ppca: tuple,
    n_broad: int,
    targets: np.ndarray,
    *,
    rank: int,
    beta: float,
) -> tuple[BinghamPosterior, dict]:
    """:func:`latent_gaussian_update` from the broad statistics: mean ``mu_b [d]``, covariance
    ``cov_b [d, d]`` (or its isotropic control), the PPCA ``(c, ℓ, σ²)`` at ``rank`` and the
    number of broad anchors."""
    c, signal, noise = ppca
    t = np.asarray(targets, np.float64)
    n = t.shape[0]
    tbar = t.mean(0)
    scat = (t - tbar).T @ (t - tbar)
    m, beta = target_weight(n, n_broad, beta)
    prior_b = c * m * (1 - beta) * cov_b
    weight = m * beta / n
    post = BinghamPosterior(prior_b + c * weight * scat, rank, (1 - beta) * mu_b + beta * tbar)
    kwargs = {
        "prior_parameter": prior_b,
        "mean": tbar,
        "signal": signal,
        "noise": noise,
        "rank": rank,
        "target_weight": weight,
    }
    return post, {"model_kwargs": kwargs, "pseudo_count": m, "likelihood_scale": c}


__all__ = [
    "BinghamPosterior",
    "PRIOR_ANCHORS",
    "broad_covariance",
    "latent_gaussian_model",
    "latent_gaussian_posterior",
    "latent_gaussian_update",
    "ppca_scale",
    "target_weight",
]
